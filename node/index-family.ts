/**
 * What the index catalog (index-catalog.ts) asks of one family of index: secondary (secondary-index.ts), vector
 * (vector-index.ts) and text (text-index.ts). The catalog owns what every family shares: which indexes exist, their
 * states and counters in the partition's `meta`, the schema reconcile, runtime creation and drops, and the chunked
 * background builds. A family owns its entries: how a record's value becomes entries, their maintenance inside the
 * store's write transaction, and its lookups or searches.
 *
 * Protocol, for every write transaction of the store: `put`/`delete` for each changed record of a label the family
 * indexes (the catalog reads the committed record once and passes it as `old`), then `flush` once, still inside
 * the transaction; after the transaction committed `commit`, after it failed `discard`. Builds: `build` per record of
 * a chunk, then `flush` (both inside the chunk's transaction), then `finish` after the last chunk, then `commit` as
 * after any write.
 * `remove` (inside a transaction) deletes every entry of an index: a drop, a reconcile, a blocked build, a retry.
 *
 * Architecture invariant: a family changes storage only inside the transaction it is called in, and in-memory
 * structures (the vector family's graphs) only in `commit`, so a failed transaction leaves nothing behind. What a
 * family notes for `flush` (the secondary family's entries, the text family's postings) is held only until `flush`
 * or `discard`, never across transactions. A
 * SilkError thrown by `put`, `delete`, `flush` or `build` aborts the transaction; during a build it blocks the index
 * with the error's code as its reason and its message.
 */
import type { Transaction } from "lmdb";
import type { ErrorCode } from "../protocol/errors.js";
import type { IndexDefinition, IndexStateName } from "../protocol/indexes.js";
import type { RecordKind } from "../protocol/records.js";
import type { Properties } from "../protocol/values.js";

/** A record as index maintenance sees it: its properties, and for a `V::` record its vector. */
export interface IndexedRecord {
  readonly id: bigint;
  readonly props: Properties;
  readonly vector?: Float64Array;
}

/** A record a build scan looked at, with its stored size (the `bytes` counter). */
export interface ScannedRecord extends IndexedRecord {
  readonly bytes: number;
}

/** One chunk of a label scan: its records, the last ID looked at, and whether the label is exhausted. */
export interface ScanChunk {
  readonly records: readonly ScannedRecord[];
  readonly last: bigint | undefined;
  readonly done: boolean;
}

/** The committed records maintenance and builds read, inside the current transaction (provided by the store). */
export interface IndexRecordSource {
  /** The committed record under an 8-byte ID key, if any. */
  record(kind: RecordKind, key: Buffer): IndexedRecord | undefined;
  /** Looks at up to `limit` records (of the label, or for edges of any label) with IDs above `after`, in ID order. */
  scan(kind: RecordKind, label: string, after: bigint | undefined, limit: number): ScanChunk;
  hasLabel(kind: RecordKind, label: string): boolean;
  /**
   * The vector an index over `field` (VECTOR_FIELD: a `V::` record's own) takes from the committed record, rounded
   * to float32 into `into`; false when there is no record, or no vector of `into`'s length. Read in `transaction`
   * when given (a reader's snapshot), else in the current one. The vector family's exact scans read vectors this way
   * rather than keep a copy of each beside hnswlib's.
   */
  vectorInto(kind: RecordKind, id: bigint, field: string, into: Float32Array, transaction?: Transaction): boolean;
}

/** Why a finished build cannot activate: an error code and a message naming the value. */
export interface BuildProblem {
  readonly reason: ErrorCode;
  readonly message: string;
}

export interface IndexFamilyStore<D extends IndexDefinition> {
  /**
   * Takes an index the catalog knows, with its persisted state: at open, after `create`, and after a build restarts.
   * The vector family loads its in-memory graphs of an active index here, from its graph file and change log or else
   * from the committed records (through the IndexRecordSource it was constructed with), and starts a constructing one
   * empty (its build restarts).
   */
  load(definition: D, state: IndexStateName): void;
  /** `old` is the committed record (undefined for a new one); maintains a constructing or active index. */
  put(definition: D, record: IndexedRecord, old: IndexedRecord | undefined): void;
  delete(definition: D, old: IndexedRecord): void;
  flush(): void;
  commit(): void;
  discard(): void;
  /** Indexes one record of a build chunk; returns the entries written. */
  build(definition: D, record: IndexedRecord): number;
  finish(definition: D): BuildProblem | undefined;
  remove(definition: D): void;
  /**
   * The dimension a vector index has settled on (declared, or fixed by its first vector and persisted by the family
   * in `meta` inside the transaction that indexed it); undefined elsewhere. Shown by `db.indexes()`.
   */
  dimensionOf?(definition: D): number | undefined;
}
