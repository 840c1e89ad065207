/**
 * The HTTP gateway of a single server: a fastify instance with one plugin per surface (admin routes, `/v2/query`,
 * `/mcp`, the per-query routes) and one error-reply policy for all of them. Request logging is off (it halves
 * throughput); the logger reports startup and failures that are not the caller's fault, and a request logs through
 * the server's logger itself rather than a child bound to its request ID: pino builds a child per request, which
 * cost a sixth of a small read's throughput, for lines that are written only on a failure (they name the request
 * ID themselves, errors.ts). bin/serve.ts opens the database and starts listening; bin/gateway.ts does the same for
 * the hosted form, which adds API keys, the account switch and the rate limit in front of the same routes
 * (hosted/access.ts). `GET /metrics` (metrics.ts) reports every request fastify routes, the database and the process.
 * `silk serve` and `silk dev` also serve the web console at `/console` (console.ts), and refuse requests that a web
 * page of another site could send, by their Host, Origin and Sec-Fetch-Site headers (local-access.ts).
 * Every socket's life is bounded (http-limits.ts): a request must arrive within its timeouts, and errors of Node's
 * HTTP parser (bad framing, oversized headers, those timeouts) answer in the same error shape.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import { adminRoutes, type ServedProject } from "./admin.js";
import { consoleRoutes, type ClusterStatusReader } from "./console.js";
import { answerClientError, installErrorReplies } from "./errors.js";
import { HTTP_HEADER_BYTES_MAX, HTTP_KEEP_ALIVE_TIMEOUT_MS, HTTP_TIMEOUTS_DEFAULT, type HttpTimeouts } from "./http-limits.js";
import { installHostedAccess, type HostedAccess } from "./hosted/access.js";
import { installLocalAccess, type LocalAccess } from "./local-access.js";
import { mcpRoutes } from "./mcp.js";
import { metricsRoutes, ServerMetrics, type StatisticsSource } from "./metrics.js";
import { queryRoutes, type NamedQueryRunner } from "./query-routes.js";
import { queryV2Routes, type QueryRunner } from "./query-v2.js";

/**
 * What the gateway serves: an embedded Database, or anything with its shape (`silk dev` passes one that forwards
 * to whichever database holds the last good version of the project). Read on every request, never copied; only
 * whether it has a schema is decided once, when the gateway is built (a project's database keeps one).
 */
export interface GatewayDatabase extends QueryRunner, NamedQueryRunner, ServedProject, StatisticsSource {}

export interface GatewayOptions {
  readonly database: GatewayDatabase;
  /** A pino logger; without one the gateway logs nothing. */
  readonly logger?: FastifyBaseLogger;
  /** The hosted form's keys, account switch and bucket; without it (`silk serve`) the routes take no credentials. */
  readonly hosted?: HostedAccess;
  /**
   * Without `hosted`: the names beyond localhost and IP addresses that requests may be addressed to and their pages
   * come from (local-access.ts); none unless given. Ignored by the hosted form, which checks keys instead.
   */
  readonly localAccess?: LocalAccess;
  /** HTTP_TIMEOUTS_DEFAULT unless a test needs them short. */
  readonly httpTimeouts?: HttpTimeouts;
  /**
   * The registry that counts this server's requests; one over `database` unless given. A read worker of
   * `silk serve --workers` makes its own, to hand its figures to the process that answers the scrape.
   */
  readonly metrics?: ServerMetrics;
  /** What `GET /metrics` answers; this server's registry unless given (a read worker's: every worker's together). */
  readonly scrapeMetrics?: () => Promise<string>;
  /** `silk serve --cluster`: the cluster's status, the console's partition page (console.ts); absent elsewhere. */
  readonly clusterStatus?: ClusterStatusReader;
}

export async function buildGateway(options: GatewayOptions): Promise<FastifyInstance> {
  const timeouts = options.httpTimeouts ?? HTTP_TIMEOUTS_DEFAULT;
  // The response in flight on each socket, so that a parser error is answered only where no response has begun.
  const responses = new WeakMap<object, ServerResponse>();
  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger) => logger,
    http: { headersTimeout: timeouts.headersMs, connectionsCheckingInterval: timeouts.checkIntervalMs, maxHeaderSize: HTTP_HEADER_BYTES_MAX },
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: HTTP_KEEP_ALIVE_TIMEOUT_MS,
    // Bad framing, oversized headers and late requests fail in Node's parser, before any route: answered here.
    clientErrorHandler: (cause, socket) => answerClientError(cause, socket, responses, timeouts),
  });
  app.server.on("request", (request: IncomingMessage, response: ServerResponse) => responses.set(request.socket, response));
  installErrorReplies(app);
  // A registry per server: several servers in one process (tests) count apart. Its hook goes first, so that the
  // hosted checks' refusals are counted too.
  const metrics = options.metrics ?? new ServerMetrics(options.database);
  metrics.install(app);
  const hosted = options.hosted;
  if (hosted !== undefined) installHostedAccess(app, hosted, (decision) => metrics.countAdmission(hosted.databaseId, decision));
  // The local server takes no credentials: only requests addressed to it, from no page or a page of its own, pass.
  else installLocalAccess(app, options.localAccess ?? { allowedHosts: [] });
  await app.register(adminRoutes, { project: options.database });
  await app.register(metricsRoutes, { scrape: options.scrapeMetrics ?? (() => metrics.scrape()) });
  await app.register(queryV2Routes, { database: options.database });
  // `#[mcp]` queries as MCP tools; a schemaless database offers none (an empty tools/list), docs/MCP.md.
  await app.register(mcpRoutes, { database: options.database });
  // A schemaless database (served without a project) has no queries, so it has no per-query routes: `POST /<name>`
  // is then route_not_found like any other unknown path, not query_not_found, which would suggest a project.
  // The web console (console.ts) on `silk serve` and `silk dev`: the hosted gateway's routes all take a key, which a
  // browser's page load cannot send. Registered before the per-query routes, whose `/:name` is one segment only.
  if (options.hosted === undefined) await app.register(consoleRoutes, { database: options.database, clusterStatus: options.clusterStatus });
  if (options.database.schema !== undefined) await app.register(queryRoutes, { database: options.database });
  await app.ready();
  return app;
}
