/**
 * A partition leader's resolver of two-phase-commit intents left in doubt (docs/ISOLATION.md, "Cluster"): a
 * participant does not wait for a crashed coordinator to come back, it asks the replicated decision log.
 *
 * Every sweep lists the store's prepared intents and remembers when this leader first saw each one (by its own
 * monotonic clock; a new leader starts counting afresh). An intent still prepared `timeoutMs` after that is
 * resolved: `decide(txid, "abort", [partition])` on the decision log, which writes abort only when no decision
 * exists (presumed abort) and returns the decision that holds, then that outcome (commit or abort) is applied
 * through the leader's log like any other change.
 *
 * Invariants:
 * - The outcome applied is always the decision log's: a commit decision a coordinator wrote wins; once abort is
 *   written, a coordinator's later `decide(commit)` gets abort back and aborts everywhere. So a transaction never
 *   commits on one participant and aborts on another.
 * - The resolver never forgets a decision: another participant (or the coordinator) may still need to read it. The
 *   next coordinator recovery (`Coordinator.recover()`) forgets decisions once no participant holds their intents.
 * - Sweeps do not overlap; a sweep that fails (the decision log or the leader's log unavailable) changes nothing
 *   it did not finish, and the intent is tried again at the next sweep.
 */
import type { Logger } from "pino";
import type { DecisionStore, Outcome } from "../decision-log.js";

/** How long an intent stays prepared, as seen by its partition's leader, before the leader resolves it itself. */
export const INTENT_TIMEOUT_MS_DEFAULT = 10_000;

export interface IntentResolverOptions {
  readonly partition: number;
  /** The transaction ids prepared on this partition and not yet committed or aborted. */
  readonly pending: () => readonly string[];
  /** The replicated decision log (opened on first need). */
  readonly decisions: () => Promise<DecisionStore>;
  /** Applies `outcome` to the intent `txid` through the leader's log; throws when it could not. */
  readonly apply: (outcome: Outcome, txid: string) => Promise<void>;
  /** Default INTENT_TIMEOUT_MS_DEFAULT. */
  readonly timeoutMs?: number;
  /** Milliseconds on a monotonic clock (default performance.now). */
  readonly clockMs?: () => number;
  readonly logger: Logger;
}

export interface ResolvedIntent {
  readonly txid: string;
  readonly outcome: Outcome;
  /** How long the intent was prepared, as seen by this leader, when its outcome was applied. */
  readonly waitedMs: number;
}

export class IntentResolver {
  private readonly firstSeen = new Map<string, number>();
  private sweeping: Promise<ResolvedIntent[]> | undefined;
  private readonly timeoutMs: number;
  private readonly clockMs: () => number;

  constructor(private readonly options: IntentResolverOptions) {
    this.timeoutMs = options.timeoutMs ?? INTENT_TIMEOUT_MS_DEFAULT;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs < 0) throw new RangeError(`an intent timeout must be a non-negative number of milliseconds, got ${this.timeoutMs}`);
    this.clockMs = options.clockMs ?? (() => performance.now());
  }

  /** How often a leader should sweep: often enough to act soon after the timeout, at most once a second. */
  get intervalMs(): number {
    return Math.max(10, Math.min(1_000, Math.floor(this.timeoutMs / 4)));
  }

  /** One pass; a call while a pass runs returns that pass. Resolves to the intents this pass resolved. */
  sweep(): Promise<ResolvedIntent[]> {
    this.sweeping ??= this.pass().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async pass(): Promise<ResolvedIntent[]> {
    const { partition, logger } = this.options;
    const now = this.clockMs();
    const pending = new Set(this.options.pending());
    for (const txid of this.firstSeen.keys()) if (!pending.has(txid)) this.firstSeen.delete(txid);
    const due: string[] = [];
    for (const txid of pending) {
      const seen = this.firstSeen.get(txid);
      if (seen === undefined) this.firstSeen.set(txid, now);
      if (now - (seen ?? now) >= this.timeoutMs) due.push(txid);
    }
    const resolved: ResolvedIntent[] = [];
    for (const txid of due) {
      try {
        const decisions = await this.options.decisions();
        // No decision yet: abort (presumed abort), and a coordinator's late commit decision can no longer be written.
        const outcome = await decisions.decide(txid, "abort", [partition]);
        await this.options.apply(outcome, txid);
        const waitedMs = Math.round(this.clockMs() - (this.firstSeen.get(txid) ?? now));
        this.firstSeen.delete(txid);
        resolved.push({ txid, outcome, waitedMs });
        logger.info({ partition, txid, outcome, waitedMs }, "resolved a transaction left in doubt");
      } catch (cause) {
        logger.warn({ partition, txid, err: cause instanceof Error ? cause.message : String(cause) }, "could not resolve a transaction in doubt (tried again at the next sweep)");
      }
    }
    return resolved;
  }
}
