/**
 * Time, timers and randomness as one injected source, for the replication code (cluster/nats/: the replica, its
 * lease and log, the NATS transport). Those modules read the clock to decide safety questions (is the lease still
 * held, how stale is this follower, is the retry past its deadline) and wait between attempts; with the source
 * passed in, a test drives a lease expiry or a retry by moving a manual clock instead of sleeping, and a chaos run
 * can replay the same choices. It lives in platform/ because cluster/ and the tests of every layer use it and it
 * knows nothing of Silk's data.
 *
 * `realClock` is the default everywhere: `Date.now`, `performance.now`, Node's timers, `Math.random`. A timer from
 * `setTimer` keeps the process alive as `setTimeout` does; a repeating one from `every` does not (`unref`), as
 * every periodic check of the replication code (lease renewal, elections, sweeps) must not hold a process open.
 */

/** Cancels a timer; calling it again, or after the timer fired, does nothing. */
export type CancelTimer = () => void;

export interface Clock {
  /** Wall-clock milliseconds since the Unix epoch (deadlines reported to people; it may jump). */
  nowMs(): number;
  /** Milliseconds on a clock that never goes back (leases, staleness, timeouts); its origin is arbitrary. */
  monotonicMs(): number;
  /** Calls `fn` once after `ms` milliseconds. */
  setTimer(ms: number, fn: () => void): CancelTimer;
  /** Calls `fn` every `ms` milliseconds until cancelled; does not keep the process alive. */
  every(ms: number, fn: () => void): CancelTimer;
  /** A number uniform in [0, 1). */
  random(): number;
}

export const realClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
  setTimer(ms, fn) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
  every(ms, fn) {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
  random: () => Math.random(),
};

/** Resolves after `ms` milliseconds of `clock`'s time. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(ms, resolve));
}
