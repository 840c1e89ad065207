/**
 * Vector records are decoded field by field, their vectors as views on shared slabs (node/record-codec.ts): the
 * result must be what msgpackr's own decoding of the stored bytes gives, for every label length, dimension (the
 * three msgpack extension sizes, and vectors larger than a slab's share) and property set, and a vector decoded
 * earlier must keep its values however many are decoded after it. `storedVectorInto` (the exact scans' read of a
 * stored vector without decoding it) must give msgpackr's vector rounded to float32, refuse another length, and
 * leave a value of another layout to the decoder.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeRecord, encodeRecord, packr, storedVectorInto } from "../../node/record-codec.js";
import type { StoredRecord } from "../../protocol/records.js";

const vectorRecord = fc.record({
  label: fc.string({ minLength: 1, maxLength: 60 }),
  vector: fc.oneof(
    fc.float64Array({ maxLength: 40, noDefaultInfinity: true, noNaN: true }),
    fc.integer({ min: 1020, max: 1030 }).map((n) => Float64Array.from({ length: n }, (_, i) => i / 7)),
    fc.integer({ min: 8190, max: 8200 }).map((n) => Float64Array.from({ length: n }, (_, i) => -i)),
  ),
  props: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(fc.integer(), fc.string(), fc.boolean(), fc.constant(null))),
});

describe("vector record decoding", () => {
  it("gives msgpackr's reading of the stored bytes", () => {
    fc.assert(
      fc.property(vectorRecord, ({ label, vector, props }) => {
        const record: StoredRecord = { kind: "vector", id: 7n, label, vector, props };
        const bytes = encodeRecord(record);
        const [generalLabel, generalVector, generalProps] = packr.unpack(bytes) as [string, Float64Array, Record<string, unknown>];
        const decoded = decodeRecord("vector", 7n, bytes);
        expect(decoded).toEqual({ kind: "vector", id: 7n, label: generalLabel, vector: generalVector, props: generalProps });
        expect(decoded.kind === "vector" && decoded.vector).toBeInstanceOf(Float64Array);
      }),
      { numRuns: 300, seed: 7 },
    );
  });

  it("keeps every decoded vector intact while later ones fill and replace the shared slabs", () => {
    const decoded: Float64Array[] = [];
    for (let i = 0; i < 400; i += 1) {
      const vector = Float64Array.from({ length: 784 }, (_, j) => i * 1000 + j);
      const bytes = encodeRecord({ kind: "vector", id: BigInt(i), label: "Digit", vector, props: { row: i } });
      const record = decodeRecord("vector", BigInt(i), bytes);
      if (record.kind !== "vector") throw new Error("not a vector");
      decoded.push(record.vector);
      bytes.fill(0); // the buffer lmdb-js reads into is reused: nothing decoded may refer to it
    }
    // Decoded as views on slabs (the fast path), not as arrays of their own.
    expect(decoded[0].buffer.byteLength).toBeGreaterThan(decoded[0].byteLength);
    decoded.forEach((vector, i) => {
      expect(vector.length).toBe(784);
      expect(vector[0]).toBe(i * 1000);
      expect(vector[783]).toBe(i * 1000 + 783);
    });
  });

  it("reads a stored vector rounded to float32 without decoding it, or tells that it cannot", () => {
    fc.assert(
      fc.property(vectorRecord, ({ label, vector, props }) => {
        const bytes = encodeRecord({ kind: "vector", id: 7n, label, vector, props });
        const [, generalVector] = packr.unpack(bytes) as [string, Float64Array];
        const into = new Float32Array(vector.length).fill(Number.NaN);
        expect(storedVectorInto(bytes, into)).toBe(true);
        expect(into).toEqual(Float32Array.from(generalVector));
        const other = new Float32Array(vector.length + 1).fill(3);
        expect(storedVectorInto(bytes, other)).toBe(false);
        expect(other.every((component) => component === 3)).toBe(true);
      }),
      { numRuns: 100, seed: 11 },
    );
    // A node's value, and a vector record whose vector msgpackr wrote as a plain array: not this layout.
    const into = new Float32Array(2);
    expect(storedVectorInto(encodeRecord({ kind: "node", id: 1n, label: "Doc", props: { v: [1, 2] } }), into)).toBeUndefined();
    expect(storedVectorInto(packr.pack(["Doc", [1, 2], {}]), into)).toBeUndefined();
  });
});
