/**
 * The coordinator's durable two-phase-commit decisions. A transaction commits exactly when its decision is `commit`;
 * no decision means nothing is decided yet, and whoever resolves an intent in doubt decides `abort` (presumed abort).
 * A decision, once written, never changes: `decide` writes only when none exists and returns the one that holds, so
 * a coordinator finishing its commit and another resolving the same transaction cannot both win. A decision is
 * forgotten only after every participant has applied it, and never while its coordinator still runs the transaction
 * (Coordinator.recover() skips those): a `decide` after a forget must not find the key free. The replicated store
 * also enforces it (a forgotten decision stays, marked forgotten, and a late `decide` answers its outcome); the local
 * one removes the key, since its coordinator recovers only at open, with nothing in flight.
 *
 * Two stores: `LmdbDecisionLog` (the single server and the embedded runtime, a local LMDB) and the cluster's
 * replicated one on a NATS KV bucket (cluster/nats/kv-decision-log.ts).
 */
import { open, type Database, type RootDatabase } from "lmdb";
import { READER_CHECK_INTERVAL_MS } from "../node/store/partition-store.js";
import { storageFailure } from "../node/store/storage-errors.js";

export type Outcome = "commit" | "abort";

export interface Decision {
  readonly outcome: Outcome;
  readonly participants: readonly number[];
}

export interface DecisionStore {
  /** Durably records `outcome` unless a decision exists; returns the decision that holds, once it is durable. */
  decide(txid: string, outcome: Outcome, participants: readonly number[]): Promise<Outcome>;
  /** The decision of a transaction, if one was written (and not yet forgotten). */
  decision(txid: string): Promise<Outcome | undefined>;
  forget(txid: string): Promise<void>;
  /** Every transaction with a decision not yet forgotten. */
  all(): Promise<string[]>;
  close(): Promise<void>;
}

export class LmdbDecisionLog implements DecisionStore {
  private readonly root: RootDatabase;
  private readonly decisions: Database<Decision | { participants: number[] }, string>;

  private readonly clockMs: () => number;
  private readerCheckedAtMs: number;

  constructor(
    private readonly path: string,
    options: { readonly readOnly: boolean; readonly noSync: boolean; readonly clockMs?: () => number },
  ) {
    this.root = open({ path, readOnly: options.readOnly, noSync: options.noSync, maxDbs: 4 });
    this.decisions = this.root.openDB({ name: "decisions" });
    this.clockMs = options.clockMs ?? (() => performance.now());
    // lmdb-js has just run the check in open(): the next one is due an interval from now.
    this.readerCheckedAtMs = this.clockMs();
  }

  async decide(txid: string, outcome: Outcome, participants: readonly number[]): Promise<Outcome> {
    return this.write(() => {
      const existing = this.read(txid);
      if (existing !== undefined) return existing;
      this.decisions.putSync(txid, { outcome, participants: [...participants] });
      return outcome;
    });
  }

  /**
   * One write transaction; a failure of the disk under it becomes `storage_error` (node/store/storage-errors.ts). As the
   * partitions' writers do (node/store/partition-store.ts), it first frees the reader slots of processes that died inside a
   * read, at most once per READER_CHECK_INTERVAL_MS, so such a reader cannot pin this file's pages for ever.
   */
  private write<T>(body: () => T): T {
    if (this.clockMs() - this.readerCheckedAtMs >= READER_CHECK_INTERVAL_MS) {
      this.readerCheckedAtMs = this.clockMs();
      this.root.readerCheck();
    }
    try {
      return this.root.transactionSync(body);
    } catch (cause) {
      throw storageFailure(cause, this.path) ?? cause;
    }
  }

  async decision(txid: string): Promise<Outcome | undefined> {
    return this.read(txid);
  }

  /** Decisions written before outcomes existed were all commits. */
  private read(txid: string): Outcome | undefined {
    const stored = this.decisions.get(txid);
    return stored === undefined ? undefined : "outcome" in stored ? stored.outcome : "commit";
  }

  async forget(txid: string): Promise<void> {
    this.write(() => {
      this.decisions.removeSync(txid);
    });
  }

  async all(): Promise<string[]> {
    return [...this.decisions.getKeys({})].map(String);
  }

  /**
   * Writes a consistent copy of the log into the empty folder `into` (a bucket database's snapshot taken while it
   * serves, runtime/bucket-snapshots.ts): LMDB copies the environment, compacted, from one read transaction.
   */
  backup(into: string): Promise<void> {
    return this.root.backup(into, true);
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
