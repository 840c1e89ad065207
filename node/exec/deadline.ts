/**
 * The execution deadline of one invocation (a request's `timeout_ms`, or the server's default), and the pacing that
 * keeps one long invocation from holding the event loop.
 *
 * Deadline: the executor asks between steps and, inside long loops over elements, once every
 * DEADLINE_CHECK_INTERVAL_ELEMENTS elements, so a tight loop does not pay a clock read per element. Past the deadline
 * the invocation fails with `query_timeout` before anything is committed, so its writes are abandoned with its view:
 * nothing of it becomes visible.
 *
 * Pacing: LMDB reads are synchronous, so the executor's awaits resolve as microtasks and never let the event loop run
 * I/O; a query of seconds would hold every other request (health checks included) for seconds. The same clock reads
 * that check the deadline also measure the current slice of continuous work: once it reaches EXECUTION_SLICE_MS the
 * check says so, and the caller, at a point where it may yield, awaits `pause()` (a macrotask), so requests that
 * arrived meanwhile run in between. With a timeout, pacing adds no clock reading to the deadline's; without one, the
 * clock is read only where a deadline would check it (a point read on the fast path never gets there).
 *
 * The clock is passed in (a monotonic millisecond reading), so tests run the real checks on a fake clock. Timers
 * (`pause`, `within`) are the event loop's own.
 */
import { setImmediate as nextMacrotask } from "node:timers/promises";
import { SilkError } from "../../protocol/errors.js";

/** Elements a loop works through between two clock reads. */
export const DEADLINE_CHECK_INTERVAL_ELEMENTS = 1_024;

/**
 * Milliseconds of continuous work after which an invocation lets the event loop run. Short enough that a health
 * check waits at most about this long behind any query; long enough that the pauses cost nothing measurable.
 */
export const EXECUTION_SLICE_MS = 10;

/** A monotonic clock in milliseconds (`performance.now` in production). */
export type ClockMs = () => number;

export const monotonicClockMs: ClockMs = () => performance.now();

export class Deadline {
  private elementsSinceCheck = 0;
  /** When the current slice of continuous work began; NaN until the first reading (a deadline without a timeout). */
  private sliceStartMs: number;

  private constructor(
    private readonly atMs: number,
    private readonly clockMs: ClockMs,
    private readonly timeoutMs: number,
    startMs: number,
  ) {
    this.sliceStartMs = startMs;
  }

  /**
   * A deadline that never passes (an embedded run without `timeout_ms`); it still paces the work. It reads no clock
   * until a long loop asks, so a point read pays nothing for it.
   */
  static none(clockMs: ClockMs = monotonicClockMs): Deadline {
    return new Deadline(Infinity, clockMs, Infinity, NaN);
  }

  /** `timeoutMs` from now on `clockMs`; undefined means no deadline. */
  static after(timeoutMs: number | undefined, clockMs: ClockMs): Deadline {
    if (timeoutMs === undefined) return Deadline.none(clockMs);
    const nowMs = clockMs();
    return new Deadline(nowMs + timeoutMs, clockMs, timeoutMs, nowMs);
  }

  /** The milliseconds left, for handing the deadline on to another actor (never negative; undefined without one). */
  remainingMs(): number | undefined {
    if (this.atMs === Infinity) return undefined;
    return Math.max(0, this.atMs - this.clockMs());
  }

  /** The `query_timeout` error of this deadline, in whole milliseconds of the timeout it was given. */
  expired(): SilkError {
    return new SilkError("query_timeout", `the query ran past its deadline of ${Math.ceil(this.timeoutMs)} ms and was rolled back; narrow it, or raise timeout_ms`);
  }

  /** Throws `query_timeout` once the deadline has passed. */
  check(): void {
    if (this.atMs === Infinity) return;
    if (this.clockMs() > this.atMs) throw this.expired();
  }

  /**
   * One clock reading for both: throws `query_timeout` once the deadline has passed, and says whether the current
   * slice of work is spent (the caller should `pause()` where it can, or give up a path that cannot yield).
   */
  checkSlice(): boolean {
    const nowMs = this.clockMs();
    if (nowMs > this.atMs) throw this.expired();
    if (Number.isNaN(this.sliceStartMs)) this.sliceStartMs = nowMs;
    return nowMs - this.sliceStartMs >= EXECUTION_SLICE_MS;
  }

  /**
   * Counts `count` elements worked on; once every DEADLINE_CHECK_INTERVAL_ELEMENTS of them it reads the clock
   * (`checkSlice`). True when the slice is spent: an async loop then awaits `pause()`; a synchronous one leaves it
   * to the next step boundary.
   */
  tick(count = 1): boolean {
    this.elementsSinceCheck += count;
    if (this.elementsSinceCheck < DEADLINE_CHECK_INTERVAL_ELEMENTS) return false;
    this.elementsSinceCheck = 0;
    return this.checkSlice();
  }

  /**
   * Lets the event loop run (one macrotask: timers, I/O, other requests), then starts a new slice and checks the
   * deadline again. Only where the invocation's state stays valid across a yield: a held snapshot, and for a write
   * the partition's write queue (nothing else writes until this invocation is done).
   */
  async pause(): Promise<void> {
    await nextMacrotask();
    this.sliceStartMs = this.clockMs();
    if (this.sliceStartMs > this.atMs) throw this.expired();
  }

  /**
   * `waiting` (a place in a queue or a lock), or `query_timeout` once the deadline passes first: a queued request
   * answers at its deadline, not when its turn comes. The caller undoes what `waiting` gives if it comes too late.
   */
  within<T>(waiting: Promise<T>): Promise<T> {
    const remainingMs = this.remainingMs();
    if (remainingMs === undefined) return waiting;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(this.expired()), remainingMs);
      waiting.then(
        (value) => (clearTimeout(timer), resolve(value)),
        (cause: unknown) => (clearTimeout(timer), reject(cause)),
      );
    });
  }
}
