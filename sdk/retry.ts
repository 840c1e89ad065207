/**
 * Retrying the two answers SPEC's error table says to retry, and nothing else:
 *
 * - 429 `rate_limited`: wait the server's `Retry-After` seconds plus a random jitter (many workers sharing one
 *   database's bucket would otherwise all come back in the same instant), then try again;
 * - 503 `rate_limit_unavailable`: the gateway could not decide safely; back off exponentially with full jitter
 *   (a uniformly random wait below `min(cap, base * 2^retry)`, AWS's "full jitter"), bounded in time and attempts.
 *
 * Every other error (a 400 is the caller's bug, a 408 or 500 may have run) is thrown at once. Time and randomness are
 * passed in, so tests replay the exact waits with a fake sleep and a seeded random.
 */
import { SilkClientError } from "./client.js";

/** First backoff ceiling of a 503 retry, in milliseconds; it doubles per retry up to the cap. */
export const RETRY_BACKOFF_BASE_MS = 100;
/** Ceiling of one 503 backoff wait, in milliseconds. */
export const RETRY_BACKOFF_CAP_MS = 10_000;
/** Attempts in all (the first call included) before the last error is thrown. */
export const RETRY_ATTEMPTS_MAX = 5;
/** Jitter added to a `Retry-After` wait: uniformly random below this many milliseconds. */
export const RETRY_AFTER_JITTER_MS_MAX = 1_000;
/** A `Retry-After` longer than this is not waited out: the error is thrown so the caller can decide. */
export const RETRY_AFTER_SECONDS_MAX = 60;

export interface RetryOptions {
  readonly attemptsMax?: number;
  readonly backoffBaseMs?: number;
  readonly backoffCapMs?: number;
  readonly retryAfterJitterMsMax?: number;
  readonly retryAfterSecondsMax?: number;
  /** Waits `ms` milliseconds; `setTimeout` by default. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** A number in [0, 1); `Math.random` by default. */
  readonly random?: () => number;
  /** Told before each wait: which attempt failed, with what, and how long the helper will wait. */
  readonly onRetry?: (event: { readonly attempt: number; readonly error: SilkClientError; readonly waitMs: number }) => void;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls `fn` until it resolves, retrying only `rate_limited` and `rate_limit_unavailable` within the bounds. */
export async function withRetry<T>(fn: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attemptsMax = options.attemptsMax ?? RETRY_ATTEMPTS_MAX;
  if (!Number.isSafeInteger(attemptsMax) || attemptsMax < 1) throw new RangeError(`attemptsMax must be a positive integer, got ${attemptsMax}`);
  const sleep = options.sleep ?? defaultSleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (cause) {
      const waitMs = attempt < attemptsMax ? retryWaitMs(cause, attempt, options) : undefined;
      if (waitMs === undefined) throw cause;
      options.onRetry?.({ attempt, error: cause as SilkClientError, waitMs });
      await sleep(waitMs);
    }
  }
}

/** How long to wait before retrying after `cause` failed attempt number `attempt`, or undefined to give up. */
export function retryWaitMs(cause: unknown, attempt: number, options: RetryOptions = {}): number | undefined {
  if (!(cause instanceof SilkClientError)) return undefined;
  const random = options.random ?? Math.random;
  if (cause.code === "rate_limited" && cause.retryAfterSeconds !== undefined) {
    if (cause.retryAfterSeconds > (options.retryAfterSecondsMax ?? RETRY_AFTER_SECONDS_MAX)) return undefined;
    return cause.retryAfterSeconds * 1000 + Math.floor(random() * (options.retryAfterJitterMsMax ?? RETRY_AFTER_JITTER_MS_MAX));
  }
  // A 429 without a usable Retry-After (a proxy's, say) is still a rate limit: back off as for 503.
  if (cause.code === "rate_limited" || cause.code === "rate_limit_unavailable") {
    const ceilingMs = Math.min(options.backoffCapMs ?? RETRY_BACKOFF_CAP_MS, (options.backoffBaseMs ?? RETRY_BACKOFF_BASE_MS) * 2 ** (attempt - 1));
    return Math.floor(random() * ceilingMs);
  }
  return undefined;
}
