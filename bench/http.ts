/**
 * The HTTP benchmark (`make bench-http`): Silk's `POST /<QueryName>` routes under load, next to a bare fastify
 * route that answers the very same JSON bytes without touching a database — the ceiling of HTTP on this stack —
 * and a raw LMDB route: fastify with the same settings doing, per request, only the lmdb-js reads the query needs on
 * Silk's own database files (opened read-only beside the server, Silk's key layout and record encoding), rendering
 * the same JSON with JSON.stringify. The raw route is the ceiling of any engine on this stack and layout: what is
 * left between it and Silk is Silk's own work (parameters, plan, executor, rendering).
 *
 * In one run: the Facebook SNAP graph is loaded into a fresh database through `importBatch`, `silk serve` is
 * started on it as a child process with a project of two queries (a point get and a 1-hop traversal), and the
 * bare route runs as another child process (this file with `--bare-server`). autocannon, in this process, drives
 * each endpoint in turn with the same settings; the servers get a core of their own on a 2-core machine, which
 * they would not if the load generator shared their process. Silk's answers are checked before the clock starts,
 * the raw route's must be the same bytes, and any non-2xx reply or socket error during a run fails it.
 *
 * Reads on every core: one more `silk serve` per `--workers N` asked for (default 2; a list such as `2,4,8` starts
 * one server per count), each on a copy of the same database beside the one-process server, checked to answer the
 * same bytes and measured in the same alternating rounds, so the table shows read throughput with N read workers
 * against one process. On a 2-core machine the load generator (this process) shares the cores with the N workers:
 * the ratio is what this machine gives, not N workers' ceiling. On a machine with cores to spare,
 * `--client-workers <n>` runs autocannon in n threads of its own, so the client is not the ceiling.
 *
 * Options: `--duration <s>` per run (default 10), `--connections <n>` (default 32), `--rounds <n>` alternating
 * rounds per side, the best reported (default 2), `--workers <n>[,<n>...]` of the further Silk servers (default 2),
 * `--client-workers <n>` autocannon threads (default 0: autocannon in this process's own thread), `--source` to
 * serve the TypeScript sources through tsx instead of dist/. Exit status 1 on a wrong answer or a failed request, 2
 * when a ratio misses its target with `--strict`.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import Fastify, { LogController, type FastifyInstance } from "fastify";
import { open as openLmdb } from "lmdb";
import type { ImportEdge, ImportNode } from "../index.js";
import { DATASETS, readEdgeList, type EdgeList } from "./datasets.js";
import { startChild, stopChild } from "./processes.js";
import { formatMachine, machineInfo } from "./report.js";
import { loadSilkModules, staleBuildFile } from "./silk-modules.js";

/** Silk must reach this share of the bare route's throughput on every endpoint (the target). */
export const THROUGHPUT_RATIO_MIN = 0.7;
const DURATION_SECONDS_DEFAULT = 10;
const CONNECTIONS_DEFAULT = 32;
/** Read workers of the second Silk server (`silk serve --workers`). */
const WORKERS_DEFAULT = 2;
/** Every side is measured in this many alternating rounds; the best round of each is reported. */
const ROUNDS_DEFAULT = 2;
/** Each endpoint is driven this long, untimed, before its measured run, so both servers are measured warm. */
const WARMUP_SECONDS = 2;
const BATCH_RECORDS = 50_000;
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

const PROJECT = `N::User { ext: I64, score: I64 }
E::Follows { From: User, To: User }

QUERY PointGet(id: ID) =>
    user <- N<User>(id)
    RETURN user

QUERY OneHop(id: ID) =>
    friends <- N<User>(id)::Out<Follows>
    RETURN friends
`;

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** Loads every node, then every edge, in batches; returns each SNAP node's Silk ID. */
async function load(directory: string, edges: EdgeList, useDist: boolean): Promise<Map<number, string>> {
  const silk = await loadSilkModules(!useDist, progress);
  const db = await silk.index.open({ storage: { disk: directory }, schema: { file: "bench.hx", text: PROJECT } });
  const silkIdOf = new Map<number, bigint>();
  try {
    for (let first = 0; first < edges.nodes.length; first += BATCH_RECORDS) {
      const snapIds = Array.from(edges.nodes.subarray(first, first + BATCH_RECORDS));
      const nodes: ImportNode[] = snapIds.map((snapId) => ({ label: "User", props: { ext: snapId, score: snapId % 100 } }));
      const result = await db.importBatch({ nodes, edges: [] });
      snapIds.forEach((snapId, i) => silkIdOf.set(snapId, result.nodeIds[i]));
    }
    for (let first = 0; first < edges.sources.length; first += BATCH_RECORDS) {
      const batch: ImportEdge[] = [];
      for (let i = first; i < Math.min(edges.sources.length, first + BATCH_RECORDS); i += 1) {
        batch.push({ label: "Follows", from: { id: silkIdOf.get(edges.sources[i])! }, to: { id: silkIdOf.get(edges.targets[i])! }, props: {} });
      }
      await db.importBatch({ nodes: [], edges: batch });
    }
  } finally {
    await db.close();
  }
  return new Map([...silkIdOf].map(([snapId, id]) => [snapId, id.toString()]));
}

/** The SNAP node whose out-degree is the median of the nodes that have out-edges: a typical 1-hop answer. */
function medianOutDegreeNode(edges: EdgeList): { snapId: number; degree: number } {
  const degrees = new Map<number, number>();
  for (const source of edges.sources) degrees.set(source, (degrees.get(source) ?? 0) + 1);
  const sorted = [...degrees].sort((a, b) => a[1] - b[1] || a[0] - b[0]);
  const [snapId, degree] = sorted[Math.floor(sorted.length / 2)];
  return { snapId, degree };
}

interface Child {
  readonly process: ChildProcessWithoutNullStreams;
  readonly url: string;
}

/** Spawns a server and resolves with its URL once it prints `http://...`. */
async function startServer(command: string, args: readonly string[]): Promise<Child> {
  const { child, match } = await startChild(command, args, /(http:\/\/127\.0\.0\.1:\d+)/);
  return { process: child, url: match[1] };
}

/** Whether dist/ holds a current build of everything `silk serve` runs (the engine, the gateway and the CLI). */
function distIsCurrent(): boolean {
  if (staleBuildFile() !== undefined) return false;
  for (const file of ["gateway/server.ts", "gateway/query-routes.ts", "gateway/query-v2.ts", "gateway/worker-database.ts", "bin/serve.ts", "bin/serve-workers.ts", "bin/silk.ts"]) {
    const compiled = join(REPO_ROOT, "dist", file.replace(/\.ts$/, ".js"));
    if (!existsSync(compiled) || statSync(compiled).mtimeMs < statSync(join(REPO_ROOT, file)).mtimeMs) return false;
  }
  return true;
}

function startSilk(project: string, data: string, useDist: boolean, workers: number): Promise<Child> {
  const serve = ["serve", "--project", project, "--data", data, "--port", "0", "--workers", String(workers)];
  if (useDist) return startServer(process.execPath, [join(REPO_ROOT, "dist", "bin", "silk.js"), ...serve]);
  const loader = pathToFileURL(join(REPO_ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
  return startServer(process.execPath, ["--import", loader, join(REPO_ROOT, "bin", "silk.ts"), ...serve]);
}

/** The bare route: this file run with `--bare-server <file>`, answering every POST /:name with the file's bytes. */
function startBare(bodies: string): Promise<Child> {
  return startServer(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--bare-server", bodies]);
}

/**
 * The ceiling: fastify with the gateway's settings (no logger, no request logging), parsing the JSON body as Silk
 * does and answering the bytes Silk answered for the same path.
 */
async function serveBare(bodiesFile: string): Promise<void> {
  const bodies = new Map(Object.entries(JSON.parse(readFileSync(bodiesFile, "utf8")) as Record<string, string>));
  const app = comparisonServer();
  app.post<{ Params: { name: string } }>("/:name", async (request, reply) => {
    return reply.type("application/json; charset=utf-8").send(bodies.get(request.params.name));
  });
  await listenAndAnnounce(app, "bare route");
}

/** fastify with the gateway's settings (no logger, no request logging): the bare and raw routes' server. */
function comparisonServer(): FastifyInstance {
  return Fastify({ logger: false, logController: new LogController({ disableRequestLogging: true }) });
}

/** Listens on a free loopback port and prints `<what> on http://...`, the line startServer waits for. */
async function listenAndAnnounce(app: FastifyInstance, what: string, closeRest: () => Promise<void> = async () => undefined): Promise<void> {
  await app.listen({ port: 0, host: "127.0.0.1" });
  // Closing lets the process end by itself, as `silk serve` does, so that --cpu-prof can write its profile.
  process.once("SIGTERM", () => void app.close().then(closeRest));
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  process.stdout.write(`${what} on http://127.0.0.1:${address.port}\n`);
}

/** The raw route: this file run with `--raw-server <partition directory>`. */
function startRaw(partition: string, useDist: boolean): Promise<Child> {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), "--raw-server", partition];
  return startServer(process.execPath, useDist ? args : [...args, "--source"]);
}

/**
 * The raw route: per request, the lmdb-js reads of the query on Silk's partition files (lmdb-js's shared read
 * transaction, one snapshot for a synchronous handler), records decoded with Silk's msgpackr settings and the body
 * built as Silk renders it, `{"id", "label", ...properties}`, by JSON.stringify.
 */
async function serveRaw(partition: string, source: boolean): Promise<void> {
  const silk = await loadSilkModules(source, progress);
  const { idKey, adjacencyRange } = silk.keys;
  const root = openLmdb({ path: partition, readOnly: true, maxDbs: 16, encoding: "binary" });
  const binary = (name: string) => root.openDB<Buffer, Buffer>({ name, keyEncoding: "binary", encoding: "binary" });
  const nodes = binary("nodes");
  const outgoing = binary("adjacency_out");
  const user = (id: bigint): Record<string, unknown> | null => {
    const bytes = nodes.getBinaryFast(idKey(id));
    if (bytes === undefined) return null;
    const [label, props] = silk.packr.unpack(bytes) as [string, Record<string, unknown>];
    return { id: id.toString(10), label, ...props };
  };
  const app = comparisonServer();
  app.post<{ Body: { id: string } }>("/PointGet", async (request, reply) => {
    return reply.type("application/json; charset=utf-8").send(JSON.stringify({ user: user(BigInt(request.body.id)) }));
  });
  app.post<{ Body: { id: string } }>("/OneHop", async (request, reply) => {
    // Silk's packed adjacency (node/store/adjacency.ts): the blocks of the list, in order, each holding up to 64 edges.
    const neighbours: { kind: "node" | "vector"; id: bigint }[] = [];
    const { start, end } = adjacencyRange(BigInt(request.body.id), "Follows");
    for (const { value } of outgoing.getRange({ start, end })) silk.adjacency.readBlockNeighbours(value, neighbours);
    const friends = neighbours.map((neighbour) => user(neighbour.id));
    return reply.type("application/json; charset=utf-8").send(JSON.stringify({ friends }));
  });
  await listenAndAnnounce(app, "raw LMDB route", () => root.close());
}

interface Measured {
  readonly requestsPerSecond: number;
  readonly p50Millis: number;
  readonly p99Millis: number;
}

async function drive(url: string, body: string, seconds: number, settings: Settings): Promise<Measured> {
  const result = await autocannon({
    url,
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    connections: settings.connections,
    duration: seconds,
    ...(settings.clientWorkers > 0 ? { workers: settings.clientWorkers } : {}),
  });
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0) {
    throw new Error(`${url}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx replies`);
  }
  return { requestsPerSecond: result.requests.average, p50Millis: result.latency.p50, p99Millis: result.latency.p99 };
}

/**
 * The round with the highest throughput: other processes on a shared machine only ever slow a run down, so the
 * best of a few alternating rounds is the least disturbed measurement of each side.
 */
function bestRun(runs: readonly Measured[]): Measured {
  return runs.reduce((best, run) => (run.requestsPerSecond > best.requestsPerSecond ? run : best));
}

interface Endpoint {
  readonly title: string;
  readonly name: string;
  readonly body: string;
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row: readonly string[]): string => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join("  ");
  return [line(rows[0]), widths.map((width) => "-".repeat(width)).join("  "), ...rows.slice(1).map(line)].join("\n");
}

interface Settings {
  readonly seconds: number;
  readonly connections: number;
  readonly rounds: number;
  /** Read workers of each further Silk server, one server per count. */
  readonly workers: readonly number[];
  /** autocannon's worker threads; 0 runs it in this process's own thread. */
  readonly clientWorkers: number;
}

async function answer(server: Child, endpoint: Endpoint): Promise<string> {
  const response = await fetch(`${server.url}/${endpoint.name}`, { method: "POST", body: endpoint.body, headers: { "content-type": "application/json" } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${endpoint.name} answered ${response.status}: ${text}`);
  return text;
}

/** Silk's answer to each endpoint, checked against the dataset: these become the bare route's bytes. */
async function checkedAnswers(silk: Child, endpoints: readonly Endpoint[], pointId: string, hubDegree: number): Promise<Record<string, string>> {
  const answers: Record<string, string> = {};
  for (const endpoint of endpoints) answers[endpoint.name] = await answer(silk, endpoint);
  const pointAnswer = JSON.parse(answers.PointGet) as { user: { id: string; label: string } };
  const hopAnswer = JSON.parse(answers.OneHop) as { friends: unknown[] };
  if (pointAnswer.user.id !== pointId || pointAnswer.user.label !== "User" || hopAnswer.friends.length !== hubDegree) {
    throw new Error(`wrong answers: ${answers.PointGet.slice(0, 200)} / ${hopAnswer.friends.length} neighbours, expected ${hubDegree}`);
  }
  return answers;
}

/** The servers of one run: Silk with one process, Silk with `--workers N` for each N asked for, the raw and bare routes. */
interface Servers {
  readonly silk: Child;
  readonly workers: readonly { readonly count: number; readonly server: Child }[];
  readonly raw: Child;
  readonly bare: Child;
}

interface EndpointResult {
  readonly silk: Measured;
  /** One per `Servers.workers`, in the same order. */
  readonly workers: readonly Measured[];
  readonly raw: Measured;
  readonly bare: Measured;
}

/** Warms every server up on one endpoint, then measures them in alternating rounds; the best round of each. */
async function measureEndpoint(endpoint: Endpoint, servers: Servers, settings: Settings): Promise<EndpointResult> {
  const sides: [string, Child][] = [
    ["silk", servers.silk],
    ...servers.workers.map(({ count, server }): [string, Child] => [`silk --workers ${count}`, server]),
    ["raw", servers.raw],
    ["bare", servers.bare],
  ];
  const measured: Measured[][] = sides.map(() => []);
  for (const [side, server] of sides) {
    progress(`${endpoint.name} on ${side}: ${WARMUP_SECONDS} s warm-up...`);
    await drive(`${server.url}/${endpoint.name}`, endpoint.body, WARMUP_SECONDS, settings);
  }
  for (let round = 1; round <= settings.rounds; round += 1) {
    for (const [index, [side, server]] of sides.entries()) {
      progress(`${endpoint.name} on ${side}, round ${round} of ${settings.rounds}: ${settings.seconds} s, ${settings.connections} connections...`);
      measured[index].push(await drive(`${server.url}/${endpoint.name}`, endpoint.body, settings.seconds, settings));
    }
  }
  const best = measured.map(bestRun);
  return { silk: best[0], workers: best.slice(1, -2), raw: best[best.length - 2], bare: best[best.length - 1] };
}

function headerRow(workers: readonly number[]): string[] {
  return [
    "endpoint",
    "Silk req/s",
    ...workers.flatMap((count) => [`Silk x${count} req/s`, `x${count}/x1`]),
    "raw req/s",
    "bare req/s",
    "Silk/bare",
    "raw/bare",
    "Silk/raw",
    "Silk p50/p99 ms",
    ...workers.map((count) => `Silk x${count} p50/p99 ms`),
    "raw p50/p99 ms",
    "bare p50/p99 ms",
    "answer bytes",
    "target",
    "result",
  ];
}

function resultRow(endpoint: Endpoint, answer: string, { silk, workers, raw, bare }: EndpointResult): string[] {
  const ratio = silk.requestsPerSecond / bare.requestsPerSecond;
  const rate = (side: Measured): string => Math.round(side.requestsPerSecond).toLocaleString("en-US");
  const latency = (side: Measured): string => `${side.p50Millis} / ${side.p99Millis}`;
  return [
    endpoint.title,
    rate(silk),
    ...workers.flatMap((side) => [rate(side), (side.requestsPerSecond / silk.requestsPerSecond).toFixed(2)]),
    rate(raw),
    rate(bare),
    ratio.toFixed(2),
    (raw.requestsPerSecond / bare.requestsPerSecond).toFixed(2),
    (silk.requestsPerSecond / raw.requestsPerSecond).toFixed(2),
    latency(silk),
    ...workers.map(latency),
    latency(raw),
    latency(bare),
    String(Buffer.byteLength(answer)),
    `>= ${THROUGHPUT_RATIO_MIN.toFixed(2)}`,
    ratio >= THROUGHPUT_RATIO_MIN ? "PASS" : "FAIL",
  ];
}

/** Loads the dataset, starts the three servers, measures every endpoint and prints the table; true if a target is missed. */
async function run(workspace: string, children: Child[], settings: Settings, source: boolean): Promise<boolean> {
  const spec = DATASETS[0];
  const project = join(workspace, "project");
  const data = join(workspace, "data");
  mkdirSync(project);
  writeFileSync(join(project, "bench.hx"), PROJECT);
  const edges = readEdgeList(spec);
  progress(`loading ${spec.name} (${edges.nodes.length} nodes, ${edges.sources.length} edges)...`);
  const useDist = !source && distIsCurrent();
  if (!source && !useDist) progress("dist/ is missing or older than the sources (run `make bench-http`): serving the TypeScript sources through tsx");
  const silkIdOf = await load(data, edges, useDist);
  const hub = medianOutDegreeNode(edges);
  const pointId = silkIdOf.get(edges.nodes[Math.floor(edges.nodes.length / 2)])!;
  const endpoints: Endpoint[] = [
    { title: "point get (PointGet)", name: "PointGet", body: JSON.stringify({ id: pointId }) },
    { title: `1-hop, ${hub.degree} neighbours (OneHop)`, name: "OneHop", body: JSON.stringify({ id: silkIdOf.get(hub.snapId)! }) },
  ];
  const silk = await startSilk(project, data, useDist, 1);
  children.push(silk);
  const answers = await checkedAnswers(silk, endpoints, pointId, hub.degree);
  const workers: { count: number; server: Child }[] = [];
  for (const count of settings.workers) {
    // Each workers' server gets a copy: one writer per directory.
    const workersData = join(workspace, `data-workers-${count}`);
    cpSync(data, workersData, { recursive: true });
    const server = await startSilk(project, workersData, useDist, count);
    children.push(server);
    workers.push({ count, server });
    for (const endpoint of endpoints) {
      const workersAnswer = await answer(server, endpoint);
      if (workersAnswer !== answers[endpoint.name]) throw new Error(`silk serve --workers ${count} answers ${endpoint.name} differently: ${workersAnswer.slice(0, 200)}`);
    }
  }
  const bodiesFile = join(workspace, "bodies.json");
  writeFileSync(bodiesFile, JSON.stringify(answers));
  const bare = await startBare(bodiesFile);
  children.push(bare);
  const raw = await startRaw(join(data, "partitions", "p0"), useDist);
  children.push(raw);
  for (const endpoint of endpoints) {
    const rawAnswer = await answer(raw, endpoint);
    if (rawAnswer !== answers[endpoint.name]) throw new Error(`the raw route answers ${endpoint.name} differently: ${rawAnswer.slice(0, 200)}`);
  }
  const rows: string[][] = [headerRow(settings.workers)];
  let missed = false;
  for (const endpoint of endpoints) {
    const measured = await measureEndpoint(endpoint, { silk, workers, raw, bare }, settings);
    missed ||= measured.silk.requestsPerSecond / measured.bare.requestsPerSecond < THROUGHPUT_RATIO_MIN;
    rows.push(resultRow(endpoint, answers[endpoint.name], measured));
  }
  process.stdout.write(`${formatMachine(machineInfo(useDist ? "dist/ (compiled by tsc)" : "TypeScript sources through tsx"))}\n`);
  process.stdout.write(`dataset: ${spec.name} (${edges.nodes.length} nodes, ${edges.sources.length} edges), one disk database (and a copy for each workers' server)\n`);
  const counts = settings.workers.join(", ");
  process.stdout.write(
    `Silk: \`silk serve\` (one process) and \`silk serve --workers N\` for N in ${counts} (a writer and N read workers); ` +
      `the load generator runs on the same ${cpus().length} cores as the workers\n`,
  );
  const client = settings.clientWorkers > 0 ? `in ${settings.clientWorkers} worker threads` : "in this process's thread";
  process.stdout.write(
    `load: autocannon ${client}, ${settings.connections} connections, one request per connection at a time; ${WARMUP_SECONDS} s warm-up, then the ` +
      `best of ${settings.rounds} alternating ${settings.seconds} s rounds per side\n\n`,
  );
  process.stdout.write(`${table(rows)}\n`);
  return missed;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      duration: { type: "string", default: String(DURATION_SECONDS_DEFAULT) },
      connections: { type: "string", default: String(CONNECTIONS_DEFAULT) },
      rounds: { type: "string", default: String(ROUNDS_DEFAULT) },
      workers: { type: "string", default: String(WORKERS_DEFAULT) },
      "client-workers": { type: "string", default: "0" },
      source: { type: "boolean", default: false },
      strict: { type: "boolean", default: false },
      "bare-server": { type: "string" },
      "raw-server": { type: "string" },
    },
  });
  if (values["bare-server"] !== undefined) return serveBare(values["bare-server"]);
  if (values["raw-server"] !== undefined) return serveRaw(values["raw-server"], values.source);
  if (!existsSync(DATASETS[0].path)) {
    progress(`missing dataset file ${DATASETS[0].path}`);
    process.exitCode = 1;
    return;
  }
  const settings: Settings = {
    seconds: Number(values.duration),
    connections: Number(values.connections),
    rounds: Number(values.rounds),
    workers: values.workers.split(",").map(Number),
    clientWorkers: Number(values["client-workers"]),
  };
  if (settings.workers.some((count) => !Number.isInteger(count) || count < 2) || !Number.isInteger(settings.clientWorkers) || settings.clientWorkers < 0) {
    progress(`--workers must list whole numbers of at least 2 (the one-process server is always measured) and --client-workers a whole number, got ${values.workers} and ${values["client-workers"]}`);
    process.exitCode = 1;
    return;
  }
  const workspace = mkdtempSync(join(tmpdir(), "silk-bench-http-"));
  const children: Child[] = [];
  try {
    const missed = await run(workspace, children, settings, values.source);
    if (missed && values.strict) process.exitCode = 2;
  } finally {
    await Promise.all(children.map((child) => stopChild(child.process)));
    rmSync(workspace, { recursive: true, force: true });
  }
}

await main();
