/**
 * Adjacency stored packed (data format 3): one owner's edges of one label are a list of blocks, each one LMDB value
 * holding up to ADJACENCY_BLOCK_ENTRIES_MAX fixed-width entries sorted by edge ID, so a traversal reads one value per
 * block instead of one entry per edge, and an edge write rewrites one block, never the whole list.
 *
 *   head block   owner(8) | label | 0x00            → flags(1) | entry*   (flags bit 0: later blocks follow)
 *   later block  owner(8) | label | 0x00 | fence(8) → flags(1) | entry*   (flags 0)
 *   entry        edge(8) | other(8) | other kind(1)                        (IDs big-endian)
 *
 * The same layout serves `out` (owner = source, other = target) and `in` (owner = target, other = source).
 *
 * Invariants: a list's entries ascend by edge ID across its blocks in key order (the head first, then the later
 * blocks by fence); every entry of a later block is at least its fence and below the next block's fence, so the block
 * an edge belongs to is the one with the greatest fence not above it (the head when there is none); a later block is
 * never empty (the head may be, while later blocks follow); the head's flag is set exactly when later blocks exist.
 * Labels never contain 0x00, so a key's label ends at its first 0x00 after the owner; "every edge out of N with label
 * L" is still the key range `N | L | 0x00` .. `N | L | 0x01` (keys.ts adjacencyRange) and "every edge out of N" the
 * prefix `N`. Traversals return edges in label order, then edge ID order, as the one-key-per-edge layout did.
 */
import type { Database, Transaction } from "lmdb";
import type { AdjacencyEntry, Direction } from "../../protocol/records.js";
import { copyBytes, ID_BYTES, KIND_BYTE } from "../keys.js";

/**
 * The most entries a block holds. 64 entries of 17 bytes are a 1,089-byte value: LMDB keeps a value of up to about
 * 2 KB (half a 4 KB page, less the key) inside its leaf page, and rewrites a larger one onto whole overflow pages
 * of its own, so 64 stays inline with room for a long label, and a leaf page holds three full blocks. An edge write
 * then copies at most 1 KB (LMDB copies its 4 KB leaf page on any write anyway); a traversal of a node with up to 64
 * edges of a label is one `get` (most nodes of the SNAP graphs measured have fewer), and a longer list a range of
 * blocks read by one cursor, 64 edges per value. Larger blocks would save nothing on reads (the value is read in
 * place either way) and cost overflow pages and more copying per write.
 */
export const ADJACENCY_BLOCK_ENTRIES_MAX = 64;
export const ADJACENCY_ENTRY_BYTES = 2 * ID_BYTES + 1;
const HEADER_BYTES = 1;
/** The head block's flag: later blocks follow. */
const MORE_BLOCKS = 0x01;
const TWO_POW_32 = 2 ** 32;

/** The head block's key, `owner | label | 0x00`, with the owner copied from `ids` at `ownerAt`. */
function headKeyFrom(ids: Uint8Array, ownerAt: number, label: Uint8Array): Buffer {
  const key = Buffer.allocUnsafe(ID_BYTES + label.length + 1);
  copyBytes(ids, ownerAt, key, 0, ID_BYTES);
  copyBytes(label, 0, key, ID_BYTES, label.length);
  key[ID_BYTES + label.length] = 0;
  return key;
}

/** The head block's key of one owner's list of one label. */
export function adjacencyHeadKey(owner: bigint, label: string): Buffer {
  const labelBytes = Buffer.byteLength(label, "utf8");
  const key = Buffer.allocUnsafe(ID_BYTES + labelBytes + 1);
  key.writeBigUInt64BE(owner, 0);
  key.write(label, ID_BYTES, "utf8");
  key[ID_BYTES + labelBytes] = 0;
  return key;
}

/** A later block's key: the head key followed by the fence (as two 32-bit words). */
function blockKey(headKey: Buffer, fenceHigh: number, fenceLow: number): Buffer {
  const key = Buffer.allocUnsafe(headKey.length + ID_BYTES);
  headKey.copy(key, 0);
  key.writeUInt32BE(fenceHigh, headKey.length);
  key.writeUInt32BE(fenceLow, headKey.length + 4);
  return key;
}

/** The first key after every block of the list whose head key this is (`owner | label | 0x01`). */
function listEnd(headKey: Buffer): Buffer {
  const end = Buffer.from(headKey);
  end[end.length - 1] = 1;
  return end;
}

/** The key of the first later block there could be (fence 1: no edge has ID 0). */
function firstLaterKey(headKey: Buffer): Buffer {
  return blockKey(headKey, 0, 1);
}

/** The label of any block key (the bytes between the owner and the first 0x00). */
export function adjacencyBlockLabel(key: Buffer): string {
  return key.toString("utf8", ID_BYTES, key.indexOf(0, ID_BYTES));
}

/** The other end's kind from an entry's kind byte. */
function kindOf(byte: number): "node" | "vector" {
  return byte === KIND_BYTE.vector ? "vector" : "node";
}

/** Appends a block's entries to `into`, in edge order. */
export function readBlockEntries(value: Buffer, label: string, into: AdjacencyEntry[]): void {
  for (let at = HEADER_BYTES; at < value.length; at += ADJACENCY_ENTRY_BYTES) {
    into.push({
      edge: value.readBigUInt64BE(at),
      label,
      other: value.readBigUInt64BE(at + ID_BYTES),
      otherKind: kindOf(value[at + 2 * ID_BYTES]),
    });
  }
}

/** Appends the other ends of a block's entries to `into` (no edge IDs decoded: the hot path of Out and In). */
export function readBlockNeighbours(value: Buffer, into: { kind: "node" | "vector"; id: bigint }[]): void {
  for (let at = HEADER_BYTES; at < value.length; at += ADJACENCY_ENTRY_BYTES) {
    into.push({ kind: kindOf(value[at + 2 * ID_BYTES]), id: value.readBigUInt64BE(at + ID_BYTES) });
  }
}

/** Whether a head block says later blocks follow. */
export function hasLaterBlocks(head: Buffer): boolean {
  return (head[0] & MORE_BLOCKS) !== 0;
}

/** The range of a list's later blocks, given its head key. */
export function laterBlocksRange(headKey: Buffer): { start: Buffer; end: Buffer } {
  return { start: firstLaterKey(headKey), end: listEnd(headKey) };
}

/**
 * Every entry of one owner's list of one label, in edge order, read in `transaction` (or the current one: inside a
 * write transaction, its own writes included).
 */
export function listEntries(database: Database<Buffer, Buffer>, owner: bigint, label: string, transaction?: Transaction): AdjacencyEntry[] {
  const headKey = adjacencyHeadKey(owner, label);
  const entries: AdjacencyEntry[] = [];
  for (const { value } of database.getRange({ start: headKey, end: listEnd(headKey), transaction })) readBlockEntries(value, label, entries);
  return entries;
}

/**
 * One change to a list: an entry to put (replacing one of the same edge) or an edge to delete. A put's IDs stay in
 * the bytes they came in (the encoded list being written, alive until the flush): no buffer per change.
 */
interface ListChange {
  readonly edgeHigh: number;
  readonly edgeLow: number;
  /** The bytes holding the edge at `edgeAt` and the other end at `otherAt`; undefined for a delete. */
  readonly ids: Buffer | undefined;
  readonly edgeAt: number;
  readonly otherAt: number;
  readonly kindByte: number;
}

/** Writes a put's entry, `edge | other | kind`, into `target` at `at`. */
function writeEntry(change: ListChange, ids: Buffer, target: Buffer, at: number): void {
  copyBytes(ids, change.edgeAt, target, at, ID_BYTES);
  copyBytes(ids, change.otherAt, target, at + ID_BYTES, ID_BYTES);
  target[at + 2 * ID_BYTES] = change.kindByte === KIND_BYTE.vector ? KIND_BYTE.vector : KIND_BYTE.node;
}

interface PendingList {
  readonly direction: Direction;
  readonly headKey: Buffer;
  readonly changes: ListChange[];
}

/** The block a run of changes falls in, as read in the write transaction. */
interface Block {
  readonly key: Buffer;
  readonly head: boolean;
  /** The head's flag before the change (false for later blocks, which carry none). */
  readonly more: boolean;
  /** The block's entries (without the flag byte), a copy the transaction's writes cannot change. */
  readonly entries: Buffer;
  /** The next block's fence; undefined for the list's last block. */
  readonly nextHigh: number | undefined;
  readonly nextLow: number;
}

/**
 * The adjacency changes of one write transaction, gathered per list and written at the end (`flush`), each touched
 * block read and rewritten once: a bulk load of many edges of one node costs one write per block, not one per edge.
 * Changes apply in the order given (a later put or delete of an edge wins), as separate puts and removes would.
 */
export class AdjacencyWriter {
  private readonly lists = new Map<string, PendingList>();
  /**
   * The list each direction's last change went to, with its label (compared by identity: an encoded list hands every
   * entry of one label the same bytes) and owner: a run of changes to one list, as a bulk load's edges from one
   * node are, finds it without building its map key.
   */
  private readonly recent: Record<Direction, { list: PendingList; label: Uint8Array; readonly owner: Buffer } | undefined> = { out: undefined, in: undefined };

  constructor(private readonly databases: Record<Direction, Database<Buffer, Buffer>>) {}

  /**
   * Puts the entry `edge → other (kind)` into `owner`'s list of `label`, the IDs read from `ids` at their offsets;
   * `ids` must stay unchanged until `flush`.
   */
  put(direction: Direction, ids: Buffer, ownerAt: number, label: Uint8Array, edgeAt: number, otherAt: number, kindByte: number): void {
    this.listOf(direction, ids, ownerAt, label).changes.push({ edgeHigh: ids.readUInt32BE(edgeAt), edgeLow: ids.readUInt32BE(edgeAt + 4), ids, edgeAt, otherAt, kindByte });
  }

  /** Deletes `edge` from `owner`'s list of `label` (nothing when it is not there). */
  delete(direction: Direction, ids: Buffer, ownerAt: number, label: Uint8Array, edgeAt: number): void {
    this.listOf(direction, ids, ownerAt, label).changes.push({ edgeHigh: ids.readUInt32BE(edgeAt), edgeLow: ids.readUInt32BE(edgeAt + 4), ids: undefined, edgeAt, otherAt: 0, kindByte: 0 });
  }

  private listOf(direction: Direction, ids: Buffer, ownerAt: number, label: Uint8Array): PendingList {
    const recent = this.recent[direction];
    if (recent !== undefined && recent.label === label && sameId(ids, ownerAt, recent.owner)) return recent.list;
    // The map key: the direction, the owner's 8 bytes and the label bytes, one character each.
    let name = direction === "out" ? "o" : "i";
    for (let i = 0; i < ID_BYTES; i += 1) name += String.fromCharCode(ids[ownerAt + i]);
    for (let i = 0; i < label.length; i += 1) name += String.fromCharCode(label[i]);
    let list = this.lists.get(name);
    if (list === undefined) {
      list = { direction, headKey: headKeyFrom(ids, ownerAt, label), changes: [] };
      this.lists.set(name, list);
    }
    if (recent === undefined) this.recent[direction] = { list, label, owner: Buffer.from(ids.subarray(ownerAt, ownerAt + ID_BYTES)) };
    else {
      recent.list = list;
      recent.label = label;
      copyBytes(ids, ownerAt, recent.owner, 0, ID_BYTES);
    }
    return list;
  }

  /** Writes every gathered change; runs inside the write transaction, before anything reads the adjacency again. */
  flush(): void {
    for (const list of this.lists.values()) writeList(this.databases[list.direction], list.headKey, latestPerEdge(list.changes));
    this.lists.clear();
    this.recent.out = undefined;
    this.recent.in = undefined;
  }
}

function sameId(ids: Uint8Array, at: number, id: Uint8Array): boolean {
  for (let i = 0; i < ID_BYTES; i += 1) if (ids[at + i] !== id[i]) return false;
  return true;
}

/** The changes sorted by edge, only the last one of each edge kept. */
function latestPerEdge(changes: ListChange[]): ListChange[] {
  // Array.prototype.sort is stable: changes of one edge stay in the order they were made.
  const sorted = changes.length === 1 ? changes : [...changes].sort((a, b) => a.edgeHigh - b.edgeHigh || a.edgeLow - b.edgeLow);
  const latest: ListChange[] = [];
  for (const change of sorted) {
    const last = latest[latest.length - 1];
    if (last !== undefined && last.edgeHigh === change.edgeHigh && last.edgeLow === change.edgeLow) latest[latest.length - 1] = change;
    else latest.push(change);
  }
  return latest;
}

function writeList(database: Database<Buffer, Buffer>, headKey: Buffer, changes: readonly ListChange[]): void {
  let from = 0;
  while (from < changes.length) {
    const block = blockOf(database, headKey, changes[from]);
    let to = from + 1;
    while (to < changes.length && (block.nextHigh === undefined || compareWords(changes[to].edgeHigh, changes[to].edgeLow, block.nextHigh, block.nextLow) < 0)) to += 1;
    rewriteBlock(database, headKey, block, mergeBlock(block.entries, changes, from, to));
    from = to;
  }
}

function compareWords(highA: number, lowA: number, highB: number, lowB: number): number {
  return highA - highB || lowA - lowB;
}

/** The block `change`'s edge belongs in: the later block with the greatest fence not above it, else the head. */
function blockOf(database: Database<Buffer, Buffer>, headKey: Buffer, change: ListChange): Block {
  const head = database.get(headKey);
  if (head === undefined || !hasLaterBlocks(head)) {
    return { key: headKey, head: true, more: false, entries: head === undefined ? Buffer.alloc(0) : head.subarray(HEADER_BYTES), nextHigh: undefined, nextLow: 0 };
  }
  let block: { key: Buffer; entries: Buffer; fenceHigh: number; fenceLow: number } = { key: headKey, entries: head.subarray(HEADER_BYTES), fenceHigh: 0, fenceLow: 0 };
  // A reverse range starts at its start key (included) and stops before its end: the head is not among them.
  for (const { key, value } of database.getRange({ start: blockKey(headKey, change.edgeHigh, change.edgeLow), end: headKey, reverse: true, limit: 1 })) {
    block = { key: Buffer.from(key), entries: Buffer.from(value.subarray(HEADER_BYTES)), fenceHigh: key.readUInt32BE(headKey.length), fenceLow: key.readUInt32BE(headKey.length + 4) };
  }
  let next: Buffer | undefined;
  // A block fenced at the largest ID is the last there can be; any other's successor starts after its fence.
  if (block.fenceHigh !== TWO_POW_32 - 1 || block.fenceLow !== TWO_POW_32 - 1) {
    const nextLow = block.fenceLow + 1;
    const after = nextLow === TWO_POW_32 ? blockKey(headKey, block.fenceHigh + 1, 0) : blockKey(headKey, block.fenceHigh, nextLow);
    for (const key of database.getKeys({ start: after, end: listEnd(headKey), limit: 1 })) next = Buffer.from(key);
  }
  const isHead = block.key === headKey;
  return {
    key: block.key,
    head: isHead,
    more: isHead,
    entries: block.entries,
    nextHigh: next?.readUInt32BE(headKey.length),
    nextLow: next === undefined ? 0 : next.readUInt32BE(headKey.length + 4),
  };
}

/** A block's entries with changes [from, to) applied: puts inserted or replaced, deletes removed, in edge order. */
function mergeBlock(entries: Buffer, changes: readonly ListChange[], from: number, to: number): Buffer {
  const merged = Buffer.allocUnsafe(entries.length + (to - from) * ADJACENCY_ENTRY_BYTES);
  let length = 0;
  let at = 0;
  for (let next = from; next < to; next += 1) {
    const change = changes[next];
    // The entries below the change's edge, copied as one run (appends copy the whole block at once).
    let runEnd = at;
    while (runEnd < entries.length && compareWords(entries.readUInt32BE(runEnd), entries.readUInt32BE(runEnd + 4), change.edgeHigh, change.edgeLow) < 0) runEnd += ADJACENCY_ENTRY_BYTES;
    if (runEnd > at) {
      entries.copy(merged, length, at, runEnd);
      length += runEnd - at;
      at = runEnd;
    }
    // An entry of the same edge is replaced (put) or dropped (delete).
    if (at < entries.length && entries.readUInt32BE(at) === change.edgeHigh && entries.readUInt32BE(at + 4) === change.edgeLow) at += ADJACENCY_ENTRY_BYTES;
    if (change.ids !== undefined) {
      writeEntry(change, change.ids, merged, length);
      length += ADJACENCY_ENTRY_BYTES;
    }
  }
  if (at < entries.length) {
    entries.copy(merged, length, at);
    length += entries.length - at;
  }
  return merged.subarray(0, length);
}

/**
 * Writes a block's new entries: removed when empty (a head that still has later blocks stays, empty), split into
 * blocks of at most ADJACENCY_BLOCK_ENTRIES_MAX when too long. The list's last block splits into full blocks (edge
 * IDs grow, so new edges land there: appends fill blocks), any other into equal parts (room for later inserts).
 */
function rewriteBlock(database: Database<Buffer, Buffer>, headKey: Buffer, block: Block, entries: Buffer): void {
  const count = entries.length / ADJACENCY_ENTRY_BYTES;
  if (count === 0) {
    if (block.head) {
      if (block.more) database.putSync(headKey, Buffer.from([MORE_BLOCKS]));
      else database.removeSync(headKey);
      return;
    }
    database.removeSync(block.key);
    let later = false;
    for (const _ of database.getKeys({ ...laterBlocksRange(headKey), limit: 1 })) later = true;
    if (!later) {
      // The last later block is gone: the head loses its flag, and goes too when it holds nothing.
      const head = database.get(headKey);
      if (head !== undefined && head.length > HEADER_BYTES) database.putSync(headKey, Buffer.concat([Buffer.from([0]), head.subarray(HEADER_BYTES)]));
      else if (head !== undefined) database.removeSync(headKey);
    }
    return;
  }
  const parts = Math.ceil(count / ADJACENCY_BLOCK_ENTRIES_MAX);
  const lastBlock = block.nextHigh === undefined;
  let start = 0;
  for (let part = 0; part < parts; part += 1) {
    const size = lastBlock ? Math.min(ADJACENCY_BLOCK_ENTRIES_MAX, count - start) : Math.floor((count * (part + 1)) / parts) - Math.floor((count * part) / parts);
    const value = Buffer.allocUnsafe(HEADER_BYTES + size * ADJACENCY_ENTRY_BYTES);
    value[0] = part === 0 && block.head && (block.more || parts > 1) ? MORE_BLOCKS : 0;
    entries.copy(value, HEADER_BYTES, start * ADJACENCY_ENTRY_BYTES, (start + size) * ADJACENCY_ENTRY_BYTES);
    const at = start * ADJACENCY_ENTRY_BYTES;
    database.putSync(part === 0 ? block.key : blockKey(headKey, entries.readUInt32BE(at), entries.readUInt32BE(at + 4)), value);
    start += size;
  }
}
