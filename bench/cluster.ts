/**
 * The cluster benchmark (`make bench-cluster`, issue 6): the same project, data and requests on a cluster and on a
 * single server, side by side in alternating chunks, then failover. See docs/BENCHMARKS.md ("Cluster").
 *
 * - Cluster: three nats-server processes (JetStream, loopback), 3 partitions × 3 replicas as real `silk partition`
 *   processes (bench/cluster-processes.ts), the coordinator in this process (connectCluster).
 * - Single server: open({ storage: { disk }, partitions: 1 }) in this process.
 * - Data: snap-ego-facebook loaded with importBatch into both; the first 3,000 MNIST base rows as `V::Digit`.
 * - Workloads: AddN (one partition), AddE between nodes on different partitions (two-phase commit in the cluster; a
 *   plain one-partition write on the single server), distinct friends of friends (answers checked against the
 *   oracle on both sides), vector top-10 (merged across the 3 partitions in the cluster; recall against exact).
 * - Failover: partition 0's leader process SIGKILLed while a writer loops, 3 times (bench/cluster-failover.ts).
 *
 * Options: `--source` runs the TypeScript sources (this process and the replicas) instead of dist/.
 * Exit status: 1 when a dataset is missing, an answer differs or a step fails. Every process started is stopped at
 * the end, also on error or SIGINT; temporary directories are removed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import type * as SilkIndex from "../index.js";
import type * as Remote from "../runtime/remote.js";
import type * as NatsServers from "../cluster/nats/servers.js";
import type * as Manifest from "../cluster/nats/manifest.js";
import type * as PartitionMaps from "../cluster/partition-map.js";
import { DATASETS, missingDatasetFiles, readEdgeList } from "./datasets.js";
import { measureFailover, type FailoverRound, type LeaseHolder } from "./cluster-failover.js";
import { BenchCluster, waitFor } from "./cluster-processes.js";
import { CLUSTER_BENCH_PROJECT, loadDigits, loadGraph, nearest, newSide, sideBySide, twoHop, type Side, type SideBySide } from "./cluster-workloads.js";
import { sampleWithoutReplacement, seededRandom, type Timing } from "./measure.js";
import { Oracle } from "./oracle.js";
import { formatMachine, machineInfo } from "./report.js";
import { staleBuildFile } from "./silk-modules.js";
import { exactTop, missingMnistFiles, readMnist, recallAt } from "./vectors-mnist.js";

const CLUSTER_NAME = "bench";
const PARTITIONS = 3;
const REPLICAS = 3;
const IMPORT_BATCH_EDGES = 5_000;
const DIGITS = 3_000;
const DIGIT_BATCH_ROWS = 50;
const K = 10;
const SEED = 20_240_601;
const CHUNKS = 10;
/** Operations per side, and untimed warm-up operations per side, of each workload. */
const COUNTS = { addN: [600, 40], addE: [300, 20], twoHop: [400, 40], vector: [200, 20] } as const;
const FAILOVER_ROUNDS = 3;
/** The failover is measured with the transport's default attempt timeout (5 s) and with this shorter one. */
const SHORT_ATTEMPT_TIMEOUT_MS = 1_000;

const progress = (message: string): void => void process.stderr.write(`${message}\n`);

interface Modules {
  readonly index: typeof SilkIndex;
  readonly remote: typeof Remote;
  readonly nats: typeof NatsServers;
  readonly manifest: typeof Manifest;
  readonly partitionMap: typeof PartitionMaps;
  readonly origin: string;
}

async function loadModules(source: boolean): Promise<Modules> {
  const stale = source ? undefined : staleBuildFile();
  if (stale !== undefined) progress(`dist/ is older than ${stale} (run npm run build): measuring the TypeScript sources through tsx`);
  const useSource = source || stale !== undefined;
  const base = useSource ? "../" : "../dist/";
  const load = async <T>(path: string): Promise<T> => (await import(new URL(`${base}${path}`, import.meta.url).href)) as T;
  return {
    index: await load<typeof SilkIndex>("index.js"),
    remote: await load<typeof Remote>("runtime/remote.js"),
    nats: await load<typeof NatsServers>("cluster/nats/servers.js"),
    manifest: await load<typeof Manifest>("cluster/nats/manifest.js"),
    partitionMap: await load<typeof PartitionMaps>("cluster/partition-map.js"),
    origin: useSource ? "TypeScript sources through tsx (coordinator and replicas)" : "dist/ (compiled by tsc; coordinator and replicas)",
  };
}

interface Row {
  readonly workload: string;
  readonly result: SideBySide<unknown>;
  readonly check: string;
}

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const ms = (micros: number): string => (micros / 1000).toFixed(micros < 10_000 ? 2 : 1);
const latency = (timing: Timing): string => `${ms(timing.p50Micros)} / ${ms(timing.p99Micros)}`;

function formatRows(rows: readonly Row[]): string {
  const header = ["workload", "cluster ops/s", "single ops/s", "cluster/single", "cluster p50/p99 ms", "single p50/p99 ms", "answers"];
  const table = [header, ...rows.map(({ workload, result, check }) => [
    workload,
    integer.format(result.cluster.opsPerSecond),
    integer.format(result.single.opsPerSecond),
    (result.cluster.opsPerSecond / result.single.opsPerSecond).toFixed(2),
    latency(result.cluster),
    latency(result.single),
    check,
  ])];
  const widths = header.map((_, column) => Math.max(...table.map((row) => row[column].length)));
  return table.map((row, r) => row.map((cell, c) => (c === 0 || c === row.length - 1 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join("  ") + (r === 0 ? `\n${widths.map((w) => "-".repeat(w)).join("  ")}` : "")).join("\n");
}

function formatFailover(rounds: readonly FailoverRound[]): string {
  return rounds
    .map((round, i) => `  ${i + 1}: killed p0-${round.killed}; ${round.newLeader} held the lease after ${integer.format(round.leaseMs)} ms; the write in flight ended ${round.inFlightOutcome} after ${integer.format(round.inFlightMs)} ms; first successful write sent after the kill: ${integer.format(round.firstWriteMs)} ms; failed writes: ${Object.entries(round.failures).map(([code, n]) => `${n} ${code}`).join(", ") || "none"}`)
    .join("\n");
}

async function leaseReader(nc: NatsConnection): Promise<(partition: number) => Promise<LeaseHolder | undefined>> {
  const kv = await waitFor("the lease bucket", 60_000, () => new Kvm(nc).open(`SILK_${CLUSTER_NAME.toUpperCase()}_LEASES`).catch(() => undefined));
  return async (partition) => {
    const entry = await kv.get(`p${partition}`).catch(() => null);
    return entry === null || entry.operation !== "PUT" ? undefined : (JSON.parse(new TextDecoder().decode(entry.value)) as LeaseHolder);
  };
}

async function run(modules: Modules, directory: string, cleanups: (() => Promise<void>)[]): Promise<number> {
  const edges = readEdgeList(DATASETS[0]);
  const mnist = readMnist();
  const digits = mnist.base.slice(0, DIGITS);
  const queries = mnist.queries.slice(0, COUNTS.vector[0]).map((query) => Array.from(query));
  console.log(`${formatMachine(machineInfo(modules.origin))}`);
  console.log(`data: ${edges.spec.name} ${integer.format(edges.nodes.length)} nodes, ${integer.format(edges.sources.length)} edges; MNIST ${integer.format(digits.length)} x ${digits[0].length} (euclidean), ${queries.length} queries, k = ${K}`);
  console.log(`cluster: 3 nats-server (JetStream, R3), ${PARTITIONS} partitions x ${REPLICAS} replicas as silk partition processes; coordinator in this process\n`);

  progress("starting NATS and the replica processes");
  const cluster = await BenchCluster.start({ directory: join(directory, "cluster"), name: CLUSTER_NAME, partitions: PARTITIONS, replicas: REPLICAS, schema: CLUSTER_BENCH_PROJECT, source: modules.origin.startsWith("TypeScript") }, modules);
  cleanups.push(() => cluster.stop());
  const nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1 });
  cleanups.push(() => nc.close());
  const leaseHolder = await leaseReader(nc);
  await waitFor("a leader of every partition", 60_000, async () => {
    const dead = cluster.deadReplicas();
    if (dead.length > 0) throw new Error(`replica processes exited: ${dead.join(", ")} (logs in ${cluster.layout.directory}/logs)`);
    const holders = await Promise.all([0, 1, 2].map(leaseHolder));
    return holders.every((holder) => holder !== undefined) ? true : undefined;
  }, 200);
  const clusterDb = await modules.remote.connectCluster({ cluster: CLUSTER_NAME, servers: cluster.urls, partitions: PARTITIONS, schema: CLUSTER_BENCH_PROJECT });
  cleanups.push(() => clusterDb.close());
  const singleDb = await modules.index.open({ storage: { disk: join(directory, "single") }, partitions: 1, schema: CLUSTER_BENCH_PROJECT });
  cleanups.push(() => singleDb.close());
  const sides = { cluster: newSide("cluster", clusterDb), single: newSide("single", singleDb) };

  for (const side of [sides.cluster, sides.single]) {
    const seconds = await loadGraph(side, edges, IMPORT_BATCH_EDGES);
    progress(`  ${side.name}: graph loaded in ${seconds.toFixed(1)} s (${integer.format(edges.sources.length / seconds)} edges/s)`);
    const vectorSeconds = await loadDigits(side, digits, DIGIT_BATCH_ROWS);
    progress(`  ${side.name}: ${digits.length} digits added in ${vectorSeconds.toFixed(1)} s (${integer.format(digits.length / vectorSeconds)} vectors/s)`);
  }

  const rows: Row[] = [];
  const map = new modules.partitionMap.PartitionMap(PARTITIONS);
  const sample = sampleWithoutReplacement(edges.nodes, 1_000, SEED);
  const random = seededRandom(SEED + 1);

  progress("single-partition writes (AddN)");
  const addN = await sideBySide(sides, COUNTS.addN[0], CHUNKS, COUNTS.addN[1], (side, i) => side.db.query("AddUser", { ext: 10_000_000 + i }));
  rows.push({ workload: "write, 1 partition (AddN)", result: addN, check: "-" });

  progress("two-partition writes (AddE across partitions)");
  const pairs: [number, number][] = [];
  while (pairs.length < COUNTS.addE[0] + COUNTS.addE[1]) {
    const from = sample[Math.floor(random() * sample.length)];
    const to = sample[Math.floor(random() * sample.length)];
    if (map.partitionOf(sides.cluster.silkIdOfSnap.get(from)!) !== map.partitionOf(sides.cluster.silkIdOfSnap.get(to)!)) pairs.push([from, to]);
  }
  const link = (side: Side, [from, to]: [number, number]) => side.db.query("Link", { from: side.silkIdOfSnap.get(from)!.toString(), to: side.silkIdOfSnap.get(to)!.toString() });
  const addE = await sideBySide(sides, COUNTS.addE[0], CHUNKS, COUNTS.addE[1], (side, i) => link(side, pairs[i % pairs.length]));
  rows.push({ workload: "write, 2 partitions (AddE; 2PC in cluster)", result: addE, check: "-" });

  progress("2-hop distinct (friends of friends)");
  const oracle = new Oracle(edges);
  const starts = sample.slice(0, 200);
  const hop = await sideBySide(sides, COUNTS.twoHop[0], CHUNKS, COUNTS.twoHop[1], (side, i) => twoHop(side, starts[i % starts.length]));
  const hopWrong = [hop.clusterAnswers, hop.singleAnswers].flatMap((answers) => answers.filter((answer, i) => String(answer) !== oracle.answer("two_hop_distinct", starts[i % starts.length])));
  rows.push({ workload: "2-hop distinct count", result: hop, check: hopWrong.length === 0 ? `${COUNTS.twoHop[0]} x2 ok` : `${hopWrong.length} WRONG` });

  progress("vector top-10");
  const truth = queries.map((query) => exactTop("euclidean", digits, Float32Array.from(query), K));
  const vector = await sideBySide(sides, COUNTS.vector[0], CHUNKS, COUNTS.vector[1], (side, i) => nearest(side, queries[i % queries.length], K));
  const recall = (answers: readonly number[][]): number => answers.reduce((sum, found, i) => sum + recallAt(found, truth[i % truth.length], K), 0) / answers.length;
  rows.push({ workload: `vector top-${K} (3 partitions merged)`, result: vector, check: `recall ${recall(vector.clusterAnswers).toFixed(4)} / ${recall(vector.singleAnswers).toFixed(4)}` });

  console.log(formatRows(rows));
  console.log(`\ncommit latency (client-observed, ms p50 / p99): 1 partition cluster ${latency(addN.cluster)}, single ${latency(addN.single)}; 2 partitions cluster ${latency(addE.cluster)}, single ${latency(addE.single)}`);

  progress("failover: SIGKILL partition 0's leader while a writer loops");
  const p0Node = [...sides.cluster.silkIdOfSnap.values()].find((id) => map.partitionOf(id) === 0);
  if (p0Node === undefined) throw new Error("no loaded node lives on partition 0");
  const failover = await measureFailover({ cluster, db: clusterDb, nodeId: p0Node, leaseHolder, progress }, FAILOVER_ROUNDS);
  console.log(`\nfailover, transport attempt timeout 5,000 ms (default):\n${formatFailover(failover)}`);
  // The same coordinator settings but a shorter attempt timeout. A cluster has one writer coordinator: the first
  // handle closes (releasing the writer lease) before the second connects.
  await clusterDb.close();
  const shortDb = await modules.remote.connectCluster({ cluster: CLUSTER_NAME, servers: cluster.urls, partitions: PARTITIONS, schema: CLUSTER_BENCH_PROJECT, attemptTimeoutMs: SHORT_ATTEMPT_TIMEOUT_MS });
  cleanups.push(() => shortDb.close());
  const shortFailover = await measureFailover({ cluster, db: shortDb, nodeId: p0Node, leaseHolder, progress }, FAILOVER_ROUNDS);
  console.log(`failover, transport attempt timeout ${integer.format(SHORT_ATTEMPT_TIMEOUT_MS)} ms:\n${formatFailover(shortFailover)}`);
  if (hopWrong.length > 0) {
    progress(`${hopWrong.length} 2-hop answers differ from the oracle`);
    return 1;
  }
  return 0;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { source: { type: "boolean", default: false } } });
  const missing = [...missingDatasetFiles([DATASETS[0]]), ...missingMnistFiles().map((name) => `mnist-test-vectors/${name}`)];
  if (missing.length > 0) {
    for (const path of missing) progress(`missing dataset file: ${path}`);
    return 1;
  }
  const modules = await loadModules(values.source);
  const directory = mkdtempSync(join(tmpdir(), "silk-bench-cluster-"));
  const cleanups: (() => Promise<void>)[] = [];
  const cleanUp = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((cause: unknown) => progress(`cleanup: ${String(cause)}`));
    rmSync(directory, { recursive: true, force: true });
  };
  process.once("SIGINT", () => void cleanUp().finally(() => process.exit(130)));
  const started = Date.now();
  try {
    return await run(modules, directory, cleanups);
  } catch (cause) {
    progress(`bench-cluster failed: ${(cause as Error).stack ?? String(cause)}`);
    return 1;
  } finally {
    await cleanUp();
    progress(`whole run: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
}

process.exitCode = await main();
