/**
 * The count benchmark (issue 16): `count` of a label over 3 partitions, pushed down to the partitions (each counts
 * its own records and answers a number; node/exec/pushdown.ts) against the fetch path (the coordinator reads every ID and
 * record and counts them itself), side by side in one run, and a single-partition database beside them; the same for
 * `RANGE(0, 100)` of the label (each partition sends its first 100 IDs).
 *
 * The fetch path is the same step with a `dedup` step before it: dedup is not partition-local, so the coordinator
 * builds the stream exactly as every count did before the push-down (read_label, then read_records 256 IDs at a
 * time), and dedup of distinct records costs one Set insertion each. A page's answers are compared by their length
 * and the total length of the names (IDs, and so which users come first, differ between 3 partitions and 1).
 *
 * - In process (default): open({ storage: { disk }, partitions: 3 }) and partitions: 1, in this process.
 * - `--nats`: the 3 partitions are real `silk partition` processes (one replica each) behind three nats-server
 *   processes (bench/cluster-processes.ts; TypeScript sources through tsx), the coordinator here (connectCluster).
 *
 * Options: `--users N` (default 33,000), `--runs N` timed counts per variant (default 20, in 5 alternating chunks).
 * Exit status 1 when the variants' answers differ.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import * as nats from "../cluster/nats/servers.js";
import * as manifest from "../cluster/nats/manifest.js";
import { open, type Database } from "../runtime/embedded.js";
import { connectCluster } from "../runtime/remote.js";
import { BenchCluster, waitFor } from "./cluster-processes.js";
import { LatencyRecorder, type Timing } from "./measure.js";
import { formatMachine, machineInfo } from "./report.js";

const PARTITIONS = 3;
const LOAD_BATCH_USERS = 1_000;
const CHUNKS = 5;
const WARMUP = 2;
const CLUSTER_NAME = "benchcount";
const SCHEMA = "N::User { name: String, age: I32 }\n";

const progress = (message: string): void => void process.stderr.write(`${message}\n`);

const label = { nodes_where: { predicate: { eq: { left: { property: "$label" }, right: { constant: { string: "User" } } } } } };
const older = { where: { input: label, predicate: { gt: { left: { property: "age" }, right: { param: "a" } } } } };
const readOf = (root: unknown) => ({ request_type: "read", query: { read: { entries: [{ query: { name: "n", root } }], returns: ["n"] } }, parameters: { a: 50 } });
const countOf = (input: unknown) => readOf({ count: { input } });
const pageOf = (input: unknown) => readOf({ range: { input, start: { literal: 0 }, end: { literal: PAGE } } });
const PAGE = 100;

/** The workloads: each a pushed-down step and the same step forced down the fetch path. */
const WORKLOADS = [
  { name: "count N<User>", pushed: countOf(label), fetched: countOf({ dedup: { input: label } }), singleAgrees: true },
  { name: "count N<User> WHERE age > 50", pushed: countOf(older), fetched: countOf({ dedup: { input: older } }), singleAgrees: true },
  // One partition's first 100 users are other users than three partitions' first 100 (IDs are given round-robin).
  { name: `N<User>::RANGE(0, ${PAGE})`, pushed: pageOf(label), fetched: pageOf({ dedup: { input: label } }), singleAgrees: false },
] as const;

interface Variant {
  readonly name: string;
  readonly run: () => Promise<number>;
}

/** A count's answer, or a page's number of records (its records are checked equal by their names' total length). */
const answerOf = async (db: Database, request: unknown): Promise<number> => {
  const n = (await db.run(request)).n;
  return Array.isArray(n) ? n.length * 1_000_000 + n.reduce((total: number, user: { name: string }) => total + user.name.length, 0) : Number(n);
};

async function load(db: Database, users: number): Promise<number> {
  const started = performance.now();
  const body = [{ query: { root: { add_n: { label: "User", properties: [["name", { expr: { param: "name" } }], ["age", { expr: { param: "age" } }]] } } } }];
  for (let first = 0; first < users; first += LOAD_BATCH_USERS) {
    const rows = Array.from({ length: Math.min(LOAD_BATCH_USERS, users - first) }, (_, i) => ({ name: `user${first + i}`, age: (first + i) % 80 }));
    await db.run({ request_type: "write", query: { write: { entries: [{ for_each: { param: "users", body } }], returns: [] } }, parameters: { users: rows } });
  }
  return (performance.now() - started) / 1_000;
}

/** Runs every variant `runs` times in CHUNKS alternating chunks (the order rotating), after WARMUP untimed runs. */
async function measure(variants: readonly Variant[], runs: number): Promise<{ timings: Timing[]; answers: Set<number>[] }> {
  const answers = variants.map(() => new Set<number>());
  for (const [v, variant] of variants.entries()) for (let i = 0; i < WARMUP; i += 1) answers[v].add(await variant.run());
  const recorders = variants.map(() => new LatencyRecorder<number>(runs));
  for (let chunk = 0; chunk < CHUNKS; chunk += 1) {
    const from = Math.floor((chunk * runs) / CHUNKS);
    const to = Math.floor(((chunk + 1) * runs) / CHUNKS);
    for (let k = 0; k < variants.length; k += 1) {
      const which = (chunk + k) % variants.length;
      await recorders[which].runAsync(from, to, () => variants[which].run());
    }
  }
  for (const [v, recorder] of recorders.entries()) for (const answer of recorder.answers) answers[v].add(answer);
  return { timings: recorders.map((recorder) => recorder.timing()), answers };
}

async function clusterDatabase(useNats: boolean, directory: string, cleanups: (() => Promise<void>)[]): Promise<{ db: Database; what: string }> {
  if (!useNats) {
    const db = await open({ storage: { disk: join(directory, "partitioned") }, partitions: PARTITIONS, schema: SCHEMA });
    cleanups.push(() => db.close());
    return { db, what: `${PARTITIONS} partitions in process (open, disk)` };
  }
  progress("starting NATS and the partition processes");
  const cluster = await BenchCluster.start({ directory: join(directory, "cluster"), name: CLUSTER_NAME, partitions: PARTITIONS, replicas: 1, schema: SCHEMA, source: true }, { nats, manifest });
  cleanups.push(() => cluster.stop());
  const nc = await connect({ servers: cluster.urls });
  cleanups.push(() => nc.close());
  const leases = await waitFor("the lease bucket", 60_000, () => new Kvm(nc).open(`SILK_${CLUSTER_NAME.toUpperCase()}_LEASES`).catch(() => undefined));
  await waitFor("a leader of every partition", 60_000, async () => {
    const dead = cluster.deadReplicas();
    if (dead.length > 0) throw new Error(`partition processes exited: ${dead.join(", ")}`);
    const held = await Promise.all([0, 1, 2].map(async (partition) => (await leases.get(`p${partition}`).catch(() => null))?.operation === "PUT"));
    return held.every(Boolean) ? true : undefined;
  }, 200);
  const db = await connectCluster({ cluster: CLUSTER_NAME, servers: cluster.urls, partitions: PARTITIONS, schema: SCHEMA });
  cleanups.push(() => db.close());
  return { db, what: `${PARTITIONS} partitions x 1 replica as silk partition processes over 3 nats-server (JetStream); coordinator in this process` };
}

const ms = (micros: number): string => (micros / 1000).toFixed(micros < 10_000 ? 2 : 1);

async function run(values: { users: number; runs: number; nats: boolean }, directory: string, cleanups: (() => Promise<void>)[]): Promise<number> {
  console.log(formatMachine(machineInfo("TypeScript sources through tsx")));
  const partitioned = await clusterDatabase(values.nats, directory, cleanups);
  const single = await open({ storage: { disk: join(directory, "single") }, partitions: 1, schema: SCHEMA });
  cleanups.push(() => single.close());
  console.log(`data: ${values.users.toLocaleString("en-US")} users; partitioned: ${partitioned.what}; single: 1 partition in process (open, disk)`);
  for (const [name, db] of [["partitioned", partitioned.db], ["single", single]] as const) {
    progress(`  ${name}: loaded in ${(await load(db, values.users)).toFixed(1)} s`);
  }
  let failed = false;
  const header = "workload                       pushed p50 ms  fetched p50 ms  single p50 ms  fetched/pushed  pushed/single  answer";
  console.log(`\n${header}\n${"-".repeat(header.length)}`);
  for (const workload of WORKLOADS) {
    progress(workload.name);
    const { timings, answers } = await measure(
      [
        { name: "pushed", run: () => answerOf(partitioned.db, workload.pushed) },
        { name: "fetched", run: () => answerOf(partitioned.db, workload.fetched) },
        { name: "single", run: () => answerOf(single, workload.pushed) },
      ],
      values.runs,
    );
    const [pushed, fetched, one] = timings;
    const compared = new Set((workload.singleAgrees ? answers : answers.slice(0, 2)).flatMap((set) => [...set]));
    const answer = compared.size === 1 ? String([...compared][0]) : `DIFFER: ${[...compared].join(", ")}`;
    failed ||= compared.size !== 1;
    console.log(
      [
        workload.name.padEnd(29),
        ms(pushed.p50Micros).padStart(14),
        ms(fetched.p50Micros).padStart(15),
        ms(one.p50Micros).padStart(14),
        (fetched.p50Micros / pushed.p50Micros).toFixed(1).padStart(15),
        (pushed.p50Micros / one.p50Micros).toFixed(2).padStart(14),
        ` ${answer}`,
      ].join(" "),
    );
  }
  return failed ? 1 : 0;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { users: { type: "string", default: "33000" }, runs: { type: "string", default: "20" }, nats: { type: "boolean", default: false } } });
  const settings = { users: Number(values.users), runs: Number(values.runs), nats: values.nats };
  const directory = mkdtempSync(join(tmpdir(), "silk-bench-count-"));
  const cleanups: (() => Promise<void>)[] = [];
  const cleanUp = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((cause: unknown) => progress(`cleanup: ${String(cause)}`));
    rmSync(directory, { recursive: true, force: true });
  };
  process.once("SIGINT", () => void cleanUp().finally(() => process.exit(130)));
  try {
    return await run(settings, directory, cleanups);
  } catch (cause) {
    progress(`bench cluster-count failed: ${(cause as Error).stack ?? String(cause)}`);
    return 1;
  } finally {
    await cleanUp();
  }
}

process.exitCode = await main();
