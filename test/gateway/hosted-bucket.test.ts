/**
 * The token bucket's arithmetic with a clock the test moves (SPEC Limits): a full bucket admits its burst at once,
 * tokens come back continuously (not per one-second window) up to the burst, Retry-After is the wait for one token
 * in whole seconds rounded up, plan values give way to a database's override, and `limits.json` is checked.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { limitsPath, readLimitsOverride } from "../../gateway/hosted/tenant-files.js";
import { effectiveRateLimit, fullBucket, LocalBucket, PLANS, retryAfterSeconds, takeToken, type RateLimit } from "../../gateway/hosted/token-bucket.js";
import { removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";

afterAll(removeTemporaryDirectories);

/** Takes `count` tokens at `nowMs` and answers how many were admitted. */
function takeMany(state: ReturnType<typeof fullBucket>, limit: RateLimit, nowMs: number, count: number): number {
  let admitted = 0;
  for (let i = 0; i < count; i += 1) if (takeToken(state, limit, nowMs).admitted) admitted += 1;
  return admitted;
}

describe("token bucket", () => {
  it("admits exactly the burst from a full bucket, then refuses with the wait for one token", () => {
    for (const limit of Object.values(PLANS)) {
      const state = fullBucket(limit, 0);
      expect(takeMany(state, limit, 0, limit.burst)).toBe(limit.burst);
      const refused = takeToken(state, limit, 0);
      // One token takes 1/rate seconds (0.2 s at 5/s); Retry-After rounds it up to whole seconds.
      expect(refused).toEqual({ admitted: false, retryAfterSeconds: 1 });
    }
  });

  it("refills continuously at the rate: a token every 1/rate seconds, not a window at each second", () => {
    const limit = PLANS.idea; // 5/s: one token every 200 ms
    const state = fullBucket(limit, 0);
    takeMany(state, limit, 0, limit.burst);
    expect(takeToken(state, limit, 199).admitted).toBe(false);
    expect(takeToken(state, limit, 200).admitted).toBe(true);
    expect(takeToken(state, limit, 399).admitted).toBe(false);
    expect(takeToken(state, limit, 400).admitted).toBe(true);
    // Over one second from empty, exactly rate tokens come back, spread over the second.
    expect(takeMany(state, limit, 1400, 100)).toBe(limit.ratePerSecond);
  });

  it("never holds more than the burst, however long it rests", () => {
    const limit = PLANS.startup;
    const state = fullBucket(limit, 0);
    takeMany(state, limit, 0, 5);
    expect(takeMany(state, limit, 3_600_000, 1000)).toBe(limit.burst);
  });

  it("admits no more than burst + rate × t over any stretch of t", () => {
    const limit = PLANS.growth;
    const state = fullBucket(limit, 0);
    let admitted = 0;
    // A request every millisecond for ten seconds.
    for (let nowMs = 0; nowMs <= 10_000; nowMs += 1) if (takeToken(state, limit, nowMs).admitted) admitted += 1;
    expect(admitted).toBe(limit.burst + limit.ratePerSecond * 10);
  });

  it("keeps fractions of a token between calls", () => {
    const limit = { ratePerSecond: 3, burst: 1 };
    const state = fullBucket(limit, 0);
    expect(takeToken(state, limit, 0).admitted).toBe(true);
    // 1/3 of a token at 111 ms and 222 ms is not enough; the third third at 334 ms is.
    expect(takeToken(state, limit, 111).admitted).toBe(false);
    expect(takeToken(state, limit, 222).admitted).toBe(false);
    expect(takeToken(state, limit, 334).admitted).toBe(true);
  });

  it("rounds Retry-After up to whole seconds, at least one", () => {
    const limit = { ratePerSecond: 0.25, burst: 1 }; // one token every 4 s
    const state = fullBucket(limit, 0);
    takeToken(state, limit, 0);
    expect(takeToken(state, limit, 0)).toEqual({ admitted: false, retryAfterSeconds: 4 });
    expect(takeToken(state, limit, 2500)).toEqual({ admitted: false, retryAfterSeconds: 2 });
    expect(takeToken(state, limit, 3999)).toEqual({ admitted: false, retryAfterSeconds: 1 });
    expect(retryAfterSeconds(0.001)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
  });

  it("refills nothing, and takes nothing extra, when the clock steps backwards", () => {
    const limit = PLANS.idea;
    const state = fullBucket(limit, 10_000);
    takeMany(state, limit, 10_000, limit.burst);
    expect(takeToken(state, limit, 5_000).admitted).toBe(false);
    expect(takeToken(state, limit, 10_200).admitted).toBe(true);
  });

  it("LocalBucket reads the clock it is given", async () => {
    let nowMs = 0;
    const bucket = new LocalBucket({ ratePerSecond: 1, burst: 2 }, () => nowMs);
    expect((await bucket.admit()).admitted).toBe(true);
    expect((await bucket.admit()).admitted).toBe(true);
    expect(await bucket.admit()).toEqual({ admitted: false, retryAfterSeconds: 1 });
    nowMs = 1000;
    expect((await bucket.admit()).admitted).toBe(true);
  });
});

describe("plans and overrides", () => {
  it("are SPEC's plans", () => {
    expect(PLANS).toEqual({ idea: { ratePerSecond: 5, burst: 10 }, startup: { ratePerSecond: 10, burst: 20 }, growth: { ratePerSecond: 20, burst: 40 } });
  });

  it("an override wins over the plan, field by field", () => {
    expect(effectiveRateLimit("idea", {})).toEqual({ ratePerSecond: 5, burst: 10 });
    expect(effectiveRateLimit("idea", { ratePerSecond: 50 })).toEqual({ ratePerSecond: 50, burst: 10 });
    expect(effectiveRateLimit("growth", { burst: 3 })).toEqual({ ratePerSecond: 20, burst: 3 });
    expect(effectiveRateLimit("startup", { ratePerSecond: 0.5, burst: 1 })).toEqual({ ratePerSecond: 0.5, burst: 1 });
  });

  it("refuses a rate or burst that is not a positive number within its maximum", () => {
    expect(() => effectiveRateLimit("idea", { ratePerSecond: 0 })).toThrow(/the rate must be/);
    expect(() => effectiveRateLimit("idea", { ratePerSecond: Number.NaN })).toThrow(/the rate must be/);
    expect(() => effectiveRateLimit("idea", { burst: 1.5 })).toThrow(/the burst must be a whole number/);
    expect(() => effectiveRateLimit("idea", { burst: 0 })).toThrow(/the burst must be a whole number/);
    expect(() => effectiveRateLimit("idea", { burst: 2_000_000 })).toThrow(/at most|to 1000000/);
  });

  it("reads <data>/gateway/limits.json, and refuses a malformed one naming the file", () => {
    const data = temporaryDirectory();
    expect(readLimitsOverride(data)).toEqual({});
    mkdirSync(join(data, "gateway"));
    writeFileSync(limitsPath(data), JSON.stringify({ rate_per_second: 50, burst: 100 }));
    expect(readLimitsOverride(data)).toEqual({ ratePerSecond: 50, burst: 100 });
    writeFileSync(limitsPath(data), JSON.stringify({ burst: 7 }));
    expect(readLimitsOverride(data)).toEqual({ burst: 7 });
    for (const [text, message] of [
      ["{", /is not JSON/],
      ["[1]", /must hold an object/],
      [JSON.stringify({ rate: 5 }), /unknown field rate/],
      [JSON.stringify({ burst: "7" }), /burst must be a number/],
      [JSON.stringify({ rate_per_second: -1 }), /the rate must be/],
    ] as const) {
      writeFileSync(limitsPath(data), text);
      expect(() => readLimitsOverride(data)).toThrow(message);
      expect(() => readLimitsOverride(data)).toThrow(limitsPath(data));
    }
  });
});
