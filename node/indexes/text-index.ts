/**
 * The BM25 text indexes of one partition (the `text` family of index-family.ts): an inverted index over a
 * top-level String or [String] property, kept in its own binary LMDB sub-database and changed only inside the
 * caller's write transaction, so a failed transaction leaves nothing behind and a reader sees one snapshot.
 *
 * Storage: per index and tenant partition, per term its df and its postings (id → tf, document length) in blocks of
 * up to BLOCK_POSTINGS_MAX with block-max bounds, positions apart when kept, one entry per document (its length and
 * distinct terms) and the partition's statistics (documents, total length), all under the index's key prefix so
 * `remove` deletes one key range. The key and value layout is node/indexes/text-encoding.ts's; a transaction rewrites
 * each term it touches once (its last block and new blocks for new documents); the top-k search is
 * node/indexes/text-search.ts's (block-max MaxScore, exact).
 *
 * Rules: a record whose field is absent, or (tenant index) whose tenant property is absent, is not indexed; null or
 * any non-string value (number, boolean, array holding a non-string, object, bytes) is `invalid_type` naming the
 * record and field; a [String]'s elements are analysed one after the other, positions continuing. A text with no
 * term is not indexed (it does not count as a document). Terms longer than TERM_BYTES_MAX bytes are not stored.
 *
 * Scoring (Lucene's BM25): score(d) = Σ over distinct query terms t of idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)),
 * idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)), N, df and avgdl taken in the searched tenant partition. A query term
 * repeated counts once. Results: descending score, ties by ascending ID.
 *
 * Writes: a document's entry and positions are written as its record is; its postings and the statistics are noted
 * (node/indexes/text-writes.ts) and written at `flush`, each term's entry and blocks once per transaction however many of
 * its documents the transaction writes; `discard` forgets them.
 *
 * Searches through a read snapshot keep the terms they read (TermCache below) while the partition's version, read
 * with its statistics in the search's own snapshot, is unchanged.
 *
 * Architecture invariant: the family's whole truth is the `text` sub-database: what `flush` has not written yet lives
 * only until the transaction's `flush` or `discard`, and a cached term serves only a snapshot whose partition version
 * is the one it was read at, so `commit` and `load` have nothing to do. Index states (`index_not_ready`) are the catalog's to check.
 */
import type { Database, Transaction } from "lmdb";
import { randomBytes } from "node:crypto";
import { SilkError } from "../../protocol/errors.js";
import { QUERY_TERMS_MAX, TENANT_BYTES_MAX } from "../../protocol/limits.js";
import { tenantKey, type TextIndexDefinition } from "../../protocol/indexes.js";
import type { SearchHit } from "../../protocol/records.js";
import type { Value } from "../../protocol/values.js";
import type { BuildProblem, IndexedRecord, IndexFamilyStore } from "../index-family.js";
import { idKey, ID_BYTES, indexPrefix, KEY_BYTES_MAX } from "../keys.js";
import { analyzeAll, TERM_BYTES_MAX } from "./text-analyzers.js";
import {
  blockKey,
  decodeDocument,
  decodePositions,
  decodeStatistics,
  decodeTermEntry,
  documentKey,
  EPOCH_BYTES,
  encodeDocument,
  encodePositions,
  partitionPrefix,
  positionsKey,
  statisticsKey,
  statisticsVersion,
  termEnd,
  termKey,
} from "./text-encoding.js";
import { topDocuments, type TermBlocks } from "./text-search.js";
import { TEXT_LAYOUT } from "./text-upgrade.js";
import { PendingPostings } from "./text-writes.js";

/** BM25's term-frequency saturation. */
export const BM25_K1 = 1.2;
/** BM25's document-length normalisation. */
export const BM25_B = 0.75;
/** The most postings the cache of terms read holds per text family (one partition store's), decoded ~24 bytes each. */
export const TERM_CACHE_POSTINGS_MAX = 1_000_000;

/** A record's analysed field: its partition's key prefix and its terms in order. */
interface Analysed {
  readonly part: Buffer;
  readonly terms: readonly string[];
}

/** The search options of one call: the tenant partition (required on a tenant index) and an exact candidate set. */
export interface TextSearchOptions {
  readonly tenant?: string;
  readonly candidates?: readonly bigint[];
}

export class TextIndexes implements IndexFamilyStore<TextIndexDefinition> {
  private readonly prefixes = new Map<string, Buffer>();
  private readonly pending: PendingPostings;
  private readonly cache = new TermCache();

  /**
   * `entries` is the partition's `text` sub-database (binary keys and values). The family keeps nothing in the
   * catalog's `meta` and never reads records itself (it is handed every record). `layoutOf` tells the layout of the
   * entries a read sees (node/indexes/text-upgrade.ts): a writer's are current (its open upgraded them); a read-only handle
   * asks its snapshot until a writer has upgraded them. `newEpoch` draws the random epoch of a partition's statistics
   * (node/indexes/text-encoding.ts), which with their count of changes validates the cache of terms read.
   */
  constructor(
    private readonly entries: Database<Buffer, Buffer>,
    private readonly layoutOf: (transaction: Transaction | undefined) => number = () => TEXT_LAYOUT,
    newEpoch: () => Buffer = () => randomBytes(EPOCH_BYTES),
  ) {
    this.pending = new PendingPostings(entries, newEpoch);
  }

  /** Refuses a read of entries an older Silk wrote (a read-only handle on a directory no writer has opened since). */
  private checkLayout(transaction: Transaction | undefined): void {
    if (this.layoutOf(transaction) !== TEXT_LAYOUT) {
      throw new SilkError(
        "invalid_option",
        "this database's text indexes are in the layout of an older Silk (one entry per posting): open it once as a writer, which upgrades them, before searching them read-only",
      );
    }
  }

  load(): void {}

  put(definition: TextIndexDefinition, record: IndexedRecord, old: IndexedRecord | undefined): void {
    const analysed = this.analyse(definition, record);
    if (old !== undefined) {
      if (sameText(definition, record, old)) return;
      const oldPart = this.partitionOf(definition, old);
      if (oldPart !== undefined) this.unindex(definition, oldPart, old.id);
    }
    if (analysed !== undefined) this.index(definition, analysed, record.id);
  }

  delete(definition: TextIndexDefinition, old: IndexedRecord): void {
    const part = this.partitionOf(definition, old);
    if (part !== undefined) this.unindex(definition, part, old.id);
  }

  /** Writes the transaction's noted postings and statistics (node/indexes/text-writes.ts), each term once. */
  flush(): void {
    this.pending.flush();
  }

  commit(): void {}

  discard(): void {
    this.pending.discard();
  }

  /** Indexes one record of a build chunk (replacing what a write already indexed); returns the postings written. */
  build(definition: TextIndexDefinition, record: IndexedRecord): number {
    const analysed = this.analyse(definition, record);
    if (analysed === undefined) return 0;
    this.unindex(definition, analysed.part, record.id);
    return this.index(definition, analysed, record.id);
  }

  finish(): BuildProblem | undefined {
    return undefined;
  }

  remove(definition: TextIndexDefinition): void {
    const start = this.prefixOf(definition);
    this.pending.forget(start);
    const end = Buffer.from(start);
    end[end.length - 1] = 1;
    const keys = [...this.entries.getKeys({ start, end })];
    for (const key of keys) this.entries.removeSync(key);
  }

  /**
   * The `k` best documents for `text` (analysed with the index's analyzer), read through `transaction` (one
   * snapshot), among `options.candidates` only when given. `k` has no upper limit of its own (the query layer limits
   * result sizes): the memory a search takes is bounded by the documents that match, so Number.MAX_SAFE_INTEGER asks
   * for every match (a sum over several fields needs each field's full ranking).
   */
  search(
    transaction: Transaction | undefined,
    definition: TextIndexDefinition,
    text: string,
    k: number,
    options: TextSearchOptions,
  ): SearchHit[] {
    if (!Number.isSafeInteger(k) || k < 1) throw new SilkError("invalid_value", `text search on ${definition.name}: k must be a positive integer, got ${k}`);
    if (definition.tenant !== undefined && options.tenant === undefined) {
      throw new SilkError("tenant_required", `text index ${definition.name} is partitioned by ${definition.tenant}: pass the tenant to search it`);
    }
    this.checkLayout(transaction);
    const tenant = definition.tenant === undefined ? "" : options.tenant!;
    if (Buffer.byteLength(tenant, "utf8") > TENANT_BYTES_MAX) return [];
    const part = partitionPrefix(this.prefixOf(definition), tenant);
    const stored = this.entries.get(statisticsKey(part), { transaction });
    if (stored === undefined) return [];
    const statistics = decodeStatistics(stored);
    const { documents, length } = statistics;
    const version = statisticsVersion(statistics);
    const candidates = options.candidates === undefined ? undefined : new Set(options.candidates);
    if (candidates !== undefined && candidates.size === 0) return [];
    const terms = [...new Set(analyzeAll(definition.analyzer, [text]))].sort();
    if (terms.length > QUERY_TERMS_MAX) {
      throw new SilkError("limit_exceeded", `text search on ${definition.name}: the query has ${terms.length} distinct terms, at most ${QUERY_TERMS_MAX}`);
    }
    // Only a read snapshot's terms are kept: a write transaction's version may still be rolled back (and named again
    // by other content).
    const cached = version === undefined || transaction === undefined ? undefined : this.cache.partition(part.toString("latin1"), version);
    const postings: TermBlocks[] = [];
    for (const term of terms) {
      let blocks = cached?.terms.get(term);
      if (blocks === undefined) {
        const start = termKey(part, term);
        if (start === undefined) continue;
        blocks = this.blocksOf(transaction, start, documents);
        if (cached !== undefined) this.cache.add(cached, term, blocks);
      }
      if (blocks !== ABSENT) postings.push(blocks);
    }
    const parameters = { k1: BM25_K1, b: BM25_B, averageLength: length / documents };
    return topDocuments(postings, parameters, k, candidates === undefined ? undefined : (id) => candidates.has(id));
  }

  /**
   * A term's blocks and weight idf·(k1 + 1) (df counts every posting of the partition, whatever the candidates), or
   * undefined when no document holds it. The term's entry, then its block by key when it has one, else a range read.
   */
  private blocksOf(transaction: Transaction | undefined, start: Buffer, documents: number): TermBlocks | typeof ABSENT {
    const stored = this.readCopy(transaction, start);
    if (stored === undefined) return ABSENT;
    const entry = decodeTermEntry(stored);
    const weight = Math.log(1 + (documents - entry.frequency + 0.5) / (entry.frequency + 0.5)) * (BM25_K1 + 1);
    const frequency = entry.frequency;
    if (entry.blocks === 1) {
      const key = blockKey(start, entry.lastFirst);
      return { weight, frequency, keys: [key], values: [this.readCopy(transaction, key)!], decoded: [undefined] };
    }
    const keys: Buffer[] = [];
    const values: Buffer[] = [];
    for (const { key, value } of this.entries.getRange({ start: blockKey(start, FIRST_ID), end: termEnd(start), transaction })) {
      keys.push(key);
      values.push(value);
    }
    return { weight, frequency, keys, values, decoded: new Array<Float64Array | undefined>(keys.length) };
  }

  /** A value read by key, copied out of lmdb-js's reused read buffer. */
  private readCopy(transaction: Transaction | undefined, key: Buffer): Buffer | undefined {
    // getBinaryFast takes read options at run time (lmdb-js 3.5 read.js), though its typings omit them; its value is
    // lmdb-js's reused read buffer, whose `length` is the value's.
    const bytes = (this.entries.getBinaryFast as (key: Buffer, options: { transaction?: Transaction }) => Uint8Array | undefined).call(this.entries, key, { transaction });
    return bytes === undefined ? undefined : Buffer.from(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
  }

  /** The positions of `term` in record `id` (an index with positions; [] otherwise or when absent), for tests and phrases. */
  positions(transaction: Transaction | undefined, definition: TextIndexDefinition, term: string, id: bigint, tenant?: string): number[] {
    this.checkLayout(transaction);
    const bytes = Buffer.from(term, "utf8");
    if (bytes.length > TERM_BYTES_MAX) return [];
    const value = this.entries.get(positionsKey(partitionPrefix(this.prefixOf(definition), tenant ?? ""), bytes, idKey(id)), { transaction });
    return value === undefined ? [] : decodePositions(value);
  }

  private prefixOf(definition: TextIndexDefinition): Buffer {
    const name = `${definition.kind}:${definition.label}:${definition.field}`;
    let prefix = this.prefixes.get(name);
    if (prefix === undefined) {
      prefix = indexPrefix(definition.kind, definition.label, definition.field);
      this.prefixes.set(name, prefix);
    }
    return prefix;
  }

  /**
   * The partition a record belongs to, or undefined when it is in none (a tenant index, no tenant property). A
   * tenant value over TENANT_BYTES_MAX is refused for a record being written and means "in none" for an old one
   * (it was never indexed, and its update or delete must not fail for it).
   */
  private partitionOf(definition: TextIndexDefinition, record: IndexedRecord, written = false): Buffer | undefined {
    if (definition.tenant === undefined) return partitionPrefix(this.prefixOf(definition), "");
    const value = record.props[definition.tenant];
    if (value === undefined) return undefined;
    const tenant = tenantKey(value);
    if (Buffer.byteLength(tenant, "utf8") > TENANT_BYTES_MAX) {
      if (!written) return undefined;
      throw new SilkError("limit_exceeded", `text index ${definition.name}: record ${record.id}'s ${definition.tenant} is longer than ${TENANT_BYTES_MAX} bytes`);
    }
    return partitionPrefix(this.prefixOf(definition), tenant);
  }

  /** The record's partition and terms; undefined when it is not indexed; invalid_type for a value of another type. */
  private analyse(definition: TextIndexDefinition, record: IndexedRecord): Analysed | undefined {
    const texts = textsOf(definition, record);
    if (texts === undefined) return undefined;
    const part = this.partitionOf(definition, record, true);
    if (part === undefined) return undefined;
    if (part.length + 1 + 2 + TERM_BYTES_MAX + ID_BYTES > KEY_BYTES_MAX) {
      throw new SilkError("limit_exceeded", `text index ${definition.name}: its keys would exceed LMDB's ${KEY_BYTES_MAX} bytes`);
    }
    return { part, terms: analyzeAll(definition.analyzer, texts) };
  }

  /** Writes a document's postings, entry and statistics; returns the postings written (0: no term, not indexed). */
  private index(definition: TextIndexDefinition, analysed: Analysed, id: bigint): number {
    const counts = new Map<string, number>();
    const positions = definition.positions ? new Map<string, number[]>() : undefined;
    let length = 0;
    analysed.terms.forEach((term, position) => {
      if (term.length * 3 > TERM_BYTES_MAX && Buffer.byteLength(term, "utf8") > TERM_BYTES_MAX) return;
      length += 1;
      counts.set(term, (counts.get(term) ?? 0) + 1);
      if (positions !== undefined) {
        const list = positions.get(term);
        if (list === undefined) positions.set(term, [position]);
        else list.push(position);
      }
    });
    if (counts.size === 0) return 0;
    const id8 = idKey(id);
    const partition = this.pending.partitionOf(analysed.part);
    for (const [term, frequency] of counts) {
      this.pending.add(partition, term, { id, frequency, length });
      if (positions !== undefined) this.entries.putSync(positionsKey(analysed.part, Buffer.from(term, "utf8"), id8), encodePositions(positions.get(term)!));
    }
    this.entries.putSync(documentKey(analysed.part, id8), encodeDocument(length, [...counts.keys()]));
    this.pending.addDocument(partition, id, length);
    return counts.size;
  }

  /** Removes a document's postings, entry and statistics, if it is indexed in this partition. */
  private unindex(definition: TextIndexDefinition, part: Buffer, id: bigint): void {
    const id8 = idKey(id);
    const key = documentKey(part, id8);
    const stored = this.entries.get(key);
    if (stored === undefined) return;
    const document = decodeDocument(stored);
    this.pending.removeDocument(part, id, document.length, document.terms);
    if (definition.positions) for (const term of document.terms) this.entries.removeSync(positionsKey(part, term, id8));
    this.entries.removeSync(key);
  }
}

/** The texts of a record's field: undefined when absent; invalid_type when not a String or [String]. */
function textsOf(definition: TextIndexDefinition, record: IndexedRecord): readonly string[] | undefined {
  const value = record.props[definition.field];
  if (value === undefined) return undefined;
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((element) => typeof element === "string")) return value as string[];
  throw new SilkError(
    "invalid_type",
    `text index ${definition.name}: record ${record.id} has ${definition.field} = ${describe(value)}; a text index takes a String or [String]`,
  );
}

function describe(value: Value): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array holding a non-string";
  if (value instanceof Date) return "a Date";
  if (ArrayBuffer.isView(value)) return "binary or numeric array";
  return typeof value === "object" ? "an object" : `a ${typeof value} (${String(value)})`;
}

/** Whether an update leaves the indexed text and tenant as they were (then the postings stay). */
function sameText(definition: TextIndexDefinition, record: IndexedRecord, old: IndexedRecord): boolean {
  if (definition.tenant !== undefined && !sameValue(record.props[definition.tenant], old.props[definition.tenant])) return false;
  return sameValue(record.props[definition.field], old.props[definition.field]);
}

function sameValue(left: Value | undefined, right: Value | undefined): boolean {
  if (left === right) return true;
  if (left === undefined || right === undefined) return false;
  if (Array.isArray(left) && Array.isArray(right)) {
    return left.length === right.length && left.every((element, at) => typeof element === "string" && element === right[at]);
  }
  // Tenant values of other types compare by the partition they name.
  return typeof left !== "string" && typeof right !== "string" && tenantKey(left) === tenantKey(right);
}

/** The smallest ID key: the start of a term's blocks. */
const FIRST_ID = Buffer.alloc(ID_BYTES);

/** A term no document of the partition holds (kept in the cache like any other). */
export const ABSENT = "absent";

/** The cached terms of one tenant partition of an index, at one version of its content. */
export interface CachedPartition {
  readonly version: string;
  readonly terms: Map<string, TermBlocks | typeof ABSENT>;
  postings: number;
}

/**
 * The terms searches read, with their blocks as read and as decoded by searches (text-search.ts), per tenant
 * partition. A partition's terms serve a search only while its version (its statistics' epoch and count of changes,
 * node/indexes/text-encoding.ts) is the one they were read at: a search that reads another version starts the partition's
 * terms afresh, so every write to the partition, in this process or another, makes them be read again. Bounded by
 * TERM_CACHE_POSTINGS_MAX postings (a term counted by its df, at least 1): past it the least recently searched
 * partitions go first, then the current one's terms.
 */
export class TermCache {
  private readonly partitions = new Map<string, CachedPartition>();
  private postings = 0;

  constructor(private readonly postingsMax = TERM_CACHE_POSTINGS_MAX) {}

  /** The partition's cached terms at `version` (none when it had another), now the most recently searched. */
  partition(name: string, version: string): CachedPartition {
    let partition = this.partitions.get(name);
    if (partition !== undefined) this.partitions.delete(name);
    if (partition === undefined || partition.version !== version) {
      if (partition !== undefined) this.postings -= partition.postings;
      partition = { version, terms: new Map(), postings: 0 };
    }
    this.partitions.set(name, partition);
    return partition;
  }

  add(partition: CachedPartition, term: string, blocks: TermBlocks | typeof ABSENT): void {
    const postings = blocks === ABSENT ? 1 : Math.max(1, blocks.frequency);
    partition.terms.set(term, blocks);
    partition.postings += postings;
    this.postings += postings;
    for (const [name, oldest] of this.partitions) {
      if (this.postings <= this.postingsMax) return;
      this.postings -= oldest.postings;
      if (oldest !== partition) this.partitions.delete(name);
      else {
        partition.terms.clear();
        partition.postings = 0;
      }
    }
  }
}
