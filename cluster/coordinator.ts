/**
 * The coordinator: takes a decoded plan and runs it as one transaction across the partitions.
 *
 * - One partition: the whole plan goes to that partition as one `execute` message and runs in its write queue there
 *   (the fast path, and the only path of a default single-partition database); writes waiting together commit in
 *   one LMDB transaction (node/actor/write-group.ts).
 * - Several partitions: the coordinator executes the plan itself over a scatter/gather reader (one batched message
 *   per partition per step), collects the writes, splits them into one mutation list per owning partition (the
 *   sub-plans), and commits them by two-phase commit when more than one partition is touched.
 *
 * Architecture invariant: invocations on a multi-partition database are serialized by a readers/writer lock
 * (cluster/read-write-lock.ts), held until every participant of a two-partition commit applied it, so a reader never
 * sees part of a multi-partition transaction and every invocation is serializable. This holds for one coordinator per
 * database. With `validate` (several coordinators of a cluster; docs/ISOLATION.md, "Several coordinators") the lock
 * is shared by every invocation instead: each records what it read (versioned reads), and the partition leaders
 * validate those reads and hold intents' locks from prepare to decision; a conflict runs the invocation again.
 */
import { randomBytes } from "node:crypto";
import type { Embedder } from "../protocol/embedding.js";
import { SilkError } from "../protocol/errors.js";
import { encodeMutations } from "../protocol/mutation-codec.js";
import type { PartitionRequest, QueryResult, ReadSet } from "../protocol/messages.js";
import { mutationOwner, type EndpointKind, type Mutation, type StoredRecord } from "../protocol/records.js";
import type { Schema } from "../protocol/schema.js";
import type { RuntimeIndexLookup, SecondaryIndexDefinition } from "../protocol/indexes.js";
import { isIndexOperationPlan, type Plan } from "../protocol/tree.js";
import { backoffMs, type Backoff } from "../platform/backoff.js";
import { Deadline, monotonicClockMs, type ClockMs } from "../node/exec/deadline.js";
import { executePlan } from "../node/exec/executor.js";
import { TxnView } from "../node/exec/txn-view.js";
import { checkUniqueRecords, uniqueFields } from "../node/exec/unique.js";
import { runAsync } from "../node/exec/ops.js";
import { importBatch, type ImportBatch, type ImportResult, type ImportServices } from "./bulk-import.js";
import { ReadWriteLock } from "./read-write-lock.js";
import { NOTHING_READ, ReadRecorder } from "./read-set.js";
import { expect, RemoteIdSource, ScatterReader } from "./scatter-reader.js";
import { partitionIndexStatuses, runIndexOperations } from "./index-operations.js";
import { UniqueBuildWatcher, type ValidationPhase } from "./unique-builds.js";
import { VectorDimensions } from "./vector-dimensions.js";
import type { DecisionStore } from "./decision-log.js";
import type { PartitionMap } from "./partition-map.js";
import type { Transport } from "./transport.js";

/**
 * The wait between tries of a decided commit on a participant that did not answer: 50 ms, doubling up to 1 s, without
 * jitter (one coordinator retries each participant; there is no crowd to spread).
 */
const COMMIT_APPLY_BACKOFF: Backoff = { firstMs: 50, maxMs: 1_000, jitter: "none" };

/** How many times a validating coordinator runs an invocation whose reads or locks conflicted, in all. */
export const CONFLICT_RUNS_MAX = 8;
/** The wait before running a conflicted invocation again: jittered, so the transactions that met part ways. */
const CONFLICT_BACKOFF: Backoff = { firstMs: 5, maxMs: 200, jitter: "full" };

/** A conflict met before anything of the invocation was written: it may run again (validating coordinators). */
class Conflict extends Error {
  constructor(readonly error: SilkError) {
    super(error.message);
  }
}

function isConflict(cause: unknown): cause is SilkError {
  return cause instanceof SilkError && cause.code === "transaction_conflict";
}

/** The points of two-phase commit at which a fault-injection hook can stop the process (crash tests). */
export type CommitPhase = "prepared_first" | "prepared_all" | "decided" | "committed_first" | "committed_all";

export interface CoordinatorOptions {
  readonly transport: Transport;
  readonly map: PartitionMap;
  readonly decisions: DecisionStore;
  readonly schema: Schema | undefined;
  readonly writable: boolean;
  readonly now: () => Date;
  /** The clock deadlines are measured on (tests pass a fake one); default `performance.now`. */
  readonly clockMs?: ClockMs;
  /** The deadline of a request that sets no `timeout_ms` (the servers' `--timeout-ms`); none when undefined. */
  readonly defaultTimeoutMs?: number;
  readonly onCommitPhase?: (phase: CommitPhase, txid: string) => void;
  /** Called as a UNIQUE build's verdict across partitions is sent (cluster/unique-builds.ts; crash tests). */
  readonly onValidationPhase?: (phase: ValidationPhase) => void;
  /** What `Embed(text)` calls; none: `embedding_not_configured`. */
  readonly embedder?: Embedder;
  /**
   * Throws when this writer may not write now (a cluster's writer coordinator that does not hold the writer lease,
   * runtime/remote.ts); checked before every write, after its turn at the write lock came.
   */
  readonly writerGate?: (waitMs: number) => Promise<void>;
  /**
   * Several coordinators (a cluster's `coordinators: "many"`): invocations share the lock, and their reads are
   * validated at the partition leaders instead (docs/ISOLATION.md, "Several coordinators"). Default false.
   */
  readonly validate?: boolean;
}

/** How many write transactions this coordinator ended, by outcome, since it started (the servers' `/metrics`). */
export interface TransactionCounts {
  /** Write transactions that committed (on every partition they touched). */
  readonly committed: number;
  /** Write transactions that ended without committing: refused, failed, timed out or in conflict; nothing of them was written. */
  readonly aborted: number;
  /**
   * Commits a participant refused because it does not hold the intent (`intent_not_prepared`: it aborted it, or never
   * prepared it): a bug, each also counted as aborted and answered with that error, never as success.
   */
  readonly commitAnomalies: number;
}

/** A plan kept for repeated runs with different parameters. */
export interface PreparedPlan {
  run(parameters: Readonly<Record<string, unknown>>): Promise<QueryResult>;
  release(): Promise<void>;
}

export class Coordinator {
  private readonly lock = new ReadWriteLock();
  private planCounter = 0;
  private transactionCounter = 0;
  private readonly transactionPrefix = randomBytes(6).toString("hex");
  /** The indexes index operations created (`kind:Label.field`), for the planner of plans run here over several partitions. */
  private runtimeIndexes = new Map<string, SecondaryIndexDefinition>();
  private readonly runtimeIndex: RuntimeIndexLookup = (kind, label, field) => this.runtimeIndexes.get(`${kind}:${label}.${field}`);
  /** The partition map in force; rebalancing swaps it under the write lock (`exclusive`). */
  private map: PartitionMap;
  /** Reads running unlocked on the only partition (the one-partition fast path), and who waits for them to end. */
  private unlockedReads = 0;
  private unlockedDrained: (() => void)[] = [];
  private committedTransactions = 0;
  private abortedTransactions = 0;
  private commitAnomalies = 0;

  /**
   * The two-phase commits this coordinator runs now, from before their first prepare until every participant applied
   * the outcome or the transaction failed: `recover()` leaves them to `commitLists` (see there).
   */
  private readonly inFlight = new Set<string>();

  /** Decisions being forgotten after their transaction's reply (see forgetLater). */
  private readonly forgetting = new Set<Promise<void>>();

  /** New records' IDs, in blocks per partition, for every transaction this coordinator runs itself. */
  private readonly ids: RemoteIdSource;

  /** Finishes UNIQUE builds across partitions (a writer's; cluster/unique-builds.ts). */
  private readonly uniqueBuilds: UniqueBuildWatcher;

  /** One dimension per vector index across partitions, checked before a write on several commits. */
  private readonly vectorDimensions = new VectorDimensions(() => partitionIndexStatuses(this.context()));

  constructor(private readonly options: CoordinatorOptions) {
    this.map = options.map;
    this.ids = new RemoteIdSource(options.transport, () => this.map);
    this.uniqueBuilds = new UniqueBuildWatcher({
      transport: options.transport,
      map: () => this.map,
      exclusive: () => this.lock.acquire(true),
      onPhase: options.onValidationPhase,
    });
  }

  /** Write transactions (plans and import batches) ended so far, by outcome. Reads change nothing and are not counted. */
  transactionCounts(): TransactionCounts {
    return { committed: this.committedTransactions, aborted: this.abortedTransactions, commitAnomalies: this.commitAnomalies };
  }

  /** Counts a write transaction's outcome as it settles, and passes the outcome on unchanged. */
  private counted<T>(transaction: Promise<T>): Promise<T> {
    return transaction.then(
      (value) => {
        this.committedTransactions += 1;
        return value;
      },
      (cause: unknown) => {
        this.abortedTransactions += 1;
        throw cause;
      },
    );
  }

  /** The partition map in force. */
  currentMap(): PartitionMap {
    return this.map;
  }

  /** This coordinator's options with the map in force (for code that takes the whole context). */
  private context(): CoordinatorOptions {
    return { ...this.options, map: this.map };
  }

  /**
   * Runs `work` with no invocation in flight (under the write lock, after unlocked one-partition reads ended): no
   * transaction's reads or two-phase commit span it. `work` may swap the map with `setMap` (rebalancing).
   */
  async exclusive<T>(work: (control: { setMap: (map: PartitionMap) => void }) => Promise<T>): Promise<T> {
    const release = await this.lock.acquire(true);
    try {
      while (this.unlockedReads > 0) await new Promise<void>((resume) => this.unlockedDrained.push(resume));
      return await work({ setMap: (map) => (this.map = map) });
    } finally {
      release();
    }
  }

  /**
   * Reads which runtime indexes the partitions hold (at open, and after every index operation); a writer then looks
   * for UNIQUE builds to finish across partitions.
   */
  async loadIndexCatalog(): Promise<void> {
    const catalog = new Map<string, SecondaryIndexDefinition>();
    for (const statuses of await partitionIndexStatuses(this.context())) {
      for (const status of statuses) if (status.origin === "runtime" && status.family === "secondary") catalog.set(`${status.kind}:${status.name}`, status);
    }
    this.runtimeIndexes = catalog;
    this.vectorDimensions.forget();
    if (this.options.writable) this.uniqueBuilds.watch();
  }

  /** Refuses a write where this coordinator may not write: opened read-only, or (a cluster's writer) its gate says no. */
  /** `waitMs`: how long a write may wait for a writer lease lost for a moment (cluster/nats/coordinator-lease.ts). */
  private async requireWritable(waitMs: number | undefined = Infinity): Promise<void> {
    if (!this.options.writable) throw new SilkError("read_only", "this database was opened read-only");
    await this.options.writerGate?.(waitMs ?? Infinity);
  }

  /** A batch of index operations, under the write lock so that no transaction runs across an index's change. */
  private async runIndexPlan(plan: Plan): Promise<QueryResult> {
    await this.requireWritable();
    const release = await this.lock.acquire(true);
    try {
      await this.requireWritable();
      try {
        return await runIndexOperations(plan, this.context());
      } finally {
        // Also after a failure: the batch's earlier operations took effect.
        await this.loadIndexCatalog();
      }
    } finally {
      release();
    }
  }

  async run(plan: Plan): Promise<QueryResult> {
    return this.runOn(plan, plan.parameters, undefined);
  }

  /**
   * Prepares a plan for repeated runs. With one partition the plan is sent once and kept there, so each run sends
   * only the plan's number and its parameters; with several the coordinator runs it itself and keeps it here.
   */
  async prepare(plan: Plan): Promise<PreparedPlan> {
    const planId = (this.planCounter += 1);
    const { transport } = this.options;
    const registered = this.map.count === 1;
    if (registered) await transport.request(0, { type: "register_plan", planId, plan });
    let released = false;
    return {
      run: (parameters) => {
        if (released) return Promise.reject(new SilkError("closed", "this prepared query was released"));
        const bound = withParameters(plan.parameters, parameters);
        if (registered && plan.requestType === "read" && this.map.count === 1 && transport.readNow !== undefined) {
          // A read the only partition answers synchronously: nothing can run beside it, so it needs neither the lock
          // nor the count of unlocked reads, and skips a request's promises (a fifth of a point read's cost).
          try {
            const result = transport.readNow(0, { type: "execute_prepared", planId, parameters: bound, timeoutMs: plan.timeoutMs ?? this.options.defaultTimeoutMs });
            if (result !== undefined) return Promise.resolve(result);
          } catch (cause) {
            return Promise.reject(cause);
          }
        }
        return this.runOn(plan, bound, registered ? planId : undefined);
      },
      release: async () => {
        if (released) return;
        released = true;
        if (registered) await transport.request(0, { type: "release_plan", planId });
      },
    };
  }

  /**
   * Runs `plan` with `parameters` as one transaction; `planId` names the copy of it a single partition keeps
   * (prepared plans), so only the parameters travel.
   */
  private runOn(plan: Plan, parameters: Plan["parameters"], planId: number | undefined): Promise<QueryResult> {
    // Index operations change indexes, not records: they are not counted among the write transactions.
    if (isIndexOperationPlan(plan)) return this.runIndexPlan(parameters === plan.parameters ? plan : { ...plan, parameters });
    const running = this.runTransaction(plan, parameters, planId);
    return plan.requestType === "write" ? this.counted(running) : running;
  }

  private async runTransaction(plan: Plan, parameters: Plan["parameters"], planId: number | undefined): Promise<QueryResult> {
    const { transport } = this.options;
    // The deadline starts now, so waiting for the lock (or for a lost writer lease) counts; a partition gets what is left.
    const deadline = Deadline.after(plan.timeoutMs ?? this.options.defaultTimeoutMs, this.options.clockMs ?? monotonicClockMs);
    if (plan.requestType === "write") await this.requireWritable(deadline.remainingMs());
    const executeOnOnlyPartition = async (): Promise<QueryResult> => {
      const timeoutMs = deadline.remainingMs();
      const timed: PartitionRequest =
        planId === undefined ? { type: "execute", plan: { ...plan, parameters, timeoutMs } } : { type: "execute_prepared", planId, parameters, timeoutMs };
      try {
        return expect(await transport.request(0, timed), "result").result;
      } catch (cause) {
        // The partition knew only the time left; the caller is told the timeout it asked for.
        if (cause instanceof SilkError && cause.code === "query_timeout") throw deadline.expired();
        throw cause;
      }
    };
    // One partition: reads run on its own snapshots, unlocked; writes take the lock shared with each other (the
    // partition's write queue orders them, and commits those waiting together: node/actor/write-group.ts) and exclusive of
    // a bulk import (which checks its endpoints, then commits) and of index operations and rebalancing.
    if (this.map.count === 1 && plan.requestType === "read") return this.unlocked(executeOnOnlyPartition);
    const validating = this.options.validate === true;
    const sharedWrite = plan.requestType === "write" && (this.map.count === 1 || validating);
    let release = await this.acquireWithin(deadline, plan.requestType === "write" && !sharedWrite);
    if (sharedWrite && this.map.count !== 1 && !validating) {
      // A rebalance added partitions while this write waited: it needs the lock to itself.
      release();
      release = await this.acquireWithin(deadline, true);
    }
    try {
      if (plan.requestType === "write") await this.requireWritable(deadline.remainingMs());
      const map = this.map;
      if (map.count === 1) return await executeOnOnlyPartition();
      if (validating) return await this.runValidated(plan, parameters, deadline, map);
      const view = new TxnView(new ScatterReader(transport, map, plan.requestType === "write"), this.ids, deadline);
      const result = await executePlan(
        plan,
        {
          view,
          schema: this.options.schema,
          now: this.options.now,
          writable: plan.requestType === "write",
          deadline,
          runtimeIndex: this.runtimeIndex,
          embedder: this.options.embedder,
        },
        parameters,
      );
      if (view.hasWrites) await this.commit(view.mutations());
      return result;
    } finally {
      release();
    }
  }

  /**
   * A plan run by a validating coordinator over several partitions: its reads are recorded, then validated with its
   * commit (or, for a read that made more than one request, in a validation round); a conflict runs it again from the
   * start after a jittered pause, CONFLICT_RUNS_MAX runs in all, then answers transaction_conflict. A run that failed
   * on its own (an error of the plan) is answered that error only if its reads were consistent: a conflict means it
   * may have seen data no serial order gives, so it runs again.
   */
  private async runValidated(plan: Plan, parameters: Plan["parameters"], deadline: Deadline, map: PartitionMap): Promise<QueryResult> {
    const write = plan.requestType === "write";
    for (let run = 1; ; run++) {
      const reads = new ReadRecorder();
      const view = new TxnView(new ScatterReader(this.options.transport, map, write, reads), this.ids, deadline);
      try {
        let result: QueryResult;
        try {
          result = await executePlan(
            plan,
            { view, schema: this.options.schema, now: this.options.now, writable: write, deadline, runtimeIndex: this.runtimeIndex, embedder: this.options.embedder },
            parameters,
          );
        } catch (cause) {
          if (!(cause instanceof SilkError) || cause.kind !== "user" || reads.requests < 2) throw cause;
          await this.validateReads(reads);
          throw cause;
        }
        if (view.hasWrites) await this.commit(view.mutations(), reads);
        else if (reads.requests > 1) await this.validateReads(reads);
        return result;
      } catch (cause) {
        if (!(cause instanceof Conflict)) throw cause;
        if (run >= CONFLICT_RUNS_MAX) throw new SilkError("transaction_conflict", `${cause.error.message} (the invocation ran ${run} times and conflicted each time)`);
        await deadline.within(new Promise((resolve) => setTimeout(resolve, backoffMs(CONFLICT_BACKOFF, run - 1))));
      }
    }
  }

  /** A validation round: each partition read checks its reads (in parallel); Conflict when one refuses. */
  private async validateReads(reads: ReadRecorder): Promise<void> {
    const outcomes = await Promise.allSettled(
      reads.partitionsRead().map((partition) => this.options.transport.request(partition, { type: "validate", reads: reads.readSet(partition) })),
    );
    const conflict = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected" && isConflict(outcome.reason));
    if (conflict !== undefined) throw new Conflict(conflict.reason as SilkError);
    const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
    if (failed !== undefined) throw failed.reason;
  }

  /**
   * The lock, or query_timeout at the deadline while still waiting for it (behind a long write): a lock that comes
   * after its waiter gave up is released at once.
   */
  private async acquireWithin(deadline: Deadline, write: boolean): Promise<() => void> {
    const acquiring = this.lock.acquire(write);
    try {
      return await deadline.within(acquiring);
    } catch (cause) {
      void acquiring.then((release) => release());
      throw cause;
    }
  }

  /** A read on the only partition, outside the lock; `exclusive` waits for such reads to end. */
  private async unlocked<T>(read: () => Promise<T>): Promise<T> {
    this.unlockedReads += 1;
    try {
      return await read();
    } finally {
      this.unlockedReads -= 1;
      if (this.unlockedReads === 0) for (const resume of this.unlockedDrained.splice(0)) resume();
    }
  }

  /** Writes a bulk-import batch as one transaction (see bulk-import.ts). */
  importBatch(batch: ImportBatch): Promise<ImportResult> {
    return this.counted(this.runImportBatch(batch));
  }

  private async runImportBatch(batch: ImportBatch): Promise<ImportResult> {
    await this.requireWritable();
    const { transport, schema, now } = this.options;
    const release = await this.lock.acquire(true);
    try {
      await this.requireWritable();
      const map = this.map;
      const reader = new ScatterReader(transport, map, true);
      const ids = this.ids;
      return await importBatch(batch, {
        map,
        schema,
        now,
        allocateBlock: (partition, count) => ids.allocateBlock(partition, count),
        lookupEndpoints: async (endpointIds) => {
          const nodes = await reader.records("node", endpointIds);
          // Most endpoints are nodes: only the IDs that name none are looked up as vectors.
          const others = endpointIds.filter((_, i) => nodes[i] === undefined);
          const vectors = others.length === 0 ? [] : await reader.records("vector", others);
          let next = 0;
          return endpointIds.map((_, i) => {
            const record = nodes[i] ?? vectors[next++];
            return record === undefined ? undefined : { label: record.label, kind: record.kind as EndpointKind };
          });
        },
        outAdjacency: (sources, label) => reader.adjacency(sources, "out", label),
        commitLists: (lists) => this.commitLists(lists),
        ...(map.count > 1 ? { unique: this.importUniqueCheck(reader, schema), vectorDimensions: (records) => this.vectorDimensions.firstMismatch(records) } : {}),
      });
    } finally {
      release();
    }
  }

  /**
   * An import's UNIQUE INDEX check across partitions, under the write lock the import holds: the batch's new records
   * against each other and against every partition's active index (node/exec/unique.ts), before anything is written.
   * Schemaless, every record goes to the check, which finds the `create_index` UNIQUE fields among the properties
   * the records hold.
   */
  private importUniqueCheck(reader: ScatterReader, schema: Schema | undefined): NonNullable<ImportServices["unique"]> {
    const runtimeIndex = this.runtimeIndex;
    return {
      mayBreak: (kind, label) => schema === undefined || uniqueFields(schema, runtimeIndex, kind, label).length > 0,
      // A view with no writes of its own: the batch's records are new, so every committed holder is another record.
      check: (records) => runAsync(checkUniqueRecords(records, new TxnView(reader, this.ids), schema, runtimeIndex)),
    };
  }

  /**
   * Splits mutations by owning partition and commits them (see commitLists), after the check of their vectors
   * against one dimension per vector index across partitions (cluster/vector-dimensions.ts).
   */
  private async commit(mutations: Mutation[], reads?: ReadRecorder): Promise<void> {
    const map = this.map;
    const written: StoredRecord[] = [];
    for (const mutation of mutations) if (mutation.op === "put_record" && mutation.record.kind !== "edge") written.push(mutation.record);
    const mismatch = await this.vectorDimensions.firstMismatch(written);
    if (mismatch !== undefined) throw mismatch.error;
    const byPartition = new Map<number, Mutation[]>();
    const add = (partition: number, mutation: Mutation): void => {
      const list = byPartition.get(partition);
      if (list) list.push(mutation);
      else byPartition.set(partition, [mutation]);
    };
    for (const mutation of mutations) {
      const partition = map.partitionOf(mutationOwner(mutation));
      add(partition, mutation);
      // An edge whose source another partition owns (a rebalance moved one of them): the source's partition keeps
      // the out-adjacency, so it gets its own put_out / delete_out.
      if ((mutation.op === "put_record" || mutation.op === "delete_record") && mutation.record.kind === "edge") {
        const edge = mutation.record;
        const sourcePartition = map.partitionOf(edge.from);
        if (sourcePartition !== partition) {
          add(
            sourcePartition,
            mutation.op === "put_record"
              ? { op: "put_out", source: edge.from, label: edge.label, edge: edge.id, target: edge.to, targetKind: edge.toKind }
              : { op: "delete_out", source: edge.from, label: edge.label, edge: edge.id },
          );
        }
      }
    }
    const lists = new Map<number, Uint8Array>();
    for (const [partition, list] of byPartition) lists.set(partition, encodeMutations(list));
    // A partition only read takes part too (an empty list): its prepare validates the reads and holds them.
    for (const partition of reads?.partitionsRead() ?? []) if (!lists.has(partition)) lists.set(partition, encodeMutations([]));
    await this.commitLists(lists, reads);
  }

  /**
   * Commits one encoded mutation list per partition as one transaction: directly when one partition is touched, by
   * two-phase commit when several are.
   */
  private async commitLists(byPartition: ReadonlyMap<number, Uint8Array>, reads?: ReadRecorder): Promise<void> {
    const { transport } = this.options;
    const participants = [...byPartition.keys()].sort((a, b) => a - b);
    if (participants.length === 0) return;
    // A validating coordinator sends every participant what it read there (NOTHING_READ for a bulk import), so its
    // writes are also checked against other transactions' prepared intents.
    const readsOf = (partition: number) => (this.options.validate === true ? (reads?.readSet(partition) ?? NOTHING_READ) : undefined);
    if (participants.length === 1) {
      const partition = participants[0];
      try {
        await transport.request(partition, { type: "apply", batch: byPartition.get(partition)!, reads: readsOf(partition) });
      } catch (cause) {
        // Refused before anything was written (the leader validates before it appends).
        throw isConflict(cause) && reads !== undefined ? new Conflict(cause) : cause;
      }
      return;
    }
    const txid = `${this.transactionPrefix}-${(this.transactionCounter += 1)}`;
    this.inFlight.add(txid);
    try {
      await this.twoPhaseCommit(txid, participants, byPartition, readsOf, reads !== undefined);
    } finally {
      this.inFlight.delete(txid);
    }
  }

  /** Two-phase commit of `txid` (commitLists with more than one participant). */
  private async twoPhaseCommit(
    txid: string,
    participants: readonly number[],
    byPartition: ReadonlyMap<number, Uint8Array>,
    readsOf: (partition: number) => ReadSet | undefined,
    mayRunAgain: boolean,
  ): Promise<void> {
    const { transport, decisions } = this.options;
    const hook = this.options.onCommitPhase ?? (() => undefined);
    // Prepares go out together; the hook sees the first acknowledgement. On any failure, every participant that
    // prepared is aborted (one whose outcome is unknown is resolved by presumed abort: no decision is written).
    const prepared: number[] = [];
    const prepares = await Promise.allSettled(
      participants.map(async (partition) => {
        await transport.request(partition, { type: "prepare", txid, batch: byPartition.get(partition)!, reads: readsOf(partition) });
        prepared.push(partition);
        if (prepared.length === 1) hook("prepared_first", txid);
      }),
    );
    const refused = prepares.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
    if (refused !== undefined) {
      if (this.options.validate === true) {
        // Also a participant whose prepare's outcome is unknown: its locks go now, not when its resolver presumes
        // abort (abort is idempotent; no commit decision is ever written for this transaction). One that refused
        // (a user error: a conflict, a constraint) appended nothing.
        const unsure = participants.filter((_, i) => {
          const outcome = prepares[i];
          return outcome.status === "rejected" && !(outcome.reason instanceof SilkError && outcome.reason.kind === "user");
        });
        await Promise.all([...prepared, ...unsure].map((partition) => transport.request(partition, { type: "abort", txid }).catch(() => undefined)));
        if (mayRunAgain && isConflict(refused.reason)) throw new Conflict(refused.reason);
        throw refused.reason;
      }
      await Promise.all(prepared.map((partition) => transport.request(partition, { type: "abort", txid })));
      throw refused.reason;
    }
    hook("prepared_all", txid);
    const outcome = await decisions.decide(txid, "commit", participants);
    hook("decided", txid);
    if (outcome === "abort") {
      // Another coordinator resolved this transaction while it was in doubt (it took this one for crashed).
      await Promise.all(participants.map((partition) => transport.request(partition, { type: "abort", txid })));
      await decisions.forget(txid);
      const error = new SilkError("transaction_conflict", "the transaction was aborted while in doubt (another coordinator resolved it); nothing was written, retry");
      throw mayRunAgain ? new Conflict(error) : error;
    }
    // The first participant commits alone, so that `committed_first` is a state with one participant committed and
    // the others still prepared (the crash tests recover from it); the rest go out together, each retried until
    // applied, and the caller (and the lock) waits for all of them.
    await this.commitDecided(participants[0], txid);
    hook("committed_first", txid);
    const commits = await Promise.allSettled(participants.slice(1).map((partition) => this.commitDecided(partition, txid)));
    const failed = commits.find((result): result is PromiseRejectedResult => result.status === "rejected");
    if (failed !== undefined) throw failed.reason;
    hook("committed_all", txid);
    this.forgetLater(txid);
  }

  /**
   * Deletes a decision every participant applied, off the write's path: a decision nobody forgot (this process
   * stopped first, the log did not answer) is harmless, since no intent refers to it any more, and the next
   * `recover()` forgets it.
   */
  private forgetLater(txid: string): void {
    const forgetting = this.options.decisions.forget(txid).catch(() => undefined);
    this.forgetting.add(forgetting);
    void forgetting.finally(() => this.forgetting.delete(forgetting));
  }

  /** Stops finishing UNIQUE builds and waits for the decisions being forgotten (before the decision store closes). */
  async settle(): Promise<void> {
    await this.uniqueBuilds.stop();
    await Promise.all([...this.forgetting]);
  }

  /**
   * Applies a commit decision on one participant, retrying until it succeeds. The decision is durable, so the
   * transaction is committed whatever happens; answering (and releasing the lock) before every participant applied
   * it would let a reader see part of it. A participant out of reach holds the coordinator here (the partition's own
   * intent resolver applies the decision too, once it has a leader again).
   */
  private async commitDecided(partition: number, txid: string): Promise<void> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await this.options.transport.request(partition, { type: "commit", txid });
        return;
      } catch (cause) {
        if (cause instanceof SilkError && cause.kind === "user") throw cause;
        if (cause instanceof SilkError && cause.code === "intent_not_prepared") {
          this.commitAnomalies += 1; // a bug signal: not retried, not answered as success
          throw cause;
        }
        await new Promise((resolve) => setTimeout(resolve, backoffMs(COMMIT_APPLY_BACKOFF, attempt)));
      }
    }
  }

  /**
   * Resolves transactions left in doubt by a crash: every prepared intent commits if its decision is in the log and
   * aborts otherwise; then decisions whose participants have all applied are forgotten. Runs before the database
   * serves anything, and again when a cluster's writer takes its lost writer lease back (runtime/remote.ts).
   *
   * Invariant: recovery never touches a transaction this coordinator has in flight (`inFlight`): a commit that passed
   * the writer gate before the lease was lost goes on while recovery runs. Deciding abort for its prepared intents
   * would turn its commit into a conflict, and forgetting a decision it is about to write or apply would let its
   * `decide(commit)` write a fresh commit over intents already aborted: an acknowledged write with nothing written.
   */
  async recover(): Promise<{ committed: number; aborted: number }> {
    const { transport, decisions } = this.options;
    let committed = 0;
    let aborted = 0;
    for (const partition of this.map.partitions) {
      const { txids } = expect(await transport.request(partition, { type: "pending_intents" }), "intents");
      for (const txid of txids) {
        if (this.inFlight.has(txid)) continue;
        // No decision yet: abort wins (presumed abort), and a late commit decision can no longer be written.
        const outcome = await decisions.decide(txid, "abort", [partition]);
        await transport.request(partition, { type: outcome, txid });
        if (outcome === "commit") committed += 1;
        else aborted += 1;
      }
    }
    for (const txid of await decisions.all()) if (!this.inFlight.has(txid)) await decisions.forget(txid);
    return { committed, aborted };
  }
}

/** A prepared plan's own parameters overridden by a run's; no copy when the plan has none (HelixQL queries). */
function withParameters(own: Plan["parameters"], given: Plan["parameters"]): Plan["parameters"] {
  for (const _ in own) return { ...own, ...given };
  return given;
}
