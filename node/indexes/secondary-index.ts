/**
 * The secondary (equality and range) index family: entries `index prefix | encoded value | id` in the partition's
 * `index` sub-database (key layout in keys.ts, value encoding in index-encoding.ts), maintained inside the store's
 * write transactions and looked up by ranges. States, builds and the schema reconcile are the catalog's
 * (index-catalog.ts); this module is the IndexFamilyStore of index-family.ts for `family: "secondary"`.
 *
 * Architecture invariant: within a transaction every removal is written before any addition, so two records of one
 * transaction swapping values never collide; an active UNIQUE index refuses a value another record holds (the
 * storage-side guard; the executor checks first, across partitions: unique.ts), which aborts the transaction.
 */
import type { Database, Transaction } from "lmdb";
import { SilkError } from "../../protocol/errors.js";
import type { IndexStateName, SecondaryIndexDefinition } from "../../protocol/indexes.js";
import type { IndexRange } from "../../protocol/records.js";
import type { Value } from "../../protocol/values.js";
import { encodeIndexValue, kindTagRange, sharedPrefixRange } from "./index-encoding.js";
import type { BuildProblem, IndexedRecord, IndexFamilyStore } from "../index-family.js";
import { indexKey } from "./index-keys.js";
import { AFTER_EVERY_ID, idKey, ID_BYTES, indexKeyFrom, indexPrefix, KEY_BYTES_MAX } from "../keys.js";

interface Addition {
  readonly key: Buffer;
  /** Bytes of prefix and value: the range of every entry with this value. */
  readonly valueEnd: number;
  readonly definition: SecondaryIndexDefinition;
}

export class SecondaryIndexes implements IndexFamilyStore<SecondaryIndexDefinition> {
  private removals: Buffer[] = [];
  private additions: Addition[] = [];

  constructor(
    private readonly entries: Database<Buffer, Buffer>,
    private readonly meta: Database,
  ) {}

  /** Entries live in LMDB: nothing to load. */
  load(): void {}

  put(definition: SecondaryIndexDefinition, record: IndexedRecord, old: IndexedRecord | undefined): void {
    const field = definition.field;
    const prefix = prefixOf(definition);
    const room = valueBytesMax(prefix);
    const before = old?.props[field] === undefined ? undefined : encodeIndexValue(old.props[field], room);
    const after = record.props[field] === undefined ? undefined : encodeIndexValue(record.props[field], room);
    if (before !== undefined && after !== undefined && before.equals(after)) return;
    const ids = idKey(record.id);
    if (before !== undefined) this.removals.push(indexKeyFrom(prefix, before, ids, 0));
    if (after !== undefined) this.additions.push({ key: indexKeyFrom(prefix, after, ids, 0), valueEnd: prefix.length + after.length, definition });
  }

  delete(definition: SecondaryIndexDefinition, old: IndexedRecord): void {
    const value = old.props[definition.field];
    const prefix = prefixOf(definition);
    const before = value === undefined ? undefined : encodeIndexValue(value, valueBytesMax(prefix));
    if (before !== undefined) this.removals.push(indexKeyFrom(prefix, before, idKey(old.id), 0));
  }

  /** Writes the noted entries: every removal first, then the additions, each addition checked against UNIQUE. */
  flush(): void {
    const removals = this.removals;
    const additions = this.additions;
    this.removals = [];
    this.additions = [];
    for (const key of removals) this.entries.removeSync(key);
    for (const addition of additions) {
      const { definition } = addition;
      if (definition.unique && this.isActive(definition)) {
        const holder = this.otherHolder(addition.key, addition.valueEnd);
        if (holder !== undefined) {
          throw new SilkError("unique_violation", `${definition.name} must be unique: record ${holder} already holds the value this write gives record ${addition.key.readBigUInt64BE(addition.valueEnd)}`);
        }
      }
      this.entries.putSync(addition.key, EMPTY);
    }
  }

  /** Entries are written in the transaction itself: nothing waits for the commit but the states of builds. */
  commit(): void {}

  discard(): void {
    this.removals = [];
    this.additions = [];
  }

  build(definition: SecondaryIndexDefinition, record: IndexedRecord): number {
    const value = record.props[definition.field];
    const prefix = prefixOf(definition);
    const encoded = value === undefined ? undefined : encodeIndexValue(value, valueBytesMax(prefix));
    if (encoded === undefined) return 0;
    this.entries.putSync(indexKeyFrom(prefix, encoded, idKey(record.id), 0), EMPTY);
    return 1;
  }

  /** A UNIQUE index over duplicate values cannot activate. */
  finish(definition: SecondaryIndexDefinition): BuildProblem | undefined {
    if (!definition.unique) return undefined;
    const prefix = prefixOf(definition);
    return duplicateProblem(definition.name, firstRepeatedValue(this.entries.getKeys({ start: prefix, end: prefixEnd(prefix) })));
  }

  remove(definition: SecondaryIndexDefinition): void {
    const prefix = prefixOf(definition);
    // Copied first: lmdb-js may hand out one reused buffer per key, and removing while iterating moves the cursor.
    const keys = [...this.entries.getKeys({ start: prefix, end: prefixEnd(prefix) })].map((key) => Buffer.from(key));
    for (const key of keys) this.entries.removeSync(key);
  }

  /** Whether the index is active as of the current transaction (only an active UNIQUE index guards its values). */
  private isActive(definition: SecondaryIndexDefinition): boolean {
    const persisted = this.meta.get(indexKey(definition.kind, definition.name)) as { state?: IndexStateName } | undefined;
    return persisted?.state === "active";
  }

  /** Another record's ID under the same value as this entry key, if any. */
  private otherHolder(key: Buffer, valueEnd: number): bigint | undefined {
    const valuePrefix = key.subarray(0, valueEnd);
    const own = key.readBigUInt64BE(valueEnd);
    for (const other of this.entries.getKeys({ start: valuePrefix, end: Buffer.concat([valuePrefix, AFTER_EVERY_ID]) })) {
      const id = other.readBigUInt64BE(other.length - ID_BYTES);
      if (id !== own) return id;
    }
    return undefined;
  }

  /**
   * The IDs (ascending, distinct) of records whose field lies in any of the ranges, through a read transaction (the
   * catalog checked that the index is active in it).
   */
  lookup(transaction: Transaction, definition: SecondaryIndexDefinition, ranges: readonly IndexRange[]): bigint[] {
    const prefix = prefixOf(definition);
    const lists: bigint[][] = [];
    let ascending = true;
    for (const range of ranges) {
      const { start, end } = rangeKeys(prefix, range);
      if (start.compare(end) >= 0) continue; // an empty interval (say gt 5 and lt 5)
      const ids: bigint[] = [];
      for (const entry of this.entries.getKeys({ start, end, transaction })) ids.push(entry.readBigUInt64BE(entry.length - ID_BYTES));
      for (let i = 1; ascending && i < ids.length; i += 1) ascending = ids[i - 1] < ids[i];
      lists.push(ids);
    }
    if (lists.length <= 1 && ascending) return lists[0] ?? [];
    // One value's entries are in ID order (IS_IN's point ranges): merged, not sorted (a sort's comparator calls cost
    // more than the walk of the keys). A range over several values is in value order: sorted.
    if (ascending) return lists.reduce(mergeAscending);
    const ids = lists.flat();
    ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return ids.filter((id, i) => i === 0 || ids[i - 1] !== id);
  }


  /** Every entry of one index as `encoded value | id`, in key order (value order, then ID order). */
  valueEntries(definition: SecondaryIndexDefinition): Buffer[] {
    const prefix = prefixOf(definition);
    return [...this.entries.getKeys({ start: prefix, end: prefixEnd(prefix) })].map((key) => Buffer.from(key.subarray(prefix.length)));
  }

  /** Every entry key of one index in key order (tests compare a maintained index with one rebuilt from scratch). */
  entryKeys(definition: SecondaryIndexDefinition): string[] {
    const prefix = prefixOf(definition);
    return [...this.entries.getKeys({ start: prefix, end: prefixEnd(prefix) })].map((key) => key.toString("hex"));
  }
}

/** The distinct IDs of two ascending lists, ascending. */
function mergeAscending(a: bigint[], b: bigint[]): bigint[] {
  const merged: bigint[] = new Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let at = 0;
  while (i < a.length && j < b.length) {
    const x = a[i];
    const y = b[j];
    if (x < y) {
      merged[at++] = x;
      i += 1;
    } else if (y < x) {
      merged[at++] = y;
      j += 1;
    } else {
      merged[at++] = x;
      i += 1;
      j += 1;
    }
  }
  while (i < a.length) merged[at++] = a[i++];
  while (j < b.length) merged[at++] = b[j++];
  merged.length = at;
  return merged;
}

const EMPTY = Buffer.alloc(0);

/**
 * Two records holding one value, from entries that end in `encoded value | id` in key order (of one index, with or
 * without its prefix): the encoding is prefix-free, so equal values are equal bytes before the ID, and neighbours.
 */
export function firstRepeatedValue(entries: Iterable<Buffer>): [bigint, bigint] | undefined {
  let previous: Buffer | undefined;
  for (const entry of entries) {
    if (previous !== undefined && previous.length === entry.length && previous.compare(entry, 0, entry.length - ID_BYTES, 0, previous.length - ID_BYTES) === 0) {
      return [previous.readBigUInt64BE(previous.length - ID_BYTES), entry.readBigUInt64BE(entry.length - ID_BYTES)];
    }
    previous = Buffer.from(entry); // lmdb-js may reuse a key's buffer for the next one
  }
  return undefined;
}

/** What blocks a UNIQUE index whose values two records share (undefined: none do). */
export function duplicateProblem(name: string, duplicate: [bigint, bigint] | undefined): BuildProblem | undefined {
  return duplicate === undefined ? undefined : { reason: "unique_violation", message: `${name} must be unique, but records ${duplicate[0]} and ${duplicate[1]} share a value` };
}

function prefixOf(definition: SecondaryIndexDefinition): Buffer {
  return indexPrefix(definition.kind, definition.label, definition.field);
}

/** The bytes an index's keys leave for the encoded value, between its prefix and the record ID. */
function valueBytesMax(prefix: Buffer): number {
  return KEY_BYTES_MAX - prefix.length - ID_BYTES;
}

/** The first key after every key that starts with `prefix` (which ends with the 0x00 separator). */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1] = 1;
  return end;
}

/**
 * The [start, end) keys of one range; an unbounded side stops at the edge of the bound value's kind. A string bound
 * longer than what the index keeps of long strings widens its side to every string that shares its first bytes,
 * which key order does not place by their whole value (index-encoding.ts).
 */
function rangeKeys(prefix: Buffer, range: IndexRange): { start: Buffer; end: Buffer } {
  const bound = range.low ?? range.high;
  const kind = bound === null ? undefined : kindTagRange(bound);
  if (kind === undefined) throw new SilkError("internal", "an index range needs a bound of an indexed kind (a planner bug)");
  const room = valueBytesMax(prefix);
  const encode = (value: Value): Buffer => {
    const encoded = encodeIndexValue(value, room);
    if (encoded === undefined) throw new SilkError("internal", "an index range bound is not indexable (a planner bug)");
    return encoded;
  };
  const shared = (value: Value | null): { start: Buffer; end: Buffer } | undefined => (typeof value === "string" ? sharedPrefixRange(value, room) : undefined);
  const lowShared = shared(range.low);
  const highShared = shared(range.high);
  const start =
    range.low === null ? Buffer.concat([prefix, Buffer.from([kind.first])])
    : lowShared !== undefined ? Buffer.concat([prefix, lowShared.start])
    : range.lowInclusive ? Buffer.concat([prefix, encode(range.low)])
    : Buffer.concat([prefix, encode(range.low), AFTER_EVERY_ID]);
  const end =
    range.high === null ? Buffer.concat([prefix, Buffer.from([kind.end])])
    : highShared !== undefined ? Buffer.concat([prefix, highShared.end])
    : range.highInclusive ? Buffer.concat([prefix, encode(range.high), AFTER_EVERY_ID])
    : Buffer.concat([prefix, encode(range.high)]);
  return { start, end };
}
