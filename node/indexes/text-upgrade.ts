/**
 * The layout of the text indexes' `text` sub-database, and the upgrade of a directory written by an older Silk.
 *
 * Layout 1 kept one entry per posting: part | 'P' | u16 | term | id(8) → tf(u32) | document length(u32) [| positions
 * as LEB128 deltas]. Layout 2 (node/indexes/text-encoding.ts) keeps each term's postings in blocks, its df in the term's
 * entry and positions apart. Document entries and statistics are the same in both. The partition's `meta` records
 * `text_layout` = 2; a directory without it whose `text` sub-database holds anything is in layout 1.
 *
 * A writer's open converts layout 1 in one write transaction (every posting regrouped into blocks, positions moved,
 * the old entries deleted) and marks the layout in that same transaction: a crash before it commits leaves layout 1
 * untouched and the next writer's open does it again; after it, there is nothing left to do. A read-only handle does
 * not convert: its text searches refuse with `invalid_option` until a writer has opened the directory.
 */
import type { Database, Transaction } from "lmdb";
import { ID_BYTES, idKey } from "../keys.js";
import { BLOCK_POSTINGS_MAX, BLOCK_SPAN_MAX, blockKey, encodeTermEntry, positionsKey, PostingBlock, termKeyOf } from "./text-encoding.js";

/** The `meta` key of the text layout. */
export const TEXT_LAYOUT_KEY = "text_layout";
/** The layout this Silk reads and writes. */
export const TEXT_LAYOUT = 2;

const TAG_POSTING_V1 = 0x50; // 'P'

/** The text layout of a partition, read in `transaction` (1 for a directory of an older Silk that holds text entries). */
export function textLayout(meta: Database, entries: Database<Buffer, Buffer>, transaction?: Transaction): number {
  if (meta.get(TEXT_LAYOUT_KEY, { transaction }) === TEXT_LAYOUT) return TEXT_LAYOUT;
  for (const _ of entries.getKeys({ limit: 1, transaction })) return 1;
  return TEXT_LAYOUT;
}

/** A layout 1 posting: its term's range (part | 'P' | term), its partition prefix, the term, the ID, and its value. */
interface PostingV1 {
  readonly termStart: Buffer;
  readonly part: Buffer;
  readonly term: Buffer;
  readonly id8: Buffer;
  readonly value: Buffer;
}

/**
 * Converts layout 1 to layout 2 and marks it, inside the caller's write transaction; returns the postings converted
 * (0 when the layout is current already).
 */
export function upgradeTextLayout(meta: Database, entries: Database<Buffer, Buffer>): number {
  if (meta.get(TEXT_LAYOUT_KEY) === TEXT_LAYOUT) return 0;
  const postings: PostingV1[] = [];
  for (const { key, value } of entries.getRange({})) {
    const posting = postingV1(key, value);
    if (posting !== undefined) postings.push(posting);
  }
  let at = 0;
  while (at < postings.length) {
    let end = at + 1;
    while (end < postings.length && postings[end].termStart.equals(postings[at].termStart)) end += 1;
    writeTerm(entries, postings.slice(at, end));
    at = end;
  }
  for (const posting of postings) entries.removeSync(Buffer.concat([posting.termStart, posting.id8]));
  meta.putSync(TEXT_LAYOUT_KEY, TEXT_LAYOUT);
  return postings.length;
}

/**
 * A layout 1 posting's parts, or undefined for another entry. A key is kind(1) | label | 0x00 | field | 0x00 | u16 |
 * tenant | tag | ...: labels and fields are identifiers (no 0x00), the tenant is length-prefixed.
 */
function postingV1(key: Buffer, value: Buffer): PostingV1 | undefined {
  const labelEnd = key.indexOf(0, 1);
  const fieldEnd = key.indexOf(0, labelEnd + 1);
  const tagAt = fieldEnd + 3 + key.readUInt16BE(fieldEnd + 1);
  if (key[tagAt] !== TAG_POSTING_V1) return undefined;
  const termEnd = tagAt + 3 + key.readUInt16BE(tagAt + 1);
  if (key.length !== termEnd + ID_BYTES) return undefined;
  return { termStart: key.subarray(0, termEnd), part: key.subarray(0, tagAt), term: key.subarray(tagAt + 3, termEnd), id8: key.subarray(termEnd), value };
}

/** One term's postings (in ID order) as layout 2: blocks filled in order, the term's entry, positions. */
function writeTerm(entries: Database<Buffer, Buffer>, postings: readonly PostingV1[]): void {
  const { part, term } = postings[0];
  const termKey = termKeyOf(part, term);
  const blocks: PostingBlock[] = [];
  for (const posting of postings) {
    const id = posting.id8.readBigUInt64BE(0);
    const frequency = posting.value.readUInt32BE(0);
    const length = posting.value.readUInt32BE(4);
    const block = blocks[blocks.length - 1];
    if (block === undefined || block.size === BLOCK_POSTINGS_MAX || id - block.first >= BLOCK_SPAN_MAX) blocks.push(new PostingBlock(id, [0], [frequency], [length]));
    else block.insert(id, frequency, length);
    if (posting.value.length > 8) entries.putSync(positionsKey(part, term, posting.id8), posting.value.subarray(8));
  }
  for (const block of blocks) entries.putSync(blockKey(termKey, idKey(block.first)), block.encode());
  const lastFirst = idKey(blocks[blocks.length - 1].first);
  entries.putSync(termKey, encodeTermEntry({ frequency: postings.length, blocks: blocks.length, lastFirst }));
}
