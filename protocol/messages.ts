/**
 * The messages between the coordinator and partition actors. They cross the transport msgpackr-encoded (in-process
 * today; NATS in the cluster), so they carry only plain data: bigints, strings, typed arrays, decoded plans.
 */
import { addExtension, Packr } from "msgpackr";
import type { ErrorCode } from "./errors.js";
import { JsonId } from "./ids.js";
import type { IndexDefinition, IndexStatus } from "./indexes.js";
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
} from "./records.js";
import type { Plan } from "./tree.js";

/**
 * Result rows per returned name, already in JSON form (IDs as decimal strings, or as JsonId where the plan asks for
 * `idsAsNumbers`): what running a plan answers, on a partition (the `result` reply), through the coordinator, and to
 * the embedded API and the gateway.
 */
export type QueryResult = Record<string, unknown>;

/**
 * What an invocation read on one partition, for validation at its leader (docs/ISOLATION.md, "Several
 * coordinators"): the smallest log sequence among the snapshots it read there, the keys it read (`r<id>` a record,
 * `a<id>` the adjacency of `id`), and whether it read more than those keys (a scan, an index, a search, a count):
 * then the whole partition.
 */
export interface ReadSet {
  readonly sequence: number;
  readonly keys: readonly string[];
  readonly whole: boolean;
}

export type PartitionRequest =
  /** Runs a whole plan on this partition in one LMDB transaction (the single-partition fast path). */
  | { readonly type: "execute"; readonly plan: Plan }
  /** Keeps a plan on the partition so repeated runs send only its number and parameters (prepared queries). */
  | { readonly type: "register_plan"; readonly planId: number; readonly plan: Plan }
  /** `timeoutMs` is what is left of the invocation's deadline when the coordinator sends it (none: no deadline). */
  | { readonly type: "execute_prepared"; readonly planId: number; readonly parameters: Readonly<Record<string, unknown>>; readonly timeoutMs?: number }
  | { readonly type: "release_plan"; readonly planId: number }
  | { readonly type: "read_records"; readonly kind: RecordKind; readonly ids: readonly bigint[] }
  | { readonly type: "read_adjacency"; readonly owners: readonly bigint[]; readonly direction: Direction; readonly label?: string }
  | { readonly type: "read_label"; readonly kind: RecordKind; readonly label: string }
  | { readonly type: "read_all"; readonly kind: RecordKind }
  /** Records of a label whose field lies in any range, through the partition's active secondary index. */
  | { readonly type: "read_index"; readonly kind: RecordKind; readonly label: string; readonly field: string; readonly ranges: readonly IndexRange[] }
  /** The partition's k best hits of an active vector or text index (the coordinator merges partitions). */
  | { readonly type: "vector_search"; readonly request: VectorSearchRequest }
  | { readonly type: "text_search"; readonly request: TextSearchRequest }
  /** Rebalancing (cluster/nats/rebalance.ts): the ranges a partition owns; a range's data as a `put` list; taking and giving ranges. */
  | { readonly type: "owned_ranges" }
  | { readonly type: "export_range"; readonly range: IdRange }
  | { readonly type: "add_ranges"; readonly ranges: readonly IdRange[] }
  | { readonly type: "drop_range"; readonly range: IdRange }
  /** Reserves `count` consecutive IDs from the partition's range; the reply names the first. */
  | { readonly type: "allocate_ids"; readonly count: number }
  /**
   * A single-partition commit of a coordinator-planned transaction; `batch` is an encoded mutation list. With `reads`
   * (several coordinators) the leader first validates them and checks the batch against prepared intents' locks,
   * refusing with transaction_conflict.
   */
  | { readonly type: "apply"; readonly batch: Uint8Array; readonly reads?: ReadSet }
  /** `reads`: as `apply`'s; a prepared intent then holds its read keys shared and its written keys exclusively. */
  | { readonly type: "prepare"; readonly txid: string; readonly batch: Uint8Array; readonly reads?: ReadSet }
  /** A read (any request isReadRequest accepts) answered by the leader with the log sequence of the snapshot it read. */
  | { readonly type: "versioned"; readonly request: PartitionRequest }
  /** Validates a read-only invocation's reads of this partition (no lock, nothing logged): done, or transaction_conflict. */
  | { readonly type: "validate"; readonly reads: ReadSet }
  | { readonly type: "commit"; readonly txid: string }
  | { readonly type: "abort"; readonly txid: string }
  | { readonly type: "pending_intents" }
  /** Every index of the partition, with its state and counters. */
  | { readonly type: "index_statuses" }
  /** Registers a runtime index (`create_index`); the partition builds it in the background. */
  | { readonly type: "index_create"; readonly definition: IndexDefinition }
  /**
   * Drops a runtime index (`drop_index`, and `abort_index_operation`), or restarts a blocked build
   * (`retry_index_operation`). An abort's drop carries the build as its abort answered it (`aborted`), which the
   * partition keeps until the index is created again (`indexes` replies' `aborted`).
   */
  | { readonly type: "index_drop"; readonly kind: IndexDefinition["kind"]; readonly name: string; readonly aborted?: IndexStatus }
  | { readonly type: "index_retry"; readonly kind: IndexDefinition["kind"]; readonly name: string }
  /** A secondary index's entries, `encoded value | id` in value order (the coordinator's UNIQUE check across partitions). */
  | { readonly type: "index_entries"; readonly kind: IndexDefinition["kind"]; readonly name: string }
  /** The coordinator's verdict on a `validating` UNIQUE index: active, or blocked by the duplicate it found. */
  | {
      readonly type: "index_validated";
      readonly kind: IndexDefinition["kind"];
      readonly name: string;
      readonly blocked?: { readonly reason: string; readonly message: string };
    };

/** Requests that only read a partition's committed state (besides an `execute` of a read plan). */
const READ_REQUEST_TYPES: ReadonlySet<PartitionRequest["type"]> = new Set<PartitionRequest["type"]>([
  "read_records", "read_adjacency", "read_label", "read_all", "read_index", "vector_search", "text_search", "index_statuses",
]);

/** Whether a request only reads: any replica may answer it from its applied state (a cluster's stale reads). */
export function isReadRequest(request: PartitionRequest): boolean {
  return request.type === "execute" ? request.plan.requestType === "read" : READ_REQUEST_TYPES.has(request.type);
}

export type PartitionReplyBody =
  | { readonly type: "result"; readonly result: QueryResult }
  | { readonly type: "records"; readonly records: (StoredRecord | undefined)[] }
  | { readonly type: "adjacency"; readonly lists: AdjacencyEntry[][] }
  | { readonly type: "ids"; readonly ids: bigint[] }
  /** null when the partition has no active index of that field (the caller scans instead). */
  | { readonly type: "index_ids"; readonly ids: bigint[] | null }
  | { readonly type: "hits"; readonly hits: SearchHit[] }
  | { readonly type: "ranges"; readonly ranges: readonly IdRange[] }
  /** An encoded mutation list (protocol/mutation-codec.ts). */
  | { readonly type: "batch"; readonly batch: Uint8Array }
  | { readonly type: "id"; readonly id: bigint }
  | { readonly type: "intents"; readonly txids: string[] }
  | { readonly type: "indexes"; readonly statuses: IndexStatus[]; readonly aborted?: IndexStatus[] }
  | { readonly type: "index_entries"; readonly entries: Uint8Array[] }
  | { readonly type: "done" }
  /** The reply to `versioned`: the read's own reply and the log sequence its snapshot holds. */
  | { readonly type: "versioned"; readonly sequence: number; readonly body: PartitionReplyBody };

export type PartitionReply =
  | { readonly ok: true; readonly body: PartitionReplyBody }
  | { readonly ok: false; readonly code: ErrorCode; readonly message: string };

/**
 * The wire codec of these messages: msgpackr maps. Mutation lists travel already encoded (mutation-codec.ts), as
 * bytes, which msgpack carries without a copy per element.
 */
const wire = new Packr({ useRecords: false, moreTypes: true, useBigIntExtension: true });
/** A JsonId in a `result` reply stays one (msgpack would make it a plain map): extension type 73, its bigint. */
const JSON_ID_EXTENSION_TYPE = 73;
addExtension({ Class: JsonId, type: JSON_ID_EXTENSION_TYPE, write: (json: JsonId) => json.id, read: (id: bigint) => new JsonId(id) });

/**
 * msgpackr packs each message after the previous one in one shared buffer, and when a big message (a bulk-import
 * batch) has grown that buffer it keeps it, and every later refill allocates another buffer of that size: small
 * messages then land on fresh, never-touched pages, a page fault every few messages. After a message that leaves
 * the buffer larger than this, the encoder gets a small one again (measured on a 1-hop query after a bulk load:
 * 120 us → 82 us per query, a point get 17 us → 12 us).
 */
const WIRE_BUFFER_BYTES_MAX = 64 * 1024;
const WIRE_BUFFER_BYTES = 8 * 1024;

export function encodeMessage(message: PartitionRequest | PartitionReply): Buffer {
  const bytes = wire.pack(message);
  // The returned bytes keep the old buffer alive for as long as the caller needs them; the encoder moves on.
  if (bytes.buffer.byteLength > WIRE_BUFFER_BYTES_MAX) wire.useBuffer(Buffer.allocUnsafeSlow(WIRE_BUFFER_BYTES));
  return bytes;
}

export function decodeMessage<T extends PartitionRequest | PartitionReply>(bytes: Buffer): T {
  return wire.unpack(bytes) as T;
}
