/**
 * Timing and sampling: a seeded PRNG for the start-node sample, per-query latency capture, and percentiles.
 * Every query is timed on its own with `performance.now()`, for Silk and the raw loop alike, so the clock's own
 * cost (tens of nanoseconds) is paid equally by both sides.
 */
import { performance } from "node:perf_hooks";

export { seededRandom } from "../protocol/random.js";
import { seededRandom } from "../protocol/random.js";

/** `count` distinct members of `population`, chosen by a partial Fisher-Yates shuffle driven by `seed`. */
export function sampleWithoutReplacement(population: Int32Array, count: number, seed: number): number[] {
  const pool = Array.from(population);
  const random = seededRandom(seed);
  const taken = Math.min(count, pool.length);
  for (let i = 0; i < taken; i += 1) {
    const j = i + Math.floor(random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, taken);
}

export interface Timing {
  readonly count: number;
  readonly seconds: number;
  readonly opsPerSecond: number;
  readonly p50Micros: number;
  readonly p99Micros: number;
}

function percentile(sortedMicros: Float64Array, fraction: number): number {
  if (sortedMicros.length === 0) return 0;
  const index = Math.min(sortedMicros.length - 1, Math.ceil(fraction * sortedMicros.length) - 1);
  return sortedMicros[Math.max(0, index)];
}

function summarize(latenciesMicros: Float64Array, seconds: number): Timing {
  const sorted = Float64Array.from(latenciesMicros).sort();
  return {
    count: latenciesMicros.length,
    seconds,
    opsPerSecond: latenciesMicros.length / seconds,
    p50Micros: percentile(sorted, 0.5),
    p99Micros: percentile(sorted, 0.99),
  };
}

/**
 * Collects per-query latencies and answers over several chunks of one workload. The benchmark alternates chunks of
 * Silk and raw queries, so that whatever else the machine is doing (other processes, GC of the other side's
 * garbage) falls on both sides alike and the Silk/raw ratio stays meaningful on a busy machine.
 */
export class LatencyRecorder<T> {
  private readonly latenciesMicros: Float64Array;
  /** The answer of query i, in the order the queries ran, for checking after the clock has stopped. */
  readonly answers: T[];
  private elapsedMillis = 0;

  constructor(readonly count: number) {
    this.latenciesMicros = new Float64Array(count);
    this.answers = new Array(count);
  }

  /** Runs queries [from, to) one after another, each awaited before the next starts (no concurrency). */
  async runAsync(from: number, to: number, query: (index: number) => Promise<T>): Promise<void> {
    const started = performance.now();
    for (let i = from; i < to; i += 1) {
      const before = performance.now();
      this.answers[i] = await query(i);
      this.latenciesMicros[i] = (performance.now() - before) * 1_000;
    }
    this.elapsedMillis += performance.now() - started;
  }

  /** The synchronous twin of runAsync, for the raw lmdb-js loop. */
  runSync(from: number, to: number, query: (index: number) => T): void {
    const started = performance.now();
    for (let i = from; i < to; i += 1) {
      const before = performance.now();
      this.answers[i] = query(i);
      this.latenciesMicros[i] = (performance.now() - before) * 1_000;
    }
    this.elapsedMillis += performance.now() - started;
  }

  timing(): Timing {
    return summarize(this.latenciesMicros, this.elapsedMillis / 1_000);
  }
}

export function secondsSince(startedMillis: number): number {
  return (performance.now() - startedMillis) / 1_000;
}

export function nowMillis(): number {
  return performance.now();
}
