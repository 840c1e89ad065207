/**
 * The order-preserving encoding of indexed values (node/indexes/index-encoding.ts): for any two values of one kind, the byte
 * order of their encodings is `compareValues`'s order, and equal encodings mean equal values. Checked with
 * fast-check over numbers (integers, fractions, negatives, tiny and huge doubles, bigints beyond 2^53), strings
 * (every code point, NUL included), booleans and dates. Long strings, in an index whose keys leave little room:
 * each encoding fits the room, equal encodings still mean equal values, and the order holds wherever two strings
 * differ within the bytes the key keeps.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeIndexValue, longStringPrefixBytes } from "../../node/indexes/index-encoding.js";
import { compareValues, valuesEqual, type Value } from "../../protocol/values.js";

const numbers: fc.Arbitrary<Value> = fc.oneof(
  fc.double({ noNaN: true }),
  fc.integer(),
  fc.double({ min: -4, max: 4, noNaN: true }),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
  fc.bigInt({ min: 2n ** 53n - 3n, max: 2n ** 53n + 3n }),
  fc.constantFrom<Value>(0, -0, 0.5, -0.5, 1e-300, -1e-300, Number.MIN_VALUE, -Number.MIN_VALUE, Infinity, -Infinity, 2 ** 53, 2 ** 53 + 2, 18446744073709551615n),
);
const strings: fc.Arbitrary<Value> = fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: fc.constantFrom("a", "\0", "\u00ff", "\uffff", "😀") }));
const dates: fc.Arbitrary<Value> = fc.date({ noInvalidDate: true });
const booleans: fc.Arbitrary<Value> = fc.boolean();

function sign(n: number): number {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

describe("index value encoding", () => {
  for (const [name, values] of [["numbers", numbers], ["strings", strings], ["dates", dates], ["booleans", booleans]] as const) {
    it(`keeps the order of ${name}`, () => {
      fc.assert(
        fc.property(values, values, (a, b) => {
          const ea = encodeIndexValue(a)!;
          const eb = encodeIndexValue(b)!;
          expect(ea).toBeDefined();
          expect(eb).toBeDefined();
          expect(sign(Buffer.compare(ea, eb))).toBe(sign(compareValues(a, b)!));
          expect(ea.equals(eb)).toBe(valuesEqual(a, b));
        }),
        { numRuns: 2_000 },
      );
    });
  }

  it("is prefix-free, so the record ID after it never changes the order", () => {
    fc.assert(
      fc.property(fc.oneof(numbers, strings), fc.oneof(numbers, strings), (a, b) => {
        const ea = encodeIndexValue(a)!;
        const eb = encodeIndexValue(b)!;
        if (!ea.equals(eb)) expect(ea.subarray(0, eb.length).equals(eb) || eb.subarray(0, ea.length).equals(ea)).toBe(false);
      }),
      { numRuns: 2_000 },
    );
  });

  it("treats a number and a bigint of one value as one value, and separates neighbours beyond 2^53", () => {
    expect(encodeIndexValue(5)!.equals(encodeIndexValue(5n)!)).toBe(true);
    expect(Buffer.compare(encodeIndexValue(2n ** 53n + 1n)!, encodeIndexValue(2 ** 53)!)).toBe(1);
    expect(Buffer.compare(encodeIndexValue(-1e-20)!, encodeIndexValue(-1)!)).toBe(1);
    expect(Buffer.compare(encodeIndexValue(-1e-20)!, encodeIndexValue(0)!)).toBe(-1);
  });

  it("encodes strings too long for their index by prefix and hash, within the room and in order where the prefixes differ", () => {
    const room = 100;
    const kept = longStringPrefixBytes(room);
    const long = fc.string({ unit: fc.constantFrom("a", "b", "\0", "é", "😀"), minLength: 20, maxLength: 80 });
    fc.assert(
      fc.property(fc.oneof(long, strings), fc.oneof(long, strings), (a, b) => {
        const ea = encodeIndexValue(a, room)!;
        const eb = encodeIndexValue(b, room)!;
        expect(ea.length).toBeLessThanOrEqual(room);
        expect(ea.equals(eb)).toBe(valuesEqual(a, b));
        const [ua, ub] = [Buffer.from(a as string, "utf8"), Buffer.from(b as string, "utf8")];
        if (Buffer.compare(ua.subarray(0, kept), ub.subarray(0, kept)) !== 0) expect(sign(Buffer.compare(ea, eb))).toBe(sign(compareValues(a, b)!));
      }),
      { numRuns: 2_000 },
    );
  });

  it("leaves out what is not indexed", () => {
    for (const value of [NaN, null, new Date(NaN), "\ud800", new Uint8Array([1]), [1], { a: 1 }] as Value[]) expect(encodeIndexValue(value)).toBeUndefined();
  });
});
