/**
 * The indexes of one partition, of every family (secondary, vector, text): which exist (the schema's, and those
 * index operations created at run time), their build states and counters, their maintenance inside the store's
 * write transactions, and background builds over existing data in chunks. Each family keeps its own entries and
 * answers its own lookups (the IndexFamilyStore protocol of index-family.ts); this catalog owns what they share.
 * States and build progress live in the partition's `meta` sub-database under `index:<kind>:<name>`.
 *
 * States: an index the partition has not built starts `constructing` (or `active` at once when its label holds no
 * records); a build scans the label in chunks, each its own write transaction, and flips to `active` in the
 * transaction of its last chunk after the family validated it; a problem (a UNIQUE index over duplicate values, a
 * text index over a number, a vector of another dimension) sends it to `blocked` with the problem's code as reason
 * (its entries are removed). On one of several partitions a UNIQUE index's last chunk goes to `validating` instead
 * of `active`: each partition sees only its own records, so the coordinator checks the values across partitions
 * (`valueEntries`) and then activates or blocks it everywhere (`finishValidation`). Writes maintain `constructing`,
 * `validating` and `active` indexes, so a build catches up with them implicitly. An index no longer declared is
 * dropped when the partition opens, unless an index operation created it at run time (origin `runtime`): those stay
 * until `drop`. `retry` restarts a blocked build; `drop` removes a runtime index and its entries (an abort is a drop
 * of a constructing one).
 *
 * Architecture invariant: lookups and searches answer only for an `active` index, so a reader sees an index either
 * complete or not at all. Only labels with indexes pay anything on a write (one map lookup otherwise).
 */
import type { Database, Transaction } from "lmdb";
import { SilkError, unreachable } from "../../protocol/errors.js";
import {
  definitionOf,
  describeIndex,
  optionalEntry,
  sameDefinition,
  tenantKey,
  VECTOR_FIELD,
  type IndexDefinition,
  type IndexFamily,
  type IndexOrigin,
  type IndexProgress,
  type IndexStateName,
  type IndexStatus,
  type SecondaryIndexDefinition,
  type TextIndexDefinition,
  type VectorIndexDefinition,
} from "../../protocol/indexes.js";
import type { IndexRange, RecordKind, SearchHit, TextSearchRequest, VectorSearchRequest } from "../../protocol/records.js";
import type { IndexedRecord, IndexFamilyStore, IndexRecordSource } from "../index-family.js";
import { indexKey, META_END, META_PREFIX } from "./index-keys.js";
import { SecondaryIndexes } from "./secondary-index.js";
import { TextIndexes } from "./text-index.js";
import { TEXT_LAYOUT, textLayout } from "./text-upgrade.js";
import { VectorIndexes, type GraphFileOptions } from "./vector-index.js";
import { distance, indexVector } from "./vector-math.js";

/** What `meta` holds per index: definition, state, counters, and the last ID the build scanned. */
type Persisted = IndexDefinition & Omit<IndexProgress, "origin" | "dimension"> & {
  /** Absent in indexes persisted before origins existed (all the schema's). */
  readonly origin?: IndexOrigin;
  /** The last ID the build scanned, as a decimal string; "" before the first chunk. */
  readonly cursor: string;
};

/** The sub-databases the families keep their entries in. */
export interface IndexDatabases {
  readonly meta: Database;
  readonly secondary: Database<Buffer, Buffer>;
  readonly text: Database<Buffer, Buffer>;
}

export { indexKey };

/**
 * A read-only handle's view of the text layout: read in each snapshot until it is current (a writer, in this process
 * or another, may upgrade the directory while the handle is open), then known for good (a layout never goes back).
 */
function readOnlyTextLayout(databases: IndexDatabases): (transaction: Transaction | undefined) => number {
  let current = false;
  return (transaction) => {
    if (current) return TEXT_LAYOUT;
    const layout = textLayout(databases.meta, databases.text, transaction);
    current = layout === TEXT_LAYOUT;
    return layout;
  };
}

function maintainedMaps(): Record<RecordKind, Map<string, IndexDefinition[]>> {
  return { node: new Map(), edge: new Map(), vector: new Map() };
}

function metaKey(definition: Pick<IndexDefinition, "kind" | "name">): string {
  return indexKey(definition.kind, definition.name);
}

/** Indexes persisted before origins (families) existed were all the schema's (secondary). */
function originOf(persisted: { readonly origin?: IndexOrigin }): IndexOrigin {
  return persisted.origin ?? "schema";
}

/** A persisted index in today's shape: those stored before families existed are secondary. */
function normalised(value: unknown): Persisted {
  const persisted = value as Record<string, unknown>;
  return (persisted.family === undefined ? { ...persisted, family: "secondary" } : persisted) as unknown as Persisted;
}

export interface CatalogOptions {
  /** One of several partitions: a UNIQUE build ends `validating`, for the coordinator's check across partitions. */
  readonly uniqueAcrossPartitions?: boolean;
  /** Where the vector family keeps its graph files (node/indexes/vector-graph-files.ts); none without (memory storage). */
  readonly vectorGraphs?: Omit<GraphFileOptions, "active">;
  /** A read-only handle: text search checks the directory's text layout (node/indexes/text-upgrade.ts). */
  readonly readOnly?: boolean;
}

export class IndexCatalog {
  readonly secondary: SecondaryIndexes;
  readonly vector: VectorIndexes;
  readonly text: TextIndexes;
  /** The schema's indexes and the runtime indexes committed so far. */
  private readonly definitions: Map<string, IndexDefinition>;
  private readonly declared: ReadonlySet<string>;
  private readonly states = new Map<string, Persisted>();
  /**
   * What `activeIn` last concluded per index, with the stored state's bytes it read: a search or lookup compares
   * bytes instead of decoding the state again, which cost a vector search more than its own bookkeeping.
   */
  private readonly activeMemo = new Map<string, { readonly bytes: Buffer; readonly definition: IndexDefinition; readonly active: IndexDefinition | undefined }>();
  /**
   * Kind, then label → the indexes a write of such a record maintains (constructing and active ones). Two map levels
   * rather than one `kind:label` key: the write path asks once per record and need not build a string to ask.
   */
  private maintainedByLabel: Record<RecordKind, Map<string, IndexDefinition[]>> = maintainedMaps();

  /**
   * `uniqueAcrossPartitions`: this is one of several partitions, so a UNIQUE build ends `validating`, for the
   * coordinator's check across partitions.
   */
  constructor(
    private readonly databases: IndexDatabases,
    private readonly source: IndexRecordSource,
    definitions: readonly IndexDefinition[],
    private readonly options: CatalogOptions = {},
  ) {
    this.secondary = new SecondaryIndexes(databases.secondary, databases.meta);
    const graphs = options.vectorGraphs;
    this.vector = new VectorIndexes(
      databases.meta,
      source,
      graphs === undefined ? undefined : { ...graphs, active: (definition) => this.states.get(metaKey(definition))?.state === "active" },
    );
    this.text = new TextIndexes(databases.text, options.readOnly === true ? readOnlyTextLayout(databases) : undefined);
    this.definitions = new Map(definitions.map((definition) => [metaKey(definition), definitionOf(definition)]));
    this.declared = new Set(this.definitions.keys());
    for (const { key, value } of this.meta.getRange({ start: META_PREFIX, end: META_END })) {
      const persisted = normalised(value);
      if (originOf(persisted) === "runtime" && !this.declared.has(String(key))) this.definitions.set(String(key), definitionOf(persisted));
    }
    for (const [key, definition] of this.definitions) {
      const stored = this.meta.get(key);
      if (stored !== undefined && sameDefinition(normalised(stored), definition)) this.states.set(key, normalised(stored));
    }
    this.refreshMaintained();
    for (const [key, state] of this.states) this.family(state).load(this.definitions.get(key)!, state.state);
  }

  private get meta(): Database {
    return this.databases.meta;
  }

  private family(definition: IndexDefinition): IndexFamilyStore<IndexDefinition> {
    switch (definition.family) {
      case "secondary":
        return this.secondary as IndexFamilyStore<IndexDefinition>;
      case "vector":
        return this.vector as IndexFamilyStore<IndexDefinition>;
      case "text":
        return this.text as IndexFamilyStore<IndexDefinition>;
      default:
        return unreachable(definition, "index family");
    }
  }

  /**
   * Brings the partition in line with the schema (a writer's open, inside a write transaction): drops indexes no
   * longer declared (or declared differently) that the schema declared, keeps runtime ones (a runtime index the
   * schema now declares alike becomes the schema's), and registers new ones — active at once over an empty label,
   * constructing otherwise. Returns the states to adopt once the transaction committed.
   */
  reconcile(): Map<string, Persisted> {
    this.vector.identify();
    const next = new Map(this.states);
    // Read first, then changed: removing keys of the range being iterated would move its cursor.
    const stored = [...this.meta.getRange({ start: META_PREFIX, end: META_END })].map(({ key, value }) => ({ key: String(key), persisted: normalised(value) }));
    for (const { key, persisted } of stored) {
      const definition = this.definitions.get(key);
      if (definition !== undefined && sameDefinition(persisted, definition)) {
        if (persisted.family === "vector" && persisted.state === "constructing" && persisted.cursor !== "") {
          // A vector build's graph lived in memory and died with the process: it starts again from the first record.
          const restarted: Persisted = { ...persisted, cursor: "" };
          this.meta.putSync(key, restarted);
          next.set(key, restarted);
        }
        if (originOf(persisted) === "runtime" && this.declared.has(key)) {
          const adopted: Persisted = { ...(next.get(key) ?? persisted), origin: "schema" };
          this.meta.putSync(key, adopted);
          next.set(key, adopted);
        }
        if (persisted.family === "vector" && definition.family === "vector" && persisted.ef !== definition.ef && this.declared.has(key)) {
          // A changed `ef` keeps the index (sameDefinition leaves it out): the schema's value is recorded as it is.
          const { ef: _old, ...rest } = (next.get(key) ?? persisted) as Persisted & { readonly ef?: number };
          const searched = { ...rest, ...optionalEntry("ef", definition.ef) } as Persisted;
          this.meta.putSync(key, searched);
          next.set(key, searched);
        }
        continue;
      }
      this.family(persisted).remove(definitionOf(persisted));
      this.meta.removeSync(key);
      next.delete(key);
    }
    for (const [key, definition] of this.definitions) {
      if (next.has(key)) continue;
      next.set(key, this.register(definition, "schema"));
    }
    return next;
  }

  private register(definition: IndexDefinition, origin: IndexOrigin): Persisted {
    const persisted = { ...definitionOf(definition), state: this.initialState(definition), origin, entities: 0, bytes: 0, operations: 0, cursor: "" } as Persisted;
    this.meta.putSync(metaKey(definition), persisted);
    return persisted;
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
      throw new SilkError("invalid_field", `${definition.name} is already indexed as ${describeIndex(existing)}; drop it first to index it differently`);
    }
    return new Map(this.states).set(key, this.register(definition, "runtime"));
  }

  /** Removes a runtime index and its entries (`drop_index`, and `abort_index_operation` of a constructing build). */
  drop(key: string): Map<string, Persisted> {
    const persisted = this.existing(key);
    if (originOf(persisted) === "schema") {
      throw new SilkError("unsupported_operation", `${persisted.name} is declared in the schema; remove it from the schema to drop it`);
    }
    this.family(persisted).remove(definitionOf(persisted));
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
    const restarted = { ...rest, state: this.initialState(persisted), cursor: "" } as Persisted;
    this.meta.putSync(key, restarted);
    return new Map(this.states).set(key, restarted);
  }

  /**
   * The coordinator's verdict on a `validating` UNIQUE index (inside a write transaction): `active`, or `blocked` with
   * the duplicate it found across partitions (its entries removed). An `active` index is blocked too (a partition
   * whose label was empty activated at once), so all partitions agree; any other state is left as it is.
   */
  finishValidation(key: string, blocked: { readonly reason: string; readonly message: string } | undefined): Map<string, Persisted> {
    const persisted = this.existing(key);
    if (persisted.state !== "validating" && !(persisted.state === "active" && blocked !== undefined)) return new Map(this.states);
    let next: Persisted;
    if (blocked === undefined) next = { ...persisted, state: "active" };
    else {
      this.family(persisted).remove(this.definitions.get(key)!);
      next = { ...persisted, state: "blocked", reason: blocked.reason, message: blocked.message };
    }
    this.meta.putSync(key, next);
    return new Map(this.states).set(key, next);
  }

  /** A secondary index's entries as `encoded value | id` in value order (the coordinator's check across partitions). */
  valueEntries(key: string): Buffer[] {
    const definition = this.definitions.get(key);
    if (definition?.family !== "secondary") throw new SilkError("index_not_found", `no secondary index ${key.slice(META_PREFIX.length)} on this partition`);
    return this.secondary.valueEntries(definition);
  }

  private existing(key: string): Persisted {
    const persisted = this.states.get(key);
    if (persisted === undefined) throw new SilkError("index_not_found", `no index ${key.slice(META_PREFIX.length)} on this partition`);
    return persisted;
  }

  /** The runtime secondary index of a field (committed), if any. */
  runtimeIndex(kind: RecordKind, label: string, field: string): SecondaryIndexDefinition | undefined {
    const key = indexKey(kind, `${label}.${field}`);
    const definition = this.declared.has(key) ? undefined : this.definitions.get(key);
    return definition?.family === "secondary" ? definition : undefined;
  }

  /** Takes states written by a transaction that committed (runtime indexes come and go with their states). */
  adopt(states: ReadonlyMap<string, Persisted>): void {
    const before = new Map(this.states);
    this.states.clear();
    for (const [key, state] of states) this.states.set(key, state);
    for (const [key, state] of states) if (!this.definitions.has(key)) this.definitions.set(key, definitionOf(state));
    for (const key of [...this.definitions.keys()]) if (!states.has(key) && !this.declared.has(key)) this.definitions.delete(key);
    this.refreshMaintained();
    this.commit();
    // A family hears of an index that appeared, or whose build (re)started, as at open.
    for (const [key, state] of states) {
      const earlier = before.get(key);
      const restarted = state.state === "constructing" && state.cursor === "" && (earlier === undefined || earlier.state !== "constructing" || earlier.cursor !== "");
      if (earlier === undefined || restarted) this.family(state).load(definitionOf(state), state.state);
    }
  }

  private refreshMaintained(): void {
    this.maintainedByLabel = maintainedMaps();
    for (const [key, state] of this.states) {
      if (state.state === "blocked") continue;
      const definition = this.definitions.get(key)!;
      const byLabel = this.maintainedByLabel[definition.kind];
      const list = byLabel.get(definition.label) ?? [];
      list.push(definition);
      byLabel.set(definition.label, list);
    }
  }

  statuses(): IndexStatus[] {
    return [...this.states].map(([key, { cursor: _cursor, ...status }]) => {
      const dimension = this.family(status).dimensionOf?.(status);
      // Whether a text index is implied is the schema's word now, not when it was registered (sameDefinition ignores it).
      const definition = this.definitions.get(key);
      const implied = definition?.family === "text" ? definition.implied : undefined;
      const { implied: _registered, ...rest } = status as typeof status & { readonly implied?: true };
      return { ...rest, origin: originOf(status), ...optionalEntry("dimension", dimension), ...optionalEntry("implied", implied) } as IndexStatus;
    });
  }

  /** The constructing indexes' meta keys, for the build loop. */
  constructing(): string[] {
    return [...this.states].filter(([, state]) => state.state === "constructing").map(([key]) => key);
  }

  /** Whether writes of this kind and label maintain any index (the one check every other write pays). */
  covers(kind: RecordKind, label: string): boolean {
    return this.maintainedByLabel[kind].has(label);
  }

  /** Maintains the label's indexes for a put; call before the record itself is written (it reads the committed one). */
  notePut(kind: RecordKind, label: string, key: Buffer, record: IndexedRecord): void {
    const old = this.source.record(kind, key);
    for (const definition of this.maintainedByLabel[kind].get(label)!) this.family(definition).put(definition, record, old);
  }

  /** Maintains the label's indexes for a delete; call before the record is deleted. */
  noteDelete(kind: RecordKind, label: string, key: Buffer): void {
    const old = this.source.record(kind, key);
    if (old === undefined) return;
    for (const definition of this.maintainedByLabel[kind].get(label)!) this.family(definition).delete(definition, old);
  }

  /** The end of a write transaction's body, still inside it: each family writes or checks what it noted. */
  flush(): void {
    this.secondary.flush();
    this.vector.flush();
    this.text.flush();
  }

  /** After a write transaction committed. */
  commit(): void {
    this.secondary.commit();
    this.vector.commit();
    this.text.commit();
  }

  /** The handle closes: the vector family writes its changed graphs (a writer on disk) and leaves no timer. */
  close(): void {
    this.vector.close();
  }

  /** After a write transaction failed (or before one starts, to forget a failure's leftovers). */
  discard(): void {
    this.secondary.discard();
    this.vector.discard();
    this.text.discard();
  }

  /**
   * Whether a write here can be refused by an index (an active UNIQUE one, or any vector or text index, which check
   * their values): then a two-phase prepare rehearses its list first, while it can still abort.
   */
  mayRefuseWrites(): boolean {
    for (const state of this.states.values()) {
      if (state.state === "blocked") continue;
      if (state.family !== "secondary" || (state.unique && state.state === "active")) return true;
    }
    return false;
  }

  /** Whether the index is active in the reader's snapshot (read there, so a reader sees one state throughout). */
  private activeIn(transaction: Transaction | undefined, key: string): IndexDefinition | undefined {
    const definition = this.definitions.get(key) ?? this.committedRuntimeIndex(transaction, key);
    if (definition === undefined) return undefined;
    // getBinaryFast reads the stored bytes without decoding them; the options are honoured at run time (lmdb-js 3.5).
    const read = this.meta.getBinaryFast as (key: string, options: { transaction?: Transaction }) => Buffer | undefined;
    const stored = read.call(this.meta, key, { transaction });
    if (stored === undefined) return undefined;
    // lmdb-js reads into one large buffer whose `length` it sets to the value's: subarray takes exactly the value.
    const bytes = stored.subarray(0, stored.length);
    const memo = this.activeMemo.get(key);
    if (memo !== undefined && memo.definition === definition && memo.bytes.equals(bytes)) return memo.active;
    const kept = Buffer.from(bytes); // that buffer is reused by the next read
    const persisted = normalised(this.meta.get(key, { transaction }));
    const active = persisted.state === "active" && sameDefinition(persisted, definition) ? definition : undefined;
    this.activeMemo.set(key, { bytes: kept, definition, active });
    return active;
  }

  /**
   * The IDs (ascending, distinct) of records whose field lies in any of the ranges, through a read transaction; or
   * undefined when no active secondary index covers the field, so the caller scans instead.
   */
  lookup(transaction: Transaction, kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): bigint[] | undefined {
    const definition = this.activeIn(transaction, indexKey(kind, `${label}.${field}`));
    return definition?.family === "secondary" ? this.secondary.lookup(transaction, definition, ranges) : undefined;
  }

  /** The index a search names, active in the reader's snapshot; `index_not_found` or `index_not_ready` otherwise. */
  private searched<F extends IndexFamily>(transaction: Transaction | undefined, family: F, kind: RecordKind, label: string, field: string): Extract<IndexDefinition, { family: F }> {
    const key = indexKey(kind, `${label}.${field}`);
    const definition = this.definitions.get(key) ?? this.committedRuntimeIndex(transaction, key);
    if (definition === undefined || definition.family !== family) {
      throw new SilkError("index_not_found", `${kind} ${label} has no ${family} index on ${field}`);
    }
    if (this.activeIn(transaction, key) === undefined) {
      const stored = this.meta.get(key, { transaction });
      const state = stored === undefined ? "constructing" : normalised(stored).state;
      throw new SilkError("index_not_ready", `the ${family} index ${definition.name} is ${state}; search it once it is active`);
    }
    return definition as Extract<IndexDefinition, { family: F }>;
  }

  /**
   * A runtime index another process (the writer) created after this handle opened, as the reader's snapshot holds
   * it: a read-only handle learns of it at its first search (the vector family builds its graphs then).
   */
  private committedRuntimeIndex(transaction: Transaction | undefined, key: string): IndexDefinition | undefined {
    const stored = this.meta.get(key, { transaction });
    if (stored === undefined) return undefined;
    const definition = definitionOf(normalised(stored));
    this.definitions.set(key, definition);
    return definition;
  }

  /**
   * The k nearest. An overlay's changed records leave the committed ranking (it asks for k more to make up for them)
   * and their current vectors are ranked exactly, with the index's own rules (tenant, dimension, metric).
   */
  vectorSearch(transaction: Transaction | undefined, request: VectorSearchRequest): SearchHit[] {
    const definition: VectorIndexDefinition = this.searched(transaction, "vector", request.kind, request.label, request.field);
    const options = { tenant: request.tenant, candidates: request.candidates, transaction, components: request.components, ef: request.ef };
    const overlay = request.overlay;
    if (overlay === undefined || overlay.changed.length === 0) return this.vector.search(definition, request.vector, request.k, options);
    const changed = new Set(overlay.changed);
    const hits = this.vector.search(definition, request.vector, request.k + changed.size, options).filter((hit) => !changed.has(hit.id));
    const allowed = request.candidates === undefined ? undefined : new Set(request.candidates);
    for (const record of overlay.records) {
      if (allowed !== undefined && !allowed.has(record.id)) continue;
      if (definition.tenant !== undefined) {
        const value = record.props[definition.tenant];
        if (request.tenant === undefined || value === undefined || value === null || tenantKey(value) !== request.tenant) continue;
      }
      const vector = indexVector(definition.field === VECTOR_FIELD ? record.vector : record.props[definition.field]);
      if (vector === undefined || vector.length !== request.vector.length) continue;
      hits.push({ id: record.id, score: distance(definition.metric, request.vector, vector) });
    }
    return hits.sort((a, b) => a.score - b.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, request.k);
  }

  /** One field's hits, or with no field every text index of the label, a record's score summed over them. */
  textSearch(transaction: Transaction | undefined, request: TextSearchRequest): SearchHit[] {
    const fields = request.field !== undefined ? [request.field] : this.textFieldsOf(request.kind, request.label);
    if (fields.length === 0) throw new SilkError("index_not_found", `${request.kind} ${request.label} has no text index`);
    const options = { tenant: request.tenant, candidates: request.candidates };
    if (fields.length === 1) {
      const definition: TextIndexDefinition = this.searched(transaction, "text", request.kind, request.label, fields[0]);
      return this.text.search(transaction, definition, request.text, request.k, options);
    }
    const summed = new Map<bigint, number>();
    for (const field of fields) {
      const definition: TextIndexDefinition = this.searched(transaction, "text", request.kind, request.label, field);
      // Each field's full ranking (k = every match) so that a sum is exact, not a sum of truncated lists.
      for (const hit of this.text.search(transaction, definition, request.text, Number.MAX_SAFE_INTEGER, options)) {
        summed.set(hit.id, (summed.get(hit.id) ?? 0) + hit.score);
      }
    }
    return [...summed]
      .map(([id, score]) => ({ id, score }))
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, request.k);
  }

  private textFieldsOf(kind: RecordKind, label: string): string[] {
    const fields: string[] = [];
    for (const definition of this.definitions.values()) {
      if (definition.family === "text" && definition.kind === kind && definition.label === label) fields.push(definition.field);
    }
    return fields;
  }

  /**
   * One build chunk of a constructing index (inside a write transaction): indexes up to `chunkEntities` more
   * records of its label; when the label is exhausted, validates and activates in this same transaction. A problem
   * blocks the index (its entries removed). Returns the states to adopt once the transaction committed.
   */
  buildChunk(key: string, chunkEntities: number): Map<string, Persisted> {
    const current = this.states.get(key);
    if (current === undefined || current.state !== "constructing") return new Map(this.states);
    const definition = this.definitions.get(key)!;
    const family = this.family(definition);
    const chunk = this.source.scan(current.kind, current.label, current.cursor === "" ? undefined : BigInt(current.cursor), chunkEntities);
    let { entities, bytes, operations } = current;
    let next: Persisted;
    try {
      for (const record of chunk.records) {
        entities += 1;
        bytes += record.bytes;
        operations += family.build(definition, record);
      }
      family.flush();
      const cursor = chunk.last === undefined ? current.cursor : chunk.last.toString();
      next = { ...current, entities, bytes, operations, cursor };
      const problem = chunk.done ? family.finish(definition) : undefined;
      if (problem !== undefined) throw new SilkError(problem.reason, problem.message);
      if (chunk.done) next = { ...next, state: definition.family === "secondary" && definition.unique && this.options.uniqueAcrossPartitions ? "validating" : "active" };
    } catch (cause) {
      if (!(cause instanceof SilkError) || cause.kind !== "user") throw cause;
      family.discard();
      family.remove(definition);
      next = { ...current, entities, bytes, operations, state: "blocked", reason: cause.code, message: cause.message };
    }
    this.meta.putSync(key, next);
    return new Map(this.states).set(key, next);
  }
}
