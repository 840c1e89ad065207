/**
 * Records and the primitive mutations a transaction is reduced to. A coordinator turns an operation tree into one
 * list of mutations per partition (its sub-plan); a partition applies its list in one LMDB transaction, or holds it
 * as a prepared intent during two-phase commit. These types cross the transport, so they hold only what msgpackr
 * encodes: bigint IDs, strings, plain objects, typed arrays.
 */
import type { Properties, Value } from "./values.js";
import { unreachable } from "./errors.js";

export type RecordKind = "node" | "edge" | "vector";

export interface NodeRecord {
  readonly kind: "node";
  readonly id: bigint;
  readonly label: string;
  readonly props: Properties;
}

/** The kinds of record an edge can join. */
export type EndpointKind = "node" | "vector";

export interface EdgeRecord {
  readonly kind: "edge";
  readonly id: bigint;
  readonly label: string;
  readonly from: bigint;
  readonly to: bigint;
  readonly fromKind: EndpointKind;
  readonly toKind: EndpointKind;
  readonly props: Properties;
}

export interface VectorRecord {
  readonly kind: "vector";
  readonly id: bigint;
  readonly label: string;
  readonly vector: Float64Array;
  readonly props: Properties;
}

export type StoredRecord = NodeRecord | EdgeRecord | VectorRecord;

/** One adjacency entry as seen from its owner: the edge, its label and the record at the other end. */
export interface AdjacencyEntry {
  readonly edge: bigint;
  readonly label: string;
  readonly other: bigint;
  readonly otherKind: EndpointKind;
}

export type Direction = "out" | "in";

/**
 * One interval of an indexed field's values for a secondary-index lookup; null is unbounded (null itself is never
 * indexed). An equality is the interval [v, v].
 */
export interface IndexRange {
  readonly low: Value | null;
  readonly lowInclusive: boolean;
  readonly high: Value | null;
  readonly highInclusive: boolean;
}

/** An inclusive range of IDs (a partition owns a set of them; rebalancing moves them between partitions). */
export interface IdRange {
  readonly first: bigint;
  readonly last: bigint;
}

/** One search result: a record and its score (a vector search's distance, lower is better; BM25, higher is better). */
export interface SearchHit {
  readonly id: bigint;
  readonly score: number;
}

/** The k nearest records of an active vector index, or of `candidates` only (exact membership) when given. */
export interface VectorSearchRequest {
  readonly kind: RecordKind;
  readonly label: string;
  /** A property, or VECTOR_FIELD (protocol/indexes.ts) for a `V::` record's own vector. */
  readonly field: string;
  readonly vector: Float32Array;
  /**
   * The query as the caller's plain numbers, when it came as an array of them: handed to hnswlib-node as it is (it
   * takes number[] and rounds each to float32, as `vector` holds them), instead of converting `vector` back. Never
   * sent between processes.
   */
  readonly components?: readonly number[];
  readonly k: number;
  /** The beam width of the graph walk, over the index's own (protocol/indexes.ts VECTOR_EF_MAX). */
  readonly ef?: number;
  /** The tenant partition (tenantKey of the value); required exactly when the index is tenant-partitioned. */
  readonly tenant?: string;
  readonly candidates?: readonly bigint[];
  /** The searching invocation's own uncommitted writes, which the search must see (txn-view.ts). */
  readonly overlay?: SearchOverlay;
}

/**
 * What a search merges over the committed index: `changed` records' committed entries are stale (left out), and
 * `records` are their current forms of the searched kind and label, ranked exactly.
 */
export interface SearchOverlay {
  readonly changed: readonly bigint[];
  readonly records: readonly { readonly id: bigint; readonly props: Properties; readonly vector?: Float64Array }[];
}

/** The k best BM25 matches of an active text index (every text index of the label when `field` is absent). */
export interface TextSearchRequest {
  readonly kind: RecordKind;
  readonly label: string;
  readonly field?: string;
  readonly text: string;
  readonly k: number;
  readonly tenant?: string;
  readonly candidates?: readonly bigint[];
}

/**
 * The primitive writes. Each names the partition-owned key it touches: records by their id, the out-adjacency by the
 * edge's source, the in-adjacency by the edge's target. An edge record's own write also writes its out-adjacency when
 * the same partition owns the edge and its source (always, until a rebalance moves one of them); otherwise the
 * coordinator adds a `put_out`/`delete_out` for the source's partition.
 */
export type Mutation =
  | { readonly op: "put_record"; readonly record: StoredRecord }
  | { readonly op: "delete_record"; readonly record: StoredRecord }
  | {
      readonly op: "put_in";
      readonly target: bigint;
      readonly label: string;
      readonly edge: bigint;
      readonly source: bigint;
      readonly sourceKind: EndpointKind;
    }
  | { readonly op: "delete_in"; readonly target: bigint; readonly label: string; readonly edge: bigint }
  | {
      readonly op: "put_out";
      readonly source: bigint;
      readonly label: string;
      readonly edge: bigint;
      readonly target: bigint;
      readonly targetKind: EndpointKind;
    }
  | { readonly op: "delete_out"; readonly source: bigint; readonly label: string; readonly edge: bigint };

/** The id whose owning partition must apply this mutation. */
export function mutationOwner(mutation: Mutation): bigint {
  switch (mutation.op) {
    case "put_record":
    case "delete_record":
      return mutation.record.id;
    case "put_in":
    case "delete_in":
      return mutation.target;
    case "put_out":
    case "delete_out":
      return mutation.source;
    default:
      return unreachable(mutation, "mutation");
  }
}
