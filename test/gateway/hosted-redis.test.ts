/**
 * The shared bucket in Redis, with real processes: a redis-server of the suite's own on a free loopback port (the
 * machine's shared one on 6379 is never touched), two `silk gateway` processes over one database — the writer
 * and a read-only one beside it, sharing its keys and its bucket — hammered concurrently for a few seconds. The
 * two together admit no more than burst + rate × t. Then Redis is stopped (503, nothing ran, and quickly: the
 * gateway does not wait on a stuck Redis), paused while decisions wait in its input buffer (they spend nothing when
 * it resumes, and the stall is logged once), killed (503 at once), and started again (admission resumes; the new
 * server has no cached script, so this also runs the EVAL fallback).
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GATEWAY_REDIS_TIMEOUT_MS_DEFAULT } from "../../bin/defaults.js";
import { redisDecisionTimeoutMs, type GatewayCommandOptions } from "../../bin/gateway.js";
import { freePort } from "../../cluster/nats/servers.js";
import { removeTemporaryDirectories, runSilk } from "../cli/helpers.js";
import {
  addUserTree,
  COUNT_USERS_TREE,
  expectErrorBody,
  hostedDatabase,
  postJson,
  startGateway,
  startRedis,
  stopRedis,
  userCount,
  type HostedDatabase,
} from "./hosted-process.js";
import type { StartedServer } from "./serve-process.js";

const RATE_PER_SECOND = 20;
const BURST = 10;
const HAMMER_MS = 3000;
const HAMMER_CLIENTS = 16;
/**
 * Tokens the bound may be exceeded by. Every admission is decided inside the window the client measures (after
 * its first request left, before its last answer arrived), so the bound holds exactly on one clock; the decisions
 * use the Redis server's clock and the window the test's monotonic clock. They can differ by an NTP slew (at most
 * 500 ppm: 0.03 tokens over 3 s at 20/s) and by Redis's microsecond TIME against the test's sub-microsecond one;
 * one token covers both with room to spare, and a real double admission would exceed it many times over.
 */
const CLOCK_TOLERANCE_TOKENS = 1;

/**
 * The decision timeout of the two hammered gateways (`--redis-timeout-ms`): on a loaded machine a gateway can read
 * Redis's answer later than the default 100 ms and refuse 503, which is right for it but not what this counts.
 */
const SHARED_TIMEOUT_MS = 1_000;

const PAUSED_BURST = 5;
/** More than the burst, so that running them all late would empty the bucket. */
const PAUSED_REQUESTS = PAUSED_BURST + 1;
const LOG_WAIT_MS = 5_000;

/** Polls `condition` every 20 ms; fails after LOG_WAIT_MS. */
async function waitFor(condition: () => boolean): Promise<void> {
  const deadline = performance.now() + LOG_WAIT_MS;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`not seen within ${LOG_WAIT_MS} ms`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

let redisPort: number;
let redis: ChildProcessWithoutNullStreams;
let database: HostedDatabase;
let writer: StartedServer;
let reader: StartedServer;

beforeAll(async () => {
  redisPort = await freePort();
  redis = await startRedis(redisPort);
  database = hostedDatabase();
  const options = ["--redis", `redis://127.0.0.1:${redisPort}`, "--redis-timeout-ms", String(SHARED_TIMEOUT_MS), "--rate", String(RATE_PER_SECOND), "--burst", String(BURST)];
  writer = await startGateway(database, options);
  reader = await startGateway(database, [...options, "--read-only"]);
});

afterAll(async () => {
  for (const gateway of [writer, reader]) gateway?.child.kill("SIGTERM");
  const codes = await Promise.all([writer?.exited, reader?.exited]);
  if (redis !== undefined) await stopRedis(redis);
  removeTemporaryDirectories();
  expect(codes).toEqual([0, 0]);
});

const headers = (): Record<string, string> => ({ authorization: `Bearer ${database.key}` });

describe("the shared bucket in Redis", () => {
  it("two gateways of one database admit no more than burst + rate × t together", async () => {
    expect(writer.stdout()).toMatch(/20 requests\/s, burst 10, bucket in Redis redis:\/\/127\.0\.0\.1:\d+\)/);
    const gateways = [writer.url, reader.url];
    const admittedBy = [0, 0];
    let refused = 0;
    const started = performance.now();
    const clients = Array.from({ length: HAMMER_CLIENTS }, async (_, client) => {
      for (let i = 0; performance.now() - started < HAMMER_MS; i += 1) {
        const gateway = (client + i) % 2;
        const response = await postJson(`${gateways[gateway]}/v2/query`, COUNT_USERS_TREE, headers());
        if (response.status === 200) admittedBy[gateway] += 1;
        else if (response.status === 429) refused += 1;
        else throw new Error(`unexpected ${response.status}: ${await response.text()}`);
        await response.arrayBuffer().catch(() => undefined);
      }
    });
    await Promise.all(clients);
    const seconds = (performance.now() - started) / 1000;
    const admitted = admittedBy[0] + admittedBy[1];
    const bound = BURST + RATE_PER_SECOND * seconds;
    expect(admitted).toBeLessThanOrEqual(bound + CLOCK_TOLERANCE_TOKENS);
    // The clients kept the bucket drained, so nearly every token was used: the limit is not refusing too much.
    expect(admitted).toBeGreaterThanOrEqual(bound * 0.8);
    expect(admittedBy.every((count) => count > 0)).toBe(true);
    expect(refused).toBeGreaterThan(admitted);
  });

  it("fails closed with 503 when Redis is stuck, within its decision timeout; nothing runs", async () => {
    redis.kill("SIGSTOP");
    try {
      const sent = performance.now();
      const response = await postJson(`${writer.url}/v2/query`, addUserTree("while stuck"), headers());
      const waitedMs = performance.now() - sent;
      expect(await expectErrorBody(response, 503, "rate_limit_unavailable")).toBe("tenant rate limit is unavailable");
      expect(waitedMs).toBeGreaterThanOrEqual(SHARED_TIMEOUT_MS - 50);
      expect(waitedMs).toBeLessThan(SHARED_TIMEOUT_MS + 900);
      await waitFor(() => writer.stderr().includes(`Redis unavailable (no answer within ${SHARED_TIMEOUT_MS} ms: Redis is stuck or overloaded)`));
    } finally {
      redis.kill("SIGCONT");
    }
    expect(await userCount(database.data)).toBe(0);
  });

  it("spends no token on a decision it gave up on while Redis was paused, and logs the stall once", async () => {
    const paused = hostedDatabase();
    // Its own database (so its own bucket) that refills one token per 1000 s: the counts below are exact.
    const gateway = await startGateway(paused, ["--redis", `redis://127.0.0.1:${redisPort}`, "--rate", "0.001", "--burst", String(PAUSED_BURST)]);
    const send = async (): Promise<number> => {
      const response = await postJson(`${gateway.url}/v2/query`, COUNT_USERS_TREE, { authorization: `Bearer ${paused.key}` });
      if (response.status === 503) await expectErrorBody(response, 503, "rate_limit_unavailable");
      else await response.arrayBuffer();
      return response.status;
    };
    try {
      expect(await send()).toBe(200);
      redis.kill("SIGSTOP");
      try {
        // Each of these decisions reaches Redis's input buffer and waits there until it resumes.
        for (let i = 0; i < PAUSED_REQUESTS; i += 1) expect(await send()).toBe(503);
        await waitFor(() => gateway.stderr().includes(`Redis unavailable (no answer within ${GATEWAY_REDIS_TIMEOUT_MS_DEFAULT} ms: Redis is stuck or overloaded)`));
      } finally {
        redis.kill("SIGCONT");
      }
      // Redis ran the waiting scripts first, past their deadlines: the bucket still holds all but the first token.
      const statuses = [];
      for (let i = 0; i < PAUSED_BURST; i += 1) statuses.push(await send());
      expect(statuses).toEqual([...Array<number>(PAUSED_BURST - 1).fill(200), 429]);
      await waitFor(() => gateway.stderr().includes("rate limit: Redis answers again"));
      expect(gateway.stderr().match(/no answer within/g)).toHaveLength(1);
    } finally {
      gateway.child.kill("SIGTERM");
      await gateway.exited;
    }
  });

  it("fails closed with 503 when Redis is gone, in every gateway; nothing runs; admission resumes when it is back", async () => {
    await stopRedis(redis);
    for (const gateway of [writer, reader]) {
      const response = await postJson(`${gateway.url}/v2/query`, addUserTree("while down"), headers());
      expect(response.status).toBe(503);
      expect(response.headers.get("content-type")).toBe("application/json");
      expect(await response.json()).toEqual({ error: "rate_limit_unavailable", msg: "tenant rate limit is unavailable" });
      expect(response.headers.get("retry-after")).toBeNull();
    }
    expect(await userCount(database.data)).toBe(0);
    // Without a key it is still 401: authentication comes before the bucket is asked.
    await expectErrorBody(await postJson(`${writer.url}/v2/query`, addUserTree("anonymous"), {}), 401, "unauthorized");

    redis = await startRedis(redisPort);
    const deadline = performance.now() + 10_000;
    let status = 0;
    while (performance.now() < deadline) {
      const response = await postJson(`${writer.url}/v2/query`, addUserTree("after"), headers());
      status = response.status;
      await response.arrayBuffer();
      if (status === 200) break;
      expect(status).toBe(503);
      await new Promise((done) => setTimeout(done, 100));
    }
    expect(status).toBe(200);
    expect(await userCount(database.data)).toBe(1);
  });
});

describe("--redis-timeout-ms", () => {
  it("takes a whole number of milliseconds from 1 to 60,000, and only with --redis; anything else is invalid_option", () => {
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    const timeout = (flags: Partial<GatewayCommandOptions>): number => redisDecisionTimeoutMs({ data: "unused", ...flags });
    expect(timeout({ redis: redisUrl })).toBe(GATEWAY_REDIS_TIMEOUT_MS_DEFAULT);
    expect(timeout({ redis: redisUrl, redisTimeoutMs: "1" })).toBe(1);
    expect(timeout({ redis: redisUrl, redisTimeoutMs: "60000" })).toBe(60_000);
    for (const bad of ["0", "1.5", "60001", "-5", "", "ten"]) {
      expect(() => timeout({ redis: redisUrl, redisTimeoutMs: bad })).toThrow(
        expect.objectContaining({ code: "invalid_option", message: `--redis-timeout-ms must be a whole number of milliseconds from 1 to 60000, got ${JSON.stringify(bad)}` }),
      );
    }
    expect(() => timeout({ redisTimeoutMs: "500" })).toThrow(expect.objectContaining({ code: "invalid_option", message: expect.stringMatching(/--redis-timeout-ms needs --redis/) }));
  });

  it("is refused by silk gateway before anything starts", async () => {
    const result = await runSilk(["gateway", "--data", hostedDatabase().data, "--port", "0", "--redis", `redis://127.0.0.1:${redisPort}`, "--redis-timeout-ms", "0"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/silk gateway: invalid_option: --redis-timeout-ms must be a whole number of milliseconds from 1 to 60000, got "0"/);
  }, 60_000);
});
