/**
 * One replica of one partition in a cluster (docs/REPLICATION.md): its own LMDB store kept equal to the
 * partition's JetStream log, as leader or follower.
 *
 * - Follower: follows the log from its applied sequence + 1, applying each entry in order (cluster/partition-log.ts
 *   `applyAt`); tries to take the lease every ttl/10.
 * - Becoming leader (lease taken): catches up to the stream's last sequence, stops following, fences its IDs
 *   (`store.fenceIds()`), then subscribes to `subjects.leader` and serves with a writable PartitionActor whose
 *   WriteLog is a guarded LeaderWriteLog; starts the index builds (their chunks go through the log too).
 * - Stepping down (lease lost, an append refused or of unknown outcome, `stop()`): unsubscribes first, then waits
 *   for the requests in flight, stops the actor, and follows the log again (from what it applied).
 * - A leader resolves two-phase-commit intents left prepared longer than `intentTimeoutMs` (cluster/intent-resolver.ts):
 *   it asks the replicated decision log (presumed abort) and applies the outcome through its log, so a crashed
 *   coordinator's transactions are resolved even if no coordinator comes back.
 * - Every replica answers stale reads on `subjects.stale` (queue group STALE_QUEUE) from its applied state with a
 *   read-only actor; anything but a read gets `not_leader`.
 *
 * Invariants: at most one of (follower loop, leader actor) applies entries to the store at any time; an entry is
 * applied only at its own sequence, once (`appliedLogSequence` only grows, in the same LMDB transaction). A
 * failure to apply an entry other than a user error (the entry's outcome everywhere) stops the replica: it logs it
 * and calls `onFatal` (default: process exit code 1).
 */
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import type { Logger } from "pino";
import type { Embedder } from "../protocol/embedding.js";
import { asSilkError } from "../protocol/errors.js";
import type { PartitionReply, PartitionRequest } from "../protocol/messages.js";
import type { Schema } from "../protocol/schema.js";
import { PartitionActor } from "../node/partition-actor.js";
import type { PartitionStore } from "../node/partition-store.js";
import type { DecisionStore } from "./decision-log.js";
import { IntentResolver } from "./intent-resolver.js";
import { KvDecisionLog } from "./kv-decision-log.js";
import { DEFAULT_LEASE_TTL_MS, PartitionLease } from "./lease.js";
import { decodeRequest, encodeReply } from "./nats-wire.js";
import { LeaderWriteLog, PartitionLog, applyAt, type LogFollower } from "./partition-log.js";
import { STALE_QUEUE, subjects } from "./subjects.js";

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
}

/** Requests a follower answers from its applied state. */
const STALE_READS = new Set<PartitionRequest["type"]>(["read_records", "read_adjacency", "read_label", "read_all", "read_index", "vector_search", "text_search", "index_statuses"]);

/** How long a new leader waits to catch up with the log before it gives the lease back. */
const CATCH_UP_TIMEOUT_MS = 30_000;

interface Leadership {
  readonly actor: PartitionActor;
  readonly log: LeaderWriteLog;
  subscription: Subscription | undefined;
  current: boolean;
  readonly inflight: Set<Promise<void>>;
  resolverTimer: NodeJS.Timeout | undefined;
}

export class PartitionReplica {
  private leadership: Leadership | undefined;
  private follower: LogFollower | undefined;
  private stale: Subscription | undefined;
  private readonly staleActor: PartitionActor;
  private electionTimer: NodeJS.Timeout | undefined;
  private electing = false;
  private stopped = false;
  /** Serializes becoming leader, stepping down and stopping. */
  private transition: Promise<void> = Promise.resolve();
  private readonly ttlMs: number;
  /** The replicated decision log, opened when an intent first needs resolving. */
  private decisionLog: Promise<DecisionStore> | undefined;

  private constructor(
    private readonly options: ReplicaOptions,
    private readonly log: PartitionLog,
    private lease: PartitionLease,
  ) {
    this.ttlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
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
        if (error === null) void replica.answer(message.data, (bytes) => message.respond(bytes), (request, requestId) => replica.answerStale(request, requestId));
      },
    });
    replica.electionTimer = setInterval(() => void replica.elect(), Math.max(10, Math.floor(replica.ttlMs / 10)));
    replica.electionTimer.unref();
    void replica.elect();
    return replica;
  }

  get role(): "leader" | "follower" {
    return this.leadership?.current === true ? "leader" : "follower";
  }

  appliedSequence(): number {
    return this.options.store.appliedLogSequence();
  }

  /** A leader gives its lease up (so failover is immediate); every subscription ends. The store stays open. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.electionTimer !== undefined) clearInterval(this.electionTimer);
    this.stale?.unsubscribe();
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
    const follower = this.log.follow(from, (sequence, entry) => {
      const refused = applyAt(store, sequence, entry);
      if (refused !== undefined) logger.warn({ partition, sequence, code: refused.code, message: refused.message }, "log entry refused (applied as a no-op)");
    }, logger);
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
    if (this.stopped || this.electing || this.leadership !== undefined) return;
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
    const deadline = performance.now() + CATCH_UP_TIMEOUT_MS;
    while (store.appliedLogSequence() < last) {
      if (!this.lease.held() || this.stopped || performance.now() > deadline) {
        logger.warn({ partition, replica, applied: store.appliedLogSequence(), last }, "could not catch up in time; giving the lease back");
        await this.lease.release();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
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
    leadership = { actor, log: writeLog, subscription: undefined, current: true, inflight: new Set(), resolverTimer: undefined };
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
        const work = this.answer(message.data, (bytes) => message.respond(bytes), (request, requestId) => actor.handle(request, requestId));
        leadership.inflight.add(work);
        void work.finally(() => leadership.inflight.delete(work));
      },
    });
    actor.startIndexBuilds();
    this.startResolver(leadership);
    logger.info({ partition, replica, term: this.lease.currentTerm, applied: store.appliedLogSequence() }, "leading");
  }

  /** Resolves intents left in doubt while this leadership lasts (cluster/intent-resolver.ts). */
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
      },
      timeoutMs: this.options.intentTimeoutMs,
      logger: this.options.logger,
    });
    leadership.resolverTimer = setInterval(() => {
      if (!leadership.current) return;
      const work = resolver.sweep().then(() => undefined);
      leadership.inflight.add(work);
      void work.finally(() => leadership.inflight.delete(work));
    }, resolver.intervalMs);
    leadership.resolverTimer.unref();
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
    if (leadership.resolverTimer !== undefined) clearInterval(leadership.resolverTimer);
    await Promise.allSettled([...leadership.inflight]);
    await leadership.actor.stop();
    this.leadership = undefined;
    if (release) await this.lease.release();
    else this.lease.forget();
    this.options.logger.info({ partition: this.options.partition, replica: this.options.replica, reason, applied: this.appliedSequence() }, "stepped down");
    if (!this.stopped) await this.startFollowing();
  }

  // ---- requests ----

  private answerStale(request: PartitionRequest, requestId: string | undefined): Promise<PartitionReply> {
    const readPlan = request.type === "execute" && request.plan.requestType === "read";
    if (!readPlan && !STALE_READS.has(request.type)) {
      return Promise.resolve({ ok: false, code: "not_leader", message: `a stale read replica answers reads only, not ${request.type}` });
    }
    return this.staleActor.handle(request, requestId);
  }

  private async answer(data: Uint8Array, respond: (bytes: Uint8Array) => boolean, handle: (request: PartitionRequest, requestId: string | undefined) => Promise<PartitionReply>): Promise<void> {
    let reply: PartitionReply;
    try {
      const envelope = decodeRequest(data);
      reply = await handle(envelope.request, envelope.requestId);
    } catch (cause) {
      const error = asSilkError(cause);
      reply = { ok: false, code: error.code, message: error.message };
    }
    try {
      respond(encodeReply(reply));
    } catch (cause) {
      this.options.logger.warn({ err: String(cause) }, "could not send a reply");
    }
  }
}
