/** parameter_types: exact names, typed values, checked before execution. */
import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { decodeRequest } from "../../protocol/tree.js";

function request(parameters: Record<string, unknown>, parameter_types: unknown): unknown {
  return {
    request_type: "read",
    query: { read: { entries: [{ query: { name: "n", root: { nodes: { reference: "all" } } } }], returns: ["n"] } },
    parameters,
    parameter_types,
  };
}

function codeOf(body: unknown): string {
  try {
    decodeRequest(body);
  } catch (error) {
    if (error instanceof SilkError) return error.code;
    throw error;
  }
  return "ok";
}

describe("parameter_types", () => {
  it("accepts values of every declared type", () => {
    const plan = decodeRequest(
      request(
        { b: true, i: 5, big: "9223372036854775807", f: 1.5, s: "x", d: "2024-01-02T03:04:05Z", v: [1, "a"], o: { a: 1 }, ids: [1, 2] },
        { b: "bool", i: "i64", big: "i64", f: "f64", s: "string", d: "date_time", v: "value", o: "object", ids: { array: "i64" } },
      ),
    );
    expect(plan.parameters).toMatchObject({ b: true, i: 5, s: "x", ids: [1, 2] });
  });

  it.each([
    [{ b: 1 }, { b: "bool" }, "invalid_type"],
    [{ i: 1.5 }, { i: "i64" }, "invalid_type"],
    [{ i: "9223372036854775808" }, { i: "i64" }, "invalid_type"],
    [{ f: "1" }, { f: "f64" }, "invalid_type"],
    [{ f: 1e39 }, { f: "f32" }, "invalid_type"],
    [{ s: 1 }, { s: "string" }, "invalid_type"],
    [{ d: "yesterday" }, { d: "date_time" }, "invalid_type"],
    [{ o: [] }, { o: "object" }, "invalid_type"],
    [{ a: [1, "x"] }, { a: { array: "i64" } }, "invalid_type"],
    [{ a: 1, extra: 2 }, { a: "i64" }, "invalid_type"],
    [{}, { a: "i64" }, "missing_parameter"],
    [{ a: 1 }, { a: "int" }, "malformed_tree"],
    [{ a: 1 }, ["i64"], "malformed_tree"],
  ])("refuses %j declared as %j with %s", (parameters, types, code) => {
    expect(codeOf(request(parameters, types))).toBe(code);
  });

  it("leaves parameters unchecked when no types are declared", () => {
    expect(decodeRequest(request({ anything: { x: 1 } }, undefined)).parameters).toEqual({ anything: { x: 1 } });
  });
});
