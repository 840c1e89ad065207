/**
 * One replica of one partition in a cluster (docs/REPLICATION.md): its own LMDB store kept equal to the
 * partition's JetStream log, as leader or follower.
 *
 * - Follower: follows the log from its applied sequence + 1, applying each entry in order (cluster/nats/partition-log.ts
 *   `applyAt`); tries to take the lease every ttl/10.
 * - Becoming leader (lease taken): catches up to the stream's last sequence, stops following, fences its IDs
 *   (`store.fenceIds()`), then subscribes to `subjects.leader` and serves with a writable PartitionActor whose
 *   WriteLog is a guarded LeaderWriteLog; starts the index builds (their chunks go through the log too).
 * - Stepping down (lease lost, an append refused or of unknown outcome, `stop()`): unsubscribes first, then waits
 *   for the requests in flight, stops the actor, and follows the log again (from what it applied).
 * - A leader resolves two-phase-commit intents left prepared longer than `intentTimeoutMs` (cluster/nats/intent-resolver.ts):
 *   it asks the replicated decision log (presumed abort) and applies the outcome through its log, so a crashed
 *   coordinator's transactions are resolved even if no coordinator comes back.
 * - Every replica answers stale reads on `subjects.stale` (queue group STALE_QUEUE) from its applied state with a
 *   read-only actor, within the request's bound `maxStalenessMs` (default DEFAULT_MAX_STALENESS_MS); anything but a
 *   read gets `not_leader`. Bounded staleness: the replica keeps `currentAsOf`, an instant (its own monotonic
 *   clock) such that it has applied every entry the log held then; the follower loop moves it (cluster/nats/partition-log.ts
 *   `onCurrent`). A leader is current. A follower answers only if now − currentAsOf ≤ maxStalenessMs; otherwise it
 *   asks the stream's last sequence (at instant Q), waits up to FRESHNESS_WAIT_MS to have applied it (currentAsOf
 *   becomes Q), and if it still is too far behind refuses with `not_leader` (the transport then asks the leader).
 *   Guarantee: an answer reflects every entry that was in the log maxStalenessMs before the replica began answering
 *   (hence before the client sent the request plus the bound), and is a consistent snapshot of a log prefix.
 * - A leader snapshots its store into the cluster's object store when the log grew enough since the latest snapshot,
 *   and truncates the log below the oldest snapshot kept (cluster/nats/snapshots.ts); a follower that finds the log
 *   truncated past what it applied stops (`log_truncated`), and bootstraps from the latest snapshot when started again.
 * - Test hook: `holdFollowing()` / `resumeFollowing()` stop and restart a follower's loop (a lagging follower); a
 *   held replica does not stand for election.
 *
 * Invariants: at most one of (follower loop, leader actor) applies entries to the store at any time; an entry is
 * applied only at its own sequence, once (`appliedLogSequence` only grows, in the same LMDB transaction). A
 * failure to apply an entry other than a user error (the entry's outcome everywhere) stops the replica: it logs it
 * and calls `onFatal` (default: process exit code 1).
 */
import { randomBytes } from "node:crypto";
import { headers, type Msg, type NatsConnection, type Subscription } from "@nats-io/nats-core";
import type { Logger } from "pino";
import type { Embedder } from "../../protocol/embedding.js";
import { SilkError, asSilkError } from "../../protocol/errors.js";
import { isReadRequest, type PartitionReply, type PartitionRequest } from "../../protocol/messages.js";
import type { Schema } from "../../protocol/schema.js";
import { realClock, sleep, type CancelTimer, type Clock } from "../../platform/clock.js";
import { PartitionActor } from "../../node/actor/partition-actor.js";
import type { PartitionStore } from "../../node/store/partition-store.js";
import type { DecisionStore } from "../decision-log.js";
import { IntentResolver } from "./intent-resolver.js";
import { KvDecisionLog } from "./kv-decision-log.js";
import { DEFAULT_LEASE_TTL_MS, PartitionLease, type LeaseValue } from "./lease.js";
import { DEFAULT_MAX_STALENESS_MS, decodeRequest, encodeReply, type RequestEnvelope } from "./wire.js";
import { LeaderWriteLog, PartitionLog, applyAt, type LogFollower } from "./partition-log.js";
import { STALE_QUEUE, subjects } from "./subjects.js";
import { DEFAULT_SNAPSHOT_POLICY, latestSnapshot, PartitionSnapshots, type SnapshotPolicy, type SnapshotTaken } from "./snapshots.js";
import { messageBytesMax, PARTS_COUNT_HEADER, PARTS_GONE_HEADER, PARTS_ID_HEADER, PARTS_SUBJECT_HEADER, PendingReplies, splitParts } from "./message-size.js";

export interface ReplicaOptions {
  readonly nc: NatsConnection;
  readonly cluster: string;
  readonly partition: number;
  readonly replica: string;
  /** The log stream's num_replicas (1 on one NATS server, 3 in a cluster). */
  readonly replicas: number;
  /** This replica's own LMDB (its own directory). */
  readonly store: PartitionStore;
  readonly schema: Schema | undefined;
  readonly now: () => Date;
  readonly embedder?: Embedder;
  /** Default 3,000; renewed every ttl/3. */
  readonly leaseTtlMs?: number;
  readonly logger: Logger;
  /** How long an intent stays prepared (as seen by the leader) before the leader resolves it (default 10,000). */
  readonly intentTimeoutMs?: number;
  /** A failure that leaves the store unable to follow the log (the replica has stopped). Default: exit code 1. */
  readonly onFatal?: (cause: Error) => void;
  /** When a leader snapshots its store and truncates the log (cluster/nats/snapshots.ts); default DEFAULT_SNAPSHOT_POLICY. */
  readonly snapshots?: SnapshotPolicy | "off";
  /** Where a snapshot's copy of the store is made before it is uploaded (default: the system's temporary folder). */
  readonly scratchDirectory?: string;
  /**
   * Time, timers and randomness of the replication code (the lease, the log's follow loop and appends, elections,
   * freshness checks); default realClock. The actor's query time is `now`, not this.
   */
  readonly clock?: Clock;
}

/** How long a new leader waits to catch up with the log before it gives the lease back. */
const CATCH_UP_TIMEOUT_MS = 30_000;
/** A follower too stale for a read: how long it waits for JetStream's last sequence, then to have applied it. */
const FRESHNESS_ASK_TIMEOUT_MS = 1_000;
const FRESHNESS_WAIT_MS = 250;
/** How often a replica waiting to have applied a sequence (catching up to lead, a freshness check) looks again. */
const APPLIED_POLL_MS = 5;
/**
 * How often a leader checks whether a snapshot is due by entries (a local comparison), and every how many of those
 * checks it also asks the stream's size for `everyBytes`.
 */
const SNAPSHOT_CHECK_MS = 100;
const SNAPSHOT_BYTES_CHECK_EVERY = 10;

/** What a replica counted since it started (`silk partition`'s `GET /metrics`, bin/partition.ts). */
export interface ReplicaCounters {
  /** Times this replica became its partition's leader (`taken`), and stopped leading (`ended`: lease lost, stepped down, stopped). */
  readonly leaderships: { readonly taken: number; readonly ended: number };
  /** Its lease renewals while it led (cluster/nats/lease.ts `renewals`). */
  readonly leaseRenewals: { readonly renewed: number; readonly failed: number };
  /**
   * The transaction steps it answered as leader: `prepared`, `committed` and `aborted` (two-phase commit, those the
   * intent resolver decided included) and `applied` (a write to this partition alone, which needs no two phases).
   */
  readonly transactions: { prepared: number; committed: number; aborted: number; applied: number };
}

interface Leadership {
  readonly actor: PartitionActor;
  readonly log: LeaderWriteLog;
  subscription: Subscription | undefined;
  current: boolean;
  readonly inflight: Set<Promise<void>>;
  cancelResolver: CancelTimer | undefined;
  cancelSnapshots: CancelTimer | undefined;
}

export class PartitionReplica {
  private leadership: Leadership | undefined;
  private follower: LogFollower | undefined;
  private stale: Subscription | undefined;
  /** Where the coordinator fetches the rest of a reply too large for one message (cluster/nats/message-size.ts). */
  private readonly partsSubject: string;
  private parts: Subscription | undefined;
  private readonly pendingReplies = new PendingReplies();
  private readonly staleActor: PartitionActor;
  private cancelElections: CancelTimer | undefined;
  private electing = false;
  private stopped = false;
  /** Serializes becoming leader, stepping down and stopping. */
  private transition: Promise<void> = Promise.resolve();
  private readonly ttlMs: number;
  private readonly clock: Clock;
  /** The replicated decision log, opened when an intent first needs resolving. */
  private decisionLog: Promise<DecisionStore> | undefined;
  /** `clock.monotonicMs()` instant as of which every log entry is applied (see the module comment). */
  private currentAsOf = -Infinity;
  /** The freshness check in flight (one at a time, shared by the reads waiting for it). */
  private freshnessCheck: Promise<void> | undefined;
  /** Test hook: the follower loop is held (holdFollowing). */
  private held = false;
  /** The partition's snapshots, opened when a leader first checks whether one is due. */
  private snapshots: Promise<PartitionSnapshots> | undefined;
  private readonly leaderships = { taken: 0, ended: 0 };
  private readonly transactions: ReplicaCounters["transactions"] = { prepared: 0, committed: 0, aborted: 0, applied: 0 };
  /** The sequence of the partition's latest snapshot (0: none), once read. */
  private latestSnapshot: number | undefined;
  /** The snapshot being taken (one at a time; `stop` waits for it: it reads the store). */
  private snapshotRun: Promise<SnapshotTaken | undefined> | undefined;

  private constructor(
    private readonly options: ReplicaOptions,
    private readonly log: PartitionLog,
    private lease: PartitionLease,
  ) {
    this.ttlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    this.clock = options.clock ?? realClock;
    this.partsSubject = subjects.parts(options.cluster, options.partition, randomBytes(8).toString("hex"));
    this.staleActor = new PartitionActor({ store: options.store, schema: options.schema, writable: false, now: options.now, embedder: options.embedder });
  }

  static async start(options: ReplicaOptions): Promise<PartitionReplica> {
    const log = await PartitionLog.open(options);
    let replica: PartitionReplica | undefined;
    const lease = await PartitionLease.open({
      ...options,
      ttlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
      onLost: (reason) => replica?.loseLeadership(reason),
    });
    replica = new PartitionReplica(options, log, lease);
    await replica.startFollowing();
    replica.stale = options.nc.subscribe(subjects.stale(options.cluster, options.partition), {
      queue: STALE_QUEUE,
      callback: (error, message) => {
        if (error === null) void replica.answer(message, (envelope) => replica.answerStale(envelope));
      },
    });
    replica.parts = options.nc.subscribe(replica.partsSubject, {
      callback: (error, message) => {
        if (error === null) replica.answerPart(message);
      },
    });
    replica.cancelElections = replica.clock.every(Math.max(10, Math.floor(replica.ttlMs / 10)), () => void replica.elect());
    void replica.elect();
    return replica;
  }

  get role(): "leader" | "follower" {
    return this.leadership?.current === true ? "leader" : "follower";
  }

  appliedSequence(): number {
    return this.options.store.appliedLogSequence();
  }

  /** The last sequence of the partition's log, asked of JetStream (one round trip). */
  logSequence(): Promise<number> {
    return this.log.lastSequence();
  }

  /** The partition's lease as its key holds it now (one read of the lease bucket): who leads, in which term; undefined while none does. */
  leaseHolder(): Promise<LeaseValue | undefined> {
    return this.lease.holder();
  }

  counters(): ReplicaCounters {
    return { leaderships: { ...this.leaderships }, leaseRenewals: this.lease.renewals(), transactions: { ...this.transactions } };
  }

  /** How far behind the log this replica may be, in ms (0 for a leader; Infinity before it was first current). */
  stalenessMs(): number {
    // A leader with a live lease applied everything in the log: no other replica can append while the lease lives.
    return this.role === "leader" && this.lease.held() ? 0 : Math.max(0, this.clock.monotonicMs() - this.currentAsOf);
  }

  /** Test hook: a follower stops applying the log (and stands for no election) until resumeFollowing(). */
  async holdFollowing(): Promise<void> {
    await this.queue(async () => {
      if (this.leadership !== undefined) throw new SilkError("internal", "a leader cannot hold its follower loop");
      this.held = true;
      await this.follower?.stop();
      this.follower = undefined;
    });
  }

  /** Test hook: a held follower follows the log again. */
  async resumeFollowing(): Promise<void> {
    await this.queue(async () => {
      if (!this.held) return;
      this.held = false;
      if (!this.stopped && this.leadership === undefined && this.follower === undefined) await this.startFollowing();
    });
  }

  /** A leader gives its lease up (so failover is immediate); every subscription ends. The store stays open. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.cancelElections?.();
    this.stale?.unsubscribe();
    this.parts?.unsubscribe();
    this.pendingReplies.clear();
    await this.snapshotRun?.catch(() => undefined);
    await this.queue(async () => {
      await this.stepDown("stopping", true);
      await this.follower?.stop();
      this.follower = undefined;
      this.lease.forget();
    });
  }

  private queue(work: () => Promise<void>): Promise<void> {
    const run = this.transition.then(work, work);
    this.transition = run.catch(() => undefined);
    return run;
  }

  // ---- follower ----

  private async startFollowing(): Promise<void> {
    const { store, logger, partition } = this.options;
    const from = store.appliedLogSequence() + 1;
    const follower = this.log.follow(
      from,
      (sequence, entry) => {
        const refused = applyAt(store, sequence, entry);
        if (refused !== undefined) logger.warn({ partition, sequence, code: refused.code, message: refused.message }, "log entry refused (applied as a no-op)");
      },
      logger,
      (asOf) => this.markCurrent(asOf),
    );
    this.follower = follower;
    follower.done.then(
      () => undefined,
      (cause: unknown) => this.fatal(cause),
    );
  }

  private fatal(cause: unknown): void {
    const error = cause instanceof Error ? cause : new Error(String(cause));
    this.options.logger.fatal({ err: error.message, partition: this.options.partition, replica: this.options.replica, applied: this.appliedSequence() }, "replica cannot apply its log; stopping");
    void this.stop().finally(() => (this.options.onFatal ?? (() => (process.exitCode = 1)))(error));
  }

  private async elect(): Promise<void> {
    if (this.stopped || this.electing || this.held || this.leadership !== undefined) return;
    this.electing = true;
    try {
      if (!(await this.lease.tryAcquire())) return;
      await this.queue(() => this.becomeLeader());
    } catch (cause) {
      this.options.logger.warn({ err: String(cause), partition: this.options.partition }, "election attempt failed");
      await this.lease.release();
    } finally {
      this.electing = false;
    }
  }

  // ---- leader ----

  private async becomeLeader(): Promise<void> {
    const { store, logger, partition, replica } = this.options;
    if (this.stopped || !this.lease.held()) return this.lease.release();
    const last = await this.log.lastSequence();
    const deadline = this.clock.monotonicMs() + CATCH_UP_TIMEOUT_MS;
    while (store.appliedLogSequence() < last) {
      if (!this.lease.held() || this.stopped || this.clock.monotonicMs() > deadline) {
        logger.warn({ partition, replica, applied: store.appliedLogSequence(), last }, "could not catch up in time; giving the lease back");
        await this.lease.release();
        return;
      }
      await sleep(this.clock, APPLIED_POLL_MS);
    }
    await this.follower?.stop();
    this.follower = undefined;
    if (!this.lease.held() || this.stopped) {
      await this.lease.release();
      await this.startFollowing();
      return;
    }
    store.fenceIds();
    let leadership: Leadership | undefined;
    const writeLog = new LeaderWriteLog({
      log: this.log,
      store,
      lastSequence: store.appliedLogSequence(),
      mayAppend: () => leadership?.current === true && this.lease.held(),
      onUnsure: (reason) => void this.queue(() => this.stepDown(reason, true)),
      logger,
    });
    const actor = new PartitionActor({ store, schema: this.options.schema, writable: true, now: this.options.now, embedder: this.options.embedder, log: writeLog });
    leadership = { actor, log: writeLog, subscription: undefined, current: true, inflight: new Set(), cancelResolver: undefined, cancelSnapshots: undefined };
    this.leadership = leadership;
    if (store.spareIds() === Infinity) {
      // A store that never saw a reservation would hand out IDs without one (spareIds is unlimited outside a
      // cluster): reserve nothing, through the log, so every later allocation reserves its block first.
      try {
        const entry = { type: "reserve_ids", upTo: store.nextIdToAllocate() - 1n } as const;
        const sequence = await writeLog.append(entry);
        if (sequence !== "duplicate") applyAt(store, sequence, entry);
      } catch (cause) {
        logger.warn({ partition, replica, err: String(cause) }, "could not start leading");
        return this.stepDown("the first append failed", true);
      }
    }
    leadership.subscription = this.options.nc.subscribe(subjects.leader(this.options.cluster, partition), {
      callback: (error, message) => {
        if (error !== null || leadership?.current !== true) return;
        const work = this.answer(message, async ({ request, requestId }) => {
          const reply = await actor.handle(request, requestId);
          if (reply.ok) this.countTransaction(request.type);
          return reply;
        });
        leadership.inflight.add(work);
        void work.finally(() => leadership.inflight.delete(work));
      },
    });
    actor.startIndexBuilds();
    this.startResolver(leadership);
    this.startSnapshots(leadership);
    this.leaderships.taken += 1;
    logger.info({ partition, replica, term: this.lease.currentTerm, applied: store.appliedLogSequence() }, "leading");
  }

  /** Counts a transaction step this leader answered (`counters().transactions`); other requests are not counted. */
  private countTransaction(type: PartitionRequest["type"]): void {
    if (type === "prepare") this.transactions.prepared += 1;
    else if (type === "commit") this.transactions.committed += 1;
    else if (type === "abort") this.transactions.aborted += 1;
    else if (type === "apply") this.transactions.applied += 1;
  }

  /** Resolves intents left in doubt while this leadership lasts (cluster/nats/intent-resolver.ts). */
  private startResolver(leadership: Leadership): void {
    const { store, partition, nc, cluster, replicas } = this.options;
    const resolver = new IntentResolver({
      partition,
      pending: () => store.pendingIntents(),
      decisions: () => {
        const opening = (this.decisionLog ??= KvDecisionLog.open({ nc, cluster, replicas }));
        opening.catch(() => {
          if (this.decisionLog === opening) this.decisionLog = undefined;
        });
        return opening;
      },
      apply: async (outcome, txid) => {
        if (!leadership.current) throw new Error("no longer leading");
        const reply = await leadership.actor.handle({ type: outcome, txid });
        if (!reply.ok) throw new Error(`${reply.code}: ${reply.message}`);
        this.countTransaction(outcome);
      },
      timeoutMs: this.options.intentTimeoutMs,
      clockMs: () => this.clock.monotonicMs(),
      logger: this.options.logger,
    });
    leadership.cancelResolver = this.clock.every(resolver.intervalMs, () => {
      if (!leadership.current) return;
      const work = resolver.sweep().then(() => undefined);
      leadership.inflight.add(work);
      void work.finally(() => leadership.inflight.delete(work));
    });
  }

  /** While this leadership lasts, snapshots the store when the policy says one is due (cluster/nats/snapshots.ts). */
  private startSnapshots(leadership: Leadership): void {
    const policy = this.options.snapshots ?? DEFAULT_SNAPSHOT_POLICY;
    if (policy === "off") return;
    let ticks = 0;
    leadership.cancelSnapshots = this.clock.every(SNAPSHOT_CHECK_MS, () => {
      ticks += 1;
      if (!leadership.current || this.stopped || this.snapshotRun !== undefined) return;
      const bytes = ticks % SNAPSHOT_BYTES_CHECK_EVERY === 0;
      if (!bytes && this.latestSnapshot !== undefined && this.appliedSequence() - this.latestSnapshot < policy.everyEntries) return;
      void this.run(() => this.snapshotIfDue(policy)).catch((cause: unknown) => {
        this.options.logger.warn({ partition: this.options.partition, err: String(cause) }, "snapshot failed; trying again later");
      });
    });
  }

  /** Runs a snapshot, one at a time: a second call while one runs waits for it and answers its result. */
  private run(take: () => Promise<SnapshotTaken | undefined>): Promise<SnapshotTaken | undefined> {
    if (this.snapshotRun !== undefined) return this.snapshotRun;
    const running = take().finally(() => {
      if (this.snapshotRun === running) this.snapshotRun = undefined;
    });
    this.snapshotRun = running;
    return running;
  }

  private openSnapshots(): Promise<PartitionSnapshots> {
    const { nc, cluster, partition, replicas, scratchDirectory } = this.options;
    const opening = (this.snapshots ??= PartitionSnapshots.open({ nc, cluster, partition, replicas, scratch: scratchDirectory }));
    opening.catch(() => {
      if (this.snapshots === opening) this.snapshots = undefined;
    });
    return opening;
  }

  /** A snapshot when `everyEntries` entries, or about `everyBytes` of log, were applied since the latest one. */
  private async snapshotIfDue(policy: SnapshotPolicy): Promise<SnapshotTaken | undefined> {
    const { nc, cluster, partition } = this.options;
    // Read without creating the bucket: a partition whose log never grew enough has none.
    this.latestSnapshot ??= (await latestSnapshot(nc, cluster, partition))?.sequence ?? 0;
    const since = this.appliedSequence() - this.latestSnapshot;
    if (since <= 0) return undefined;
    if (since < policy.everyEntries) {
      const state = (await this.log.jsm.streams.info(this.log.stream)).state;
      if (state.messages === 0 || (state.bytes * Math.min(since, state.messages)) / state.messages < policy.everyBytes) return undefined;
    }
    return this.snapshot(await this.openSnapshots(), policy);
  }

  private async snapshot(snapshots: PartitionSnapshots, policy: SnapshotPolicy): Promise<SnapshotTaken | undefined> {
    const taken = await snapshots.take(this.options.store, policy, () => this.stopped);
    if (taken !== undefined) {
      this.latestSnapshot = taken.sequence;
      const { partition, replica, logger } = this.options;
      logger.info({ partition, replica, sequence: taken.sequence, bytes: taken.bytes, copyMs: Math.round(taken.copyMs), uploadMs: Math.round(taken.uploadMs), purged: taken.purged }, "snapshot taken");
    }
    return taken;
  }

  /**
   * Snapshots this replica's store now, whatever the policy says (`keep` as configured): an operator's or a
   * benchmark's request. Any replica may: its store holds a committed prefix of the log. Undefined when a snapshot
   * at its applied sequence exists.
   *
   * A run already under way is waited for and answered only if it took a snapshot holding everything applied when
   * this was called: the leader's periodic check (`snapshotIfDue`) shares `run`, and most of its runs take none.
   */
  async snapshotNow(): Promise<SnapshotTaken | undefined> {
    if (this.stopped) throw new SilkError("partition_unavailable", "the replica is stopped");
    const policy = this.options.snapshots === "off" || this.options.snapshots === undefined ? DEFAULT_SNAPSHOT_POLICY : this.options.snapshots;
    const applied = this.appliedSequence();
    for (let running = this.snapshotRun; running !== undefined; running = this.snapshotRun) {
      const taken = await running.catch(() => undefined);
      if (taken !== undefined && taken.sequence >= applied) return taken;
    }
    return this.run(async () => this.snapshot(await this.openSnapshots(), policy));
  }

  /** Called synchronously by the lease: stop serving at once, then clean up in order. */
  private loseLeadership(reason: string): void {
    const leadership = this.leadership;
    if (leadership === undefined) return;
    leadership.current = false;
    leadership.subscription?.unsubscribe();
    void this.queue(() => this.stepDown(reason, false));
  }

  private async stepDown(reason: string, release: boolean): Promise<void> {
    const leadership = this.leadership;
    if (leadership === undefined) return;
    leadership.current = false;
    leadership.subscription?.unsubscribe();
    leadership.cancelResolver?.();
    leadership.cancelSnapshots?.();
    await Promise.allSettled([...leadership.inflight]);
    await leadership.actor.stop();
    this.leadership = undefined;
    this.leaderships.ended += 1;
    if (release) await this.lease.release();
    else this.lease.forget();
    this.options.logger.info({ partition: this.options.partition, replica: this.options.replica, reason, applied: this.appliedSequence() }, "stepped down");
    if (!this.stopped) await this.startFollowing();
  }

  // ---- requests ----

  private markCurrent(asOf: number): void {
    if (asOf > this.currentAsOf) this.currentAsOf = asOf;
  }

  private async answerStale({ request, requestId, maxStalenessMs = DEFAULT_MAX_STALENESS_MS }: RequestEnvelope): Promise<PartitionReply> {
    if (!isReadRequest(request)) {
      return { ok: false, code: "not_leader", message: `a stale read replica answers reads only, not ${request.type}` };
    }
    if (this.stalenessMs() > maxStalenessMs) {
      await (this.freshnessCheck ??= this.checkFreshness().finally(() => (this.freshnessCheck = undefined)));
      const staleness = this.stalenessMs();
      if (staleness > maxStalenessMs) {
        const behind = staleness === Infinity ? "has not yet been current" : `was last current ${Math.round(staleness)} ms ago`;
        return { ok: false, code: "not_leader", message: `this replica ${behind}, beyond the read's bound of ${maxStalenessMs} ms: ask the leader` };
      }
    }
    return this.staleActor.handle(request, requestId);
  }

  /** Asks the log's last sequence (at instant Q) and, if this replica applies it within FRESHNESS_WAIT_MS, is current as of Q. */
  private async checkFreshness(): Promise<void> {
    const askedAt = this.clock.monotonicMs();
    let cancel: CancelTimer | undefined;
    let last: number;
    try {
      last = await Promise.race([
        this.log.lastSequence(),
        new Promise<never>((_, reject) => (cancel = this.clock.setTimer(FRESHNESS_ASK_TIMEOUT_MS, () => reject(new Error("no answer"))))),
      ]);
    } catch {
      return; // JetStream out of reach: this replica cannot tell how current it is
    } finally {
      cancel?.();
    }
    const deadline = this.clock.monotonicMs() + FRESHNESS_WAIT_MS;
    while (this.appliedSequence() < last && !this.stopped && this.clock.monotonicMs() < deadline) await sleep(this.clock, APPLIED_POLL_MS);
    if (this.appliedSequence() >= last) this.markCurrent(askedAt);
  }

  private async answer(message: Msg, handle: (envelope: RequestEnvelope) => Promise<PartitionReply>): Promise<void> {
    let reply: PartitionReply;
    try {
      reply = await handle(decodeRequest(message.data));
    } catch (cause) {
      const error = asSilkError(cause);
      reply = { ok: false, code: error.code, message: error.message };
    }
    try {
      this.respond(message, encodeReply(reply));
    } catch (cause) {
      this.options.logger.warn({ err: String(cause) }, "could not send a reply");
    }
  }

  /**
   * A reply that fits goes as one message; a larger one as parts: the first with the reply, headed with their count
   * and where to fetch the rest (kept in pendingReplies). When the replica cannot keep them, the reply is that error.
   */
  private respond(message: Msg, bytes: Uint8Array): void {
    const limit = messageBytesMax(this.options.nc);
    if (bytes.length <= limit) {
      message.respond(bytes);
      return;
    }
    const parts = splitParts(bytes, limit);
    let id: string;
    try {
      id = this.pendingReplies.keep(parts);
    } catch (cause) {
      const error = asSilkError(cause);
      message.respond(encodeReply({ ok: false, code: error.code, message: error.message }));
      return;
    }
    const head = headers();
    head.set(PARTS_COUNT_HEADER, String(parts.length));
    head.set(PARTS_SUBJECT_HEADER, this.partsSubject);
    head.set(PARTS_ID_HEADER, id);
    message.respond(parts[0], { headers: head });
  }

  /** A fetch of part `<index>` of reply `<id>` (the request's text `<id> <index>`); a part not held answers "gone". */
  private answerPart(message: Msg): void {
    const [id, index] = message.string().split(" ");
    const part = this.pendingReplies.take(id ?? "", Number(index));
    if (part !== undefined) {
      message.respond(part);
      return;
    }
    const head = headers();
    head.set(PARTS_GONE_HEADER, "1");
    message.respond(new Uint8Array(0), { headers: head });
  }
}
