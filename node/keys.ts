/**
 * The LMDB key layout of one partition. Every key is raw bytes so that LMDB's byte order is the order we scan in:
 *
 *   nodes / edges / vectors   id(8, big-endian)                                → msgpackr record
 *   vector_props              id(8, big-endian)                                → [label, props] of a vector record
 *   adjacency_out             source(8) | edge label (UTF-8) | 0x00 [| fence(8)] → packed block (adjacency.ts)
 *   adjacency_in              target(8) | edge label (UTF-8) | 0x00 [| fence(8)] → packed block (adjacency.ts)
 *   labels                    kind(1) | label (UTF-8) | 0x00 | id(8)           → empty   (nodes and vectors only)
 *   index                     kind(1) | label | 0x00 | field | 0x00 | value | id(8) → empty  (secondary indexes)
 *
 * `value` in an index key is the order-preserving, prefix-free encoding of index-encoding.ts, so "records of label
 * L whose field F lies in [a, b]" is one range of `index`, in value order and then ID order.
 *
 * Architecture invariant: "edges with label L out of node N" is the one prefix `N | L | 0x00` of `adjacency_out`,
 * and "all edges out of N" the prefix `N`. Labels never contain 0x00 (the schema and the tree validator only admit
 * identifiers), so the separator cannot occur inside a label. Up to data format 2 the sub-databases `out` and `in`
 * held one entry per edge, `owner | label | 0x00 | edge(8) → other(8) | kind(1)`; a writer's open converts them
 * (adjacency-upgrade.ts).
 */

import { writeU64 } from "../protocol/ids.js";

export const ID_BYTES = 8;
/** The longest key lmdb-js stores (its compile-time maximum, default page size); a longer one fails the whole write. */
export const KEY_BYTES_MAX = 1_978;

export type RecordKind = "node" | "edge" | "vector";

/** A record kind as one byte: in label and index keys, and as the other end's kind in adjacency entries. */
export const KIND_BYTE: Readonly<Record<RecordKind, number>> = { node: 0x4e, edge: 0x45, vector: 0x56 };

export function idKey(id: bigint): Buffer {
  const key = Buffer.allocUnsafe(ID_BYTES);
  writeU64(key, id, 0);
  return key;
}

/** Reads a big-endian u64. LMDB hands out Buffers; a plain Uint8Array is wrapped (slower, never on hot paths). */
export function readId(bytes: Uint8Array, offset = 0): bigint {
  const buffer = bytes instanceof Buffer ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return buffer.readBigUInt64BE(offset);
}

/** The [start, end) key range of one owner's adjacency, optionally narrowed to one edge label. */
export function adjacencyRange(owner: bigint, label?: string): { start: Buffer; end: Buffer } {
  if (label === undefined) {
    const start = idKey(owner);
    // The 9-byte key owner|0xFF.. sorts after every key of this owner because labels are UTF-8 text, which never
    // starts with 0xFF.
    const end = Buffer.concat([start, Buffer.from([0xff])]);
    return { start, end };
  }
  const labelBytes = Buffer.byteLength(label, "utf8");
  const start = Buffer.allocUnsafe(ID_BYTES + labelBytes + 1);
  writeU64(start, owner, 0);
  start.write(label, ID_BYTES, "utf8");
  start[ID_BYTES + labelBytes] = 0;
  const end = Buffer.from(start);
  end[end.length - 1] = 1;
  return { start, end };
}

export function labelKey(kind: RecordKind, label: string, id: bigint): Buffer {
  const labelBytes = Buffer.byteLength(label, "utf8");
  const key = Buffer.allocUnsafe(1 + labelBytes + 1 + ID_BYTES);
  key[0] = KIND_BYTE[kind];
  key.write(label, 1, "utf8");
  key[1 + labelBytes] = 0;
  writeU64(key, id, 2 + labelBytes);
  return key;
}

export function labelRange(kind: RecordKind, label: string): { start: Buffer; end: Buffer } {
  const labelBytes = Buffer.byteLength(label, "utf8");
  const start = Buffer.allocUnsafe(1 + labelBytes + 1);
  start[0] = KIND_BYTE[kind];
  start.write(label, 1, "utf8");
  start[1 + labelBytes] = 0;
  const end = Buffer.from(start);
  end[end.length - 1] = 1;
  return { start, end };
}

/** The prefix of every entry of one secondary index (kind, label and field; fields are identifiers, never 0x00). */
export function indexPrefix(kind: RecordKind, label: string, field: string): Buffer {
  const labelBytes = Buffer.byteLength(label, "utf8");
  const fieldBytes = Buffer.byteLength(field, "utf8");
  const prefix = Buffer.allocUnsafe(1 + labelBytes + 1 + fieldBytes + 1);
  prefix[0] = KIND_BYTE[kind];
  prefix.write(label, 1, "utf8");
  prefix[1 + labelBytes] = 0;
  prefix.write(field, 2 + labelBytes, "utf8");
  prefix[prefix.length - 1] = 0;
  return prefix;
}

/** One index entry's key: prefix | encoded value | the record's ID, copied from `ids` at `idAt`. */
export function indexKeyFrom(prefix: Buffer, value: Buffer, ids: Buffer, idAt: number): Buffer {
  const key = Buffer.allocUnsafe(prefix.length + value.length + ID_BYTES);
  prefix.copy(key, 0);
  value.copy(key, prefix.length);
  copyBytes(ids, idAt, key, prefix.length + value.length, ID_BYTES);
  return key;
}

/** The end of a key range that covers every ID of one value (9 × 0xFF sorts after any 8-byte ID). */
export const AFTER_EVERY_ID = Buffer.alloc(ID_BYTES + 1, 0xff);

// Builders from raw bytes: the same keys as above, assembled from the 8-byte IDs inside an encoded mutation list
// (protocol/mutation-codec.ts) without a BigInt in between.

export function labelKeyFrom(kind: RecordKind, label: Buffer, ids: Buffer, idAt: number): Buffer {
  const key = Buffer.allocUnsafe(1 + label.length + 1 + ID_BYTES);
  key[0] = KIND_BYTE[kind];
  copyBytes(label, 0, key, 1, label.length);
  key[1 + label.length] = 0;
  copyBytes(ids, idAt, key, 2 + label.length, ID_BYTES);
  return key;
}

/**
 * Copies a few bytes. For the 8-byte IDs and short labels of keys a plain loop is several times faster than
 * Buffer#copy, whose argument checks dominate at this size.
 */
export function copyBytes(source: Uint8Array, sourceAt: number, target: Uint8Array, targetAt: number, length: number): void {
  for (let i = 0; i < length; i += 1) target[targetAt + i] = source[sourceAt + i];
}
