/**
 * One chaos run (docs/CHAOS.md) against a running local cluster: the workload's records are created, `concurrency`
 * clients send operations at `rate` per second in all for `durationMs` while the nemesis applies the seed's fault
 * schedule; then every fault is healed, the run waits until no two-phase-commit intent is left in doubt, the
 * workload's final reads run, and its checker judges the history.
 *
 * Written to `out`: history.jsonl (every invoke and completion), faults.jsonl (every fault applied or skipped),
 * summary.json and summary.txt (chaos/summary.ts), report.html (chaos/report.ts).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { seededRandom } from "../protocol/random.js";
import { SilkError } from "../protocol/errors.js";
import { History, writeJsonLines, type Operation } from "./history.js";
import { runNemesis, type FaultEvent, type LocalCluster } from "./nemesis.js";
import { renderReport } from "./report.js";
import { formatSummary, type ChaosSummary } from "./summary.js";
import { faultSchedule, type FaultKind, type PlannedFault } from "./schedule.js";
import { httpCall, workloadOf, type Call, type WorkloadName } from "./workloads.js";

export interface ChaosOptions {
  readonly workload: WorkloadName;
  readonly faults: readonly FaultKind[];
  readonly durationMs: number;
  /** Operations per second, all clients together. */
  readonly rate: number;
  readonly concurrency: number;
  readonly seed: number;
  readonly out: string;
  /** Each request's deadline; a write past it is unknown. */
  readonly requestTimeoutMs: number;
}

/** How long the setup, the settling and the final reads may take. */
const SETTLE_TIMEOUT_MS = 90_000;

/** Runs `work` until it succeeds, for up to SETTLE_TIMEOUT_MS (the setup's creates and the settle's probes). */
async function retry<T>(what: string, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      return await work();
    } catch (cause) {
      last = cause;
      await sleep(250);
    }
  }
  throw new SilkError("partition_unavailable", `${what} did not succeed within ${SETTLE_TIMEOUT_MS} ms: ${String(last)}`);
}

/** Checks that the cluster serves every query the workload calls (an attached cluster may serve another project). */
async function checkQueries(baseUrl: string, queries: readonly string[]): Promise<void> {
  const response = await fetch(`${baseUrl}/introspect`, { signal: AbortSignal.timeout(10_000) }).catch((cause: unknown) => {
    throw new SilkError("partition_unavailable", `the cluster's server at ${baseUrl} does not answer: ${String(cause)}`);
  });
  const served = new Set(((await response.json()) as { queries: { name: string }[] }).queries.map((query) => query.name));
  const missing = queries.filter((query) => !served.has(query));
  if (missing.length > 0) throw new SilkError("invalid_option", `the cluster's project lacks the queries ${missing.join(", ")}: serve the harness's project (chaos/project) in it`);
}

export async function runChaos(cluster: LocalCluster, options: ChaosOptions, progress: (line: string) => void = () => {}): Promise<ChaosSummary> {
  mkdirSync(options.out, { recursive: true });
  const run = `${options.seed.toString(36)}-${Date.now().toString(36)}`;
  const workload = workloadOf(options.workload, run);
  await checkQueries(cluster.baseUrl, workload.queries);
  const call: Call = httpCall(cluster.baseUrl, options.requestTimeoutMs);
  // The setup's creates are retried only when they failed definitely: a create whose outcome is unknown may have
  // made the record, and a second one would give the run two accounts of one name. A long deadline keeps them known.
  const setupCall = httpCall(cluster.baseUrl, SETTLE_TIMEOUT_MS);
  await workload.setup(async (query, params) => {
    const result = await retry(query, async () => {
      const answer = await setupCall(query, params, true);
      if (answer.outcome === "fail") throw new Error(answer.error);
      return answer;
    });
    if (result.outcome !== "ok") throw new SilkError("partition_unavailable", `the setup's ${query} has an unknown outcome (${result.error}): start the run again`);
    return result.body;
  });

  const origin = performance.now();
  const now = (): number => performance.now() - origin;
  const history = new History(now);
  const faults: FaultEvent[] = [];
  const schedule: PlannedFault[] = faultSchedule({ seed: options.seed, faults: options.faults, durationMs: options.durationMs, partitions: cluster.manifest.partitions });
  progress(`silk chaos: ${options.workload}, seed ${options.seed}, ${options.durationMs} ms, ${schedule.length} faults planned`);
  const finished = (): boolean => now() >= options.durationMs;
  let nextProcess = options.concurrency;
  const client = async (index: number): Promise<void> => {
    const random = seededRandom((options.seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
    const interval = (1_000 * options.concurrency) / options.rate;
    let process = index;
    while (!finished()) {
      const started = now();
      const operation = workload.next(random, index);
      const op = history.invoke(process, operation.f, operation.value);
      const result = await operation.run(call);
      if (result.outcome === "ok") history.complete(op, "ok", result.value);
      else history.complete(op, result.outcome, operation.value, result.error);
      // The operation may still be running somewhere: this client goes on as a new process (Jepsen's rule).
      if (result.outcome === "unknown") process = nextProcess++;
      const wait = started + interval * (0.5 + random()) - now();
      if (wait > 0) await sleep(Math.min(wait, Math.max(0, options.durationMs - now())));
    }
  };
  try {
    await Promise.all([
      ...Array.from({ length: options.concurrency }, (_, index) => client(index)),
      runNemesis(cluster, schedule, now, (event) => {
        faults.push(event);
        progress(`  ${(event.start / 1000).toFixed(1)}s ${event.kind} ${event.target}${event.skipped === undefined ? ` for ${((event.end - event.start) / 1000).toFixed(1)}s` : ` skipped: ${event.skipped}`}`);
      }),
    ]);
  } finally {
    cluster.heal();
  }

  const settleStart = now();
  await retry("settling (no intent in doubt)", async () => {
    const pending = await cluster.pendingIntents();
    if (pending.length > 0) throw new Error(`intents in doubt: ${pending.join(", ")}`);
  });
  const settleMs = now() - settleStart;
  await workload.final(history, call, -1);
  const operations = history.operations();
  const verdict = workload.check(operations);

  const clientOps = clientOperations(operations);
  const count = (outcome: string): number => clientOps.filter((operation) => operation.outcome === outcome).length;
  const applied = faults.filter((fault) => fault.skipped === undefined);
  const summary: ChaosSummary = {
    workload: options.workload,
    seed: options.seed,
    run,
    durationMs: options.durationMs,
    rate: options.rate,
    concurrency: options.concurrency,
    operations: { total: clientOps.length, ok: count("ok"), fail: count("fail"), unknown: count("unknown") },
    faults: {
      planned: schedule.length,
      applied: applied.length,
      skipped: faults.length - applied.length,
      byKind: applied.reduce<Record<string, number>>((counts, fault) => ({ ...counts, [fault.kind]: (counts[fault.kind] ?? 0) + 1 }), {}),
    },
    verdict,
    settleMs: Math.round(settleMs),
  };
  writeJsonLines(join(options.out, "history.jsonl"), history.events);
  writeJsonLines(join(options.out, "faults.jsonl"), faults);
  writeFileSync(join(options.out, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(join(options.out, "summary.txt"), formatSummary(summary));
  writeFileSync(join(options.out, "report.html"), renderReport(summary, operations, faults));
  return summary;
}

/** The operations a summary counts (clients' ones, not the final reads), for the report. */
export function clientOperations(operations: readonly Operation[]): Operation[] {
  return operations.filter((operation) => operation.process >= 0);
}
