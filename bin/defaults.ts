/**
 * The defaults the CLI's commands print in their --help. They live apart from the modules that run the commands
 * (bin/serve.ts, bin/import/) because bin/silk.ts declares every command at each start, and importing those modules
 * for a number would load the engine, fastify and the S3 client before `silk --help` could answer.
 */

export const SERVE_PORT_DEFAULT = 6969;
export const SERVE_HOST_DEFAULT = "127.0.0.1";
export const SERVE_DATA_DEFAULT = "./data";
/** The execution deadline of a request that sets no `timeout_ms`, unless `--timeout-ms` says otherwise. */
export const SERVE_TIMEOUT_MS_DEFAULT = 30_000;

/**
 * How long the hosted gateway's rate-limit decision may wait for Redis, in milliseconds, unless `--redis-timeout-ms`
 * says otherwise (gateway/hosted/redis-bucket.ts). Redis on the same network answers in well under a millisecond;
 * this is long enough for a garbage-collection pause on either side and short enough that a stuck Redis does not
 * hold requests (and their sockets) for long. A Redis farther away, or a gateway loaded enough to read its answers
 * late, needs more: a decision not read in time is refused 503.
 */
export const GATEWAY_REDIS_TIMEOUT_MS_DEFAULT = 100;

/** Records per transaction of `silk import` unless --batch-size says otherwise. */
export const IMPORT_BATCH_RECORDS_DEFAULT = 50_000;
