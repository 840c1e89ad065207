/**
 * The coordinator's durable two-phase-commit decisions. A transaction is committed exactly when its commit decision
 * is in this log (presumed abort: no decision means abort). A decision, once written, never changes; it is deleted
 * only after every participant has applied it.
 */
import { open, type Database, type RootDatabase } from "lmdb";

export interface Decision {
  readonly participants: readonly number[];
}

export class DecisionLog {
  private readonly root: RootDatabase;
  private readonly decisions: Database<Decision, string>;

  constructor(path: string, options: { readOnly: boolean; noSync: boolean }) {
    this.root = open({ path, readOnly: options.readOnly, noSync: options.noSync, maxDbs: 4 });
    this.decisions = this.root.openDB<Decision, string>({ name: "decisions" });
  }

  /** Durably records the commit decision; returns once it is on disk. */
  recordCommit(txid: string, participants: readonly number[]): void {
    this.root.transactionSync(() => {
      this.decisions.putSync(txid, { participants: [...participants] });
    });
  }

  isCommitted(txid: string): boolean {
    return this.decisions.get(txid) !== undefined;
  }

  forget(txid: string): void {
    this.root.transactionSync(() => {
      this.decisions.removeSync(txid);
    });
  }

  all(): string[] {
    return [...this.decisions.getKeys({})].map(String);
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
