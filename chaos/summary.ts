/**
 * What a chaos run found (docs/CHAOS.md): the summary `runChaos` answers and writes to summary.json, and its text
 * form (summary.txt, printed by `silk chaos run`). Apart from run.ts so that report.ts, which renders a summary, and
 * run.ts, which makes one and calls the report, do not import each other.
 */
import type { Verdict } from "./history.js";
import type { WorkloadName } from "./workloads.js";

export interface ChaosSummary {
  readonly workload: WorkloadName;
  readonly seed: number;
  readonly run: string;
  readonly durationMs: number;
  readonly rate: number;
  readonly concurrency: number;
  readonly operations: { readonly total: number; readonly ok: number; readonly fail: number; readonly unknown: number };
  readonly faults: { readonly planned: number; readonly applied: number; readonly skipped: number; readonly byKind: Readonly<Record<string, number>> };
  readonly verdict: Verdict;
  /** How long the cluster took after healing until no intent was in doubt. */
  readonly settleMs: number;
}

/** The summary as lines of text (printed by `silk chaos run` and written to summary.txt). */
export function formatSummary(summary: ChaosSummary): string {
  const { operations, faults, verdict } = summary;
  const lines = [
    `workload ${summary.workload}, seed ${summary.seed}, run ${summary.run}: ${(summary.durationMs / 1000).toFixed(0)} s at ${summary.rate} op/s, ${summary.concurrency} clients`,
    `operations: ${operations.total} (ok ${operations.ok}, fail ${operations.fail}, unknown ${operations.unknown})`,
    `faults: ${faults.applied} applied (${Object.entries(faults.byKind).map(([kind, n]) => `${kind} ${n}`).join(", ") || "none"}), ${faults.skipped} skipped, of ${faults.planned} planned`,
    `settled in ${summary.settleMs} ms; checker: ${Object.entries(verdict.stats).map(([name, value]) => `${name} ${value}`).join(", ")}`,
    `verdict: ${verdict.valid === true ? "valid" : verdict.valid === false ? `INVALID, ${verdict.anomalies.length} anomalies` : "unknown (the checker's search ran past its budget)"}`,
    ...verdict.anomalies.slice(0, 20).map((anomaly) => `  ${anomaly.kind}: ${anomaly.message}`),
    ...(verdict.anomalies.length > 20 ? [`  ... and ${verdict.anomalies.length - 20} more (summary.json)`] : []),
  ];
  return `${lines.join("\n")}\n`;
}
