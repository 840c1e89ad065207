import { describe, expect, it } from "vitest";
import type { ErrorCode } from "../../protocol/errors.js";
import { SilkError } from "../../protocol/errors.js";
import { parseSchema, prepareProperties, type FieldDecl } from "../../protocol/schema.js";

const schema = parseSchema({
  file: "s.hx",
  text: `N::User {
    INDEX name: String,
    age: U32 DEFAULT 7,
    created_at: Date DEFAULT NOW,
    tags: [String] DEFAULT ["new"],
    address: { city: String, zip: U32 },
    REQUIRED handle: String,
    REQUIRED level: U8 DEFAULT 1,
  }
  N::Bare {}`,
});
const fields = schema.nodes.get("User")?.fields as ReadonlyMap<string, FieldDecl>;
const clock = new Date(Date.UTC(2025, 5, 1, 12, 0, 0));
const now = () => new Date(clock.getTime());

function prepare(input: unknown, mode: "create" | "update") {
  return prepareProperties(fields, input, mode, "AddN<User>", now);
}

function failure(input: unknown, mode: "create" | "update", code: ErrorCode): string {
  try {
    prepare(input, mode);
  } catch (error) {
    expect(error).toBeInstanceOf(SilkError);
    expect((error as SilkError).code).toBe(code);
    return (error as SilkError).message;
  }
  throw new Error("prepareProperties accepted the input");
}

describe("prepareProperties in create mode", () => {
  it("coerces given values and fills DEFAULTs, NOW from the clock", () => {
    expect(prepare({ handle: "ada", age: "36", address: { city: "London" } }, "create")).toEqual({
      handle: "ada",
      age: 36,
      address: { city: "London" },
      created_at: clock,
      tags: ["new"],
      level: 1,
    });
  });

  it("leaves absent optional fields without a DEFAULT out of the result", () => {
    const result = prepare({ handle: "x" }, "create");
    expect(Object.keys(result).sort()).toEqual(["age", "created_at", "handle", "level", "tags"]);
    expect("name" in result).toBe(false);
    expect("address" in result).toBe(false);
  });

  it("treats null and undefined as absent, so DEFAULTs still apply", () => {
    expect(prepare({ handle: "x", age: null, name: undefined, level: null }, "create")).toMatchObject({ age: 7, level: 1 });
    expect("name" in prepare({ handle: "x", name: null }, "create")).toBe(false);
  });

  it("gives each record its own copy of a DEFAULT", () => {
    const first = prepare({ handle: "a" }, "create");
    (first.tags as string[]).push("mutated");
    expect(prepare({ handle: "b" }, "create").tags).toEqual(["new"]);
  });

  it("requires REQUIRED fields that have no DEFAULT", () => {
    expect(failure({ name: "x" }, "create", "missing_property")).toBe(
      "AddN<User>: the REQUIRED field handle (String) was not given and has no DEFAULT",
    );
    failure({ handle: null }, "create", "missing_property");
  });

  it("accepts an empty object for a type without required fields", () => {
    expect(prepareProperties(schema.nodes.get("Bare")?.fields ?? new Map(), {}, "create", "AddN<Bare>", now)).toEqual({});
  });
});

describe("prepareProperties in update mode", () => {
  it("returns only the given keys, without DEFAULTs", () => {
    expect(prepare({ age: 40 }, "update")).toEqual({ age: 40 });
    expect(prepare({}, "update")).toEqual({});
  });

  it("keeps null to mean 'remove this property', and skips undefined", () => {
    expect(prepare({ name: null, age: undefined, tags: ["a"] }, "update")).toEqual({ name: null, tags: ["a"] });
  });

  it("refuses to remove a REQUIRED field", () => {
    expect(failure({ handle: null }, "update", "invalid_value")).toContain("handle is REQUIRED");
    failure({ level: null }, "update", "invalid_value");
  });

  it("checks types like create does", () => {
    expect(failure({ age: "old" }, "update", "invalid_value")).toContain("AddN<User>.age");
    expect(failure({ name: 5 }, "update", "invalid_type")).toBe("AddN<User>.name: expected String, got the number 5");
  });
});

describe("prepareProperties input checks (both modes)", () => {
  for (const mode of ["create", "update"] as const) {
    it(`${mode}: rejects unknown keys and $label with invalid_field`, () => {
      const message = failure({ handle: "x", nickname: "y" }, mode, "invalid_field");
      expect(message).toContain('"nickname"');
      expect(message).toContain("declared: name, age, created_at, tags, address, handle, level");
      expect(failure({ handle: "x", $label: "User" }, mode, "invalid_field")).toContain("$label");
      failure({ handle: "x", id: "1" }, mode, "invalid_field");
      failure({ handle: "x", address: { city: "x", street: "y" } }, mode, "invalid_field");
    });

    it(`${mode}: requires a plain object`, () => {
      for (const input of [null, undefined, "x", 1, [], [{ handle: "x" }], new Date(), new Map()]) {
        expect(failure(input, mode, "invalid_type")).toContain("AddN<User>");
      }
    });

    it(`${mode}: does not let a JSON __proto__ key through`, () => {
      failure(JSON.parse('{"handle": "x", "__proto__": {"admin": true}}'), mode, "invalid_field");
    });
  }
});
