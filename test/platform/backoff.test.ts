/**
 * The one backoff formula (platform/backoff.ts): each attempt's ceiling doubles from `firstMs` up to `maxMs`, and
 * the jitter draws below it. The values are the formulas the callers wrote by hand before they shared this one, so
 * a change here that moves a caller's waits fails.
 */
import { describe, expect, it } from "vitest";
import { backoffMs, type Backoff } from "../../platform/backoff.js";

const attempts = Array.from({ length: 40 }, (_, attempt) => attempt);

describe("backoffMs", () => {
  it("without jitter is min(maxMs, firstMs × 2^attempt), as the coordinator's commit retry and the log's publish retry were", () => {
    const commit: Backoff = { firstMs: 50, maxMs: 1_000, jitter: "none" };
    expect(attempts.slice(0, 7).map((attempt) => backoffMs(commit, attempt))).toEqual([50, 100, 200, 400, 800, 1_000, 1_000]);
    const publish: Backoff = { firstMs: 20, maxMs: 250, jitter: "none" };
    for (const attempt of attempts) expect(backoffMs(publish, attempt)).toBe(Math.min(20 * 2 ** attempt, 250));
    // Far past the cap, 2^attempt is Infinity: the wait is still the cap.
    expect(backoffMs(commit, 5_000)).toBe(1_000);
  });

  it("with equal jitter is between half the ceiling and the ceiling, as the NATS transport's was", () => {
    const transport: Backoff = { firstMs: 25, maxMs: 1_000, jitter: "equal" };
    for (const random of [0, 0.25, 0.5, 0.999]) {
      for (const attempt of attempts) {
        const capMs = Math.min(1_000, 25 * 2 ** Math.min(attempt, 10));
        expect(backoffMs(transport, attempt, () => random)).toBe((0.5 + 0.5 * random) * capMs);
      }
    }
    expect(backoffMs(transport, 0, () => 0)).toBe(12.5);
    expect(backoffMs(transport, 9, () => 0.999)).toBeLessThan(1_000);
  });

  it("with full jitter is whole milliseconds in [0, ceiling), as the embedder's was", () => {
    const embed: Backoff = { firstMs: 250, maxMs: 4_000, jitter: "full" };
    for (const random of [0, 0.3, 0.5, 0.999]) {
      for (const attempt of attempts) {
        expect(backoffMs(embed, attempt, () => random)).toBe(Math.floor(random * Math.min(4_000, 250 * 2 ** attempt)));
      }
    }
    expect(backoffMs(embed, 2, () => 0.5)).toBe(500);
  });

  it("a first wait of 0 is no wait at every attempt, even where 2^attempt overflows", () => {
    for (const jitter of ["none", "equal", "full"] as const) {
      expect(backoffMs({ firstMs: 0, maxMs: 4_000, jitter }, 0, () => 0.5)).toBe(0);
      expect(backoffMs({ firstMs: 0, maxMs: 4_000, jitter }, 2_000, () => 0.5)).toBe(0);
    }
  });

  it("draws randomness only from the `random` it is given", () => {
    const draws: number[] = [];
    const random = (): number => {
      draws.push(1);
      return 0.5;
    };
    backoffMs({ firstMs: 10, maxMs: 100, jitter: "none" }, 3, random);
    expect(draws).toHaveLength(0);
    backoffMs({ firstMs: 10, maxMs: 100, jitter: "equal" }, 3, random);
    backoffMs({ firstMs: 10, maxMs: 100, jitter: "full" }, 3, random);
    expect(draws).toHaveLength(2);
  });
});
