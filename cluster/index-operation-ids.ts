/**
 * Operation IDs of index operations in HelixDB's form, a canonical lowercase UUID, which its SDKs send back in
 * `get_index_operation`, `retry_index_operation` and `abort_index_operation`. Silk keeps one build per index, so an
 * index's operation ID is a function of the index alone: the same on every partition, after a restart, and again
 * for an index that is dropped and created anew. Nothing is stored; an operation is found by comparing IDs.
 */
import { createHash } from "node:crypto";
import type { RecordKind } from "../protocol/records.js";

/**
 * HelixDB's `index_id` of an index, a non-zero u64 as a decimal string: the first 8 bytes of the same SHA-256 (1
 * in the one case in 2^64 where they are all zero).
 */
export function indexNumericId(kind: RecordKind, name: string): string {
  const id = createHash("sha256").update(`${kind}\0${name}`).digest().readBigUInt64BE(0);
  return String(id === 0n ? 1n : id);
}

/** A UUID of version 8 (RFC 9562, custom) whose other bits are the SHA-256 of the index's kind and name. */
export function indexOperationId(kind: RecordKind, name: string): string {
  const hex = createHash("sha256").update(`${kind}\0${name}`).digest("hex");
  const variant = ((Number.parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
