/**
 * The shared token bucket: when several gateway processes serve one database, its bucket lives in Redis and every
 * decision is one Lua script run atomically on the Redis server (EVALSHA, falling back to EVAL when the server's
 * script cache is empty after a restart). The script reads the Redis server's own `TIME`, so gateways on machines
 * whose clocks disagree still share one clock. The arithmetic is token-bucket.ts's, in Lua.
 *
 * It fails closed: the client keeps no offline queue, never retries a command, and gives up after
 * REDIS_DECISION_TIMEOUT_MS, so a Redis that is down or stuck answers 503 rate_limit_unavailable at once and the
 * request runs nothing (SPEC Errors).
 */
import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { SilkError } from "../../protocol/errors.js";
import { retryAfterSeconds, type Admission, type Admitter, type RateLimit } from "./token-bucket.js";

/**
 * How long a decision may take, in milliseconds. Redis on the same network answers in well under a millisecond;
 * this is long enough for a garbage-collection pause on either side and short enough that a stuck Redis does not
 * hold requests (and their sockets) for long.
 */
export const REDIS_DECISION_TIMEOUT_MS = 100;
/** The longest wait between reconnection attempts, in milliseconds: admission resumes this soon after Redis is back. */
export const REDIS_RECONNECT_DELAY_MS_MAX = 1000;
/** The step by which reconnection delays grow per failed attempt, in milliseconds. */
const REDIS_RECONNECT_DELAY_STEP_MS = 50;
/** How long a starting gateway waits for its first connection, in milliseconds, before serving (and failing closed). */
export const REDIS_CONNECT_WAIT_MS = 2000;

/**
 * KEYS[1] is the bucket (a hash of `tokens` and `at`, the Redis time in microseconds of its last update); ARGV are
 * the rate per second and the burst. Returns {1, 0} when a token was taken, {0, microseconds until one is back}
 * otherwise. A bucket left alone long enough to be full again is deleted by its expiry: a missing bucket is full.
 * Tokens are stored with 17 significant digits so that no fraction of a token is lost between calls.
 */
export const TAKE_TOKEN_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 1000000)
  at = now
end
local admitted = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  admitted = 1
else
  wait = math.ceil((1 - tokens) * 1000000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%d', at))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) * 1000 / rate) + 1000)
return {admitted, wait}
`;

const TAKE_TOKEN_SHA1 = createHash("sha1").update(TAKE_TOKEN_SCRIPT).digest("hex");

/** SPEC's 503: the text is part of the contract. */
export function rateLimitUnavailable(): SilkError {
  return new SilkError("rate_limit_unavailable", "tenant rate limit is unavailable");
}

/** The Redis key of a database's bucket. */
export function bucketKey(databaseId: string): string {
  return `silk:rate:${databaseId}`;
}

export interface RedisBucketOptions {
  readonly url: string;
  readonly databaseId: string;
  readonly limit: RateLimit;
  /** Told when the connection to Redis is lost or back, once per change (not once per request). */
  readonly onStateChange: (connected: boolean, reason: string) => void;
}

export class RedisBucket implements Admitter {
  private readonly client: Redis;
  private readonly key: string;
  private readonly rate: string;
  private readonly burst: string;

  private constructor(options: RedisBucketOptions) {
    this.key = bucketKey(options.databaseId);
    this.rate = String(options.limit.ratePerSecond);
    this.burst = String(options.limit.burst);
    this.client = new Redis(options.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_DECISION_TIMEOUT_MS,
      connectTimeout: REDIS_CONNECT_WAIT_MS,
      retryStrategy: (attempts) => Math.min(attempts * REDIS_RECONNECT_DELAY_STEP_MS, REDIS_RECONNECT_DELAY_MS_MAX),
    });
    let connected = false;
    this.client.on("ready", () => {
      if (!connected) options.onStateChange(true, `connected to ${options.url}`);
      connected = true;
    });
    // Without a listener, ioredis reports every failed reconnection attempt as an unhandled error.
    this.client.on("error", (cause: Error) => {
      if (connected) options.onStateChange(false, cause.message);
      connected = false;
    });
    this.client.on("close", () => {
      if (connected) options.onStateChange(false, "connection closed");
      connected = false;
    });
  }

  /** Connects, waiting up to REDIS_CONNECT_WAIT_MS; if Redis is not there yet, the bucket still works and fails closed. */
  static async open(options: RedisBucketOptions): Promise<RedisBucket> {
    const bucket = new RedisBucket(options);
    await new Promise<void>((done) => {
      const timer = setTimeout(done, REDIS_CONNECT_WAIT_MS);
      bucket.client.once("ready", () => {
        clearTimeout(timer);
        done();
      });
    });
    return bucket;
  }

  async admit(): Promise<Admission> {
    let reply: unknown;
    try {
      reply = await this.takeToken();
    } catch {
      // Down, stuck or refusing: whatever the reason, no safe decision was made. Connection changes are reported
      // through onStateChange; logging each refused request would flood the log during an outage.
      throw rateLimitUnavailable();
    }
    if (!Array.isArray(reply) || reply.length !== 2 || typeof reply[0] !== "number" || typeof reply[1] !== "number") {
      throw new SilkError("internal", `internal error (a bug in Silk): the rate-limit script answered ${JSON.stringify(reply)}`);
    }
    if (reply[0] === 1) return { admitted: true };
    return { admitted: false, retryAfterSeconds: retryAfterSeconds(reply[1] / 1000) };
  }

  private async takeToken(): Promise<unknown> {
    try {
      return await this.client.evalsha(TAKE_TOKEN_SHA1, 1, this.key, this.rate, this.burst);
    } catch (cause) {
      // A restarted Redis has an empty script cache; EVAL loads the script again (and caches it for EVALSHA).
      if (!(cause instanceof Error) || !cause.message.startsWith("NOSCRIPT")) throw cause;
      return this.client.eval(TAKE_TOKEN_SCRIPT, 1, this.key, this.rate, this.burst);
    }
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}
