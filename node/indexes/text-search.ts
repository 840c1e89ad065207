/**
 * Top-k BM25 over a text index's posting blocks (node/indexes/text-encoding.ts) with block-max MaxScore, a batch of IDs at a
 * time (Lucene's MaxScoreBulkScorer): a cursor per query term walks its blocks in ID order, decoding a block only
 * when a document in it is scored. The terms are ordered by their best possible score; once the k-th best score so
 * far (the threshold) exceeds the sum of the lowest terms' bests, those terms are "non-essential": only documents of
 * the other terms are candidates. Per batch of consecutive IDs (BATCH_IDS_FIRST, doubling up to BATCH_IDS_MAX: a small
 * first batch sets a threshold early), the essential terms' postings are scored term after term into dense per-ID
 * arrays (no per-document cursor juggling); a candidate whose essential sum plus the non-essential terms' best block
 * scores over the batch cannot beat the threshold is dropped at once; any other, in ID order, looks at its
 * non-essential terms, best first, only while it can still beat the threshold given the best scores of the blocks
 * they are in (read from the block headers, without decoding).
 *
 * Exactness: a document's score is always the sum of its terms' scores in the query's term order (the batch keeps
 * each term's score apart until then), exactly the arithmetic of an exhaustive scoring; pruning only skips documents whose upper bound cannot beat the threshold
 * (bounds inflated by BOUND_SLACK against rounding). Documents come in ascending ID order, so a later document with a
 * score equal to the k-th never displaces it: ties rank by ascending ID.
 *
 * IDs are u64; the loop works on JavaScript numbers, IDs relative to a base, exact below WINDOW (2^52). Blocks span
 * less than BLOCK_SPAN_MAX (2^51), so the documents relative to the base that lie before WINDOW are exact and every
 * later one reads as WINDOW; when every candidate reads WINDOW the base moves to the smallest of them (a new
 * window). A partition's IDs rarely span 2^52, so a search nearly always runs in one window.
 */
import type { SearchHit } from "../../protocol/records.js";
import { blockBestFraction, blockCount, blockLastOffset, bodyStart, readVarint } from "./text-encoding.js";

/**
 * One query term's postings as read from the index: its weight idf·(k1 + 1), its df, its blocks' keys and values, and
 * what searches derive from them, kept with the blocks so that a cached term (node/indexes/text-index.ts) is worked out once:
 * per block its postings once decoded (offsets, then tfs, then lengths), the blocks' best scores for an average
 * length, and the blocks' places (first IDs as two words, last offsets).
 */
export interface TermBlocks {
  readonly weight: number;
  readonly frequency: number;
  readonly keys: readonly Buffer[];
  readonly values: readonly Buffer[];
  readonly decoded: (Float64Array | undefined)[];
  bounds?: { readonly averageLength: number; readonly blocks: Float64Array; readonly best: number };
  places?: { readonly firstHigh: Uint32Array; readonly firstLow: Uint32Array; readonly lastOffsets: Float64Array };
}

/** BM25's parameters and the partition's average document length. */
export interface Bm25Parameters {
  readonly k1: number;
  readonly b: number;
  readonly averageLength: number;
}

const WINDOW = 2 ** 52;
const EXHAUSTED = Number.POSITIVE_INFINITY;
/** What a block whose first ID lies 2^52 or more before the base reads as: entirely before it (blocks span < 2^51). */
const BEFORE_BASE = -(2 ** 53);
const TWO_32 = 4_294_967_296;
/** A bound is multiplied by this before it is compared with the threshold, against rounding in the sums. */
const BOUND_SLACK = 1 + 1e-9;

/** An ID as two 32-bit words. */
interface Base {
  high: number;
  low: number;
}

class TermCursor {
  /** Per block: its first document relative to the base, its last, and its best score. */
  private readonly firstRelative: Float64Array;
  private readonly lastRelative: Float64Array;
  readonly blockBounds: Float64Array;
  readonly best: number;
  /** The decoded block: its offsets, then its tfs, then its lengths (`size` of each). */
  private postingsOf: Float64Array = EMPTY_BLOCK;
  private block = 0;
  private decoded = -1;
  private size = 0;
  private position = 0;
  /**
   * The current document relative to the base: < WINDOW, WINDOW (beyond this window) or EXHAUSTED; before the first
   * `advance`, and after a move to a block not yet decoded, a value below every target still to come.
   */
  doc = BEFORE_BASE;

  constructor(
    readonly term: number,
    private readonly postings: TermBlocks,
    private readonly parameters: Bm25Parameters,
  ) {
    const count = postings.keys.length;
    this.firstRelative = new Float64Array(count);
    this.lastRelative = new Float64Array(count);
    if (postings.bounds === undefined || postings.bounds.averageLength !== parameters.averageLength) {
      const bounds = new Float64Array(count);
      for (let block = 0; block < count; block += 1) {
        bounds[block] = postings.weight * blockBestFraction(postings.values[block], parameters.k1, parameters.b, parameters.averageLength);
      }
      postings.bounds = { averageLength: parameters.averageLength, blocks: bounds, best: bounds.reduce((best, bound) => Math.max(best, bound), 0) };
    }
    this.blockBounds = postings.bounds.blocks;
    this.best = postings.bounds.best;
  }

  /** The ID of the current document (the cursor is on a decoded block). */
  currentId(): bigint {
    const key = this.postings.keys[this.block];
    return key.readBigUInt64BE(key.length - 8) + BigInt(this.postingsOf[this.position]);
  }

  /** The first ID of the first block, as two words. */
  firstWords(): Base {
    const key = this.postings.keys[0];
    return { high: key.readUInt32BE(key.length - 8), low: key.readUInt32BE(key.length - 4) };
  }

  /** Recomputes every block's place relative to a new base, and the current document's. */
  rebase(base: Base): void {
    const { firstHigh, firstLow, lastOffsets } = placesOf(this.postings);
    for (let block = 0; block < firstHigh.length; block += 1) {
      const high = firstHigh[block] - base.high;
      const first = high >= 0x10_0000 ? WINDOW : high <= -0x10_0000 ? BEFORE_BASE : high * TWO_32 + (firstLow[block] - base.low);
      this.firstRelative[block] = first;
      this.lastRelative[block] = first === WINDOW ? WINDOW : first + lastOffsets[block];
    }
    if (this.doc !== EXHAUSTED) this.doc = this.decoded === this.block ? this.relative(this.position) : BEFORE_BASE;
  }

  private relative(position: number): number {
    const doc = this.firstRelative[this.block] + this.postingsOf[position];
    return doc >= WINDOW ? WINDOW : doc;
  }

  /** Moves to the first document at or after `target` (< WINDOW). */
  advance(target: number): void {
    if (this.doc >= target) return;
    this.shallow(target);
    if (this.block === this.firstRelative.length) {
      this.doc = EXHAUSTED;
      return;
    }
    if (this.decoded !== this.block) this.decode();
    let position = this.position;
    const first = this.firstRelative[this.block];
    const offsets = this.postingsOf;
    while (first + offsets[position] < target) position += 1;
    this.position = position;
    this.doc = this.relative(position);
  }

  /** Moves to the next document. */
  next(): void {
    this.position += 1;
    if (this.position < this.size) {
      this.doc = this.relative(this.position);
      return;
    }
    this.block += 1;
    if (this.block === this.firstRelative.length) {
      this.doc = EXHAUSTED;
      return;
    }
    this.decode();
    this.doc = this.relative(0);
  }

  /**
   * The best score of the blocks that may hold a document in [start, end), moving to the first of them without
   * decoding it (0: none).
   */
  batchBound(start: number, end: number): number {
    if (this.doc < start) this.shallow(start);
    let bound = 0;
    for (let block = this.block; block < this.firstRelative.length && this.firstRelative[block] < end; block += 1) {
      if (this.blockBounds[block] > bound) bound = this.blockBounds[block];
    }
    return bound;
  }

  /** The best score of the block that may hold `target`, moving to that block without decoding it (0: none left). */
  blockBound(target: number): number {
    if (this.doc === target) return this.blockBounds[this.block];
    if (this.doc > target) return 0;
    this.shallow(target);
    return this.block === this.firstRelative.length ? 0 : this.blockBounds[this.block];
  }

  private shallow(target: number): void {
    const count = this.firstRelative.length;
    let block = this.block;
    while (block < count && this.lastRelative[block] < target) block += 1;
    if (block !== this.block) {
      this.block = block;
      this.position = 0;
    }
  }

  private decode(): void {
    let postings = this.postings.decoded[this.block];
    if (postings === undefined) {
      postings = decodeBlock(this.postings.values[this.block]);
      this.postings.decoded[this.block] = postings;
    }
    this.postingsOf = postings;
    this.size = postings.length / 3;
    this.position = 0;
    this.decoded = this.block;
  }

  /**
   * Scores every document of this term from the current one up to `end` (exclusive, relative IDs) into the batch
   * starting at `start`, and moves past them: the same arithmetic as `score`, a block at a time.
   */
  collect(start: number, end: number, batch: Batch): void {
    const { k1, b, averageLength } = this.parameters;
    const weight = this.postings.weight;
    const term = this.term;
    const terms = batch.terms;
    while (this.doc < end) {
      const postings = this.postingsOf;
      const size = this.size;
      const first = this.firstRelative[this.block];
      let position = this.position;
      for (; position < size; position += 1) {
        const doc = first + postings[position];
        if (doc >= end) break;
        const tf = postings[size + position];
        const score = weight * (tf / (tf + k1 * (1 - b + (b * postings[2 * size + position]) / averageLength)));
        const slot = doc - start;
        batch.marks[slot >> 5] |= 1 << (slot & 31);
        batch.scores[slot * terms + term] = score;
        batch.essentialSums[slot] += score;
      }
      this.position = position;
      if (position < size) {
        this.doc = this.relative(position);
        return;
      }
      this.next();
    }
  }

  /** The current document's score for this term (the expression of an exhaustive scoring, bit for bit). */
  score(): number {
    const { k1, b, averageLength } = this.parameters;
    const tf = this.postingsOf[this.size + this.position];
    return this.postings.weight * (tf / (tf + k1 * (1 - b + (b * this.postingsOf[2 * this.size + this.position]) / averageLength)));
  }
}

const EMPTY_BLOCK = new Float64Array(0);

/** The blocks' first IDs as two words and their last offsets, read from their keys and headers once per term. */
function placesOf(postings: TermBlocks): NonNullable<TermBlocks["places"]> {
  if (postings.places !== undefined) return postings.places;
  const { keys, values } = postings;
  const places = { firstHigh: new Uint32Array(keys.length), firstLow: new Uint32Array(keys.length), lastOffsets: new Float64Array(keys.length) };
  for (let block = 0; block < keys.length; block += 1) {
    const key = keys[block];
    places.firstHigh[block] = key.readUInt32BE(key.length - 8);
    places.firstLow[block] = key.readUInt32BE(key.length - 4);
    places.lastOffsets[block] = blockLastOffset(values[block]);
  }
  postings.places = places;
  return places;
}

/** A block's postings: its offsets, then its tfs, then its lengths. */
function decodeBlock(value: Buffer): Float64Array {
  const count = blockCount(value);
  const postings = new Float64Array(3 * count);
  const reader = { at: bodyStart(value) };
  let offset = 0;
  for (let at = 0; at < count; at += 1) {
    offset += readVarint(value, reader);
    postings[at] = offset;
    postings[count + at] = readVarint(value, reader);
    postings[2 * count + at] = readVarint(value, reader);
  }
  return postings;
}

/**
 * The IDs a batch spans at most, the IDs of a search's first batch (each next one twice its last, up to the most),
 * and the most per-term scores a batch holds (IDs times query terms).
 */
const BATCH_IDS_MAX = 1_024;
const BATCH_IDS_FIRST = 64;
const BATCH_SCORES_MAX = 65_536;

/**
 * A batch of consecutive IDs being scored (Lucene's MaxScoreBulkScorer's window): per ID slot, each term's score
 * (zero where the term is absent) and the sum of the essential terms' scores, and the slots any essential term
 * holds. Slots are cleared as they are ranked, so one batch serves every search (searches run one at a time,
 * synchronously, and each leaves it clear).
 */
class Batch {
  readonly scores = new Float64Array(BATCH_SCORES_MAX);
  readonly essentialSums = new Float64Array(BATCH_IDS_MAX);
  /** One bit per slot that an essential term holds. */
  readonly marks = new Uint32Array(BATCH_IDS_MAX / 32);
  /** The IDs a batch spans and the terms per slot, for the current search. */
  ids = BATCH_IDS_MAX;
  terms = 1;

  /** Shapes the batch for a query of `terms` terms. */
  shape(terms: number): this {
    this.terms = terms;
    this.ids = Math.max(32, Math.min(BATCH_IDS_MAX, 32 * Math.floor(BATCH_SCORES_MAX / terms / 32)));
    return this;
  }

  /**
   * Calls `rank` with each marked slot below `span`, in ascending order, then clears it (its scores and mark): the
   * batch is clear again for the next one.
   */
  drain(span: number, rank: (slot: number) => void): void {
    const terms = this.terms;
    for (let word = 0; word < (span + 31) >> 5; word += 1) {
      let bits = this.marks[word];
      this.marks[word] = 0;
      while (bits !== 0) {
        const lowest = bits & -bits;
        bits ^= lowest;
        const slot = (word << 5) + 31 - Math.clz32(lowest);
        rank(slot);
        for (let at = slot * terms, end = at + terms; at < end; at += 1) this.scores[at] = 0;
        this.essentialSums[slot] = 0;
      }
    }
  }
}

const batch = new Batch();

interface Ranked {
  readonly id: bigint;
  readonly score: number;
}

/** Whether `left` ranks before `right`: a higher score, then a lower ID. */
function ranksBefore(left: Ranked, right: Ranked): boolean {
  return left.score > right.score || (left.score === right.score && left.id < right.id);
}

/** The k best so far: a binary heap whose root is the worst of them. */
class TopK {
  private readonly heap: Ranked[] = [];

  constructor(private readonly k: number) {}

  /** The score a new document (of a higher ID than every one offered) must exceed; 0 until k are held. */
  get threshold(): number {
    return this.heap.length < this.k ? 0 : this.heap[0].score;
  }

  offer(hit: Ranked): void {
    const heap = this.heap;
    if (heap.length < this.k) {
      let at = heap.push(hit) - 1;
      for (let parent = (at - 1) >> 1; at > 0 && ranksBefore(heap[parent], heap[at]); at = parent, parent = (at - 1) >> 1) {
        [heap[at], heap[parent]] = [heap[parent], heap[at]];
      }
      return;
    }
    if (!ranksBefore(hit, heap[0])) return;
    heap[0] = hit;
    for (let at = 0; ; ) {
      let worst = at;
      for (const child of [2 * at + 1, 2 * at + 2]) if (child < heap.length && ranksBefore(heap[worst], heap[child])) worst = child;
      if (worst === at) break;
      [heap[at], heap[worst]] = [heap[worst], heap[at]];
      at = worst;
    }
  }

  sorted(): SearchHit[] {
    return this.heap.sort((left, right) => (ranksBefore(left, right) ? -1 : 1)).map((hit) => ({ id: hit.id, score: hit.score }));
  }
}

/**
 * The k best documents for these terms (in the query's term order, each with at least one block), descending
 * score, ties by ascending ID; `accept` (when given) chooses which documents may be ranked.
 */
export function topDocuments(terms: readonly TermBlocks[], parameters: Bm25Parameters, k: number, accept?: (id: bigint) => boolean): SearchHit[] {
  const cursors = terms.map((postings, term) => new TermCursor(term, postings, parameters));
  const top = new TopK(k);
  if (cursors.length === 0) return [];
  let base = cursors[0].firstWords();
  for (const cursor of cursors) {
    const words = cursor.firstWords();
    if (words.high < base.high || (words.high === base.high && words.low < base.low)) base = words;
  }
  let baseId = BigInt(base.high) * BigInt(TWO_32) + BigInt(base.low);
  for (const cursor of cursors) cursor.rebase(base);
  for (const cursor of cursors) cursor.advance(0);

  // Terms by ascending best score; sums[i] the sum of the best scores of the first i + 1.
  const order = [...cursors].sort((left, right) => left.best - right.best);
  const count = order.length;
  const sums = new Float64Array(count);
  order.reduce((sum, cursor, at) => (sums[at] = sum + cursor.best), 0);
  batch.shape(count);
  const blockSums = new Float64Array(count);
  let essential = 0;
  let threshold = 0;
  // Batches start small, so that a threshold (and with it pruning) comes early, and double up to the batch's size.
  let span = Math.min(BATCH_IDS_FIRST, batch.ids);

  for (;;) {
    let start = EXHAUSTED;
    for (let at = essential; at < count; at += 1) if (order[at].doc < start) start = order[at].doc;
    if (start === EXHAUSTED) break;
    if (start === WINDOW) {
      baseId = smallestCurrent(order.slice(essential));
      base = { high: Number(baseId / BigInt(TWO_32)), low: Number(baseId % BigInt(TWO_32)) };
      for (const cursor of cursors) cursor.rebase(base);
      continue;
    }
    // The essential terms' postings of a batch of IDs, scored term after term; the terms that are essential stay so
    // for the whole batch (a threshold that rises inside it only prunes more from the next batch on).
    const end = Math.min(start + span, WINDOW);
    span = Math.min(2 * span, batch.ids);
    for (let at = essential; at < count; at += 1) order[at].collect(start, end, batch);
    // What the non-essential terms can add to any document of the batch at most.
    let batchBound = 0;
    for (let at = 0; at < essential; at += 1) batchBound += order[at].batchBound(start, end);
    batch.drain(end - start, (slot) => {
      const doc = start + slot;
      let sum = batch.essentialSums[slot];
      if ((sum + batchBound) * BOUND_SLACK <= threshold) return;
      if (essential > 0) {
        let bound = 0;
        for (let at = 0; at < essential; at += 1) blockSums[at] = bound += order[at].blockBound(doc);
        for (let at = essential - 1; at >= 0; at -= 1) {
          if ((sum + blockSums[at]) * BOUND_SLACK <= threshold) return;
          const cursor = order[at];
          cursor.advance(doc);
          if (cursor.doc !== doc) continue;
          const score = cursor.score();
          batch.scores[slot * count + cursor.term] = score;
          sum += score;
        }
      }
      if (sum * BOUND_SLACK <= threshold) return;
      // The exhaustive scoring's sum: every term's score in the query's term order.
      let total = 0;
      for (let term = 0; term < count; term += 1) total += batch.scores[slot * count + term];
      if (total <= threshold) return;
      const id = baseId + BigInt(doc);
      if (accept !== undefined && !accept(id)) return;
      top.offer({ id, score: total });
      threshold = top.threshold;
    });
    while (essential < count && sums[essential] * BOUND_SLACK <= threshold) essential += 1;
  }
  return top.sorted();
}

/** The smallest current ID of the cursors (each on a document beyond the window or exhausted): the next base. */
function smallestCurrent(candidates: readonly TermCursor[]): bigint {
  let smallest: bigint | undefined;
  for (const cursor of candidates) {
    if (cursor.doc === EXHAUSTED) continue;
    const id = cursor.currentId();
    if (smallest === undefined || id < smallest) smallest = id;
  }
  return smallest!;
}
