/**
 * The token bucket of a hosted database (SPEC Limits, "Rate limit on POST /v2/query"): a full bucket holds `burst`
 * tokens, each admitted request takes one, and tokens come back continuously at `ratePerSecond` up to `burst` — not
 * in fixed one-second windows. Plans give the rate and burst; a database's own override wins. The arithmetic is a
 * pure function of the state and `nowMs`, so tests drive it with a fake clock; the Redis bucket
 * (redis-bucket.ts) runs the same arithmetic in Lua on the Redis server's clock.
 */
import { SilkError } from "../../protocol/errors.js";

/** A database's sustained rate and burst capacity. */
export interface RateLimit {
  readonly ratePerSecond: number;
  readonly burst: number;
}

export const PLANS = {
  idea: { ratePerSecond: 5, burst: 10 },
  startup: { ratePerSecond: 10, burst: 20 },
  growth: { ratePerSecond: 20, burst: 40 },
} as const satisfies Record<string, RateLimit>;

export type PlanName = keyof typeof PLANS;
export const PLAN_DEFAULT: PlanName = "idea";

/** The largest rate an override may set, in requests per second; beyond it the limit would mean nothing. */
export const RATE_PER_SECOND_MAX = 1_000_000;
/** The largest burst an override may set, in requests. */
export const BURST_REQUESTS_MAX = 1_000_000;

/** The outcome of asking for one token. `retryAfterSeconds` is whole seconds until one token is back (at least 1). */
export type Admission = { readonly admitted: true } | { readonly admitted: false; readonly retryAfterSeconds: number };

/** Something that decides admission for one database: the in-process bucket or the shared Redis one. */
export interface Admitter {
  /** Takes one token if there is one. Throws rate_limit_unavailable when no safe decision can be made. */
  admit(): Promise<Admission>;
  close(): Promise<void>;
}

export function isPlanName(name: string): name is PlanName {
  return Object.hasOwn(PLANS, name);
}

/** Checks a rate limit's numbers: a rate above 0, a whole burst of at least one request, both within their maxima. */
export function checkRateLimit(limit: RateLimit, source: string): RateLimit {
  const { ratePerSecond, burst } = limit;
  if (!(Number.isFinite(ratePerSecond) && ratePerSecond > 0 && ratePerSecond <= RATE_PER_SECOND_MAX)) {
    throw new SilkError("invalid_option", `${source}: the rate must be a number of requests per second above 0 and at most ${RATE_PER_SECOND_MAX}, got ${ratePerSecond}`);
  }
  if (!(Number.isSafeInteger(burst) && burst >= 1 && burst <= BURST_REQUESTS_MAX)) {
    throw new SilkError("invalid_option", `${source}: the burst must be a whole number of requests from 1 to ${BURST_REQUESTS_MAX}, got ${burst}`);
  }
  return limit;
}

/**
 * The limit in force: the plan's values, each replaced by the database's override where it has one (SPEC Limits
 * rule 1: database-specific overrides take precedence over plan values).
 */
export function effectiveRateLimit(plan: PlanName, override: Partial<RateLimit>): RateLimit {
  const base = PLANS[plan];
  return checkRateLimit({ ratePerSecond: override.ratePerSecond ?? base.ratePerSecond, burst: override.burst ?? base.burst }, "rate limit");
}

/** The bucket's state: tokens (fractional while refilling) as of `updatedMs`. */
export interface BucketState {
  tokens: number;
  updatedMs: number;
}

/** A full bucket at `nowMs`: a database that has sent nothing may send its whole burst at once. */
export function fullBucket(limit: RateLimit, nowMs: number): BucketState {
  return { tokens: limit.burst, updatedMs: nowMs };
}

/**
 * Refills the bucket for the time since its last update, then takes one token if a whole one is there. A clock
 * that steps backwards refills nothing rather than draining the bucket.
 */
export function takeToken(state: BucketState, limit: RateLimit, nowMs: number): Admission {
  if (nowMs > state.updatedMs) {
    state.tokens = Math.min(limit.burst, state.tokens + ((nowMs - state.updatedMs) * limit.ratePerSecond) / 1000);
    state.updatedMs = nowMs;
  }
  if (state.tokens >= 1) {
    state.tokens -= 1;
    return { admitted: true };
  }
  return { admitted: false, retryAfterSeconds: retryAfterSeconds(((1 - state.tokens) * 1000) / limit.ratePerSecond) };
}

/** Retry-After is whole seconds (SPEC Errors): the wait for one token, rounded up so a client never comes back early. */
export function retryAfterSeconds(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/** The bucket of a gateway that is the only one serving its database: state in this process, clock passed in. */
export class LocalBucket implements Admitter {
  private readonly state: BucketState;

  constructor(
    private readonly limit: RateLimit,
    private readonly nowMs: () => number,
  ) {
    this.state = fullBucket(limit, nowMs());
  }

  admit(): Promise<Admission> {
    return Promise.resolve(takeToken(this.state, this.limit, this.nowMs()));
  }

  async close(): Promise<void> {}
}
