/**
 * `make soak`: a bounded mixed load on a real `silk serve` of the example project, with faults on purpose (not part
 * of `make test`; its figures go in the issue notes). For SOAK_SECONDS (default 600) it runs:
 *
 * - writers creating users (a unique handle each) and a Follows edge from each writer's previous user to its new one,
 *   remembering every write the server acknowledged;
 * - readers getting acknowledged users and their followers, and now and then a read of every user's followers (long
 *   work on the server's event loop);
 * - a health prober polling GET /health every HEALTH_INTERVAL_MS, from a worker thread of its own;
 * - a SIGKILL of the server every KILL_INTERVAL_S, then a restart on the same directory;
 * - a dead reader every DEAD_READER_INTERVAL_S: a process that opens the directory read-only, reads in a loop, and is
 *   SIGKILLed mid-read (its LMDB reader slot left behind).
 *
 * Then it checks, on the directory opened read-only: every acknowledged user is there exactly once, every
 * acknowledged edge exactly once; the directory's .mdb files stayed under SOAK_DATA_BYTES_MAX; /health's p99 while
 * the server was up stayed under HEALTH_P99_MS_MAX. It prints the figures and exits 1 when a check fails.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import { Database } from "../../runtime/embedded.js";

const REPO = resolve(import.meta.dirname, "../..");
const SILK = join(REPO, "dist", "bin", "silk.js");
const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const WRITERS = 4;
const READERS = 2;
const KILL_INTERVAL_S = Number(process.env.SOAK_KILL_INTERVAL_S ?? 60);
const DEAD_READER_INTERVAL_S = Number(process.env.SOAK_DEAD_READER_INTERVAL_S ?? 45);
const HEALTH_INTERVAL_MS = 50;
const HEALTH_P99_MS_MAX = 100;
const REQUEST_TIMEOUT_MS = 10_000;
const SOAK_DATA_BYTES_MAX = Number(process.env.SOAK_DATA_BYTES_MAX ?? 512 * 1024 * 1024);

const directory = mkdtempSync(join(tmpdir(), "silk-soak-"));
const deadline = Date.now() + SOAK_SECONDS * 1000;
const running = (): boolean => Date.now() < deadline;

interface Server {
  readonly child: ChildProcess;
  readonly url: string;
}

let server: Server | undefined;
const acknowledgedUsers = new Map<string, string>(); // handle -> id
const acknowledgedEdges: [string, string][] = [];
const healthMs: number[] = [];
const counters = { writes: 0, reads: 0, failedRequests: 0, kills: 0, deadReaders: 0, scans: 0 };
const dataBytes: number[] = [];

function startServer(): Promise<Server> {
  const child = spawn(process.execPath, [SILK, "serve", "--project", join(REPO, "examples"), "--port", "0", "--data", directory], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`silk serve did not start within 30 s:\n${stderr}`)), 30_000);
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      const match = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        done({ child, url: match[1] });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`silk serve exited with ${code} before listening:\n${stderr}`));
    });
  });
}

async function call(path: string, body: unknown): Promise<Record<string, unknown> | undefined> {
  const current = server;
  if (current === undefined) {
    await sleep(50); // the server is being restarted: wait (a loop of settled promises would starve the timers)
    return undefined;
  }
  try {
    const response = await fetch(`${current.url}/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const answer = (await response.json()) as Record<string, unknown>;
    if (response.status !== 200) {
      counters.failedRequests += 1;
      return undefined;
    }
    return answer;
  } catch {
    counters.failedRequests += 1; // the server was killed under the request: its outcome is unknown, never counted
    return undefined;
  }
}

async function writer(index: number): Promise<void> {
  let previous: string | undefined;
  for (let sequence = 0; running(); sequence += 1) {
    const handle = `w${index}-${sequence}`;
    const created = await call("CreateUser", { handle, name: `User ${handle}`, age: sequence % 100 });
    if (created === undefined) {
      await sleep(20);
      continue;
    }
    const id = (created.user as { id: string }).id;
    acknowledgedUsers.set(handle, id);
    counters.writes += 1;
    if (previous !== undefined && (await call("Follow", { follower: previous, followed: id, since: "2026-11-25" })) !== undefined) {
      acknowledgedEdges.push([previous, id]);
      counters.writes += 1;
    }
    previous = id;
  }
}

async function reader(): Promise<void> {
  for (let round = 0; running(); round += 1) {
    const ids = [...acknowledgedUsers.values()];
    if (ids.length === 0) {
      await sleep(50);
      continue;
    }
    const id = ids[Math.floor(Math.random() * ids.length)];
    if ((await call("GetUser", { id })) !== undefined) counters.reads += 1;
    if ((await call("FollowersOf", { id })) !== undefined) counters.reads += 1;
    if (round % 200 === 199) {
      const all = { request_type: "read", query: { read: { entries: [{ query: { name: "n", root: { count: { input: { in: { label: "Follows", input: { nodes: { reference: "all" } } } } } } } }], returns: ["n"] } } };
      if ((await call("v2/query", all)) !== undefined) counters.scans += 1;
    }
  }
}

/**
 * The health prober runs in a worker thread of its own: the load loops keep this thread's event loop busy, and a
 * probe timed here would count their delays as the server's. The worker probes whatever URL it was last told (none
 * while the server restarts) and posts each answered probe's milliseconds back.
 */
const PROBER_SOURCE = `
  const { parentPort } = require("node:worker_threads");
  let url;
  let stopped = false;
  parentPort.on("message", (message) => {
    if (message.stop) stopped = true;
    else url = message.url;
  });
  (async () => {
    while (!stopped) {
      const current = url;
      if (current !== undefined) {
        const started = performance.now();
        try {
          const response = await fetch(current + "/health", { signal: AbortSignal.timeout(${REQUEST_TIMEOUT_MS}) });
          await response.text();
          if (response.status === 200 && url === current) parentPort.postMessage(performance.now() - started);
        } catch {
          // the server is being killed or restarted: not a health answer of a running server
        }
      }
      await new Promise((done) => setTimeout(done, ${HEALTH_INTERVAL_MS}));
    }
    parentPort.close();
  })();`;

const prober = new Worker(PROBER_SOURCE, { eval: true });
prober.on("message", (milliseconds: number) => healthMs.push(milliseconds));

/** Tells the prober which server to probe (undefined: none, it is restarting). */
function probe(current: Server | undefined): void {
  prober.postMessage({ url: current?.url });
}

function mdbBytes(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) total += mdbBytes(full);
    else if (entry.name.endsWith(".mdb")) total += statSync(full).size;
  }
  return total;
}

/** A reader that dies with its read transaction open: a child reading the directory in a loop, SIGKILLed. */
async function deadReader(): Promise<void> {
  const script = `
    import { open } from ${JSON.stringify(join(REPO, "dist", "index.js"))};
    const db = await open({ storage: { disk: ${JSON.stringify(directory)} }, mode: "readonly" });
    const all = { request_type: "read", query: { read: { entries: [{ query: { name: "n", root: { count: { input: { nodes: { reference: "all" } } } } } }], returns: ["n"] } } };
    console.log("reading");
    for (;;) await db.run(all);`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((done) => child.stdout!.once("data", () => done()));
  await sleep(300);
  child.kill("SIGKILL");
  counters.deadReaders += 1;
}

async function faults(): Promise<void> {
  let nextKill = Date.now() + KILL_INTERVAL_S * 1000;
  let nextDeadReader = Date.now() + DEAD_READER_INTERVAL_S * 1000;
  while (running()) {
    await sleep(1000);
    dataBytes.push(mdbBytes(directory));
    if (Date.now() >= nextDeadReader) {
      nextDeadReader += DEAD_READER_INTERVAL_S * 1000;
      await deadReader();
    }
    if (Date.now() >= nextKill && running()) {
      nextKill += KILL_INTERVAL_S * 1000;
      const victim = server!;
      server = undefined;
      probe(undefined);
      victim.child.kill("SIGKILL");
      await new Promise((done) => victim.child.once("exit", done));
      counters.kills += 1;
      server = await startServer();
      probe(server);
    }
  }
}

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? NaN;
}

async function verify(): Promise<string[]> {
  const failures: string[] = [];
  const database = await Database.open({ storage: { disk: directory }, mode: "readonly" });
  try {
    const result = await database.run({
      request_type: "read",
      query: { read: { entries: [
        { query: { name: "users", root: { has_label: { label: "User", input: { nodes: { reference: "all" } } } } } },
        { query: { name: "edges", root: { edges: { reference: "all" } } } },
      ], returns: ["users", "edges"] } },
    });
    const users = result.users as { $id: string; handle: string }[];
    const edges = result.edges as { $from: string; $to: string }[];
    const byHandle = new Map<string, number>();
    const byId = new Map(users.map((user) => [user.$id, user.handle]));
    for (const user of users) byHandle.set(user.handle, (byHandle.get(user.handle) ?? 0) + 1);
    for (const [handle, id] of acknowledgedUsers) {
      const count = byHandle.get(handle) ?? 0;
      if (count !== 1) failures.push(`acknowledged user ${handle} (id ${id}) is there ${count} times; id ${id} holds ${byId.get(id) ?? "nothing"}`);
    }
    const byPair = new Map<string, number>();
    for (const edge of edges) byPair.set(`${edge.$from}>${edge.$to}`, (byPair.get(`${edge.$from}>${edge.$to}`) ?? 0) + 1);
    for (const [from, to] of acknowledgedEdges) {
      const count = byPair.get(`${from}>${to}`) ?? 0;
      if (count !== 1) failures.push(`acknowledged edge ${from}->${to} is there ${count} times`);
    }
    console.log(`stored: ${users.length} users, ${edges.length} edges (acknowledged ${acknowledgedUsers.size} and ${acknowledgedEdges.length})`);
  } finally {
    await database.close();
  }
  return failures;
}

async function main(): Promise<void> {
  console.log(`soak: ${SOAK_SECONDS} s on ${directory}, a SIGKILL every ${KILL_INTERVAL_S} s, a dead reader every ${DEAD_READER_INTERVAL_S} s`);
  server = await startServer();
  probe(server);
  const progress = setInterval(() => console.log(`  ${Math.round((deadline - Date.now()) / 1000)} s left: ${JSON.stringify(counters)}, .mdb ${(dataBytes.at(-1) ?? 0) >> 20} MiB`), 30_000);
  await Promise.all([...Array.from({ length: WRITERS }, (_, index) => writer(index)), ...Array.from({ length: READERS }, () => reader()), faults()]);
  clearInterval(progress);
  prober.postMessage({ stop: true });
  await new Promise((done) => prober.once("exit", done));
  const last = server as Server | undefined;
  if (last !== undefined) {
    last.child.kill("SIGTERM");
    await new Promise((done) => last.child.once("exit", done));
  }
  const failures = await verify();
  const dataBytesMax = Math.max(0, ...dataBytes);
  const healthP99Ms = percentile(healthMs, 0.99);
  if (dataBytesMax > SOAK_DATA_BYTES_MAX) failures.push(`.mdb files reached ${dataBytesMax} bytes, over ${SOAK_DATA_BYTES_MAX}`);
  if (!(healthP99Ms < HEALTH_P99_MS_MAX)) failures.push(`/health p99 ${healthP99Ms.toFixed(1)} ms, not under ${HEALTH_P99_MS_MAX} ms`);
  console.log(JSON.stringify({
    seconds: SOAK_SECONDS,
    ...counters,
    acknowledgedUsers: acknowledgedUsers.size,
    acknowledgedEdges: acknowledgedEdges.length,
    healthProbes: healthMs.length,
    healthP50Ms: Number(percentile(healthMs, 0.5).toFixed(2)),
    healthP99Ms: Number(healthP99Ms.toFixed(2)),
    healthMaxMs: Number(Math.max(...healthMs).toFixed(2)),
    mdbBytesMax: dataBytesMax,
    mdbBytesEnd: mdbBytes(directory),
  }));
  if (failures.length > 0) {
    console.log(`the database is kept for a look: ${directory}`);
    console.log(`soak FAILED:\n${failures.slice(0, 20).join("\n")}${failures.length > 20 ? `\n... and ${failures.length - 20} more` : ""}`);
    process.exit(1);
  }
  rmSync(directory, { recursive: true, force: true });
  console.log("soak passed");
}

await main();
