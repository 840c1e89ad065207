/**
 * The admin surface of the gateway: `GET /health`, which answers as long as the process serves requests, and
 * `GET /introspect`, the project's schema in its JSON form (protocol/helixql/schema-json.ts) and the queries the
 * server exposes as routes (none yet: the HelixQL grammar has no QUERY definitions so far).
 */
import type { FastifyPluginAsync } from "fastify";
import { schemaToJson, type Schema } from "../protocol/schema.js";

export interface AdminOptions {
  readonly schema: Schema | undefined;
}

export const adminRoutes: FastifyPluginAsync<AdminOptions> = async (app, options) => {
  // The schema is fixed for the life of the server, so its JSON is built once.
  const introspection = JSON.stringify({ schema: options.schema === undefined ? null : schemaToJson(options.schema), queries: [] });
  app.get("/health", async (_request, reply) => reply.type("application/json; charset=utf-8").send('{"status":"ok"}'));
  app.get("/introspect", async (_request, reply) => reply.type("application/json; charset=utf-8").send(introspection));
};
