/**
 * The fault schedule of a chaos run, drawn from its seed alone (docs/CHAOS.md): the same seed, fault kinds,
 * duration and cluster shape give the same schedule on every machine, so a run that found an anomaly can be
 * replayed with the same faults at the same offsets. Which process a fault hits is resolved when it fires (the
 * leader is whoever holds the lease then), from the draw's `partition` and `target`.
 *
 * Shape: a quiet warm-up, then one fault at a time (Jepsen's nemesis does the same by default): each lasts
 * `durationMs` (the process stays dead or stopped that long, then is restarted or continued), followed by a quiet
 * gap; the last part of the run is left quiet so the cluster recovers before the final reads.
 */
import { seededRandom } from "../protocol/random.js";

export const FAULT_KINDS = ["kill-leader", "kill-follower", "kill-nats", "kill-coordinator", "pause", "partition", "partition-nats"] as const;

/** The fault kinds that need the cluster behind the run's proxies (chaos/network.ts). */
export const NETWORK_FAULT_KINDS: readonly FaultKind[] = ["partition", "partition-nats"];
export type FaultKind = (typeof FAULT_KINDS)[number];

/** What a pause stops: a partition's leader or a follower, a NATS server, or the coordinator. */
export const PAUSE_TARGETS = ["leader", "follower", "nats", "coordinator"] as const;
export type PauseTarget = (typeof PAUSE_TARGETS)[number];

/** What a partition cuts off from every NATS server: a partition's leader or a follower, or the coordinator. */
export const PARTITION_TARGETS = ["leader", "follower", "coordinator"] as const;
export type PartitionTarget = (typeof PARTITION_TARGETS)[number];

export interface PlannedFault {
  readonly kind: FaultKind;
  /** Milliseconds after the run's start. */
  readonly at: number;
  /** How long the process stays down (killed) or stopped (paused). */
  readonly durationMs: number;
  /** The partition whose leader or follower is hit (kill-leader, kill-follower, pause of one of them). */
  readonly partition: number;
  /** kill-follower and pause of a follower: which follower (index among the followers, modulo their number); kill-nats,
   *  partition-nats and pause of a NATS server: which server (index, modulo their number). */
  readonly target: number;
  /** pause only: what it stops. */
  readonly pause?: PauseTarget;
  /** partition only: what it isolates. */
  readonly isolate?: PartitionTarget;
}

export interface ScheduleOptions {
  readonly seed: number;
  readonly faults: readonly FaultKind[];
  readonly durationMs: number;
  readonly partitions: number;
}

/** Bounds of one fault's length and of the quiet gap after it, in milliseconds. */
export const FAULT_LENGTH_MS = { min: 1_000, max: 4_000 } as const;
export const FAULT_GAP_MS = { min: 1_500, max: 4_000 } as const;

export function faultSchedule(options: ScheduleOptions): PlannedFault[] {
  if (options.faults.length === 0) return [];
  const random = seededRandom(options.seed);
  const between = (bounds: { min: number; max: number }): number => Math.round(bounds.min + random() * (bounds.max - bounds.min));
  const warmUp = Math.min(3_000, Math.round(options.durationMs * 0.15));
  const quietEnd = options.durationMs - Math.max(2_000, Math.round(options.durationMs * 0.15));
  const planned: PlannedFault[] = [];
  let at = warmUp;
  for (;;) {
    const kind = options.faults[Math.floor(random() * options.faults.length)];
    const durationMs = between(FAULT_LENGTH_MS);
    const partition = Math.floor(random() * options.partitions);
    const target = Math.floor(random() * 1_000);
    const pause = kind === "pause" ? PAUSE_TARGETS[Math.floor(random() * PAUSE_TARGETS.length)] : undefined;
    const isolate = kind === "partition" ? PARTITION_TARGETS[Math.floor(random() * PARTITION_TARGETS.length)] : undefined;
    if (at + durationMs > quietEnd) break;
    planned.push({ kind, at, durationMs, partition, target, ...(pause === undefined ? {} : { pause }), ...(isolate === undefined ? {} : { isolate }) });
    at += durationMs + between(FAULT_GAP_MS);
  }
  return planned;
}

/** Parses `--faults a,b,c`; an unknown name is an error naming the known ones. */
export function parseFaults(text: string): FaultKind[] {
  const names = text.split(",").map((name) => name.trim()).filter((name) => name.length > 0);
  const unknown = names.filter((name) => !(FAULT_KINDS as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`unknown fault ${unknown.join(", ")} (known: ${FAULT_KINDS.join(", ")})`);
  return [...new Set(names)] as FaultKind[];
}
