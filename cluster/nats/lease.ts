/**
 * A partition's leader lease (docs/REPLICATION.md), or the writer coordinator's (`subjects.coordinatorLeaseKey`,
 * runtime/remote.ts): key `subjects.leaseKey(p)` of the KV bucket
 * `subjects.leaseBucket`, whose entries expire `ttlMs` after they were written (the bucket's max age), holding
 * `{ replica, term }` as JSON.
 *
 * - Acquire: `create()` (fails while another replica's entry lives), with the term one above the highest this
 *   replica saw: its own, the live entry's, and the last one recorded in the terms bucket (`subjects.termBucket`, no
 *   expiry; the new holder records its term there once it holds the lease). Without that record, a replica elected
 *   after its predecessor crashed (whose entry had expired) would start again at term 1.
 * - Renew: every ttl/3, `update()` at the revision held; the new revision lives ttl again.
 * - Held: only until `LEASE_VALID_FRACTION` of the TTL after the last renewal that succeeded was *sent* (the server
 *   wrote it no earlier, so it expires no earlier than ttl after that): a leader stops serving well before another
 *   replica can acquire the key.
 * - Lost: a renewal refused (the revision moved), or no renewal succeeded in time: `onLost` is called at once and
 *   synchronously, before anything else happens to the lease.
 * - Release (a leader that stops): delete at the revision held, so a follower acquires at once.
 *
 * Invariant: `held()` is true only while this replica's entry certainly is the key's live entry.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { realClock, type CancelTimer, type Clock } from "../../platform/clock.js";
import { creatingRacing, whileUnanswered } from "./partition-log.js";
import { subjects } from "./subjects.js";

/** The part of the TTL after a renewal during which the lease counts as held. */
export const LEASE_VALID_FRACTION = 0.75;
export const DEFAULT_LEASE_TTL_MS = 3_000;

export interface LeaseOptions {
  readonly nc: NatsConnection;
  readonly cluster: string;
  /** The partition whose leader lease this is; undefined for the cluster's writer-coordinator lease (`key`). */
  readonly partition?: number;
  /** The key in the lease bucket; default the partition's (`subjects.leaseKey`). */
  readonly key?: string;
  /** Who holds it: a replica's name, or a coordinator's. */
  readonly replica: string;
  readonly replicas: number;
  /** The bucket's entry lifetime; undefined: whatever the existing bucket has (DEFAULT_LEASE_TTL_MS for a new one). */
  readonly ttlMs?: number;
  readonly logger: Logger;
  /** Called synchronously when a held lease is lost (not on release). */
  readonly onLost: (reason: string) => void;
  /** Time and timers (validity, the renewal ticks); default realClock. */
  readonly clock?: Clock;
}

export interface LeaseValue {
  readonly replica: string;
  readonly term: number;
}

export class PartitionLease {
  private readonly key: string;
  private revision: number | undefined;
  private validUntil = 0;
  private lastRenewSent = 0;
  private renewing = false;
  private cancelTicks: CancelTimer | undefined;
  private term = 0;
  private readonly clock: Clock;
  /** Renewals since the lease was opened, by outcome (`silk partition`'s `/metrics`). */
  private readonly renewalCounts = { renewed: 0, failed: 0 };

  private constructor(
    private readonly kv: KV,
    private readonly terms: KV,
    private readonly options: LeaseOptions & { readonly ttlMs: number },
  ) {
    this.key = options.key ?? subjects.leaseKey(options.partition ?? 0);
    this.clock = options.clock ?? realClock;
  }

  /** Binds to the lease bucket, creating it when absent. */
  static async open(options: LeaseOptions): Promise<PartitionLease> {
    const kvm = new Kvm(options.nc);
    const clock = options.clock ?? realClock;
    const kv = await creatingRacing(() => kvm.create(subjects.leaseBucket(options.cluster), { history: 1, ttl: options.ttlMs ?? DEFAULT_LEASE_TTL_MS, replicas: options.replicas }), undefined, clock);
    // An existing bucket keeps the lifetime it was made with: renewals must follow that one.
    const ttlMs = options.ttlMs ?? (await whileUnanswered(() => kv.status(), clock)).ttl;
    const terms = await creatingRacing(() => kvm.create(subjects.termBucket(options.cluster), { history: 1, replicas: options.replicas }), undefined, clock);
    return new PartitionLease(kv, terms, { ...options, ttlMs });
  }

  /** The current holder, if any (a follower's view; may be stale by the time it returns). */
  async holder(): Promise<LeaseValue | undefined> {
    const entry = await this.kv.get(this.key);
    if (entry === null || entry.operation !== "PUT") return undefined;
    return entry.json<LeaseValue>();
  }

  /** The lifetime of the lease's entries (renewals come every third of it). */
  get ttlMs(): number {
    return this.options.ttlMs;
  }

  held(): boolean {
    return this.revision !== undefined && this.clock.monotonicMs() < this.validUntil;
  }

  get currentTerm(): number {
    return this.term;
  }

  /**
   * Renewals sent since the lease was opened: `renewed` those written, `failed` those refused (the lease then is
   * lost) or unanswered (retried on the next tick).
   */
  renewals(): { readonly renewed: number; readonly failed: number } {
    return { ...this.renewalCounts };
  }

  /** Tries to take the lease; true when this replica now holds it (and renews it until lost or released). */
  async tryAcquire(): Promise<boolean> {
    if (this.revision !== undefined) return this.held();
    const previous = await this.holder().catch(() => undefined);
    // Only when no entry lives (the create may succeed) is the recorded term worth a read.
    const recorded = previous === undefined ? await this.recordedTerm().catch(() => 0) : 0;
    const term = Math.max(this.term, previous?.term ?? 0, recorded) + 1;
    const sent = this.clock.monotonicMs();
    try {
      this.revision = await this.kv.create(this.key, JSON.stringify({ replica: this.options.replica, term } satisfies LeaseValue));
    } catch {
      return false; // held by another replica, or NATS did not answer: either way not ours
    }
    this.term = term;
    this.renewed(sent);
    this.cancelTicks = this.clock.every(Math.max(10, Math.floor(this.options.ttlMs / 10)), () => this.tick());
    // Off the acquisition's path (a slow bucket must not delay leading); lost with a crash right here, the next term
    // repeats this number, which only shows in `silk cluster status` (terms fence nothing).
    void this.terms.put(this.key, JSON.stringify({ term })).catch((cause: unknown) => {
      this.options.logger.warn({ err: String(cause), partition: this.options.partition, term }, "could not record the lease's term");
    });
    return true;
  }

  /** The last term recorded for this lease (0: none yet). */
  private async recordedTerm(): Promise<number> {
    const entry = await this.terms.get(this.key);
    if (entry === null || entry.operation !== "PUT") return 0;
    const term = (entry.json<{ term?: unknown }>()).term;
    return typeof term === "number" && Number.isSafeInteger(term) && term > 0 ? term : 0;
  }

  private renewed(sentAt: number): void {
    this.lastRenewSent = sentAt;
    this.validUntil = sentAt + this.options.ttlMs * LEASE_VALID_FRACTION;
  }

  private tick(): void {
    if (this.revision === undefined) return;
    const now = this.clock.monotonicMs();
    if (now >= this.validUntil) return this.lose(`no renewal succeeded within ${Math.round(this.options.ttlMs * LEASE_VALID_FRACTION)} ms`);
    if (this.renewing || now - this.lastRenewSent < this.options.ttlMs / 3) return;
    void this.renew();
  }

  private async renew(): Promise<void> {
    const revision = this.revision;
    if (revision === undefined) return;
    this.renewing = true;
    const sent = this.clock.monotonicMs();
    try {
      const next = await this.kv.update(this.key, JSON.stringify({ replica: this.options.replica, term: this.term } satisfies LeaseValue), revision, Math.floor(this.options.ttlMs / 4));
      this.renewalCounts.renewed += 1;
      if (this.revision === revision) {
        this.revision = next;
        this.renewed(sent);
      }
    } catch (cause) {
      this.renewalCounts.failed += 1;
      if (this.revision !== revision) return;
      if (cause instanceof JetStreamApiError && (cause.code === JetStreamApiCodes.StreamWrongLastSequence || cause.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)) {
        this.lose("the lease entry moved (another replica holds it)");
      } else {
        // Unknown outcome: if it was written, the revision moved and the next renewal is refused; the validity
        // window is what keeps this safe. Retry on the next tick.
        this.options.logger.warn({ err: String(cause), partition: this.options.partition }, "lease renewal failed");
        this.lastRenewSent = 0;
      }
    } finally {
      this.renewing = false;
    }
  }

  private lose(reason: string): void {
    this.forget();
    this.options.logger.warn({ partition: this.options.partition, replica: this.options.replica, reason }, "lease lost");
    this.options.onLost(reason);
  }

  /** Stops renewing without touching the key (it expires by itself). */
  forget(): void {
    this.cancelTicks?.();
    this.cancelTicks = undefined;
    this.revision = undefined;
    this.validUntil = 0;
  }

  /** Gives the lease up: stops renewing and deletes the key at the revision held (so a follower acquires at once). */
  async release(): Promise<void> {
    const revision = this.revision;
    this.forget();
    if (revision === undefined) return;
    try {
      await this.kv.delete(this.key, { previousSeq: revision });
    } catch (cause) {
      this.options.logger.warn({ err: String(cause), partition: this.options.partition }, "lease release failed (it expires by itself)");
    }
  }
}
