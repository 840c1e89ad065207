/**
 * The coordinator's scatter/gather reader asks the partitions' leaders when it serves a write (so a write is never
 * computed from a follower's stale answer), and passes no such demand for a read; merged ID lists come out in ID
 * order whatever the partition map.
 */
import { describe, expect, it } from "vitest";
import { PartitionMap } from "../../cluster/partition-map.js";
import { ScatterReader } from "../../cluster/scatter-reader.js";
import type { RequestOptions, Transport } from "../../cluster/transport.js";
import type { PartitionReplyBody, PartitionRequest } from "../../protocol/messages.js";

class RecordingTransport implements Transport {
  readonly seen: { partition: number; type: string; options: RequestOptions | undefined }[] = [];

  async request(partition: number, message: PartitionRequest, options?: RequestOptions): Promise<PartitionReplyBody> {
    this.seen.push({ partition, type: message.type, options });
    switch (message.type) {
      case "read_records":
        return { type: "records", records: message.ids.map(() => undefined) };
      case "read_label":
        // Partition 1 answers lower IDs than partition 0, as after a rebalance.
        return { type: "ids", ids: partition === 0 ? [50n, 70n] : [10n, 60n] };
      default:
        throw new Error(`unexpected ${message.type}`);
    }
  }
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
    const ID_MAX = 2n ** 64n - 1n;
    // Partition 1 owns 0..39 (moved to it) and the upper half; partition 0 owns 40 up to the middle.
    const middle = 2n ** 63n;
    const map = PartitionMap.of({
      version: 1,
      count: 2,
      allocations: [{ first: 0n, last: middle - 1n }, { first: middle, last: ID_MAX }],
      entries: [
        { first: 0n, last: 39n, partition: 1 },
        { first: 40n, last: middle - 1n, partition: 0 },
        { first: middle, last: ID_MAX, partition: 1 },
      ],
    });
    expect(await new ScatterReader(new RecordingTransport(), map).idsOfLabel("node", "User")).toEqual([10n, 50n, 60n, 70n]);
  });
});
