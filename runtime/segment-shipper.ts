/**
 * The writer's side of the bucket log (docs/STORAGE.md, "Durability modes"): every partition actor stages its
 * changes here (node/actor/partition-actor.ts `ShippingLog`), and the coordinator its two-phase-commit decisions
 * (`ShippedDecisionLog`). Staged records go into the open segment; one segment PUT is in flight at a time, and every
 * record staged while it flies joins the next one (group commit: concurrent writers share a PUT). A record is applied
 * to the local cache when it is staged, so the next write runs on it; the runtime acknowledges a write only once
 * `acknowledged()`, asked after the write returned, settles:
 *
 * - `object` durability: once the segments holding everything staged so far are in the bucket.
 * - `local` durability: at once (the record was written to the outbox, an LMDB environment in the cache, flushed,
 *   before it was applied), unless the unshipped backlog is over its bounds (bytes, or the age of the oldest unshipped
 *   record): then once the shipper is back under them. A segment's records leave the outbox once it is stored; a
 *   writer's next open ships what is left (`shipOutbox`).
 *
 * Every segment is written with `If-None-Match: *`. A refusal whose object holds other bytes means another writer took
 * that number: this writer is deposed (`writer_fenced`). After a failure (that, or the store out of reach past its
 * deadline) the shipper takes nothing more and every record not yet stored fails with it; `onFailure` lets the runtime
 * mark its cache untrusted.
 */
import { open as openLmdb, type RootDatabase } from "lmdb";
import { SilkError, asSilkError } from "../protocol/errors.js";
import type { LogEntry } from "../node/store/log-entry.js";
import type { ShippingLog } from "../node/actor/partition-actor.js";
import type { DecisionStore, Outcome } from "../cluster/decision-log.js";
import type { ObjectStore } from "./object-store.js";
import { SEGMENT_RECORDS_MAX, encodeRecord, encodeSegment, recordSequence, segmentName, segmentOf, type SegmentRecord } from "./segment-log.js";

export type Durability = "object" | "local";

/** `local` durability's bounds on what is outside the bucket (docs/STORAGE.md). */
export const UNSHIPPED_BYTES_MAX = 16 * 1024 * 1024;
export const UNSHIPPED_MS_MAX = 1_000;

interface Batch {
  readonly seq: number;
  readonly records: Uint8Array[];
  bytes: number;
  /** When its first record was staged (the clock's milliseconds). */
  firstStagedAtMs: number;
  readonly durable: Promise<void>;
  settle(failure?: SilkError): void;
}

function batch(seq: number): Batch {
  let settle!: (failure?: SilkError) => void;
  const durable = new Promise<void>((resolve, reject) => (settle = (failure) => (failure === undefined ? resolve() : reject(failure))));
  // Rejections reach every awaiting write; a batch nobody awaits (local durability) must not be unhandled.
  durable.catch(() => undefined);
  return { seq, records: [], bytes: 0, firstStagedAtMs: 0, durable, settle };
}

/** The outbox of `local` durability: staged records by log position, with the epoch of the writer that staged them. */
export class Outbox {
  private readonly root: RootDatabase<{ epoch: number; record: Uint8Array }, number>;

  constructor(path: string) {
    // overlappingSync off, as for the partitions (node/store/partition-store.ts): a put returns once it is on disk.
    this.root = openLmdb<{ epoch: number; record: Uint8Array }, number>({ path, overlappingSync: false, encoding: "msgpack" });
  }

  put(sequence: number, epoch: number, record: Uint8Array): void {
    this.root.putSync(sequence, { epoch, record });
  }

  /** Everything left, in log order. */
  entries(): { sequence: number; epoch: number; record: Uint8Array }[] {
    return [...this.root.getRange({})].map(({ key, value }) => ({ sequence: key, epoch: value.epoch, record: value.record }));
  }

  /** Removes the records of segment `seq` (it is in the bucket). */
  removeSegment(seq: number): void {
    this.root.transactionSync(() => {
      for (const key of [...this.root.getKeys({ start: recordSequence(seq, 0), end: recordSequence(seq + 1, 0) })]) this.root.removeSync(key);
    });
  }

  close(): Promise<void> {
    return this.root.close();
  }
}

/**
 * Writes segment `seq` unless it exists. A refusal is fine when the object holds these very bytes (a retried PUT whose
 * first try landed); otherwise another writer took the number: `writer_fenced`.
 */
export async function putSegment(store: ObjectStore, seq: number, bytes: Uint8Array): Promise<void> {
  const answer = await store.putIfAbsent(segmentName(seq), bytes);
  if (answer.outcome === "written") return;
  const existing = await store.get(segmentName(seq));
  if (existing !== undefined && Buffer.compare(Buffer.from(existing.body), Buffer.from(bytes)) === 0) return;
  throw new SilkError("writer_fenced", `another writer wrote ${segmentName(seq)} in bucket ${JSON.stringify(store.bucket)}: this handle was deposed and may no longer write (what it had not stored is not committed)`);
}

/**
 * A writer's open with a non-empty outbox: ships its records as the segments they were staged in, with the epoch that
 * staged them (so a segment that landed before the crash compares equal), and empties it. Answers the last segment.
 */
export async function shipOutbox(store: ObjectStore, outbox: Outbox): Promise<number> {
  const bySegment = new Map<number, { epoch: number; records: Uint8Array[] }>();
  for (const { sequence, epoch, record } of outbox.entries()) {
    const seq = segmentOf(sequence);
    const group = bySegment.get(seq) ?? { epoch, records: [] };
    group.records.push(record);
    bySegment.set(seq, group);
  }
  let last = 0;
  for (const [seq, group] of [...bySegment].sort(([a], [b]) => a - b)) {
    await putSegment(store, seq, encodeSegment(group.epoch, seq, group.records));
    outbox.removeSegment(seq);
    last = seq;
  }
  return last;
}

export interface SegmentShipperOptions {
  readonly store: ObjectStore;
  /** This writer's epoch, written into every segment. */
  readonly epoch: number;
  /** The first free segment number (after this writer's fence segment). */
  readonly nextSeq: number;
  readonly durability: Durability;
  /** `local` durability's outbox. */
  readonly outbox?: Outbox;
  readonly unshippedBytesMax?: number;
  readonly unshippedMsMax?: number;
  readonly clockMs?: () => number;
  /** Called once, with the failure that stopped the shipper. */
  readonly onFailure?: (failure: SilkError) => void;
  /** Called after each stored segment, with its number and size. */
  readonly onShipped?: (seq: number, bytes: number) => void;
}

export class SegmentShipper {
  /** Segments not yet stored, in order; the last one is open for records. */
  private readonly batches: Batch[];
  private running = false;
  private failure: SilkError | undefined;
  private unshippedBytes = 0;
  /** Local durability: writes waiting for the backlog to get under its bounds. */
  private waitingForRoom: { resolve(): void; reject(cause: SilkError): void }[] = [];
  private readonly clockMs: () => number;
  /** The last segment in the bucket. */
  private stored: number;

  constructor(private readonly options: SegmentShipperOptions) {
    if (options.durability === "local" && options.outbox === undefined) throw new SilkError("internal", "internal error (a bug in Silk): local durability without an outbox");
    this.batches = [batch(options.nextSeq)];
    this.stored = options.nextSeq - 1;
    this.clockMs = options.clockMs ?? (() => performance.now());
  }

  /** The manifest epoch this writer ships under (its fence). */
  get epoch(): number {
    return this.options.epoch;
  }

  /** The number of the last segment this writer knows to be in the bucket. */
  storedSegment(): number {
    return this.stored;
  }

  /**
   * The last segment no record can join any more: every record of it and of the segments before it is staged, hence
   * applied to the cache (a snapshot copied from now on holds them all).
   */
  sealedSegment(): number {
    return this.batches[this.batches.length - 1]!.seq - 1;
  }

  /** Bytes of records staged and not yet stored. */
  unshipped(): number {
    return this.unshippedBytes;
  }

  /** What a partition's actor stages through. */
  logFor(partition: number): ShippingLog {
    return { stage: (entry: LogEntry, apply: (sequence: number) => void) => this.stage({ partition, entry }, apply) };
  }

  /** A coordinator decision (already in the local decision log). */
  stageDecision(txid: string, outcome: Outcome, participants: readonly number[]): void {
    this.stage({ decision: { txid, outcome, participants } }, () => undefined);
  }

  /** Settles once everything staged so far is stored (rejects with the shipper's failure). */
  async flush(): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    const last = [...this.batches].reverse().find((pending) => pending.records.length > 0);
    if (last !== undefined) await last.durable;
  }

  /** When a write that returned may be acknowledged, by the durability mode (see the module comment). */
  acknowledged(): Promise<void> {
    if (this.options.durability === "object") return this.flush();
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return this.room();
  }

  private stage(record: SegmentRecord, apply: (sequence: number) => void): void {
    if (this.failure !== undefined) throw this.failure;
    let open = this.batches[this.batches.length - 1]!;
    if (open.records.length >= SEGMENT_RECORDS_MAX) {
      open = batch(open.seq + 1);
      this.batches.push(open);
    }
    const sequence = recordSequence(open.seq, open.records.length);
    const bytes = encodeRecord(record);
    // Local durability: on disk before its effect, so a crash after the effect finds it in the outbox.
    this.options.outbox?.put(sequence, this.options.epoch, bytes);
    let refusal: unknown;
    try {
      apply(sequence);
    } catch (cause) {
      // A user error is the entry's outcome wherever it is applied (no effect): it stays in the log, as the cluster's
      // replicas keep such entries. Anything else (the disk failed) leaves the cache behind the log: stop.
      if (!(cause instanceof SilkError && cause.kind === "user")) {
        this.fail(asSilkError(cause));
        throw cause;
      }
      refusal = cause;
    }
    if (open.records.length === 0) open.firstStagedAtMs = this.clockMs();
    open.records.push(bytes);
    open.bytes += bytes.length;
    this.unshippedBytes += bytes.length;
    this.schedule();
    if (refusal !== undefined) throw refusal;
  }

  /** Local durability: resolves at once while the backlog is within its bounds, else once it is. */
  private room(): Promise<void> {
    if (this.withinBounds()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.waitingForRoom.push({ resolve, reject }));
  }

  private withinBounds(): boolean {
    const oldest = this.batches.find((pending) => pending.records.length > 0);
    const ageMs = oldest === undefined ? 0 : this.clockMs() - oldest.firstStagedAtMs;
    return this.unshippedBytes <= (this.options.unshippedBytesMax ?? UNSHIPPED_BYTES_MAX) && ageMs <= (this.options.unshippedMsMax ?? UNSHIPPED_MS_MAX);
  }

  private schedule(): void {
    if (this.running) return;
    this.running = true;
    // The writes already queued behind this one stage in the turns before the PUT starts and share it.
    setImmediate(() => void this.ship());
  }

  private async ship(): Promise<void> {
    for (;;) {
      const next = this.batches[0]!;
      if (this.failure !== undefined || next.records.length === 0) {
        this.running = false;
        return;
      }
      if (this.batches.length === 1) this.batches.push(batch(next.seq + 1));
      try {
        await putSegment(this.options.store, next.seq, encodeSegment(this.options.epoch, next.seq, next.records));
      } catch (cause) {
        this.fail(asSilkError(cause));
        this.running = false;
        return;
      }
      this.batches.shift();
      this.options.outbox?.removeSegment(next.seq);
      this.unshippedBytes -= next.bytes;
      this.stored = next.seq;
      next.settle();
      this.options.onShipped?.(next.seq, next.bytes);
      if (this.withinBounds()) for (const waiting of this.waitingForRoom.splice(0)) waiting.resolve();
    }
  }

  private fail(failure: SilkError): void {
    if (this.failure !== undefined) return;
    this.failure = failure;
    for (const pending of this.batches) pending.settle(failure);
    for (const waiting of this.waitingForRoom.splice(0)) waiting.reject(failure);
    this.options.onFailure?.(failure);
  }
}

/**
 * The coordinator's decisions on a bucket database: kept in the cache's LMDB decision log as on disk, and each
 * decision also staged into the bucket log, so a restore that finds a transaction prepared on one partition and
 * committed on another completes it instead of presuming abort. The decision is staged before the commits it
 * orders, so it is in the bucket no later than they are.
 */
export class ShippedDecisionLog implements DecisionStore {
  constructor(
    private readonly local: DecisionStore,
    private readonly shipper: SegmentShipper,
  ) {}

  async decide(txid: string, outcome: Outcome, participants: readonly number[]): Promise<Outcome> {
    const holds = await this.local.decide(txid, outcome, participants);
    this.shipper.stageDecision(txid, holds, participants);
    return holds;
  }

  decision(txid: string): Promise<Outcome | undefined> {
    return this.local.decision(txid);
  }

  forget(txid: string): Promise<void> {
    return this.local.forget(txid);
  }

  all(): Promise<string[]> {
    return this.local.all();
  }

  close(): Promise<void> {
    return this.local.close();
  }
}
