/**
 * The key layout has two builders: from bigints (the readable reference) and from the bytes of an encoded mutation
 * list (what partitions write with). They must produce the same bytes, and the record encoder must agree with the
 * encoded-list path. The write path's reused edge value buffer (RecordValueScratch) must give the same bytes entry
 * after entry. Adjacency block keys must stay inside their list's range and label.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { adjacencyBlockLabel, adjacencyHeadKey } from "../../node/store/adjacency.js";
import { adjacencyRange, labelKey, labelKeyFrom, labelRange } from "../../node/keys.js";
import { encodeRecord, encodeRecordFrom, RecordValueScratch } from "../../node/record-codec.js";
import { writeU64 } from "../../protocol/ids.js";
import { decodeMutations, encodeMutations, visitMutations } from "../../protocol/mutation-codec.js";
import type { Mutation, StoredRecord } from "../../protocol/records.js";

const id = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const label = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/);
const endpointKind = fc.constantFrom("node" as const, "vector" as const);
/** Edges and nodes over a few labels, so that reused per-label buffers are reused, with and without properties. */
const fewLabels = fc.constantFrom("Follows", "Likes", "L", "Ünïcode");
const props = fc.oneof(fc.constant({}), fc.dictionary(fc.constantFrom("a", "weight"), fc.oneof(fc.integer(), fc.string())));
const record: fc.Arbitrary<StoredRecord> = fc.oneof(
  fc.record({ kind: fc.constant("edge" as const), id, label: fewLabels, from: id, to: id, fromKind: endpointKind, toKind: endpointKind, props }),
  fc.record({ kind: fc.constant("node" as const), id, label: fewLabels, props }),
);

function idBytes(...ids: bigint[]): Buffer {
  const bytes = Buffer.alloc(8 * ids.length);
  ids.forEach((value, i) => writeU64(bytes, value, 8 * i));
  return bytes;
}

/**
 * What the write path stores for a record: encodeRecord's bytes, except that a node or vector without properties
 * ends in the one-byte empty map (0x80) where msgpackr writes an empty object as a three-byte map16 (0xde 0 0).
 * Both decode to the same record.
 */
function storedBytes(stored: StoredRecord): Buffer {
  const bytes = encodeRecord(stored);
  if (stored.kind === "edge" || Object.keys(stored.props).length > 0) return bytes;
  expect([...bytes.subarray(bytes.length - 3)]).toEqual([0xde, 0, 0]);
  return Buffer.concat([bytes.subarray(0, bytes.length - 3), Buffer.from([0x80])]);
}

describe("key layout", () => {
  it("builds the same label keys from bigints and from raw bytes", () => {
    fc.assert(
      fc.property(id, id, label, (owner, edge, name) => {
        const bytes = idBytes(owner, edge);
        const labelBytes = Buffer.from(name, "utf8");
        expect(labelKeyFrom("node", labelBytes, bytes, 8)).toEqual(labelKey("node", name, edge));
      }),
    );
  });

  it("keeps every adjacency block key of an owner and label inside its range, with its label, and others outside", () => {
    fc.assert(
      fc.property(id, id, label, label, fc.boolean(), (owner, fence, name, other, head) => {
        // A head block's key, or a later block's: the head key and a fence.
        const key = head ? adjacencyHeadKey(owner, name) : Buffer.concat([adjacencyHeadKey(owner, name), idBytes(fence)]);
        expect(adjacencyBlockLabel(key)).toBe(name);
        const inRange = (range: { start: Buffer; end: Buffer }): boolean => Buffer.compare(range.start, key) <= 0 && Buffer.compare(key, range.end) < 0;
        expect(inRange(adjacencyRange(owner, name))).toBe(true);
        expect(inRange(adjacencyRange(owner))).toBe(true);
        if (other !== name) expect(inRange(adjacencyRange(owner, other))).toBe(false);
        const labelled = labelKey("vector", name, fence);
        expect(Buffer.compare(labelRange("vector", name).start, labelled) <= 0 && Buffer.compare(labelled, labelRange("vector", name).end) < 0).toBe(true);
      }),
    );
  });

  it("stores a record of an encoded list as encodeRecord stores the record, through the reused edge values too", () => {
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 30 }), (records) => {
        const encoded = encodeMutations(records.map((stored): Mutation => ({ op: "put_record", record: stored })));
        const decoded = decodeMutations(encoded).map((mutation) => (mutation as Extract<Mutation, { op: "put_record" }>).record);
        const scratch = new RecordValueScratch();
        let at = 0;
        visitMutations(encoded, {
          putRecord: (bytes, visited) => {
            const expected = storedBytes(decoded[at]);
            expect(encodeRecordFrom(bytes, visited)).toEqual(expected);
            expect(scratch.value(bytes, visited)).toEqual(expected);
            at += 1;
          },
          deleteRecord: () => expect.unreachable(),
          putIn: () => expect.unreachable(),
          deleteIn: () => expect.unreachable(),
          putOut: () => expect.unreachable(),
          deleteOut: () => expect.unreachable(),
        });
        expect(at).toBe(records.length);
      }),
    );
  });
});
