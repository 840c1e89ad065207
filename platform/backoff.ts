/**
 * The wait before a retry: exponential backoff, one formula for every layer that retries (the coordinator applying a
 * decided commit, a partition leader's log append, the NATS transport, the OpenAI-compatible embedder). Each caller
 * names its policy as a constant beside the loop it paces; this module only turns an attempt number into a delay, so
 * a change to how backoff grows or jitters is made once. It lives in platform/ because cluster/ and embedders/ both
 * need it and may not import each other. It reads no clock and sleeps no time; its randomness is the `random` a
 * caller passes (default Math.random), so a test replays a wait exactly.
 */
import { unreachable } from "../protocol/errors.js";

/** Each attempt's ceiling is this many times the one before, until `maxMs`. */
export const BACKOFF_GROWTH = 2;

/**
 * How a delay is drawn below the attempt's ceiling:
 * - `none`: the ceiling itself (one waiter, nobody to collide with);
 * - `equal`: uniform in [ceiling / 2, ceiling), so a retry never comes back almost at once, yet many clients spread;
 * - `full`: uniform in [0, ceiling), whole milliseconds (AWS's "full jitter": the widest spread for many clients).
 */
export type BackoffJitter = "none" | "equal" | "full";

export interface Backoff {
  /** The ceiling of the first wait (attempt 0), in milliseconds. */
  readonly firstMs: number;
  /** No wait's ceiling grows past this, in milliseconds. */
  readonly maxMs: number;
  readonly jitter: BackoffJitter;
}

/**
 * The wait in milliseconds before retrying after failed attempt `attempt` (0 for the first failure):
 * min(maxMs, firstMs × 2^attempt), jittered as the policy says. `random` returns a number in [0, 1).
 */
export function backoffMs(backoff: Backoff, attempt: number, random: () => number = Math.random): number {
  // firstMs 0 is "no wait"; without the test, 0 × 2^attempt is NaN once 2^attempt overflows to Infinity.
  const ceilingMs = backoff.firstMs === 0 ? 0 : Math.min(backoff.maxMs, backoff.firstMs * BACKOFF_GROWTH ** attempt);
  switch (backoff.jitter) {
    case "none":
      return ceilingMs;
    case "equal":
      return (0.5 + 0.5 * random()) * ceilingMs;
    case "full":
      return Math.floor(random() * ceilingMs);
    default:
      return unreachable(backoff.jitter, "backoff jitter");
  }
}
