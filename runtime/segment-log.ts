/**
 * The database's log in a bucket (docs/STORAGE.md, "The log: what a segment holds"): committed changes as records of
 * immutable segment objects `segments/<seq, 20 digits>.seg`, numbered 1, 2, 3 ... without gaps. A record is one
 * partition's log entry (node/store/log-entry.ts, the format the cluster replicates) or a two-phase-commit decision of the
 * coordinator. A record's place in the log is one number, `seq * 2^16 + index`, which a partition records with the
 * entry's effect (PartitionStore.atLogSequence), so a replay skips what a partition already holds.
 *
 * Layout of a segment object: msgpack `{ format, epoch, seq, records }` (each record its own msgpack bytes) followed by the CRC-32 of those bytes (4 bytes,
 * big-endian). A segment is whole or absent in the bucket; a checksum that does not match is a damaged bucket.
 */
import { Packr } from "msgpackr";
import { crc32 } from "node:zlib";
import { SilkError } from "../protocol/errors.js";
import type { LogEntry } from "../node/store/log-entry.js";
import type { Outcome } from "../cluster/decision-log.js";

export const SEGMENT_FORMAT = 1;
/** Records a segment holds at most: a record's index is the low 16 bits of its sequence. */
export const SEGMENT_RECORDS_MAX = 1 << 16;
const CHECKSUM_BYTES = 4;

export type SegmentRecord =
  | { readonly partition: number; readonly entry: LogEntry }
  | { readonly decision: { readonly txid: string; readonly outcome: Outcome; readonly participants: readonly number[] } };

export interface Segment {
  readonly format: number;
  /** The epoch of the writer that wrote it (bucket-manifest.ts); a fence segment has no records. */
  readonly epoch: number;
  readonly seq: number;
  readonly records: readonly SegmentRecord[];
}

/** Bigints (reserve_ids), byte arrays (mutation lists) and index definitions round-trip as they are. */
const codec = new Packr({ useRecords: false, moreTypes: true, useBigIntExtension: true });

/** The object name of segment `seq`: 20 zero-padded digits, so names sort as the numbers do. */
export function segmentName(seq: number): string {
  return `segments/${String(seq).padStart(20, "0")}.seg`;
}

/** The log position of a segment's record. */
export function recordSequence(seq: number, index: number): number {
  return seq * SEGMENT_RECORDS_MAX + index;
}

/** The segment a log position belongs to (0: before the first segment). */
export function segmentOf(sequence: number): number {
  return Math.floor(sequence / SEGMENT_RECORDS_MAX);
}

export function encodeRecord(record: SegmentRecord): Uint8Array {
  return codec.pack(record);
}

export function decodeRecord(bytes: Uint8Array): SegmentRecord {
  return codec.unpack(bytes) as SegmentRecord;
}

/** A segment's bytes from records already encoded (the shipper encodes each record once, when it is staged). */
export function encodeSegment(epoch: number, seq: number, records: readonly Uint8Array[]): Uint8Array {
  if (records.length > SEGMENT_RECORDS_MAX) throw new SilkError("internal", `internal error (a bug in Silk): a segment of ${records.length} records`);
  const body = codec.pack({ format: SEGMENT_FORMAT, epoch, seq, records });
  const checksum = Buffer.alloc(CHECKSUM_BYTES);
  checksum.writeUInt32BE(crc32(body));
  return Buffer.concat([body, checksum]);
}

/** Decodes a segment object; `expectedSeq` is the number it was read under. A damaged one is `storage_unavailable`. */
export function decodeSegment(bytes: Uint8Array, expectedSeq: number, bucket: string): Segment {
  const damaged = (why: string): SilkError => new SilkError("storage_unavailable", `${segmentName(expectedSeq)} in bucket ${JSON.stringify(bucket)} is damaged (${why}): restore the object, or restore the database from another copy`);
  if (bytes.length <= CHECKSUM_BYTES) throw damaged("too short");
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const body = buffer.subarray(0, buffer.length - CHECKSUM_BYTES);
  if (crc32(body) !== buffer.readUInt32BE(buffer.length - CHECKSUM_BYTES)) throw damaged("checksum mismatch");
  const stored = codec.unpack(body) as { format: number; epoch: number; seq: number; records: Uint8Array[] };
  if (stored.format !== SEGMENT_FORMAT) throw damaged(`format ${stored.format}, this Silk reads ${SEGMENT_FORMAT}`);
  if (stored.seq !== expectedSeq) throw damaged(`it holds segment ${stored.seq}`);
  return { format: stored.format, epoch: stored.epoch, seq: stored.seq, records: stored.records.map(decodeRecord) };
}
