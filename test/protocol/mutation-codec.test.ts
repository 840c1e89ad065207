/** The binary mutation list round-trips every mutation and record kind exactly, and refuses corrupt input. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { decodeMutations, encodeMutations } from "../../protocol/mutation-codec.js";
import type { Mutation } from "../../protocol/records.js";

const id = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const label = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,12}$/);
const props = fc.dictionary(
  fc.stringMatching(/^[a-z]{1,6}$/),
  // Negative zero is stored as 0 (msgpack writes a whole-valued float as an integer), as everywhere in Silk.
  fc
    .oneof(fc.integer(), fc.string(), fc.boolean(), fc.double({ noNaN: true }), fc.bigInt({ min: 2n ** 60n, max: 2n ** 63n }))
    .map((value) => (Object.is(value, -0) ? 0 : value)),
);
const endpoint = fc.constantFrom("node" as const, "vector" as const);
const record = fc.oneof(
  fc.record({ kind: fc.constant("node" as const), id, label, props }),
  fc.record({ kind: fc.constant("edge" as const), id, label, from: id, to: id, fromKind: endpoint, toKind: endpoint, props }),
  fc.record({
    kind: fc.constant("vector" as const),
    id,
    label,
    vector: fc.array(fc.double({ noNaN: true }), { minLength: 1, maxLength: 8 }).map((values) => Float64Array.from(values)),
    props,
  }),
);
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant("put_record" as const), record }),
  fc.record({ op: fc.constant("delete_record" as const), record }),
  fc.record({ op: fc.constant("put_in" as const), target: id, label, edge: id, source: id, sourceKind: endpoint }),
  fc.record({ op: fc.constant("delete_in" as const), target: id, label, edge: id }),
  fc.record({ op: fc.constant("put_out" as const), source: id, label, edge: id, target: id, targetKind: endpoint }),
  fc.record({ op: fc.constant("delete_out" as const), source: id, label, edge: id }),
);

describe("mutation codec", () => {
  it("round-trips any mutation list", () => {
    fc.assert(
      fc.property(fc.array(mutation, { maxLength: 30 }), (mutations) => {
        expect(decodeMutations(encodeMutations(mutations))).toEqual(mutations);
      }),
      { numRuns: 300 },
    );
  });

  it("stores negative zero as zero, as msgpack does for every stored property", () => {
    const [decoded] = decodeMutations(encodeMutations([{ op: "put_record", record: { kind: "node", id: 1n, label: "N", props: { z: -0 } } }]));
    expect(Object.is((decoded as unknown as { record: { props: { z: number } } }).record.props.z, 0)).toBe(true);
  });

  it("refuses a truncated or padded list", () => {
    const bytes = encodeMutations([{ op: "delete_in", target: 1n, label: "L", edge: 2n }]);
    expect(() => decodeMutations(Buffer.concat([bytes, Buffer.from([0])]))).toThrow(SilkError);
    expect(() => decodeMutations(bytes.subarray(0, bytes.length - 3))).toThrow();
  });
});
