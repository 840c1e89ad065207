/**
 * A Clock (platform/clock.ts) that moves only when a test says: `advance(ms)` fires every timer due within the step,
 * in order of their due instants (ties in the order they were set), each at its own instant, letting the promise
 * continuations it starts run before the next one fires, so the code under test sets its next timer as it would.
 * Its randomness is a fixed sequence (or a constant), so a backoff's jitter is known.
 */
import type { CancelTimer, Clock } from "../../platform/clock.js";

interface Timer {
  readonly id: number;
  at: number;
  readonly fn: () => void;
  /** Repeats every this many ms (from `every`); undefined: once. */
  readonly periodMs: number | undefined;
}

/** Lets pending promise continuations (and anything they await that needs no I/O) run. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 5; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class ManualClock implements Clock {
  private monotonic = 0;
  private readonly timers = new Map<number, Timer>();
  private nextId = 0;
  private draws = 0;

  /** `wallStartMs`: what nowMs() answers at monotonic 0; `randoms`: the values random() cycles through. */
  constructor(
    private readonly wallStartMs = Date.UTC(2026, 0, 1),
    private readonly randoms: readonly number[] = [0.5],
  ) {}

  nowMs(): number {
    return this.wallStartMs + this.monotonic;
  }

  monotonicMs(): number {
    return this.monotonic;
  }

  setTimer(ms: number, fn: () => void): CancelTimer {
    return this.add(ms, fn, undefined);
  }

  every(ms: number, fn: () => void): CancelTimer {
    return this.add(ms, fn, ms);
  }

  random(): number {
    return this.randoms[this.draws++ % this.randoms.length] ?? 0.5;
  }

  /** Timers waiting to fire. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing what falls due on the way (see the module comment). */
  async advance(ms: number): Promise<void> {
    const until = this.monotonic + ms;
    await settle();
    for (;;) {
      const due = [...this.timers.values()].filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (due === undefined) break;
      this.monotonic = due.at;
      if (due.periodMs === undefined) this.timers.delete(due.id);
      else due.at += Math.max(1, due.periodMs);
      due.fn();
      await settle();
    }
    this.monotonic = until;
  }

  private add(ms: number, fn: () => void, periodMs: number | undefined): CancelTimer {
    const id = this.nextId++;
    this.timers.set(id, { id, at: this.monotonic + Math.max(0, ms), fn, periodMs });
    return () => void this.timers.delete(id);
  }
}
