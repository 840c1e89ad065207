/**
 * The coordinator's scatter/gather reader asks the partitions' leaders when it serves a write (so a write is never
 * computed from a follower's stale answer), and passes no such demand for a read; merged ID lists (a pushed-down
 * page's first IDs too) come out in ID order whatever the partition map; a step pushed down to every partition fails
 * with the lowest partition's error.
 */
import { describe, expect, it } from "vitest";
import { PartitionMap } from "../../cluster/partition-map.js";
import { ScatterReader } from "../../cluster/scatter-reader.js";
import type { RequestOptions, Transport } from "../../cluster/transport.js";
import type { PartitionReplyBody, PartitionRequest } from "../../protocol/messages.js";
import { SilkError } from "../../protocol/errors.js";
import { Deadline } from "../../node/exec/deadline.js";

class RecordingTransport implements Transport {
  constructor(readonly failing = false) {}

  readonly seen: { partition: number; type: string; options: RequestOptions | undefined }[] = [];

  async request(partition: number, message: PartitionRequest, options?: RequestOptions): Promise<PartitionReplyBody> {
    this.seen.push({ partition, type: message.type, options });
    switch (message.type) {
      case "read_records":
        return { type: "records", records: message.ids.map(() => undefined) };
      case "read_label":
        // Partition 1 answers lower IDs than partition 0, as after a rebalance.
        return { type: "ids", ids: partition === 0 ? [50n, 70n] : [10n, 60n] };
      case "execute":
        // The first IDs of a pushed-down page (cluster/scatter-reader.ts firstIdsWhereStored), likewise.
        if (this.failing) {
          // Partition 1 fails first; partition 0's error is the one answered.
          await new Promise((resolve) => setTimeout(resolve, partition === 0 ? 20 : 0));
          throw new SilkError("invalid_type", `partition ${partition}`);
        }
        return { type: "result", result: { count: 2, ids: partition === 0 ? ["50", "70"] : ["10", "60"] } };
      default:
        throw new Error(`unexpected ${message.type}`);
    }
  }
}

/** Two partitions after a rebalance: partition 1 owns 0..39 (moved to it) and the upper half; partition 0 owns 40 up to the middle. */
function interleaved(): PartitionMap {
  const ID_MAX = 2n ** 64n - 1n;
  const middle = 2n ** 63n;
  return PartitionMap.of({
    version: 1,
    count: 2,
    allocations: [{ first: 0n, last: middle - 1n }, { first: middle, last: ID_MAX }],
    entries: [
      { first: 0n, last: 39n, partition: 1 },
      { first: 40n, last: middle - 1n, partition: 0 },
      { first: middle, last: ID_MAX, partition: 1 },
    ],
  });
}

describe("the scatter/gather reader", () => {
  it("sends a write's reads to the leaders, and a read's without that demand", async () => {
    const map = new PartitionMap(2);
    const writes = new RecordingTransport();
    await new ScatterReader(writes, map, true).records("node", [1n, map.ranges[1].first + 1n]);
    expect(writes.seen.map((request) => request.options?.leader)).toEqual([true, true]);
    const reads = new RecordingTransport();
    await new ScatterReader(reads, map).records("node", [1n, map.ranges[1].first + 1n]);
    expect(reads.seen.map((request) => request.options?.leader)).toEqual([false, false]);
  });

  it("merges every partition's IDs of a label in ID order when a rebalance interleaved their ranges", async () => {
    expect(await new ScatterReader(new RecordingTransport(), interleaved()).idsOfLabel("node", "User")).toEqual([10n, 50n, 60n, 70n]);
  });

  it("keeps the first IDs of a pushed-down page in ID order when a rebalance interleaved the partitions' ranges", async () => {
    const source = { op: "nodes", ref: { kind: "all" } } as const;
    const first = await new ScatterReader(new RecordingTransport(), interleaved()).firstIdsWhereStored(source, "node", 3, {}, Deadline.none());
    expect(first).toEqual({ ids: [10n, 50n, 60n], total: 4 });
  });

  it("answers the lowest partition's error when several partitions fail, whichever failed first", async () => {
    const reader = new ScatterReader(new RecordingTransport(true), new PartitionMap(2));
    await expect(reader.countWhereStored({ op: "nodes", ref: { kind: "all" } }, {}, Deadline.none())).rejects.toThrow("partition 0");
  });
});
