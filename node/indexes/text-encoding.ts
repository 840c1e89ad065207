/**
 * The key and value encoding of the BM25 text indexes' `text` sub-database (node/indexes/text-index.ts): how its keys and
 * values are built and read, and nothing else (no LMDB access, no analysis, no scoring).
 *
 * Key layout (every key raw bytes; `prefix` is keys.ts's indexPrefix: kind(1) | label | 0x00 | field | 0x00, so
 * removing one index deletes one key range; `part` is the tenant partition: prefix | u16 byte length | tenantKey
 * UTF-8, the tenant empty for an index without tenant; `term` is u16 byte length | UTF-8):
 *
 *   part | 'S'                       → documents(f64) | total length in terms(f64) | epoch(8) | changes(f64)
 *   part | 'D' | id(8)               → length(u32) | terms(u32) | per distinct term: u16 | UTF-8
 *   part | 'B' | term                → df (u32) | the term's blocks (u32) | its last block's first ID(8)
 *   part | 'B' | term | first id(8)  → one block of the term's postings (below), keyed by its first document's ID
 *   part | 'Q' | term | id(8)        → the term's positions in the document, LEB128 deltas (indexes with positions)
 *
 * A block holds 1 to BLOCK_POSTINGS_MAX postings in ID order: count(u16) | last offset(f64) | bound pairs(u8) | the
 * pairs, varint tf | varint document length | then per posting varint ID delta (0 for the first) | varint tf |
 * varint document length. Offsets are IDs minus the block's first ID; a block spans less than BLOCK_SPAN_MAX IDs, so
 * every offset is an exact JavaScript number. The bound pairs are the Pareto frontier of the block's (tf, length)
 * pairs (no other pair has a tf at least as high and a length at most as low): BM25's term score rises with tf and
 * falls with length for every N, df and average length, so the best score of a pair on the frontier is the block's
 * exact best score under any statistics — an upper bound that stays valid as documents are added.
 *
 * The statistics' epoch (random, drawn when the partition's statistics are created) and changes (counted by every
 * write transaction that changes the partition) name the partition's content: a reader may keep what it read of a
 * partition while they are unchanged (node/indexes/text-index.ts's cache). A partition that empties loses its statistics and
 * draws a new epoch when it is written again, so a count that restarts never names older content. Statistics of 16
 * bytes (written before the epoch existed) carry no version: nothing read of that partition is kept.
 *
 * Invariants: one term's df and blocks are the one range `part | 'B' | term`, its df first, its blocks in ID order
 * and disjoint; no term's range holds another's (terms are length-prefixed); a posting carries its document's
 * length so that scoring reads blocks only; a document's entry lists its distinct terms so that an update or delete
 * finds its postings without analysing the old text again. Every fixed-width integer is big-endian; IDs are
 * keys.ts's idKey (u64).
 */
import { AFTER_EVERY_ID, ID_BYTES } from "../keys.js";
import { TERM_BYTES_MAX } from "./text-analyzers.js";

const TAG_STATS = 0x53; // 'S'
const TAG_DOCUMENT = 0x44; // 'D'
const TAG_BLOCKS = 0x42; // 'B'
const TAG_POSITIONS = 0x51; // 'Q'

/** The most postings one block holds; a block that grows past it is split in two. */
export const BLOCK_POSTINGS_MAX = 128;
/** A block's IDs lie in [first, first + BLOCK_SPAN_MAX): its offsets are exact numbers (node/indexes/text-search.ts). */
export const BLOCK_SPAN_MAX = 2 ** 51;
const BLOCK_HEADER_BYTES = 11;

/** A partition's statistics: its documents and their total length in terms, and the version of its content. */
export interface TextStatistics {
  readonly documents: number;
  readonly length: number;
  readonly epoch: Buffer | undefined;
  readonly changes: number;
}

/** The statistics' epoch in bytes. */
export const EPOCH_BYTES = 8;

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

/** The key of a term's df, which starts its blocks' range; undefined for a term too long to be stored. */
export function termKey(part: Buffer, term: string): Buffer | undefined {
  const bytes = Buffer.from(term, "utf8");
  return bytes.length > TERM_BYTES_MAX ? undefined : termKeyOf(part, bytes);
}

/** The key of a term's df, the term given as UTF-8 bytes (at most TERM_BYTES_MAX). */
export function termKeyOf(part: Buffer, term: Uint8Array): Buffer {
  return taggedTerm(part, TAG_BLOCKS, term);
}

function taggedTerm(part: Buffer, tag: number, term: Uint8Array): Buffer {
  const key = Buffer.allocUnsafe(part.length + 3 + term.length);
  part.copy(key, 0);
  key[part.length] = tag;
  key.writeUInt16BE(term.length, part.length + 1);
  key.set(term, part.length + 3);
  return key;
}

/** The key of a term's block whose first document is `id8`; also the seek key of a document in the term's blocks. */
export function blockKey(term: Buffer, id8: Uint8Array): Buffer {
  const key = Buffer.allocUnsafe(term.length + ID_BYTES);
  term.copy(key, 0);
  key.set(id8, term.length);
  return key;
}

/** The exclusive end of a term's range (after every block). */
export function termEnd(term: Buffer): Buffer {
  return Buffer.concat([term, AFTER_EVERY_ID]);
}

/** The key of a document's positions of a term. */
export function positionsKey(part: Buffer, term: Uint8Array, id8: Uint8Array): Buffer {
  return Buffer.concat([taggedTerm(part, TAG_POSITIONS, term), id8]);
}

/** A block key's first ID. */
export function blockFirst(key: Buffer): bigint {
  return key.readBigUInt64BE(key.length - ID_BYTES);
}

/**
 * A term's entry: its df, how many blocks it has and where the last one starts (so that a new document's posting,
 * and a search of a term of one block, read the block by its key without a range seek).
 */
export interface TermEntry {
  readonly frequency: number;
  readonly blocks: number;
  readonly lastFirst: Buffer;
}

export function encodeTermEntry(entry: TermEntry): Buffer {
  const value = Buffer.allocUnsafe(8 + ID_BYTES);
  value.writeUInt32BE(entry.frequency, 0);
  value.writeUInt32BE(entry.blocks, 4);
  entry.lastFirst.copy(value, 8);
  return value;
}

/** A term's entry; its last first ID is a copy (the value may be lmdb-js's reused read buffer). */
export function decodeTermEntry(value: Buffer): TermEntry {
  return { frequency: value.readUInt32BE(0), blocks: value.readUInt32BE(4), lastFirst: Buffer.from(value.subarray(8, 8 + ID_BYTES)) };
}

/** Positions as LEB128 deltas. */
export function encodePositions(positions: readonly number[]): Buffer {
  const bytes: number[] = [];
  let previous = 0;
  for (const position of positions) {
    pushVarint(bytes, position - previous);
    previous = position;
  }
  return Buffer.from(bytes);
}

export function decodePositions(value: Buffer): number[] {
  const positions: number[] = [];
  const reader = { at: 0 };
  let previous = 0;
  while (reader.at < value.length) {
    previous += readVarint(value, reader);
    positions.push(previous);
  }
  return positions;
}

function pushVarint(bytes: number[], value: number): void {
  while (value >= 0x80) {
    bytes.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  bytes.push(value);
}

/** An unsigned LEB128 varint of up to 2^53 at `reader.at`, moving it past the varint. */
export function readVarint(value: Uint8Array, reader: { at: number }): number {
  let byte = value[reader.at++];
  if (byte < 0x80) return byte;
  let result = byte & 0x7f;
  let scale = 0x80;
  do {
    byte = value[reader.at++];
    result += (byte & 0x7f) * scale;
    scale *= 0x80;
  } while (byte & 0x80);
  return result;
}

/**
 * One block of a term's postings, decoded for a write: the first ID, and per posting its offset from it, its tf and
 * its document's length, in ID order.
 */
export class PostingBlock {
  constructor(
    public first: bigint,
    readonly offsets: number[] = [],
    readonly frequencies: number[] = [],
    readonly lengths: number[] = [],
  ) {}

  static decode(key: Buffer, value: Buffer): PostingBlock {
    const block = new PostingBlock(blockFirst(key));
    const count = value.readUInt16BE(0);
    const reader = { at: bodyStart(value) };
    let offset = 0;
    for (let at = 0; at < count; at += 1) {
      offset += readVarint(value, reader);
      block.offsets.push(offset);
      block.frequencies.push(readVarint(value, reader));
      block.lengths.push(readVarint(value, reader));
    }
    return block;
  }

  get size(): number {
    return this.offsets.length;
  }

  get last(): bigint {
    return this.first + BigInt(this.offsets[this.offsets.length - 1]);
  }

  /**
   * Adds a posting for a document the block does not hold; false, changing nothing, when the block would then span
   * BLOCK_SPAN_MAX IDs or more (the caller starts a block of its own for it).
   */
  insert(id: bigint, frequency: number, length: number): boolean {
    if (id < this.first) {
      if (this.last - id >= BLOCK_SPAN_MAX) return false;
      const shift = Number(this.first - id);
      for (let at = 0; at < this.offsets.length; at += 1) this.offsets[at] += shift;
      this.first = id;
      this.offsets.unshift(0);
      this.frequencies.unshift(frequency);
      this.lengths.unshift(length);
      return true;
    }
    if (id - this.first >= BLOCK_SPAN_MAX) return false;
    const offset = Number(id - this.first);
    let at = this.offsets.length;
    while (at > 0 && this.offsets[at - 1] > offset) at -= 1;
    this.offsets.splice(at, 0, offset);
    this.frequencies.splice(at, 0, frequency);
    this.lengths.splice(at, 0, length);
    return true;
  }

  encode(): Buffer {
    const body: number[] = [];
    let previous = 0;
    for (let at = 0; at < this.offsets.length; at += 1) {
      pushVarint(body, this.offsets[at] - previous);
      previous = this.offsets[at];
      pushVarint(body, this.frequencies[at]);
      pushVarint(body, this.lengths[at]);
    }
    return blockValue(this.offsets.length, previous, boundPairs(this.frequencies, this.lengths), body);
  }
}

/**
 * A block being filled with postings after its last (the common write: documents of new IDs), without decoding the
 * postings it already holds: they are kept as bytes, and the bound pairs of the grown block are those of its old
 * pairs and the new postings' pairs.
 */
export class BlockWriter {
  private readonly frequencies: number[] = [];
  private readonly lengths: number[] = [];
  private readonly tail: number[] = [];

  private constructor(
    readonly first: bigint,
    private count: number,
    private lastOffset: number,
    private readonly body: Uint8Array,
  ) {}

  /** A new block whose first posting is document `first`'s. */
  static starting(first: bigint, frequency: number, length: number): BlockWriter {
    const writer = new BlockWriter(first, 0, 0, EMPTY_BODY);
    writer.append(0, frequency, length);
    return writer;
  }

  /** A stored block to append to (`value` is copied: it may be lmdb-js's reused read buffer). */
  static continuing(first: bigint, value: Uint8Array): BlockWriter {
    const stored = Buffer.from(value.buffer, value.byteOffset, value.length);
    const writer = new BlockWriter(first, blockCount(stored), blockLastOffset(stored), Buffer.from(stored.subarray(bodyStart(stored))));
    const pairs = readPairs(stored);
    for (let at = 0; at < pairs.length; at += 2) {
      writer.frequencies.push(pairs[at]);
      writer.lengths.push(pairs[at + 1]);
    }
    return writer;
  }

  get lastId(): bigint {
    return this.first + BigInt(this.lastOffset);
  }

  /**
   * Appends document `id`'s posting (an ID above the block's last); false, changing nothing, when the block is full
   * or would span BLOCK_SPAN_MAX IDs or more with it.
   */
  tryAppend(id: bigint, frequency: number, length: number): boolean {
    if (this.count === BLOCK_POSTINGS_MAX) return false;
    const offset = id - this.first;
    if (offset >= BLOCK_SPAN_MAX) return false;
    this.append(Number(offset), frequency, length);
    return true;
  }

  private append(offset: number, frequency: number, length: number): void {
    pushVarint(this.tail, offset - this.lastOffset);
    pushVarint(this.tail, frequency);
    pushVarint(this.tail, length);
    this.frequencies.push(frequency);
    this.lengths.push(length);
    this.count += 1;
    this.lastOffset = offset;
  }

  encode(): Buffer {
    return blockValue(this.count, this.lastOffset, boundPairs(this.frequencies, this.lengths), this.body, this.tail);
  }
}

const EMPTY_BODY = new Uint8Array(0);

function blockValue(count: number, lastOffset: number, frontier: readonly number[], body: ArrayLike<number>, tail: readonly number[] = []): Buffer {
  const pairs: number[] = [];
  for (const number of frontier) pushVarint(pairs, number);
  const value = Buffer.allocUnsafe(BLOCK_HEADER_BYTES + pairs.length + body.length + tail.length);
  value.writeUInt16BE(count, 0);
  value.writeDoubleBE(lastOffset, 2);
  value[10] = frontier.length / 2;
  value.set(pairs, BLOCK_HEADER_BYTES);
  value.set(body, BLOCK_HEADER_BYTES + pairs.length);
  value.set(tail, BLOCK_HEADER_BYTES + pairs.length + body.length);
  return value;
}

/**
 * The (tf, length) pairs no other pair dominates (a tf at least as high and a length at most as low), tf
 * descending, flattened: tf, length, tf, length, ...
 */
function boundPairs(frequencies: readonly number[], lengths: readonly number[]): number[] {
  const order = frequencies.map((_, at) => at).sort((left, right) => frequencies[right] - frequencies[left] || lengths[left] - lengths[right]);
  const frontier: number[] = [];
  for (const at of order) {
    if (frontier.length === 0 || lengths[at] < frontier[frontier.length - 1]) frontier.push(frequencies[at], lengths[at]);
  }
  return frontier;
}

/** A block's bound pairs, flattened. */
function readPairs(value: Buffer): number[] {
  const reader = { at: BLOCK_HEADER_BYTES };
  const pairs: number[] = [];
  for (let field = 0; field < 2 * value[10]; field += 1) pairs.push(readVarint(value, reader));
  return pairs;
}

/** A block's posting count. */
export function blockCount(value: Buffer): number {
  return value.readUInt16BE(0);
}

/** A block's last offset (its last ID minus its first). */
export function blockLastOffset(value: Buffer): number {
  return value.readDoubleBE(2);
}

/**
 * The best BM25 fraction tf / (tf + k1·(1 − b + b·length/averageLength)) among a block's postings, from its bound
 * pairs (see the module comment), written as text-index.ts scores so the bound is the score of one of its pairs.
 */
export function blockBestFraction(value: Buffer, k1: number, b: number, averageLength: number): number {
  const pairs = value[10];
  const reader = { at: BLOCK_HEADER_BYTES };
  let best = 0;
  for (let pair = 0; pair < pairs; pair += 1) {
    const tf = readVarint(value, reader);
    const length = readVarint(value, reader);
    const fraction = tf / (tf + k1 * (1 - b + (b * length) / averageLength));
    if (fraction > best) best = fraction;
  }
  return best;
}

/** Where a block's postings start (after its bound pairs). */
export function bodyStart(value: Buffer): number {
  const pairs = value[10];
  const reader = { at: BLOCK_HEADER_BYTES };
  for (let field = 0; field < 2 * pairs; field += 1) readVarint(value, reader);
  return reader.at;
}

export function encodeStatistics(statistics: TextStatistics & { readonly epoch: Buffer }): Buffer {
  const value = Buffer.allocUnsafe(24 + EPOCH_BYTES);
  value.writeDoubleBE(statistics.documents, 0);
  value.writeDoubleBE(statistics.length, 8);
  statistics.epoch.copy(value, 16);
  value.writeDoubleBE(statistics.changes, 16 + EPOCH_BYTES);
  return value;
}

/** A partition's statistics (the epoch copied out of `value`); no epoch for statistics of 16 bytes. */
export function decodeStatistics(value: Buffer): TextStatistics {
  const documents = value.readDoubleBE(0);
  const length = value.readDoubleBE(8);
  if (value.length === 16) return { documents, length, epoch: undefined, changes: 0 };
  return { documents, length, epoch: Buffer.from(value.subarray(16, 16 + EPOCH_BYTES)), changes: value.readDoubleBE(16 + EPOCH_BYTES) };
}

/** The version of a partition's content its statistics name (undefined: none, nothing of it may be kept). */
export function statisticsVersion(statistics: TextStatistics): string | undefined {
  return statistics.epoch === undefined ? undefined : `${statistics.epoch.toString("hex")}:${statistics.changes}`;
}

/** A document's entry: its length and its distinct terms (each at most TERM_BYTES_MAX bytes of UTF-8). */
export function encodeDocument(length: number, terms: readonly string[]): Buffer {
  const sizes = terms.map((term) => Buffer.byteLength(term, "utf8"));
  const value = Buffer.allocUnsafe(sizes.reduce((bytes, size) => bytes + 2 + size, 8));
  value.writeUInt32BE(length, 0);
  value.writeUInt32BE(terms.length, 4);
  let at = 8;
  terms.forEach((term, index) => {
    value.writeUInt16BE(sizes[index], at);
    value.write(term, at + 2, "utf8");
    at += 2 + sizes[index];
  });
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

