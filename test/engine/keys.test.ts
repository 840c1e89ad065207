/**
 * The key layout has two builders: from bigints (the readable reference, used by the benchmark's raw loop) and from
 * the bytes of an encoded mutation list (what partitions write with). They must produce the same bytes, and the
 * record encoder must agree with the encoded-list path, or the raw ceiling would measure a different layout.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { adjacencyKey, adjacencyKeyFrom, adjacencyRange, adjacencyValue, adjacencyValueFrom, labelKey, labelKeyFrom, labelRange } from "../../node/keys.js";
import { writeU64 } from "../../protocol/ids.js";

const id = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const label = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/);

function idBytes(...ids: bigint[]): Buffer {
  const bytes = Buffer.alloc(8 * ids.length);
  ids.forEach((value, i) => writeU64(bytes, value, 8 * i));
  return bytes;
}

describe("key layout", () => {
  it("builds the same adjacency keys and values from bigints and from raw bytes", () => {
    fc.assert(
      fc.property(id, id, label, fc.constantFrom("node" as const, "vector" as const), (owner, edge, name, kind) => {
        const bytes = idBytes(owner, edge);
        const labelBytes = Buffer.from(name, "utf8");
        expect(adjacencyKeyFrom(bytes, 0, labelBytes, 8)).toEqual(adjacencyKey(owner, name, edge));
        expect(adjacencyValueFrom(bytes, 0, kind === "vector" ? 0x56 : 0x4e)).toEqual(adjacencyValue(owner, kind));
        expect(labelKeyFrom("node", labelBytes, bytes, 8)).toEqual(labelKey("node", name, edge));
      }),
    );
  });

  it("keeps every key of an owner and label inside its prefix range, and others outside", () => {
    fc.assert(
      fc.property(id, id, label, label, (owner, edge, name, other) => {
        const key = adjacencyKey(owner, name, edge);
        const inRange = (range: { start: Buffer; end: Buffer }): boolean => Buffer.compare(range.start, key) <= 0 && Buffer.compare(key, range.end) < 0;
        expect(inRange(adjacencyRange(owner, name))).toBe(true);
        expect(inRange(adjacencyRange(owner))).toBe(true);
        if (other !== name) expect(inRange(adjacencyRange(owner, other))).toBe(false);
        const labelled = labelKey("vector", name, edge);
        expect(Buffer.compare(labelRange("vector", name).start, labelled) <= 0 && Buffer.compare(labelled, labelRange("vector", name).end) < 0).toBe(true);
      }),
    );
  });
});
