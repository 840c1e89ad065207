/**
 * The HTTP gateway of a single server: a fastify instance with one plugin per surface (admin routes, `/v2/query`)
 * and one error-reply policy for all of them. Request logging is off (it halves throughput); the logger reports
 * startup and failures that are not the caller's fault. bin/serve.ts opens the database and starts listening.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Schema } from "../protocol/schema.js";
import { adminRoutes } from "./admin.js";
import { installErrorReplies } from "./errors.js";
import { queryV2Routes, type QueryRunner } from "./query-v2.js";

export interface GatewayOptions {
  readonly database: QueryRunner;
  readonly schema: Schema | undefined;
  /** A pino logger; without one the gateway logs nothing. */
  readonly logger?: FastifyBaseLogger;
}

export async function buildGateway(options: GatewayOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    logController: new LogController({ disableRequestLogging: true }),
  });
  installErrorReplies(app);
  await app.register(adminRoutes, { schema: options.schema });
  await app.register(queryV2Routes, { database: options.database });
  await app.ready();
  return app;
}
