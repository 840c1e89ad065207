/**
 * The vector indexes of one partition (the index catalog's vector family, node/index-family.ts): one HNSW graph per
 * (index, tenant partition), held in memory (node/indexes/vector-graphs.ts: hnswlib-node for cosine and euclidean, our own
 * HNSW for manhattan). Scores are distances as node/indexes/vector-math.ts defines them, ascending (nearest first), ties by
 * ascending ID.
 *
 * Opening and following: the graphs of an active index are read from its graph file (node/indexes/vector-graph-files.ts)
 * when one serves, then brought up to the committed change counter by replaying the records the change log lists
 * (node/indexes/vector-changes.ts); only when neither can serve are they rebuilt from every committed record. A read-only
 * handle follows its writer the same way: a search whose snapshot holds a newer counter replays the changes since
 * its graphs' counter, and rebuilds only when the log no longer reaches back that far.
 *
 * Persisting (a writer on disk): the graph files of active indexes whose graphs changed are written outside any
 * transaction, never on a commit's path: GRAPH_PERSIST_AFTER_MS after the first unwritten change, at the next turn of
 * the event loop once GRAPH_PERSIST_AFTER_VERSIONS transactions or a share of the graph's size in changes
 * accumulated, and at close. A file is tagged with the data's identity and the counter its graphs reflect; a file
 * that does not match (a stale one, a cut short one, another database's) is never used. A failed write (a full disk)
 * costs the next open a replay or a rebuild, never data, and is tried again at the next schedule.
 *
 * Dimension: declared by the definition, or fixed by the first vector indexed, persisted in `meta` under
 * `vindex:<kind>:<name>` inside the transaction that indexed it and read back by `load`. A vector of another length
 * is `vector_dimension_mismatch` (naming the record), from `put` and `build`, which aborts the transaction or blocks
 * the build; a query of another length is the same code from `search`. This partition sees only its own records:
 * one dimension across the partitions of a database is the coordinator's check (cluster/vector-dimensions.ts).
 *
 * Tenants: with `definition.tenant`, a record's partition is tenantKey(props[tenant]) and a record without it is not
 * indexed; a search must name a tenant (`tenant_required`), and an unknown one has no results. Without it every
 * record is in the partition "" and a search's tenant is ignored.
 *
 * Architecture invariant: `put`, `delete`, `build` and `remove` validate, write `meta` inside the caller's
 * transaction, and queue graph operations; only `commit` changes the graphs, in the queued order, so a discarded
 * transaction leaves no trace. The catalog answers searches only for active indexes; this module does not know states
 * beyond `load`. Every filter handed to a graph is wrapped (vector-graphs.ts guardedFilter): a throwing filter
 * callback aborts the process (DESIGN, facts about the stack).
 */
import { randomBytes } from "node:crypto";
import type { Database, Transaction } from "lmdb";
import { SilkError, unreachable } from "../../protocol/errors.js";
import { tenantKey, VECTOR_FIELD, type IndexStateName, type VectorIndexDefinition, type VectorMetric } from "../../protocol/indexes.js";
import type { SearchHit } from "../../protocol/records.js";
import type { IndexedRecord, IndexFamilyStore, IndexRecordSource } from "../index-family.js";
import { idKey } from "../keys.js";
import { changesBetween, CHANGE_LOG_VERSIONS_MAX, clearChanges, listChanges, openChangeEntry } from "./vector-changes.js";
import { readGraphFile, removeGraphFile, removeTemporaryGraphFiles, writeGraphFile } from "./vector-graph-files.js";
import { newGraph, type Neighbour, type PartitionGraph } from "./vector-graphs.js";
import { distance, indexVector } from "./vector-math.js";

export { guardedFilter } from "./vector-graphs.js";

const META_PREFIX = "vindex:";
const VERSION_PREFIX = "vindex-version:";
/** The data's identity in `meta`, which every graph file names: a file from another database is never used. */
const IDENTITY_KEY = "vindex-identity";
/** The version of graphs that reflect no committed records yet (a constructing index, one loaded by a search). */
const UNBUILT = -1;
/**
 * The beam width of an unrestricted search is max(k, this) unless the index or the search sets `ef`
 * (protocol/indexes.ts VECTOR_EF_MAX). `make bench-vector-ef` measures recall@10 on MNIST and on uniform random
 * vectors (2,000 × 32, the unit tests' kind of set): MNIST alone would allow 10 (cosine 0.964, euclidean 0.955 over
 * 1,000 queries), but uniform vectors reach 0.71–0.76 at 10, 0.83–0.86 at 16, 0.94–0.96 at 32 (the target's edge)
 * and 0.995 at 64, the smallest ef of the sweep that keeps recall 0.95 with a margin (docs/INDEXES.md). Data as
 * easy as MNIST can set a lower `ef` per index or per search.
 */
export const EF_SEARCH_MIN = 64;
/**
 * A restricted search scans its candidates exactly when there are at most this many, or ... On MNIST (784-d) a scan
 * of 908 members answers 2.8–4.2× the queries of hnswlib's filtered walk, of 1,821 members 0.5–0.95×, of 2,837
 * 0.3–0.5× (`make bench-vectors`, docs/BENCHMARKS.md "Filtered search"): they cross at 1,400–1,800, and up to here
 * the scan costs about what the walk does and is exact.
 */
export const EXACT_CANDIDATES_MAX = 2_000;
/** ... when they are at most this fraction of the graph (a filtered graph walk would visit most of it anyway). */
export const EXACT_CANDIDATES_FRACTION = 0.1;
/** The beam width of a filtered graph search, at most (it grows as the candidates get fewer). */
const EF_FILTERED_MAX = 2_048;
/** Records read per scan chunk while `load` rebuilds a graph. */
const LOAD_CHUNK_RECORDS = 1_024;
/** A writer writes an index's changed graphs this long after their first change not in its file, at the latest. */
export const GRAPH_PERSIST_AFTER_MS = 60_000;
/**
 * ... or at the next turn of the event loop after this many transactions changed them: half the change log, so the
 * file and the log together keep reaching the data and an open replays instead of rebuilding.
 */
export const GRAPH_PERSIST_AFTER_VERSIONS = CHANGE_LOG_VERSIONS_MAX / 2;
/** ... or after changes to this share of the graph's records (replaying them would cost as much as writing), ... */
const GRAPH_PERSIST_AFTER_CHANGES_FRACTION = 1 / 8;
/** ... and never fewer than this many. */
const GRAPH_PERSIST_AFTER_CHANGES_MIN = 1_000;
/**
 * A writer rebuilds rather than load a graph file whose graphs hold more dead slots (PartitionGraph.deadSlots) than
 * this many plus their live records: the rebuild compacts them, as every open did before graphs were persisted.
 */
const GRAPH_DEAD_SLOTS_SLACK = 1_024;

/** Where a partition's graph files live and who writes them (node/indexes/vector-graph-files.ts). */
export interface GraphFileOptions {
  readonly folder: string;
  /** A writer writes files; a read-only handle only reads them. */
  readonly writer: boolean;
  /** Whether the index is active in the committed catalog: only an active index's graphs are written. */
  readonly active: (definition: VectorIndexDefinition) => boolean;
  /** GRAPH_PERSIST_AFTER_MS unless given (tests). */
  readonly persistAfterMs?: number;
}

/** One index's committed in-memory state. */
interface IndexState {
  definition: VectorIndexDefinition;
  dimension: number | undefined;
  /** The change counter (`vindex-version:` in `meta`) of the commit the graphs reflect; UNBUILT before any. */
  version: number;
  readonly graphs: Map<string, PartitionGraph>;
  /** Which tenant partition holds each indexed record. */
  readonly partitionOf: Map<bigint, string>;
  /** The change counter of the graph file this process read or wrote for the index; UNBUILT when none. */
  persisted: number;
  /** Transactions and record changes applied since the graph file was written (a writer's schedule). */
  versionsSincePersisted: number;
  changesSincePersisted: number;
}

function newState(definition: VectorIndexDefinition, dimension: number | undefined): IndexState {
  return { definition, dimension, version: UNBUILT, graphs: new Map(), partitionOf: new Map(), persisted: UNBUILT, versionsSincePersisted: 0, changesSincePersisted: 0 };
}

type Queued =
  | { readonly op: "put"; readonly definition: VectorIndexDefinition; readonly id: bigint; readonly partition: string; readonly vector: Float32Array }
  | { readonly op: "delete"; readonly definition: VectorIndexDefinition; readonly id: bigint }
  | { readonly op: "dimension"; readonly definition: VectorIndexDefinition; readonly dimension: number }
  | { readonly op: "remove"; readonly definition: VectorIndexDefinition };

function indexKey(definition: VectorIndexDefinition): string {
  return `${definition.kind}:${definition.name}`;
}

function metaKey(definition: VectorIndexDefinition): string {
  return `${META_PREFIX}${indexKey(definition)}`;
}

function versionKey(definition: VectorIndexDefinition): string {
  return `${VERSION_PREFIX}${indexKey(definition)}`;
}

/** What a search may be told besides the query. */
export interface VectorSearchOptions {
  readonly tenant?: string;
  readonly candidates?: readonly bigint[];
  /** The reader's snapshot: graphs older than its change counter are brought up to date first (another process committed). */
  readonly transaction?: Transaction;
  /** The beam width (at least k), over the definition's `ef` and EF_SEARCH_MIN: a search's `ef` option. */
  readonly ef?: number;
  /** The query as plain numbers (VectorSearchRequest.components), for hnswlib-node. */
  readonly components?: readonly number[];
}

function byDistanceThenId(a: SearchHit, b: SearchHit): number {
  return a.score - b.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * The `wanted` nearest of `members` by exact distance, nearest first, ties by ascending ID: a bounded insertion into
 * the best so far, so a scan of thousands of candidates for k = 10 sorts ten hits, not thousands (the exact path of a
 * restricted search; bench/vectors.ts times it beside a brute-force scan). A member whose vector `vectorOf` cannot
 * give is left out.
 */
function nearestMembers(
  metric: VectorMetric,
  graph: PartitionGraph,
  query: Float32Array,
  members: readonly number[],
  wanted: number,
  vectorOf: (label: number) => Float32Array | undefined,
): SearchHit[] {
  const best: SearchHit[] = [];
  for (const label of members) {
    const vector = vectorOf(label);
    if (vector === undefined) continue;
    const score = distance(metric, query, vector);
    if (best.length === wanted && score > best[wanted - 1].score) continue;
    const hit = { id: graph.idOf[label]!, score };
    if (best.length === wanted) {
      if (byDistanceThenId(hit, best[wanted - 1]) >= 0) continue;
      best.pop();
    }
    let at = best.length;
    while (at > 0 && byDistanceThenId(hit, best[at - 1]) < 0) at -= 1;
    best.splice(at, 0, hit);
  }
  return best;
}

/** The tenant partition a record is indexed in; undefined when the index leaves it out (a tenant index, no tenant). */
function tenantPartition(definition: VectorIndexDefinition, record: IndexedRecord): string | undefined {
  if (definition.tenant === undefined) return "";
  const tenant = record.props[definition.tenant];
  return tenant === undefined || tenant === null ? undefined : tenantKey(tenant);
}

/**
 * The vector a record gives an index and its tenant partition, unchecked against any dimension; undefined when the
 * index leaves the record out (no vector, no tenant). A value that is no vector is `invalid_type` naming the record.
 */
function indexedEntry(definition: VectorIndexDefinition, record: IndexedRecord): { partition: string; vector: Float32Array } | undefined {
  const value = definition.field === VECTOR_FIELD ? record.vector : record.props[definition.field];
  let vector: Float32Array | undefined;
  try {
    vector = indexVector(value);
  } catch (error) {
    if (error instanceof SilkError) throw new SilkError(error.code, `record ${record.id}, vector index ${definition.name}: ${error.message}`);
    throw error;
  }
  if (vector === undefined) return undefined;
  const partition = tenantPartition(definition, record);
  return partition === undefined ? undefined : { partition, vector };
}

/**
 * The length of the vector an index would take from a record, without converting or validating its components
 * (the coordinator's check of one dimension across partitions, cluster/vector-dimensions.ts: a 768-d vector cost
 * 7 µs converted); undefined when the index leaves the record out or the value is no array of numbers at all, which
 * the record's partition refuses with the value's own code.
 */
export function indexedLength(definition: VectorIndexDefinition, record: IndexedRecord): number | undefined {
  const value = definition.field === VECTOR_FIELD ? record.vector : record.props[definition.field];
  const isVector = Array.isArray(value) || value instanceof Float32Array || value instanceof Float64Array || value instanceof Int32Array || value instanceof BigInt64Array;
  if (!isVector || tenantPartition(definition, record) === undefined) return undefined;
  return value.length;
}

/** `vector_dimension_mismatch` for a record's vector of `length` in an index of `dimension` (none fixed: at least 1). */
export function dimensionMismatch(definition: VectorIndexDefinition, id: bigint, length: number, dimension: number | undefined): SilkError {
  const expected = dimension === undefined ? "at least 1" : String(dimension);
  return new SilkError("vector_dimension_mismatch", `record ${id} has a vector of length ${length}; the vector index ${definition.name} has dimension ${expected}`);
}

export class VectorIndexes implements IndexFamilyStore<VectorIndexDefinition> {
  private readonly indexes = new Map<string, IndexState>();
  private queued: Queued[] = [];
  /** Dimensions fixed or forgotten by the current transaction, over the committed ones (by index key). */
  private readonly pendingDimensions = new Map<string, number | undefined>();
  /** The change counters the current transaction wrote (by index key), adopted by `commit`. */
  private readonly pendingVersions = new Map<string, number>();
  /** The IDs the current transaction changed per index, for the change log; undefined: not listed (a drop). */
  private readonly pendingChanges = new Map<string, bigint[] | undefined>();
  private persistTimer: NodeJS.Timeout | undefined;
  private persistSoon: NodeJS.Immediate | undefined;

  constructor(
    private readonly meta: Database,
    private readonly source: IndexRecordSource,
    private readonly files?: GraphFileOptions,
  ) {
    if (files?.writer === true) removeTemporaryGraphFiles(files.folder);
  }

  /** Gives the data an identity for its graph files, once (a writer's open, inside a write transaction). */
  identify(): void {
    if (this.meta.get(IDENTITY_KEY) === undefined) this.meta.putSync(IDENTITY_KEY, randomBytes(16).toString("hex"));
  }

  load(definition: VectorIndexDefinition, state: IndexStateName): void {
    const index = newState(definition, undefined);
    this.indexes.set(indexKey(definition), index);
    if (state === "active") {
      this.refresh(index);
      this.schedulePersist(); // a writer that had to rebuild writes the file it lacked
    } else index.dimension = definition.dimension ?? (this.meta.get(metaKey(definition)) as number | undefined);
    // constructing: the catalog's build starts over; blocked: holds nothing. Either stays UNBUILT, so a reader that
    // later finds the index active in its snapshot builds it even if the activating transaction changed nothing.
  }

  /**
   * Brings an index's graphs to the committed change counter, read in the same view as the records (lmdb-js's current
   * read transaction outside a write): by replaying the logged changes since the graphs' counter, else from the
   * graph file and the changes since its counter, else by a rebuild from every record.
   */
  private refresh(index: IndexState): void {
    const committed = this.committedVersion(index.definition);
    if (index.version !== UNBUILT && this.replay(index, committed)) return;
    if (this.loadFile(index, committed)) return;
    this.rebuild(index);
  }

  private committedVersion(definition: VectorIndexDefinition): number {
    return (this.meta.get(versionKey(definition)) as number | undefined) ?? 0;
  }

  /**
   * Applies the records the change log lists after the graphs' counter up to `committed`, each as committed now;
   * false (the graphs possibly half updated: the caller loads or rebuilds them whole) when the log cannot tell.
   */
  private replay(index: IndexState, committed: number): boolean {
    const { definition } = index;
    if (committed < index.version) return false; // graphs newer than the data: not this data's graphs
    const ids = changesBetween(this.meta, indexKey(definition), index.version, committed);
    if (ids === undefined) return false;
    index.version = UNBUILT; // until every change is applied
    index.dimension = definition.dimension ?? (this.meta.get(metaKey(definition)) as number | undefined) ?? index.dimension;
    try {
      for (const id of ids) {
        const record = this.source.record(definition.kind, idKey(id));
        const entry = record === undefined ? undefined : this.entryOf(definition, record, index.dimension);
        if (entry === undefined) this.apply(index, { op: "delete", definition, id });
        else {
          index.dimension ??= entry.vector.length;
          this.apply(index, { op: "put", definition, id, ...entry });
        }
      }
    } catch (error) {
      if (error instanceof SilkError) return false;
      throw error;
    }
    index.version = committed;
    return true;
  }

  /** Takes the index's graph file, if one of this data serves, and replays the changes since; whether it served. */
  private loadFile(index: IndexState, committed: number): boolean {
    const identity = this.meta.get(IDENTITY_KEY);
    if (this.files === undefined || typeof identity !== "string") return false;
    const { definition } = index;
    const file = readGraphFile(this.files.folder, identity, definition);
    if (file === undefined || file.version > committed) return false;
    if (this.files.writer && [...file.graphs.values()].some((graph) => graph.deadSlots > graph.size + GRAPH_DEAD_SLOTS_SLACK)) return false;
    index.graphs.clear();
    index.partitionOf.clear();
    for (const [partition, graph] of file.graphs) {
      index.graphs.set(partition, graph);
      for (const id of graph.labelOf.keys()) index.partitionOf.set(id, partition);
    }
    index.dimension = file.dimension ?? definition.dimension;
    index.version = file.version;
    index.persisted = file.version;
    return this.replay(index, committed);
  }

  /**
   * Replaces an index's graphs with the committed records, read synchronously through the source together with the
   * change counter, so both come from one view of the store (lmdb-js's current read transaction outside a write):
   * the graphs are tagged with the counter of exactly the records they hold.
   */
  private rebuild(index: IndexState): void {
    const { definition } = index;
    index.graphs.clear();
    index.partitionOf.clear();
    index.version = UNBUILT; // until the scan finished: a rebuild that threw is tried again by the next search
    const version = (this.meta.get(versionKey(definition)) as number | undefined) ?? 0;
    index.dimension = definition.dimension ?? (this.meta.get(metaKey(definition)) as number | undefined);
    let after: bigint | undefined;
    for (;;) {
      const chunk = this.source.scan(definition.kind, definition.label, after, LOAD_CHUNK_RECORDS);
      for (const record of chunk.records) {
        const entry = this.entryOf(definition, record, index.dimension);
        if (entry === undefined) continue;
        index.dimension ??= entry.vector.length; // committed before its dimension was persisted: fix it again
        this.apply(index, { op: "put", definition, id: record.id, ...entry });
      }
      after = chunk.last ?? after;
      if (chunk.done || chunk.last === undefined) break;
    }
    index.version = version;
  }

  /**
   * Counts the current transaction as a change of the index's graphs (once per transaction), in `meta`, and opens
   * its change log entry, unlisted until `flush` lists the IDs.
   */
  private touch(definition: VectorIndexDefinition): void {
    const key = indexKey(definition);
    if (this.pendingVersions.has(key)) return;
    const next = this.committedVersion(definition) + 1;
    this.meta.putSync(versionKey(definition), next);
    openChangeEntry(this.meta, key, next);
    this.pendingVersions.set(key, next);
    this.pendingChanges.set(key, []);
  }

  /** Notes a record the current transaction changed in the index, for the change log. */
  private changed(definition: VectorIndexDefinition, id: bigint): void {
    this.pendingChanges.get(indexKey(definition))?.push(id);
  }

  put(definition: VectorIndexDefinition, record: IndexedRecord, _old: IndexedRecord | undefined): void {
    this.queue(definition, record);
  }

  delete(definition: VectorIndexDefinition, old: IndexedRecord): void {
    this.touch(definition);
    this.changed(definition, old.id);
    this.queued.push({ op: "delete", definition, id: old.id });
  }

  /** Lists the changed IDs in the change log (every queued operation was validated when queued). */
  flush(): void {
    for (const [key, ids] of this.pendingChanges) if (ids !== undefined) listChanges(this.meta, key, this.pendingVersions.get(key)!, ids);
  }

  commit(): void {
    const queued = this.queued;
    this.queued = [];
    this.pendingDimensions.clear();
    for (const operation of queued) {
      const index = this.stateOf(operation.definition);
      this.apply(index, operation);
      if (operation.op === "remove" && this.files?.writer === true) {
        removeGraphFile(this.files.folder, operation.definition);
        index.persisted = UNBUILT;
      }
    }
    // Every queued operation's index was touched: its graphs now reflect the counter this transaction wrote (a
    // constructing index's too: its build started over with empty graphs, and builds and writes fill them).
    for (const [key, version] of this.pendingVersions) {
      const index = this.indexes.get(key);
      if (index === undefined) continue;
      index.version = version;
      index.versionsSincePersisted += 1;
      index.changesSincePersisted += this.pendingChanges.get(key)?.length ?? 0;
    }
    const touched = this.pendingVersions.size > 0;
    this.pendingVersions.clear();
    this.pendingChanges.clear();
    if (touched) this.schedulePersist();
  }

  discard(): void {
    this.queued = [];
    this.pendingDimensions.clear();
    this.pendingVersions.clear();
    this.pendingChanges.clear();
  }

  /**
   * A writer's schedule (the module comment): soon when an index's graphs are far from their file, else a timer
   * for the first change not written. Nothing here runs inside a transaction: timers fire between event-loop tasks.
   */
  private schedulePersist(): void {
    if (this.files?.writer !== true) return;
    let dirty = false;
    let due = false;
    for (const index of this.indexes.values()) {
      if (index.version === UNBUILT || index.version === index.persisted) continue;
      dirty = true;
      const changesDue = Math.max(GRAPH_PERSIST_AFTER_CHANGES_MIN, index.partitionOf.size * GRAPH_PERSIST_AFTER_CHANGES_FRACTION);
      if (index.persisted === UNBUILT || index.versionsSincePersisted >= GRAPH_PERSIST_AFTER_VERSIONS || index.changesSincePersisted >= changesDue) due = true;
    }
    if (due && this.persistSoon === undefined) this.persistSoon = setImmediate(() => this.persistInBackground()).unref();
    else if (dirty && this.persistTimer === undefined) this.persistTimer = setTimeout(() => this.persistInBackground(), this.files.persistAfterMs ?? GRAPH_PERSIST_AFTER_MS).unref();
  }

  private persistInBackground(): void {
    try {
      this.persistGraphs();
    } catch {
      // A graph file is a cache: a failed write (a full disk) costs the next open a replay or a rebuild, never data.
      // The changes stay counted, so the next commit schedules it again.
    }
  }

  /**
   * Writes the graph file of every active index whose graphs changed since its file (a writer on disk; outside any
   * transaction). Throws what the file system throws.
   */
  persistGraphs(): void {
    this.cancelPersist();
    const files = this.files;
    const identity = this.meta.get(IDENTITY_KEY);
    if (files?.writer !== true || typeof identity !== "string") return;
    for (const index of this.indexes.values()) {
      if (index.version === UNBUILT || index.version === index.persisted || !files.active(index.definition)) continue;
      writeGraphFile(files.folder, { identity, definition: index.definition, version: index.version, dimension: index.dimension, graphs: index.graphs });
      index.persisted = index.version;
      index.versionsSincePersisted = 0;
      index.changesSincePersisted = 0;
    }
  }

  private cancelPersist(): void {
    if (this.persistSoon !== undefined) clearImmediate(this.persistSoon);
    if (this.persistTimer !== undefined) clearTimeout(this.persistTimer);
    this.persistSoon = undefined;
    this.persistTimer = undefined;
  }

  /** The handle closes: a writer writes what changed (before its environment closes); no timer is left behind. */
  close(): void {
    this.persistInBackground();
    this.cancelPersist();
  }

  build(definition: VectorIndexDefinition, record: IndexedRecord): number {
    return this.queue(definition, record) ? 1 : 0;
  }

  finish(_definition: VectorIndexDefinition): undefined {
    return undefined; // a build's problems (a value, a dimension) were thrown by `build`
  }

  remove(definition: VectorIndexDefinition): void {
    this.meta.removeSync(metaKey(definition));
    clearChanges(this.meta, indexKey(definition));
    this.touch(definition);
    this.pendingChanges.set(indexKey(definition), undefined); // a drop is not listed: a reader rebuilds across it
    this.pendingDimensions.set(indexKey(definition), definition.dimension);
    this.queued.push({ op: "remove", definition });
  }

  dimensionOf(definition: VectorIndexDefinition): number | undefined {
    return definition.dimension ?? this.indexes.get(indexKey(definition))?.dimension;
  }

  /**
   * The k nearest records to `query`, nearest first, in the tenant's partition; with `candidates`, exactly among
   * those (small sets are scanned exactly, large ones searched in the graph through a filter and completed exactly
   * when the graph walk found fewer than it should).
   *
   * With the reader's `transaction`, graphs that reflect an older change counter than that snapshot's are first
   * brought up to the committed records (`refresh`: another process, or a read-only handle's writer, committed): the
   * graphs are then at least as new as the snapshot, never older. Without it, the graphs answer as they are.
   */
  search(definition: VectorIndexDefinition, query: Float32Array, k: number, options: VectorSearchOptions): SearchHit[] {
    const index = this.current(definition, options.transaction);
    if (definition.tenant !== undefined && options.tenant === undefined) {
      throw new SilkError("tenant_required", `the vector index ${definition.name} is partitioned by ${definition.tenant}: pass a tenant value`);
    }
    if (!Number.isSafeInteger(k) || k < 0) throw new SilkError("invalid_value", `k is ${k}; pass a whole number of results, 0 or more`);
    for (let i = 0; i < query.length; i++) {
      if (!Number.isFinite(query[i])) throw new SilkError("invalid_value", `query vector component ${i} is ${query[i]}, not a finite number`);
    }
    if (index.dimension !== undefined && query.length !== index.dimension) {
      throw new SilkError("vector_dimension_mismatch", `the query vector has length ${query.length}; the vector index ${definition.name} has dimension ${index.dimension}`);
    }
    const graph = index.graphs.get(definition.tenant === undefined ? "" : options.tenant!);
    if (graph === undefined || graph.size === 0 || k === 0) return [];
    const ef = options.ef ?? definition.ef ?? EF_SEARCH_MIN;
    if (options.candidates !== undefined) return this.restricted(definition, graph, query, k, ef, options.candidates, options.transaction);
    return this.hits(graph, graph.nearest(query, Math.min(k, graph.size), Math.max(k, ef), undefined, options.components));
  }

  /**
   * The index's graphs, brought up to the snapshot's change counter. Counters only grow (a drop increments too), so
   * graphs tagged at or above the snapshot's need nothing: the writer's own commits keep its tags in step. An index
   * never loaded here (it became active after this handle opened) is loaded when a snapshot is given, since the
   * catalog searches only indexes active in that snapshot.
   */
  private current(definition: VectorIndexDefinition, transaction: Transaction | undefined): IndexState {
    const key = indexKey(definition);
    let index = this.indexes.get(key);
    if (index === undefined) {
      if (transaction === undefined) throw new SilkError("index_not_ready", `the vector index ${definition.name} is not loaded in this partition`);
      index = newState(definition, definition.dimension);
      this.indexes.set(key, index);
    }
    const wanted = transaction === undefined ? undefined : ((this.meta.get(versionKey(definition), { transaction }) as number | undefined) ?? 0);
    if (index.version === UNBUILT ? transaction !== undefined : wanted !== undefined && wanted > index.version) this.refresh(index);
    return index;
  }

  private restricted(
    definition: VectorIndexDefinition,
    graph: PartitionGraph,
    query: Float32Array,
    k: number,
    efSearch: number,
    candidates: readonly bigint[],
    transaction: Transaction | undefined,
  ): SearchHit[] {
    // Membership by label in a byte array: the filter hnswlib calls per visited node is one typed-array read.
    const marks = new Uint8Array(graph.labelBound);
    const members: number[] = [];
    for (const id of candidates) {
      const label = graph.labelOf.get(id);
      if (label !== undefined && marks[label] === 0) {
        marks[label] = 1;
        members.push(label);
      }
    }
    const wanted = Math.min(k, members.length);
    if (wanted === 0) return [];
    if (members.length > EXACT_CANDIDATES_MAX && members.length > graph.size * EXACT_CANDIDATES_FRACTION) {
      // The walk passes through non-members but only members enter the beam; fewer members need a wider beam.
      const ef = Math.min(EF_FILTERED_MAX, Math.max(k, Math.ceil((efSearch * graph.size) / members.length)));
      const found = graph.nearest(query, wanted, ef, (label) => marks[label] === 1);
      const hits = this.hits(graph, found.filter((neighbour) => marks[neighbour.label] === 1));
      if (hits.length === wanted) return hits;
    }
    return nearestMembers(definition.metric, graph, query, members, wanted, this.vectorReader(definition, graph, query.length, transaction));
  }

  /**
   * Where an exact scan finds a member's vector: the graph's own Float32Array when it keeps one (our HNSW), else the
   * record in the reader's snapshot (hnswlib's graphs; IndexRecordSource.vectorInto), read into one scratch array
   * that each call overwrites. A member the snapshot holds no vector of is left out of the scan.
   */
  private vectorReader(definition: VectorIndexDefinition, graph: PartitionGraph, dimension: number, transaction: Transaction | undefined): (label: number) => Float32Array | undefined {
    const scratch = new Float32Array(dimension);
    return (label) => {
      const held = graph.heldVector(label);
      if (held !== undefined) return held;
      const id = graph.idOf[label];
      return id !== undefined && this.source.vectorInto(definition.kind, id, definition.field, scratch, transaction) ? scratch : undefined;
    };
  }

  private hits(graph: PartitionGraph, found: readonly Neighbour[]): SearchHit[] {
    const hits: SearchHit[] = [];
    for (const { label, distance } of found) {
      const id = graph.idOf[label];
      if (id !== undefined) hits.push({ id, score: distance });
    }
    return hits.sort(byDistanceThenId);
  }

  /** Validates a record and queues what it means for the index; whether it holds a vector the index covers. */
  private queue(definition: VectorIndexDefinition, record: IndexedRecord): boolean {
    this.touch(definition);
    this.changed(definition, record.id);
    const key = indexKey(definition);
    const dimension = this.pendingDimensions.has(key) ? this.pendingDimensions.get(key) : this.committedDimension(definition);
    const entry = this.entryOf(definition, record, dimension);
    if (entry === undefined) {
      this.queued.push({ op: "delete", definition, id: record.id });
      return false;
    }
    if (dimension === undefined) {
      this.meta.putSync(metaKey(definition), entry.vector.length);
      this.pendingDimensions.set(key, entry.vector.length);
      this.queued.push({ op: "dimension", definition, dimension: entry.vector.length });
    }
    this.queued.push({ op: "put", definition, id: record.id, ...entry });
    return true;
  }

  private committedDimension(definition: VectorIndexDefinition): number | undefined {
    const index = this.indexes.get(indexKey(definition));
    if (index !== undefined) return index.dimension;
    return definition.dimension ?? (this.meta.get(metaKey(definition)) as number | undefined);
  }

  /** A record's vector and tenant partition, checked against the dimension; undefined when the index leaves it out. */
  private entryOf(definition: VectorIndexDefinition, record: IndexedRecord, dimension: number | undefined): { partition: string; vector: Float32Array } | undefined {
    const entry = indexedEntry(definition, record);
    if (entry === undefined) return undefined;
    const { vector } = entry;
    if (vector.length === 0 || (dimension !== undefined && vector.length !== dimension)) {
      throw dimensionMismatch(definition, record.id, vector.length, dimension);
    }
    return entry;
  }

  private stateOf(definition: VectorIndexDefinition): IndexState {
    const key = indexKey(definition);
    let index = this.indexes.get(key);
    if (index === undefined) {
      index = newState(definition, definition.dimension);
      this.indexes.set(key, index);
    }
    return index;
  }

  /** Applies one queued operation to the in-memory graphs (commit and load only). */
  private apply(index: IndexState, operation: Queued): void {
    switch (operation.op) {
      case "dimension":
        index.dimension = operation.dimension;
        return;
      case "remove":
        index.graphs.clear();
        index.partitionOf.clear();
        index.dimension = index.definition.dimension;
        return;
      case "delete":
        this.unlink(index, operation.id);
        return;
      case "put": {
        if (index.partitionOf.get(operation.id) !== operation.partition) this.unlink(index, operation.id);
        let graph = index.graphs.get(operation.partition);
        if (graph === undefined) {
          graph = newGraph(index.definition.metric, operation.vector.length);
          index.graphs.set(operation.partition, graph);
        }
        graph.add(operation.id, operation.vector);
        index.partitionOf.set(operation.id, operation.partition);
        return;
      }
      default:
        unreachable(operation, "vector operation");
    }
  }

  /** Takes a record out of whichever partition holds it; an emptied partition is dropped (its tenant is unknown again). */
  private unlink(index: IndexState, id: bigint): void {
    const partition = index.partitionOf.get(id);
    if (partition === undefined) return;
    const graph = index.graphs.get(partition)!;
    graph.remove(id);
    index.partitionOf.delete(id);
    if (graph.size === 0) index.graphs.delete(partition);
  }
}
