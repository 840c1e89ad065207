/**
 * A read-only handle on a bucket database follows the writer (docs/STORAGE.md, "Read-only followers"): every
 * `intervalMs` it reads the segments after the last one it applied and applies them to its cache.
 *
 * Never a partial transaction: a segment is one object, whole or absent; segments are applied under the coordinator's
 * exclusive lock (no read runs across the change); and a run of segments is applied only up to the last segment after
 * which no partition holds a prepared, undecided intent, so a two-partition transaction whose commit spans two
 * segments becomes visible on both partitions at once. The segments after that point wait, read, for the next round.
 *
 * `lagMs` is how long ago the follower last held everything the bucket held: the start of the last poll that found
 * nothing after what it applied. While the writer ships steadily it stays near the interval plus one read.
 *
 * Behind the retention (its next segment deleted: it stalled longer than `retentionMs`), a follower given `restore`
 * restores itself while it serves: the newest snapshot is downloaded into a fresh copy beside the cache and caught up
 * with the segments after it, to a point without an undecided transaction, while reads go on on the old copy; then,
 * under the coordinator's exclusive lock (the reads in flight finish first, on the old copy), the copy is installed in
 * place of the old one, and every later read sees it. It then follows from the copy's position.
 */
import { SilkError, asSilkError } from "../protocol/errors.js";
import { readManifest } from "./bucket-manifest.js";
import type { PartitionStore } from "../node/store/partition-store.js";
import type { ObjectStore } from "./object-store.js";
import { applySegment, readSegmentsAfter } from "./bucket-storage.js";
import type { Segment } from "./segment-log.js";

export interface FollowerStatus {
  /** The last segment applied. */
  readonly position: number;
  /** Milliseconds since the follower last held everything in the bucket. */
  readonly lagMs: number;
  /** Segments read and waiting for the rest of a transaction. */
  readonly waitingSegments: number;
  /** The last poll's failure (the store out of reach, say); the follower keeps polling. */
  readonly lastError?: string;
  /**
   * The segment after `position` was deleted by the bucket's retention (the follower fell further behind than
   * `retentionMs`) and the follower has not restored itself yet (it does at its next poll; without `restore`, at its
   * reopen).
   */
  readonly behindRetention?: boolean;
  /** How many times this follower restored itself from a newer snapshot while it served. */
  readonly restores: number;
}

/**
 * A copy of the database restored from the newest snapshot beside the one the follower serves (runtime/embedded.ts
 * makes it): open, holding everything up to `position`, read by nobody yet.
 */
export interface RestoredCopy {
  readonly stores: readonly PartitionStore[];
  /** The snapshot's segment. */
  readonly position: number;
  /** Puts the copy in place of the stores served now; called with no read in flight (the exclusive lock). */
  install(position: number): void;
  /** After `install`, outside the lock: the replaced copy closed and removed. */
  retire(): Promise<void>;
  /** Instead of `install` (a failure): the copy closed and removed. */
  discard(): Promise<void>;
}

export interface BucketFollowerOptions {
  readonly store: ObjectStore;
  readonly stores: readonly PartitionStore[];
  /** The last segment the cache holds whole. */
  readonly position: number;
  readonly intervalMs: number;
  /** Runs the change with no read in flight (Coordinator.exclusive). */
  readonly exclusive: (work: () => Promise<void>) => Promise<void>;
  /** After each applied run of segments, with the new position. */
  readonly onApplied?: (position: number) => void;
  /** Makes a restored copy, for a follower behind the retention; absent: such a follower stops (its reopen restores). */
  readonly restore?: () => Promise<RestoredCopy>;
  readonly clockMs?: () => number;
}

export class BucketFollower {
  private position: number;
  private stores: readonly PartitionStore[];
  private restores = 0;
  private readonly waiting: Segment[] = [];
  private caughtUpAtMs: number;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private stopped = false;
  private lastError: string | undefined;
  private behindRetention = false;
  private readonly clockMs: () => number;

  constructor(private readonly options: BucketFollowerOptions) {
    this.position = options.position;
    this.stores = options.stores;
    this.clockMs = options.clockMs ?? (() => performance.now());
    this.caughtUpAtMs = this.clockMs();
  }

  status(): FollowerStatus {
    return {
      position: this.position,
      lagMs: Math.max(0, Math.round(this.clockMs() - this.caughtUpAtMs)),
      waitingSegments: this.waiting.length,
      ...(this.lastError === undefined ? {} : { lastError: this.lastError }),
      ...(this.behindRetention ? { behindRetention: true } : {}),
      restores: this.restores,
    };
  }

  /** One round: reads what is new and applies it up to a point without an undecided transaction. */
  async poll(): Promise<void> {
    if (this.polling !== undefined) return this.polling;
    this.polling = this.round().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async round(): Promise<void> {
    const startedAtMs = this.clockMs();
    const after = this.waiting.length === 0 ? this.position : this.waiting[this.waiting.length - 1]!.seq;
    const fresh = await readSegmentsAfter(this.options.store, after);
    this.waiting.push(...fresh);
    const cut = this.cleanCut();
    if (cut > 0) {
      const run = this.waiting.splice(0, cut);
      await this.options.exclusive(async () => {
        for (const segment of run) await applySegment(segment, this.stores, undefined);
      });
      this.position = run[run.length - 1]!.seq;
      this.options.onApplied?.(this.position);
    }
    if (fresh.length === 0) {
      // Nothing new: either the writer is idle, or the next segment was deleted by retention (then never again).
      const current = await readManifest(this.options.store);
      if (current !== undefined && current.manifest.retainFrom > after + 1) {
        this.behindRetention = true;
        if (this.options.restore === undefined) {
          throw new SilkError(
            "storage_unavailable",
            `this follower is at segment ${after} and the bucket keeps segments from ${current.manifest.retainFrom} on (retention deleted the ones between): reopen it, which restores the newest snapshot`,
          );
        }
        await this.restoreBeside(this.options.restore);
        return;
      }
      if (this.waiting.length === 0) this.caughtUpAtMs = startedAtMs;
    }
  }

  /** Behind the retention: a copy restored beside the served one, caught up, then installed in its place. */
  private async restoreBeside(restore: () => Promise<RestoredCopy>): Promise<void> {
    const copy = await restore();
    let position: number;
    try {
      // Nobody reads the copy yet: its catch-up needs no lock. It stops at a point without an undecided transaction.
      const catchUp = new BucketFollower({ store: this.options.store, stores: copy.stores, position: copy.position, intervalMs: this.options.intervalMs, exclusive: (work) => work() });
      await catchUp.poll();
      position = catchUp.position;
      await this.options.exclusive(async () => {
        copy.install(position);
        this.stores = copy.stores;
        this.position = position;
        this.waiting.length = 0;
      });
    } catch (cause) {
      await copy.discard();
      throw cause;
    }
    this.behindRetention = false;
    this.restores += 1;
    this.options.onApplied?.(this.position);
    await copy.retire();
  }

  /** How many of the waiting segments can be applied: up to the last one after which no intent is undecided. */
  private cleanCut(): number {
    const open = new Set<string>();
    this.stores.forEach((store, partition) => {
      for (const txid of store.pendingIntents()) open.add(`${partition}:${txid}`);
    });
    let cut = 0;
    this.waiting.forEach((segment, index) => {
      for (const record of segment.records) {
        if ("decision" in record) continue;
        const { entry, partition } = record;
        if (entry.type === "prepare") open.add(`${partition}:${entry.txid}`);
        else if (entry.type === "commit" || entry.type === "abort") open.delete(`${partition}:${entry.txid}`);
      }
      if (open.size === 0) cut = index + 1;
    });
    return cut;
  }

  /** Polls every interval until stopped; a failed round is reported in `status()` and retried at the next. */
  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      this.poll()
        .then(() => (this.lastError = undefined))
        .catch((cause: unknown) => (this.lastError = asSilkError(cause).message))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.options.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.options.intervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.polling?.catch(() => undefined);
  }
}
