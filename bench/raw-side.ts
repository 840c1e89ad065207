/**
 * The raw baselines: a separate lmdb-js environment holding the graph's records (node and edge records encoded by
 * Silk's own encodeRecord, a label index) and its adjacency in one of the two leanest layouts this stack allows (the
 * issue's "one key per edge" and "one packed value per node"), read by tight synchronous loops over `get` and
 * `getRange`. No executor, no operation tree, no transport: what is left is the cost of LMDB and lmdb-js on this
 * machine with that layout.
 *
 * - `per_edge`: key `owner(8) | label | 0x00 | edge(8)`, value `other(8) | kind(1)` (Silk's layout up to format 2);
 *   a 1-hop is one `getRange`.
 * - `packed`: key `owner(8) | label`, value the neighbours' IDs as 8-byte big-endian integers, appended in edge
 *   order; a 1-hop is one `getBinaryFast`. A load reads each touched owner's list once per batch and writes it back.
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
import { unreachable } from "../protocol/errors.js";

const EMPTY = Buffer.alloc(0);
const TWO_POW_32 = 2 ** 32;
const ID_BYTES = 8;
const KIND_NODE = 0x4e;

export type RawLayout = "per_edge" | "packed";
export const RAW_LAYOUTS: readonly RawLayout[] = ["per_edge", "packed"];

function writeId(target: Buffer, id: bigint, at: number): void {
  target.writeBigUInt64BE(id, at);
}

/** `owner | label | 0x00 | edge` (per_edge layout). */
function edgeKey(owner: bigint, label: string, edge: bigint): Buffer {
  const labelBytes = Buffer.byteLength(label);
  const key = Buffer.allocUnsafe(ID_BYTES + labelBytes + 1 + ID_BYTES);
  writeId(key, owner, 0);
  key.write(label, ID_BYTES);
  key[ID_BYTES + labelBytes] = 0;
  writeId(key, edge, ID_BYTES + labelBytes + 1);
  return key;
}

/** The keys of one owner's edges of one label (per_edge layout). */
function edgeRange(owner: bigint, label: string): { start: Buffer; end: Buffer } {
  const start = edgeKey(owner, label, 0n).subarray(0, ID_BYTES + Buffer.byteLength(label) + 1);
  const end = Buffer.from(start);
  end[end.length - 1] = 1;
  return { start, end };
}

/** `owner | label` (packed layout). */
function listKey(owner: bigint, label: string): Buffer {
  const key = Buffer.allocUnsafe(ID_BYTES + Buffer.byteLength(label));
  writeId(key, owner, 0);
  key.write(label, ID_BYTES);
  return key;
}

function otherValue(other: bigint): Buffer {
  const value = Buffer.allocUnsafe(ID_BYTES + 1);
  writeId(value, other, 0);
  value[ID_BYTES] = KIND_NODE;
  return value;
}

/**
 * The ID in the first 8 bytes of an adjacency value as a JS number. Exact while IDs stay below 2^53, which the
 * loader asserts; a Set of numbers is the fastest distinct-set lmdb-js code can build.
 */
function targetNumber(value: Buffer, at = 0): number {
  return value.readUInt32BE(at) * TWO_POW_32 + value.readUInt32BE(at + 4);
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
  /** Packed layout: the list key of one label, rewritten per read (owner bytes only). */
  private readonly listKeyBuffer = listKey(0n, EDGE_LABEL);
  /** A node record key, rewritten per read. */
  private readonly nodeKeyBuffer = Buffer.alloc(ID_BYTES);

  private constructor(
    private readonly directory: string,
    silk: SilkModules,
    readonly layout: RawLayout,
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

  static open(silk: SilkModules, layout: RawLayout): RawSide {
    return new RawSide(mkdtempSync(join(tmpdir(), "silk-bench-raw-")), silk, layout);
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
    const appendedOut = new Map<bigint, bigint[]>();
    const appendedIn = new Map<bigint, bigint[]>();
    const append = (lists: Map<bigint, bigint[]>, owner: bigint, other: bigint): void => {
      const list = lists.get(owner);
      if (list === undefined) lists.set(owner, [other]);
      else list.push(other);
    };
    endpoints.forEach(([from, to], i) => {
      const edge = edgeIds[i];
      this.edgeRecords.putSync(
        keys.idKey(edge),
        this.encodeRecord({ kind: "edge", id: edge, label: EDGE_LABEL, from, to, fromKind: "node", toKind: "node", props: {} }),
      );
      if (this.layout === "per_edge") {
        this.outgoing.putSync(edgeKey(from, EDGE_LABEL, edge), otherValue(to));
        this.incoming.putSync(edgeKey(to, EDGE_LABEL, edge), otherValue(from));
      } else {
        append(appendedOut, from, to);
        append(appendedIn, to, from);
      }
    });
    this.appendLists(this.outgoing, appendedOut);
    this.appendLists(this.incoming, appendedIn);
    this.meta.putSync("next_id", this.nextId);
  }

  /** Packed layout: each owner's list read once, the batch's neighbours appended, written back. */
  private appendLists(database: LmdbDatabase<Buffer, Buffer>, lists: ReadonlyMap<bigint, readonly bigint[]>): void {
    for (const [owner, others] of lists) {
      const key = listKey(owner, EDGE_LABEL);
      const before = database.get(key);
      const length = before === undefined ? 0 : before.length;
      const value = Buffer.allocUnsafe(length + others.length * ID_BYTES);
      if (before !== undefined) before.copy(value, 0);
      others.forEach((other, i) => writeId(value, other, length + i * ID_BYTES));
      database.putSync(key, value);
    }
  }

  /** Packed layout: the owner's list, valid until the next read. */
  private packedList(owner: bigint): Buffer | undefined {
    const key = this.listKeyBuffer;
    writeId(key, owner, 0);
    return this.outgoing.getBinaryFast(key);
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
    if (this.layout === "per_edge") {
      for (const { value } of this.outgoing.getRange(edgeRange(id, EDGE_LABEL))) targets.push(targetNumber(value));
      return targets;
    }
    const list = this.packedList(id);
    if (list !== undefined) for (let at = 0; at < list.length; at += ID_BYTES) targets.push(targetNumber(list, at));
    return targets;
  }

  twoHopDistinct(id: bigint): number {
    const reached = new Set<number>();
    if (this.layout === "per_edge") {
      for (const { value } of this.outgoing.getRange(edgeRange(id, EDGE_LABEL))) {
        for (const second of this.outgoing.getRange(edgeRange(value.readBigUInt64BE(0), EDGE_LABEL))) reached.add(targetNumber(second.value));
      }
      return reached.size;
    }
    // The first list is copied out: the second reads reuse lmdb-js's read buffer.
    for (const middle of this.oneHop(id)) {
      const list = this.packedList(BigInt(middle));
      if (list !== undefined) for (let at = 0; at < list.length; at += ID_BYTES) reached.add(targetNumber(list, at));
    }
    return reached.size;
  }

  oneHopFilter(id: bigint): number[] {
    const kept: number[] = [];
    const key = this.nodeKeyBuffer;
    for (const target of this.oneHop(id)) {
      key.writeUInt32BE(Math.floor(target / TWO_POW_32), 0);
      key.writeUInt32BE(target >>> 0, 4);
      const bytes = this.nodes.get(key);
      if (bytes !== undefined && (this.packr.unpack(bytes) as [string, NodeProps])[1].score > SCORE_THRESHOLD) kept.push(target);
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
      default:
        return unreachable(workload, "workload");
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
      default:
        return unreachable(workload, "workload");
    }
  }

  async close(): Promise<void> {
    await this.root.close();
    rmSync(this.directory, { recursive: true, force: true });
  }
}
