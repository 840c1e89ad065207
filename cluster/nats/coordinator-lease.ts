/**
 * One writer coordinator per cluster (docs/CLUSTER.md): the writer coordinator holds the lease key
 * `subjects.coordinatorLeaseKey` of the cluster's lease bucket (cluster/nats/lease.ts, the partitions' leases'
 * mechanism) for as long as it serves. Two writer coordinators would each run their transactions under their own
 * readers/writer lock, so neither would see the other's: an issue-16 test through two of them created money.
 *
 * - Start: tries to take the lease for up to two lifetimes and a second (a crashed writer's entry expires by then);
 *   a live holder after that refuses the start: `writer_locked`, naming it.
 * - Serving: `gate()` resolves once the lease is held and the coordinator recovered after taking it; the
 *   coordinator awaits it before every write (after its turn at the write lock came).
 * - Lost (renewals failed: NATS out of reach, or this process's event loop held past the lease's validity by a long
 *   synchronous job): the lease is taken again as soon as it can be, and before writes resume `onRegained` runs (the
 *   coordinator's 2PC recovery: another writer may have served in between). A write meanwhile waits for that, up to
 *   two lease lifetimes and a second (a lost entry of its own expires by then) and its own deadline, and is refused
 *   (`partition_unavailable`) only if the lease is not back by then: another writer holds it, or NATS is still out
 *   of reach.
 * - Close: the lease is released, so the next writer starts at once.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { SilkError } from "../../protocol/errors.js";
import { realClock, sleep, type Clock } from "../../platform/clock.js";
import { PartitionLease } from "./lease.js";
import { subjects } from "./subjects.js";

export interface CoordinatorLeaseOptions {
  readonly nc: NatsConnection;
  readonly cluster: string;
  /** The lease bucket's replicas (as the partitions' leases). */
  readonly replicas: number;
  readonly logger: Logger;
  /** Runs after the lease was taken again, before writes resume (the coordinator's recovery). */
  readonly onRegained: () => Promise<unknown>;
  /** Time and timers (the lease's, and the waits for it); default realClock. */
  readonly clock?: Clock;
}

/** How often a waiting write looks again whether the lease is back. */
const REGAIN_POLL_MS = 50;

export class CoordinatorLease {
  /** False from a loss until the lease is taken again and `onRegained` finished. */
  private ready = true;
  private lostReason = "";
  private regaining: Promise<void> | undefined;
  private closed = false;
  private readonly clock: Clock;

  private constructor(
    private readonly lease: PartitionLease,
    private readonly options: CoordinatorLeaseOptions,
    readonly holder: string,
  ) {
    this.clock = options.clock ?? realClock;
  }

  /** Takes the writer lease, waiting out a crashed holder's entry; `writer_locked` while a live writer holds it. */
  static async acquire(options: CoordinatorLeaseOptions): Promise<CoordinatorLease> {
    const holder = `coordinator ${hostname()} pid ${process.pid} ${randomBytes(3).toString("hex")}`;
    let self: CoordinatorLease | undefined;
    const lease = await PartitionLease.open({
      nc: options.nc,
      cluster: options.cluster,
      key: subjects.coordinatorLeaseKey,
      replica: holder,
      replicas: options.replicas,
      logger: options.logger,
      onLost: (reason) => self?.lost(reason),
      clock: options.clock,
    });
    self = new CoordinatorLease(lease, options, holder);
    const clock = options.clock ?? realClock;
    const deadline = clock.monotonicMs() + 2 * lease.ttlMs + 1_000;
    for (;;) {
      if (await lease.tryAcquire()) return self;
      if (clock.monotonicMs() > deadline) break;
      await sleep(clock, Math.max(10, Math.floor(lease.ttlMs / 6)));
    }
    const other = await lease.holder().catch(() => undefined);
    throw new SilkError(
      "writer_locked",
      `cluster ${options.cluster} already has a writer coordinator (${other?.replica ?? "its lease is held"}); a cluster has one: stop that one, or connect this one read-only`,
    );
  }

  /**
   * Who holds the writer lease now (undefined: nobody): a coordinator of the "many" mode refuses to serve beside a
   * single writer coordinator, whose own lock would not see its transactions.
   */
  static async currentHolder(options: Omit<CoordinatorLeaseOptions, "onRegained">): Promise<string | undefined> {
    const lease = await PartitionLease.open({
      nc: options.nc,
      cluster: options.cluster,
      key: subjects.coordinatorLeaseKey,
      replica: "",
      replicas: options.replicas,
      logger: options.logger,
      onLost: () => undefined,
      clock: options.clock,
    });
    return (await lease.holder())?.replica;
  }

  /**
   * Resolves once this coordinator may write: at once while it holds the lease, else when it holds it again, within
   * two lease lifetimes and a second and the caller's `waitMs`; `partition_unavailable` after that, `closed` once
   * released.
   */
  async gate(waitMs = Infinity): Promise<void> {
    const until = this.clock.monotonicMs() + Math.min(waitMs, 2 * this.lease.ttlMs + 1_000);
    for (;;) {
      if (this.closed) throw new SilkError("closed", "the database handle was closed");
      if (this.ready && this.lease.held()) return;
      if (this.clock.monotonicMs() >= until) break;
      await sleep(this.clock, REGAIN_POLL_MS);
    }
    throw new SilkError("partition_unavailable", `this coordinator lost the cluster's writer lease (${this.lostReason || "renewals are late"}) and has not taken it back; writes resume once it holds it again`);
  }

  /** Releases the lease (the next writer coordinator starts at once). */
  async release(): Promise<void> {
    this.closed = true;
    await this.regaining?.catch(() => undefined);
    await this.lease.release();
  }

  private lost(reason: string): void {
    this.ready = false;
    this.lostReason = reason;
    this.options.logger.warn({ cluster: this.options.cluster, reason }, "writer coordinator lease lost; writes are refused until it is taken again");
    this.regaining ??= this.regain().finally(() => (this.regaining = undefined));
  }

  private async regain(): Promise<void> {
    while (!this.closed) {
      if (await this.lease.tryAcquire().catch(() => false)) {
        try {
          await this.options.onRegained();
          this.ready = true;
          this.options.logger.info({ cluster: this.options.cluster }, "writer coordinator lease taken again; writes resume");
          return;
        } catch (cause) {
          this.options.logger.warn({ err: String(cause) }, "recovery after taking the writer lease again failed; trying again");
        }
      }
      await sleep(this.clock, Math.max(10, Math.floor(this.lease.ttlMs / 3)));
    }
  }
}
