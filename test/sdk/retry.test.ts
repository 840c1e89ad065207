/**
 * withRetry against a stub HTTP server that answers from a script: 429 with Retry-After then 200, 503 twice then
 * 200, 400 (never retried), 503 forever (bounded attempts), a Retry-After too long to wait. A fake sleep records the
 * waits and a seeded random makes the jitter reproducible, so the exact waits are asserted.
 */
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SilkClient, SilkClientError } from "../../sdk/client.js";
import {
  RETRY_AFTER_JITTER_MS_MAX, RETRY_ATTEMPTS_MAX, RETRY_BACKOFF_BASE_MS, RETRY_BACKOFF_CAP_MS, retryWaitMs, withRetry,
} from "../../sdk/retry.js";
import { seededRandom } from "../../protocol/random.js";

interface Scripted {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Record<string, string>;
}

const OK: Scripted = { status: 200, body: { n: 1 } };
const RATE_LIMITED = (seconds: string): Scripted => ({ status: 429, body: { error: "rate_limited", msg: "rate limit exceeded" }, headers: { "retry-after": seconds } });
const UNAVAILABLE: Scripted = { status: 503, body: { error: "rate_limit_unavailable", msg: "tenant rate limit is unavailable" } };
const BAD: Scripted = { status: 400, body: { error: "malformed_tree", msg: "$.query: expected an object" } };

let server: FastifyInstance;
let client: SilkClient;
let script: Scripted[] = [];
let requests = 0;

beforeAll(async () => {
  server = Fastify();
  server.post("/v2/query", async (_request, reply) => {
    requests += 1;
    // The last scripted answer repeats once the script runs out.
    const next = script.length > 1 ? script.shift()! : script[0];
    return reply.code(next.status).headers(next.headers ?? {}).send(next.body);
  });
  await server.listen({ port: 0, host: "127.0.0.1" });
  const address = server.server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  client = new SilkClient({ url: `http://127.0.0.1:${address.port}` });
});

afterAll(async () => {
  await server?.close();
});

beforeEach(() => {
  requests = 0;
});

/** A fake clock: sleeping records the wait and returns at once. */
function fakeSleep(): { waits: number[]; sleep: (ms: number) => Promise<void> } {
  const waits: number[] = [];
  return { waits, sleep: async (ms) => void waits.push(ms) };
}

const call = (): Promise<unknown> => client.v2({ request_type: "read", query: { read: { entries: [], returns: [] } } });

describe("withRetry", () => {
  it("waits Retry-After seconds plus jitter after a 429, then succeeds", async () => {
    script = [RATE_LIMITED("2"), OK];
    const { waits, sleep } = fakeSleep();
    const expectedJitter = Math.floor(seededRandom(7)() * RETRY_AFTER_JITTER_MS_MAX);
    expect(await withRetry(call, { sleep, random: seededRandom(7) })).toEqual({ n: 1 });
    expect(waits).toEqual([2000 + expectedJitter]);
    expect(waits[0]).toBeGreaterThanOrEqual(2000);
    expect(waits[0]).toBeLessThan(2000 + RETRY_AFTER_JITTER_MS_MAX);
    expect(requests).toBe(2);
  });

  it("backs off exponentially with full jitter after 503s, then succeeds", async () => {
    script = [UNAVAILABLE, UNAVAILABLE, OK];
    const { waits, sleep } = fakeSleep();
    const draws = seededRandom(11);
    const expected = [0, 1].map((retry) => Math.floor(draws() * RETRY_BACKOFF_BASE_MS * 2 ** retry));
    const retried: string[] = [];
    const result = await withRetry(call, { sleep, random: seededRandom(11), onRetry: ({ attempt, error }) => retried.push(`${attempt}:${error.code}`) });
    expect(result).toEqual({ n: 1 });
    expect(waits).toEqual(expected);
    expect(waits[0]).toBeLessThan(RETRY_BACKOFF_BASE_MS);
    expect(waits[1]).toBeLessThan(RETRY_BACKOFF_BASE_MS * 2);
    expect(retried).toEqual(["1:rate_limit_unavailable", "2:rate_limit_unavailable"]);
    expect(requests).toBe(3);
  });

  it("never retries other errors", async () => {
    script = [BAD, OK];
    const { waits, sleep } = fakeSleep();
    const error = await withRetry(call, { sleep, random: seededRandom(1) }).catch((cause: unknown) => cause);
    expect(error).toBeInstanceOf(SilkClientError);
    expect([(error as SilkClientError).status, (error as SilkClientError).code]).toEqual([400, "malformed_tree"]);
    expect(waits).toEqual([]);
    expect(requests).toBe(1);
  });

  it("gives up after the attempt limit with the last error", async () => {
    script = [UNAVAILABLE];
    const { waits, sleep } = fakeSleep();
    const error = await withRetry(call, { sleep, random: () => 0.999999 }).catch((cause: unknown) => cause);
    expect((error as SilkClientError).code).toBe("rate_limit_unavailable");
    expect(requests).toBe(RETRY_ATTEMPTS_MAX);
    // With a random just below 1 each wait is just below its ceiling: base, 2 base, 4 base... capped.
    expect(waits).toEqual([1, 2, 4, 8].slice(0, RETRY_ATTEMPTS_MAX - 1).map((factor) => Math.min(RETRY_BACKOFF_CAP_MS, RETRY_BACKOFF_BASE_MS * factor) - 1));
  });

  it("does not wait out a Retry-After beyond its maximum", async () => {
    script = [RATE_LIMITED("3600"), OK];
    const { waits, sleep } = fakeSleep();
    const error = await withRetry(call, { sleep }).catch((cause: unknown) => cause);
    expect([(error as SilkClientError).code, (error as SilkClientError).retryAfterSeconds]).toEqual(["rate_limited", 3600]);
    expect(waits).toEqual([]);
    expect(requests).toBe(1);
  });

  it("backs off like a 503 after a 429 without a usable Retry-After", async () => {
    script = [RATE_LIMITED("soon"), OK];
    const { waits, sleep } = fakeSleep();
    expect(await withRetry(call, { sleep, random: () => 0.5 })).toEqual({ n: 1 });
    expect(waits).toEqual([RETRY_BACKOFF_BASE_MS / 2]);
  });

  it("caps the backoff ceiling and never retries what is not a SilkClientError", () => {
    const unavailable = new SilkClientError(503, "rate_limit_unavailable", "tenant rate limit is unavailable");
    expect(retryWaitMs(unavailable, 30, { random: () => 0.999999 })).toBe(RETRY_BACKOFF_CAP_MS - 1);
    expect(retryWaitMs(new Error("boom"), 1)).toBeUndefined();
    expect(retryWaitMs(new SilkClientError(408, "query_timeout", "late"), 1)).toBeUndefined();
  });
});
