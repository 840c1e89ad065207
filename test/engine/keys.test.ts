/**
 * The key layout has two builders: from bigints (the readable reference, used by the benchmark's raw loop) and from
 * the bytes of an encoded mutation list (what partitions write with). They must produce the same bytes, and the
 * record encoder must agree with the encoded-list path, or the raw ceiling would measure a different layout. The
 * write path's reused buffers (AdjacencyScratch, RecordValueScratch) must give the same bytes entry after entry.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AdjacencyScratch,
  adjacencyKey,
  adjacencyKeyFrom,
  adjacencyRange,
  adjacencyValue,
  adjacencyValueFrom,
  labelKey,
  labelKeyFrom,
  labelRange,
} from "../../node/keys.js";
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

  it("reuses one adjacency key per label and one value, each equal to the reference builders entry after entry", () => {
    const entry = fc.record({ owner: id, edge: id, other: id, name: fewLabels, kind: endpointKind });
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 30 }), (entries) => {
        const scratch = new AdjacencyScratch();
        // One Buffer per label, as an encoded list hands each label's bytes to every entry of that label.
        const labelBytes = new Map(["Follows", "Likes", "L", "Ünïcode"].map((name) => [name, Buffer.from(name, "utf8")]));
        for (const { owner, edge, other, name, kind } of entries) {
          const bytes = idBytes(owner, edge, other);
          expect(scratch.key(bytes, 0, labelBytes.get(name)!, 8)).toEqual(adjacencyKey(owner, name, edge));
          expect(scratch.value(bytes, 16, kind === "vector" ? 0x56 : 0x4e)).toEqual(adjacencyValue(other, kind));
        }
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
