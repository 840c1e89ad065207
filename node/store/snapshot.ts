/**
 * A consistent read view of one partition store: one LMDB read transaction, through which every read of an
 * invocation goes (records, adjacency, labels, index lookups, searches, a range's export).
 */
import { type Database, type RootDatabase, type Transaction } from "lmdb";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type {
  AdjacencyEntry,
  Direction,
  IdRange,
  IndexRange,
  RecordKind,
  SearchHit,
  StoredRecord,
  TextSearchRequest,
  VectorSearchRequest,
} from "../../protocol/records.js";
import { adjacencyRange, ID_BYTES, idKey, labelRange, readId } from "../keys.js";
import {
  adjacencyBlockLabel,
  adjacencyHeadKey,
  hasLaterBlocks,
  laterBlocksRange,
  readBlockEntries,
  readBlockNeighbours,
} from "./adjacency.js";
import type { IndexCatalog } from "../indexes/index-catalog.js";
import { decodeRecord, decodeVectorProps } from "../record-codec.js";
import { rangeMutationsOf } from "./range-mutations.js";

/**
 * Close it when the invocation ends so LMDB can reuse the pages it pins.
 *
 * A snapshot is `held` (it takes a read transaction at once and keeps it until closed: reads may await in between)
 * or a synchronous one, for a run of reads that neither yields nor commits (the partition actor's reads at once): its
 * reads go through lmdb-js's shared read transaction, which lmdb-js resets only when this process commits and in a
 * timer callback, so every read of such a run sees one state (other processes' commits included, as with a held
 * snapshot) without taking and releasing a transaction, a fifth of a point read's own cost. It takes that same
 * transaction only for the reads that need one passed (searches, index lookups, exports).
 */
export class Snapshot {
  private transaction: Transaction | undefined;
  private readOptions: { transaction: Transaction } | undefined;

  constructor(
    private readonly root: RootDatabase,
    /** Whether the snapshot took its read transaction at once and keeps it: reads may then await in between. */
    readonly keptAcrossAwaits: boolean,
    private readonly records: Record<RecordKind, Database<Buffer, Buffer>>,
    private readonly vectorProps: Database<Buffer, Buffer>,
    private readonly adjacencyDbs: Record<Direction, Database<Buffer, Buffer>>,
    private readonly labels: Database<Buffer, Buffer>,
    private readonly indexes: IndexCatalog,
  ) {
    if (keptAcrossAwaits) this.held();
  }

  /** The snapshot's read transaction, taken on first need by a synchronous snapshot (the one its reads already use). */
  private held(): Transaction {
    if (this.transaction === undefined) {
      this.transaction = this.root.useReadTransaction();
      this.readOptions = { transaction: this.transaction };
    }
    return this.transaction;
  }

  vectorSearch(request: VectorSearchRequest): SearchHit[] {
    return this.indexes.vectorSearch(this.held(), request);
  }

  /** The records and in-adjacency entries of an ID range as an encoded `put` mutation list (rebalancing copies it). */
  exportRange(range: IdRange): Uint8Array {
    return encodeMutations(rangeMutationsOf(this.records, this.adjacencyDbs, range, "put", this.held()));
  }

  textSearch(request: TextSearchRequest): SearchHit[] {
    return this.indexes.textSearch(this.held(), request);
  }

  /** Records of a label whose indexed field lies in any range, ascending; undefined unless the index is active. */
  indexIds(kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): bigint[] | undefined {
    return this.indexes.lookup(this.held(), kind, label, field, ranges);
  }

  /** Decoded straight from lmdb-js's reused read buffer: decodeRecord keeps nothing of it. */
  record(kind: RecordKind, id: bigint): StoredRecord | undefined {
    const bytes = this.readFast(this.records[kind], id);
    return bytes === undefined ? undefined : decodeRecord(kind, id, bytes);
  }

  /**
   * A vector record with its label and properties but not its vector (VECTOR_NOT_LOADED), for plans that cannot look
   * at vectors (vector-reads.ts). A record written before Silk kept these values apart has none: it is read whole.
   */
  vectorRecordProps(id: bigint): StoredRecord | undefined {
    const bytes = this.readFast(this.vectorProps, id);
    return bytes === undefined ? this.record("vector", id) : decodeVectorProps(id, bytes);
  }

  exists(kind: RecordKind, id: bigint): boolean {
    return this.readFast(this.records[kind], id) !== undefined;
  }

  /** The stored value, valid only until the next read of this environment. */
  private readFast(database: Database<Buffer, Buffer>, id: bigint): Buffer | undefined {
    return this.readFastKey(database, idKey(id));
  }

  private readFastKey(database: Database<Buffer, Buffer>, key: Buffer): Buffer | undefined {
    // getBinaryFast takes read options at run time (lmdb-js 3.5 read.js), though its typings omit them. A value of
    // 16 MiB or more comes back as a plain Uint8Array over LMDB's memory map, which the decoders read as a Buffer.
    const read = database.getBinaryFast as (key: Buffer, options: { transaction: Transaction } | undefined) => Uint8Array | undefined;
    const bytes = read.call(database, key, this.readOptions);
    return bytes === undefined || Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** One owner's edges (of one label, or of all in label order), in edge ID order within a label. */
  adjacency(owner: bigint, direction: Direction, label?: string): AdjacencyEntry[] {
    const entries: AdjacencyEntry[] = [];
    if (label !== undefined) {
      this.readList(owner, direction, label, (value) => readBlockEntries(value, label, entries));
      return entries;
    }
    for (const { key, value } of this.adjacencyDbs[direction].getRange({ ...adjacencyRange(owner), transaction: this.cursorTransaction() })) {
      readBlockEntries(value, adjacencyBlockLabel(key), entries);
    }
    return entries;
  }

  /** Appends the other ends of one owner's edges to `into` (no edge IDs decoded: the hot path of Out and In). */
  neighbours(owner: bigint, direction: Direction, label: string | undefined, into: { kind: "node" | "vector"; id: bigint }[]): void {
    if (label !== undefined) {
      this.readList(owner, direction, label, (value) => readBlockNeighbours(value, into));
      return;
    }
    for (const { value } of this.adjacencyDbs[direction].getRange({ ...adjacencyRange(owner), transaction: this.cursorTransaction() })) {
      readBlockNeighbours(value, into);
    }
  }

  /**
   * Hands each block of one list to `read`, in order: the head by one point read (most lists are that one block),
   * the later blocks, when its flag says there are any, by one range. Each value is valid only during its call.
   */
  private readList(owner: bigint, direction: Direction, label: string, read: (value: Buffer) => void): void {
    const database = this.adjacencyDbs[direction];
    const headKey = adjacencyHeadKey(owner, label);
    const head = this.readFastKey(database, headKey);
    if (head === undefined) return;
    const more = hasLaterBlocks(head);
    read(head);
    if (!more) return;
    for (const { value } of database.getRange({ ...laterBlocksRange(headKey), transaction: this.cursorTransaction() })) read(value);
  }

  /**
   * The transaction option for range reads. Passing a transaction makes lmdb-js open a fresh native cursor per
   * range (it costs about a third of a short adjacency scan); while this snapshot's transaction is still lmdb-js's
   * current shared read transaction (`notCurrent` unset), an implicit read uses that same transaction and reuses a
   * cached cursor, so the snapshot is the same either way.
   */
  private cursorTransaction(): Transaction | undefined {
    return (this.transaction as (Transaction & { notCurrent?: boolean }) | undefined)?.notCurrent ? this.transaction : undefined;
  }

  /**
   * Every ID of one kind and label, in ID order. Nodes and vectors have a label index; edges do not (it would cost
   * a quarter of every edge write), so an edge label is a scan of the out-adjacency blocks, whose keys carry the label.
   */
  idsOfLabel(kind: RecordKind, label: string): bigint[] {
    if (kind === "edge") return this.edgeIdsOfLabel(label);
    const ids: bigint[] = [];
    for (const key of this.labels.getKeys({ ...labelRange(kind, label), transaction: this.transaction })) {
      ids.push(readId(key, key.length - ID_BYTES));
    }
    return ids;
  }

  private edgeIdsOfLabel(label: string): bigint[] {
    const entries: AdjacencyEntry[] = [];
    const wanted = Buffer.from(label, "utf8");
    for (const { key, value } of this.adjacencyDbs.out.getRange({ transaction: this.transaction })) {
      if (key[ID_BYTES + wanted.length] === 0 && wanted.equals(key.subarray(ID_BYTES, ID_BYTES + wanted.length))) readBlockEntries(value, label, entries);
    }
    return entries.map((entry) => entry.edge).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /**
   * The IDs of one kind (and node or vector label, when given) in ID order, as the keys are read: a caller over a
   * snapshot kept across awaits may pause between them (TxnView paces long scans so). Edges of a label are not
   * offered: their scan of the adjacency keys ends in a sort.
   */
  idKeys(kind: "node" | "vector", label: string | undefined): Generator<bigint>;
  idKeys(kind: "edge", label: undefined): Generator<bigint>;
  *idKeys(kind: RecordKind, label: string | undefined): Generator<bigint> {
    if (label === undefined) {
      for (const key of this.records[kind].getKeys({ transaction: this.transaction })) yield readId(key);
      return;
    }
    for (const key of this.labels.getKeys({ ...labelRange(kind, label), transaction: this.transaction })) yield readId(key, key.length - 8);
  }

  /**
   * How many records of one kind (and node or vector label, when given) there are, counted by LMDB over the keys
   * without decoding one; undefined for an edge label, which has no label index to count.
   */
  countIds(kind: RecordKind, label: string | undefined): number | undefined {
    if (label === undefined) return this.records[kind].getKeysCount({ transaction: this.transaction });
    if (kind === "edge") return undefined;
    return this.labels.getKeysCount({ ...labelRange(kind, label), transaction: this.transaction });
  }

  /** Every ID of one kind, in ID order. */
  allIds(kind: RecordKind): bigint[] {
    const ids: bigint[] = [];
    for (const key of this.records[kind].getKeys({ transaction: this.transaction })) ids.push(readId(key));
    return ids;
  }

  close(): void {
    this.transaction?.done();
  }
}
