/**
 * The shared token bucket: when several gateway processes serve one database, its bucket lives in Redis and every
 * decision is one Lua script run atomically on the Redis server (EVALSHA, falling back to EVAL when the server's
 * script cache is empty after a restart). The script reads the Redis server's own `TIME`, so gateways on machines
 * whose clocks disagree still share one clock. The arithmetic is token-bucket.ts's, in Lua.
 *
 * It fails closed: the client keeps no offline queue, never retries a command, and gives up after the decision
 * timeout (`decisionTimeoutMs`), so a Redis that is down or stuck answers 503 rate_limit_unavailable at once and the
 * request runs nothing (SPEC Errors).
 *
 * A refused request must spend nothing, yet a command the gateway gave up on is still in Redis's input buffer: a
 * paused Redis runs every one of them when it resumes (measured before this: a bucket of 9 went to 0 for requests
 * that had all been answered 503). So each decision carries a deadline on the Redis server's clock, the moment the
 * gateway gives up plus one more timeout, and the script refuses to touch the bucket after it. The gateway knows
 * Redis's clock only from the times in its replies, so it keeps a lower bound on the offset (RedisClock): the
 * deadline it sends is never later than the real one. A script that ran before its deadline but whose answer came
 * back after the gateway gave up has its token given back (REFUND_TOKEN_SCRIPT) when the late answer arrives.
 */
import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { SilkError } from "../../protocol/errors.js";
import { retryAfterSeconds, type Admission, type Admitter, type RateLimit } from "./token-bucket.js";


/** The longest wait between reconnection attempts, in milliseconds: admission resumes this soon after Redis is back. */
export const REDIS_RECONNECT_DELAY_MS_MAX = 1000;
/** The step by which reconnection delays grow per failed attempt, in milliseconds. */
const REDIS_RECONNECT_DELAY_STEP_MS = 50;
/** How long a starting gateway waits for its first connection, in milliseconds, before serving (and failing closed). */
export const REDIS_CONNECT_WAIT_MS = 2000;

/**
 * How fast two clocks may drift apart, as a fraction: twice the most NTP slews a clock (500 ppm). The bound on
 * Redis's clock offset is widened by this much per microsecond since it was last confirmed, so it stays a bound.
 */
const CLOCK_DRIFT_MAX = 0.001;

/**
 * KEYS[1] is the bucket (a hash of `tokens` and `at`, the Redis time in microseconds of its last update); ARGV are
 * the rate per second, the burst, and the deadline (Redis time in microseconds) after which the gateway no longer
 * waits for the answer. Returns {1, 0, now} when a token was taken, {0, microseconds until one is back, now}
 * otherwise, and {-1, 0, now} past the deadline, touching nothing. A bucket left alone long enough to be full again
 * is deleted by its expiry: a missing bucket is full. Tokens are stored with 17 significant digits so that no
 * fraction of a token is lost between calls.
 */
export const TAKE_TOKEN_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local deadline = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
if now > deadline then
  return {-1, 0, now}
end
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
return {admitted, wait, now}
`;

/**
 * Gives back one token taken by a decision whose answer came too late to be used (ARGV[1] is the burst, the cap).
 * A missing bucket is full already.
 */
export const REFUND_TOKEN_SCRIPT = `
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens'))
if tokens == nil then
  return 0
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', math.min(tonumber(ARGV[1]), tokens + 1)))
return 1
`;

interface Script {
  readonly text: string;
  readonly sha1: string;
}

function script(text: string): Script {
  return { text, sha1: createHash("sha1").update(text).digest("hex") };
}

const TAKE_TOKEN = script(TAKE_TOKEN_SCRIPT);
const REFUND_TOKEN = script(REFUND_TOKEN_SCRIPT);

/** Microseconds on this process's clock (monotonic, in the same unit as Redis's TIME). */
function localMicroseconds(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

/**
 * What this process knows of the Redis server's clock: a lower bound on Redis time minus local time, from the
 * times Redis put in its replies. A reply read at Redis time r, sent at local time s and received at local time t
 * puts the offset between r − t and r − s; the bound is kept inside every such interval, and widened by the most
 * the clocks can drift since it was last confirmed. Being a lower bound, a deadline built on it comes no later on
 * Redis's clock than the moment it stands for.
 */
export class RedisClock {
  private offsetLowUs: number | undefined;
  private confirmedAtUs = 0;

  observe(redisUs: number, sentUs: number, receivedUs: number): void {
    const low = redisUs - receivedUs;
    const high = redisUs - sentUs;
    const kept = this.offsetLowUs === undefined ? low : this.offsetLowUs - (receivedUs - this.confirmedAtUs) * CLOCK_DRIFT_MAX;
    this.offsetLowUs = Math.min(Math.max(kept, low), high);
    this.confirmedAtUs = receivedUs;
  }

  /** The Redis time that local time `localUs` has surely reached, or undefined before any reply was seen. */
  redisTimeAtMost(localUs: number): number | undefined {
    if (this.offsetLowUs === undefined) return undefined;
    return Math.floor(localUs + this.offsetLowUs - Math.max(0, localUs - this.confirmedAtUs) * CLOCK_DRIFT_MAX);
  }
}

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
  /**
   * How long a decision may take, in milliseconds (`silk gateway --redis-timeout-ms`, default
   * GATEWAY_REDIS_TIMEOUT_MS_DEFAULT in bin/defaults.ts): past it the request is refused, 503.
   */
  readonly decisionTimeoutMs: number;
  /**
   * Told when Redis stops answering (connection lost, or a decision not answered in time: stuck) and when it
   * answers again, once per change (not once per request).
   */
  readonly onStateChange: (connected: boolean, reason: string) => void;
}

/** A decision's reply: {1, 0, now} admitted, {0, wait, now} refused, {-1, 0, now} past its deadline. */
type TakeTokenReply = readonly [status: -1 | 0 | 1, waitUs: number, redisNowUs: number];

function isTakeTokenReply(reply: unknown): reply is TakeTokenReply {
  return (
    Array.isArray(reply) && reply.length === 3 && (reply[0] === -1 || reply[0] === 0 || reply[0] === 1) && typeof reply[1] === "number" && typeof reply[2] === "number"
  );
}

/** Rejects with `timedOut` after `ms`; the promise itself goes on, so its late outcome can still be acted on. */
function within<T>(promise: Promise<T>, ms: number, timedOut: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(timedOut()), ms);
  });
  return Promise.race([promise, expiry]).finally(() => clearTimeout(timer));
}

class DecisionTimeout extends Error {}

export class RedisBucket implements Admitter {
  private readonly client: Redis;
  private readonly key: string;
  private readonly rate: string;
  private readonly burst: string;
  private readonly clock = new RedisClock();
  private readonly decisionTimeoutMs: number;
  /** Whether Redis answered the last thing asked of it; changes are reported through onStateChange. */
  private answering = false;

  private constructor(private readonly options: RedisBucketOptions) {
    this.key = bucketKey(options.databaseId);
    this.decisionTimeoutMs = options.decisionTimeoutMs;
    this.rate = String(options.limit.ratePerSecond);
    this.burst = String(options.limit.burst);
    // No commandTimeout: the decision's own timer (within) gives up, and the command stays with the client, so a
    // late answer is still seen (its token given back) rather than dropped.
    this.client = new Redis(options.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: REDIS_CONNECT_WAIT_MS,
      retryStrategy: (attempts) => Math.min(attempts * REDIS_RECONNECT_DELAY_STEP_MS, REDIS_RECONNECT_DELAY_MS_MAX),
    });
    this.client.on("ready", () => this.setAnswering(true, `connected to ${options.url}`));
    // Without a listener, ioredis reports every failed reconnection attempt as an unhandled error.
    this.client.on("error", (cause: Error) => this.setAnswering(false, cause.message));
    this.client.on("close", () => this.setAnswering(false, "connection closed"));
  }

  private setAnswering(answering: boolean, reason: string): void {
    if (answering !== this.answering) this.options.onStateChange(answering, reason);
    this.answering = answering;
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
    const startedUs = localMicroseconds();
    const giveUpUs = startedUs + this.decisionTimeoutMs * 1000;
    // Set by the timer when this request stops waiting; a reply that comes after it is nobody's to use.
    let abandoned = false;
    const waitFor = <T>(decision: Promise<T>): Promise<T> =>
      within(decision, Math.max(0, (giveUpUs - localMicroseconds()) / 1000), () => {
        abandoned = true;
        return new DecisionTimeout();
      });
    let reply: TakeTokenReply;
    try {
      // Before the first reply the gateway knows nothing of Redis's clock: one TIME, within the same time limit.
      if (this.clock.redisTimeAtMost(startedUs) === undefined) await waitFor(this.readClock());
      // The script's deadline lies one timeout beyond the moment this request gives up: a decision that ran in
      // between is given back when its answer arrives (takeToken); later than that, Redis ran it after a stall, and
      // it touches nothing. A deadline at the give-up moment itself would refuse decisions that a loaded gateway
      // merely read late.
      const deadlineUs = this.clock.redisTimeAtMost(giveUpUs + this.decisionTimeoutMs * 1000) ?? 0;
      reply = await waitFor(this.takeToken(deadlineUs, startedUs, () => abandoned));
    } catch (cause) {
      if (cause instanceof SilkError) throw cause;
      // Down, stuck or refusing: whatever the reason, no safe decision was made. A stall is reported once, through
      // onStateChange; logging each refused request would flood the log during an outage.
      if (cause instanceof DecisionTimeout) this.setAnswering(false, `no answer within ${this.decisionTimeoutMs} ms: Redis is stuck or overloaded`);
      throw rateLimitUnavailable();
    }
    this.setAnswering(true, "Redis answers again");
    // Past the deadline on Redis's clock (the bound on it is cautious): nothing was spent, and nothing may run.
    if (reply[0] === -1) throw rateLimitUnavailable();
    if (reply[0] === 1) return { admitted: true };
    return { admitted: false, retryAfterSeconds: retryAfterSeconds(reply[1] / 1000) };
  }

  private async readClock(): Promise<void> {
    const sentUs = localMicroseconds();
    const [seconds, microseconds] = await this.client.time();
    this.clock.observe(Number(seconds) * 1_000_000 + Number(microseconds), sentUs, localMicroseconds());
  }

  /**
   * Runs the decision script. Its reply also says what time Redis had, which keeps the clock bound fresh. If the
   * gateway has given up by the time the reply comes and the script took a token anyway, the token is given back.
   */
  private async takeToken(deadlineUs: number, sentUs: number, abandoned: () => boolean): Promise<TakeTokenReply> {
    const reply = await this.runScript(TAKE_TOKEN, [this.rate, this.burst, String(deadlineUs)]);
    if (!isTakeTokenReply(reply)) {
      throw new SilkError("internal", `internal error (a bug in Silk): the rate-limit script answered ${JSON.stringify(reply)}`);
    }
    this.clock.observe(reply[2], sentUs, localMicroseconds());
    if (reply[0] === 1 && abandoned()) {
      // Nobody waits for this answer any more: the request was refused with 503. Best effort: if the refund fails
      // too, Redis is in trouble and the token comes back by refill.
      this.runScript(REFUND_TOKEN, [this.burst]).catch(() => undefined);
    }
    return reply;
  }

  private async runScript(script: Script, args: readonly string[]): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha1, 1, this.key, ...args);
    } catch (cause) {
      // A restarted Redis has an empty script cache; EVAL loads the script again (and caches it for EVALSHA).
      if (!(cause instanceof Error) || !cause.message.startsWith("NOSCRIPT")) throw cause;
      return this.client.eval(script.text, 1, this.key, ...args);
    }
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}
