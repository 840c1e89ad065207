/**
 * What `silk serve` (and `silk dev`, `silk gateway`, a `--workers` read worker) is told and what it makes of it: the
 * flags (`ServeOptions`, `StorageFlags`) with their defaults, and the settings resolved from them and the environment
 * (`serveSettings`: port, host, data, the names it answers to, deadline, logger, embedder; `storageOf`: disk or bucket). Apart from serve.ts
 * so that serve.ts, which starts the workers, and serve-workers.ts, which a worker runs, do not import each other.
 */
import { pino, type Logger } from "pino";
import type { Storage } from "../runtime/embedded.js";
import { embedderFromEnvironment } from "../embedders/index.js";
import type { Embedder } from "../protocol/embedding.js";
import { SilkError } from "../protocol/errors.js";
import { QUERY_TIMEOUT_MS_MAX } from "../protocol/limits.js";
import { localAccessOf, parseAllowedHosts, type LocalAccess } from "../gateway/local-access.js";
import { SERVE_DATA_DEFAULT, SERVE_HOST_DEFAULT, SERVE_PORT_DEFAULT, SERVE_TIMEOUT_MS_DEFAULT } from "./defaults.js";


export interface ServeOptions extends StorageFlags {
  /** The project directory; without one the database is schemaless and has no per-query routes. */
  readonly project?: string;
  readonly port?: string;
  readonly host?: string;
  /**
   * `--allowed-hosts a,b,.example.com`: names beyond localhost, IP addresses and a `--host` name that requests may
   * be addressed to (their Host header) and whose web pages may call the server (gateway/local-access.ts).
   */
  readonly allowedHosts?: string;
  readonly data?: string;
  readonly timeoutMs?: string;
  /** `--workers`: processes serving HTTP, each reading on its own core (bin/serve-workers.ts); 1 by default. */
  readonly workers?: string;
}

/** `--storage` and the `--s3-...` flags of `silk serve`, `silk gateway`, `silk backup` and `silk restore`. */
export interface StorageFlags {
  /** `s3://bucket/prefix`: the database lives in that bucket (docs/STORAGE.md); absent: on local disk. */
  readonly storage?: string;
  /** An S3-compatible endpoint (http:// or https://); absent: AWS S3. */
  readonly s3Endpoint?: string;
  /** `--s3-request-deadline-ms`: how long one request to the store may take, retries included (default 10,000). */
  readonly s3RequestDeadlineMs?: string;
  /** `--s3-max-attempts`: tries of one request for retryable failures (default 5). */
  readonly s3MaxAttempts?: string;
}

/** The `--s3-...` flags that tune requests, as numbers; each a positive integer, and only with --storage. */
function requestFlags(flags: StorageFlags): { requestDeadlineMs?: number; maxAttempts?: number } {
  const answer: { requestDeadlineMs?: number; maxAttempts?: number } = {};
  for (const [flag, text, key] of [
    ["--s3-request-deadline-ms", flags.s3RequestDeadlineMs, "requestDeadlineMs"],
    ["--s3-max-attempts", flags.s3MaxAttempts, "maxAttempts"],
  ] as const) {
    if (text === undefined) continue;
    if (flags.storage === undefined) throw new SilkError("invalid_option", `${flag} tunes the requests to the object store of --storage s3://bucket/prefix, which is missing`);
    const value = Number(text);
    if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < 1) throw new SilkError("invalid_option", `${flag} must be a positive integer, got ${JSON.stringify(text)}`);
    answer[key] = value;
  }
  return answer;
}

/**
 * The storage the flags name: `{ disk: data }` without `--storage`, else the bucket database of `s3://bucket/prefix`
 * whose local cache is `cacheDir`. Credentials and region come from the AWS SDK's standard environment variables
 * and config files (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, ~/.aws/...); `open()` checks the rest.
 */
export function storageOf(flags: StorageFlags, data: string, cacheDir: string): Storage {
  const requests = requestFlags(flags);
  if (flags.storage === undefined) {
    if (flags.s3Endpoint !== undefined) throw new SilkError("invalid_option", "--s3-endpoint names the object store of --storage s3://bucket/prefix, which is missing");
    return { disk: data };
  }
  const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(flags.storage);
  if (match === null) throw new SilkError("invalid_option", `--storage must be s3://bucket/prefix, got ${JSON.stringify(flags.storage)}`);
  const prefix = (match[2] ?? "").replace(/\/+$/, "");
  const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  return {
    s3: {
      bucket: match[1]!,
      prefix,
      cacheDir,
      ...(flags.s3Endpoint === undefined ? {} : { endpoint: flags.s3Endpoint }),
      ...(region === undefined || region === "" ? {} : { region }),
      ...requests,
    },
  };
}

/** What the start line says holds the data: the directory, or the bucket and its cache. */
export function storageName(storage: Storage): string {
  if (typeof storage === "object" && "s3" in storage) return `s3://${storage.s3.bucket}/${storage.s3.prefix ?? ""}, cached in ${storage.s3.cacheDir}`;
  return typeof storage === "object" && "disk" in storage ? storage.disk : "memory";
}

/** The port from --port, else $SILK_PORT, else 6969; 0 asks the system for a free one. */
export function servePort(option: string | undefined, environment: string | undefined): number {
  const text = option ?? environment;
  if (text === undefined || text === "") return SERVE_PORT_DEFAULT;
  const port = Number(text);
  if (!/^[0-9]+$/.test(text) || port > 65_535) {
    throw new SilkError("invalid_option", `the port must be an integer from 0 to 65535, got ${JSON.stringify(text)}`);
  }
  return port;
}

/** `--timeout-ms`: whole milliseconds from 1 to QUERY_TIMEOUT_MS_MAX, default SERVE_TIMEOUT_MS_DEFAULT. */
export function serveTimeoutMs(option: string | undefined): number {
  if (option === undefined) return SERVE_TIMEOUT_MS_DEFAULT;
  const timeoutMs = Number(option);
  if (!/^[0-9]+$/.test(option) || timeoutMs < 1 || timeoutMs > QUERY_TIMEOUT_MS_MAX) {
    throw new SilkError("invalid_option", `--timeout-ms must be whole milliseconds from 1 to ${QUERY_TIMEOUT_MS_MAX}, got ${JSON.stringify(option)}`);
  }
  return timeoutMs;
}

/** Where and how a server listens, resolved from the options and the environment. */
export interface ServeSettings {
  readonly port: number;
  readonly host: string;
  /** What the local server answers to (ignored by the hosted gateway, which checks API keys instead). */
  readonly localAccess: LocalAccess;
  readonly data: string;
  /** The deadline of every request that sets no `timeout_ms` (the per-query routes included). */
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** Embed's provider from SILK_EMBED_* (embedders/index.ts); undefined when none is configured. */
  readonly embedder: Embedder | undefined;
}

export function serveSettings(options: ServeOptions): ServeSettings {
  const host = options.host ?? SERVE_HOST_DEFAULT;
  return {
    port: servePort(options.port, process.env.SILK_PORT),
    host,
    localAccess: localAccessOf(host, parseAllowedHosts(options.allowedHosts)),
    data: options.data ?? SERVE_DATA_DEFAULT,
    timeoutMs: serveTimeoutMs(options.timeoutMs),
    logger: pino({ name: "silk", level: process.env.SILK_LOG_LEVEL ?? "info" }, pino.destination({ fd: 2, sync: true })),
    // A bad SILK_EMBED_* setting is invalid_option here, so the server refuses to start rather than fail each Embed.
    embedder: embedderFromEnvironment(process.env),
  };
}
