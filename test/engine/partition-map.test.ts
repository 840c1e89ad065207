/**
 * The partition map (cluster/partition-map.ts): the default map is today's N equal ranges; reassigning ranges keeps
 * the entries covering the u64 space, merged and ordered; a pending partition allocates but owns nothing until it
 * serves; JSON round-trips bigints exactly; malformed maps and stored JSON are refused with stable codes.
 */
import { describe, expect, it } from "vitest";
import { ID_SPACE, PartitionMap, PARTITIONS_MAX } from "../../cluster/partition-map.js";
import { SilkError } from "../../protocol/errors.js";

function code(work: () => unknown): string {
  try {
    work();
  } catch (cause) {
    if (cause instanceof SilkError) return cause.code;
    throw cause;
  }
  throw new Error("expected a SilkError");
}

describe("the default map", () => {
  it("cuts the ID space into equal ranges owned in partition order", () => {
    const map = new PartitionMap(4);
    const width = ID_SPACE / 4n;
    expect(map.version).toBe(0);
    expect(map.partitions).toEqual([0, 1, 2, 3]);
    expect(map.entries.map((entry) => entry.partition)).toEqual([0, 1, 2, 3]);
    expect(map.ranges.map((range) => [range.index, range.first, range.last])).toEqual([
      [0, 0n, width - 1n],
      [1, width, 2n * width - 1n],
      [2, 2n * width, 3n * width - 1n],
      [3, 3n * width, ID_SPACE - 1n],
    ]);
    for (const [id, owner] of [[0n, 0], [width - 1n, 0], [width, 1], [3n * width - 1n, 2], [ID_SPACE - 1n, 3]] as const) expect(map.partitionOf(id)).toBe(owner);
    expect(map.idOrderFollowsPartitions).toBe(true);
    expect(map.pending).toBeUndefined();
  });

  it("gives the last partition the remainder of an uneven cut", () => {
    const map = new PartitionMap(3);
    expect(map.ranges[2].last).toBe(ID_SPACE - 1n);
    expect(map.partitionOf(ID_SPACE - 1n)).toBe(2);
    expect(map.partitionOf(map.ranges[1].last)).toBe(1);
  });

  it("refuses a bad partition count", () => {
    for (const count of [0, -1, 1.5, PARTITIONS_MAX + 1, Number.NaN]) expect(code(() => new PartitionMap(count))).toBe("invalid_option");
    expect(new PartitionMap(PARTITIONS_MAX).count).toBe(PARTITIONS_MAX);
  });
});

describe("rebalancing a map", () => {
  it("moves a range inside a partition's entry to another partition and back (entries merge again)", () => {
    const map = new PartitionMap(2);
    const moved = map.withRange({ first: 100n, last: 199n }, 1);
    expect(moved.version).toBe(1);
    expect(moved.entries.map((entry) => [entry.first, entry.last, entry.partition])).toEqual([
      [0n, 99n, 0],
      [100n, 199n, 1],
      [200n, ID_SPACE / 2n - 1n, 0],
      [ID_SPACE / 2n, ID_SPACE - 1n, 1],
    ]);
    expect([99n, 100n, 199n, 200n].map((id) => moved.partitionOf(id))).toEqual([0, 1, 1, 0]);
    expect(moved.idOrderFollowsPartitions).toBe(false);
    expect(moved.rangesOf(1)).toEqual([{ first: 100n, last: 199n }, { first: ID_SPACE / 2n, last: ID_SPACE - 1n }]);
    // Allocation ranges do not move with ownership.
    expect(moved.ranges).toEqual(map.ranges);
    const back = moved.withRange({ first: 100n, last: 199n }, 0);
    expect(back.entries).toEqual(map.entries);
    expect(back.version).toBe(2);
  });

  it("moves a range spanning several entries, and the top end of the space", () => {
    const map = new PartitionMap(3).withRange({ first: 10n, last: 20n }, 2);
    const spanning = map.withRange({ first: 5n, last: ID_SPACE - 1n }, 0);
    expect(spanning.entries).toEqual([{ first: 0n, last: ID_SPACE - 1n, partition: 0 }]);
    expect(spanning.partitionOf(ID_SPACE - 1n)).toBe(0);
  });

  it("adds a partition: pending (allocates, owns nothing, does not serve), then serving its allocation range", () => {
    const map = new PartitionMap(2);
    const carved = { first: ID_SPACE / 4n, last: ID_SPACE / 2n - 1n };
    const pending = map.withPending(carved);
    expect(pending.pending).toBe(2);
    expect(pending.count).toBe(2);
    expect(pending.partitions).toEqual([0, 1]);
    expect(pending.allocationOf(2)).toEqual(carved);
    expect(pending.partitionOf(carved.first)).toBe(0);
    expect(code(() => pending.withPending({ first: 1n, last: 2n }))).toBe("invalid_option");
    const serving = pending.withPendingServing();
    expect(serving.count).toBe(3);
    expect(serving.partitions).toEqual([0, 1, 2]);
    expect(serving.pending).toBeUndefined();
    expect(serving.partitionOf(carved.first)).toBe(2);
    expect(serving.partitionOf(carved.last)).toBe(2);
    expect(serving.partitionOf(carved.first - 1n)).toBe(0);
    expect(serving.partitionOf(carved.last + 1n)).toBe(1);
    expect(serving.ranges.map((range) => range.index)).toEqual([0, 1, 2]);
    expect(serving.idOrderFollowsPartitions).toBe(false);
    expect(code(() => serving.withPendingServing())).toBe("invalid_option");
  });

  it("refuses moving to an unknown partition, a reversed range or one beyond the ID space", () => {
    const map = new PartitionMap(2);
    expect(code(() => map.withRange({ first: 1n, last: 2n }, 2))).toBe("invalid_option");
    expect(code(() => map.withRange({ first: 3n, last: 2n }, 1))).toBe("invalid_option");
    expect(code(() => map.withRange({ first: 0n, last: ID_SPACE }, 1))).toBe("invalid_option");
    expect(code(() => map.withPending({ first: 10n, last: 5n }))).toBe("invalid_option");
  });

  it("finds owners by binary search over many entries, as a linear scan does", () => {
    let map = new PartitionMap(5);
    let seed = 7n;
    const random = (): bigint => (seed = (seed * 6364136223846793005n + 1442695040888963407n) % ID_SPACE);
    for (let i = 0; i < 60; i++) {
      const a = random();
      const b = a + (random() % 1_000_000n);
      map = map.withRange({ first: a, last: b < ID_SPACE ? b : ID_SPACE - 1n }, Number(random() % 5n));
    }
    for (let i = 0; i < 500; i++) {
      const id = random();
      const linear = map.entries.find((entry) => id >= entry.first && id <= entry.last)!.partition;
      expect(map.partitionOf(id)).toBe(linear);
    }
    for (const entry of map.entries) {
      expect(map.partitionOf(entry.first)).toBe(entry.partition);
      expect(map.partitionOf(entry.last)).toBe(entry.partition);
    }
  });
});

describe("serialising a map", () => {
  it("round-trips through JSON text with bigints as strings", () => {
    const map = new PartitionMap(3).withRange({ first: 12345678901234567890n, last: ID_SPACE - 1n }, 0).withPending({ first: 2n ** 62n, last: 2n ** 62n + 999n });
    const text = JSON.stringify(map);
    expect(text).toContain('"12345678901234567890"');
    const back = PartitionMap.fromJSON(JSON.parse(text));
    expect(back.version).toBe(map.version);
    expect(back.entries).toEqual(map.entries);
    expect(back.pending).toBe(3);
    expect(back.allocationOf(3)).toEqual({ first: 2n ** 62n, last: 2n ** 62n + 999n });
  });

  it("refuses malformed stored maps with internal", () => {
    const good = new PartitionMap(2).toJSON();
    const bad: unknown[] = [
      null,
      "map",
      { ...good, version: -1 },
      { ...good, entries: undefined },
      { ...good, entries: [{ first: "0", last: "10", partition: 0 }] },
      { ...good, entries: [{ ...good.entries[0], first: "1" }, good.entries[1]] },
      { ...good, entries: [{ ...good.entries[0], first: "x" }, good.entries[1]] },
      { ...good, entries: [good.entries[0], { ...good.entries[1], partition: 5 }] },
      { ...good, entries: [good.entries[0], { ...good.entries[1], partition: 0 }] },
      { ...good, allocations: [good.allocations[0]] },
      { ...good, allocations: [good.allocations[0], { first: "9", last: "8" }] },
      { ...good, count: 0 },
    ];
    for (const value of bad) expect(code(() => PartitionMap.fromJSON(value))).toBe("internal");
  });
});
