/**
 * A write transaction's text postings (node/indexes/text-index.ts), noted per (index, tenant partition, term) while the
 * transaction's records are written and written once per term at the family's `flush`, still inside the transaction:
 * a term that many documents of the transaction hold is read and rewritten once, not once per document. Also the
 * partitions' statistics, changed once per partition. Document entries and positions are written at once by the
 * caller (an update or delete later in the same transaction reads the document entry through the transaction).
 *
 * Per term, at flush (node/indexes/text-encoding.ts's layout): a term without an entry gets its postings in full blocks; a
 * term whose new postings all lie after its last block's last posting (documents of new IDs, the common write and
 * every build) gets them appended to its last block, filling it and then new blocks of BLOCK_POSTINGS_MAX; any other
 * change decodes each block it falls in (the last block starting at or before the ID, else the first), applies the
 * removals and insertions, and writes the result back, split evenly past BLOCK_POSTINGS_MAX (so that later
 * insertions find room) and wherever a block would span BLOCK_SPAN_MAX IDs or more.
 *
 * Invariant: nothing noted is visible in storage before `flush`; `discard` forgets it (a failed transaction). Searches
 * read a committed snapshot (docs/INDEXES.md: a search inside a write transaction sees the committed index), so no
 * read ever needs the noted postings.
 */
import type { Database } from "lmdb";
import { SilkError } from "../../protocol/errors.js";
import { ID_BYTES, idKey } from "../keys.js";
import {
  BLOCK_POSTINGS_MAX,
  BLOCK_SPAN_MAX,
  blockFirst,
  blockKey,
  BlockWriter,
  decodeStatistics,
  decodeTermEntry,
  encodeStatistics,
  encodeTermEntry,
  PostingBlock,
  statisticsKey,
  termEnd,
  termKeyOf,
  type TermEntry,
} from "./text-encoding.js";

/** A posting as a write sees it: the document's ID, the term's tf in it and the document's length. */
interface Posting {
  readonly id: bigint;
  readonly frequency: number;
  readonly length: number;
}

/**
 * What the transaction did to one term of a partition: postings of documents it indexed (in the order noted, as
 * three parallel lists) and committed postings it removed.
 */
interface TermChanges {
  readonly term: Buffer;
  readonly ids: bigint[];
  readonly frequencies: number[];
  readonly lengths: number[];
  readonly removals: bigint[];
}

/** What the transaction did to one tenant partition of an index. */
export interface PartitionChanges {
  readonly part: Buffer;
  /** By term (the string the analyzer gave). */
  readonly terms: Map<string, TermChanges>;
  /** The documents indexed in this transaction (a removal of one of their postings cancels the noted one). */
  readonly indexed: Set<bigint>;
  documents: number;
  length: number;
}

/** A block read from storage: its key and value. */
interface StoredBlock {
  readonly key: Buffer;
  readonly value: Buffer;
}

export class PendingPostings {
  /** By partition key prefix (as a latin1 string). */
  private partitions = new Map<string, PartitionChanges>();

  /** `newEpoch` draws a partition's epoch (EPOCH_BYTES random bytes; tests pass their own). */
  constructor(
    private readonly entries: Database<Buffer, Buffer>,
    private readonly newEpoch: () => Buffer,
  ) {}

  /** What this transaction noted for a tenant partition (its key prefix), to note more. */
  partitionOf(part: Buffer): PartitionChanges {
    const name = part.toString("latin1");
    let partition = this.partitions.get(name);
    if (partition === undefined) {
      partition = { part, terms: new Map(), indexed: new Set(), documents: 0, length: 0 };
      this.partitions.set(name, partition);
    }
    return partition;
  }

  /** Notes a document's posting of `term` in a partition. */
  add(partition: PartitionChanges, term: string, posting: Posting): void {
    const changes = this.termOf(partition, term);
    changes.ids.push(posting.id);
    changes.frequencies.push(posting.frequency);
    changes.lengths.push(posting.length);
  }

  /** Notes that a document was indexed: it counts in the statistics, and its postings may be cancelled. */
  addDocument(partition: PartitionChanges, id: bigint, length: number): void {
    partition.indexed.add(id);
    partition.documents += 1;
    partition.length += length;
  }

  /** Notes that a document was unindexed: the removal of its postings (`terms`, UTF-8) and of its statistics. */
  removeDocument(part: Buffer, id: bigint, length: number, terms: readonly Buffer[]): void {
    const partition = this.partitionOf(part);
    partition.documents -= 1;
    partition.length -= length;
    const cancels = partition.indexed.has(id);
    for (const bytes of terms) {
      const changes = this.termOf(partition, bytes.toString("utf8"));
      if (cancels) cancel(changes, id);
      else changes.removals.push(id);
    }
  }

  /** Forgets what was noted for every partition of an index (its key prefix): the index is being removed. */
  forget(prefix: Buffer): void {
    const start = prefix.toString("latin1");
    for (const name of this.partitions.keys()) if (name.startsWith(start)) this.partitions.delete(name);
  }

  /** Writes every noted change inside the caller's write transaction; then holds nothing. */
  flush(): void {
    const partitions = this.partitions;
    this.discard();
    for (const partition of partitions.values()) {
      let changed = false;
      for (const changes of partition.terms.values()) if (this.writeTerm(changes)) changed = true;
      if (changed || partition.documents !== 0 || partition.length !== 0) this.writeStatistics(partition.part, partition.documents, partition.length);
    }
  }

  discard(): void {
    this.partitions = new Map();
  }

  private termOf(partition: PartitionChanges, term: string): TermChanges {
    let changes = partition.terms.get(term);
    if (changes === undefined) {
      changes = { term: termKeyOf(partition.part, Buffer.from(term, "utf8")), ids: [], frequencies: [], lengths: [], removals: [] };
      partition.terms.set(term, changes);
    }
    return changes;
  }

  /** Writes one term's changes; false when there were none to write. */
  private writeTerm(changes: TermChanges): boolean {
    const { term, removals } = changes;
    const added = sortAdditions(changes);
    if (removals.length === 0 && added === 0) return false;
    const stored = this.read(term);
    if (stored === undefined) {
      // Nothing committed: a removal has nothing to remove.
      if (added === 0) return false;
      this.writeBlocks(term, 0, 0, undefined, changes);
      return true;
    }
    const entry = decodeTermEntry(stored);
    if (removals.length === 0 && this.appendToLast(term, entry, changes)) return true;
    removals.sort(compareIds);
    this.rewriteBlocks(term, entry, removals, additionsOf(changes));
    return true;
  }

  /**
   * Writes postings that all lie after the term's last posting: into `last` (the term's last block, when it has one)
   * until it is full, then into new full blocks; then the term's entry.
   */
  private writeBlocks(term: Buffer, frequency: number, blocks: number, last: BlockWriter | undefined, additions: TermChanges): void {
    const { ids, frequencies, lengths } = additions;
    let writer = last;
    for (let at = 0; at < ids.length; at += 1) {
      if (writer !== undefined && writer.tryAppend(ids[at], frequencies[at], lengths[at])) continue;
      if (writer !== undefined) this.entries.putSync(blockKey(term, idKey(writer.first)), writer.encode());
      writer = BlockWriter.starting(ids[at], frequencies[at], lengths[at]);
      blocks += 1;
    }
    const lastFirst = idKey(writer!.first);
    this.entries.putSync(blockKey(term, lastFirst), writer!.encode());
    this.entries.putSync(term, encodeTermEntry({ frequency: frequency + ids.length, blocks, lastFirst }));
  }

  /** Appends postings that all lie after the term's last posting; false (nothing written) when they do not. */
  private appendToLast(term: Buffer, entry: TermEntry, additions: TermChanges): boolean {
    const lastFirst = entry.lastFirst.readBigUInt64BE(0);
    const first = additions.ids[0];
    if (first === undefined || first <= lastFirst) return false;
    const last = BlockWriter.continuing(lastFirst, this.read(blockKey(term, entry.lastFirst))!);
    if (first <= last.lastId) return false;
    this.writeBlocks(term, entry.frequency, entry.blocks, last, additions);
    return true;
  }

  /** A value read by key, valid until the next read (lmdb-js's reused read buffer). */
  private read(key: Buffer): Buffer | undefined {
    const bytes = this.entries.getBinaryFast(key);
    return bytes === undefined ? undefined : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  }

  /**
   * Any other change: each removal and insertion goes to the committed block whose range holds its ID (the last
   * block starting at or before it, else the first); each such block is decoded once, changed and written back.
   */
  private rewriteBlocks(term: Buffer, entry: TermEntry, removals: readonly bigint[], additions: readonly Posting[]): void {
    const groups = new Map<string, { block: StoredBlock; removals: Set<bigint>; additions: Posting[] }>();
    const groupOf = (id: bigint) => {
      const block = this.blockAtOrBefore(term, idKey(id)) ?? this.firstBlock(term);
      const name = block.key.toString("latin1");
      let group = groups.get(name);
      if (group === undefined) {
        group = { block, removals: new Set(), additions: [] };
        groups.set(name, group);
      }
      return group;
    };
    for (const id of removals) groupOf(id).removals.add(id);
    for (const addition of additions) groupOf(addition.id).additions.push(addition);
    let frequency = entry.frequency;
    let blocks = entry.blocks;
    const lastKey = blockKey(term, entry.lastFirst);
    for (const { block, removals: removed, additions: added } of groups.values()) {
      const before = postingsOf(PostingBlock.decode(block.key, block.value));
      const kept = before.filter((posting) => !removed.has(posting.id));
      const after = mergeById(kept, added);
      frequency += after.length - before.length;
      const split = chunks(after, !block.key.equals(lastKey));
      blocks += split.length - 1;
      if (split.length === 0 || split[0][0].id !== blockFirst(block.key)) this.entries.removeSync(block.key);
      for (const posting of split) this.putBlock(term, posting);
    }
    if (frequency === 0) {
      this.entries.removeSync(term);
      return;
    }
    this.entries.putSync(term, encodeTermEntry({ frequency, blocks, lastFirst: this.lastBlock(term) }));
  }

  private putBlock(term: Buffer, postings: readonly Posting[]): void {
    const first = postings[0].id;
    const block = new PostingBlock(first);
    for (const posting of postings) {
      block.offsets.push(Number(posting.id - first));
      block.frequencies.push(posting.frequency);
      block.lengths.push(posting.length);
    }
    this.entries.putSync(blockKey(term, idKey(first)), block.encode());
  }

  /** The first ID (8 key bytes) of the term's last block (the term has one). */
  private lastBlock(term: Buffer): Buffer {
    for (const { key } of this.entries.getRange({ start: termEnd(term), end: term, reverse: true, limit: 1 })) return key.subarray(term.length);
    throw new SilkError("internal", "internal error (a bug in Silk): a text index term has postings but no block");
  }

  /** The term's last block whose first ID is at most the given one. */
  private blockAtOrBefore(term: Buffer, id8: Buffer): StoredBlock | undefined {
    for (const entry of this.entries.getRange({ start: blockKey(term, id8), end: term, reverse: true, limit: 1 })) return entry;
    return undefined;
  }

  private firstBlock(term: Buffer): StoredBlock {
    for (const entry of this.entries.getRange({ start: blockKey(term, FIRST_ID), end: termEnd(term), limit: 1 })) return entry;
    throw new SilkError("internal", "internal error (a bug in Silk): a text index term has an entry but no block");
  }

  /**
   * Adds to a partition's statistics and counts one more change of its content (the partition's version, see
   * text-encoding.ts); statistics created (or without an epoch yet) draw a new epoch; a partition left with no
   * document loses them.
   */
  private writeStatistics(part: Buffer, documents: number, length: number): void {
    const key = statisticsKey(part);
    const stored = this.entries.get(key);
    const before = stored === undefined ? undefined : decodeStatistics(stored);
    const total = (before?.documents ?? 0) + documents;
    if (total <= 0) {
      if (stored !== undefined) this.entries.removeSync(key);
      return;
    }
    const epoch = before?.epoch ?? this.newEpoch();
    this.entries.putSync(key, encodeStatistics({ documents: total, length: (before?.length ?? 0) + length, epoch, changes: (before?.changes ?? 0) + 1 }));
  }
}

/** Puts a term's added postings in ID order (they nearly always are: documents come in ID order); returns their count. */
function sortAdditions(changes: TermChanges): number {
  const { ids, frequencies, lengths } = changes;
  let sorted = true;
  for (let at = 1; at < ids.length && sorted; at += 1) if (ids[at] < ids[at - 1]) sorted = false;
  if (!sorted) {
    const order = ids.map((_, at) => at).sort((left, right) => compareIds(ids[left], ids[right]));
    const [byId, byFrequency, byLength] = [order.map((at) => ids[at]), order.map((at) => frequencies[at]), order.map((at) => lengths[at])];
    for (let at = 0; at < ids.length; at += 1) {
      ids[at] = byId[at];
      frequencies[at] = byFrequency[at];
      lengths[at] = byLength[at];
    }
  }
  return ids.length;
}

/** A term's added postings (in ID order) as objects, for a rewrite of its blocks. */
function additionsOf({ ids, frequencies, lengths }: TermChanges): Posting[] {
  return ids.map((id, at) => ({ id, frequency: frequencies[at], length: lengths[at] }));
}

/** Cancels the noted posting of a document indexed in this transaction. */
function cancel(changes: TermChanges, id: bigint): void {
  const at = changes.ids.lastIndexOf(id);
  if (at === -1) throw new SilkError("internal", "internal error (a bug in Silk): a text posting noted in this transaction is missing");
  changes.ids.splice(at, 1);
  changes.frequencies.splice(at, 1);
  changes.lengths.splice(at, 1);
}

function compareIds(left: bigint, right: bigint): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

function postingsOf(block: PostingBlock): Posting[] {
  return block.offsets.map((offset, at) => ({ id: block.first + BigInt(offset), frequency: block.frequencies[at], length: block.lengths[at] }));
}

/** Two lists in ID order, merged (their IDs are distinct). */
function mergeById(left: readonly Posting[], right: readonly Posting[]): Posting[] {
  const merged: Posting[] = [];
  let at = 0;
  for (const posting of right) {
    while (at < left.length && left[at].id < posting.id) merged.push(left[at++]);
    merged.push(posting);
  }
  while (at < left.length) merged.push(left[at++]);
  return merged;
}

/**
 * Postings in ID order as blocks: runs that each span less than BLOCK_SPAN_MAX IDs, each cut into blocks of at most
 * BLOCK_POSTINGS_MAX, full ones (appends: nothing is expected before the last posting) or of even sizes (a block in
 * the middle of a term, where later insertions are expected).
 */
function chunks(postings: readonly Posting[], even: boolean): Posting[][] {
  const blocks: Posting[][] = [];
  let start = 0;
  while (start < postings.length) {
    let end = start + 1;
    while (end < postings.length && postings[end].id - postings[start].id < BLOCK_SPAN_MAX) end += 1;
    const count = Math.ceil((end - start) / BLOCK_POSTINGS_MAX);
    const size = even ? Math.ceil((end - start) / count) : BLOCK_POSTINGS_MAX;
    for (let at = start; at < end; at += size) blocks.push(postings.slice(at, Math.min(at + size, end)));
    start = end;
  }
  return blocks;
}

/** The smallest ID key: the start of a term's blocks. */
const FIRST_ID = Buffer.alloc(ID_BYTES);
