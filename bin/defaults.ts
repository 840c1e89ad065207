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

/** Records per transaction of `silk import` unless --batch-size says otherwise. */
export const IMPORT_BATCH_RECORDS_DEFAULT = 50_000;
