/**
 * How records are stored in a partition's LMDB: a node `[label, props]` and a vector `[label, vector, props]` in
 * msgpack (a vector's `[label, props]` also apart, `labelAndPropsFrom`), an edge as a fixed binary header (from, to,
 * endpoint kinds, label) followed by its msgpack properties only when it has any. The write path assembles values
 * straight from an encoded mutation list's bytes (`encodeRecordFrom`), which must give exactly the bytes `encodeRecord` gives for the materialised record, but for
 * one difference that decodes the same: a node or vector without properties ends in the one-byte empty map, where
 * msgpackr writes `{}` as a three-byte map16.
 */
import { Packr } from "msgpackr";
import { writeU64 } from "../protocol/ids.js";
import { ENDPOINT_KIND_BYTES, type EncodedLabel, type EncodedRecord } from "../protocol/mutation-codec.js";
import type { RecordKind, StoredRecord } from "../protocol/records.js";
import type { Properties } from "../protocol/values.js";
import { copyBytes, ID_BYTES } from "./keys.js";
import type { IndexedRecord } from "./index-family.js";
import { unreachable } from "../protocol/errors.js";

/** msgpackr settings shared by every stored value: bigints and typed arrays round-trip exactly. */
export const packr = new Packr({ useRecords: false, moreTypes: true, useBigIntExtension: true });

type StoredNode = [label: string, props: Properties];
type StoredVector = [label: string, vector: Float64Array, props: Properties];

/** The properties of a record of an encoded list. */
export function propsOf(bytes: Buffer, record: EncodedRecord): Properties {
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

export function decodeEdge(id: bigint, bytes: Buffer): StoredRecord {
  const labelEnd = EDGE_HEADER_BYTES + bytes[18];
  return {
    kind: "edge",
    id,
    label: bytes.toString("utf8", EDGE_HEADER_BYTES, labelEnd),
    from: bytes.readBigUInt64BE(0),
    to: bytes.readBigUInt64BE(8),
    fromKind: bytes[16] === 1 ? "vector" : "node",
    toKind: bytes[17] === 1 ? "vector" : "node",
    props: labelEnd === bytes.length ? {} : (unpackr.unpack(bytes.subarray(labelEnd)) as Properties),
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
export function encodeRecordFrom(bytes: Buffer, record: EncodedRecord): Buffer {
  switch (record.kind) {
    case "node":
      return labelAndPropsFrom(bytes, record);
    case "vector":
      return Buffer.concat([ARRAY_OF_THREE, packedLabel(record.label), packr.pack(record.vector), packedPropsOf(bytes, record)]);
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
    default:
      return unreachable(record.kind, "kind");
  }
}

/**
 * `[label, props]` of a record of an encoded list: a node's value, and a vector record's label and properties
 * without its vector, stored beside the record so that a query that returns only properties of its hits reads a few
 * bytes per hit instead of the whole vector (vector-reads.ts).
 */
export function labelAndPropsFrom(bytes: Buffer, record: EncodedRecord): Buffer {
  return Buffer.concat([ARRAY_OF_TWO, packedLabel(record.label), packedPropsOf(bytes, record)]);
}

/** The packed properties of a record of an encoded list (the one-byte empty map when it has none). */
function packedPropsOf(bytes: Buffer, record: EncodedRecord): Buffer {
  return record.propsLength === 0 ? EMPTY_MAP : bytes.subarray(record.propsAt, record.propsAt + record.propsLength);
}

/**
 * The vector of a vector record read without it (Snapshot.vectorRecordProps): empty, and recognised by identity, so
 * that code which would render or compare it can refuse instead.
 */
export const VECTOR_NOT_LOADED = new Float64Array(0);

/** A vector record's value apart (labelAndPropsFrom), decoded as a record whose vector is VECTOR_NOT_LOADED. */
export function decodeVectorProps(id: bigint, bytes: Buffer): StoredRecord {
  const [label, props] = unpackr.unpack(bytes) as StoredNode;
  return { kind: "vector", id, label, vector: VECTOR_NOT_LOADED, props };
}

/**
 * The stored values of one write transaction's records, with one reusable buffer per label for edges without
 * properties (most of a graph), whose header is all that changes from edge to edge. lmdb-js copies a value into
 * LMDB before `putSync` returns inside `transactionSync` (on databases without its value cache, as the partition's
 * are); hand these values to nothing else.
 */
export class RecordValueScratch {
  private readonly edgeValues = new Map<Buffer, Buffer>();

  /** The same bytes as `encodeRecordFrom`. */
  value(bytes: Buffer, record: EncodedRecord): Buffer {
    if (record.kind !== "edge" || record.propsLength !== 0) return encodeRecordFrom(bytes, record);
    const value = this.edgeValues.get(record.label.bytes);
    if (value === undefined) {
      const built = encodeRecordFrom(bytes, record);
      this.edgeValues.set(record.label.bytes, built);
      return built;
    }
    copyBytes(bytes, record.fromAt, value, 0, ID_BYTES);
    copyBytes(bytes, record.toAt, value, 8, ID_BYTES);
    value[16] = record.fromKindByte === ENDPOINT_KIND_BYTES.vector ? 1 : 0;
    value[17] = record.toKindByte === ENDPOINT_KIND_BYTES.vector ? 1 : 0;
    return value;
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
    default:
      return unreachable(record, "record");
  }
}

/** A record as index maintenance sees it. */
export function indexedRecord(record: StoredRecord): IndexedRecord {
  return record.kind === "vector" ? { id: record.id, props: record.props, vector: record.vector } : { id: record.id, props: record.props };
}

/**
 * Reads stored values. It copies bytes values out of the buffer it reads, so a record may be decoded straight from
 * the buffer lmdb-js reuses for the next read (`getBinaryFast`), without copying the whole value first.
 */
const unpackr = new Packr({ useRecords: false, moreTypes: true, useBigIntExtension: true, copyBuffers: true });

/** A stored record from its value; `bytes` may be overwritten once this returns (nothing of the record refers to it). */
export function decodeRecord(kind: RecordKind, id: bigint, bytes: Buffer): StoredRecord {
  switch (kind) {
    case "node": {
      const [label, props] = unpackr.unpack(bytes) as StoredNode;
      return { kind, id, label, props };
    }
    case "edge":
      return decodeEdge(id, bytes);
    case "vector": {
      const fast = decodeVectorRecord(id, bytes);
      if (fast !== undefined) return fast;
      const [label, vector, props] = unpackr.unpack(bytes) as StoredVector;
      return { kind, id, label, vector, props };
    }
    default:
      return unreachable(kind, "kind");
  }
}

/** msgpackr's code for a Float64Array inside its typed-array extension (0x74), read off an encoded one. */
const FLOAT64_ARRAY_CODE = packr.pack(Float64Array.of(0))[3];
const TYPED_ARRAY_EXTENSION = 0x74;

/** Where a stored vector record `[label, Float64Array, props]` keeps its label's and its vector's bytes. */
interface VectorLayout {
  readonly labelAt: number;
  readonly labelLength: number;
  /** The first byte of the vector's float64s, in this machine's order (as msgpackr writes them). */
  readonly vectorAt: number;
  readonly vectorBytes: number;
}

/** The layout of a stored vector record read off its msgpack headers; undefined for any other layout. */
function vectorLayout(bytes: Buffer): VectorLayout | undefined {
  if (bytes[0] !== 0x93) return undefined; // a fixarray of three
  let at = 1;
  let labelLength: number;
  if ((bytes[at] & 0xe0) === 0xa0) {
    labelLength = bytes[at] & 0x1f; // fixstr
    at += 1;
  } else if (bytes[at] === 0xd9) {
    labelLength = bytes[at + 1]; // str8 (labels are at most 255 bytes)
    at += 2;
  } else return undefined;
  const labelAt = at;
  at += labelLength;
  let dataLength: number;
  switch (bytes[at]) {
    case 0xc7:
      dataLength = bytes[at + 1];
      at += 2;
      break;
    case 0xc8:
      dataLength = bytes.readUInt16BE(at + 1);
      at += 3;
      break;
    case 0xc9:
      dataLength = bytes.readUInt32BE(at + 1);
      at += 5;
      break;
    default:
      return undefined;
  }
  // The extension's data is the typed array's code, then its bytes.
  const vectorBytes = dataLength - 1;
  if (bytes[at] !== TYPED_ARRAY_EXTENSION || bytes[at + 1] !== FLOAT64_ARRAY_CODE || vectorBytes % 8 !== 0) return undefined;
  at += 2;
  if (at + vectorBytes > bytes.length) return undefined;
  return { labelAt, labelLength, vectorAt: at, vectorBytes };
}

/**
 * A vector record `[label, Float64Array, props]` read field by field: the label's string, the vector's bytes copied
 * once into its own buffer, then only the properties through msgpackr. msgpackr's generic path costs three times as
 * much for a 784-dimension vector, and a search loads every hit. Undefined for any other layout (decodeRecord then
 * takes msgpackr's path), so the result is always what msgpackr would give.
 */
function decodeVectorRecord(id: bigint, bytes: Buffer): StoredRecord | undefined {
  const layout = vectorLayout(bytes);
  if (layout === undefined) return undefined;
  const { labelAt, labelLength, vectorAt, vectorBytes } = layout;
  const label = bytes.toString("utf8", labelAt, labelAt + labelLength);
  const vector = vectorSlabs.copy(bytes, vectorAt, vectorBytes);
  const props = unpackr.unpack(bytes.subarray(vectorAt + vectorBytes)) as Properties;
  return { kind: "vector", id, label, vector, props };
}

/** The aligned float64s `storedVectorInto` copies a vector's bytes into before rounding them (grown on demand). */
let vectorScratch = new Float64Array(1_024);

/**
 * A stored vector record's vector rounded to float32 into `into`, without decoding the record (the vector family's
 * exact scans read vectors this way rather than keep a copy of each in memory): true when the vector has `into`'s
 * length, false when it has another; undefined for a value of another layout (decode it instead). `bytes` may be
 * lmdb-js's reused buffer: nothing of it is kept.
 */
export function storedVectorInto(bytes: Buffer, into: Float32Array): boolean | undefined {
  const layout = vectorLayout(bytes);
  if (layout === undefined) return undefined;
  if (layout.vectorBytes !== into.length * 8) return false;
  if (vectorScratch.length < into.length) vectorScratch = new Float64Array(into.length);
  new Uint8Array(vectorScratch.buffer, 0, layout.vectorBytes).set(bytes.subarray(layout.vectorAt, layout.vectorAt + layout.vectorBytes));
  into.set(vectorScratch.subarray(0, into.length)); // float64 to float32, rounded as indexVector rounds
  return true;
}

/**
 * Decoded vectors as views on shared slabs: a typed array of its own costs about 2.5 us to allocate at 784
 * dimensions (a backing store outside the heap) against 0.05 us for a view, and a search decodes every hit. A slab
 * is freed once no vector on it is referenced; decoded records live for one invocation, and the index graphs keep
 * copies of their own (indexVector), so slabs do not pin memory for long.
 */
class VectorSlabs {
  private slab = new ArrayBuffer(VECTOR_SLAB_BYTES);
  private used = 0;

  /** A Float64Array holding `byteLength` bytes of `bytes` from `at` (a multiple of 8). */
  copy(bytes: Buffer, at: number, byteLength: number): Float64Array {
    if (byteLength > VECTOR_SLAB_BYTES / 4) {
      const own = new Float64Array(byteLength / 8);
      new Uint8Array(own.buffer).set(bytes.subarray(at, at + byteLength));
      return own;
    }
    if (this.used + byteLength > VECTOR_SLAB_BYTES) {
      this.slab = new ArrayBuffer(VECTOR_SLAB_BYTES);
      this.used = 0;
    }
    new Uint8Array(this.slab, this.used, byteLength).set(bytes.subarray(at, at + byteLength));
    const vector = new Float64Array(this.slab, this.used, byteLength / 8);
    this.used += byteLength;
    return vector;
  }
}

const VECTOR_SLAB_BYTES = 256 * 1024;
const vectorSlabs = new VectorSlabs();

