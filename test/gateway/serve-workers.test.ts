/**
 * `silk serve --workers N` as real processes on real LMDB files, through a real HTTP client (node:http, whose
 * keep-processAlive agent holds one connection where a test needs one): reads served by two read workers answer what one
 * process answers; a read right after a write's answer sees it, on the same keep-processAlive connection and on a fresh
 * one; writes that fail answer as they do on one process; both workers take connections; /health and the aggregated
 * /metrics; a worker killed with SIGKILL is replaced; SIGTERM closes every worker and the writer; bad `--workers`
 * values, `--workers` with `--cluster` and a several-partition database are invalid_option; a worker that cannot
 * listen stops the server with exit code 1.
 */
import { existsSync, readdirSync, readlinkSync } from "node:fs";
import { Agent, request } from "node:http";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { serveWorkers, SERVE_WORKERS_MAX } from "../../bin/serve-workers.js";
import { Database } from "../../runtime/embedded.js";
import { countRequest, nodesLabeled, REPO, removeTemporaryDirectories, runSilk, temporaryDirectory } from "../cli/helpers.js";
import { startServer, type StartedServer } from "./serve-process.js";
import { processAlive } from "../../platform/processes.js";

afterAll(removeTemporaryDirectories);

const PROJECT = join(REPO, "examples");
/** Starting three processes under tsx on a loaded 2-core machine takes a while. */
const SERVER_TEST_TIMEOUT_MS = 240_000;

interface Answer {
  readonly status: number;
  readonly body: string;
  /** Whether the request went over a connection an earlier request of the same agent had opened. */
  readonly reusedSocket: boolean;
}

/** POSTs JSON (or GETs without a body) through `agent`, so that a keep-processAlive agent reuses its one connection. */
function send(agent: Agent, url: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const outgoing = request(`${url}${path}`, {
      agent,
      method: text === undefined ? "GET" : "POST",
      headers: text === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(text) },
    });
    outgoing.on("error", reject);
    outgoing.on("response", (response) => {
      let received = "";
      response.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: received, reusedSocket: outgoing.reusedSocket }));
    });
    outgoing.end(text);
  });
}

const addUser = (handle: string): unknown => ({
  request_type: "write",
  query: { write: { entries: [{ query: { name: "u", root: { add_n: { label: "User", properties: [["handle", { value: { string: handle } }], ["name", { value: { string: handle } }]] } } } }], returns: ["u"] } },
});
const countUsers = countRequest({ users: nodesLabeled("User") });

/** The PIDs of the read workers the primary logged as started, in order. */
function workerPids(server: StartedServer): number[] {
  return [...server.stderr().matchAll(/"workerPid":(\d+),"msg":"read worker \d+ started/g)].map((match) => Number(match[1]));
}

/** The TCP sockets a process holds (its accepted connections among them): Linux's /proc. */
function socketCount(pid: number): number {
  const folder = `/proc/${pid}/fd`;
  return readdirSync(folder).filter((fd) => {
    try {
      return readlinkSync(join(folder, fd)).startsWith("socket:");
    } catch {
      return false;
    }
  }).length;
}

/** The value of one series in Prometheus text, or undefined. */
function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split("\n").find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Reads whose answers must not depend on which process serves them. */
async function readAnswers(url: string, agent: Agent, bob: string): Promise<string[]> {
  const answers = await Promise.all([
    send(agent, url, "/GetUser", { id: bob }),
    send(agent, url, "/FollowersOf", { id: bob }),
    send(agent, url, "/v2/query", countUsers),
    send(agent, url, "/introspect"),
    send(agent, url, "/GetUser", { id: "999999" }),
    send(agent, url, "/NoSuchQuery", {}),
  ]);
  return answers.map((answer) => `${answer.status} ${answer.body}`);
}

describe("silk serve --workers", () => {
  it("reads --workers as 1 by default, auto as the cores, and refuses anything but a whole number from 1 to the maximum", () => {
    expect(serveWorkers(undefined)).toBe(1);
    expect(serveWorkers("3")).toBe(3);
    expect(serveWorkers("auto", () => 6)).toBe(6);
    expect(serveWorkers("auto", () => 1000)).toBe(SERVE_WORKERS_MAX);
    for (const bad of ["0", "-1", "1.5", "two", "", " 2", String(SERVE_WORKERS_MAX + 1), "1e1"]) {
      expect(() => serveWorkers(bad), bad).toThrow(expect.objectContaining({ code: "invalid_option" }));
    }
  });

  it("refuses a bad --workers, --workers with --cluster, and a several-partition database, with exit code 1", async () => {
    const bad = await runSilk(["serve", "--project", PROJECT, "--port", "0", "--data", join(temporaryDirectory(), "data"), "--workers", "0"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/silk serve: invalid_option: --workers must be a whole number from 1 to 256, or auto, got "0"/);
    const cluster = await runSilk(["serve", "--cluster", temporaryDirectory(), "--port", "0", "--workers", "2"]);
    expect(cluster.code).toBe(1);
    expect(cluster.stderr).toMatch(/silk serve: invalid_option: --workers serves a local database/);
    const data = join(temporaryDirectory(), "data");
    await (await Database.open({ storage: { disk: data }, partitions: 2 })).close();
    const partitioned = await runSilk(["serve", "--port", "0", "--data", data, "--workers", "2"]);
    expect(partitioned.code).toBe(1);
    expect(partitioned.stderr).toMatch(/silk serve: invalid_option: --workers 2 serves a one-partition database, and .* has 2 partitions/);
    expect(existsSync(join(data, "writer.lock"))).toBe(false);
  }, SERVER_TEST_TIMEOUT_MS);

  it("stops with exit code 1 when its workers cannot listen, and releases the writer lock", async () => {
    const blocker = createServer();
    await new Promise<void>((done) => blocker.listen(0, "127.0.0.1", done));
    const address = blocker.address();
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    try {
      const data = join(temporaryDirectory(), "data");
      const run = await runSilk(["serve", "--project", PROJECT, "--port", String(address.port), "--data", data, "--workers", "2"]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(new RegExp(`silk serve: invalid_option: cannot listen on 127\\.0\\.0\\.1:${address.port}: .*EADDRINUSE`));
      expect(existsSync(join(data, "writer.lock"))).toBe(false);
    } finally {
      blocker.close();
    }
  }, SERVER_TEST_TIMEOUT_MS);

  it("serves reads from two workers as one process does, with read-your-writes, aggregated metrics, restarts and a clean SIGTERM", async () => {
    const data = join(temporaryDirectory(), "data");
    const server = await startServer(["serve", "--project", PROJECT, "--port", "0", "--data", data, "--workers", "2"]);
    const { url } = server;
    expect(server.stdout()).toMatch(/silk: serving .*examples on http:\/\/127\.0\.0\.1:\d+ \(data in .*, 2 read workers\)/);
    const [first, second] = workerPids(server);
    expect([first, second].every(processAlive)).toBe(true);
    let writes = 0;

    // Read-your-writes over one keep-processAlive connection: every read right after a write's answer sees it.
    const kept = new Agent({ keepAlive: true, maxSockets: 1 });
    const created = await send(kept, url, "/CreateUser", { handle: "bob", name: "Bob", age: 40 });
    writes += 1;
    const bob = (JSON.parse(created.body) as { user: { id: string } }).user.id;
    for (let i = 0; i < 15; i += 1) {
      const write = await send(kept, url, "/v2/query", addUser(`kept${i}`));
      writes += 1;
      expect(write.status).toBe(200);
      const read = await send(kept, url, "/v2/query", countUsers);
      expect(JSON.parse(read.body)).toEqual({ users: i + 2 });
      expect(read.reusedSocket).toBe(true);
    }
    kept.destroy();

    // Across connections too: a read on a fresh connection (either worker) right after a write's answer sees it.
    for (let i = 0; i < 10; i += 1) {
      const writer = new Agent({ keepAlive: false });
      const reader = new Agent({ keepAlive: false });
      const user = JSON.parse((await send(writer, url, "/CreateUser", { handle: `fresh${i}`, name: "F", age: 20 })).body) as { user: { id: string } };
      writes += 1;
      const read = await send(reader, url, "/GetUser", { id: user.user.id });
      expect(JSON.parse(read.body)).toMatchObject({ user: { id: user.user.id, handle: `fresh${i}` } });
    }
    await send(new Agent(), url, "/Follow", { follower: bob, followed: bob, since: "2024-05-01" });
    writes += 1;

    // Both workers take connections: four keep-processAlive connections held open are spread over them.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = [first, second].map(socketCount);
    const spread = new Agent({ keepAlive: true, maxSockets: 4 });
    await Promise.all(Array.from({ length: 4 }, () => send(spread, url, "/health")));
    const after = [first, second].map(socketCount);
    expect(after[0]).toBeGreaterThan(before[0]);
    expect(after[1]).toBeGreaterThan(before[1]);

    // The same answers whichever worker serves: eight connections at once.
    const answers = await readAnswers(url, new Agent({ keepAlive: true, maxSockets: 8 }), bob);
    for (let round = 0; round < 3; round += 1) expect(await readAnswers(url, new Agent({ keepAlive: false }), bob)).toEqual(answers);
    // A write the writer refuses answers its error, the same as on one process (compared below).
    const refused = await send(spread, url, "/CreateUser", { handle: "bob", name: "Bob again", age: 41 });
    const badParameters = await send(spread, url, "/CreateUser", { handle: "carl" });
    expect(refused.status).toBe(409);
    spread.destroy();

    const health = await send(new Agent(), url, "/health");
    expect([health.status, health.body]).toEqual([200, '{"status":"ok"}']);
    const metrics = (await send(new Agent(), url, "/metrics")).body;
    expect(sample(metrics, "silk_workers")).toBe(2);
    expect(sample(metrics, "silk_worker_restarts_total")).toBe(0);
    expect(sample(metrics, 'silk_transactions_total{outcome="committed"}')).toBe(writes);
    expect(metrics.match(/^silk_lmdb_map_size_bytes\{partition="0"\} /gm)).toHaveLength(1);
    // The health checks above, summed over both workers: 1 + 4.
    expect(sample(metrics, 'silk_http_requests_total{method="GET",route="/health",query="",status="200"}')).toBe(5);

    // A worker killed is replaced, and the server goes on answering.
    process.kill(first, "SIGKILL");
    await waitFor(() => workerPids(server).length === 3 && /read worker \d+ \(pid \d+\) exited on SIGKILL; starting another/.test(server.stderr()));
    const replacement = workerPids(server)[2];
    // The replacement counts once it listens.
    let afterRestart = "";
    await waitFor(async () => {
      afterRestart = (await send(new Agent(), url, "/metrics")).body;
      return sample(afterRestart, "silk_workers") === 2;
    });
    expect(sample(afterRestart, "silk_worker_restarts_total")).toBe(1);
    expect(await readAnswers(url, new Agent({ keepAlive: false }), bob)).toEqual(answers);

    // SIGTERM closes every worker and the writer: exit code 0, no process left, the writer lock released.
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect([first, second, replacement].some(processAlive)).toBe(false);
    expect(existsSync(join(data, "writer.lock"))).toBe(false);
    const errors = server.stderr().split("\n").filter((line) => line.includes('"level":50'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/exited on SIGKILL; starting another/);

    // One process on the same data answers the same reads and refuses the same writes the same way.
    const single = await startServer(["serve", "--project", PROJECT, "--port", "0", "--data", data]);
    try {
      const agent = new Agent({ keepAlive: false });
      expect(await readAnswers(single.url, agent, bob)).toEqual(answers);
      const singleRefused = await send(agent, single.url, "/CreateUser", { handle: "bob", name: "Bob again", age: 41 });
      const singleBadParameters = await send(agent, single.url, "/CreateUser", { handle: "carl" });
      expect([refused.status, refused.body]).toEqual([singleRefused.status, singleRefused.body]);
      expect([badParameters.status, badParameters.body]).toEqual([singleBadParameters.status, singleBadParameters.body]);
    } finally {
      single.child.kill("SIGTERM");
      expect(await single.exited).toBe(0);
    }
  }, SERVER_TEST_TIMEOUT_MS);
});

/** Polls `condition` every 50 ms until it holds; fails after 60 s. */
async function waitFor(condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("the condition did not hold within 60 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
