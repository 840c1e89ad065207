/**
 * The gateway's bound on the Redis server's clock (gateway/hosted/redis-bucket.ts RedisClock), against a simple
 * model: a Redis clock that runs at an offset from the gateway's and drifts by up to NTP's 500 ppm, replies that
 * take any time to go and come back. Whatever happens, the Redis time the bound names for a local moment is never
 * later than the real one, so a decision's deadline is never later than the moment the gateway gives up.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RedisClock } from "../../gateway/hosted/redis-bucket.js";

const exchange = fc.record({
  pauseUs: fc.integer({ min: 0, max: 5_000_000 }),
  goUs: fc.integer({ min: 0, max: 200_000 }),
  backUs: fc.integer({ min: 0, max: 200_000 }),
});

describe("RedisClock", () => {
  it("knows nothing before a reply", () => {
    expect(new RedisClock().redisTimeAtMost(123)).toBeUndefined();
  });

  it("never names a Redis time later than the real one, whatever the delays and the drift", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1e12, max: 1e12 }),
        fc.double({ min: -0.0005, max: 0.0005, noNaN: true }),
        fc.array(exchange, { minLength: 1, maxLength: 30 }),
        (offsetUs, drift, exchanges) => {
          const redisAt = (localUs: number): number => localUs + offsetUs + localUs * drift;
          const clock = new RedisClock();
          let localUs = 1_000_000;
          for (const { pauseUs, goUs, backUs } of exchanges) {
            localUs += pauseUs;
            const sentUs = localUs;
            const redisUs = Math.floor(redisAt(sentUs + goUs));
            localUs = sentUs + goUs + backUs;
            clock.observe(redisUs, sentUs, localUs);
            for (const laterUs of [localUs, localUs + 100_000, localUs + 60_000_000]) {
              expect(clock.redisTimeAtMost(laterUs)).toBeLessThanOrEqual(redisAt(laterUs) + 1);
            }
          }
        },
      ),
    );
  });

  it("is as tight as the fastest reply allows", () => {
    const clock = new RedisClock();
    clock.observe(5_000_500, 1_000, 2_000);
    clock.observe(5_010_250, 10_000, 10_500);
    // The second reply came back in 500 µs: the bound is within that of the truth (offset 5,000,000 here).
    expect(clock.redisTimeAtMost(10_500)).toBe(5_010_250);
  });
});
