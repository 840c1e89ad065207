import { describe, expect, it } from "vitest";
import type { ErrorCode } from "../../protocol/errors.js";
import { SilkError } from "../../protocol/errors.js";
import { coerceValue, parseSchema, type FieldType, type ScalarTypeName } from "../../protocol/schema.js";

const scalar = (name: ScalarTypeName): FieldType => ({ kind: "scalar", name });
const arrayOf = (element: FieldType): FieldType => ({ kind: "array", element });

function coerce(type: FieldType | ScalarTypeName, input: unknown): unknown {
  return coerceValue(typeof type === "string" ? scalar(type) : type, input, "AddN<User>.f");
}

function failure(type: FieldType | ScalarTypeName, input: unknown): SilkError {
  try {
    coerce(type, input);
  } catch (error) {
    expect(error).toBeInstanceOf(SilkError);
    return error as SilkError;
  }
  throw new Error(`coerceValue accepted ${String(input)}`);
}

function expectFailure(type: FieldType | ScalarTypeName, input: unknown, code: ErrorCode): void {
  const error = failure(type, input);
  expect(error.code, `${String(input)}`).toBe(code);
  expect(error.message).toContain("AddN<User>.f");
}

describe("String and Boolean", () => {
  it("accept only their own kind", () => {
    expect(coerce("String", "")).toBe("");
    expect(coerce("String", "héllo")).toBe("héllo");
    expect(coerce("Boolean", true)).toBe(true);
    expect(coerce("Boolean", false)).toBe(false);
    for (const bad of [1, true, null, undefined, ["a"], { a: 1 }, 1n]) expectFailure("String", bad, "invalid_type");
    for (const bad of [0, 1, "true", null, [true]]) expectFailure("Boolean", bad, "invalid_type");
  });

  it("name the place, the expected type and what was given", () => {
    expect(failure("String", 42).message).toBe("AddN<User>.f: expected String, got the number 42");
    expect(failure("Boolean", "yes").message).toBe('AddN<User>.f: expected Boolean, got the string "yes"');
    expect(failure("String", null).message).toBe("AddN<User>.f: expected String, got null");
  });
});

describe("F32 and F64", () => {
  it("accept finite numbers and safe bigints as numbers", () => {
    expect(coerce("F64", 1.25)).toBe(1.25);
    expect(coerce("F64", -0.5)).toBe(-0.5);
    expect(coerce("F64", 1e300)).toBe(1e300);
    expect(coerce("F64", 7n)).toBe(7);
    expect(coerce("F32", 3.5)).toBe(3.5);
    expect(coerce("F32", 3.4e38)).toBe(3.4e38);
  });

  it("reject non-finite values, values beyond F32 and other kinds", () => {
    expectFailure("F64", Number.NaN, "invalid_value");
    expectFailure("F64", Number.POSITIVE_INFINITY, "invalid_value");
    expectFailure("F32", 3.5e38, "invalid_value");
    expectFailure("F32", -1e39, "invalid_value");
    expectFailure("F64", 2n ** 60n, "invalid_value");
    expectFailure("F64", "1.5", "invalid_type");
    expectFailure("F64", true, "invalid_type");
    expectFailure("F64", null, "invalid_type");
  });
});

describe("integers", () => {
  const ranges: [ScalarTypeName, bigint, bigint][] = [
    ["I8", -128n, 127n],
    ["I16", -32768n, 32767n],
    ["I32", -2147483648n, 2147483647n],
    ["I64", -9223372036854775808n, 9223372036854775807n],
    ["U8", 0n, 255n],
    ["U16", 0n, 65535n],
    ["U32", 0n, 4294967295n],
    ["U64", 0n, 18446744073709551615n],
    ["U128", 0n, 340282366920938463463374607431768211455n],
  ];

  it.each(ranges)("%s accepts its bounds and rejects one beyond each", (name, min, max) => {
    const stored = (b: bigint) => (b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b);
    expect(coerce(name, min)).toBe(stored(min));
    expect(coerce(name, max)).toBe(stored(max));
    expect(coerce(name, min.toString())).toBe(stored(min));
    expect(coerce(name, max.toString())).toBe(stored(max));
    expectFailure(name, min - 1n, "invalid_value");
    expectFailure(name, max + 1n, "invalid_value");
    expectFailure(name, (min - 1n).toString(), "invalid_value");
    expectFailure(name, (max + 1n).toString(), "invalid_value");
  });

  it("keep safe integers as numbers and larger ones as bigints", () => {
    expect(coerce("U64", 5)).toBe(5);
    expect(coerce("U64", 5n)).toBe(5);
    expect(coerce("U64", "5")).toBe(5);
    expect(coerce("I64", "-9007199254740991")).toBe(-9007199254740991);
    expect(coerce("I64", "-9007199254740992")).toBe(-9007199254740992n);
    expect(coerce("U64", "9007199254740992")).toBe(9007199254740992n);
    expect(coerce("U128", "0000340282366920938463463374607431768211455")).toBe(2n ** 128n - 1n);
    expect(coerce("I32", "-0")).toBe(0);
    expect(Object.is(coerce("I32", -0), 0)).toBe(true);
  });

  it("name the range in out-of-range messages", () => {
    expect(failure("U8", 256).message).toBe("AddN<User>.f: 256 is out of range for U8 (0 to 255)");
    expect(failure("U32", -1).message).toBe("AddN<User>.f: -1 is out of range for U32 (0 to 4294967295)");
  });

  it("reject fractions, unsafe floats, malformed strings and other kinds", () => {
    expectFailure("I32", 1.5, "invalid_type");
    expectFailure("I32", Number.NaN, "invalid_type");
    expectFailure("I32", Number.POSITIVE_INFINITY, "invalid_type");
    expectFailure("U64", 1e20, "invalid_value");
    expectFailure("U64", 2 ** 53, "invalid_value");
    for (const text of ["1.5", "12a", " 1", "+1", "1e3", "", "-", "0x10"]) expectFailure("I64", text, "invalid_value");
    expectFailure("U128", "9".repeat(1000), "invalid_value");
    expectFailure("U8", true, "invalid_type");
    expectFailure("U8", null, "invalid_type");
    expectFailure("U8", [1], "invalid_type");
  });
});

describe("Date", () => {
  it("accepts date-only and UTC timestamp forms, and offsets", () => {
    expect(coerce("Date", "2024-02-29")).toEqual(new Date(Date.UTC(2024, 1, 29)));
    expect(coerce("Date", "2024-01-02T03:04:05Z")).toEqual(new Date(Date.UTC(2024, 0, 2, 3, 4, 5)));
    expect(coerce("Date", "2024-01-02T03:04:05.5Z")).toEqual(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 500)));
    expect(coerce("Date", "2024-01-02T03:04:05.123456789Z")).toEqual(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 123)));
    expect(coerce("Date", "2024-01-02T03:04:05+02:30")).toEqual(new Date(Date.UTC(2024, 0, 2, 0, 34, 5)));
    expect(coerce("Date", "2024-01-01T23:00:00-01:00")).toEqual(new Date(Date.UTC(2024, 0, 2, 0, 0, 0)));
    expect((coerce("Date", "0050-06-01") as Date).getUTCFullYear()).toBe(50);
  });

  it("copies Date objects and rejects invalid ones", () => {
    const original = new Date(1000);
    const stored = coerce("Date", original) as Date;
    expect(stored).toEqual(original);
    expect(stored).not.toBe(original);
    expectFailure("Date", new Date(Number.NaN), "invalid_value");
  });

  it("rejects strings that are not one of the two ISO 8601 forms, or are not real dates", () => {
    for (const text of [
      "2023-02-29", "2024-13-01", "2024-00-10", "2024-04-31", "2024-01-01T24:00:00Z", "2024-01-01T10:60:00Z",
      "2024-01-01T10:00:60Z", "2024-01-01T10:00:00", "2024-01-01 10:00:00Z", "2024-01-01T10:00Z", "24-01-01",
      "yesterday", "", "2024-01-01T10:00:00+25:00", "2024-01-01T10:00:00.Z", "1704067200000",
    ]) {
      expectFailure("Date", text, "invalid_value");
    }
  });

  it("rejects other kinds, including epoch numbers", () => {
    expectFailure("Date", 1704067200000, "invalid_type");
    expectFailure("Date", null, "invalid_type");
    expectFailure("Date", { year: 2024 }, "invalid_type");
  });
});

describe("ID", () => {
  it("accepts decimal strings, safe numbers and bigints, always as bigint", () => {
    expect(coerce("ID", "18446744073709551615")).toBe(2n ** 64n - 1n);
    expect(coerce("ID", 12)).toBe(12n);
    expect(coerce("ID", 12n)).toBe(12n);
  });

  it("rejects invalid IDs with invalid_id and other kinds with invalid_type", () => {
    expectFailure("ID", "-1", "invalid_id");
    expectFailure("ID", "18446744073709551616", "invalid_id");
    expectFailure("ID", 1.5, "invalid_id");
    expectFailure("ID", true, "invalid_type");
    expectFailure("ID", null, "invalid_type");
  });
});

describe("arrays", () => {
  it("coerce every element and name the failing index", () => {
    expect(coerce(arrayOf(scalar("U8")), [1, "2", 3n])).toEqual([1, 2, 3]);
    expect(coerce(arrayOf(scalar("String")), [])).toEqual([]);
    expect(coerce(arrayOf(arrayOf(scalar("Date"))), [["2024-01-01"], []])).toEqual([[new Date(Date.UTC(2024, 0, 1))], []]);
    const error = failure(arrayOf(scalar("String")), ["a", 1]);
    expect(error.code).toBe("invalid_type");
    expect(error.message).toBe("AddN<User>.f[1]: expected String, got the number 1");
    expect(failure(arrayOf(arrayOf(scalar("U8"))), [[1], [2, 300]]).message).toContain("AddN<User>.f[1][1]");
    expectFailure(arrayOf(scalar("String")), ["a", null], "invalid_type");
    expectFailure(arrayOf(scalar("String")), "a", "invalid_type");
    expectFailure(arrayOf(scalar("String")), { 0: "a" }, "invalid_type");
  });

  it("copy float arrays checked in one pass and reject NaN inside them", () => {
    const input = [0.5, -1, 3];
    const stored = coerce(arrayOf(scalar("F64")), input);
    expect(stored).toEqual(input);
    expect(stored).not.toBe(input);
    expect(failure(arrayOf(scalar("F64")), [1, Number.NaN]).message).toContain("AddN<User>.f[1]");
    expect(failure(arrayOf(scalar("F32")), [1, 1e39]).code).toBe("invalid_value");
  });

  it("accept typed arrays for numeric element types, copied with their class", () => {
    const f64 = new Float64Array([1.5, 2.5]);
    const stored = coerce(arrayOf(scalar("F64")), f64);
    expect(stored).toBeInstanceOf(Float64Array);
    expect(stored).toEqual(f64);
    f64[0] = 99;
    expect((stored as Float64Array)[0]).toBe(1.5);
    expect(coerce(arrayOf(scalar("F32")), new Float32Array([0.5]))).toBeInstanceOf(Float32Array);
    expect(coerce(arrayOf(scalar("I32")), new Int32Array([-5]))).toEqual(new Int32Array([-5]));
    expect(coerce(arrayOf(scalar("I64")), new BigInt64Array([-(2n ** 63n)]))).toEqual(new BigInt64Array([-(2n ** 63n)]));
    const bytes = coerce(arrayOf(scalar("U8")), Buffer.from([1, 2]));
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(bytes)).toBe(false);
    expect(coerce(arrayOf(scalar("U16")), new Uint16Array([7, 8]))).toEqual([7, 8]);
  });

  it("check typed array elements against the element type", () => {
    expect(failure(arrayOf(scalar("U8")), new Int32Array([1, 256])).message).toBe("AddN<User>.f[1]: 256 is out of range for U8 (0 to 255)");
    expectFailure(arrayOf(scalar("I32")), new Float64Array([1.5]), "invalid_type");
    expectFailure(arrayOf(scalar("F64")), new Float64Array([Number.NaN]), "invalid_value");
    expectFailure(arrayOf(scalar("ID")), new Int32Array([-1]), "invalid_id");
    expectFailure(arrayOf(scalar("String")), new Float64Array([1]), "invalid_type");
    expectFailure(arrayOf(scalar("Date")), new Float64Array([1]), "invalid_type");
    expectFailure(arrayOf(scalar("F64")), new DataView(new ArrayBuffer(8)), "invalid_type");
  });
});

describe("inline objects", () => {
  const schema = parseSchema({ file: "s.hx", text: "N::U { address: { city: String, REQUIRED zip: U32, geo: { lat: F64 } } }" });
  const address = schema.nodes.get("U")?.fields.get("address")?.type as FieldType;

  it("coerce declared fields and drop null ones", () => {
    expect(coerce(address, { city: "Oslo", zip: "150" })).toEqual({ city: "Oslo", zip: 150 });
    expect(coerce(address, { zip: 1, city: null, geo: { lat: 1 } })).toEqual({ zip: 1, geo: { lat: 1 } });
  });

  it("reject undeclared fields, missing REQUIRED fields and non-objects", () => {
    const unknown = failure(address, { zip: 1, country: "NO" });
    expect(unknown.code).toBe("invalid_field");
    expect(unknown.message).toContain("AddN<User>.f");
    expect(unknown.message).toContain('"country"');
    expectFailure(address, { city: "Oslo" }, "missing_property");
    expectFailure(address, { city: "Oslo", zip: null }, "missing_property");
    expect(failure(address, { zip: 1, geo: { lat: "x" } }).message).toBe('AddN<User>.f.geo.lat: expected F64, got the string "x"');
    expectFailure(address, [], "invalid_type");
    expectFailure(address, new Date(), "invalid_type");
    expectFailure(address, "x", "invalid_type");
    expect(failure(address, 1).message).toBe("AddN<User>.f: expected { city: String, REQUIRED zip: U32, geo: { lat: F64 } }, got the number 1");
  });

  it("never lets a __proto__ key through", () => {
    const error = failure(address, JSON.parse('{"zip": 1, "__proto__": {"polluted": true}}'));
    expect(error.code).toBe("invalid_field");
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});
