/**
 * The secondary indexes of one partition: which exist (from the schema's `INDEX` and `UNIQUE INDEX` fields), their
 * build states, their maintenance inside the store's write transactions, background builds over existing data in
 * chunks, and lookups. Entries live in the partition's `index` sub-database (key layout in keys.ts, value encoding
 * in index-encoding.ts); states and build progress in its `meta` sub-database under `index:<kind>:<name>`.
 *
 * States: an index the partition has not built starts `constructing` (or `active` at once when its label holds no
 * records); a build scans the label in chunks, each its own write transaction, and flips to `active` in the
 * transaction of its last chunk after validating it; a UNIQUE index over duplicate values goes to `blocked` with
 * reason `unique_violation` (its entries are deleted). Writes maintain `constructing` and `active` indexes, so a
 * build catches up with them implicitly. An index no longer declared is dropped when the partition opens, unless an
 * index operation created it at run time (origin `runtime`): those stay until `drop`. `retry` restarts a blocked
 * build; `drop` removes a runtime index and its entries (an abort is a drop of a constructing one).
 *
 * Architecture invariant: lookups answer only for an `active` index, read in the same snapshot as its entries, so a
 * reader sees an index either complete or not at all. Only labels with indexes pay anything on a write.
 */
import type { Database, Transaction } from "lmdb";
import { SilkError } from "../protocol/errors.js";
import type { IndexDefinition, IndexOrigin, IndexStateName, IndexStatus } from "../protocol/indexes.js";
import type { IndexRange, RecordKind } from "../protocol/records.js";
import type { Schema } from "../protocol/schema.js";
import type { Properties, Value } from "../protocol/values.js";
import { encodeIndexValue, kindTagRange } from "./index-encoding.js";
import { AFTER_EVERY_ID, idKey, ID_BYTES, indexKeyFrom, indexPrefix } from "./keys.js";

interface Persisted extends Omit<IndexStatus, "origin"> {
  /** Absent in indexes persisted before origins existed (all the schema's). */
  readonly origin?: IndexOrigin;
  /** The last ID the build scanned, as a decimal string; "" before the first chunk. */
  readonly cursor: string;
}


export interface ScannedRecord {
  readonly id: bigint;
  readonly props: Properties;
  readonly bytes: number;
}

/** One chunk of a label scan: its records, the last ID looked at, and whether the label is exhausted. */
export interface ScanChunk {
  readonly records: readonly ScannedRecord[];
  readonly last: bigint | undefined;
  readonly done: boolean;
}

/** The committed records maintenance and builds read, inside the current transaction (provided by the store). */
export interface IndexRecordSource {
  props(kind: RecordKind, key: Buffer): Properties | undefined;
  /** Looks at up to `limit` records (of the label, or for edges of any label) with IDs above `after`, in ID order. */
  scan(kind: RecordKind, label: string, after: bigint | undefined, limit: number): ScanChunk;
  hasLabel(kind: RecordKind, label: string): boolean;
}

/** Every index the schema declares: top-level scalar fields marked INDEX or UNIQUE INDEX (arrays and objects are scan-only). */
export function indexDefinitions(schema: Schema | undefined): IndexDefinition[] {
  if (schema === undefined) return [];
  const definitions: IndexDefinition[] = [];
  const declared = [...schema.nodes.values(), ...schema.edges.values(), ...schema.vectors.values()];
  for (const type of declared) {
    for (const field of type.fields.values()) {
      if (field.index === undefined || field.type.kind !== "scalar") continue;
      definitions.push({
        kind: type.kind,
        label: type.name,
        field: field.name,
        unique: field.index === "unique",
        type: field.type.name,
        name: `${type.name}.${field.name}`,
      });
    }
  }
  return definitions;
}

const META_PREFIX = "index:";
const META_END = "index;"; // ";" follows ":" in ASCII: the end of every `index:` key

function metaKey(definition: Pick<IndexDefinition, "kind" | "name">): string {
  return `${META_PREFIX}${definition.kind}:${definition.name}`;
}

/** The meta key of an index by kind and name (`User.age`). */
export function indexKey(kind: RecordKind, name: string): string {
  return metaKey({ kind, name });
}

/** Indexes persisted before origins existed were all the schema's. */
function originOf(persisted: { readonly origin?: IndexOrigin }): IndexOrigin {
  return persisted.origin ?? "schema";
}

function definitionOf({ kind, label, field, unique, type, name }: IndexDefinition): IndexDefinition {
  return { kind, label, field, unique, type, name };
}

function sameDefinition(a: IndexDefinition, b: IndexDefinition): boolean {
  return a.kind === b.kind && a.label === b.label && a.field === b.field && a.unique === b.unique && a.type === b.type;
}

interface Maintained {
  readonly definition: IndexDefinition;
  readonly prefix: Buffer;
}

interface Addition {
  readonly key: Buffer;
  /** Bytes of prefix and value: the range of every entry with this value. */
  readonly valueEnd: number;
  readonly index: Maintained;
}

export class SecondaryIndexes {
  /** The schema's indexes and the runtime indexes committed so far. */
  private readonly definitions: Map<string, IndexDefinition>;
  private readonly declared: ReadonlySet<string>;
  private readonly states = new Map<string, Persisted>();
  /** `kind:label` → the indexes a write of such a record maintains (constructing and active ones). */
  private maintainedByLabel = new Map<string, Maintained[]>();
  private removals: Buffer[] = [];
  private additions: Addition[] = [];

  constructor(
    private readonly entries: Database<Buffer, Buffer>,
    private readonly meta: Database,
    private readonly source: IndexRecordSource,
    definitions: readonly IndexDefinition[],
  ) {
    this.definitions = new Map(definitions.map((definition) => [metaKey(definition), definition]));
    this.declared = new Set(this.definitions.keys());
    for (const { key, value } of this.meta.getRange({ start: META_PREFIX, end: META_END })) {
      const persisted = value as Persisted;
      if (originOf(persisted) === "runtime" && !this.declared.has(String(key))) this.definitions.set(String(key), definitionOf(persisted));
    }
    for (const [key, definition] of this.definitions) {
      const persisted = this.meta.get(key) as Persisted | undefined;
      if (persisted !== undefined && sameDefinition(persisted, definition)) this.states.set(key, persisted);
    }
    this.refreshMaintained();
  }

  /**
   * Brings the partition in line with the schema (a writer's open, inside a write transaction): drops indexes no
   * longer declared (or declared differently) that the schema declared, keeps runtime ones (a runtime index the
   * schema now declares alike becomes the schema's), and registers new ones — active at once over an empty label,
   * constructing otherwise. Returns the states to adopt once the transaction committed.
   */
  reconcile(): Map<string, Persisted> {
    const next = new Map(this.states);
    // Read first, then changed: removing keys of the range being iterated would move its cursor.
    const stored = [...this.meta.getRange({ start: META_PREFIX, end: META_END })].map(({ key, value }) => ({ key, persisted: value as Persisted }));
    for (const { key, persisted } of stored) {
      const definition = this.definitions.get(String(key));
      if (definition !== undefined && sameDefinition(persisted, definition)) {
        if (originOf(persisted) === "runtime" && this.declared.has(String(key))) {
          const adopted: Persisted = { ...persisted, origin: "schema" };
          this.meta.putSync(String(key), adopted);
          next.set(String(key), adopted);
        }
        continue;
      }
      const prefix = indexPrefix(persisted.kind, persisted.label, persisted.field);
      this.deleteEntries(prefix);
      this.meta.removeSync(String(key));
      next.delete(String(key));
    }
    for (const [key, definition] of this.definitions) {
      if (next.has(key)) continue;
      const persisted: Persisted = { ...definition, state: this.initialState(definition), origin: "schema", entities: 0, bytes: 0, operations: 0, cursor: "" };
      this.meta.putSync(key, persisted);
      next.set(key, persisted);
    }
    return next;
  }

  /** A new build over an empty label has nothing to scan: active at once. */
  private initialState(definition: IndexDefinition): IndexStateName {
    return this.source.hasLabel(definition.kind, definition.label) ? "constructing" : "active";
  }

  /**
   * Registers a runtime index (`create_index`, inside a write transaction). An index of the same kind, label and
   * field that exists already is left as it is when its definition is the same, and refused otherwise.
   */
  create(definition: IndexDefinition): Map<string, Persisted> {
    const key = metaKey(definition);
    const existing = this.states.get(key);
    if (existing !== undefined) {
      if (sameDefinition(existing, definition)) return new Map(this.states);
      throw new SilkError("invalid_field", `${definition.name} is already indexed${existing.unique ? " UNIQUE" : ""} as ${existing.type}; drop it first to index it differently`);
    }
    const persisted: Persisted = { ...definitionOf(definition), state: this.initialState(definition), origin: "runtime", entities: 0, bytes: 0, operations: 0, cursor: "" };
    this.meta.putSync(key, persisted);
    return new Map(this.states).set(key, persisted);
  }

  /** Removes a runtime index and its entries (`drop_index`, and `abort_index_operation` of a constructing build). */
  drop(key: string): Map<string, Persisted> {
    const persisted = this.existing(key);
    if (originOf(persisted) === "schema") {
      throw new SilkError("unsupported_operation", `${persisted.name} is declared INDEX in the schema; remove it from the schema to drop it`);
    }
    this.deleteEntries(indexPrefix(persisted.kind, persisted.label, persisted.field));
    this.meta.removeSync(key);
    const next = new Map(this.states);
    next.delete(key);
    return next;
  }

  /**
   * Restarts a blocked build from the first record (`retry_index_operation`); any other state is left as it is. The
   * counters go on from where they were, so they stay monotonic over the whole operation.
   */
  retry(key: string): Map<string, Persisted> {
    const persisted = this.existing(key);
    if (persisted.state !== "blocked") return new Map(this.states);
    const { reason: _reason, message: _message, ...rest } = persisted;
    const restarted: Persisted = { ...rest, state: this.initialState(persisted), cursor: "" };
    this.meta.putSync(key, restarted);
    return new Map(this.states).set(key, restarted);
  }

  private existing(key: string): Persisted {
    const persisted = this.states.get(key);
    if (persisted === undefined) throw new SilkError("index_not_found", `no index ${key.slice(META_PREFIX.length)} on this partition`);
    return persisted;
  }

  /** The runtime index of a field (committed), if any. */
  runtimeIndex(kind: RecordKind, label: string, field: string): IndexDefinition | undefined {
    const key = `${META_PREFIX}${kind}:${label}.${field}`;
    return this.declared.has(key) ? undefined : this.definitions.get(key);
  }

  /** Takes states written by a transaction that committed (runtime indexes come and go with their states). */
  adopt(states: ReadonlyMap<string, Persisted>): void {
    this.states.clear();
    for (const [key, state] of states) this.states.set(key, state);
    for (const [key, state] of states) if (!this.definitions.has(key)) this.definitions.set(key, definitionOf(state));
    for (const key of [...this.definitions.keys()]) if (!states.has(key) && !this.declared.has(key)) this.definitions.delete(key);
    this.refreshMaintained();
  }

  private refreshMaintained(): void {
    this.maintainedByLabel = new Map();
    for (const [key, state] of this.states) {
      if (state.state === "blocked") continue;
      const definition = this.definitions.get(key)!;
      const labelKey = `${definition.kind}:${definition.label}`;
      const list = this.maintainedByLabel.get(labelKey) ?? [];
      list.push({ definition, prefix: indexPrefix(definition.kind, definition.label, definition.field) });
      this.maintainedByLabel.set(labelKey, list);
    }
  }

  statuses(): IndexStatus[] {
    return [...this.states.values()].map(({ cursor: _cursor, ...status }) => ({ ...status, origin: originOf(status) }));
  }

  /** The constructing indexes' meta keys, for the build loop. */
  constructing(): string[] {
    return [...this.states].filter(([, state]) => state.state === "constructing").map(([key]) => key);
  }

  /** Whether writes of this kind and label maintain any index (the one check every other write pays). */
  covers(kind: RecordKind, label: string): boolean {
    return this.maintainedByLabel.has(`${kind}:${label}`);
  }

  /**
   * Notes the entries a put replaces and adds; call before the record itself is written (it reads the committed
   * record in the same transaction). `props` are the new record's properties.
   */
  notePut(kind: RecordKind, label: string, ids: Buffer, idAt: number, props: Properties): void {
    const indexes = this.maintainedByLabel.get(`${kind}:${label}`)!;
    const old = this.source.props(kind, ids.subarray(idAt, idAt + ID_BYTES));
    for (const index of indexes) {
      const field = index.definition.field;
      const before = old === undefined || old[field] === undefined ? undefined : encodeIndexValue(old[field]);
      const after = props[field] === undefined ? undefined : encodeIndexValue(props[field]);
      if (before !== undefined && after !== undefined && before.equals(after)) continue;
      if (before !== undefined) this.removals.push(indexKeyFrom(index.prefix, before, ids, idAt));
      if (after !== undefined) this.additions.push({ key: indexKeyFrom(index.prefix, after, ids, idAt), valueEnd: index.prefix.length + after.length, index });
    }
  }

  /** Notes the entries a delete removes; call before the record is deleted. */
  noteDelete(kind: RecordKind, label: string, ids: Buffer, idAt: number): void {
    const old = this.source.props(kind, ids.subarray(idAt, idAt + ID_BYTES));
    if (old === undefined) return;
    for (const index of this.maintainedByLabel.get(`${kind}:${label}`)!) {
      const value = old[index.definition.field];
      const before = value === undefined ? undefined : encodeIndexValue(value);
      if (before !== undefined) this.removals.push(indexKeyFrom(index.prefix, before, ids, idAt));
    }
  }

  /**
   * Writes the noted entries: every removal first, then the additions, so that two records of one transaction
   * swapping values never collide. An active UNIQUE index refuses a value another record holds (the storage-side
   * guard; the executor checks first, across partitions), which aborts the whole transaction.
   */
  flush(): void {
    const removals = this.removals;
    const additions = this.additions;
    this.removals = [];
    this.additions = [];
    for (const key of removals) this.entries.removeSync(key);
    for (const addition of additions) {
      const { definition } = addition.index;
      if (definition.unique && this.states.get(metaKey(definition))?.state === "active") {
        const holder = this.otherHolder(addition.key, addition.valueEnd);
        if (holder !== undefined) {
          throw new SilkError("unique_violation", `${definition.name} must be unique: record ${holder} already holds the value this write gives record ${addition.key.readBigUInt64BE(addition.valueEnd)}`);
        }
      }
      this.entries.putSync(addition.key, EMPTY);
    }
  }

  /** Discards noted entries of a transaction that failed before flush. */
  discard(): void {
    this.removals = [];
    this.additions = [];
  }

  /** Whether some active UNIQUE index guards writes (then a two-phase prepare checks its list first). */
  guardsUniqueness(): boolean {
    for (const state of this.states.values()) if (state.unique && state.state === "active") return true;
    return false;
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
   * The IDs (ascending, distinct) of records whose field lies in any of the ranges, through a read transaction; or
   * undefined when no active index covers the field, so the caller scans instead.
   */
  lookup(transaction: Transaction, kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): bigint[] | undefined {
    const key = `${META_PREFIX}${kind}:${label}.${field}`;
    const definition = this.definitions.get(key);
    const persisted = this.meta.get(key, { transaction }) as Persisted | undefined;
    if (definition === undefined || persisted === undefined || persisted.state !== "active" || !sameDefinition(persisted, definition)) return undefined;
    const prefix = indexPrefix(kind, label, field);
    const ids: bigint[] = [];
    for (const range of ranges) {
      const { start, end } = rangeKeys(prefix, range);
      if (start.compare(end) >= 0) continue; // an empty interval (say gt 5 and lt 5)
      for (const entry of this.entries.getKeys({ start, end, transaction })) ids.push(entry.readBigUInt64BE(entry.length - ID_BYTES));
    }
    ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return ranges.length > 1 ? ids.filter((id, i) => i === 0 || ids[i - 1] !== id) : ids;
  }

  /**
   * One build chunk of a constructing index (inside a write transaction): indexes up to `chunkEntities` more
   * records of its label; when the label is exhausted, validates and activates in this same transaction. Returns
   * the states to adopt once the transaction committed.
   */
  buildChunk(key: string, chunkEntities: number): Map<string, Persisted> {
    const current = this.states.get(key);
    if (current === undefined || current.state !== "constructing") return new Map(this.states);
    const { kind, label, field } = current;
    const prefix = indexPrefix(kind, label, field);
    const chunk = this.source.scan(kind, label, current.cursor === "" ? undefined : BigInt(current.cursor), chunkEntities);
    let { entities, bytes, operations } = current;
    for (const record of chunk.records) {
      entities += 1;
      bytes += record.bytes;
      const value = record.props[field];
      const encoded = value === undefined ? undefined : encodeIndexValue(value);
      if (encoded === undefined) continue;
      const ids = idKey(record.id);
      this.entries.putSync(indexKeyFrom(prefix, encoded, ids, 0), EMPTY);
      operations += 1;
    }
    const cursor = chunk.last === undefined ? current.cursor : chunk.last.toString();
    let next: Persisted = { ...current, entities, bytes, operations, cursor };
    if (chunk.done) {
      const duplicate = current.unique ? this.firstDuplicate(prefix) : undefined;
      if (duplicate === undefined) next = { ...next, state: "active" };
      else {
        this.deleteEntries(prefix);
        next = { ...next, state: "blocked", reason: "unique_violation", message: `${current.name} must be unique, but records ${duplicate[0]} and ${duplicate[1]} share a value` };
      }
    }
    this.meta.putSync(key, next);
    return new Map(this.states).set(key, next);
  }

  /** Two records holding one value of an index, found by comparing neighbouring entries (sorted by value). */
  private firstDuplicate(prefix: Buffer): [bigint, bigint] | undefined {
    let previous: Buffer | undefined;
    for (const entry of this.entries.getKeys({ start: prefix, end: prefixEnd(prefix) })) {
      if (previous !== undefined && previous.length === entry.length && previous.compare(entry, 0, entry.length - ID_BYTES, 0, previous.length - ID_BYTES) === 0) {
        return [previous.readBigUInt64BE(previous.length - ID_BYTES), entry.readBigUInt64BE(entry.length - ID_BYTES)];
      }
      previous = Buffer.from(entry);
    }
    return undefined;
  }

  private deleteEntries(prefix: Buffer): void {
    // Copied first: lmdb-js may hand out one reused buffer per key, and removing while iterating moves the cursor.
    const keys = [...this.entries.getKeys({ start: prefix, end: prefixEnd(prefix) })].map((key) => Buffer.from(key));
    for (const key of keys) this.entries.removeSync(key);
  }

  /** Every entry key of one index in key order (tests compare a maintained index with one rebuilt from scratch). */
  entryKeys(kind: RecordKind, name: string): string[] {
    const definition = this.definitions.get(`${META_PREFIX}${kind}:${name}`);
    if (definition === undefined) return [];
    const prefix = indexPrefix(kind, definition.label, definition.field);
    return [...this.entries.getKeys({ start: prefix, end: prefixEnd(prefix) })].map((key) => key.toString("hex"));
  }
}

const EMPTY = Buffer.alloc(0);

/** The first key after every key that starts with `prefix` (which ends with the 0x00 separator). */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1] = 1;
  return end;
}

/** The [start, end) keys of one range; an unbounded side stops at the edge of the bound value's kind. */
function rangeKeys(prefix: Buffer, range: IndexRange): { start: Buffer; end: Buffer } {
  const bound = range.low ?? range.high;
  const kind = bound === null ? undefined : kindTagRange(bound);
  if (kind === undefined) throw new SilkError("internal", "an index range needs a bound of an indexed kind (a planner bug)");
  const encode = (value: Value): Buffer => {
    const encoded = encodeIndexValue(value);
    if (encoded === undefined) throw new SilkError("internal", "an index range bound is not indexable (a planner bug)");
    return encoded;
  };
  const start =
    range.low === null ? Buffer.concat([prefix, Buffer.from([kind.first])])
    : range.lowInclusive ? Buffer.concat([prefix, encode(range.low)])
    : Buffer.concat([prefix, encode(range.low), AFTER_EVERY_ID]);
  const end =
    range.high === null ? Buffer.concat([prefix, Buffer.from([kind.end])])
    : range.highInclusive ? Buffer.concat([prefix, encode(range.high), AFTER_EVERY_ID])
    : Buffer.concat([prefix, encode(range.high)]);
  return { start, end };
}
