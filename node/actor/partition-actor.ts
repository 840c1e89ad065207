/**
 * A partition actor: owns one PartitionStore and answers PartitionRequests. It is the only code that touches its
 * partition's LMDB environment. Write invocations run one at a time (a partition has a single LMDB writer and
 * an invocation's reads and writes must not interleave with another's); reads run on their own snapshots. A
 * writer's actor also builds the store's constructing indexes in the background, one chunk at a time in
 * the same queue as writes, so builds and writes interleave and never overlap.
 *
 * On a single server (no replicated log) the write invocations waiting in the queue commit in groups
 * (node/actor/write-group.ts): one after another, each against the state of those before it, then one LMDB transaction
 * and one fsync for the group, each answered once it is durable.
 *
 * Every plan runs on the one executor (node/exec/executor.ts `planRun`), synchronously as far as nothing must wait
 * (node/exec/ops.ts `drive`): a read or write whose steps only read LMDB never leaves the synchronous run. Long
 * invocations pause to let the event loop run (deadline.ts): a read on its held snapshot, a write inside the write
 * queue, so no other write interleaves with it; that pause is where such a run goes on asynchronously. A prepared
 * read the in-process transport asks for at once (`readPreparedNow`) runs on lmdb-js's shared read transaction,
 * which cannot outlive one synchronous run: one that must wait is given up there and runs again on a held snapshot.
 * A request waiting in the write queue answers query_timeout at its deadline.
 */
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Embedder } from "../../protocol/embedding.js";
import { SilkError, asSilkError, unreachable } from "../../protocol/errors.js";
import { PREPARED_PLANS_MAX } from "../../protocol/limits.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { IndexStatus, RuntimeIndexLookup } from "../../protocol/indexes.js";
import type { PartitionReply, PartitionReplyBody, PartitionRequest, QueryResult } from "../../protocol/messages.js";
import type {
  AdjacencyEntry,
  Direction,
  IdRange,
  IndexRange,
  RecordKind,
  SearchHit,
  StoredRecord,
  TextSearchRequest,
  VectorSearchRequest,
} from "../../protocol/records.js";
import type { Schema } from "../../protocol/schema.js";
import type { Entry, Plan } from "../../protocol/tree.js";
import { Deadline, monotonicClockMs, type ClockMs } from "../exec/deadline.js";
import { planRun } from "../exec/executor.js";
import { drive, NOT_NOW, runNow, type Maybe } from "../exec/ops.js";
import { applyLogEntry, type LogEntry } from "../store/log-entry.js";
import type { PartitionStore, Snapshot } from "../store/partition-store.js";
import { indexKey } from "../indexes/index-keys.js";
import { TxnView, type BaseReader, type IdSource, type Neighbour } from "../exec/txn-view.js";
import { readsVectorData } from "./vector-reads.js";
import { DEFAULT_WRITE_GROUP_BOUNDS, GroupFlushNeeded, GroupLayer, type WriteGroupBounds } from "./write-group.js";
import { ConcurrencyControl, writtenKeys } from "./concurrency.js";
import { isReadRequest, type ReadSet } from "../../protocol/messages.js";

/**
 * Reads of one partition through one snapshot. `vectorData` false reads vector records without their vectors, for a
 * plan that cannot look at them (vector-reads.ts).
 */
export class SnapshotReader implements BaseReader {
  constructor(
    private readonly snapshot: Snapshot,
    private readonly vectorData = true,
  ) {}

  records(kind: RecordKind, ids: readonly bigint[]): (StoredRecord | undefined)[] {
    if (kind === "vector" && !this.vectorData) return ids.map((id) => this.snapshot.vectorRecordProps(id));
    return ids.map((id) => this.snapshot.record(kind, id));
  }

  exists(kind: RecordKind, ids: readonly bigint[]): boolean[] {
    return ids.map((id) => this.snapshot.exists(kind, id));
  }

  adjacency(owners: readonly bigint[], direction: Direction, label?: string): AdjacencyEntry[][] {
    return owners.map((owner) => this.snapshot.adjacency(owner, direction, label));
  }

  neighbours(owners: readonly bigint[], direction: Direction, label?: string): Neighbour[] {
    const result: Neighbour[] = [];
    for (const owner of owners) this.snapshot.neighbours(owner, direction, label, result);
    return result;
  }

  idsOfLabel(kind: RecordKind, label: string): bigint[] {
    return this.snapshot.idsOfLabel(kind, label);
  }

  allIds(kind: RecordKind): bigint[] {
    return this.snapshot.allIds(kind);
  }

  countIds(kind: RecordKind, label?: string): number | undefined {
    return this.snapshot.countIds(kind, label);
  }

  scanIds(kind: RecordKind, label?: string): Iterable<bigint> | undefined {
    if (!this.snapshot.keptAcrossAwaits || (kind === "edge" && label !== undefined)) return undefined;
    return kind === "edge" ? this.snapshot.idKeys(kind, undefined) : this.snapshot.idKeys(kind, label);
  }

  indexIds(kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): bigint[] | undefined {
    return this.snapshot.indexIds(kind, label, field, ranges);
  }

  vectorSearch(request: VectorSearchRequest): SearchHit[] {
    return this.snapshot.vectorSearch(request);
  }

  textSearch(request: TextSearchRequest): SearchHit[] {
    return this.snapshot.textSearch(request);
  }

  exportRange(range: IdRange): Uint8Array {
    return this.snapshot.exportRange(range);
  }
}

/** Records an index build chunk looks at in one write transaction: long enough to be efficient, short enough that writes wait little. */
export const INDEX_BUILD_CHUNK_ENTITIES = 2_000;

export interface PartitionActorOptions {
  readonly store: PartitionStore;
  readonly schema: Schema | undefined;
  readonly writable: boolean;
  readonly now: () => Date;
  /** The clock deadlines are measured on (tests pass a fake one); default `performance.now`. */
  readonly clockMs?: ClockMs;
  /** Overrides INDEX_BUILD_CHUNK_ENTITIES (tests use small chunks so writes interleave with a build). */
  readonly indexBuildChunkEntities?: number;
  /** What `Embed(text)` calls; none: `embedding_not_configured`. */
  readonly embedder?: Embedder;
  /**
   * Cluster mode: the partition's replicated log. Every state change is validated, appended, and only then applied
   * (node/store/log-entry.ts); without a log (the single server) changes apply directly.
   */
  readonly log?: WriteLog;
  /** How large a single server's write groups may grow (default DEFAULT_WRITE_GROUP_BOUNDS); unused with a log. */
  readonly writeGroup?: Partial<WriteGroupBounds>;
  /**
   * Object storage (runtime/segment-shipper.ts): the database's one log in a bucket. Each change is validated, staged
   * into the log's next segment and applied with the sequence the log gives it; the runtime holds the write's
   * acknowledgement until the segment is stored, outside the write queue, so writes queued meanwhile share its PUT.
   */
  readonly shipping?: ShippingLog;
}

/** A write invocation waiting for, or running in, a write group. */
interface Invocation {
  readonly plan: Plan;
  readonly parameters: Plan["parameters"];
  readonly deadline: Deadline;
  /** Called when a group takes it: from then on its wait is no longer timed (see `serialized`). */
  readonly take: () => void;
  readonly resolve: (body: PartitionReplyBody) => void;
  readonly reject: (cause: unknown) => void;
  taken: boolean;
  /** It runs in a group of its own (a group's commit failed on a member's error; see `commitGroup`). */
  alone: boolean;
}

/** What a write group's member answers, and the view holding its changes. */
interface Outcome {
  readonly body: PartitionReplyBody;
  readonly view: TxnView;
}

/** A member that ran: its answer, given once the group is durable, and its mutation list (none if it wrote nothing). */
interface Ran {
  readonly invocation: Invocation;
  readonly body: PartitionReplyBody;
  readonly batch: Uint8Array | undefined;
}

/** The replicated log a leader appends to (cluster/nats/replica.ts implements it over JetStream). */
export interface WriteLog {
  /**
   * Durably appends the entry and returns its sequence, or "duplicate" when an entry of the same `requestId` is in the
   * log already (a retried request; this replica has applied it). Throws SilkError `not_leader` when this replica may
   * no longer write (another leader appended, or its lease is gone); then nothing of the entry is applied here.
   */
  append(entry: LogEntry, requestId?: string): Promise<number | "duplicate">;
}

/** A log whose entries are applied before they are durable (runtime/segment-shipper.ts); its owner awaits durability. */
export interface ShippingLog {
  /** Gives the entry its sequence and runs `apply(sequence)` before it returns; throws what `apply` throws. */
  stage(entry: LogEntry, apply: (sequence: number) => void): void;
}

/**
 * The most runs of a prepared read `readPreparedNow` leaves to the held snapshot after runs of it were given up in a
 * row: such a run wasted at most about a slice (EXECUTION_SLICE_MS), and the runs of a plan that always waits take
 * longer than that, so trying again once per this many runs costs it at most a tenth of a percent.
 */
export const SLOW_PLAN_SKIPS_MAX = 1_024;

/** IDs a replicated leader reserves through the log at a time (one log entry per block). */
export const ID_RESERVATION_BLOCK = 4_096;

export class PartitionActor {
  /** Settles when the last queued write has finished (never rejects). */
  private writeQueue: Promise<void> = Promise.resolve();
  private readonly plans = new Map<number, Plan>();
  /**
   * Prepared plans (by their entries, which a prepared plan's runs share) whose last runs on the shared read
   * transaction had to wait (a slice spent, an embedder's call), rather than start runs likely to be given up again:
   * `readPreparedNow` leaves the next `skip` runs to the held snapshot, twice as many after each run given up in a
   * row (at most SLOW_PLAN_SKIPS_MAX), and forgets the plan once a run answers at once. One run descheduled past
   * its slice on a busy machine costs a few runs, not the plan's every later run; a plan that always waits tries
   * again once every SLOW_PLAN_SKIPS_MAX runs.
   */
  private readonly slowPlans = new WeakMap<readonly Entry[], { skip: number; left: number }>();
  /**
   * The embedder a run on the shared read transaction sees: an Embed there must wait, so the run is given up at it and
   * runs again on a held snapshot; this one never calls the provider, so the provider is called once, by that rerun
   * (a provider call costs money and time, and the given-up call's answer would be thrown away).
   */
  private readonly deferredEmbedder: Embedder | undefined;
  /** IDs from the store's own range (a single server's, or a leader's within its reserved block), made once, not per run. */
  private readonly localIds: IdSource = { allocate: () => this.options.store.allocateId() };
  /** The indexes index operations created, as the planner asks for them; made once, not per run. */
  private readonly runtimeIndex: RuntimeIndexLookup = (kind, label, field) => this.options.store.runtimeIndex(kind, label, field);
  private building: Promise<void> | undefined;
  private stopped = false;
  /** Why the background build stopped early (a storage failure); reopening the database resumes it. */
  private buildFailure: string | undefined;
  /** Write invocations waiting for a group, in arrival order (single server). */
  private readonly waiting: Invocation[] = [];
  /** Whether a group is queued or running: it takes the waiting invocations, and queues the next group if any remain. */
  private groupQueued = false;
  private readonly groupBounds: WriteGroupBounds;
  /**
   * A replicated leader's versions and intent locks (concurrency.ts), for coordinators that validate (docs/ISOLATION.md,
   * "Several coordinators"); none without a log.
   */
  private readonly concurrency: ConcurrencyControl | undefined;

  constructor(private options: PartitionActorOptions) {
    this.concurrency =
      options.log === undefined ? undefined : new ConcurrencyControl(options.store.appliedLogSequence(), options.store.pendingIntentBatches());
    const embedder = options.embedder;
    this.deferredEmbedder = embedder === undefined ? undefined : { name: embedder.name, embed: () => new Promise<Float64Array[]>(() => undefined) };
    const bounds = options.writeGroup;
    this.groupBounds = {
      invocations: Math.max(1, bounds?.invocations ?? DEFAULT_WRITE_GROUP_BOUNDS.invocations),
      bytes: Math.max(1, bounds?.bytes ?? DEFAULT_WRITE_GROUP_BOUNDS.bytes),
    };
  }

  /**
   * Starts building the store's constructing indexes in the background (a writer's actor; idempotent). The loop ends
   * when none is left; an index operation that adds a build calls this again.
   */
  startIndexBuilds(): void {
    if (this.options.writable && !this.stopped && this.building === undefined) this.building = this.buildIndexes();
  }

  /**
   * A read-only actor's store replaced by another copy of the same partition (a bucket follower restored from a newer
   * snapshot, runtime/bucket-follower.ts): the caller runs it with no request in flight (the coordinator's exclusive
   * lock), so every later request reads the new store; registered plans stay. Answers the store replaced, for the
   * caller to close. A writable actor's store is never replaced: its writes and index builds run on it.
   */
  replaceStore(store: PartitionStore): PartitionStore {
    if (this.options.writable) throw new SilkError("internal", "a writable partition's store is never replaced");
    const replaced = this.options.store;
    this.options = { ...this.options, store };
    return replaced;
  }

  /** Stops the background build after its current chunk; the database closes only after this. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.building;
  }

  private async buildIndexes(): Promise<void> {
    const { store } = this.options;
    const chunk = this.options.indexBuildChunkEntities ?? INDEX_BUILD_CHUNK_ENTITIES;
    try {
      for (;;) {
        await yieldToEventLoop(); // lets waiting requests in between chunks
        const [key] = store.constructingIndexes();
        if (this.stopped || key === undefined) {
          // Cleared in the same synchronous turn as the check, so a build added after it starts a new loop.
          this.building = undefined;
          return;
        }
        await this.serialized(async () => (this.stopped ? undefined : this.change({ type: "index_build", key, chunkEntities: chunk })));
      }
    } catch (cause) {
      this.buildFailure = asSilkError(cause).message;
      this.building = undefined;
    }
  }

  /**
   * Answers one request. `requestId` (cluster mode) names the request across retries: the log de-duplicates a
   * retried write's entry by it, so a write that reached the log once is applied once.
   */
  async handle(request: PartitionRequest, requestId?: string): Promise<PartitionReply> {
    try {
      // Invocations, the hot path, skip dispatch's large frame.
      const body = request.type === "execute_prepared" ? await this.executePrepared(request, requestId) : await this.dispatch(request, requestId);
      return { ok: true, body };
    } catch (cause) {
      const error = asSilkError(cause);
      return { ok: false, code: error.code, message: error.message };
    }
  }

  private executePrepared(request: Extract<PartitionRequest, { type: "execute_prepared" }>, requestId: string | undefined): Promise<PartitionReplyBody> {
    const plan = this.plans.get(request.planId);
    if (plan === undefined) throw new SilkError("internal", `no prepared plan ${request.planId} (it was released)`);
    return this.executeAny(plan, request.parameters, request.timeoutMs, requestId);
  }

  /**
   * A prepared read answered synchronously (the in-process transport's `readNow`), on lmdb-js's shared read
   * transaction; undefined when the plan is not a read, or its run had to wait (it was given up; `execute_prepared`
   * runs it again on a held snapshot). Throws what `execute_prepared` would answer as an error.
   */
  readPreparedNow(request: Extract<PartitionRequest, { type: "execute_prepared" }>): QueryResult | undefined {
    const plan = this.plans.get(request.planId);
    if (plan === undefined || plan.requestType !== "read") return undefined;
    const slow = this.slowPlans.get(plan.entries);
    if (slow !== undefined && slow.left > 0) {
      slow.left -= 1;
      return undefined;
    }
    const deadline = Deadline.after(request.timeoutMs, this.options.clockMs ?? monotonicClockMs);
    const snapshot = this.options.store.synchronousSnapshot();
    try {
      const result = runNow(this.run(plan, snapshot, request.parameters, deadline, undefined, this.deferredEmbedder));
      if (result !== NOT_NOW) {
        if (slow !== undefined) this.slowPlans.delete(plan.entries);
        return result;
      }
      const skip = Math.min(SLOW_PLAN_SKIPS_MAX, slow === undefined ? 1 : slow.skip * 2);
      this.slowPlans.set(plan.entries, { skip, left: skip });
      return undefined;
    } finally {
      snapshot.close();
    }
  }

  /**
   * The executor's run of a plan on a snapshot (through the write group's pending changes, for a group's member),
   * writing into `view`'s overlay; not started (ops.ts drives it).
   */
  private run(
    plan: Plan,
    snapshot: Snapshot,
    parameters: Plan["parameters"],
    deadline: Deadline,
    view: TxnView | undefined,
    embedder: Embedder | undefined = this.options.embedder,
  ): Maybe<QueryResult> {
    const { schema, now } = this.options;
    const runView = view ?? new TxnView(new SnapshotReader(snapshot, readsVectorData(plan)), this.localIds, deadline);
    const writable = plan.requestType === "write" && this.options.writable;
    return planRun(plan, { view: runView, schema, now, writable, deadline, runtimeIndex: this.runtimeIndex, embedder }, parameters);
  }

  private requireWritable(): void {
    if (!this.options.writable) throw new SilkError("read_only", "this database was opened read-only");
  }

  private async dispatch(request: PartitionRequest, requestId: string | undefined): Promise<PartitionReplyBody> {
    const { store } = this.options;
    switch (request.type) {
      case "execute":
        return this.executeAny(request.plan, request.plan.parameters, request.plan.timeoutMs, requestId);
      case "register_plan":
        if (this.plans.size >= PREPARED_PLANS_MAX) throw new SilkError("limit_exceeded", `a partition keeps at most ${PREPARED_PLANS_MAX} prepared plans`);
        this.plans.set(request.planId, request.plan);
        return { type: "done" };
      case "execute_prepared":
        return this.executePrepared(request, requestId);
      case "release_plan":
        this.plans.delete(request.planId);
        return { type: "done" };
      case "read_records":
        return this.withSnapshot((reader) => ({ type: "records", records: reader.records(request.kind, request.ids) }));
      case "read_adjacency":
        return this.withSnapshot((reader) => ({ type: "adjacency", lists: reader.adjacency(request.owners, request.direction, request.label) }));
      case "read_label":
        return this.withSnapshot((reader) => ({ type: "ids", ids: reader.idsOfLabel(request.kind, request.label) }));
      case "read_all":
        return this.withSnapshot((reader) => ({ type: "ids", ids: reader.allIds(request.kind) }));
      case "read_index":
        return this.withSnapshot((reader) => ({ type: "index_ids", ids: reader.indexIds(request.kind, request.label, request.field, request.ranges) ?? null }));
      case "vector_search":
        return this.withSnapshot((reader) => ({ type: "hits", hits: reader.vectorSearch(request.request) }));
      case "text_search":
        return this.withSnapshot((reader) => ({ type: "hits", hits: reader.textSearch(request.request) }));
      case "owned_ranges":
        return { type: "ranges", ranges: store.ownedRanges() };
      case "export_range":
        return this.withSnapshot((reader) => ({ type: "batch", batch: reader.exportRange(request.range) }));
      case "add_ranges":
        this.requireWritable();
        return this.serialized(async () => (await this.change({ type: "add_ranges", ranges: request.ranges }), { type: "done" as const }));
      case "drop_range":
        this.requireWritable();
        return this.serialized(async () => (await this.change({ type: "drop_range", range: request.range }), { type: "done" as const }));
      case "allocate_ids":
        this.requireWritable();
        if (this.options.log === undefined) return { type: "id", id: store.allocateIds(request.count) };
        return this.serialized(async () => {
          await this.ensureIds(request.count);
          return { type: "id" as const, id: store.allocateIds(request.count) };
        });
      case "apply":
        this.requireWritable();
        return this.serialized(async () => (await this.applyValidated(request.batch, request.reads, requestId), { type: "done" as const }));
      case "prepare":
        this.requireWritable();
        return this.serialized(async () => (await this.prepareValidated(request.txid, request.batch, request.reads, requestId), { type: "done" as const }));
      case "versioned": {
        const concurrency = this.validating();
        if (!isReadRequest(request.request)) throw new SilkError("internal", `a versioned request must be a read, not ${request.request.type} (a protocol bug)`);
        // Taken before the read's snapshot, in the same synchronous turn: nothing is applied in between.
        const sequence = concurrency.sequence;
        return { type: "versioned", sequence, body: await this.dispatch(request.request, requestId) };
      }
      case "validate":
        this.validating().check(undefined, new Set(), request.reads);
        return { type: "done" };
      case "commit":
      case "abort":
        return this.serialized(async () => (await this.decide(request.type, request.txid), { type: "done" as const }));
      case "pending_intents":
        return { type: "intents", txids: store.pendingIntents() };
      case "index_statuses":
        return { type: "indexes", statuses: this.indexStatuses(), aborted: store.abortedIndexes() };
      case "index_create":
        this.requireWritable();
        await this.serialized(() => this.change({ type: "index_create", definition: request.definition }));
        this.startIndexBuilds();
        return { type: "done" };
      case "index_drop":
        this.requireWritable();
        return this.serialized(async () => {
          await this.change({ type: "index_drop", key: indexKey(request.kind, request.name), ...(request.aborted === undefined ? {} : { aborted: request.aborted }) });
          return { type: "done" as const };
        });
      case "index_entries":
        return { type: "index_entries", entries: store.indexValueEntries(indexKey(request.kind, request.name)) };
      case "index_validated":
        this.requireWritable();
        return this.serialized(async () => {
          await this.change({ type: "index_validated", key: indexKey(request.kind, request.name), ...(request.blocked === undefined ? {} : { blocked: request.blocked }) });
          return { type: "done" as const };
        });
      case "index_retry":
        this.requireWritable();
        await this.serialized(() => this.change({ type: "index_retry", key: indexKey(request.kind, request.name) }));
        this.startIndexBuilds();
        return { type: "done" };
      default:
        return unreachable(request, "request");
    }
  }

  /** The leader's concurrency control, or unsupported_operation where there is none (no replicated log). */
  private validating(): ConcurrencyControl {
    if (this.concurrency === undefined) throw new SilkError("unsupported_operation", "versioned reads and validation need a replicated partition's leader (several coordinators)");
    return this.concurrency;
  }

  /**
   * A single-partition commit, inside the write queue. With `reads` (a validating coordinator) the reads are
   * validated and the batch checked against prepared intents' locks first; a repeat of an apply this leader appended
   * is answered done.
   */
  private async applyValidated(batch: Uint8Array, reads: ReadSet | undefined, requestId: string | undefined): Promise<void> {
    const concurrency = this.concurrency;
    if (concurrency !== undefined && reads !== undefined) {
      if (requestId !== undefined && concurrency.applied(requestId)) return;
      concurrency.check(undefined, writtenKeys(batch), reads);
    }
    await this.change({ type: "apply", batch }, requestId);
    if (requestId !== undefined) concurrency?.rememberApplied(requestId);
  }

  /**
   * Phase one, inside the write queue: with `reads`, validated and checked against other intents' locks first; the
   * intent's locks are taken before its append and freed again if the append fails.
   */
  private async prepareValidated(txid: string, batch: Uint8Array, reads: ReadSet | undefined, requestId: string | undefined): Promise<void> {
    const concurrency = this.concurrency;
    if (concurrency === undefined) return this.change({ type: "prepare", txid, batch }, requestId);
    // A repeat of a prepare this leader validated already holds its locks.
    const repeat = concurrency.holds(txid);
    const writes = writtenKeys(batch);
    if (reads !== undefined && !repeat) concurrency.check(txid, writes, reads);
    if (!repeat) concurrency.lock(txid, writes, reads);
    try {
      await this.change({ type: "prepare", txid, batch }, requestId);
    } catch (cause) {
      if (!repeat) concurrency.release(txid);
      throw cause;
    }
  }

  /** Tells the concurrency control what an entry applied at `sequence` changed. */
  private applied(entry: LogEntry, sequence: number): void {
    const concurrency = this.concurrency;
    if (concurrency === undefined) return;
    switch (entry.type) {
      case "apply":
        return concurrency.changed(sequence, writtenKeys(entry.batch));
      case "commit":
        return concurrency.committed(sequence, entry.txid);
      case "abort":
        concurrency.release(entry.txid);
        return concurrency.changed(sequence, []);
      case "prepare":
      case "reserve_ids":
      case "index_build":
        return concurrency.changed(sequence, []);
      default:
        // Ranges moved, indexes created, dropped or validated: what reads of them answer may have changed.
        return concurrency.changedAll(sequence);
    }
  }

  /**
   * One state change, inside the write queue: applied directly on the single server; in a cluster validated,
   * appended to the replicated log, then applied with its sequence (so a failed validation logs nothing, and a
   * logged entry applies on every replica alike).
   */
  private async change(entry: LogEntry, requestId?: string): Promise<void> {
    const { store, log, shipping } = this.options;
    if (shipping !== undefined) {
      if (entry.type === "apply" || entry.type === "prepare") store.validate(entry.batch);
      return shipping.stage(entry, (sequence) => applyLogEntry(store, entry, sequence));
    }
    if (log === undefined) return applyLogEntry(store, entry);
    if (entry.type === "apply" || entry.type === "prepare") store.validate(entry.batch);
    const sequence = await log.append(entry, requestId);
    if (sequence !== "duplicate") {
      applyLogEntry(store, entry, sequence);
      this.applied(entry, sequence);
    }
  }

  /**
   * Applies a two-phase-commit outcome to the intent `txid` (in the write queue). An outcome applied already answers
   * done again (a retry), as does an abort of an intent never held (an abort after a failed prepare). A commit of an
   * intent this partition aborted or does not hold, or an abort of one it committed, is a lost or torn write: it is
   * refused, `intent_not_prepared`, and nothing is logged.
   */
  private async decide(outcome: "commit" | "abort", txid: string): Promise<void> {
    const state = this.options.store.intentState(txid);
    if (state === "prepared") return this.change({ type: outcome, txid });
    if (outcome === "commit" ? state === "committed" : state !== "committed") return;
    const held = state === "unknown" ? "does not hold its intent (never prepared here, or decided too long ago to be remembered)" : `${state} it`;
    throw new SilkError("intent_not_prepared", `internal error (a bug in Silk): transaction ${txid} was to ${outcome} on this partition, which ${held}`);
  }

  /** Cluster mode: makes sure `count` IDs can be handed out, reserving a block through the log when needed. */
  private async ensureIds(count: number): Promise<void> {
    const { store } = this.options;
    if (store.spareIds() >= count) return;
    const wanted = store.nextIdToAllocate() + BigInt(Math.max(count, ID_RESERVATION_BLOCK)) - 1n;
    await this.change({ type: "reserve_ids", upTo: wanted > store.idLast ? store.idLast : wanted });
  }

  /** The store's index statuses; a constructing index whose build stopped on a storage failure says why. */
  indexStatuses(): IndexStatus[] {
    const failure = this.buildFailure;
    return this.options.store.indexStatuses().map((status) => (status.state === "constructing" && failure !== undefined ? { ...status, message: failure } : status));
  }

  /**
   * The deadline starts when the request arrives, so time spent waiting behind earlier writes counts. A prepared
   * plan runs with the parameters and time left that came with its request.
   */
  private executeAny(plan: Plan, parameters: Plan["parameters"], timeoutMs: number | undefined, requestId: string | undefined): Promise<PartitionReplyBody> {
    const deadline = Deadline.after(timeoutMs, this.options.clockMs ?? monotonicClockMs);
    if (plan.requestType === "write") {
      this.requireWritable();
      // A bucket database's writes are staged one log entry each (change()); its shipper groups them into segments.
      if (this.options.log === undefined && this.options.shipping === undefined) return this.grouped(plan, parameters, deadline);
      return this.serialized(() => this.execute(plan, parameters, deadline, requestId), deadline);
    }
    return this.execute(plan, parameters, deadline, requestId);
  }

  /**
   * A single server's write invocation, run and committed in a write group. Like `serialized`, only the wait is
   * timed: an invocation still waiting at its deadline answers query_timeout and no group runs it.
   */
  private async grouped(plan: Plan, parameters: Plan["parameters"], deadline: Deadline): Promise<PartitionReplyBody> {
    let taken!: () => void;
    const started = new Promise<void>((resolve) => (taken = resolve));
    let invocation!: Invocation;
    const answered = new Promise<PartitionReplyBody>((resolve, reject) => {
      invocation = { plan, parameters, deadline, take: taken, resolve, reject, taken: false, alone: false };
    });
    this.waiting.push(invocation);
    this.queueGroup();
    try {
      await deadline.within(started);
    } catch (cause) {
      if (!invocation.taken) {
        // Answered query_timeout while it waited: no group takes it.
        this.waiting.splice(this.waiting.indexOf(invocation), 1);
        throw cause;
      }
    }
    return answered;
  }

  /** Queues a group behind the writes already queued, unless one is queued or running (it takes what waits). */
  private queueGroup(): void {
    if (this.groupQueued) return;
    this.groupQueued = true;
    void this.serialized(() => this.runGroup());
  }

  /** The next waiting invocation a group may take, or undefined: none waits, or it must run alone and the group has members. */
  private nextMember(members: number): Invocation | undefined {
    const next = this.waiting[0];
    if (next === undefined || (next.alone && members > 0)) return undefined;
    return this.waiting.shift();
  }

  /**
   * One write group, inside the write queue: takes waiting invocations one at a time (so one that waits is
   * still answered query_timeout at its deadline) until none waits or a bound is reached, runs each against the
   * group's state, then commits them all. Never waits for more: a lone write commits at once. Never rejects: every
   * invocation it took is answered.
   */
  private async runGroup(): Promise<void> {
    const { store } = this.options;
    const ran: Ran[] = [];
    let snapshot = store.snapshot();
    let group = new TxnView(new SnapshotReader(snapshot), this.localIds);
    let bytes = 0;
    let running: Invocation | undefined;
    try {
      for (;;) {
        running = undefined;
        if (ran.length >= this.groupBounds.invocations || bytes >= this.groupBounds.bytes) break;
        const invocation = this.nextMember(ran.length);
        if (invocation === undefined) break;
        running = invocation;
        invocation.taken = true;
        invocation.take();
        let outcome: Outcome;
        try {
          const member = this.runMember(invocation, snapshot, group);
          outcome = member instanceof Promise ? await member : member;
        } catch (cause) {
          if (!(cause instanceof GroupFlushNeeded)) {
            invocation.reject(cause);
            if (invocation.alone) break;
            continue;
          }
          // A read that cannot see the pending changes: commit them, then run this member in a new group (after
          // any that commitGroup queues to run again alone: they came before it).
          this.waiting.unshift(invocation);
          this.commitGroup(ran.splice(0));
          snapshot.close();
          snapshot = store.snapshot();
          group = new TxnView(new SnapshotReader(snapshot), this.localIds);
          bytes = 0;
          continue;
        }
        const batch = outcome.view.hasWrites ? encodeMutations(outcome.view.mutations()) : undefined;
        if (batch !== undefined) {
          group.absorb(outcome.view);
          bytes += batch.byteLength;
        }
        ran.push({ invocation, body: outcome.body, batch });
        running = undefined;
        if (invocation.alone) break;
      }
      this.commitGroup(ran);
    } catch (cause) {
      // A bug (nothing above throws by design): whoever the group took is answered it, and nothing commits.
      for (const invocation of [...ran.map((member) => member.invocation), ...(running === undefined ? [] : [running])]) invocation.reject(cause);
    } finally {
      snapshot.close();
      this.groupQueued = false;
      if (this.waiting.length > 0) this.queueGroup();
    }
  }

  /**
   * One member on the group's snapshot, through the group's pending changes (write-group.ts GroupLayer): its outcome
   * at once when nothing in it had to wait, else a promise of it.
   */
  private runMember(invocation: Invocation, snapshot: Snapshot, group: TxnView): Outcome | Promise<Outcome> {
    const { plan, parameters, deadline } = invocation;
    const layer = new GroupLayer(group, new SnapshotReader(snapshot, readsVectorData(plan)), deadline);
    const view = new TxnView(layer, this.localIds, deadline);
    const result = drive(this.run(plan, snapshot, parameters, deadline, view));
    if (!(result instanceof Promise)) return { body: { type: "result", result }, view };
    return result.then((answered) => ({ body: { type: "result", result: answered }, view }));
  }

  /**
   * Commits the members' lists in one transaction, then answers each. A member's error the store finds (a check
   * only the commit makes, such as a vector's dimension) fails the whole transaction without saying whose list it
   * was: then every member runs again alone, first in the queue, so the one at fault fails as it would have alone and
   * the others commit (their reads may have seen its changes, so they run again rather than commit as they are).
   * Any other failure (the disk) answers every member its error, and none is written.
   */
  private commitGroup(ran: readonly Ran[]): void {
    const batches = ran.flatMap(({ batch }) => (batch === undefined ? [] : [batch]));
    try {
      if (batches.length > 0) this.options.store.applyAll(batches);
    } catch (cause) {
      if (ran.length > 1 && cause instanceof SilkError && cause.kind === "user") {
        for (const { invocation } of ran) invocation.alone = true;
        this.waiting.unshift(...ran.map(({ invocation }) => invocation));
        return;
      }
      for (const { invocation } of ran) invocation.reject(cause);
      return;
    }
    for (const { invocation, body } of ran) invocation.resolve(body);
  }

  private withSnapshot(read: (reader: SnapshotReader) => PartitionReplyBody): PartitionReplyBody {
    const snapshot = this.options.store.snapshot();
    try {
      return read(new SnapshotReader(snapshot));
    } finally {
      snapshot.close();
    }
  }

  /**
   * Runs write work after every earlier write of this partition has finished. With a deadline, a wait that outlasts
   * it ends in query_timeout and the work never runs; the writes queued behind it then wait only for those before it.
   * Only the wait is timed: work that has started is left to finish or fail on its own deadline checks, so a caller
   * answered query_timeout is never one whose write commits.
   */
  private async serialized<T>(work: () => Promise<T>, deadline?: Deadline): Promise<T> {
    const before = this.writeQueue;
    let finished!: () => void;
    this.writeQueue = new Promise<void>((resolve) => (finished = resolve));
    try {
      await (deadline === undefined ? before : deadline.within(before));
    } catch (cause) {
      void before.then(finished);
      throw cause;
    }
    try {
      return await work();
    } finally {
      finished();
    }
  }

  /**
   * One invocation: a snapshot, an overlay, then one LMDB write transaction (through the log, in a cluster) for
   * whatever it changed. A single server's writes run in groups instead (`runGroup`).
   */
  private async execute(plan: Plan, parameters: Plan["parameters"], deadline: Deadline, requestId: string | undefined): Promise<PartitionReplyBody> {
    const { store } = this.options;
    const snapshot = store.snapshot();
    try {
      const ids = this.options.log === undefined ? this.localIds : { allocate: async () => (await this.ensureIds(1), store.allocateId()) };
      const view = new TxnView(new SnapshotReader(snapshot, readsVectorData(plan)), ids, deadline);
      // Synchronous to the end unless something in the plan must wait: then the held snapshot outlives the wait.
      const run = drive(this.run(plan, snapshot, parameters, deadline, view));
      const result = run instanceof Promise ? await run : run;
      if (view.hasWrites) await this.change({ type: "apply", batch: encodeMutations(view.mutations()) }, requestId);
      return { type: "result", result };
    } finally {
      snapshot.close();
    }
  }
}
