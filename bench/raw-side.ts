/**
 * The raw ceiling: a separate lmdb-js environment holding the same bytes Silk would write for the same graph (the
 * key layout of node/keys.ts, node and edge records encoded by Silk's own encodeRecord), read by tight
 * synchronous loops over `get` and `getRange`. No executor, no operation tree, no transport: what is left is the
 * cost of LMDB and lmdb-js on this machine, the best any engine on this stack can do with this layout.
 *
 * Fairness: each query reads through lmdb-js's implicit read transaction, which is one consistent snapshot for the
 * length of a synchronous query, and returns the same answers as Silk (checked against the oracle). IDs are
 * allocated like Silk's importBatch does (one counter; per batch the new nodes, then the edges).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open as openLmdb, type Database as LmdbDatabase, type RootDatabase } from "lmdb";
import type { EdgeList } from "./datasets.js";
import { nowMillis, secondsSince } from "./measure.js";
import { listAnswer, pointAnswer, scoreOf, SCORE_THRESHOLD, type WorkloadName } from "./oracle.js";
import { EDGE_LABEL, NODE_LABEL } from "./silk-side.js";
import type { SilkModules } from "./silk-modules.js";

const EMPTY = Buffer.alloc(0);
const TWO_POW_32 = 2 ** 32;

/**
 * The ID in the first 8 bytes of an adjacency value as a JS number. Exact while IDs stay below 2^53, which the
 * loader asserts; a Set of numbers is the fastest distinct-set lmdb-js code can build.
 */
function targetNumber(value: Buffer): number {
  return value.readUInt32BE(0) * TWO_POW_32 + value.readUInt32BE(4);
}

type NodeProps = { ext: number; score: number };

export class RawSide {
  private readonly root: RootDatabase;
  private readonly nodes: LmdbDatabase<Buffer, Buffer>;
  private readonly edgeRecords: LmdbDatabase<Buffer, Buffer>;
  private readonly outgoing: LmdbDatabase<Buffer, Buffer>;
  private readonly incoming: LmdbDatabase<Buffer, Buffer>;
  private readonly labels: LmdbDatabase<Buffer, Buffer>;
  private readonly meta: LmdbDatabase;
  private nextId = 1n;
  private readonly rawIdOfSnap = new Map<number, bigint>();
  private readonly snapOfRawId = new Map<number, number>();

  private readonly keys: SilkModules["keys"];
  private readonly packr: SilkModules["packr"];
  private readonly encodeRecord: SilkModules["encodeRecord"];

  private constructor(
    private readonly directory: string,
    silk: SilkModules,
  ) {
    this.keys = silk.keys;
    this.packr = silk.packr;
    this.encodeRecord = silk.encodeRecord;
    this.root = openLmdb({ path: directory, maxDbs: 16, encoding: "binary" });
    const binary = (name: string): LmdbDatabase<Buffer, Buffer> =>
      this.root.openDB<Buffer, Buffer>({ name, keyEncoding: "binary", encoding: "binary" });
    this.nodes = binary("nodes");
    this.edgeRecords = binary("edges");
    this.outgoing = binary("out");
    this.incoming = binary("in");
    this.labels = binary("labels");
    this.meta = this.root.openDB({ name: "meta", encoding: "msgpack" });
  }

  static open(silk: SilkModules): RawSide {
    return new RawSide(mkdtempSync(join(tmpdir(), "silk-bench-raw-")), silk);
  }

  private allocate(): bigint {
    const id = this.nextId;
    this.nextId += 1n;
    if (id >= 2n ** 53n) throw new Error("raw loop IDs must stay below 2^53");
    return id;
  }

  /** Writes the graph in batches of `batchEdges`, one `transactionSync` per batch, as Silk commits a batch. */
  load(edges: EdgeList, batchEdges: number): number {
    const started = nowMillis();
    for (let first = 0; first < edges.sources.length; first += batchEdges) {
      const last = Math.min(edges.sources.length, first + batchEdges);
      const newNodes: [bigint, number][] = [];
      const idOf = (snapId: number): bigint => {
        let id = this.rawIdOfSnap.get(snapId);
        if (id === undefined) {
          id = this.allocate();
          this.rawIdOfSnap.set(snapId, id);
          newNodes.push([id, snapId]);
        }
        return id;
      };
      const endpoints: [bigint, bigint][] = [];
      for (let i = first; i < last; i += 1) endpoints.push([idOf(edges.sources[i]), idOf(edges.targets[i])]);
      const edgeIds = endpoints.map(() => this.allocate());
      this.root.transactionSync(() => this.writeBatch(newNodes, endpoints, edgeIds));
    }
    for (const [snapId, id] of this.rawIdOfSnap) this.snapOfRawId.set(Number(id), snapId);
    return secondsSince(started);
  }

  private writeBatch(newNodes: readonly [bigint, number][], endpoints: readonly [bigint, bigint][], edgeIds: readonly bigint[]): void {
    const { keys, packr } = this;
    for (const [id, snapId] of newNodes) {
      this.nodes.putSync(keys.idKey(id), packr.pack([NODE_LABEL, { ext: snapId, score: scoreOf(snapId) }]));
      this.labels.putSync(keys.labelKey("node", NODE_LABEL, id), EMPTY);
    }
    endpoints.forEach(([from, to], i) => {
      const edge = edgeIds[i];
      this.edgeRecords.putSync(
        keys.idKey(edge),
        this.encodeRecord({ kind: "edge", id: edge, label: EDGE_LABEL, from, to, fromKind: "node", toKind: "node", props: {} }),
      );
      this.outgoing.putSync(keys.adjacencyKey(from, EDGE_LABEL, edge), keys.adjacencyValue(to, "node"));
      this.incoming.putSync(keys.adjacencyKey(to, EDGE_LABEL, edge), keys.adjacencyValue(from, "node"));
    });
    this.meta.putSync("next_id", this.nextId);
  }

  rawIdOf(snapId: number): bigint {
    const id = this.rawIdOfSnap.get(snapId);
    if (id === undefined) throw new Error(`SNAP node ${snapId} was not loaded into the raw environment`);
    return id;
  }

  pointGet(id: bigint): NodeProps | undefined {
    const bytes = this.nodes.get(this.keys.idKey(id));
    return bytes === undefined ? undefined : (this.packr.unpack(bytes) as [string, NodeProps])[1];
  }

  oneHop(id: bigint): number[] {
    const targets: number[] = [];
    for (const { value } of this.outgoing.getRange(this.keys.adjacencyRange(id, EDGE_LABEL))) targets.push(targetNumber(value));
    return targets;
  }

  twoHopDistinct(id: bigint): number {
    const reached = new Set<number>();
    for (const { value } of this.outgoing.getRange(this.keys.adjacencyRange(id, EDGE_LABEL))) {
      for (const second of this.outgoing.getRange(this.keys.adjacencyRange(value.readBigUInt64BE(0), EDGE_LABEL))) {
        reached.add(targetNumber(second.value));
      }
    }
    return reached.size;
  }

  oneHopFilter(id: bigint): number[] {
    const kept: number[] = [];
    for (const { value } of this.outgoing.getRange(this.keys.adjacencyRange(id, EDGE_LABEL))) {
      // The first 8 bytes of an adjacency value are the target's ID, big-endian: exactly its node record key.
      const bytes = this.nodes.get(value.subarray(0, 8));
      if (bytes !== undefined && (this.packr.unpack(bytes) as [string, NodeProps])[1].score > SCORE_THRESHOLD) kept.push(targetNumber(value));
    }
    return kept;
  }

  /** The query function of one workload; its answer goes through `normalize`. */
  query(workload: WorkloadName): (id: bigint) => unknown {
    switch (workload) {
      case "point_get":
        return (id) => this.pointGet(id);
      case "one_hop":
        return (id) => this.oneHop(id);
      case "two_hop_distinct":
        return (id) => this.twoHopDistinct(id);
      case "one_hop_filter":
        return (id) => this.oneHopFilter(id);
      default: {
        const unreachable: never = workload;
        throw new Error(`unknown workload ${String(unreachable)}`);
      }
    }
  }

  normalize(workload: WorkloadName, answer: unknown): string {
    switch (workload) {
      case "point_get": {
        const props = answer as NodeProps | undefined;
        return props === undefined ? "missing record" : pointAnswer(props.ext, props.score);
      }
      case "one_hop":
      case "one_hop_filter":
        return listAnswer((answer as number[]).map((id) => this.snapOfRawId.get(id) ?? Number.NaN));
      case "two_hop_distinct":
        return String(answer);
      default: {
        const unreachable: never = workload;
        throw new Error(`unknown workload ${String(unreachable)}`);
      }
    }
  }

  async close(): Promise<void> {
    await this.root.close();
    rmSync(this.directory, { recursive: true, force: true });
  }
}
