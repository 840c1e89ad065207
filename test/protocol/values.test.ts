import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compareStringsByCodePoint,
  compareValues,
  getPath,
  isPlainObject,
  RESERVED_LABEL_KEY,
  valuesEqual,
  valueToJson,
  type Properties,
} from "../../protocol/values.js";

describe("getPath", () => {
  const props: Properties = {
    name: "Ada",
    address: { city: "London", geo: { lat: 51.5, lon: -0.1 }, zip: null },
    tags: ["a", "b"],
    vec: new Float64Array([1, 2]),
    objs: [{ x: 1 }],
    born: new Date("1815-12-10T00:00:00Z"),
  };

  it("reads top-level and nested properties", () => {
    expect(getPath(props, "name")).toBe("Ada");
    expect(getPath(props, "address.city")).toBe("London");
    expect(getPath(props, "address.geo.lat")).toBe(51.5);
    expect(getPath(props, "address.geo")).toEqual({ lat: 51.5, lon: -0.1 });
    expect(getPath(props, "address.zip")).toBeNull();
  });

  it("gives undefined for missing keys and through non-objects", () => {
    expect(getPath(props, "missing")).toBeUndefined();
    expect(getPath(props, "address.country")).toBeUndefined();
    expect(getPath(props, "name.length")).toBeUndefined();
    expect(getPath(props, "address.zip.code")).toBeUndefined();
    expect(getPath(props, "born.getTime")).toBeUndefined();
  });

  it("treats arrays and typed arrays as opaque", () => {
    expect(getPath(props, "tags")).toEqual(["a", "b"]);
    expect(getPath(props, "tags.0")).toBeUndefined();
    expect(getPath(props, "tags.length")).toBeUndefined();
    expect(getPath(props, "vec.0")).toBeUndefined();
    expect(getPath(props, "objs.x")).toBeUndefined();
  });

  it("rejects empty segments and never reaches the prototype", () => {
    expect(getPath(props, "")).toBeUndefined();
    expect(getPath(props, "address..city")).toBeUndefined();
    expect(getPath(props, ".name")).toBeUndefined();
    expect(getPath(props, "address.")).toBeUndefined();
    expect(getPath(props, "constructor")).toBeUndefined();
    expect(getPath(props, "address.toString")).toBeUndefined();
    expect(getPath(props, "__proto__")).toBeUndefined();
  });
});

describe("valuesEqual", () => {
  it("compares numbers and bigints by mathematical value", () => {
    expect(valuesEqual(1, 1n)).toBe(true);
    expect(valuesEqual(1n, 1)).toBe(true);
    expect(valuesEqual(2 ** 60, 2n ** 60n)).toBe(true);
    expect(valuesEqual(2 ** 60, 2n ** 60n + 1n)).toBe(false);
    expect(valuesEqual(1.5, 1n)).toBe(false);
    expect(valuesEqual(0, -0)).toBe(true);
    expect(valuesEqual(Number.NaN, Number.NaN)).toBe(false);
  });

  it("does not mix kinds", () => {
    expect(valuesEqual("1", 1)).toBe(false);
    expect(valuesEqual(true, 1)).toBe(false);
    expect(valuesEqual(null, 0)).toBe(false);
    expect(valuesEqual(null, null)).toBe(true);
    expect(valuesEqual({}, [])).toBe(false);
    expect(valuesEqual(new Date(0), 0)).toBe(false);
  });

  it("compares Dates by instant", () => {
    expect(valuesEqual(new Date("2024-01-01T00:00:00Z"), new Date("2024-01-01T01:00:00+01:00"))).toBe(true);
    expect(valuesEqual(new Date(1), new Date(2))).toBe(false);
  });

  it("compares arrays and numeric typed arrays element by element", () => {
    expect(valuesEqual([1, "a", [true]], [1, "a", [true]])).toBe(true);
    expect(valuesEqual([1, 2], [1, 2, 3])).toBe(false);
    expect(valuesEqual(new Float64Array([1, 2]), new Float64Array([1, 2]))).toBe(true);
    expect(valuesEqual(new Float64Array([1, 2]), new Float64Array([1, 3]))).toBe(false);
    expect(valuesEqual(new Float64Array([1, 2]), [1, 2])).toBe(true);
    expect(valuesEqual(new BigInt64Array([1n, 2n]), [1, 2])).toBe(true);
    expect(valuesEqual(new Int32Array([1, 2]), new Float32Array([1, 2]))).toBe(true);
  });

  it("treats bytes as their own kind", () => {
    expect(valuesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2]))).toBe(true);
    expect(valuesEqual(new Uint8Array([1, 2]), new Uint8Array([2, 1]))).toBe(false);
    expect(valuesEqual(new Uint8Array([1, 2]), [1, 2])).toBe(false);
  });

  it("compares objects deeply regardless of key order", () => {
    expect(valuesEqual({ a: 1, b: { c: [1n] } }, { b: { c: [1] }, a: 1 })).toBe(true);
    expect(valuesEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(valuesEqual({ a: 1, b: 2 }, { a: 1, c: 2 })).toBe(false);
    expect(valuesEqual({ a: null }, {})).toBe(false);
  });
});

describe("compareValues", () => {
  it("orders numbers, bigints and their mixture exactly", () => {
    expect(compareValues(1, 2)).toBeLessThan(0);
    expect(compareValues(2n, 1n)).toBeGreaterThan(0);
    expect(compareValues(3, 3n)).toBe(0);
    expect(compareValues(3n, 3)).toBe(0);
    expect(compareValues(2.5, 3n)).toBeLessThan(0);
    expect(compareValues(3n, 2.5)).toBeGreaterThan(0);
    expect(compareValues(-2.5, -2n)).toBeLessThan(0);
    expect(compareValues(-2.5, -3n)).toBeGreaterThan(0);
    expect(compareValues(Number.POSITIVE_INFINITY, 2n ** 100n)).toBeGreaterThan(0);
    expect(compareValues(Number.NEGATIVE_INFINITY, -(2n ** 100n))).toBeLessThan(0);
  });

  it("does not lose precision above 2^53", () => {
    // 2^53 as a double equals 2^53 + 1 once the bigint is rounded; an exact comparison keeps them apart.
    expect(compareValues(2 ** 53, 2n ** 53n + 1n)).toBeLessThan(0);
    expect(compareValues(2n ** 53n + 1n, 2 ** 53)).toBeGreaterThan(0);
    expect(compareValues(2 ** 64, 2n ** 64n - 1n)).toBeGreaterThan(0);
    expect(compareValues(2 ** 64, 2n ** 64n)).toBe(0);
  });

  it("agrees with exact rational comparison on random number/bigint pairs", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }), (n, b) => {
        const floor = BigInt(Math.floor(n));
        const expected = floor < b ? -1 : floor > b ? 1 : Number.isInteger(n) ? 0 : 1;
        expect(Math.sign(compareValues(n, b) ?? Number.NaN)).toBe(expected);
        expect(Math.sign(compareValues(b, n) ?? Number.NaN)).toBe(expected === 0 ? 0 : -expected);
      }),
    );
  });

  it("orders strings by code point, not UTF-16 unit", () => {
    expect(compareValues("a", "b")).toBeLessThan(0);
    expect(compareValues("ab", "a")).toBeGreaterThan(0);
    expect(compareValues("", "a")).toBeLessThan(0);
    expect(compareValues("x", "x")).toBe(0);
    // U+FF5E (BMP, above the surrogates) sorts before U+1F600 (astral), though its UTF-16 unit is larger.
    expect("\uff5e" < "\u{1f600}").toBe(false);
    expect(compareValues("\uff5e", "\u{1f600}")).toBeLessThan(0);
    expect(compareStringsByCodePoint("\u{1f600}", "\uff5e")).toBeGreaterThan(0);
    expect(compareStringsByCodePoint("\u{1f600}", "\u{1f601}")).toBeLessThan(0);
  });

  it("agrees with UTF-8 byte order on random strings", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.string({ unit: "grapheme" }), (a, b) => {
        const expected = Math.sign(Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
        expect(Math.sign(compareStringsByCodePoint(a, b))).toBe(expected);
      }),
    );
  });

  it("orders Dates by instant and booleans false before true", () => {
    expect(compareValues(new Date(1), new Date(2))).toBeLessThan(0);
    expect(compareValues(new Date(5), new Date(5))).toBe(0);
    expect(compareValues(false, true)).toBeLessThan(0);
    expect(compareValues(true, false)).toBeGreaterThan(0);
    expect(compareValues(true, true)).toBe(0);
  });

  it("returns undefined for values that are not comparable", () => {
    expect(compareValues(1, "1")).toBeUndefined();
    expect(compareValues("1", 1n)).toBeUndefined();
    expect(compareValues(null, 1)).toBeUndefined();
    expect(compareValues(null, null)).toBeUndefined();
    expect(compareValues(true, 1)).toBeUndefined();
    expect(compareValues(new Date(0), 0)).toBeUndefined();
    expect(compareValues([1], [1])).toBeUndefined();
    expect(compareValues({ a: 1 }, { a: 1 })).toBeUndefined();
    expect(compareValues(new Float64Array([1]), new Float64Array([1]))).toBeUndefined();
    expect(compareValues(Number.NaN, 1)).toBeUndefined();
    expect(compareValues(Number.NaN, 1n)).toBeUndefined();
    expect(compareValues(new Date(Number.NaN), new Date(0))).toBeUndefined();
  });
});

describe("valueToJson", () => {
  it("writes bigints (IDs, integers beyond 2^53) as decimal strings, however small", () => {
    expect(valueToJson(5n)).toBe("5");
    expect(valueToJson([5n, { id: 0n }])).toEqual(["5", { id: "0" }]);
    expect(valueToJson(new BigInt64Array([5n, 2n ** 60n]))).toEqual([5, "1152921504606846976"]);
    expect(valueToJson(9007199254740991n)).toBe("9007199254740991");
    expect(valueToJson(9007199254740992n)).toBe("9007199254740992");
    expect(valueToJson(-9007199254740992n)).toBe("-9007199254740992");
    expect(valueToJson(2n ** 64n - 1n)).toBe("18446744073709551615");
  });

  it("writes Dates as ISO 8601, bytes as base64 and typed arrays as plain arrays", () => {
    expect(valueToJson(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)))).toBe("2024-01-02T03:04:05.006Z");
    expect(valueToJson(new Uint8Array([104, 105]))).toBe("aGk=");
    expect(valueToJson(new Uint8Array(new Uint8Array([0, 104, 105, 0]).buffer, 1, 2))).toBe("aGk=");
    expect(valueToJson(new Float64Array([1.5, Number.NaN]))).toEqual([1.5, null]);
    expect(valueToJson(new Float32Array([0.5]))).toEqual([0.5]);
    expect(valueToJson(new Int32Array([-1, 2]))).toEqual([-1, 2]);
    expect(valueToJson(new BigInt64Array([1n, 2n ** 62n]))).toEqual([1, "4611686018427387904"]);
  });

  it("maps NaN and infinities to null and recurses into arrays and objects", () => {
    expect(valueToJson(Number.NaN)).toBeNull();
    expect(valueToJson(Number.POSITIVE_INFINITY)).toBeNull();
    expect(valueToJson(null)).toBeNull();
    const value = { a: [1n, new Date(0), { b: 2n ** 70n }], s: "x", t: true };
    expect(valueToJson(value)).toEqual({ a: ["1", "1970-01-01T00:00:00.000Z", { b: "1180591620717411303424" }], s: "x", t: true });
    expect(JSON.stringify(valueToJson(value))).toBe(
      '{"a":["1","1970-01-01T00:00:00.000Z",{"b":"1180591620717411303424"}],"s":"x","t":true}',
    );
  });
});

describe("helpers", () => {
  it("reserves $label", () => {
    expect(RESERVED_LABEL_KEY).toBe("$label");
  });

  it("knows plain objects", () => {
    expect(isPlainObject({})).toBe(true);
    expect(isPlainObject(Object.create(null))).toBe(true);
    expect(isPlainObject(JSON.parse('{"a":1}'))).toBe(true);
    expect(isPlainObject([])).toBe(false);
    expect(isPlainObject(new Date())).toBe(false);
    expect(isPlainObject(new Map())).toBe(false);
    expect(isPlainObject(null)).toBe(false);
    expect(isPlainObject("x")).toBe(false);
  });
});
