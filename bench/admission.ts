/**
 * The admission benchmark (`make bench-admission`): what the hosted gateway's rate limit costs per request, in one
 * run, next to what it is a part of.
 *
 * 1. Decisions alone, in this process: the in-process bucket, and the Redis bucket (a redis-server of its own on a
 *    free loopback port) one decision at a time (latency) and with many in flight (throughput).
 * 2. Requests under autocannon load against real processes, each endpoint in turn, with limits too high to refuse
 *    anything (so every request is admitted and what is measured is the cost of deciding): `silk serve` (no key,
 *    no admission), `silk gateway` with the bucket in process, and with the bucket in Redis; each answering a
 *    point get by `POST /v2/query` (the query's operation tree with its parameter) and by `POST /GetUser`, the
 *    per-query route, which does the same work.
 *
 * Options: `--duration <s>` per HTTP run (default 5), `--connections <n>` (default 32), `--rounds <n>` alternating
 * rounds per server, the best reported (default 2). The servers run from the
 * TypeScript sources through tsx's loader, as the test suites do.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { Database } from "../runtime/embedded.js";
import { freePort } from "../cluster/nats/servers.js";
import { presentedKey } from "../gateway/hosted/access.js";
import { createKey, KeyStore } from "../gateway/hosted/key-store.js";
import { GATEWAY_REDIS_TIMEOUT_MS_DEFAULT } from "../bin/defaults.js";
import { RedisBucket } from "../gateway/hosted/redis-bucket.js";
import { databaseId, isDisabled } from "../gateway/hosted/tenant-files.js";
import { LocalBucket, type Admitter } from "../gateway/hosted/token-bucket.js";
import { startChild, stopChild } from "./processes.js";
import { formatMachine, machineInfo } from "./report.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const REDIS_SERVER = "/usr/bin/redis-server";
/** Limits no benchmark load reaches: every request is admitted, so refusals do not flatter the figures. */
const UNREFUSED = { ratePerSecond: 1_000_000, burst: 1_000_000 };
const USERS = 1000;
const LOCAL_DECISIONS = 1_000_000;
const REDIS_SEQUENTIAL_DECISIONS = 20_000;
const REDIS_CONCURRENT_DECISIONS = 200_000;
const REDIS_IN_FLIGHT = 64;
const KEY_CHECKS = 200_000;
const WARMUP_SECONDS = 1;
/** Each server is measured in this many rounds, alternating; the best is reported (other load only slows a run). */
const ROUNDS_DEFAULT = 2;

const PROJECT = `N::User { name: String, age: U8 }

QUERY GetUser(id: ID) =>
    user <- N<User>(id)
    RETURN user
`;

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}


function startSilk(args: readonly string[]): Promise<{ child: ChildProcessWithoutNullStreams; match: RegExpExecArray }> {
  const loader = pathToFileURL(join(REPO_ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
  return startChild(process.execPath, ["--import", loader, join(REPO_ROOT, "bin", "silk.ts"), ...args], /on (http:\/\/127\.0\.0\.1:\d+)/);
}

/** Microseconds per decision, one at a time. */
async function sequentialMicros(bucket: Admitter, decisions: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < decisions; i += 1) {
    if (!(await bucket.admit()).admitted) throw new Error("a decision refused under a limit meant never to refuse");
  }
  return ((performance.now() - started) * 1000) / decisions;
}

/** Microseconds per request of what the hosted gateway checks before admission: the key's header, the key, the switch. */
function keyCheckMicros(data: string, key: string): number {
  const store = new KeyStore(data);
  const rawHeaders = ["host", "127.0.0.1", "content-type", "application/json", "authorization", `Bearer ${key}`];
  const started = performance.now();
  for (let i = 0; i < KEY_CHECKS; i += 1) {
    if (store.verify(presentedKey(rawHeaders)) === undefined || isDisabled(data)) throw new Error("the bench key was refused");
  }
  return ((performance.now() - started) * 1000) / KEY_CHECKS;
}

/** Decisions per second with `inFlight` outstanding at any time. */
async function concurrentRate(bucket: Admitter, decisions: number, inFlight: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < decisions) {
        next += 1;
        if (!(await bucket.admit()).admitted) throw new Error("a decision refused under a limit meant never to refuse");
      }
    }),
  );
  return decisions / ((performance.now() - started) / 1000);
}

async function drive(url: string, body: string, headers: Record<string, string>, seconds: number, connections: number): Promise<{ rate: number; p50: number; p99: number }> {
  const run = (duration: number): Promise<autocannon.Result> =>
    autocannon({ url, method: "POST", headers: { "content-type": "application/json", ...headers }, body, connections, duration });
  await run(WARMUP_SECONDS);
  const result = await run(seconds);
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0) {
    throw new Error(`${url}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx replies`);
  }
  return { rate: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row: readonly string[]): string => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join("  ");
  return [line(rows[0]), widths.map((width) => "-".repeat(width)).join("  "), ...rows.slice(1).map(line)].join("\n");
}

/** A database of USERS users with the project beside it; answers the tree and parameters of a point get. */
async function prepare(root: string): Promise<{ project: string; data: string; pointBody: string; routeBody: string }> {
  const project = join(root, "project");
  const data = join(root, "data");
  mkdirSync(project);
  writeFileSync(join(project, "bench.hx"), PROJECT);
  const database = await Database.open({ storage: { disk: data }, schema: { file: "bench.hx", text: PROJECT } });
  try {
    const ids: string[] = [];
    for (let i = 0; i < USERS; i += 1) {
      const result = (await database.run({
        request_type: "write",
        query: { write: { entries: [{ query: { name: "u", root: { add_n: { label: "User", properties: [["name", { value: { string: `u${i}` } }], ["age", { value: { i64: i % 100 } }]] } } } }], returns: ["u"] } },
      })) as { u: { $id: string }[] | { $id: string } };
      ids.push(Array.isArray(result.u) ? result.u[0].$id : result.u.$id);
    }
    const id = ids[USERS >> 1];
    const tree = database.queries.find((query) => query.name === "GetUser")?.tree;
    if (tree === undefined) throw new Error("GetUser did not compile to a tree");
    return { project, data, pointBody: JSON.stringify({ ...tree, parameters: { id } }), routeBody: JSON.stringify({ id }) };
  } finally {
    await database.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { duration: { type: "string", default: "5" }, connections: { type: "string", default: "32" }, rounds: { type: "string", default: String(ROUNDS_DEFAULT) } },
  });
  const seconds = Number(values.duration);
  const connections = Number(values.connections);
  const rounds = Number(values.rounds);
  if (!existsSync(REDIS_SERVER)) throw new Error(`${REDIS_SERVER} is missing: install the redis-server package (apt-get install redis-server)`);
  const root = mkdtempSync(join(tmpdir(), "silk-bench-admission-"));
  const redisPort = await freePort();
  const redis = await startChild(REDIS_SERVER, ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], /Ready to accept connections/);
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  try {
    progress("loading users");
    const { project, data, pointBody, routeBody } = await prepare(root);
    const key = createKey(data, "bench", Date.now()).key;

    progress("deciding in process and in Redis");
    const local = new LocalBucket(UNREFUSED, () => performance.now());
    const localMicros = await sequentialMicros(local, LOCAL_DECISIONS);
    const checkMicros = keyCheckMicros(data, key);
    const shared = await RedisBucket.open({ url: redisUrl, databaseId: databaseId(data), limit: UNREFUSED, decisionTimeoutMs: GATEWAY_REDIS_TIMEOUT_MS_DEFAULT, onStateChange: () => undefined });
    const redisMicros = await sequentialMicros(shared, REDIS_SEQUENTIAL_DECISIONS);
    const redisRate = await concurrentRate(shared, REDIS_CONCURRENT_DECISIONS, REDIS_IN_FLIGHT);
    await shared.close();

    const limits = ["--rate", String(UNREFUSED.ratePerSecond), "--burst", String(UNREFUSED.burst)];
    const servers: { title: string; args: string[]; headers: Record<string, string> }[] = [
      { title: "silk serve (no key, no admission)", args: ["serve"], headers: {} },
      { title: "silk gateway, bucket in process", args: ["gateway", ...limits], headers: { authorization: `Bearer ${key}` } },
      { title: "silk gateway, bucket in Redis", args: ["gateway", ...limits, "--redis", redisUrl], headers: { authorization: `Bearer ${key}` } },
    ];
    const endpoints = [["POST /v2/query", "/v2/query", pointBody], ["POST /GetUser", "/GetUser", routeBody]] as const;
    const best = new Map<string, { rate: number; p50: number; p99: number }>();
    for (let round = 1; round <= rounds; round += 1) {
      for (const server of servers) {
        progress(`round ${round}: driving ${server.title}`);
        const started = await startSilk([...server.args, "--project", project, "--data", data, "--port", "0"]);
        try {
          for (const [endpoint, path, body] of endpoints) {
            const measured = await drive(`${started.match[1]}${path}`, body, server.headers, seconds, connections);
            const name = `${server.title}\t${endpoint}`;
            if ((best.get(name)?.rate ?? 0) < measured.rate) best.set(name, measured);
          }
        } finally {
          await stopChild(started.child);
        }
      }
    }
    const rows: string[][] = [["server", "endpoint", "req/s", "p50 ms", "p99 ms"]];
    for (const [name, measured] of best) rows.push([...name.split("\t"), measured.rate.toFixed(0), measured.p50.toFixed(2), measured.p99.toFixed(2)]);

    process.stdout.write(`${formatMachine(machineInfo("sources (tsx)"))}\n\n`);
    process.stdout.write("Admission decisions (this process)\n");
    process.stdout.write(
      `${table([
        ["check", "us per request", "per second"],
        ["key header + key + switch (before admission)", checkMicros.toFixed(2), (1e6 / checkMicros).toFixed(0)],
        ["in process", localMicros.toFixed(3), (1e6 / localMicros).toFixed(0)],
        ["Redis, one at a time", redisMicros.toFixed(1), (1e6 / redisMicros).toFixed(0)],
        [`Redis, ${REDIS_IN_FLIGHT} in flight`, (1e6 / redisRate).toFixed(1), redisRate.toFixed(0)],
      ])}\n\n`,
    );
    process.stdout.write(`Point get of one of ${USERS} users over HTTP, ${connections} connections, ${seconds} s each, best of ${rounds} rounds (every request admitted)\n`);
    process.stdout.write(`${table(rows)}\n`);
  } finally {
    await stopChild(redis.child);
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
