/**
 * `GET /metrics` (gateway/metrics.ts, docs/SERVER.md#metrics) scraped over real HTTP after doing what each metric
 * counts: requests by route, query and status, their latency, requests in flight (and one whose client went away),
 * write transactions committed and aborted, the LMDB gauges (a reader slot held by another process included), the
 * process's default metrics, a registry per server, and on the hosted form the API key and the bucket's decisions;
 * then the same through real `silk serve`, `silk dev` and `silk gateway` processes. docs/SERVER.md's table of metrics
 * is held to what a server serves.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import { SilkError } from "../../protocol/errors.js";
import { Database } from "../../runtime/embedded.js";
import { buildGateway, type GatewayDatabase } from "../../gateway/server.js";
import { databaseId } from "../../gateway/hosted/tenant-files.js";
import type { Admission } from "../../gateway/hosted/token-bucket.js";
import { REPO, removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";
import { listeningGateway, type ListeningGateway } from "../helpers/gateway.js";
import { addUserTree, hostedDatabase, postJson, startGateway } from "./hosted-process.js";
import { startServer, type StartedServer } from "./serve-process.js";
import { SOCIAL_SOURCES } from "./social-project.js";

const HOLDER = join(REPO, "test", "embedded", "fixtures", "reader-holder.ts");

afterAll(removeTemporaryDirectories);

/** The value of one sample of Prometheus text: the metric `name` whose labels are exactly `labels`. */
function sample(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((label) => [label[1], label[2]]));
    if (JSON.stringify(Object.entries(found).sort()) === JSON.stringify(Object.entries(labels).sort())) return Number(match[3]);
  }
  return undefined;
}

async function scrape(base: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await fetch(`${base}/metrics`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return response.text();
}

const V2 = { method: "POST", route: "/v2/query", query: "" };

describe("GET /metrics on the local server", () => {
  let database: Database;
  let directory: string;
  let gateway: ListeningGateway;
  /** While set, `/v2/query` waits for it before running (a request held in flight). */
  let hold: Promise<void> | undefined;

  beforeAll(async () => {
    directory = join(temporaryDirectory(), "data");
    database = await Database.open({ storage: { disk: directory }, schema: SOCIAL_SOURCES });
    const held: GatewayDatabase = {
      get schema() {
        return database.schema;
      },
      get queries() {
        return database.queries;
      },
      queryJson: (name, parameters) => database.queryJson(name, parameters),
      indexStatuses: () => database.indexStatuses(),
      statistics: () => database.statistics(),
      runV2: async (tree) => {
        await hold;
        return database.runV2(tree);
      },
    };
    gateway = await listeningGateway(held);
  });

  afterAll(async () => {
    await gateway?.app.close();
    await database?.close();
  });

  it("counts requests by route, query and status, and times them", async () => {
    const { base } = gateway;
    for (let i = 0; i < 2; i += 1) expect((await postJson(`${base}/v2/query`, addUserTree(`v2-${i}`), {})).status).toBe(200);
    expect((await postJson(`${base}/v2/query`, "{", {})).status).toBe(400);
    expect((await postJson(`${base}/CreateUser`, { name: "Ann", age: 31 }, {})).status).toBe(200);
    expect((await postJson(`${base}/NoSuchQuery`, {}, {})).status).toBe(404);
    expect((await fetch(`${base}/no/such/route`)).status).toBe(404);
    const text = await scrape(base);
    expect(sample(text, "silk_http_requests_total", { ...V2, status: "200" })).toBe(2);
    expect(sample(text, "silk_http_requests_total", { ...V2, status: "400" })).toBe(1);
    expect(sample(text, "silk_http_requests_total", { method: "POST", route: "/:name", query: "CreateUser", status: "200" })).toBe(1);
    // An unknown query name adds no series of its own.
    expect(sample(text, "silk_http_requests_total", { method: "POST", route: "/:name", query: "", status: "404" })).toBe(1);
    expect(text).not.toContain("NoSuchQuery");
    expect(sample(text, "silk_http_requests_total", { method: "GET", route: "unmatched", query: "", status: "404" })).toBe(1);
    expect(sample(text, "silk_http_request_duration_seconds_count", V2)).toBe(3);
    expect(sample(text, "silk_http_request_duration_seconds_bucket", { ...V2, le: "+Inf" })).toBe(3);
    expect(sample(text, "silk_http_request_duration_seconds_sum", V2)).toBeGreaterThan(0);
    expect(sample(text, "silk_http_request_duration_seconds_count", { method: "POST", route: "/:name", query: "CreateUser" })).toBe(1);
  });

  it("counts write transactions committed and aborted, and not reads", async () => {
    const before = await scrape(gateway.base);
    const committed = sample(before, "silk_transactions_total", { outcome: "committed" }) ?? 0;
    const aborted = sample(before, "silk_transactions_total", { outcome: "aborted" }) ?? 0;
    expect((await postJson(`${gateway.base}/CreateUser`, { name: "Bo", age: 40 }, {})).status).toBe(200);
    expect((await postJson(`${gateway.base}/AllUsers`, {}, {})).status).toBe(200);
    // Follow between IDs that name nothing: the write is refused and rolled back.
    expect((await postJson(`${gateway.base}/Follow`, { a: "999999", b: "999998" }, {})).status).toBe(404);
    const after = await scrape(gateway.base);
    expect(sample(after, "silk_transactions_total", { outcome: "committed" })).toBe(committed + 1);
    expect(sample(after, "silk_transactions_total", { outcome: "aborted" })).toBe(aborted + 1);
    // A single server has no two-phase commit across processes: never a commit anomaly.
    expect(sample(after, "silk_commit_anomalies_total")).toBe(0);
  });

  it("shows requests in flight, and counts one whose client went away as aborted", async () => {
    let release!: () => void;
    hold = new Promise((done) => (release = done));
    const running = postJson(`${gateway.base}/v2/query`, addUserTree("held"), {});
    const abandoned = new Promise<void>((done) => {
      const outgoing = request(`${gateway.base}/v2/query`, { method: "POST", headers: { "content-type": "application/json" } });
      outgoing.on("error", () => done());
      outgoing.end(JSON.stringify(addUserTree("abandoned")));
      setTimeout(() => {
        outgoing.destroy();
        done();
      }, 200);
    });
    await abandoned;
    // The held request, the scrape itself, and the abandoned one until its socket's close is noticed.
    await expect.poll(async () => sample(await scrape(gateway.base), "silk_http_requests_in_flight")).toBe(2);
    release();
    hold = undefined;
    expect((await running).status).toBe(200);
    const text = await scrape(gateway.base);
    expect(sample(text, "silk_http_requests_in_flight")).toBe(1);
    expect(sample(text, "silk_http_requests_total", { ...V2, status: "aborted" })).toBe(1);
  });

  it("reports the LMDB map, the pages used and free, and the reader slots of every process", async () => {
    const before = await scrape(gateway.base);
    const partition = { partition: "0" };
    expect(sample(before, "silk_lmdb_map_size_bytes", partition)).toBeGreaterThan(0);
    const usedBefore = sample(before, "silk_lmdb_used_bytes", partition) ?? 0;
    expect(usedBefore).toBeGreaterThan(0);
    expect(sample(before, "silk_lmdb_free_pages", partition)).toBeGreaterThanOrEqual(0);
    const readersBefore = sample(before, "silk_lmdb_readers", partition) ?? -1;
    expect(readersBefore).toBeGreaterThanOrEqual(0);
    for (let i = 0; i < 20; i += 1) expect((await postJson(`${gateway.base}/CreateUser`, { name: "x".repeat(2_000), age: 1 }, {})).status).toBe(200);
    const holder = spawn(process.execPath, ["--import", "tsx", HOLDER, join(directory, "partitions", "p0")], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
    try {
      await new Promise<void>((done, fail) => {
        createInterface({ input: holder.stdout }).once("line", (line) => (line === "ready" ? done() : fail(new Error(line))));
        holder.once("exit", (code) => fail(new Error(`the reader exited early with code ${code}`)));
      });
      const after = await scrape(gateway.base);
      expect(sample(after, "silk_lmdb_used_bytes", partition)).toBeGreaterThan(usedBefore);
      expect(sample(after, "silk_lmdb_readers", partition)).toBe(readersBefore + 1);
    } finally {
      holder.kill("SIGKILL");
    }
  });

  it("has the process's default metrics: heap and event-loop delay", async () => {
    const text = await scrape(gateway.base);
    expect(sample(text, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    expect(sample(text, "nodejs_eventloop_lag_p99_seconds")).toBeGreaterThanOrEqual(0);
    expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
  });

  it("keeps a registry per server: a second server in this process counts only its own requests", async () => {
    const other = await listeningGateway(database);
    try {
      const text = await scrape(other.base);
      expect(sample(text, "silk_http_requests_total", { ...V2, status: "200" })).toBeUndefined();
      expect(sample(await scrape(gateway.base), "silk_http_requests_total", { ...V2, status: "200" })).toBeGreaterThan(0);
    } finally {
      await other.app.close();
    }
  });
});

describe("GET /metrics on the hosted gateway", () => {
  let database: Database;
  let app: FastifyInstance;
  let base: string;
  const admissions: (() => Promise<Admission>)[] = [];
  const KEY = { authorization: "Bearer secret-key" };

  beforeAll(async () => {
    database = await Database.open({ storage: "memory" });
    app = await buildGateway({
      database,
      hosted: {
        databaseId: "db-under-test",
        keys: { verify: (presented) => (presented === "secret-key" ? { id: "k1", name: "t", created: "2024-01-01T00:00:00.000Z", revoked: null, sha256: "" } : undefined) },
        isDisabled: () => false,
        bucket: { admit: () => (admissions.shift() ?? (async () => ({ admitted: true })))(), close: async () => undefined },
      },
    });
    await app.listen({ port: 0, host: "127.0.0.1" });
    const address = app.server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    base = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await app?.close();
    await database?.close();
  });

  it("needs an API key, like every route but /health", async () => {
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    expect((await fetch(`${base}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(403);
    const text = await scrape(base, KEY);
    // The refusals were counted under the route they asked for.
    expect(sample(text, "silk_http_requests_total", { method: "GET", route: "/metrics", query: "", status: "401" })).toBe(1);
    expect(sample(text, "silk_http_requests_total", { method: "GET", route: "/metrics", query: "", status: "403" })).toBe(1);
  });

  it("counts the bucket's decisions per database: admitted, rate_limited, unavailable", async () => {
    admissions.push(
      async () => ({ admitted: true }),
      async () => ({ admitted: false, retryAfterSeconds: 1 }),
      async () => ({ admitted: false, retryAfterSeconds: 1 }),
      async () => {
        throw new SilkError("rate_limit_unavailable", "tenant rate limit is unavailable");
      },
    );
    const statuses = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await postJson(`${base}/v2/query`, addUserTree(`h${i}`), KEY)).status);
    expect(statuses).toEqual([200, 429, 429, 503]);
    const text = await scrape(base, KEY);
    expect(sample(text, "silk_rate_limit_decisions_total", { database: "db-under-test", decision: "admitted" })).toBe(1);
    expect(sample(text, "silk_rate_limit_decisions_total", { database: "db-under-test", decision: "rate_limited" })).toBe(2);
    expect(sample(text, "silk_rate_limit_decisions_total", { database: "db-under-test", decision: "unavailable" })).toBe(1);
    expect(sample(text, "silk_http_requests_total", { ...V2, status: "429" })).toBe(2);
  });

  it("lists every one of Silk's metrics in docs/SERVER.md with its type, and no other", async () => {
    const text = await scrape(base, KEY);
    const served = [...text.matchAll(/^# TYPE (silk_\w+) (\w+)$/gm)].map((match) => `${match[1]} ${match[2]}`).sort();
    const section = readFileSync(join(REPO, "docs", "SERVER.md"), "utf8").split("\n## Metrics\n")[1].split("\n## ")[0];
    const documented = [...section.matchAll(/^\| `(silk_\w+)` \| (\w+) \|/gm)].map((match) => `${match[1]} ${match[2]}`).sort();
    expect(served.length).toBeGreaterThan(0);
    expect(documented).toEqual(served);
  });
});

describe("GET /metrics from the real processes", () => {
  const servers: StartedServer[] = [];

  afterAll(async () => {
    for (const server of servers) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("silk serve answers it on loopback without a key", async () => {
    const server = await startServer(["serve", "--data", join(temporaryDirectory(), "data"), "--port", "0"]);
    servers.push(server);
    expect((await postJson(`${server.url}/v2/query`, addUserTree("p"), {})).status).toBe(200);
    const text = await scrape(server.url);
    expect(sample(text, "silk_transactions_total", { outcome: "committed" })).toBe(1);
    expect(sample(text, "silk_lmdb_map_size_bytes", { partition: "0" })).toBeGreaterThan(0);
  });

  it("silk dev answers it too, reading the database of the version it serves", async () => {
    const { project, data } = hostedDatabase();
    const server = await startServer(["dev", project, "--data", data, "--port", "0"]);
    servers.push(server);
    expect((await postJson(`${server.url}/CreateUser`, { name: "Di", age: 20 }, {})).status).toBe(200);
    const text = await scrape(server.url);
    expect(sample(text, "silk_http_requests_total", { method: "POST", route: "/:name", query: "CreateUser", status: "200" })).toBe(1);
    expect(sample(text, "silk_transactions_total", { outcome: "committed" })).toBe(1);
  });

  it("silk gateway answers it with a key, its decisions labelled with the database's id", async () => {
    const hosted = hostedDatabase();
    const server = await startGateway(hosted, ["--rate", "0.001", "--burst", "1"]);
    servers.push(server);
    const key = { authorization: `Bearer ${hosted.key}` };
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    expect((await postJson(`${server.url}/v2/query`, addUserTree("a"), key)).status).toBe(200);
    expect((await postJson(`${server.url}/v2/query`, addUserTree("b"), key)).status).toBe(429);
    const text = await scrape(server.url, key);
    const id = databaseId(hosted.data);
    expect(sample(text, "silk_rate_limit_decisions_total", { database: id, decision: "admitted" })).toBe(1);
    expect(sample(text, "silk_rate_limit_decisions_total", { database: id, decision: "rate_limited" })).toBe(1);
  });
});
