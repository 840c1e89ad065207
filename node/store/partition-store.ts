/**
 * One partition's storage: an LMDB environment holding the partition's records, adjacency, label index, secondary
 * indexes, ID counter and prepared two-phase-commit intents (layout in keys.ts; indexes in secondary-index.ts). It has three faces: `snapshot()` for consistent reads,
 * `apply()` for a single-partition commit, and `prepare()`/`commitPrepared()`/`abortPrepared()` for two-phase commit.
 *
 * Architecture invariant: every change to a partition happens inside one `transactionSync`, so a crash leaves the
 * partition either before or after a transaction, never inside one.
 *
 * Reader slots: a process that dies inside a read transaction (SIGKILL) leaves its slot in LMDB's reader table, and
 * LMDB keeps every page that slot's snapshot could see, so the file grows with each commit and never shrinks (issue
 * 20: 1.1 MB to 666 MB in 10 s of writes). lmdb-js clears the slots of dead processes when it opens an environment;
 * a writer clears them again before a write transaction, at most once per `readerCheckIntervalMs`, so a reader that
 * dies while the writer runs costs at most that long of writes. `storageStatus()` shows the readers and free pages.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase, type Transaction } from "lmdb";
import { SilkError } from "../../protocol/errors.js";
import { visitMutations, encodeMutations } from "../../protocol/mutation-codec.js";
import type { Direction, IdRange, Mutation, RecordKind, StoredRecord } from "../../protocol/records.js";
import {
  idKey,
  ID_BYTES,
  labelKey,
  labelKeyFrom,
  labelRange,
  readId,
} from "../keys.js";
import { VECTOR_FIELD, type IndexDefinition, type IndexStatus, type SecondaryIndexDefinition } from "../../protocol/indexes.js";
import { IndexCatalog } from "../indexes/index-catalog.js";
import { decodeEdge, decodeRecord, labelAndPropsFrom, indexedRecord, propsOf, RecordValueScratch, storedVectorInto } from "../record-codec.js";
import { indexVector } from "../indexes/vector-math.js";
import { mergeRanges, rangeMutationsOf, subtractRange } from "./range-mutations.js";
import { Snapshot } from "./snapshot.js";
import { storageFailure } from "./storage-errors.js";
import { IdCounter, idWords, wordsWithin } from "./id-words.js";
import { uniqueEdgeViolation } from "../unique-edge-violation.js";
import { AdjacencyWriter, listEntries } from "./adjacency.js";
import { adjacencyPacked, upgradeAdjacency, type AdjacencyUpgradeOptions } from "./adjacency-upgrade.js";
import { upgradeTextLayout } from "../indexes/text-upgrade.js";
import { GRAPH_FOLDER, isGraphFileName } from "../indexes/vector-graph-files.js";

export { encodeRecord, packr } from "../record-codec.js";
export { Snapshot } from "./snapshot.js";

/** Meta keys of aborted builds (`aborted-index:<kind>:<name>`), outside the catalog's `index:` range. */
const ABORTED_PREFIX = "aborted-index:";
const ABORTED_END = "aborted-index;";

function abortedKey(kind: RecordKind, name: string): string {
  return `${ABORTED_PREFIX}${kind}:${name}`;
}
import type { IndexedRecord, ScanChunk, ScannedRecord } from "../index-family.js";

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
  /** One of several partitions: UNIQUE builds end `validating`, for the coordinator's check across partitions. */
  readonly uniqueAcrossPartitions?: boolean;
  /**
   * The edge types the schema declares UNIQUE (node/exec/unique-edges.ts): every list applied or rehearsed here is refused
   * when it leaves two edges of such a type from one source to one target in this partition's out-adjacency.
   */
  readonly uniqueEdgeLabels?: readonly string[];
  /** A writer's reader check runs before a write transaction at most this often (default READER_CHECK_INTERVAL_MS). */
  readonly readerCheckIntervalMs?: number;
  /** The monotonic clock of the reader check, in milliseconds (`performance.now` unless a test passes one). */
  readonly clockMs?: () => number;
  /** How a writer's open converts a format-2 adjacency (adjacency-upgrade.ts); tests set small chunks and crash. */
  readonly adjacencyUpgrade?: AdjacencyUpgradeOptions;
  /** How many two-phase-commit outcomes the store remembers (DECIDED_REMEMBERED_DEFAULT; tests set a few). */
  readonly decidedRemembered?: number;
}

/**
 * How many outcomes of two-phase commits (an intent committed or aborted here) a partition remembers, the oldest
 * forgotten first, so that a commit retried after it was applied is told apart from a commit of an intent this
 * partition aborted or never held (`intentState`). A coordinator retries a commit only while it holds its lock,
 * which keeps every other two-phase commit of that coordinator from deciding meanwhile, so a retry comes back long
 * before 100,000 further outcomes; about 6 MB of meta entries at most.
 */
export const DECIDED_REMEMBERED_DEFAULT = 100_000;

/** What a partition knows of a two-phase-commit transaction (`PartitionStore.intentState`). */
export type IntentState = "prepared" | "committed" | "aborted" | "unknown";

/**
 * How often a writer clears the reader slots of dead processes, at most. The check costs a few microseconds (one
 * `fcntl` per reader process), so once a second is nothing, and bounds what a dead reader costs to one second of writes.
 */
export const READER_CHECK_INTERVAL_MS = 1_000;

/** One slot of LMDB's reader table: a process that has this environment open, and the snapshot it reads, if any. */
export interface ReaderSlot {
  readonly pid: number;
  /** The thread, as LMDB prints it (hexadecimal). */
  readonly thread: string;
  /** The transaction whose snapshot the reader holds; undefined when the slot is idle (it pins nothing). */
  readonly txnId: number | undefined;
  /** Commits made since that snapshot: while above 0, pages those commits freed cannot be reused. */
  readonly behindTxns: number | undefined;
}

/** One partition's LMDB environment as `silk status` shows it (docs/SERVER.md). */
export interface StorageStatus {
  readonly path: string;
  /** The size of data.mdb on disk. */
  readonly fileBytes: number;
  /** LMDB's map size: how large the file may grow before lmdb-js enlarges the map. */
  readonly mapSizeBytes: number;
  readonly pageSize: number;
  /** Pages up to the highest one ever used: the file's useful length. */
  readonly usedPages: number;
  /** Of those, pages on LMDB's free list, reused by later commits once no reader's snapshot needs them. */
  readonly freePages: number;
  /** The last committed transaction. */
  readonly lastTxnId: number;
  readonly maxReaders: number;
  /** Live reader slots (dead processes' slots were just cleared). */
  readonly readers: readonly ReaderSlot[];
  /** Slots of dead processes this handle cleared since it opened (lmdb-js's own check at open is not counted). */
  readonly staleReadersCleared: number;
}

const META_NEXT_ID = "next_id";
/** The sequence of the last replicated-log entry applied (cluster mode; node/store/log-entry.ts). */
const META_LOG_SEQUENCE = "log_sequence";
/** The last ID of the block the leader reserved through the log (cluster mode): no replica hands out IDs up to it. */
const META_RESERVED_TO = "reserved_to";
/** The ID ranges this partition owns when they differ from its allocation range (after a rebalance). */
const META_OWNED_RANGES = "owned_ranges";
/** The schema version this partition's records have (node/store/schema-migration.ts). */
const META_SCHEMA_VERSION = "schema_version";
/** `decided:<txid>` → { outcome, n }; `decided#<n, 16 digits>` → txid; `decided_next`: the next n (rememberDecided). */
const DECIDED_PREFIX = "decided:";
const DECIDED_ORDER_PREFIX = "decided#";
const META_DECIDED_NEXT = "decided_next";

const EMPTY = Buffer.alloc(0);

export class PartitionStore {
  readonly idFirst: bigint;
  readonly idLast: bigint;
  private readonly root: RootDatabase;
  private readonly meta: Database;
  private readonly records: Record<RecordKind, Database<Buffer, Buffer>>;
  /** Each vector record's label and properties without its vector (record-codec.ts labelAndPropsFrom). */
  private readonly vectorProps: Database<Buffer, Buffer>;
  private readonly adjacency: Record<Direction, Database<Buffer, Buffer>>;
  private readonly labels: Database<Buffer, Buffer>;
  private readonly intents: Database<Buffer, string>;
  private readonly indexes: IndexCatalog;
  private readonly uniqueEdgeLabels: ReadonlySet<string>;
  private nextId: bigint;
  /** Cluster mode: IDs up to this one are reserved through the log; allocation stops there (see `spareIds`). */
  private reservedTo: bigint | undefined;
  /** The log sequence the next write transaction records (set by `atLogSequence`). */
  private pendingLogSequence: number | undefined;
  /** The ID ranges this partition owns, ascending and disjoint: its allocation range, until a rebalance moves some. */
  private owned: IdRange[] = [];
  /**
   * The same ranges as 32-bit words, four per range (first high, first low, last high, last low), to test IDs in
   * encoded lists without BigInts.
   */
  private ownedWords: number[] = [];
  /** The allocation range [idFirst, idLast] as the same four words, for the ID counter's checks in `write`. */
  private readonly allocationWords: readonly number[];
  private readonly path: string;
  /** Every named database of the environment, whose pages `storageStatus` counts. */
  private readonly namedDatabases: { getStats(): object }[] = [];
  private readonly readerCheckIntervalMs: number;
  private readonly decidedRemembered: number;
  private readonly clockMs: () => number;
  private readerCheckedAtMs: number;
  private staleReadersCleared = 0;

  private constructor(options: PartitionStoreOptions) {
    this.idFirst = options.idFirst;
    this.idLast = options.idLast;
    this.allocationWords = [...idWords(options.idFirst), ...idWords(options.idLast)];
    this.path = options.path;
    this.uniqueEdgeLabels = new Set(options.uniqueEdgeLabels ?? []);
    this.readerCheckIntervalMs = options.readerCheckIntervalMs ?? READER_CHECK_INTERVAL_MS;
    this.decidedRemembered = options.decidedRemembered ?? DECIDED_REMEMBERED_DEFAULT;
    this.clockMs = options.clockMs ?? (() => performance.now());
    // lmdb-js has just run the check in open(): the next one is due an interval from now.
    this.readerCheckedAtMs = this.clockMs();
    this.root = open({
      path: options.path,
      readOnly: options.readOnly,
      noSync: options.noSync,
      // lmdb-js turns overlappingSync on by default on Linux: a commit returns before its fsync, which then runs in
      // the background, so an acknowledged write was not yet durable against power loss. With it on, a committed and
      // acknowledged write was also lost, twice in 128 SIGKILLs of read-only processes of the same directory (the
      // next transaction started from the snapshot before it; test/soak/dead-readers.ts looks for that), and never
      // in 78 with it off. Off, a commit returns once it is on disk, which is what Silk acknowledges.
      overlappingSync: false,
      mapSize: options.mapSizeBytes,
      maxDbs: 16,
      encoding: "binary",
    });
    const named = <D extends { getStats(): object }>(database: D): D => {
      this.namedDatabases.push(database);
      return database;
    };
    const binary = (name: string): Database<Buffer, Buffer> =>
      named(this.root.openDB<Buffer, Buffer>({ name, keyEncoding: "binary", encoding: "binary" }));
    this.meta = named(this.root.openDB({ name: "meta", encoding: "msgpack" }));
    this.records = { node: binary("nodes"), edge: binary("edges"), vector: binary("vectors") };
    this.vectorProps = binary("vector_props");
    this.adjacency = { out: binary("adjacency_out"), in: binary("adjacency_in") };
    this.labels = binary("labels");
    this.intents = named(this.root.openDB<Buffer, string>({ name: "intents", encoding: "binary" }));
    const stored = this.meta.get(META_NEXT_ID) as bigint | number | undefined;
    this.nextId = stored === undefined ? (this.idFirst === 0n ? 1n : this.idFirst) : BigInt(stored);
    const reserved = this.meta.get(META_RESERVED_TO) as bigint | number | undefined;
    this.reservedTo = reserved === undefined ? undefined : BigInt(reserved);
    const owned = this.meta.get(META_OWNED_RANGES) as { first: bigint | number; last: bigint | number }[] | undefined;
    this.setOwnedInMemory(owned === undefined ? [{ first: this.idFirst, last: this.idLast }] : owned.map((range) => ({ first: BigInt(range.first), last: BigInt(range.last) })));
    const text = binary("text");
    this.indexes = new IndexCatalog({ meta: this.meta, secondary: binary("index"), text }, {
      record: (kind, key) => this.committedRecord(kind, key),
      scan: (kind, label, after, limit) => this.scanLabel(kind, label, after, limit),
      hasLabel: (kind, label) => this.scanLabel(kind, label, undefined, 1).records.length > 0,
      vectorInto: (kind, id, field, into, transaction) => this.committedVectorInto(kind, id, field, into, transaction),
    }, options.indexes ?? [], {
      uniqueAcrossPartitions: options.uniqueAcrossPartitions,
      readOnly: options.readOnly,
      // Memory storage's files die with the handle: graph files would only cost their writing.
      vectorGraphs: options.noSync ? undefined : { folder: join(options.path, GRAPH_FOLDER), writer: !options.readOnly },
    });
    if (!options.readOnly) {
      // Before the catalog reconciles (and may build) text indexes: they write layout 2 only.
      this.transact(() => upgradeTextLayout(this.meta, text));
      if (!adjacencyPacked(this.meta)) this.upgradeAdjacency(options.adjacencyUpgrade);
      const indexes = this.indexes;
      indexes.adopt(this.transact(() => indexes.reconcile()));
    }
  }

  /** A writer's open: one entry per edge (`out`, `in`, up to format 2) becomes packed blocks (adjacency-upgrade.ts). */
  private upgradeAdjacency(options: AdjacencyUpgradeOptions | undefined): void {
    // `create: false` (lmdb-js takes it, its typings omit it): a partition created by format 3 has no such
    // sub-database, gets none, and openDB answers undefined.
    const legacy = (name: string): Database<Buffer, Buffer> | undefined => {
      const legacyOptions = { name, keyEncoding: "binary" as const, encoding: "binary" as const, create: false };
      return this.root.openDB<Buffer, Buffer>(legacyOptions) as Database<Buffer, Buffer> | undefined;
    };
    upgradeAdjacency({ meta: this.meta, legacy: { out: legacy("out"), in: legacy("in") }, packed: this.adjacency, transact: (body) => this.transact(body) }, options);
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
    this.ownedWords = ranges.flatMap((range) => [...idWords(range.first), ...idWords(range.last)]);
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
   * The applied log sequence of the closed environment in `path` (a backup, or a replica's directory before it opens);
   * undefined when `path` holds no environment.
   */
  static appliedLogSequenceAt(path: string): number | undefined {
    if (!existsSync(join(path, "data.mdb"))) return undefined;
    const root = open({ path, readOnly: true, maxDbs: 16, encoding: "binary" });
    try {
      return (root.openDB({ name: "meta", encoding: "msgpack" }).get(META_LOG_SEQUENCE) as number | undefined) ?? 0;
    } finally {
      void root.close();
    }
  }

  /**
   * Writes a consistent copy of this store into the empty folder `into` (a replicated log's snapshot, cluster/nats/snapshots.ts)
   * and answers the log sequence it holds. The vector graph files are copied first, then LMDB copies the environment,
   * compacted, from one read transaction (off the event loop): each graph file then reflects a change counter at or
   * below the copy's, so an open of the copy takes the file and replays the changes since (node/indexes/vector-index.ts); a
   * file is replaced whole by its writer, so the copy holds an old or a new one, never a mix.
   */
  async backup(into: string): Promise<number> {
    const graphs = join(this.path, GRAPH_FOLDER);
    if (existsSync(graphs)) {
      mkdirSync(join(into, GRAPH_FOLDER), { recursive: true });
      for (const name of readdirSync(graphs)) if (isGraphFileName(name)) copyFileSync(join(graphs, name), join(into, GRAPH_FOLDER, name));
    }
    await this.root.backup(into, true);
    const sequence = PartitionStore.appliedLogSequenceAt(into);
    if (sequence === undefined) throw new SilkError("internal", `internal error (a bug in Silk): LMDB's copy left no environment in ${into}`);
    return sequence;
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
    return new Snapshot(this.root, true, this.records, this.vectorProps, this.adjacency, this.labels, this.indexes);
  }

  /** A snapshot for a run of reads that neither yields (no await until it is closed) nor commits; see Snapshot. */
  synchronousSnapshot(): Snapshot {
    return new Snapshot(this.root, false, this.records, this.vectorProps, this.adjacency, this.labels, this.indexes);
  }

  /** Applies an encoded mutation list (protocol/mutation-codec.ts) as one LMDB transaction. */
  apply(batch: Uint8Array): void {
    this.transact(() => this.write(batch));
  }

  /**
   * Applies encoded mutation lists one after another as one LMDB transaction (a write group, node/actor/write-group.ts):
   * each list meets the state the lists before it left, as if each were its own transaction, and one fsync makes them
   * all durable. A list that fails fails them all; nothing of any is written.
   */
  applyAll(batches: readonly Uint8Array[]): void {
    this.transact(() => {
      for (const batch of batches) this.write(batch);
    });
  }

  /** The schema version this partition's records have; undefined before one was recorded. */
  schemaVersion(): number | undefined {
    return this.meta.get(META_SCHEMA_VERSION) as number | undefined;
  }

  /**
   * Runs a schema migration (node/store/schema-migration.ts) as one transaction: `body` reads records (`labelRecords`, which
   * sees the transaction's own writes) and writes encoded lists through `write`; `version` is recorded with them. A
   * crash, or an error from `body` or a write, leaves the partition as it was.
   */
  migrate(version: number, body: (write: (batch: Uint8Array) => void) => void): void {
    this.transact(() => {
      body((batch) => this.write(batch));
      this.meta.putSync(META_SCHEMA_VERSION, version);
    });
  }

  /** Whether the partition holds no record at all. */
  isEmpty(): boolean {
    return (["node", "edge", "vector"] as const).every((kind) => this.records[kind].getKeysCount({ limit: 1 }) === 0);
  }

  /**
   * Up to `limit` whole records of a label with IDs above `after`, in ID order (schema migrations). Edges have no
   * label index: their chunk looks at `limit` edges of any label and keeps the label's.
   */
  labelRecords(kind: RecordKind, label: string, after: bigint | undefined, limit: number): { records: StoredRecord[]; last?: bigint; done: boolean } {
    const from = after === undefined ? 0n : after + 1n;
    const records: StoredRecord[] = [];
    let last: bigint | undefined;
    let looked = 0;
    const keys =
      kind === "edge"
        ? this.records.edge.getKeys({ start: idKey(from) })
        : this.labels.getKeys({ start: labelKey(kind, label, from), end: labelRange(kind, label).end });
    for (const key of keys) {
      if (looked === limit) return { records, last, done: false };
      looked += 1;
      last = kind === "edge" ? readId(key) : readId(key, key.length - ID_BYTES);
      const bytes = this.records[kind].get(idKey(last));
      if (bytes === undefined) continue;
      const record = decodeRecord(kind, last, bytes);
      if (record.label === label) records.push(record);
    }
    return { records, last, done: true };
  }

  /**
   * Every write transaction: the index families hear whether it committed (in-memory structures follow only
   * committed data) or failed (what they noted is forgotten).
   */
  private transact<T>(body: () => T): T {
    let result: T;
    if (this.clockMs() - this.readerCheckedAtMs >= this.readerCheckIntervalMs) this.clearStaleReaders();
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
      throw storageFailure(cause, this.path) ?? cause;
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
    if (this.mayRefuseWrites()) this.rehearse(batch);
  }

  /** Phase one: durably records the intent. The mutations are not visible until `commitPrepared`. */
  prepare(txid: string, batch: Uint8Array): void {
    this.assertOwned(batch);
    if (this.mayRefuseWrites()) this.rehearse(batch);
    this.transact(() => {
      this.intents.putSync(txid, Buffer.from(batch.buffer, batch.byteOffset, batch.byteLength));
    });
  }

  /** Phase two, commit: applies the intent, forgets it and remembers the outcome in one transaction. Idempotent. */
  commitPrepared(txid: string): void {
    this.transact(() => {
      const encoded = this.intents.get(txid);
      if (encoded === undefined) return;
      this.write(encoded);
      this.intents.removeSync(txid);
      this.rememberDecided(txid, "commit");
    });
  }

  /** Phase two, abort: forgets the intent and remembers the outcome. Idempotent. */
  abortPrepared(txid: string): void {
    this.transact(() => {
      if (this.intents.get(txid) === undefined) return;
      this.intents.removeSync(txid);
      this.rememberDecided(txid, "abort");
    });
  }

  /**
   * Whether this partition holds `txid`'s intent, or applied its commit or abort (among the last `decidedRemembered`
   * outcomes), or neither. Deterministic across replicas: outcomes are remembered and dropped in log order.
   */
  intentState(txid: string): IntentState {
    if (this.intents.get(txid) !== undefined) return "prepared";
    const decided = this.meta.get(DECIDED_PREFIX + txid) as { outcome: "commit" | "abort" } | undefined;
    if (decided === undefined) return "unknown";
    return decided.outcome === "commit" ? "committed" : "aborted";
  }

  /** Inside a write transaction: records the outcome, and drops the oldest once more than the bound are kept. */
  private rememberDecided(txid: string, outcome: "commit" | "abort"): void {
    const n = (this.meta.get(META_DECIDED_NEXT) as number | undefined) ?? 0;
    const order = (i: number): string => DECIDED_ORDER_PREFIX + String(i).padStart(16, "0");
    this.meta.putSync(DECIDED_PREFIX + txid, { outcome, n });
    this.meta.putSync(order(n), txid);
    this.meta.putSync(META_DECIDED_NEXT, n + 1);
    const dropped = n - this.decidedRemembered;
    if (dropped < 0) return;
    const old = this.meta.get(order(dropped)) as string | undefined;
    if (old === undefined) return;
    this.meta.removeSync(order(dropped));
    if ((this.meta.get(DECIDED_PREFIX + old) as { n: number } | undefined)?.n === dropped) this.meta.removeSync(DECIDED_PREFIX + old);
  }

  /** Whether a list could be refused for what it writes (an index, a UNIQUE edge type), not only for its keys. */
  private mayRefuseWrites(): boolean {
    return this.uniqueEdgeLabels.size > 0 || this.indexes.mayRefuseWrites();
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
    indexes.adopt(
      this.transact(() => {
        // A build created anew is no longer the aborted one its operation ID named.
        this.meta.removeSync(abortedKey(definition.kind, definition.name));
        return indexes.create(definition);
      }),
    );
  }

  /**
   * Drops a runtime index and its entries in one write transaction (`index_not_found` when there is none). An
   * abort's drop keeps the build as it was aborted (`aborted`), in the same transaction, until the index is created
   * again: HelixDB keeps an aborted build's operation, so `get_index_operation` answers it after a restart too.
   */
  dropIndex(key: string, aborted?: IndexStatus): void {
    const indexes = this.indexes;
    indexes.adopt(
      this.transact(() => {
        const next = indexes.drop(key);
        if (aborted !== undefined) this.meta.putSync(abortedKey(aborted.kind, aborted.name), aborted);
        return next;
      }),
    );
  }

  /** The builds aborted here and not created again since, as their aborts recorded them (dropIndex). */
  abortedIndexes(): IndexStatus[] {
    return [...this.meta.getRange({ start: ABORTED_PREFIX, end: ABORTED_END })].map(({ value }) => value as IndexStatus);
  }

  /** The coordinator's verdict on a `validating` UNIQUE index, as its own write transaction (index-catalog.ts). */
  finishIndexValidation(key: string, blocked: { readonly reason: string; readonly message: string } | undefined): void {
    const indexes = this.indexes;
    indexes.adopt(this.transact(() => indexes.finishValidation(key, blocked)));
  }

  /** A secondary index's entries as `encoded value | id`, in value order. */
  indexValueEntries(key: string): Buffer[] {
    return this.indexes.valueEntries(key);
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

  /** The prepared intents awaiting a decision, with their mutation lists (a new leader's locks). */
  pendingIntentBatches(): { txid: string; batch: Uint8Array }[] {
    return [...this.intents.getRange({})].map(({ key, value }) => ({ txid: String(key), batch: Uint8Array.from(value) }));
  }

  /** The transaction IDs of prepared intents awaiting a decision (recovery asks the decision log about each). */
  pendingIntents(): string[] {
    return [...this.intents.getKeys({})].map(String);
  }

  /**
   * Makes the next reads start from the newest commit, another process's too: lmdb-js otherwise serves reads from a
   * shared read transaction it renews only when this process commits and in a timer callback (snapshot.ts).
   */
  renewReads(): void {
    this.root.resetReadTxn();
  }

  async close(): Promise<void> {
    this.indexes.close();
    await this.root.close();
  }

  /** Frees the reader slots of processes that died inside a read transaction (LMDB's `mdb_reader_check`). */
  private clearStaleReaders(): void {
    this.readerCheckedAtMs = this.clockMs();
    this.staleReadersCleared += this.root.readerCheck();
  }

  /**
   * The environment's readers, pages and sizes, after clearing dead readers' slots. Free pages are what the file
   * holds beyond the pages of the trees (every named database, the main database, the free list's own) and the two
   * meta pages.
   */
  storageStatus(): StorageStatus {
    return { ...this.pageStatus(), fileBytes: statSync(join(this.path, "data.mdb")).size };
  }

  /**
   * storageStatus() without the file's size: what the servers' `/metrics` reads on every scrape, which also holds for
   * a memory database, whose files are deleted once it is open.
   */
  pageStatus(): Omit<StorageStatus, "fileBytes"> {
    this.clearStaleReaders();
    const stats = this.root.getStats() as LmdbStats & { free: LmdbTreeStats };
    const usedPages = stats.lastPageNumber + 1;
    const treePages = this.namedDatabases.reduce((sum, database) => sum + pagesOf(database.getStats() as LmdbTreeStats), pagesOf(stats) + pagesOf(stats.free));
    return {
      path: this.path,
      mapSizeBytes: stats.mapSize,
      pageSize: stats.pageSize,
      usedPages,
      freePages: usedPages - LMDB_META_PAGES - treePages,
      lastTxnId: stats.lastTxnId,
      maxReaders: stats.maxReaders,
      readers: parseReaderList(this.root.readerList(), stats.lastTxnId),
      staleReadersCleared: this.staleReadersCleared,
    };
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

  /** Whether this partition owns the ID at `at` in `bytes`, compared as 32-bit words (no BigInt: the edge write path). */
  private ownsAt(bytes: Buffer, at: number): boolean {
    const high = bytes.readUInt32BE(at);
    const low = bytes.readUInt32BE(at + 4);
    const words = this.ownedWords;
    for (let i = 0; i < words.length; i += 4) if (wordsWithin(high, low, words, i)) return true;
    return false;
  }

  /**
   * The body of every write transaction; runs inside `transactionSync`. Keys and values are assembled straight from
   * the encoded list's bytes, edge values in a buffer reused from entry to entry (RecordValueScratch): no mutation
   * objects, no BigInts. Adjacency changes are gathered per list and written at the end (AdjacencyWriter), one write
   * per touched block, before the UNIQUE edge check reads them.
   */
  private write(batch: Uint8Array): void {
    const counter = new IdCounter(this.nextId - 1n, this.allocationWords);
    const indexes = this.indexes;
    const adjacency = new AdjacencyWriter(this.adjacency);
    const values = new RecordValueScratch();
    const owned = (bytes: Buffer, at: number): void => {
      if (!this.ownsAt(bytes, at)) throw new SilkError("internal", `partition does not own id ${bytes.readBigUInt64BE(at)} (a routing bug)`);
    };
    const uniquePairs = new UniqueEdgePairs(this.uniqueEdgeLabels, batch, (bytes, at) => this.ownsAt(bytes, at), this.adjacency.out);
    visitMutations(batch, {
      putRecord: (bytes, record) => {
        owned(bytes, record.idAt);
        const key = bytes.subarray(record.idAt, record.idAt + ID_BYTES);
        if (indexes.covers(record.kind, record.label.text)) {
          const id = bytes.readBigUInt64BE(record.idAt);
          indexes.notePut(record.kind, record.label.text, key, { id, props: propsOf(bytes, record), ...(record.kind === "vector" ? { vector: record.vector } : {}) });
        }
        this.records[record.kind].putSync(key, values.value(bytes, record));
        if (record.kind === "vector") this.vectorProps.putSync(key, labelAndPropsFrom(bytes, record));
        if (record.kind === "edge") {
          // The out-adjacency lives with the source; another partition's source gets it through a put_out.
          if (this.ownsAt(bytes, record.fromAt)) adjacency.put("out", bytes, record.fromAt, record.label.bytes, record.idAt, record.toAt, record.toKindByte);
        } else this.labels.putSync(labelKeyFrom(record.kind, record.label.bytes, bytes, record.idAt), EMPTY);
        counter.saw(bytes, record.idAt);
      },
      deleteRecord: (bytes, record) => {
        owned(bytes, record.idAt);
        const key = bytes.subarray(record.idAt, record.idAt + ID_BYTES);
        if (indexes.covers(record.kind, record.label.text)) indexes.noteDelete(record.kind, record.label.text, key);
        this.records[record.kind].removeSync(key);
        if (record.kind === "vector") this.vectorProps.removeSync(key);
        if (record.kind === "edge") {
          if (this.ownsAt(bytes, record.fromAt)) adjacency.delete("out", bytes, record.fromAt, record.label.bytes, record.idAt);
        } else this.labels.removeSync(labelKeyFrom(record.kind, record.label.bytes, bytes, record.idAt));
      },
      putIn: (bytes, targetAt, label, edgeAt, sourceAt, sourceKindByte) => {
        owned(bytes, targetAt);
        adjacency.put("in", bytes, targetAt, label.bytes, edgeAt, sourceAt, sourceKindByte);
      },
      deleteIn: (bytes, targetAt, label, edgeAt) => {
        owned(bytes, targetAt);
        adjacency.delete("in", bytes, targetAt, label.bytes, edgeAt);
      },
      putOut: (bytes, sourceAt, label, edgeAt, targetAt, targetKindByte) => {
        owned(bytes, sourceAt);
        adjacency.put("out", bytes, sourceAt, label.bytes, edgeAt, targetAt, targetKindByte);
      },
      deleteOut: (bytes, sourceAt, label, edgeAt) => {
        owned(bytes, sourceAt);
        adjacency.delete("out", bytes, sourceAt, label.bytes, edgeAt);
      },
    });
    adjacency.flush();
    uniquePairs.check(this.adjacency.out);
    indexes.flush();
    const next = counter.next();
    if (next > this.nextId) this.nextId = next;
    this.meta.putSync(META_NEXT_ID, this.nextId);
  }

  /** A committed record as indexes see it, read inside the current transaction (maintenance reads the old record). */
  private committedRecord(kind: RecordKind, key: Buffer): IndexedRecord | undefined {
    const bytes = this.records[kind].get(key);
    return bytes === undefined ? undefined : indexedRecord(decodeRecord(kind, readId(key), bytes));
  }

  /**
   * IndexRecordSource.vectorInto: a `V::` record's own vector straight from the stored bytes (no decode, no
   * allocation: an exact scan reads thousands), anything else through the decoded record.
   */
  private committedVectorInto(kind: RecordKind, id: bigint, field: string, into: Float32Array, transaction: Transaction | undefined): boolean {
    const key = idKey(id);
    const options = transaction === undefined ? undefined : { transaction };
    if (kind === "vector" && field === VECTOR_FIELD) {
      // getBinaryFast takes read options at run time (lmdb-js 3.5 read.js), though its typings omit them.
      const fast = this.records.vector.getBinaryFast as (key: Buffer, options: { transaction: Transaction } | undefined) => Buffer | undefined;
      const bytes = fast.call(this.records.vector, key, options);
      if (bytes === undefined) return false;
      const read = storedVectorInto(bytes, into);
      if (read !== undefined) return read;
    }
    const bytes = this.records[kind].get(key, options);
    if (bytes === undefined) return false;
    const record = indexedRecord(decodeRecord(kind, id, bytes));
    let vector: Float32Array | undefined;
    try {
      vector = indexVector(field === VECTOR_FIELD ? record.vector : record.props[field]);
    } catch {
      return false; // a value the index refused when it was written: it holds no vector of this record
    }
    if (vector === undefined || vector.length !== into.length) return false;
    into.set(vector);
    return true;
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

/**
 * The (source, label, target) pairs of UNIQUE edge types a list gives an out-adjacency entry, with how many edges
 * each pair had before the list. A list may not leave a pair more than one edge unless it had more before: edges
 * written before their type was declared UNIQUE stay (an update of one puts its entry again, and is no violation),
 * but a list adds none to such a pair. Counting reads the prefix of every edge of the label out of the source, inside
 * the transaction (which sees its own writes), so it grows with that source's degree in the label: small for the
 * relations UNIQUE suits.
 */
class UniqueEdgePairs {
  private readonly pairs = new Map<string, { readonly source: bigint; readonly label: string; readonly target: bigint; before: number }>();

  /** The pairs of `batch` (before it is written: their counts are the committed ones); none without UNIQUE labels. */
  constructor(labels: ReadonlySet<string>, batch: Uint8Array, ownsAt: (bytes: Buffer, at: number) => boolean, out: Database<Buffer, Buffer>) {
    if (labels.size === 0) return;
    const note = (label: string, bytes: Buffer, sourceAt: number, targetAt: number): void => {
      if (!labels.has(label)) return;
      const source = bytes.readBigUInt64BE(sourceAt);
      const target = bytes.readBigUInt64BE(targetAt);
      const key = `${source}|${label}|${target}`;
      if (!this.pairs.has(key)) this.pairs.set(key, { source, label, target, before: edgesOfPair(out, source, label, target).length });
    };
    const ignore = (): void => undefined;
    visitMutations(batch, {
      putRecord: (bytes, record) => {
        if (record.kind === "edge" && ownsAt(bytes, record.fromAt)) note(record.label.text, bytes, record.fromAt, record.toAt);
      },
      putOut: (bytes, sourceAt, label, _edgeAt, targetAt) => note(label.text, bytes, sourceAt, targetAt),
      deleteRecord: ignore,
      putIn: ignore,
      deleteIn: ignore,
      deleteOut: ignore,
    });
  }

  /** After the whole list, so that a drop of a pair's edge listed after the create of its successor counts. */
  check(out: Database<Buffer, Buffer>): void {
    for (const { source, label, target, before } of this.pairs.values()) {
      const edges = edgesOfPair(out, source, label, target);
      if (edges.length > 1 && edges.length > before) throw uniqueEdgeViolation(label, source, target, edges[0]);
    }
  }
}

/** The edges of a label from `source` to `target`, by the source's out-adjacency, in edge ID order. */
function edgesOfPair(out: Database<Buffer, Buffer>, source: bigint, label: string, target: bigint): bigint[] {
  const edges: bigint[] = [];
  for (const entry of listEntries(out, source, label)) if (entry.other === target) edges.push(entry.edge);
  return edges;
}

/** What lmdb-js's `getStats()` answers (its typings say `{}`): a tree's page counts, and the environment's figures. */
interface LmdbTreeStats {
  readonly treeBranchPageCount: number;
  readonly treeLeafPageCount: number;
  readonly overflowPages: number;
}

interface LmdbStats extends LmdbTreeStats {
  readonly pageSize: number;
  readonly mapSize: number;
  readonly lastPageNumber: number;
  readonly lastTxnId: number;
  readonly maxReaders: number;
}

/** LMDB's first two pages are its meta pages, in no tree. */
const LMDB_META_PAGES = 2;

function pagesOf(stats: LmdbTreeStats): number {
  return stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages;
}

/**
 * LMDB's reader table as `mdb_reader_list` prints it: a header, then `pid thread txnid` per slot, txnid `-` for an
 * idle slot (or one line `(no active readers)`).
 */
function parseReaderList(text: string, lastTxnId: number): ReaderSlot[] {
  const readers: ReaderSlot[] = [];
  for (const line of text.split("\n")) {
    const match = /^\s*([0-9]+)\s+([0-9a-f]+)\s+([0-9]+|-)\s*$/.exec(line);
    if (match === null) continue;
    const txnId = match[3] === "-" ? undefined : Number(match[3]);
    readers.push({ pid: Number(match[1]), thread: match[2], txnId, behindTxns: txnId === undefined ? undefined : lastTxnId - txnId });
  }
  return readers;
}
