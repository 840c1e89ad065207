/**
 * One partition's storage: an LMDB environment holding the partition's records, adjacency, label index, secondary
 * indexes, ID counter and prepared two-phase-commit intents (layout in keys.ts; indexes in secondary-index.ts). It has three faces: `snapshot()` for consistent reads,
 * `apply()` for a single-partition commit, and `prepare()`/`commitPrepared()`/`abortPrepared()` for two-phase commit.
 *
 * Architecture invariant: every change to a partition happens inside one `transactionSync`, so a crash leaves the
 * partition either before or after a transaction, never inside one.
 */
import { open, type Database, type RootDatabase, type Transaction } from "lmdb";
import { Packr } from "msgpackr";
import { SilkError } from "../protocol/errors.js";
import { writeU64 } from "../protocol/ids.js";
import {
  ENDPOINT_KIND_BYTES,
  visitMutations,
  type EncodedLabel,
  type EncodedRecord,
  encodeMutations,
} from "../protocol/mutation-codec.js";
import type {
  AdjacencyEntry,
  Direction,
  IdRange,
  IndexRange,
  Mutation,
  RecordKind,
  SearchHit,
  StoredRecord,
  TextSearchRequest,
  VectorSearchRequest,
} from "../protocol/records.js";
import type { Properties } from "../protocol/values.js";
import {
  adjacencyKeyEdge,
  adjacencyKeyFrom,
  adjacencyKeyLabel,
  adjacencyRange,
  adjacencyValueFrom,
  adjacencyValueKind,
  copyBytes,
  idKey,
  ID_BYTES,
  labelKey,
  labelKeyFrom,
  labelRange,
  readId,
} from "./keys.js";
import type { IndexDefinition, IndexStatus, SecondaryIndexDefinition } from "../protocol/indexes.js";
import { IndexCatalog } from "./index-catalog.js";
import type { IndexedRecord, ScanChunk, ScannedRecord } from "./index-family.js";

/** msgpackr settings shared by every stored value: bigints and typed arrays round-trip exactly. */
export const packr = new Packr({ useRecords: false, moreTypes: true, useBigIntExtension: true });

export interface PartitionStoreOptions {
  readonly path: string;
  readonly readOnly: boolean;
  /** Skips fsync: used by memory storage, whose files live in a temporary directory and die with the handle. */
  readonly noSync: boolean;
  /** This partition's ID range, inclusive at both ends. */
  readonly idFirst: bigint;
  readonly idLast: bigint;
  /** LMDB page cache hint (map size in bytes); fixed for the life of the handle. */
  readonly mapSizeBytes?: number;
  /**
   * The indexes the schema declares (protocol/schema-indexes.ts). A writer's open drops the partition's indexes
   * not among them and registers new ones, to be built by `buildIndexChunk`.
   */
  readonly indexes?: readonly IndexDefinition[];
}

type StoredNode = [label: string, props: Properties];
type StoredVector = [label: string, vector: Float64Array, props: Properties];

const META_NEXT_ID = "next_id";
/** The sequence of the last replicated-log entry applied (cluster mode; node/log-entry.ts). */
const META_LOG_SEQUENCE = "log_sequence";
/** The last ID of the block the leader reserved through the log (cluster mode): no replica hands out IDs up to it. */
const META_RESERVED_TO = "reserved_to";
/** The ID ranges this partition owns when they differ from its allocation range (after a rebalance). */
const META_OWNED_RANGES = "owned_ranges";
const EMPTY = Buffer.alloc(0);

export class PartitionStore {
  readonly idFirst: bigint;
  readonly idLast: bigint;
  private readonly root: RootDatabase;
  private readonly meta: Database;
  private readonly records: Record<RecordKind, Database<Buffer, Buffer>>;
  private readonly adjacency: Record<Direction, Database<Buffer, Buffer>>;
  private readonly labels: Database<Buffer, Buffer>;
  private readonly intents: Database<Buffer, string>;
  private readonly indexes: IndexCatalog;
  private nextId: bigint;
  /** Cluster mode: IDs up to this one are reserved through the log; allocation stops there (see `spareIds`). */
  private reservedTo: bigint | undefined;
  /** The log sequence the next write transaction records (set by `atLogSequence`). */
  private pendingLogSequence: number | undefined;
  /** The ID ranges this partition owns, ascending and disjoint: its allocation range, until a rebalance moves some. */
  private owned: IdRange[] = [];
  /** The same ranges as 8-byte keys, for comparing IDs inside encoded lists without BigInts. */
  private ownedKeys: [Buffer, Buffer][] = [];

  private constructor(options: PartitionStoreOptions) {
    this.idFirst = options.idFirst;
    this.idLast = options.idLast;
    this.root = open({
      path: options.path,
      readOnly: options.readOnly,
      noSync: options.noSync,
      mapSize: options.mapSizeBytes,
      maxDbs: 16,
      encoding: "binary",
    });
    const binary = (name: string): Database<Buffer, Buffer> =>
      this.root.openDB<Buffer, Buffer>({ name, keyEncoding: "binary", encoding: "binary" });
    this.meta = this.root.openDB({ name: "meta", encoding: "msgpack" });
    this.records = { node: binary("nodes"), edge: binary("edges"), vector: binary("vectors") };
    this.adjacency = { out: binary("out"), in: binary("in") };
    this.labels = binary("labels");
    this.intents = this.root.openDB<Buffer, string>({ name: "intents", encoding: "binary" });
    const stored = this.meta.get(META_NEXT_ID) as bigint | number | undefined;
    this.nextId = stored === undefined ? (this.idFirst === 0n ? 1n : this.idFirst) : BigInt(stored);
    const reserved = this.meta.get(META_RESERVED_TO) as bigint | number | undefined;
    this.reservedTo = reserved === undefined ? undefined : BigInt(reserved);
    const owned = this.meta.get(META_OWNED_RANGES) as { first: bigint | number; last: bigint | number }[] | undefined;
    this.setOwnedInMemory(owned === undefined ? [{ first: this.idFirst, last: this.idLast }] : owned.map((range) => ({ first: BigInt(range.first), last: BigInt(range.last) })));
    this.indexes = new IndexCatalog({ meta: this.meta, secondary: binary("index"), text: binary("text") }, {
      record: (kind, key) => this.committedRecord(kind, key),
      scan: (kind, label, after, limit) => this.scanLabel(kind, label, after, limit),
      hasLabel: (kind, label) => this.scanLabel(kind, label, undefined, 1).records.length > 0,
    }, options.indexes ?? []);
    if (!options.readOnly) {
      const indexes = this.indexes;
      indexes.adopt(this.transact(() => indexes.reconcile()));
    }
  }

  static open(options: PartitionStoreOptions): PartitionStore {
    return new PartitionStore(options);
  }

  owns(id: bigint): boolean {
    return this.ownedRangeOf(id) !== undefined;
  }

  private ownedRangeOf(id: bigint): IdRange | undefined {
    for (const range of this.owned) if (id >= range.first && id <= range.last) return range;
    return undefined;
  }

  /** The ID ranges this partition owns, ascending. */
  ownedRanges(): readonly IdRange[] {
    return this.owned;
  }

  /**
   * Rebalancing, the receiving side: from now on this partition also owns `ranges` (a log entry, so every replica
   * agrees). The records arrive afterwards as ordinary writes.
   */
  addOwnedRanges(ranges: readonly IdRange[]): void {
    this.setOwned(mergeRanges([...this.owned, ...ranges]));
  }

  /**
   * Rebalancing, the giving side: deletes every record whose ID lies in `range` (with its out-adjacency, label and
   * index entries) and every in-adjacency entry whose target does, then stops owning the range, in one transaction
   * (a log entry: every replica deletes the same from the same state).
   */
  dropRange(range: IdRange): void {
    const deletions = this.rangeMutations(range, "delete");
    this.transact(() => {
      if (deletions.length > 0) this.write(encodeMutations(deletions));
      this.putOwned(subtractRange(this.owned, range));
    });
    this.setOwnedInMemory(subtractRange(this.owned, range));
  }

  private setOwned(ranges: IdRange[]): void {
    this.transact(() => this.putOwned(ranges));
    this.setOwnedInMemory(ranges);
  }

  private setOwnedInMemory(ranges: IdRange[]): void {
    this.owned = ranges;
    this.ownedKeys = ranges.map((range) => [idKey(range.first), idKey(range.last)]);
  }

  private putOwned(ranges: readonly IdRange[]): void {
    this.meta.putSync(META_OWNED_RANGES, ranges.map((range) => ({ first: range.first, last: range.last })));
  }

  /**
   * The records and in-adjacency entries of an ID range as one mutation list: `put` to copy them to another
   * partition (rebalancing exports it from a snapshot), `delete` to remove them here. Read in the current state.
   */
  private rangeMutations(range: IdRange, op: "put" | "delete"): Mutation[] {
    const after = subtractRange(this.owned, range);
    const stillOwned = (id: bigint): boolean => after.some((kept) => id >= kept.first && id <= kept.last);
    return rangeMutationsOf(this.records, this.adjacency, range, op, undefined, stillOwned);
  }

  /**
   * Hands out a fresh ID from this partition's range. IDs handed to a transaction that later aborts are skipped,
   * never reused: the counter is persisted with every commit as the highest ID the commit wrote, plus one.
   */
  allocateId(): bigint {
    return this.allocateIds(1);
  }

  /** Reserves `count` consecutive IDs and returns the first (all inside one range this partition owns). */
  allocateIds(count: number): bigint {
    const first = this.nextId;
    const range = this.ownedRangeOf(first);
    if (first + BigInt(count) - 1n > this.idLast || range === undefined || first + BigInt(count) - 1n > range.last) {
      throw new SilkError("limit_exceeded", "this partition's ID range is exhausted");
    }
    if (this.reservedTo !== undefined && first + BigInt(count) - 1n > this.reservedTo) {
      throw new SilkError("internal", "internal error (a bug in Silk): IDs handed out beyond the reserved block");
    }
    this.nextId += BigInt(count);
    return first;
  }

  /**
   * Cluster mode: how many IDs can be handed out before the leader must reserve more through the log; unlimited
   * (Infinity) on a partition that is not replicated.
   */
  spareIds(): number {
    if (this.reservedTo === undefined) return Infinity;
    const spare = this.reservedTo - this.nextId + 1n;
    return spare <= 0n ? 0 : spare > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(spare);
  }

  /** The next ID this replica would hand out (a leader reserves its block from here). */
  nextIdToAllocate(): bigint {
    return this.nextId;
  }

  /**
   * Applies a reservation from the log: IDs up to `upTo` belong to the leader that reserved them. Every replica
   * records it (it only grows), so a replica that becomes leader starts after every ID an earlier leader may have
   * handed out.
   */
  reserveIds(upTo: bigint): void {
    if (upTo > this.idLast) throw new SilkError("limit_exceeded", "this partition's ID range is exhausted");
    const next = this.reservedTo !== undefined && this.reservedTo > upTo ? this.reservedTo : upTo;
    this.transact(() => this.meta.putSync(META_RESERVED_TO, next));
    this.reservedTo = next;
  }

  /**
   * A replica that becomes leader hands out IDs only after every reserved one (an earlier leader's included), and only
   * from blocks it reserved through the log itself.
   */
  fenceIds(): void {
    // A store that never saw a reservation hands out nothing until its leader reserved a block through the log.
    if (this.reservedTo === undefined) this.reservedTo = this.nextId - 1n;
    else if (this.nextId <= this.reservedTo) this.nextId = this.reservedTo + 1n;
  }

  /** The sequence of the last replicated-log entry this replica applied; 0 before the first. */
  appliedLogSequence(): number {
    return (this.meta.get(META_LOG_SEQUENCE) as number | undefined) ?? 0;
  }

  /**
   * Runs one log entry's change so that its transaction also records `sequence` as applied: a replica that restarts
   * resumes after the last entry whose effects are on disk, never before or after it. An entry that changes
   * nothing, or that fails with a user error (then on every replica alike), still records the sequence.
   */
  atLogSequence<T>(sequence: number, change: () => T): T {
    this.pendingLogSequence = sequence;
    try {
      const result = change();
      if (this.appliedLogSequence() !== sequence) this.transact(() => undefined);
      return result;
    } catch (cause) {
      // A user error is the entry's deterministic outcome on every replica (the leader answered it): the entry is
      // applied, with no effect. Anything else (a storage failure) leaves it unapplied, to be retried.
      if (cause instanceof SilkError && cause.kind === "user") this.transact(() => undefined);
      throw cause;
    } finally {
      this.pendingLogSequence = undefined;
    }
  }

  snapshot(): Snapshot {
    return new Snapshot(this.root.useReadTransaction(), this.records, this.adjacency, this.labels, this.indexes);
  }

  /** Applies an encoded mutation list (protocol/mutation-codec.ts) as one LMDB transaction. */
  apply(batch: Uint8Array): void {
    this.transact(() => this.write(batch));
  }

  /**
   * Every write transaction: the index families hear whether it committed (in-memory structures follow only
   * committed data) or failed (what they noted is forgotten).
   */
  private transact<T>(body: () => T): T {
    let result: T;
    const sequence = this.pendingLogSequence;
    try {
      result = this.root.transactionSync(
        sequence === undefined
          ? body
          : () => {
              const value = body();
              this.meta.putSync(META_LOG_SEQUENCE, sequence);
              return value;
            },
      );
    } catch (cause) {
      this.indexes.discard();
      throw cause;
    }
    this.indexes.commit();
    return result;
  }

  /**
   * Throws what applying the list would throw (an ID another partition owns, a value an index refuses), changing
   * nothing: a replicated leader validates a write before it appends it to the log, so every replica's apply of a
   * logged entry succeeds.
   */
  validate(batch: Uint8Array): void {
    this.assertOwned(batch);
    if (this.indexes.mayRefuseWrites()) this.rehearse(batch);
  }

  /** Phase one: durably records the intent. The mutations are not visible until `commitPrepared`. */
  prepare(txid: string, batch: Uint8Array): void {
    this.assertOwned(batch);
    if (this.indexes.mayRefuseWrites()) this.rehearse(batch);
    this.transact(() => {
      this.intents.putSync(txid, Buffer.from(batch.buffer, batch.byteOffset, batch.byteLength));
    });
  }

  /** Phase two, commit: applies the intent and forgets it in one transaction. Idempotent. */
  commitPrepared(txid: string): void {
    this.transact(() => {
      const encoded = this.intents.get(txid);
      if (encoded === undefined) return;
      this.write(encoded);
      this.intents.removeSync(txid);
    });
  }

  /** Phase two, abort: forgets the intent. Idempotent. */
  abortPrepared(txid: string): void {
    this.transact(() => {
      this.intents.removeSync(txid);
    });
  }

  /**
   * Applies a list in a transaction that is then rolled back: a prepare refuses a list that would break a UNIQUE
   * index here, while it can still abort (a commit decision, once recorded, must not fail).
   */
  private rehearse(batch: Uint8Array): void {
    const rollback = new Error("rehearsal rollback");
    try {
      this.transact(() => {
        this.write(batch);
        throw rollback;
      });
    } catch (cause) {
      if (cause !== rollback) throw cause;
    }
  }

  /** Each index this partition knows: definition, state, build counters. */
  indexStatuses(): IndexStatus[] {
    return this.indexes.statuses();
  }

  /** Meta keys of the indexes still constructing, for the build loop. */
  constructingIndexes(): string[] {
    return this.indexes.constructing();
  }

  /** One build chunk of a constructing index, as its own write transaction (see secondary-index.ts). */
  buildIndexChunk(key: string, chunkEntities: number): void {
    const indexes = this.indexes;
    indexes.adopt(this.transact(() => indexes.buildChunk(key, chunkEntities)));
  }

  /** The index an index operation created on this field, if any. */
  runtimeIndex(kind: RecordKind, label: string, field: string): SecondaryIndexDefinition | undefined {
    return this.indexes.runtimeIndex(kind, label, field);
  }

  /** Registers a runtime index (`create_index`) in its own write transaction; the build loop then builds it. */
  createIndex(definition: IndexDefinition): void {
    const indexes = this.indexes;
    indexes.adopt(this.transact(() => indexes.create(definition)));
  }

  /** Drops a runtime index and its entries in one write transaction (`index_not_found` when there is none). */
  dropIndex(key: string): void {
    const indexes = this.indexes;
    indexes.adopt(this.transact(() => indexes.drop(key)));
  }

  /** Restarts a blocked build (`index_not_found` when there is no such index; other states are left alone). */
  retryIndex(key: string): void {
    const indexes = this.indexes;
    indexes.adopt(this.transact(() => indexes.retry(key)));
  }

  /** One index's entry keys in hex (tests compare a maintained index with a rebuilt one). */
  indexEntryKeys(kind: RecordKind, name: string): string[] {
    const definition = this.indexes.statuses().find((status) => status.kind === kind && status.name === name);
    return definition?.family === "secondary" ? this.indexes.secondary.entryKeys(definition) : [];
  }

  /** The transaction IDs of prepared intents awaiting a decision (recovery asks the decision log about each). */
  pendingIntents(): string[] {
    return [...this.intents.getKeys({})].map(String);
  }

  async close(): Promise<void> {
    await this.root.close();
  }

  /** Refuses a list that touches a key another partition owns (a routing bug), before anything is written. */
  private assertOwned(batch: Uint8Array): void {
    const check = (bytes: Buffer, at: number): void => {
      const owner = bytes.readBigUInt64BE(at);
      if (!this.owns(owner)) throw new SilkError("internal", `partition does not own id ${owner} (a routing bug)`);
    };
    visitMutations(batch, {
      putRecord: (bytes, record) => check(bytes, record.idAt),
      deleteRecord: (bytes, record) => check(bytes, record.idAt),
      putIn: (bytes, targetAt) => check(bytes, targetAt),
      deleteIn: (bytes, targetAt) => check(bytes, targetAt),
      putOut: (bytes, sourceAt) => check(bytes, sourceAt),
      deleteOut: (bytes, sourceAt) => check(bytes, sourceAt),
    });
  }

  /** Whether this partition owns the ID at `at` in `bytes`, compared as bytes (no BigInt: the edge write path). */
  private ownsAt(bytes: Buffer, at: number): boolean {
    for (const [first, last] of this.ownedKeys) {
      if (bytes.compare(first, 0, ID_BYTES, at, at + ID_BYTES) >= 0 && bytes.compare(last, 0, ID_BYTES, at, at + ID_BYTES) <= 0) return true;
    }
    return false;
  }

  /**
   * The body of every write transaction; runs inside `transactionSync`. Keys and values are assembled straight from
   * the encoded list's bytes: no mutation objects, no BigInts but one per record for the ID counter.
   */
  private write(batch: Uint8Array): void {
    this.indexes.discard();
    let highest = this.nextId - 1n;
    const indexes = this.indexes;
    const owned = (bytes: Buffer, at: number): bigint => {
      const id = bytes.readBigUInt64BE(at);
      if (!this.owns(id)) throw new SilkError("internal", `partition does not own id ${id} (a routing bug)`);
      return id;
    };
    visitMutations(batch, {
      putRecord: (bytes, record) => {
        const id = owned(bytes, record.idAt);
        const key = bytes.subarray(record.idAt, record.idAt + ID_BYTES);
        if (indexes.covers(record.kind, record.label.text)) {
          indexes.notePut(record.kind, record.label.text, key, { id, props: propsOf(bytes, record), ...(record.kind === "vector" ? { vector: record.vector } : {}) });
        }
        this.records[record.kind].putSync(key, encodeRecordFrom(bytes, record));
        if (record.kind === "edge") {
          // The out-adjacency lives with the source; another partition's source gets it through a put_out.
          if (this.ownsAt(bytes, record.fromAt)) {
            this.adjacency.out.putSync(
              adjacencyKeyFrom(bytes, record.fromAt, record.label.bytes, record.idAt),
              adjacencyValueFrom(bytes, record.toAt, record.toKindByte),
            );
          }
        } else this.labels.putSync(labelKeyFrom(record.kind, record.label.bytes, bytes, record.idAt), EMPTY);
        // Only IDs of this partition's own allocation range move its counter (a rebalance brings others).
        if (id > highest && id >= this.idFirst && id <= this.idLast) highest = id;
      },
      deleteRecord: (bytes, record) => {
        owned(bytes, record.idAt);
        if (indexes.covers(record.kind, record.label.text)) indexes.noteDelete(record.kind, record.label.text, bytes.subarray(record.idAt, record.idAt + ID_BYTES));
        this.records[record.kind].removeSync(bytes.subarray(record.idAt, record.idAt + ID_BYTES));
        if (record.kind === "edge") {
          if (this.ownsAt(bytes, record.fromAt)) this.adjacency.out.removeSync(adjacencyKeyFrom(bytes, record.fromAt, record.label.bytes, record.idAt));
        } else this.labels.removeSync(labelKeyFrom(record.kind, record.label.bytes, bytes, record.idAt));
      },
      putIn: (bytes, targetAt, label, edgeAt, sourceAt, sourceKindByte) => {
        owned(bytes, targetAt);
        this.adjacency.in.putSync(adjacencyKeyFrom(bytes, targetAt, label.bytes, edgeAt), adjacencyValueFrom(bytes, sourceAt, sourceKindByte));
      },
      deleteIn: (bytes, targetAt, label, edgeAt) => {
        owned(bytes, targetAt);
        this.adjacency.in.removeSync(adjacencyKeyFrom(bytes, targetAt, label.bytes, edgeAt));
      },
      putOut: (bytes, sourceAt, label, edgeAt, targetAt, targetKindByte) => {
        owned(bytes, sourceAt);
        this.adjacency.out.putSync(adjacencyKeyFrom(bytes, sourceAt, label.bytes, edgeAt), adjacencyValueFrom(bytes, targetAt, targetKindByte));
      },
      deleteOut: (bytes, sourceAt, label, edgeAt) => {
        owned(bytes, sourceAt);
        this.adjacency.out.removeSync(adjacencyKeyFrom(bytes, sourceAt, label.bytes, edgeAt));
      },
    });
    indexes.flush();
    if (highest >= this.nextId) this.nextId = highest + 1n;
    this.meta.putSync(META_NEXT_ID, this.nextId);
  }

  /** A committed record as indexes see it, read inside the current transaction (maintenance reads the old record). */
  private committedRecord(kind: RecordKind, key: Buffer): IndexedRecord | undefined {
    const bytes = this.records[kind].get(key);
    return bytes === undefined ? undefined : indexedRecord(decodeRecord(kind, readId(key), bytes));
  }

  /**
   * Looks at up to `limit` records of a label with IDs above `after` (index builds). Nodes and vectors go through
   * the label index; edges have none, so their chunk looks at `limit` edges of any label and keeps the label's.
   */
  private scanLabel(kind: RecordKind, label: string, after: bigint | undefined, limit: number): ScanChunk {
    const from = after === undefined ? 0n : after + 1n;
    const records: ScannedRecord[] = [];
    let last: bigint | undefined;
    let looked = 0;
    if (kind === "edge") {
      for (const { key, value } of this.records.edge.getRange({ start: idKey(from) })) {
        if (looked === limit) return { records, last, done: false };
        looked += 1;
        last = readId(key);
        const edge = decodeEdge(last, value);
        if (edge.label === label) records.push({ id: last, props: edge.props, bytes: value.length });
      }
      return { records, last, done: true };
    }
    for (const key of this.labels.getKeys({ start: labelKey(kind, label, from), end: labelRange(kind, label).end })) {
      if (looked === limit) return { records, last, done: false };
      looked += 1;
      last = readId(key, key.length - ID_BYTES);
      const bytes = this.records[kind].get(idKey(last));
      if (bytes !== undefined) records.push({ ...indexedRecord(decodeRecord(kind, last, bytes)), bytes: bytes.length });
    }
    return { records, last, done: true };
  }
}

/** The properties of a record of an encoded list. */
function propsOf(bytes: Buffer, record: EncodedRecord): Properties {
  return record.propsLength === 0 ? {} : (packr.unpack(bytes.subarray(record.propsAt, record.propsAt + record.propsLength)) as Properties);
}

/**
 * An edge record is a fixed binary header — from(8) | to(8) | from kind(1) | to kind(1) | label length(1) | label —
 * followed by msgpack properties, or nothing when it has none (most edges): edges are the bulk of a graph, and this
 * is several times cheaper to write and read than a msgpack array.
 */
const EDGE_HEADER_BYTES = 19;

function encodeEdge(record: Extract<StoredRecord, { kind: "edge" }>): Buffer {
  const labelBytes = Buffer.byteLength(record.label, "utf8");
  let empty = true;
  for (const _ in record.props) {
    empty = false;
    break;
  }
  const props = empty ? undefined : packr.pack(record.props);
  const value = Buffer.allocUnsafe(EDGE_HEADER_BYTES + labelBytes + (props?.length ?? 0));
  writeU64(value, record.from, 0);
  writeU64(value, record.to, 8);
  value[16] = record.fromKind === "vector" ? 1 : 0;
  value[17] = record.toKind === "vector" ? 1 : 0;
  value[18] = labelBytes;
  value.write(record.label, EDGE_HEADER_BYTES, "utf8");
  props?.copy(value, EDGE_HEADER_BYTES + labelBytes);
  return value;
}

function decodeEdge(id: bigint, bytes: Buffer): StoredRecord {
  const labelEnd = EDGE_HEADER_BYTES + bytes[18];
  return {
    kind: "edge",
    id,
    label: bytes.toString("utf8", EDGE_HEADER_BYTES, labelEnd),
    from: bytes.readBigUInt64BE(0),
    to: bytes.readBigUInt64BE(8),
    fromKind: bytes[16] === 1 ? "vector" : "node",
    toKind: bytes[17] === 1 ? "vector" : "node",
    props: labelEnd === bytes.length ? {} : (packr.unpack(bytes.subarray(labelEnd)) as Properties),
  };
}

const labelPacks = new WeakMap<EncodedLabel, Buffer>();
const EMPTY_MAP = Buffer.from([0x80]);

/** The msgpack of a label, once per label of an encoded list. */
function packedLabel(label: EncodedLabel): Buffer {
  let packed = labelPacks.get(label);
  if (packed === undefined) {
    packed = packr.pack(label.text);
    labelPacks.set(label, packed);
  }
  return packed;
}

/**
 * The stored value of a record of an encoded mutation list, from its bytes: the same value `encodeRecord` gives
 * for the materialised record (msgpack `[label, props]` and `[label, vector, props]` are an array header followed by
 * the packed elements, and the list already holds the packed properties).
 */
function encodeRecordFrom(bytes: Buffer, record: EncodedRecord): Buffer {
  const props = record.propsLength === 0 ? EMPTY_MAP : bytes.subarray(record.propsAt, record.propsAt + record.propsLength);
  switch (record.kind) {
    case "node":
      return Buffer.concat([ARRAY_OF_TWO, packedLabel(record.label), props]);
    case "vector":
      return Buffer.concat([ARRAY_OF_THREE, packedLabel(record.label), packr.pack(record.vector), props]);
    case "edge": {
      const label = record.label.bytes;
      const value = Buffer.allocUnsafe(EDGE_HEADER_BYTES + label.length + record.propsLength);
      copyBytes(bytes, record.fromAt, value, 0, ID_BYTES);
      copyBytes(bytes, record.toAt, value, 8, ID_BYTES);
      value[16] = record.fromKindByte === ENDPOINT_KIND_BYTES.vector ? 1 : 0;
      value[17] = record.toKindByte === ENDPOINT_KIND_BYTES.vector ? 1 : 0;
      value[18] = label.length;
      copyBytes(label, 0, value, EDGE_HEADER_BYTES, label.length);
      bytes.copy(value, EDGE_HEADER_BYTES + label.length, record.propsAt, record.propsAt + record.propsLength);
      return value;
    }
    default: {
      const unreachable: never = record.kind;
      throw new Error(`unknown kind ${String(unreachable)}`);
    }
  }
}

const ARRAY_OF_TWO = Buffer.from([0x92]);
const ARRAY_OF_THREE = Buffer.from([0x93]);

/** The stored value of a record (exported so the benchmark's raw loop writes exactly the same bytes). */
export function encodeRecord(record: StoredRecord): Buffer {
  switch (record.kind) {
    case "node":
      return packr.pack([record.label, record.props] satisfies StoredNode);
    case "edge":
      return encodeEdge(record);
    case "vector":
      return packr.pack([record.label, record.vector, record.props] satisfies StoredVector);
    default: {
      const unreachable: never = record;
      throw new Error(`unknown record ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * Every record with an ID in `range`, every in-adjacency entry whose target is in it and every out-adjacency entry
 * whose source is in it (and whose edge is not: an edge record's own write carries its out-adjacency when its
 * partition owns the source), as `put` or `delete` mutations. Deleting an edge of the range whose source stays
 * (`stillOwned`) puts its out-adjacency back after the delete.
 */
function rangeMutationsOf(
  records: Record<RecordKind, Database<Buffer, Buffer>>,
  adjacency: Record<Direction, Database<Buffer, Buffer>>,
  range: IdRange,
  op: "put" | "delete",
  transaction: Transaction | undefined,
  stillOwned: (id: bigint) => boolean = () => false,
): Mutation[] {
  const mutations: Mutation[] = [];
  const start = idKey(range.first);
  const end = range.last === 2n ** 64n - 1n ? undefined : idKey(range.last + 1n);
  const inRange = (id: bigint): boolean => id >= range.first && id <= range.last;
  /** Out-adjacency entries the edge records' own writes do not carry (their edge or their source is on the other side). */
  const keptOut: Mutation[] = [];
  for (const kind of ["node", "vector", "edge"] as const) {
    for (const { key, value } of records[kind].getRange({ start, end, transaction })) {
      const record = decodeRecord(kind, readId(key), value);
      mutations.push(op === "put" ? { op: "put_record", record } : { op: "delete_record", record });
      // Deleting an edge record here deletes its out-adjacency too; a source that stays here keeps it.
      if (op === "delete" && record.kind === "edge" && !inRange(record.from) && stillOwned(record.from)) {
        keptOut.push({ op: "put_out", source: record.from, label: record.label, edge: record.id, target: record.to, targetKind: record.toKind });
      }
    }
  }
  for (const { key, value } of adjacency.in.getRange({ start, end, transaction })) {
    const target = readId(key);
    const label = adjacencyKeyLabel(key);
    const edge = adjacencyKeyEdge(key);
    mutations.push(
      op === "put"
        ? { op: "put_in", target, label, edge, source: value.readBigUInt64BE(0), sourceKind: adjacencyValueKind(value) }
        : { op: "delete_in", target, label, edge },
    );
  }
  // Out-adjacency of sources in the range whose edge records are not: it moves with the source.
  for (const { key, value } of adjacency.out.getRange({ start, end, transaction })) {
    const edge = adjacencyKeyEdge(key);
    if (inRange(edge)) continue;
    const source = readId(key);
    const label = adjacencyKeyLabel(key);
    mutations.push(
      op === "put"
        ? { op: "put_out", source, label, edge, target: value.readBigUInt64BE(0), targetKind: adjacencyValueKind(value) }
        : { op: "delete_out", source, label, edge },
    );
  }
  return [...mutations, ...keptOut];
}

/** Ascending, disjoint, adjacent ranges joined. */
function mergeRanges(ranges: readonly IdRange[]): IdRange[] {
  const sorted = [...ranges].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  const merged: IdRange[] = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && range.first <= last.last + 1n) merged[merged.length - 1] = { first: last.first, last: range.last > last.last ? range.last : last.last };
    else merged.push(range);
  }
  return merged;
}

/** `ranges` without the IDs of `removed`. */
function subtractRange(ranges: readonly IdRange[], removed: IdRange): IdRange[] {
  const result: IdRange[] = [];
  for (const range of ranges) {
    if (removed.last < range.first || removed.first > range.last) result.push(range);
    else {
      if (range.first < removed.first) result.push({ first: range.first, last: removed.first - 1n });
      if (range.last > removed.last) result.push({ first: removed.last + 1n, last: range.last });
    }
  }
  return result;
}

/** A record as index maintenance sees it. */
function indexedRecord(record: StoredRecord): IndexedRecord {
  return record.kind === "vector" ? { id: record.id, props: record.props, vector: record.vector } : { id: record.id, props: record.props };
}

function decodeRecord(kind: RecordKind, id: bigint, bytes: Buffer): StoredRecord {
  switch (kind) {
    case "node": {
      const [label, props] = packr.unpack(bytes) as StoredNode;
      return { kind, id, label, props };
    }
    case "edge":
      return decodeEdge(id, bytes);
    case "vector": {
      const [label, vector, props] = packr.unpack(bytes) as StoredVector;
      return { kind, id, label, vector, props };
    }
    default: {
      const unreachable: never = kind;
      throw new Error(`unknown kind ${String(unreachable)}`);
    }
  }
}

/**
 * A consistent read view of one partition (one LMDB read transaction). Close it when the invocation ends so LMDB
 * can reuse the pages it pins.
 */
export class Snapshot {
  constructor(
    private readonly transaction: Transaction,
    private readonly records: Record<RecordKind, Database<Buffer, Buffer>>,
    private readonly adjacencyDbs: Record<Direction, Database<Buffer, Buffer>>,
    private readonly labels: Database<Buffer, Buffer>,
    private readonly indexes: IndexCatalog,
  ) {}

  vectorSearch(request: VectorSearchRequest): SearchHit[] {
    return this.indexes.vectorSearch(this.transaction, request);
  }

  /** The records and in-adjacency entries of an ID range as an encoded `put` mutation list (rebalancing copies it). */
  exportRange(range: IdRange): Uint8Array {
    return encodeMutations(rangeMutationsOf(this.records, this.adjacencyDbs, range, "put", this.transaction));
  }

  textSearch(request: TextSearchRequest): SearchHit[] {
    return this.indexes.textSearch(this.transaction, request);
  }

  /** Records of a label whose indexed field lies in any range, ascending; undefined unless the index is active. */
  indexIds(kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): bigint[] | undefined {
    return this.indexes.lookup(this.transaction, kind, label, field, ranges);
  }

  record(kind: RecordKind, id: bigint): StoredRecord | undefined {
    const bytes = this.records[kind].get(idKey(id), { transaction: this.transaction });
    return bytes === undefined ? undefined : decodeRecord(kind, id, bytes);
  }

  exists(kind: RecordKind, id: bigint): boolean {
    // getBinaryFast takes read options at run time (lmdb-js 3.5 read.js), though its typings omit them.
    const read = this.records[kind].getBinaryFast as (key: Buffer, options: { transaction: Transaction }) => Buffer | undefined;
    return read.call(this.records[kind], idKey(id), { transaction: this.transaction }) !== undefined;
  }

  adjacency(owner: bigint, direction: Direction, label?: string): AdjacencyEntry[] {
    const { start, end } = adjacencyRange(owner, label);
    const entries: AdjacencyEntry[] = [];
    for (const { key, value } of this.adjacencyDbs[direction].getRange({ start, end, transaction: this.cursorTransaction() })) {
      entries.push({
        edge: adjacencyKeyEdge(key),
        // With a label given, every key in the range carries it: no need to decode it again.
        label: label ?? adjacencyKeyLabel(key),
        other: value.readBigUInt64BE(0),
        otherKind: adjacencyValueKind(value),
      });
    }
    return entries;
  }

  /** Appends the other ends of one owner's edges to `into` (no edge IDs decoded: the hot path of Out and In). */
  neighbours(owner: bigint, direction: Direction, label: string | undefined, into: { kind: "node" | "vector"; id: bigint }[]): void {
    const { start, end } = adjacencyRange(owner, label);
    for (const { value } of this.adjacencyDbs[direction].getRange({ start, end, transaction: this.cursorTransaction() })) {
      into.push({ kind: adjacencyValueKind(value), id: value.readBigUInt64BE(0) });
    }
  }

  /**
   * The transaction option for range reads. Passing a transaction makes lmdb-js open a fresh native cursor per
   * range (it costs about a third of a short adjacency scan); while this snapshot's transaction is still lmdb-js's
   * current shared read transaction (`notCurrent` unset), an implicit read uses that same transaction and reuses a
   * cached cursor, so the snapshot is the same either way.
   */
  private cursorTransaction(): Transaction | undefined {
    return (this.transaction as Transaction & { notCurrent?: boolean }).notCurrent ? this.transaction : undefined;
  }

  /**
   * Every ID of one kind and label, in ID order. Nodes and vectors have a label index; edges do not (it would cost
   * a quarter of every edge write), so an edge label is a scan of the out-adjacency keys, which carry the label.
   */
  idsOfLabel(kind: RecordKind, label: string): bigint[] {
    if (kind === "edge") return this.edgeIdsOfLabel(label);
    const ids: bigint[] = [];
    for (const key of this.labels.getKeys({ ...labelRange(kind, label), transaction: this.transaction })) {
      ids.push(readId(key, key.length - 8));
    }
    return ids;
  }

  private edgeIdsOfLabel(label: string): bigint[] {
    const ids: bigint[] = [];
    const wanted = Buffer.from(label, "utf8");
    for (const key of this.adjacencyDbs.out.getKeys({ transaction: this.transaction })) {
      const labelEnd = key.length - 9;
      if (labelEnd - 8 === wanted.length && wanted.equals(key.subarray(8, labelEnd))) ids.push(adjacencyKeyEdge(key));
    }
    return ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Every ID of one kind, in ID order. */
  allIds(kind: RecordKind): bigint[] {
    const ids: bigint[] = [];
    for (const key of this.records[kind].getKeys({ transaction: this.transaction })) ids.push(readId(key));
    return ids;
  }

  close(): void {
    this.transaction.done();
  }
}
