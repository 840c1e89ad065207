/**
 * What bench/cluster.ts loads and runs on both sides (the cluster through connectCluster, the single server through
 * open()): one HelixQL project (schema + queries, the same text on both), the SNAP graph loaded with importBatch,
 * MNIST digits added with AddV, and the side-by-side runner that alternates chunks of one workload between the two
 * sides so the shared machine's load falls on both alike.
 *
 * Invariants: both sides receive the same requests in the same order; answers are kept (checked by the caller
 * after the clock stopped); each request is awaited before the next (no concurrency), so a latency is one request's.
 */
import type { Database, PreparedQuery } from "../index.js";
import type { EdgeList } from "./datasets.js";
import { LatencyRecorder, nowMillis, secondsSince, type Timing } from "./measure.js";
import { buildTree, importSnapGraph } from "./silk-side.js";
import { DIGIT_QUERIES, digitType } from "./vectors-engine.js";

/** The bench project: the graph of bench/graph.ts, a second edge label for writes (so the graph read stays the
 * dataset's), MNIST digits, and the queries every workload runs. */
export const CLUSTER_BENCH_PROJECT = `
N::User { ext: I64, score: I64 }
E::Follows { From: User, To: User }
E::Knows { From: User, To: User }
${digitType("euclidean")}

QUERY AddUser(ext: I64) =>
    user <- AddN<User>({ext: ext, score: 0})
    RETURN user
QUERY Link(from: ID, to: ID) =>
    AddE<Knows>::From(from)::To(to)
    RETURN "ok"
QUERY SetScore(id: ID, score: I64) =>
    user <- N<User>(id)::UPDATE({score: score})
    RETURN user
${DIGIT_QUERIES}`;

export interface Side {
  readonly name: string;
  readonly db: Database;
  /** SNAP ID → Silk ID, filled by loadGraph. */
  readonly silkIdOfSnap: Map<number, bigint>;
  twoHop?: PreparedQuery;
}

export function newSide(name: string, db: Database): Side {
  return { name, db, silkIdOfSnap: new Map() };
}

/** Loads every edge (creating endpoints on first sight) in batches, as bench/silk-side.ts does; returns seconds. */
export async function loadGraph(side: Side, edges: EdgeList, batchEdges: number): Promise<number> {
  const seconds = await importSnapGraph(side.db, edges, batchEdges, side.silkIdOfSnap);
  side.twoHop = await side.db.prepare(buildTree("two_hop_distinct"));
  return seconds;
}

/** Adds the digits (property `row` = index in `rows`) by AddDigits in batches; returns seconds. */
export async function loadDigits(side: Side, rows: readonly Float32Array[], batchRows: number): Promise<number> {
  const started = nowMillis();
  for (let first = 0; first < rows.length; first += batchRows) {
    const batch = rows.slice(first, first + batchRows).map((pixels, i) => ({ v: Array.from(pixels), row: first + i }));
    await side.db.query("AddDigits", { rows: batch });
  }
  return secondsSince(started);
}

/** The distinct 2-hop count from a SNAP node (bench/silk-side.ts's tree, prepared once per side). */
export async function twoHop(side: Side, snapId: number): Promise<number> {
  const start = side.silkIdOfSnap.get(snapId);
  if (start === undefined || side.twoHop === undefined) throw new Error(`${side.name}: SNAP node ${snapId} not loaded`);
  return Number((await side.twoHop.run({ start: start.toString() })).n);
}

export async function nearest(side: Side, query: readonly number[], k: number): Promise<number[]> {
  const result = (await side.db.query("Near", { v: query, k })) as { digits: { row: number }[] };
  return result.digits.map((digit) => Number(digit.row));
}

export interface SideBySide<T> {
  readonly cluster: Timing;
  readonly single: Timing;
  readonly clusterAnswers: readonly T[];
  readonly singleAnswers: readonly T[];
}

/**
 * Runs `count` operations per side in `chunks` alternating chunks (cluster first in even chunks, single first in odd
 * ones), after `warmup` untimed operations per side. `operation(side, i)` must be the same request for both sides.
 */
export async function sideBySide<T>(
  sides: { readonly cluster: Side; readonly single: Side },
  count: number,
  chunks: number,
  warmup: number,
  operation: (side: Side, index: number) => Promise<T>,
): Promise<SideBySide<T>> {
  for (const side of [sides.cluster, sides.single]) await new LatencyRecorder<T>(warmup).runAsync(0, warmup, (i) => operation(side, count + i));
  const recorders = { cluster: new LatencyRecorder<T>(count), single: new LatencyRecorder<T>(count) };
  for (let chunk = 0; chunk < chunks; chunk++) {
    const from = Math.floor((chunk * count) / chunks);
    const to = Math.floor(((chunk + 1) * count) / chunks);
    const order = chunk % 2 === 0 ? (["cluster", "single"] as const) : (["single", "cluster"] as const);
    for (const which of order) await recorders[which].runAsync(from, to, (i) => operation(sides[which], i));
  }
  return {
    cluster: recorders.cluster.timing(),
    single: recorders.single.timing(),
    clusterAnswers: recorders.cluster.answers,
    singleAnswers: recorders.single.answers,
  };
}
