/**
 * The key and value encoding of the BM25 text indexes' `text` sub-database (node/text-index.ts): how its keys and
 * values are built and read, and nothing else (no LMDB access, no analysis, no scoring).
 *
 * Key layout (every key raw bytes; `prefix` is keys.ts's indexPrefix: kind(1) | label | 0x00 | field | 0x00, so
 * removing one index deletes one key range; `part` is the tenant partition: prefix | u16 byte length | tenantKey
 * UTF-8, the tenant empty for an index without tenant):
 *
 *   part | 'S'                                → documents(f64) | total length in terms(f64)
 *   part | 'D' | id(8)                        → length(u32) | terms(u32) | per distinct term: u16 | UTF-8
 *   part | 'P' | u16 | term (UTF-8) | id(8)   → tf(u32) | document length(u32) [| positions: LEB128 deltas]
 *
 * Invariants: terms are length-prefixed, so one term's postings are the one range `part | 'P' | u16 | term`, in ID
 * order, and no term's range holds another's; a posting carries its document's length so that scoring reads
 * postings only; a document's entry lists its distinct terms so that an update or delete removes its postings
 * without analysing the old text again. Every integer is big-endian; IDs are keys.ts's idKey (u64).
 */
import { AFTER_EVERY_ID, ID_BYTES } from "./keys.js";
import { TERM_BYTES_MAX } from "./text-analyzers.js";

const TAG_STATS = 0x53; // 'S'
const TAG_DOCUMENT = 0x44; // 'D'
const TAG_POSTING = 0x50; // 'P'

/** A partition's statistics: its documents and their total length in terms. */
export interface TextStatistics {
  readonly documents: number;
  readonly length: number;
}

/** A document's entry: its length in terms and its distinct terms (UTF-8). */
export interface TextDocument {
  readonly length: number;
  readonly terms: readonly Buffer[];
}

/** The key prefix of one tenant partition of an index (`prefix` from keys.ts's indexPrefix). */
export function partitionPrefix(prefix: Buffer, tenant: string): Buffer {
  const bytes = Buffer.byteLength(tenant, "utf8");
  const part = Buffer.allocUnsafe(prefix.length + 2 + bytes);
  prefix.copy(part, 0);
  part.writeUInt16BE(bytes, prefix.length);
  part.write(tenant, prefix.length + 2, "utf8");
  return part;
}

/** The key of a partition's statistics. */
export function statisticsKey(part: Buffer): Buffer {
  return tagKey(part, TAG_STATS);
}

/** The key of a document's entry. */
export function documentKey(part: Buffer, id8: Buffer): Buffer {
  return Buffer.concat([tagKey(part, TAG_DOCUMENT), id8]);
}

function tagKey(part: Buffer, tag: number): Buffer {
  const key = Buffer.allocUnsafe(part.length + 1);
  part.copy(key, 0);
  key[part.length] = tag;
  return key;
}

/** The prefix of one term's postings, or undefined for a term too long to be stored. */
export function termPrefix(part: Buffer, term: string): Buffer | undefined {
  const bytes = Buffer.from(term, "utf8");
  return bytes.length > TERM_BYTES_MAX ? undefined : termPrefixOf(part, bytes);
}

/** The prefix of one term's postings, the term given as UTF-8 bytes (at most TERM_BYTES_MAX). */
export function termPrefixOf(part: Buffer, term: Uint8Array): Buffer {
  const key = Buffer.allocUnsafe(part.length + 3 + term.length);
  part.copy(key, 0);
  key[part.length] = TAG_POSTING;
  key.writeUInt16BE(term.length, part.length + 1);
  key.set(term, part.length + 3);
  return key;
}

/** The key of one posting: a term's prefix and the document's ID. */
export function postingKey(termStart: Buffer, id8: Buffer): Buffer {
  return Buffer.concat([termStart, id8]);
}

/** The exclusive end of a term's postings range (after every ID). */
export function postingsEnd(termStart: Buffer): Buffer {
  return Buffer.concat([termStart, AFTER_EVERY_ID]);
}

export function encodeStatistics(statistics: TextStatistics): Buffer {
  const value = Buffer.allocUnsafe(16);
  value.writeDoubleBE(statistics.documents, 0);
  value.writeDoubleBE(statistics.length, 8);
  return value;
}

export function decodeStatistics(value: Buffer): TextStatistics {
  return { documents: value.readDoubleBE(0), length: value.readDoubleBE(8) };
}

/** A posting's value: the term's frequency (its positions' count), the document's length, and the positions if kept. */
export function encodePosting(positions: readonly number[], length: number, withPositions: boolean): Buffer {
  const head = Buffer.allocUnsafe(8);
  head.writeUInt32BE(positions.length, 0);
  head.writeUInt32BE(length, 4);
  if (!withPositions) return head;
  const deltas: number[] = [];
  let previous = 0;
  for (const position of positions) {
    let delta = position - previous;
    previous = position;
    while (delta >= 0x80) {
      deltas.push((delta & 0x7f) | 0x80);
      delta >>>= 7;
    }
    deltas.push(delta);
  }
  return Buffer.concat([head, Buffer.from(deltas)]);
}

/** A posting's term frequency. */
export function postingFrequency(value: Buffer): number {
  return value.readUInt32BE(0);
}

/** The length in terms of a posting's document. */
export function postingDocumentLength(value: Buffer): number {
  return value.readUInt32BE(4);
}

/** A posting's positions ([] when the index keeps none). */
export function decodePositions(value: Buffer): number[] {
  const positions: number[] = [];
  let previous = 0;
  let at = 8;
  while (at < value.length) {
    let delta = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = value[at++];
      delta += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    previous += delta;
    positions.push(previous);
  }
  return positions;
}

export function encodeDocument(length: number, terms: readonly Buffer[]): Buffer {
  let bytes = 8;
  for (const term of terms) bytes += 2 + term.length;
  const value = Buffer.allocUnsafe(bytes);
  value.writeUInt32BE(length, 0);
  value.writeUInt32BE(terms.length, 4);
  let at = 8;
  for (const term of terms) {
    value.writeUInt16BE(term.length, at);
    term.copy(value, at + 2);
    at += 2 + term.length;
  }
  return value;
}

/** A document's entry; its terms are views into `value`. */
export function decodeDocument(value: Buffer): TextDocument {
  const count = value.readUInt32BE(4);
  const terms: Buffer[] = [];
  let at = 8;
  for (let term = 0; term < count; term += 1) {
    const bytes = value.readUInt16BE(at);
    terms.push(value.subarray(at + 2, at + 2 + bytes));
    at += 2 + bytes;
  }
  return { length: value.readUInt32BE(0), terms };
}

/** A posting key's ID: a number below 2^53, a bigint from there on (a number is the cheaper Map key). */
export function postingId(key: Buffer): number | bigint {
  const high = key.readUInt32BE(key.length - ID_BYTES);
  return high < 0x200000 ? high * 0x1_0000_0000 + key.readUInt32BE(key.length - 4) : key.readBigUInt64BE(key.length - ID_BYTES);
}
