/**
 * The execution deadline of one invocation (a request's `timeout_ms`, or the server's default). The executor asks
 * between steps and, inside long loops over elements, once every DEADLINE_CHECK_INTERVAL_ELEMENTS elements, so a
 * tight loop does not pay a clock read per element. Past the deadline the invocation fails with `query_timeout`
 * before anything is committed, so its writes are abandoned with its view: nothing of it becomes visible.
 *
 * The clock is passed in (a monotonic millisecond reading), so tests run the real checks on a fake clock.
 */
import { SilkError } from "../protocol/errors.js";

/** Elements a loop works through between two clock reads. */
export const DEADLINE_CHECK_INTERVAL_ELEMENTS = 1_024;

/** A monotonic clock in milliseconds (`performance.now` in production). */
export type ClockMs = () => number;

export const monotonicClockMs: ClockMs = () => performance.now();

export class Deadline {
  private elementsSinceCheck = 0;

  private constructor(
    private readonly atMs: number,
    private readonly clockMs: ClockMs,
    private readonly timeoutMs: number,
  ) {}

  /** A deadline that never passes: an embedded run without `timeout_ms`. */
  static none(): Deadline {
    return new Deadline(Infinity, monotonicClockMs, Infinity);
  }

  /** `timeoutMs` from now on `clockMs`; undefined means no deadline. */
  static after(timeoutMs: number | undefined, clockMs: ClockMs): Deadline {
    return timeoutMs === undefined ? Deadline.none() : new Deadline(clockMs() + timeoutMs, clockMs, timeoutMs);
  }

  /** The milliseconds left, for handing the deadline on to another actor (never negative; undefined without one). */
  remainingMs(): number | undefined {
    if (this.atMs === Infinity) return undefined;
    return Math.max(0, this.atMs - this.clockMs());
  }

  /** Throws `query_timeout` once the deadline has passed. */
  check(): void {
    if (this.atMs === Infinity) return;
    if (this.clockMs() > this.atMs) {
      throw new SilkError("query_timeout", `the query ran past its deadline of ${this.timeoutMs} ms and was rolled back; narrow it, or raise timeout_ms`);
    }
  }

  /** Counts `count` elements worked on and checks the clock once every DEADLINE_CHECK_INTERVAL_ELEMENTS of them. */
  tick(count = 1): void {
    if (this.atMs === Infinity) return;
    this.elementsSinceCheck += count;
    if (this.elementsSinceCheck < DEADLINE_CHECK_INTERVAL_ELEMENTS) return;
    this.elementsSinceCheck = 0;
    this.check();
  }
}
