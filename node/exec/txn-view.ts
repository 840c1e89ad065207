/**
 * The view one invocation reads and writes through: committed data from its base reader (one partition's snapshot,
 * or a scatter/gather over several partitions), overlaid with the invocation's own uncommitted changes, so later
 * steps and entries see earlier writes. At the end the overlay is reduced to primitive mutations grouped by owning
 * record, which the caller commits in one transaction (one partition) or by two-phase commit (several).
 *
 * Large batched reads of the base go BASE_READ_CHUNK_IDS IDs at a time, with the invocation's deadline checked
 * between chunks: an expansion of a million owners meets its deadline within a chunk and lets other requests run
 * (deadline.ts, pacing). A read of one chunk or less goes to the base as it is and pays nothing for it.
 *
 * Architecture invariant: the view never writes to storage. Abandoning a view is a rollback.
 */
import { Deadline } from "./deadline.js";
import { tooManyElements } from "./streams.js";
import type {
  AdjacencyEntry,
  Direction,
  EdgeRecord,
  EndpointKind,
  IndexRange,
  Mutation,
  RecordKind,
  SearchHit,
  StoredRecord,
  TextSearchRequest,
  VectorSearchRequest,
} from "../../protocol/records.js";
import { RESULT_ELEMENTS_MAX } from "../../protocol/limits.js";
import type { Step } from "../../protocol/tree.js";
import { ready, wait, type Maybe, type Op } from "./ops.js";

type MaybePromise<T> = T | Promise<T>;

/**
 * IDs one read of the base takes at a time when a step reads more: one deadline check and possible pause per chunk.
 * Small enough that a chunk of a dense graph's adjacency (owners of a hundred edges each) stays within a few
 * milliseconds; large enough that the chunking costs under a percent of the reads.
 */
export const BASE_READ_CHUNK_IDS = 256;

/** Committed data as of the invocation's start. Batched, so a remote implementation costs one round trip a step. */
export interface BaseReader {
  records(kind: RecordKind, ids: readonly bigint[]): MaybePromise<(StoredRecord | undefined)[]>;
  /** Whether each ID names a record of this kind (cheaper than `records`: nothing is decoded). */
  exists(kind: RecordKind, ids: readonly bigint[]): MaybePromise<boolean[]>;
  adjacency(owners: readonly bigint[], direction: Direction, label?: string): MaybePromise<AdjacencyEntry[][]>;
  /** The records at the other ends of the owners' edges, flattened: `adjacency` without edge IDs and labels. */
  neighbours(owners: readonly bigint[], direction: Direction, label?: string): MaybePromise<Neighbour[]>;
  idsOfLabel(kind: RecordKind, label: string): MaybePromise<bigint[]>;
  allIds(kind: RecordKind): MaybePromise<bigint[]>;
  /**
   * The IDs `idsOfLabel` (with a label) or `allIds` (without) answers, in the same order, as they are read, so that
   * the caller may pause between them; undefined where the reader cannot be paused (a snapshot that must not await,
   * the partitions of a cluster), and then the caller takes the whole list.
   */
  scanIds?(kind: RecordKind, label?: string): Iterable<bigint> | undefined;
  /**
   * How many records of a kind (and node or vector label, when given) the store holds, counted from its keys without
   * reading them; undefined where it cannot (an edge label, which has no label index). Absent on a reader that would
   * only count the IDs it read.
   */
  countIds?(kind: RecordKind, label?: string): MaybePromise<number | undefined>;
  /**
   * How many elements a partition-local step (node/exec/pushdown.ts `localStep`) yields, counted where the records
   * live: a cluster's partitions each count their own and send back a number, not their IDs. Absent where the
   * records are local (the caller counts the stream itself).
   */
  countWhereStored?(step: Step, parameters: Readonly<Record<string, unknown>>, deadline: Deadline): Promise<number>;
  /**
   * The first `count` IDs, in ID order, of the stream a partition-local step yields (records of `kind`), read where
   * the records live: each partition sends at most `count`; and the stream's whole length. Absent where the records
   * are local.
   */
  firstIdsWhereStored?(
    step: Step,
    kind: RecordKind,
    count: number,
    parameters: Readonly<Record<string, unknown>>,
    deadline: Deadline,
  ): Promise<{ ids: bigint[]; total: number }>;
  /**
   * Records of a label whose field lies in any of the ranges, ascending, through an active secondary index; undefined
   * when the field has no active index (on some partition), so the caller scans instead.
   */
  indexIds(kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): MaybePromise<bigint[] | undefined>;
  /**
   * The k best hits of an active vector index, ascending by distance (merged over partitions). `index_not_found`
   * when the label has no such index, `index_not_ready` while it is not active, `tenant_required` when a
   * tenant-partitioned index is searched without a tenant, `vector_dimension_mismatch` for a query of another length.
   */
  vectorSearch(request: VectorSearchRequest): MaybePromise<SearchHit[]>;
  /** The k best hits of an active text index, descending by BM25 score (merged over partitions); errors as above. */
  textSearch(request: TextSearchRequest): MaybePromise<SearchHit[]>;
}

export interface Neighbour {
  readonly kind: EndpointKind;
  readonly id: bigint;
}

/** The other ends of adjacency lists, flattened in order. */
export function neighboursOf(lists: readonly AdjacencyEntry[][]): Neighbour[] {
  const result: Neighbour[] = [];
  for (const list of lists) for (const entry of list) result.push({ kind: entry.otherKind, id: entry.other });
  return result;
}

/** Hands out new IDs; `near` names the record whose partition should own the new one (an edge's source). */
export interface IdSource {
  allocate(kind: RecordKind, near?: bigint): MaybePromise<bigint>;
}

/**
 * A view's uncommitted changes. Views made by `over` share one (a write group's pending state, read through each
 * member's own base and deadline: node/actor/write-group.ts).
 */
export interface TxnOverlay {
  /** Records changed: the new record, or null once dropped. */
  readonly changed: Map<bigint, StoredRecord | null>;
  /** Everything else a write needs, made on the first write: most invocations only read. */
  writes: WriteState | undefined;
}

interface WriteState {
  /** The committed form of every changed record that existed before this invocation. */
  readonly original: Map<bigint, StoredRecord>;
  readonly created: Set<bigint>;
  readonly createdByLabel: Map<string, bigint[]>;
  readonly createdAdjacency: Record<Direction, Map<bigint, AdjacencyEntry[]>>;
}

/** The changes of a view that has written nothing: shared by every such view, never written (see `changes`). */
const NO_CHANGES: ReadonlyMap<bigint, StoredRecord | null> = new Map();

export class TxnView {
  /** Records this invocation changed: the new record, or null once dropped (NO_CHANGES until the first write). */
  private changed: ReadonlyMap<bigint, StoredRecord | null>;

  private get writeState(): WriteState | undefined {
    return this.overlay?.writes;
  }

  private get writes(): WriteState {
    return (this.shared().writes ??= {
      original: new Map(),
      created: new Set(),
      createdByLabel: new Map(),
      createdAdjacency: { out: new Map(), in: new Map() },
    });
  }

  /** The changes map a write goes into, made on the first write: most invocations only read, and make none. */
  private get changes(): Map<bigint, StoredRecord | null> {
    return this.shared().changed;
  }

  constructor(
    private readonly base: BaseReader,
    private readonly ids: IdSource,
    /** The invocation's deadline, checked (and its slice paced) between the chunks of a large read. */
    private readonly deadline: Deadline = Deadline.none(),
    /** Made on the first write, or given by the view this one was made `over`. */
    private overlay?: TxnOverlay,
  ) {
    this.changed = overlay === undefined ? NO_CHANGES : overlay.changed;
  }

  /** This view's overlay, made now if it has none (a view made `over` this one must share it). */
  private shared(): TxnOverlay {
    if (this.overlay === undefined) {
      this.overlay = { changed: new Map(), writes: undefined };
      this.changed = this.overlay.changed;
    }
    return this.overlay;
  }

  /**
   * A view of this one's changes over another base, paced by another deadline: changes through either are changes
   * of both. A write group reads its pending state through each member's snapshot reader and deadline this way.
   */
  over(base: BaseReader, deadline: Deadline): TxnView {
    return new TxnView(base, this.ids, deadline, this.shared());
  }

  /**
   * Takes the changes of `upper`, a view whose base reads through this one (a write group's member), as if they had
   * been made here: its creates as creates, its updates and drops of records it found here (committed, or changed
   * by an earlier member) as updates and drops. A record `upper` created and dropped leaves nothing.
   */
  absorb(upper: TxnView): void {
    const state = upper.writeState;
    if (state === undefined) return;
    for (const [id, record] of upper.changed) {
      if (state.created.has(id)) {
        if (record !== null) this.create(record);
        continue;
      }
      const before = state.original.get(id)!;
      if (record === null) this.drop(before);
      else this.replace(before, record);
    }
  }

  /**
   * `read` over `ids` in chunks of BASE_READ_CHUNK_IDS, results concatenated in order; past `resultsMax` results it
   * stops with limit_exceeded, before reading the rest. Every chunk reads the same state across a pause: the base is
   * a held snapshot, or the coordinator's reader under its lock.
   */
  private chunked<T>(ids: readonly bigint[], read: (chunk: readonly bigint[]) => Maybe<T[]>, resultsMax = Infinity): Maybe<T[]> {
    return ids.length <= BASE_READ_CHUNK_IDS ? read(ids) : this.inChunks(ids, read, resultsMax);
  }

  private *inChunks<T>(ids: readonly bigint[], read: (chunk: readonly bigint[]) => Maybe<T[]>, resultsMax: number): Op<T[]> {
    const results: T[] = [];
    for (let start = 0; start < ids.length; start += BASE_READ_CHUNK_IDS) {
      if (start > 0 && this.deadline.checkSlice()) yield this.deadline.pause();
      const part = read(ids.slice(start, start + BASE_READ_CHUNK_IDS));
      for (const result of ready(part) ? part : yield* wait(part)) results.push(result);
      if (results.length > resultsMax) throw tooManyElements();
    }
    return results;
  }

  get hasWrites(): boolean {
    return this.changed.size > 0;
  }

  /** The base's count of a kind or label (BaseReader `countIds`); undefined once this view wrote (its writes are in no store). */
  countIds(kind: RecordKind, label?: string): Maybe<number | undefined> {
    if (this.hasWrites || this.base.countIds === undefined) return undefined;
    return this.base.countIds(kind, label);
  }

  /** The base's count of a partition-local step (BaseReader `countWhereStored`); undefined where it has none, or once this view wrote. */
  countWhereStored(step: Step, parameters: Readonly<Record<string, unknown>>): Maybe<number | undefined> {
    if (this.hasWrites || this.base.countWhereStored === undefined) return undefined;
    return this.base.countWhereStored(step, parameters, this.deadline);
  }

  /**
   * The first `count` IDs of a kind (or node or vector label), in ID order, from the base's scan without reading the
   * rest; undefined once this view wrote, or where the base cannot scan or count (then the caller takes the whole
   * list). Past RESULT_ELEMENTS_MAX records, limit_exceeded, as the whole list would be.
   */
  *firstIds(kind: RecordKind, label: string | undefined, count: number): Op<bigint[] | undefined> {
    if (this.hasWrites) return undefined;
    const scan = this.base.scanIds?.(kind, label);
    const total = scan === undefined ? undefined : yield* wait(this.base.countIds?.(kind, label));
    if (scan === undefined || total === undefined) return undefined;
    if (total > RESULT_ELEMENTS_MAX) throw tooManyElements();
    return yield* this.paced(scan, count);
  }

  /** Whether `firstIdsWhereStored` can answer: the base reads from partitions and this view wrote nothing. */
  get pagesWhereStored(): boolean {
    return !this.hasWrites && this.base.firstIdsWhereStored !== undefined;
  }

  /** The base's first IDs of a partition-local step (BaseReader `firstIdsWhereStored`); undefined unless `pagesWhereStored`. */
  firstIdsWhereStored(
    step: Step,
    kind: RecordKind,
    count: number,
    parameters: Readonly<Record<string, unknown>>,
  ): Maybe<{ ids: bigint[]; total: number } | undefined> {
    if (this.hasWrites || this.base.firstIdsWhereStored === undefined) return undefined;
    return this.base.firstIdsWhereStored(step, kind, count, parameters, this.deadline);
  }

  records(kind: RecordKind, ids: readonly bigint[]): Maybe<(StoredRecord | undefined)[]> {
    if (this.changed.size === 0) return ids.length <= BASE_READ_CHUNK_IDS ? this.base.records(kind, ids) : this.inChunks(ids, (chunk) => this.base.records(kind, chunk), Infinity);
    return this.recordsOverlaid(kind, ids);
  }

  private *recordsOverlaid(kind: RecordKind, ids: readonly bigint[]): Op<(StoredRecord | undefined)[]> {
    const result: (StoredRecord | undefined)[] = new Array(ids.length);
    const missing: number[] = [];
    ids.forEach((id, i) => {
      const local = this.changed.get(id);
      if (local === undefined) missing.push(i);
      else result[i] = local !== null && local.kind === kind ? local : undefined;
    });
    if (missing.length > 0) {
      const fetched = yield* wait(this.chunked(missing.map((i) => ids[i]), (chunk) => this.base.records(kind, chunk)));
      missing.forEach((index, j) => (result[index] = fetched[j]));
    }
    return result;
  }

  exists(kind: RecordKind, ids: readonly bigint[]): Maybe<boolean[]> {
    if (this.changed.size === 0) return ids.length <= BASE_READ_CHUNK_IDS ? this.base.exists(kind, ids) : this.inChunks(ids, (chunk) => this.base.exists(kind, chunk), Infinity);
    return this.existsOverlaid(kind, ids);
  }

  private *existsOverlaid(kind: RecordKind, ids: readonly bigint[]): Op<boolean[]> {
    return (yield* this.recordsOverlaid(kind, ids)).map((record) => record !== undefined);
  }

  adjacency(owners: readonly bigint[], direction: Direction, label?: string): Maybe<AdjacencyEntry[][]> {
    if (this.changed.size === 0) {
      return owners.length <= BASE_READ_CHUNK_IDS ? this.base.adjacency(owners, direction, label) : this.inChunks(owners, (chunk) => this.base.adjacency(chunk, direction, label), Infinity);
    }
    return this.chunked(owners, (chunk) => this.adjacencyOfChunk(chunk, direction, label));
  }

  private *adjacencyOfChunk(owners: readonly bigint[], direction: Direction, label: string | undefined): Op<AdjacencyEntry[][]> {
    const committed = yield* wait(this.base.adjacency(owners, direction, label));
    if (this.changed.size === 0) return committed;
    const createdHere = this.writes.createdAdjacency[direction];
    return owners.map((owner, i) => {
      const live = committed[i].filter((entry) => this.changed.get(entry.edge) !== null);
      for (const entry of createdHere.get(owner) ?? []) {
        if ((label === undefined || entry.label === label) && this.changed.get(entry.edge) !== null) live.push(entry);
      }
      return live;
    });
  }

  /**
   * Neighbours through committed data alone while nothing changed (the fast path of Out and In). The caller makes
   * them a stream, so past RESULT_ELEMENTS_MAX of them the read stops with the stream's limit_exceeded: a repeat
   * over a dense graph is refused after a million neighbours, not after building twenty million.
   */
  neighbours(owners: readonly bigint[], direction: Direction, label?: string): Maybe<Neighbour[]> {
    if (this.changed.size > 0) return this.chunked(owners, (chunk) => this.neighboursOverlaid(chunk, direction, label), RESULT_ELEMENTS_MAX);
    if (owners.length <= BASE_READ_CHUNK_IDS) return this.base.neighbours(owners, direction, label);
    return this.inChunks(owners, (chunk) => this.base.neighbours(chunk, direction, label), RESULT_ELEMENTS_MAX);
  }

  private *neighboursOverlaid(owners: readonly bigint[], direction: Direction, label: string | undefined): Op<Neighbour[]> {
    return neighboursOf(yield* this.adjacencyOfChunk(owners, direction, label));
  }

  /**
   * The committed index's k nearest, merged with this invocation's own writes of the label: what it changed leaves
   * the committed ranking, and the current forms are ranked exactly (index-catalog.ts), so a search sees the
   * invocation's inserts, updates and drops.
   */
  vectorSearch(request: VectorSearchRequest): Maybe<SearchHit[]> {
    if (this.changed.size === 0) return this.base.vectorSearch(request);
    // A view stacked on this one (a later member of a write group) sent its own changes: they are newer than these.
    const above = request.overlay;
    const changed: bigint[] = above === undefined ? [] : [...above.changed];
    const records: { id: bigint; props: StoredRecord["props"]; vector?: Float64Array }[] = above === undefined ? [] : [...above.records];
    const changedAbove = new Set(changed);
    for (const [id, record] of this.changed) {
      if (changedAbove.has(id)) continue;
      const before = this.writes.original.get(id);
      const ofLabel = (candidate: StoredRecord | null | undefined): boolean => candidate != null && candidate.kind === request.kind && candidate.label === request.label;
      if (!ofLabel(record) && !ofLabel(before)) continue;
      changed.push(id);
      if (record !== null && ofLabel(record)) records.push(record.kind === "vector" ? { id, props: record.props, vector: record.vector } : { id, props: record.props });
    }
    return this.base.vectorSearch(changed.length === 0 ? request : { ...request, overlay: { changed, records } });
  }

  /**
   * The committed text index's k best. Text search does not see the invocation's own uncommitted writes (records it
   * dropped are left out when the hits load); docs/INDEXES.md says so.
   */
  textSearch(request: TextSearchRequest): MaybePromise<SearchHit[]> {
    return this.base.textSearch(request);
  }

  *idsOfLabel(kind: RecordKind, label: string): Op<bigint[]> {
    const scan = this.base.scanIds?.(kind, label);
    const base = scan === undefined ? yield* wait(this.base.idsOfLabel(kind, label)) : yield* this.paced(scan);
    return this.mergeCreated(base, this.writeState?.createdByLabel.get(`${kind}:${label}`) ?? []);
  }

  *allIds(kind: RecordKind): Op<bigint[]> {
    const created: bigint[] = [];
    for (const id of this.writeState?.created ?? []) {
      const record = this.changed.get(id);
      if (record && record.kind === kind) created.push(id);
    }
    const scan = this.base.scanIds?.(kind);
    return this.mergeCreated(scan === undefined ? yield* wait(this.base.allIds(kind)) : yield* this.paced(scan), created);
  }

  /**
   * A scan's IDs (its first `count`), letting other requests run whenever the invocation's slice is spent (the
   * deadline reads its clock once every DEADLINE_CHECK_INTERVAL_ELEMENTS keys): a label or the whole store of a large
   * partition is otherwise one uninterrupted read on the event loop.
   */
  private *paced(scan: Iterable<bigint>, count = Infinity): Op<bigint[]> {
    const ids: bigint[] = [];
    for (const id of scan) {
      if (ids.length >= count) break;
      ids.push(id);
      if (this.deadline.tick()) yield this.deadline.pause();
    }
    return ids;
  }

  /**
   * Index candidates as a label scan would order them: committed records (the index's hits, plus the committed
   * records this invocation updated, whose committed entries may be stale) in ID order, then the records it created
   * in creation order; dropped records left out. The caller evaluates the whole predicate on each.
   */
  *indexIds(kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): Op<bigint[] | undefined> {
    const committed = yield* wait(this.base.indexIds(kind, label, field, ranges));
    if (committed === undefined || this.changed.size === 0) return committed;
    const live = committed.filter((id) => this.changed.get(id) !== null);
    const seen = new Set(live);
    let updated = false;
    for (const [id, record] of this.writes.original) {
      if (record.kind === kind && record.label === label && this.changed.get(id) != null && !seen.has(id)) {
        live.push(id);
        updated = true;
      }
    }
    if (updated) live.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const id of this.writes.createdByLabel.get(`${kind}:${label}`) ?? []) if (this.changed.get(id) != null) live.push(id);
    return live;
  }

  /** The committed index alone, without this invocation's writes (the UNIQUE check asks who else holds a value). */
  committedIndexIds(kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): MaybePromise<bigint[] | undefined> {
    return this.base.indexIds(kind, label, field, ranges);
  }

  /** Whether this invocation created, updated or dropped the record. */
  isChanged(id: bigint): boolean {
    return this.changed.has(id);
  }

  /** The records this invocation created or updated, in their new form. */
  *writtenRecords(): Iterable<StoredRecord> {
    for (const record of this.changed.values()) if (record !== null) yield record;
  }

  /** The edges this invocation created and did not drop, in creation order, in their current form. */
  *createdEdges(): Iterable<EdgeRecord> {
    for (const id of this.writeState?.created ?? []) {
      const record = this.changed.get(id);
      if (record != null && record.kind === "edge") yield record;
    }
  }

  private mergeCreated(committed: bigint[], created: readonly bigint[]): bigint[] {
    if (this.changed.size === 0) return committed;
    const live = committed.filter((id) => this.changed.get(id) !== null);
    for (const id of created) if (this.changed.get(id) != null) live.push(id);
    return live;
  }

  allocate(kind: RecordKind, near?: bigint): Maybe<bigint> {
    return this.ids.allocate(kind, near);
  }

  /** Adds a freshly built record (its ID from `allocate`). */
  create(record: StoredRecord): void {
    this.changes.set(record.id, record);
    this.writes.created.add(record.id);
    const key = `${record.kind}:${record.label}`;
    const list = this.writes.createdByLabel.get(key);
    if (list) list.push(record.id);
    else this.writes.createdByLabel.set(key, [record.id]);
    if (record.kind === "edge") {
      this.addCreatedAdjacency("out", record.from, { edge: record.id, label: record.label, other: record.to, otherKind: record.toKind });
      this.addCreatedAdjacency("in", record.to, { edge: record.id, label: record.label, other: record.from, otherKind: record.fromKind });
    }
  }

  /** Replaces a record's properties (the caller merged them); the label and endpoints never change. */
  replace(before: StoredRecord, after: StoredRecord): void {
    this.remember(before);
    this.changes.set(after.id, after);
  }

  /** Drops one record. Dropping a node or vector does not cascade here: the executor drops its edges first. */
  drop(record: StoredRecord): void {
    this.remember(record);
    this.changes.set(record.id, null);
  }

  /** Keeps the committed form of a record the first time this invocation changes it. */
  private remember(record: StoredRecord): void {
    if (!this.changed.has(record.id)) this.writes.original.set(record.id, record);
  }

  private addCreatedAdjacency(direction: Direction, owner: bigint, entry: AdjacencyEntry): void {
    const list = this.writes.createdAdjacency[direction].get(owner);
    if (list) list.push(entry);
    else this.writes.createdAdjacency[direction].set(owner, [entry]);
  }

  /** The invocation's writes as primitive mutations, in an order a partition can apply one by one. */
  mutations(): Mutation[] {
    const mutations: Mutation[] = [];
    for (const [id, record] of this.changed) {
      const committed = this.writes.original.get(id);
      if (record === null) {
        if (committed === undefined) continue; // created and dropped within this invocation
        mutations.push({ op: "delete_record", record: committed });
        if (committed.kind === "edge") mutations.push(deleteIn(committed));
        continue;
      }
      mutations.push({ op: "put_record", record });
      if (record.kind === "edge" && this.writes.created.has(id)) mutations.push(putIn(record));
    }
    return mutations;
  }
}

function putIn(edge: EdgeRecord): Mutation {
  const sourceKind: EndpointKind = edge.fromKind;
  return { op: "put_in", target: edge.to, label: edge.label, edge: edge.id, source: edge.from, sourceKind };
}

function deleteIn(edge: EdgeRecord): Mutation {
  return { op: "delete_in", target: edge.to, label: edge.label, edge: edge.id };
}
