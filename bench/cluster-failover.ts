/**
 * Failover time for bench/cluster.ts: while one writer loops single-partition writes to partition 0 (an UPDATE of
 * a node that partition owns), the process of partition 0's leader (read from the lease bucket) is SIGKILLed. The
 * figure is the time from the kill to the first successful write that was *sent after* the kill (a write already in
 * flight may have been appended by the old leader, so it proves nothing). Alongside: when another replica held the
 * lease, and the writes that failed meanwhile (with their codes). The killed replica is started again on its store
 * and waited for before the next round, so every round starts with three replicas.
 *
 * Invariant: the writer stops in every outcome (a round that sees no success within its limit fails loudly).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { Database } from "../index.js";
import type { BenchCluster } from "./cluster-processes.js";
import { waitFor } from "./cluster-processes.js";

/** A round that sees no successful write this long after the kill fails. */
const ROUND_LIMIT_MS = 60_000;
/** Writes before the kill, so the writer is in its steady state. */
const WRITES_BEFORE_KILL = 20;

export interface LeaseHolder {
  readonly replica: string;
  readonly term: number;
}

export interface FailoverRound {
  readonly killed: string;
  readonly newLeader: string;
  /** Kill → another replica holds partition 0's lease (polled every 25 ms). */
  readonly leaseMs: number;
  /** Kill → the first successful write sent after the kill. */
  readonly firstWriteMs: number;
  /** Kill → the end of the write that was in flight at the kill, and how it ended ("ok" or its error code). */
  readonly inFlightMs: number;
  readonly inFlightOutcome: string;
  /** Writes that failed between the kill and that success, by code. */
  readonly failures: Readonly<Record<string, number>>;
}

export interface FailoverDeps {
  readonly cluster: BenchCluster;
  readonly db: Database;
  /** A node of partition 0 (the writer updates it). */
  readonly nodeId: bigint;
  readonly leaseHolder: (partition: number) => Promise<LeaseHolder | undefined>;
  readonly progress: (message: string) => void;
}

function runningLines(cluster: BenchCluster, replica: string): number {
  try {
    const text = readFileSync(join(cluster.layout.directory, "logs", `p0-${replica}.out`), "utf8");
    return text.split("\n").filter((line) => / running$/.test(line)).length;
  } catch {
    return 0;
  }
}

export async function measureFailover(deps: FailoverDeps, rounds: number): Promise<FailoverRound[]> {
  const results: FailoverRound[] = [];
  for (let round = 0; round < rounds; round++) results.push(await failoverRound(deps, round));
  return results;
}

async function failoverRound(deps: FailoverDeps, round: number): Promise<FailoverRound> {
  const { cluster, db, nodeId } = deps;
  const before = await waitFor("a leader of partition 0", 30_000, () => deps.leaseHolder(0));
  let killAt = Number.POSITIVE_INFINITY;
  let firstSuccessAt: number | undefined;
  let writes = 0;
  let stop = false;
  const failures: Record<string, number> = {};
  let writerError: unknown;
  let inFlight: { at: number; outcome: string } | undefined;
  const writing = <T>(probe: () => Promise<T | undefined>) => async (): Promise<T | undefined> => {
    if (writerError !== undefined) throw writerError;
    return probe();
  };
  const writer = (async () => {
    while (!stop) {
      const sentAt = performance.now();
      try {
        await db.query("SetScore", { id: nodeId.toString(), score: writes++ });
        const doneAt = performance.now();
        if (sentAt > killAt && firstSuccessAt === undefined) firstSuccessAt = doneAt;
        if (sentAt < killAt && doneAt > killAt) inFlight = { at: doneAt, outcome: "ok" };
      } catch (cause) {
        if (sentAt < killAt && performance.now() < killAt) {
          writerError = cause; // no failure is expected before the kill
          stop = true;
          return;
        }
        const code = (cause as { code?: string }).code ?? (cause as Error).message;
        if (sentAt < killAt) inFlight = { at: performance.now(), outcome: code };
        else failures[code] = (failures[code] ?? 0) + 1;
      }
    }
  })();
  try {
    await waitFor("writes before the kill", 30_000, writing(async () => (writes >= WRITES_BEFORE_KILL ? true : undefined)), 5);
    const started = runningLines(cluster, before.replica);
    killAt = performance.now();
    const killed = cluster.killReplica(0, before.replica);
    const lease = await waitFor("a new lease holder of partition 0", ROUND_LIMIT_MS, async () => {
      const holder = await deps.leaseHolder(0);
      return holder !== undefined && holder.replica !== before.replica ? { holder, at: performance.now() } : undefined;
    }, 25);
    await killed;
    await waitFor("a successful write after the kill", ROUND_LIMIT_MS, writing(async () => (firstSuccessAt !== undefined ? true : undefined)), 5);
    stop = true;
    await writer;
    const result: FailoverRound = {
      killed: before.replica,
      newLeader: lease.holder.replica,
      leaseMs: lease.at - killAt,
      firstWriteMs: firstSuccessAt! - killAt,
      inFlightMs: inFlight === undefined ? 0 : inFlight.at - killAt,
      inFlightOutcome: inFlight?.outcome ?? "none in flight",
      failures,
    };
    deps.progress(`  failover ${round + 1}: killed ${result.killed}, ${result.newLeader} leads after ${Math.round(result.leaseMs)} ms, in-flight write ended ${result.inFlightOutcome} after ${Math.round(result.inFlightMs)} ms, first write sent after the kill succeeded after ${Math.round(result.firstWriteMs)} ms, failed writes ${JSON.stringify(failures)}`);
    cluster.startReplica(0, before.replica);
    await waitFor(`replica p0-${before.replica} running again`, 30_000, async () => (runningLines(cluster, before.replica) > started ? true : undefined));
    return result;
  } finally {
    stop = true;
    await writer.catch(() => undefined);
  }
}
