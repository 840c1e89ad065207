/**
 * The SDK's exact JSON (sdk/json.ts): integers beyond 2^53 read as bigints and written back as bare digits, and
 * everything else exactly as JSON.parse and JSON.stringify do.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseJsonExact, stringifyJsonExact } from "../../sdk/json.js";

describe("parseJsonExact", () => {
  it("reads integers beyond 2^53 as bigints with their exact digits, and safe ones as numbers", () => {
    expect(parseJsonExact('{"a":9223372036854775809,"b":-9007199254740993,"c":9007199254740991,"d":[18446744073709551615]}')).toEqual({
      a: 9223372036854775809n,
      b: -9007199254740993n,
      c: 9007199254740991,
      d: [18446744073709551615n],
    });
  });

  it("leaves fractions, exponents and digits inside strings as JSON.parse reads them", () => {
    const text = '{"f":12345678901234567.5,"e":1e300,"s":"12345678901234567890","n":null,"t":true}';
    expect(parseJsonExact(text)).toEqual(JSON.parse(text));
  });

  it("reads every JSON text back to the same text, and as JSON.parse does where it holds no unsafe integer", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        expect(stringifyJsonExact(parseJsonExact(text))).toBe(text);
        if (!/[0-9]{16}/.test(text)) expect(parseJsonExact(text)).toEqual(JSON.parse(text));
      }),
    );
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n })), (integers) => {
        expect(parseJsonExact(`[${integers.join(",")}]`)).toEqual(integers.map((n) => (n >= -(2n ** 53n - 1n) && n <= 2n ** 53n - 1n ? Number(n) : n)));
      }),
    );
    expect(parseJsonExact('{"k":1,"k":12345678901234567890}')).toEqual({ k: 12345678901234567890n });
  });

  it("throws on text that is not JSON", () => {
    expect(() => parseJsonExact("{")).toThrow();
    expect(() => parseJsonExact('{"a":12345678901234567890')).toThrow();
  });
});

describe("stringifyJsonExact", () => {
  it("writes bigints as bare integers that parseJsonExact reads back", () => {
    const value = { id: 9223372036854775809n, ids: [1n, 2], nested: { at: new Date(0) } };
    const text = stringifyJsonExact(value);
    expect(text).toBe('{"id":9223372036854775809,"ids":[1,2],"nested":{"at":"1970-01-01T00:00:00.000Z"}}');
    expect(parseJsonExact(text)).toEqual({ id: 9223372036854775809n, ids: [1, 2], nested: { at: "1970-01-01T00:00:00.000Z" } });
  });

  it("writes every value without a bigint exactly as JSON.stringify does", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(stringifyJsonExact(value)).toBe(JSON.stringify(value));
      }),
    );
  });
});
