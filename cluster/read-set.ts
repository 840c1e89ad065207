/**
 * What an invocation read, per partition, when the coordinator validates instead of locking (several coordinators;
 * docs/ISOLATION.md): the ScatterReader notes each versioned read's keys and snapshot sequence here, and the commit
 * (or, for a read, the validation round) sends each partition its ReadSet.
 */
import type { ReadSet } from "../protocol/messages.js";

/** A read set that read nothing: a participant only written still has its writes checked against intents' locks. */
export const NOTHING_READ: ReadSet = { sequence: Number.MAX_SAFE_INTEGER, keys: [], whole: false };

export class ReadRecorder {
  private readonly partitions = new Map<number, { sequence: number; keys: Set<string>; whole: boolean }>();
  /** Read requests answered so far (one alone is a consistent snapshot of one partition, needing no validation). */
  requests = 0;

  /** A read of `partition` at snapshot `sequence` of `keys`, or of more than keys (`"whole"`). */
  note(partition: number, sequence: number, keys: readonly string[] | "whole"): void {
    this.requests += 1;
    let read = this.partitions.get(partition);
    if (read === undefined) {
      read = { sequence, keys: new Set(), whole: false };
      this.partitions.set(partition, read);
    }
    read.sequence = Math.min(read.sequence, sequence);
    if (keys === "whole") read.whole = true;
    else for (const key of keys) read.keys.add(key);
  }

  /** The partitions read, in ascending order. */
  partitionsRead(): number[] {
    return [...this.partitions.keys()].sort((a, b) => a - b);
  }

  /** What was read of `partition` (NOTHING_READ when nothing was). */
  readSet(partition: number): ReadSet {
    const read = this.partitions.get(partition);
    return read === undefined ? NOTHING_READ : { sequence: read.sequence, keys: [...read.keys], whole: read.whole };
  }
}
