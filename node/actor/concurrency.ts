/**
 * A partition leader's concurrency control for several coordinators (docs/ISOLATION.md, "Several coordinators"):
 * the log sequence that last changed each key this leader changed, and the locks prepared intents hold until their
 * decision is applied. Validation and locking are no-wait: a conflict is answered at once (`transaction_conflict`)
 * and the coordinator runs its invocation again.
 *
 * Keys: `r<id>` a record, `a<id>` the adjacency of `id` (an edge's put or delete changes both endpoints'). A key this
 * leader never changed has a version at most `floor`: the sequence it had applied when it started leading, raised as
 * the oldest versions are evicted (at most VERSIONS_MAX kept). So a read at a sequence below the floor cannot be
 * validated and is refused.
 *
 * Invariants: every change of records this leader applies is reported (`changed`, `changedAll`, `committed`) with
 * its sequence before the next request is answered; a lock is held from the prepare's validation (before its append)
 * until its commit or abort is applied (or the append failed); an intent prepared before this leader led (its read
 * keys unknown) holds its written keys and the whole partition shared.
 */
import { SilkError } from "../../protocol/errors.js";
import { decodeMutations } from "../../protocol/mutation-codec.js";
import type { ReadSet } from "../../protocol/messages.js";

/** The most key versions a leader keeps; older ones raise the floor. */
export const VERSIONS_MAX = 200_000;
/** The most request IDs of applied `apply` requests remembered, to answer a retried one as done. */
export const APPLIED_REQUESTS_MAX = 10_000;

interface Lock {
  readonly writes: ReadonlySet<string>;
  readonly reads: ReadonlySet<string>;
  /** It read the whole partition (or its reads are unknown): every other write here conflicts with it. */
  readonly whole: boolean;
}

/** The keys an encoded mutation list changes. */
export function writtenKeys(batch: Uint8Array): Set<string> {
  const keys = new Set<string>();
  for (const mutation of decodeMutations(batch)) {
    switch (mutation.op) {
      case "put_record":
      case "delete_record":
        keys.add(`r${mutation.record.id}`);
        if (mutation.record.kind === "edge") {
          keys.add(`a${mutation.record.from}`);
          keys.add(`a${mutation.record.to}`);
        }
        break;
      case "put_in":
      case "delete_in":
        keys.add(`a${mutation.target}`);
        break;
      case "put_out":
      case "delete_out":
        keys.add(`a${mutation.source}`);
        break;
    }
  }
  return keys;
}

export class ConcurrencyControl {
  /** Every key this leader did not record changed at a sequence at most this. */
  private floor: number;
  /** The last sequence that changed any record here. */
  private lastChange: number;
  /** The sequence the leader applied last (the sequence of a snapshot taken now). */
  private appliedSequence: number;
  /** Key → the sequence that last changed it, oldest first. */
  private readonly versions = new Map<string, number>();
  private readonly locks = new Map<string, Lock>();
  private readonly writeLocks = new Map<string, string>();
  private readonly readLocks = new Map<string, Set<string>>();
  private readonly wholeReaders = new Set<string>();
  private readonly appliedRequests = new Set<string>();

  /**
   * `applied`: what the store applied as this leader starts; `pending`: the intents prepared before (their batches);
   * `versionsMax`: how many key versions to keep (tests make it small).
   */
  constructor(
    applied: number,
    pending: Iterable<{ readonly txid: string; readonly batch: Uint8Array }>,
    private readonly versionsMax = VERSIONS_MAX,
  ) {
    this.floor = applied;
    this.lastChange = applied;
    this.appliedSequence = applied;
    for (const { txid, batch } of pending) this.lock(txid, writtenKeys(batch), { sequence: applied, keys: [], whole: true });
  }

  /** The log sequence a snapshot taken now holds. */
  get sequence(): number {
    return this.appliedSequence;
  }

  /** Why `reads` (of transaction `txid`, or a read-only invocation) are no longer valid; undefined when they are. */
  private invalidReads(txid: string | undefined, reads: ReadSet): string | undefined {
    if (reads.sequence < this.floor) return `its reads at log sequence ${reads.sequence} are older than what this leader can validate (${this.floor})`;
    if (reads.whole) {
      if (this.lastChange > reads.sequence) return `it read the whole partition at sequence ${reads.sequence}, changed since at ${this.lastChange}`;
      for (const holder of this.writeLocks.values()) if (holder !== txid) return `it read the whole partition, where transaction ${holder} is prepared`;
    }
    for (const key of reads.keys) {
      const version = this.versions.get(key);
      if (version !== undefined && version > reads.sequence) return `${key} changed at sequence ${version}, after it was read at ${reads.sequence}`;
      const holder = this.writeLocks.get(key);
      if (holder !== undefined && holder !== txid) return `${key} is written by transaction ${holder}, prepared`;
    }
    return undefined;
  }

  /** Why writing `writes` (for `txid`) conflicts with another transaction's lock; undefined when it does not. */
  private lockConflict(txid: string | undefined, writes: ReadonlySet<string>): string | undefined {
    if (writes.size === 0) return undefined;
    for (const holder of this.wholeReaders) if (holder !== txid) return `transaction ${holder}, prepared, read the whole partition`;
    for (const key of writes) {
      const writer = this.writeLocks.get(key);
      if (writer !== undefined && writer !== txid) return `${key} is written by transaction ${writer}, prepared`;
      for (const reader of this.readLocks.get(key) ?? []) if (reader !== txid) return `${key} was read by transaction ${reader}, prepared`;
    }
    return undefined;
  }

  /** Throws transaction_conflict unless `reads` are valid and `writes` meet no other transaction's lock. */
  check(txid: string | undefined, writes: ReadonlySet<string>, reads: ReadSet | undefined): void {
    const why = (reads === undefined ? undefined : this.invalidReads(txid, reads)) ?? this.lockConflict(txid, writes);
    if (why !== undefined) throw new SilkError("transaction_conflict", `another transaction changed or holds what this one uses (${why}); nothing was written, retry`);
  }

  /** Whether `txid` holds locks here (its prepare was validated by this leader). */
  holds(txid: string): boolean {
    return this.locks.has(txid);
  }

  /** `txid`'s prepared intent takes its locks. */
  lock(txid: string, writes: ReadonlySet<string>, reads: ReadSet | undefined): void {
    this.release(txid);
    const lock: Lock = { writes, reads: new Set(reads?.keys ?? []), whole: reads?.whole ?? false };
    this.locks.set(txid, lock);
    for (const key of writes) this.writeLocks.set(key, txid);
    for (const key of lock.reads) {
      const readers = this.readLocks.get(key);
      if (readers === undefined) this.readLocks.set(key, new Set([txid]));
      else readers.add(txid);
    }
    if (lock.whole) this.wholeReaders.add(txid);
  }

  /** Frees `txid`'s locks (its abort was applied, or its prepare never was). */
  release(txid: string): void {
    const lock = this.locks.get(txid);
    if (lock === undefined) return;
    this.locks.delete(txid);
    for (const key of lock.writes) if (this.writeLocks.get(key) === txid) this.writeLocks.delete(key);
    for (const key of lock.reads) {
      const readers = this.readLocks.get(key);
      readers?.delete(txid);
      if (readers?.size === 0) this.readLocks.delete(key);
    }
    this.wholeReaders.delete(txid);
  }

  /** An entry at `sequence` changed `keys` (none: it changed no record). */
  changed(sequence: number, keys: Iterable<string>): void {
    this.appliedSequence = Math.max(this.appliedSequence, sequence);
    let any = false;
    for (const key of keys) {
      any = true;
      this.versions.delete(key);
      this.versions.set(key, sequence);
    }
    if (any) this.lastChange = Math.max(this.lastChange, sequence);
    while (this.versions.size > this.versionsMax) {
      const [oldest, version] = this.versions.entries().next().value as [string, number];
      this.versions.delete(oldest);
      this.floor = Math.max(this.floor, version);
    }
  }

  /** An entry at `sequence` may have changed anything (a range moved, an index created): nothing older validates. */
  changedAll(sequence: number): void {
    this.appliedSequence = Math.max(this.appliedSequence, sequence);
    this.lastChange = Math.max(this.lastChange, sequence);
    this.floor = Math.max(this.floor, sequence);
    this.versions.clear();
  }

  /** `txid`'s commit was applied at `sequence`: its written keys changed, and its locks are freed. */
  committed(sequence: number, txid: string): void {
    const lock = this.locks.get(txid);
    // An intent this leader holds no lock for (none should be): what it wrote is unknown here.
    if (lock === undefined) return this.changedAll(sequence);
    this.changed(sequence, lock.writes);
    this.release(txid);
  }

  /** Remembers an applied `apply` request, so a retry of it is answered done without validating it again. */
  rememberApplied(requestId: string): void {
    this.appliedRequests.add(requestId);
    if (this.appliedRequests.size > APPLIED_REQUESTS_MAX) this.appliedRequests.delete(this.appliedRequests.values().next().value as string);
  }

  applied(requestId: string): boolean {
    return this.appliedRequests.has(requestId);
  }
}
