/**
 * The Silk side of the benchmark: a disk database opened through the embedded API, loaded with `importBatch`, and
 * queried with operation trees prepared once through `db.prepare(tree)` and run with a start node per query.
 *
 * It runs with a schema (`N::User { ext: I64, score: I64 }`, `E::Follows { From: User, To: User }`), so every
 * write is validated as a production load would be. Nodes are created the first time an edge names them, with
 * `ext` = SNAP ID and `score` = SNAP ID % 100; an edge whose endpoint was created by an earlier batch refers to it
 * by its Silk ID.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database, ImportEdge, ImportEndpoint, ImportNode, PreparedQuery, QueryResult } from "../index.js";
import type { EdgeList } from "./datasets.js";
import { nowMillis, secondsSince } from "./measure.js";
import type { SilkModules } from "./silk-modules.js";
import { listAnswer, pointAnswer, scoreOf, SCORE_THRESHOLD, type WorkloadName } from "./oracle.js";
import { unreachable } from "../protocol/errors.js";

export const SILK_SCHEMA = "N::User { ext: I64, score: I64 }\nE::Follows { From: User, To: User }";
export const NODE_LABEL = "User";
export const EDGE_LABEL = "Follows";
const RESULT_NAME = "n";

/** A read request holding one named query whose result is returned. */
function readRequest(root: unknown): unknown {
  return { request_type: "read", query: { read: { entries: [{ query: { name: RESULT_NAME, root } }], returns: [RESULT_NAME] } } };
}

/**
 * The operation tree (HelixDB v3 wire shape) of one workload, starting at the node named by parameter `start`.
 * Each tree is prepared once and run with a new `start` per query, as HelixQL endpoints run.
 */
export function buildTree(workload: WorkloadName): unknown {
  const start = { nodes: { reference: { param: "start" } } };
  const out = (input: unknown): unknown => ({ out: { input, label: EDGE_LABEL } });
  switch (workload) {
    case "point_get":
      return readRequest({ value_map: { input: start } });
    case "one_hop":
      return readRequest({ id: { input: out(start) } });
    case "two_hop_distinct":
      return readRequest({ count: { input: { dedup: { input: out(out(start)) } } } });
    case "one_hop_filter": {
      const predicate = { gt: { left: { property: "score" }, right: { constant: { i64: SCORE_THRESHOLD } } } };
      return readRequest({ id: { input: { where: { input: out(start), predicate } } } });
    }
    default:
      return unreachable(workload, "workload");
  }
}

export interface WorkloadRequest {
  readonly workload: WorkloadName;
  readonly parameters: { readonly start: string };
}

export class SilkSide {
  private readonly silkIdOfSnap = new Map<number, bigint>();
  private readonly snapOfSilkId = new Map<string, number>();
  private readonly prepared = new Map<WorkloadName, PreparedQuery>();

  private constructor(
    private readonly db: Database,
    private readonly directory: string,
  ) {}

  static async open(silk: SilkModules): Promise<SilkSide> {
    const directory = mkdtempSync(join(tmpdir(), "silk-bench-"));
    const db = await silk.index.open({ storage: { disk: directory }, schema: SILK_SCHEMA });
    return new SilkSide(db, directory);
  }

  /** Loads every edge (and, on first sight, its endpoints) in batches of `batchEdges`; returns the seconds taken. */
  async load(edges: EdgeList, batchEdges: number): Promise<number> {
    const seconds = await importSnapGraph(this.db, edges, batchEdges, this.silkIdOfSnap);
    for (const [snapId, silkId] of this.silkIdOfSnap) this.snapOfSilkId.set(silkId.toString(), snapId);
    return seconds;
  }

  silkIdOf(snapId: number): bigint {
    const id = this.silkIdOfSnap.get(snapId);
    if (id === undefined) throw new Error(`SNAP node ${snapId} was not loaded into Silk`);
    return id;
  }

  /** The request of one workload starting at one SNAP node, built before the clock starts. */
  workloadTree(workload: WorkloadName, snapId: number): WorkloadRequest {
    return { workload, parameters: { start: this.silkIdOf(snapId).toString() } };
  }

  /** Prepares every workload's tree (once, before any clock starts). */
  async prepareWorkloads(workloads: readonly WorkloadName[]): Promise<void> {
    for (const workload of workloads) this.prepared.set(workload, await this.db.prepare(buildTree(workload)));
  }

  /** A read of one named query whose result is returned, prepared (bench/read-shapes.ts's trees). */
  prepareRead(root: unknown): Promise<PreparedQuery> {
    return this.db.prepare(readRequest(root));
  }

  run(request: WorkloadRequest): Promise<QueryResult> {
    const prepared = this.prepared.get(request.workload);
    if (prepared === undefined) throw new Error(`workload ${request.workload} was not prepared`);
    return prepared.run(request.parameters);
  }

  /** How many User nodes the database holds (a sanity check of the load, not a timed workload). */
  async nodeCount(): Promise<number> {
    const result = await this.db.run(readRequest({ count: { input: { nodes: { reference: "all" } } } }));
    return Number(result[RESULT_NAME]);
  }

  /** A query result in the oracle's normalized form (SNAP IDs; an ID Silk never handed out shows as "?"). */
  normalize(workload: WorkloadName, result: QueryResult): string {
    const value = result[RESULT_NAME];
    switch (workload) {
      case "point_get": {
        if (!Array.isArray(value) || value.length !== 1) return `not one record: ${JSON.stringify(value)}`;
        const row = value[0] as Record<string, unknown>;
        return pointAnswer(row.ext, row.score);
      }
      case "one_hop":
      case "one_hop_filter":
        if (!Array.isArray(value)) return `not a list: ${JSON.stringify(value)}`;
        return listAnswer(value.map((id) => this.snapOfSilkId.get(String(id)) ?? Number.NaN));
      case "two_hop_distinct":
        return String(value);
      default:
        return unreachable(workload, "workload");
    }
  }

  async close(): Promise<void> {
    await this.db.close();
    rmSync(this.directory, { recursive: true, force: true });
  }
}

/**
 * Loads every edge of a SNAP list through `importBatch`, `batchEdges` at a time, creating each endpoint the first time
 * an edge names it (`ext` = SNAP ID, `score`); fills `silkIdOfSnap` and returns the seconds taken.
 */
export async function importSnapGraph(db: Pick<Database, "importBatch">, edges: EdgeList, batchEdges: number, silkIdOfSnap: Map<number, bigint>): Promise<number> {
  const started = nowMillis();
  for (let first = 0; first < edges.sources.length; first += batchEdges) {
    const last = Math.min(edges.sources.length, first + batchEdges);
    const nodes: ImportNode[] = [];
    const newSnapIds: number[] = [];
    const batchIndexOfSnap = new Map<number, number>();
    const endpoint = (snapId: number): ImportEndpoint => {
      const existing = silkIdOfSnap.get(snapId);
      if (existing !== undefined) return { id: existing };
      let index = batchIndexOfSnap.get(snapId);
      if (index === undefined) {
        index = nodes.length;
        batchIndexOfSnap.set(snapId, index);
        nodes.push({ label: NODE_LABEL, props: { ext: snapId, score: scoreOf(snapId) } });
        newSnapIds.push(snapId);
      }
      return { batch: index };
    };
    const batchEdgesList: ImportEdge[] = [];
    for (let i = first; i < last; i += 1) {
      batchEdgesList.push({ label: EDGE_LABEL, from: endpoint(edges.sources[i]), to: endpoint(edges.targets[i]), props: {} });
    }
    const result = await db.importBatch({ nodes, edges: batchEdgesList });
    newSnapIds.forEach((snapId, i) => silkIdOfSnap.set(snapId, result.nodeIds[i]));
  }
  return secondsSince(started);
}
