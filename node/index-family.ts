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
 * a chunk (inside the chunk's transaction), then `finish` after the last chunk, then `commit` as after any write.
 * `remove` (inside a transaction) deletes every entry of an index: a drop, a reconcile, a blocked build, a retry.
 *
 * Architecture invariant: a family changes storage only inside the transaction it is called in, and in-memory
 * structures (the vector family's graphs) only in `commit`, so a failed transaction leaves nothing behind. A
 * SilkError thrown by `put`, `delete`, `flush` or `build` aborts the transaction; during a build it blocks the index
 * with the error's code as its reason and its message.
 */
import type { ErrorCode } from "../protocol/errors.js";
import type { IndexDefinition, IndexStateName } from "../protocol/indexes.js";
import type { Properties } from "../protocol/values.js";

/** A record as index maintenance sees it: its properties, and for a `V::` record its vector. */
export interface IndexedRecord {
  readonly id: bigint;
  readonly props: Properties;
  readonly vector?: Float64Array;
}

/** Why a finished build cannot activate: an error code and a message naming the value. */
export interface BuildProblem {
  readonly reason: ErrorCode;
  readonly message: string;
}

export interface IndexFamilyStore<D extends IndexDefinition> {
  /**
   * Takes an index the catalog knows, with its persisted state: at open, after `create`, and after a build restarts.
   * The vector family (re)builds its in-memory graphs of an active index here, from the committed records.
   */
  load(definition: D, state: IndexStateName, dimension: number | undefined): void;
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
  /** The dimension a vector index has settled on (declared, or fixed by its first vector); undefined elsewhere. */
  dimensionOf?(definition: D): number | undefined;
}
