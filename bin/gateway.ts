/**
 * `silk gateway`: the hosted form of the server. It serves what `silk serve` serves (bin/serve.ts) — `/v2/query`,
 * the per-query routes, `/introspect`, `/health` — but every request except `/health` needs one of the database's
 * API keys, a database disabled for credit answers 402, and `/v2/query` draws from the database's token bucket:
 * in this process, or with `--redis` in Redis, shared by every gateway of the database. Without `--project` the
 * database is schemaless, as for `silk serve`: `/v2/query`, `/introspect` and `/health` only, under the same keys,
 * switch and bucket. See docs/GATEWAY.md.
 */
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { Database } from "../runtime/embedded.js";
import { KeyStore, readKeys } from "../gateway/hosted/key-store.js";
import { RedisBucket } from "../gateway/hosted/redis-bucket.js";
import { GATEWAY_REDIS_TIMEOUT_MS_DEFAULT } from "./defaults.js";
import { databaseId, isDisabled, readLimitsOverride } from "../gateway/hosted/tenant-files.js";
import { effectiveRateLimit, isPlanName, LocalBucket, PLAN_DEFAULT, PLANS, type Admitter, type RateLimit } from "../gateway/hosted/token-bucket.js";
import { buildGateway } from "../gateway/server.js";
import { SilkError } from "../protocol/errors.js";
import { loadSchemaSources } from "./schema-files.js";
import { join } from "node:path";
import { announceEmbedder, announceWarnings, closeOnSignals, servedName } from "./serve.js";
import { serveSettings, storageName, storageOf, type ServeSettings, type StorageFlags } from "./serve-settings.js";

export interface GatewayCommandOptions extends StorageFlags {
  /** The project directory; without one the database is schemaless and has no per-query routes. */
  readonly project?: string;
  readonly data: string;
  readonly port?: string;
  readonly host?: string;
  readonly timeoutMs?: string;
  readonly redis?: string;
  readonly redisTimeoutMs?: string;
  readonly plan?: string;
  readonly rate?: string;
  readonly burst?: string;
  /** Open the database read-only: a second gateway beside the writer, on the same directory. */
  readonly readOnly?: boolean;
}

/** The folder of `--data` that caches a `--storage s3://...` database. */
export const GATEWAY_S3_CACHE = "s3-cache";

/** The limit in force: `--rate`/`--burst`, else `<data>/gateway/limits.json`, else the plan's values. */
export function gatewayRateLimit(options: GatewayCommandOptions): RateLimit {
  const plan = options.plan ?? PLAN_DEFAULT;
  if (!isPlanName(plan)) throw new SilkError("invalid_option", `unknown plan ${JSON.stringify(plan)}; the plans are ${Object.keys(PLANS).join(", ")}`);
  const flags: { ratePerSecond?: number; burst?: number } = {};
  if (options.rate !== undefined) flags.ratePerSecond = Number(options.rate);
  if (options.burst !== undefined) flags.burst = Number(options.burst);
  return effectiveRateLimit(plan, { ...readLimitsOverride(options.data), ...flags });
}

/** The longest decision timeout `--redis-timeout-ms` takes, in milliseconds: beyond it requests would hang. */
const REDIS_TIMEOUT_MS_MAX = 60_000;

/** `--redis-timeout-ms`: a whole number of milliseconds from 1 to REDIS_TIMEOUT_MS_MAX, only with --redis. */
export function redisDecisionTimeoutMs(options: GatewayCommandOptions): number {
  const flag = options.redisTimeoutMs;
  if (flag === undefined) return GATEWAY_REDIS_TIMEOUT_MS_DEFAULT;
  if (options.redis === undefined) throw new SilkError("invalid_option", "--redis-timeout-ms needs --redis: without it the bucket is in this process and asks nothing of anyone");
  const ms = Number(flag);
  if (!/^[0-9]+$/.test(flag.trim()) || !Number.isSafeInteger(ms) || ms < 1 || ms > REDIS_TIMEOUT_MS_MAX) {
    throw new SilkError("invalid_option", `--redis-timeout-ms must be a whole number of milliseconds from 1 to ${REDIS_TIMEOUT_MS_MAX}, got ${JSON.stringify(flag)}`);
  }
  return ms;
}

async function openBucket(options: GatewayCommandOptions, limit: RateLimit, settings: ServeSettings, decisionTimeoutMs: number): Promise<Admitter> {
  if (options.redis === undefined) return new LocalBucket(limit, () => performance.now());
  return RedisBucket.open({
    url: options.redis,
    databaseId: databaseId(options.data),
    limit,
    decisionTimeoutMs,
    onStateChange: (connected, reason) => {
      if (connected) settings.logger.info(`rate limit: ${reason}`);
      else settings.logger.warn(`rate limit: Redis unavailable (${reason}); /v2/query answers 503 until it is back`);
    },
  });
}

/** Starts the hosted gateway; resolves once it listens. The process then lives until a signal closes it. */
export async function runGateway(options: GatewayCommandOptions): Promise<void> {
  const settings = serveSettings(options);
  const limit = gatewayRateLimit(options);
  const decisionTimeoutMs = redisDecisionTimeoutMs(options);
  const schema = options.project === undefined ? undefined : loadSchemaSources(options.project);
  // With --storage, --data keeps the gateway's keys and limits, and the bucket's cache in its own folder.
  const storage = storageOf(options, settings.data, join(settings.data, GATEWAY_S3_CACHE));
  const database = await Database.open(
    { storage, schema, mode: options.readOnly === true ? "readonly" : "writer", embedder: settings.embedder },
    { defaultTimeoutMs: settings.timeoutMs },
  );
  const bucket = await openBucket(options, limit, settings, decisionTimeoutMs);
  const closeAll = async (): Promise<void> => {
    await bucket.close();
    await database.close();
  };
  const hosted = { databaseId: databaseId(settings.data), keys: new KeyStore(settings.data), isDisabled: () => isDisabled(settings.data), bucket };
  let app: FastifyInstance | undefined;
  try {
    app = await buildGateway({ database, logger: settings.logger, hosted });
    await app.listen({ port: settings.port, host: settings.host });
  } catch (cause) {
    await app?.close();
    await closeAll();
    if (app === undefined) throw cause;
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new SilkError("invalid_option", `cannot listen on ${settings.host}:${settings.port}: ${reason}`);
  }
  const address = app.server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const store = options.redis === undefined ? "in this process" : `in Redis ${options.redis}`;
  process.stdout.write(
    `silk: gateway serving ${servedName(options.project)} on http://${shown}:${address.port} (data in ${storageName(storage)}; ` +
      `${limit.ratePerSecond} requests/s, burst ${limit.burst}, bucket ${store})\n`,
  );
  announceEmbedder(settings);
  announceWarnings(database.warnings, settings.logger);
  if (readKeys(settings.data).every((record) => record.revoked !== null)) {
    settings.logger.warn(`no live API key: every request will be refused; make one with \`silk keys create --data ${settings.data}\``);
  }
  closeOnSignals(app, closeAll, settings.logger);
}
