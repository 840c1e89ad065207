/**
 * The fault schedule comes from the seed alone (docs/CHAOS.md): the same seed gives the same faults at the same
 * offsets, another seed another schedule; faults never overlap, leave a warm-up and a quiet end, and use only the
 * kinds asked for.
 */
import { describe, expect, it } from "vitest";
import { FAULT_GAP_MS, FAULT_LENGTH_MS, faultSchedule, parseFaults, FAULT_KINDS } from "../../chaos/schedule.js";

const ALL = [...FAULT_KINDS];

describe("fault schedule", () => {
  it("is the same for the same seed and differs for another", () => {
    const options = { seed: 42, faults: ALL, durationMs: 60_000, partitions: 2 };
    const first = faultSchedule(options);
    expect(faultSchedule(options)).toEqual(first);
    expect(faultSchedule({ ...options, seed: 43 })).not.toEqual(first);
    expect(first.length).toBeGreaterThanOrEqual(5);
    // A fixed seed's schedule is pinned: a change to the drawing order changes every published run's replay.
    expect(faultSchedule({ seed: 7, faults: ["kill-leader", "pause"], durationMs: 15_000, partitions: 2 }).map((fault) => [fault.kind, fault.at, fault.durationMs, fault.partition, fault.pause ?? "-"])).toEqual([
      ["kill-leader", 2_250, 1_186, 1, "-"],
      ["kill-leader", 6_240, 2_399, 0, "-"],
    ]);
  });

  it("runs one fault at a time between a warm-up and a quiet end, with lengths and gaps in their bounds", () => {
    for (const seed of [1, 2, 3, 99, 12345]) {
      const schedule = faultSchedule({ seed, faults: ALL, durationMs: 60_000, partitions: 3 });
      expect(schedule[0].at).toBeGreaterThanOrEqual(3_000);
      for (const [index, fault] of schedule.entries()) {
        expect(fault.durationMs).toBeGreaterThanOrEqual(FAULT_LENGTH_MS.min);
        expect(fault.durationMs).toBeLessThanOrEqual(FAULT_LENGTH_MS.max);
        expect(fault.at + fault.durationMs).toBeLessThanOrEqual(60_000 - 9_000);
        expect(fault.partition).toBeLessThan(3);
        expect(fault.pause !== undefined).toBe(fault.kind === "pause");
        expect(fault.isolate !== undefined).toBe(fault.kind === "partition");
        const next = schedule[index + 1];
        if (next !== undefined) expect(next.at - (fault.at + fault.durationMs)).toBeGreaterThanOrEqual(FAULT_GAP_MS.min);
      }
    }
  });

  it("uses only the kinds asked for, and none without any", () => {
    const kinds = new Set(faultSchedule({ seed: 5, faults: ["kill-nats", "pause"], durationMs: 120_000, partitions: 2 }).map((fault) => fault.kind));
    expect([...kinds].sort()).toEqual(["kill-nats", "pause"]);
    expect(faultSchedule({ seed: 5, faults: [], durationMs: 120_000, partitions: 2 })).toEqual([]);
    expect(faultSchedule({ seed: 5, faults: ALL, durationMs: 4_000, partitions: 2 })).toEqual([]);
  });

  it("parses --faults and names the known kinds when one is unknown", () => {
    expect(parseFaults("kill-leader, pause,kill-leader")).toEqual(["kill-leader", "pause"]);
    expect(parseFaults("partition")).toEqual(["partition"]);
    expect(() => parseFaults("kill-leader,netsplit")).toThrow("unknown fault netsplit (known: kill-leader, kill-follower, kill-nats, kill-coordinator, pause, partition, partition-nats)");
  });
});
