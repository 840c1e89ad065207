import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { ID_MAX, idOf, idToString, parseId } from "../../protocol/ids.js";

function rejects(input: unknown): SilkError {
  try {
    parseId(input, "AddE<Follows>::From");
  } catch (error) {
    expect(error).toBeInstanceOf(SilkError);
    return error as SilkError;
  }
  throw new Error(`parseId accepted ${String(input)}`);
}

describe("parseId", () => {
  it("has ID_MAX = 2^64 - 1", () => {
    expect(ID_MAX).toBe(18446744073709551615n);
  });

  it("accepts the boundaries 0 and 2^64-1 in every input form", () => {
    expect(parseId("0", "w")).toBe(0n);
    expect(parseId(0, "w")).toBe(0n);
    expect(parseId(0n, "w")).toBe(0n);
    expect(parseId("18446744073709551615", "w")).toBe(ID_MAX);
    expect(parseId(ID_MAX, "w")).toBe(ID_MAX);
  });

  it("accepts safe-integer numbers up to 2^53-1 and keeps them exact", () => {
    expect(parseId(Number.MAX_SAFE_INTEGER, "w")).toBe(9007199254740991n);
    expect(parseId(42, "w")).toBe(42n);
    expect(parseId(-0, "w")).toBe(0n);
  });

  it("accepts leading zeros as the same decimal value", () => {
    expect(parseId("007", "w")).toBe(7n);
    expect(parseId("000", "w")).toBe(0n);
    expect(parseId(`${"0".repeat(50)}18446744073709551615`, "w")).toBe(ID_MAX);
  });

  it.each([
    ["2^64 as a string", "18446744073709551616"],
    ["2^64 as a bigint", 2n ** 64n],
    ["-1", -1],
    ["-1n", -1n],
    ["'-1'", "-1"],
    ["1.5", 1.5],
    ["'1.5'", "1.5"],
    ["'12a'", "12a"],
    ["' 1'", " 1"],
    ["'1 '", "1 "],
    ["'+1'", "+1"],
    ["'1e3'", "1e3"],
    ["1e20 (an unsafe float)", 1e20],
    ["2^53 (first unsafe integer)", 2 ** 53],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["empty string", ""],
    ["null", null],
    ["undefined", undefined],
    ["true", true],
    ["an array", [1]],
    ["an object", { id: 1 }],
    ["a 100-digit string", "9".repeat(100)],
  ])("rejects %s with invalid_id", (_label, input) => {
    const error = rejects(input);
    expect(error.code).toBe("invalid_id");
    expect(error.status).toBe(400);
  });

  it("names the place and the value in the message", () => {
    const error = rejects("12a");
    expect(error.message).toContain("AddE<Follows>::From");
    expect(error.message).toContain('"12a"');
    expect(rejects(-1).message).toContain("-1");
    expect(rejects(2n ** 64n).message).toContain("18446744073709551616 is not a valid ID");
  });

  it("cuts very long strings in the message", () => {
    const error = rejects("x".repeat(1000));
    expect(error.message.length).toBeLessThan(300);
  });
});

describe("idOf", () => {
  it("answers parseId's ID, or undefined where parseId refuses", () => {
    const inputs: unknown[] = ["0", "007", "18446744073709551615", "18446744073709551616", "0".repeat(30) + "5", "9".repeat(25), 42, -1, 1.5, -0, 2 ** 53, 0n, -1n, ID_MAX, ID_MAX + 1n, "", " 1", "1e3", null, undefined, {}, [1]];
    for (const input of inputs) {
      let expected: bigint | undefined;
      try {
        expected = parseId(input, "where");
      } catch {
        expected = undefined;
      }
      expect(idOf(input)).toBe(expected);
    }
  });
});

describe("idToString", () => {
  it("writes decimal digits without precision loss", () => {
    expect(idToString(0n)).toBe("0");
    expect(idToString(ID_MAX)).toBe("18446744073709551615");
    expect(parseId(idToString(123456789012345678n), "w")).toBe(123456789012345678n);
  });
});
