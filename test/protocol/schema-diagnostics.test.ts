import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { checkProject } from "../../protocol/helixql/query-check.js";
import { checkSchema, formatDiagnostic, parseSchema, type Diagnostic, type SchemaSource } from "../../protocol/schema.js";

function diagnose(text: string, file = "s.hx"): Diagnostic[] {
  const result = checkSchema({ file, text });
  expect(result.schema).toBeUndefined();
  return result.diagnostics;
}

/** The one diagnostic that `text` produces, as [line, column, code] plus its message. */
function only(text: string): { at: [number, number, string]; message: string } {
  const diagnostics = diagnose(text);
  expect(diagnostics).toHaveLength(1);
  const d = diagnostics[0];
  return { at: [d.line, d.column, d.code], message: d.message };
}

function thrown(sources: SchemaSource | SchemaSource[]): SilkError {
  try {
    parseSchema(sources);
  } catch (error) {
    expect(error).toBeInstanceOf(SilkError);
    return error as SilkError;
  }
  throw new Error("parseSchema accepted the schema");
}

describe("syntax errors", () => {
  it("reports a missing colon at its position", () => {
    const d = only("N::User {\n  name String\n}");
    expect(d.at).toEqual([2, 8, "schema_syntax"]);
    expect(d.message).toBe('syntax error: expected ":" but "S" found');
  });

  it("reports a missing type", () => {
    const d = only("N::User { name: }");
    expect(d.at).toEqual([1, 17, "schema_syntax"]);
    expect(d.message).toContain("expected");
  });

  it("reports an unknown declaration kind", () => {
    const d = only("N::A {}\nQ::B {}");
    expect(d.at).toEqual([2, 1, "schema_syntax"]);
    expect(d.message).toContain('"N::"');
  });

  it("reports an edge item that is not From/To/Properties, and a missing comma", () => {
    expect(only("E::X { From: A, weight: F64 }").at).toEqual([1, 17, "schema_syntax"]);
    expect(only("E::X { From: A To: B }").at).toEqual([1, 16, "schema_syntax"]);
  });

  it("reports unterminated strings and bad escapes", () => {
    expect(only('N::U { a: String DEFAULT "abc }').at).toEqual([1, 26, "schema_syntax"]);
    expect(only('N::U { a: String DEFAULT "a\\q" }').at).toEqual([1, 26, "schema_syntax"]);
  });

  it("reports a field name that starts with a digit", () => {
    expect(only("N::U { 1a: String }").at).toEqual([1, 8, "schema_syntax"]);
  });

  it("reports an unclosed block at the end of input", () => {
    const d = only("N::U {\n  a: String,\n");
    expect(d.at).toEqual([3, 1, "schema_syntax"]);
    expect(d.message).toContain("end of input");
  });

  it("reports the first syntax error of every file and keeps checking the others", () => {
    const result = checkSchema([
      { file: "a.hx", text: "N::A { x String }" },
      { file: "b.hx", text: "N::B { y: Strin }" },
      { file: "c.hx", text: "N::C {\n  z: U8,,\n}" },
    ]);
    expect(result.diagnostics.map((d) => [d.file, d.line, d.column, d.code])).toEqual([
      ["a.hx", 1, 10, "schema_syntax"],
      ["b.hx", 1, 11, "schema_invalid"],
      ["c.hx", 2, 9, "schema_syntax"],
    ]);
  });

  it("does not echo syntax errors as unknown edge endpoints", () => {
    const result = checkSchema([
      { file: "nodes.hx", text: "N::User { name String }" },
      { file: "edges.hx", text: "E::Follows { From: User, To: User }" },
    ]);
    expect(result.diagnostics).toHaveLength(1);
    expect(result.diagnostics[0].file).toBe("nodes.hx");
  });

  it("turns absurd nesting into a diagnostic rather than a crash", () => {
    const deep = `N::D { a: ${"[".repeat(50_000)}String${"]".repeat(50_000)} }`;
    const diagnostics = diagnose(deep);
    expect(diagnostics).toHaveLength(1);
    expect(["schema_syntax", "schema_invalid"]).toContain(diagnostics[0].code);
  });
});

describe("schema_invalid diagnostics", () => {
  it("rejects duplicate type names within a kind, pointing at the second", () => {
    const d = only("N::User {}\nV::User {}\nN::User {}");
    expect(d.at).toEqual([3, 4, "schema_invalid"]);
    expect(d.message).toBe("duplicate type N::User; first declared at s.hx:1:4");
  });

  it("rejects duplicate types across files", () => {
    const result = checkSchema([
      { file: "a.hx", text: "V::Doc {}" },
      { file: "b.hx", text: "\n\nV::Doc {}" },
    ]);
    expect(result.diagnostics).toEqual([
      { code: "schema_invalid", file: "b.hx", line: 3, column: 4, message: "duplicate type V::Doc; first declared at a.hx:1:4" },
    ]);
  });

  it("rejects duplicate field names, in types, edges and inline objects", () => {
    expect(only("N::U {\n  a: String,\n  a: U8\n}").at).toEqual([3, 3, "schema_invalid"]);
    expect(only("N::A {}\nE::E { From: A, To: A, Properties: { w: F64, w: F32 } }").at).toEqual([2, 46, "schema_invalid"]);
    const d = only("N::U { o: { k: U8, k: U8 } }");
    expect(d.at).toEqual([1, 20, "schema_invalid"]);
    expect(d.message).toBe("duplicate field k; first declared at line 1, column 13");
  });

  it("rejects edges whose From or To is not a declared node or vector type", () => {
    const result = diagnose("N::A {}\nE::E {\n  From: Nope,\n  To: Missing\n}");
    expect(result.map((d) => [d.line, d.column, d.code])).toEqual([
      [3, 9, "schema_invalid"],
      [4, 7, "schema_invalid"],
    ]);
    expect(result[0].message).toBe("E::E: From names Nope, which is not a declared node (N::) or vector (V::) type");
  });

  it("rejects an edge endpoint declared both as a node and a vector", () => {
    const result = diagnose("N::X {}\nV::X {}\nE::E { From: X, To: X }");
    expect(result.map((d) => [d.line, d.column, d.code])).toEqual([
      [3, 14, "schema_invalid"],
      [3, 21, "schema_invalid"],
    ]);
    expect(result[0].message).toBe("E::E: From type X is ambiguous: it is declared both as N::X and V::X");
  });

  it("rejects edges without From or To, or with them repeated", () => {
    const missing = diagnose("E::E { Properties: {} }");
    expect(missing.map((d) => [d.line, d.column, d.message])).toEqual([
      [1, 4, "E::E has no From: every edge type names its source type"],
      [1, 4, "E::E has no To: every edge type names its target type"],
    ]);
    // A query using such an edge does not echo the missing endpoint as a mismatch with an empty type name.
    const used = checkProject([
      { file: "schema.hx", text: "N::A {}\nE::E { To: A }" },
      { file: "queries.hx", text: "QUERY Q() => a <- AddN<A>({}) e <- AddE<E>::From(a)::To(a) RETURN e" },
    ]);
    expect(used.diagnostics.map((d) => d.message)).toEqual(["E::E has no From: every edge type names its source type"]);
    const repeated = only("N::A {}\nE::E { From: A, To: A, To: A }");
    expect(repeated.at).toEqual([2, 24, "schema_invalid"]);
    expect(repeated.message).toBe("E::E gives To more than once");
  });

  it("rejects the reserved field names $label and id", () => {
    const label = only("N::U { $label: String }");
    expect(label.at).toEqual([1, 8, "schema_invalid"]);
    expect(label.message).toContain("reserved");
    const id = only("V::V { id: ID }");
    expect(id.at).toEqual([1, 8, "schema_invalid"]);
    expect(id.message).toContain("reserved");
    expect(only("N::U { $other: String }").message).toContain("not an identifier");
    expect(only("N::U { __proto__: String }").message).toContain("reserved");
  });

  it("allows id as a field of an inline object but not $label", () => {
    expect(checkSchema({ file: "s.hx", text: "N::U { o: { id: U8 } }" }).diagnostics).toEqual([]);
    expect(only("N::U { o: { $label: U8 } }").at).toEqual([1, 13, "schema_invalid"]);
  });

  it("rejects unknown field types, with a hint for a wrong case", () => {
    const d = only("N::U { a: string }");
    expect(d.at).toEqual([1, 11, "schema_invalid"]);
    expect(d.message).toContain("unknown field type string (did you mean String?)");
    expect(only("N::U { a: [Float] }").at).toEqual([1, 12, "schema_invalid"]);
    expect(only("N::User {}\nN::U { friend: User }").message).toContain("unknown field type User");
  });

  it("rejects DEFAULTs of the wrong type", () => {
    const cases: [string, number, string][] = [
      ['a: U32 DEFAULT "5"', 16, "DEFAULT of a: expected a U32 literal, got a string"],
      ["a: U8 DEFAULT 256", 15, "DEFAULT of a: 256 is out of range for U8 (0 to 255)"],
      ["a: U8 DEFAULT -1", 15, "DEFAULT of a: -1 is out of range for U8 (0 to 255)"],
      ["a: I32 DEFAULT 1.5", 16, "DEFAULT of a: 1.5 is not an integer (expected I32)"],
      ["a: String DEFAULT 5", 19, "DEFAULT of a: expected a String literal, got a number"],
      ["a: Boolean DEFAULT 0", 20, "DEFAULT of a: expected a Boolean literal, got a number"],
      ["a: String DEFAULT NOW", 19, "DEFAULT of a: NOW is only a DEFAULT for a Date field, as the whole value"],
      ['a: Date DEFAULT "yesterday"', 17, "DEFAULT of a:"],
      ["a: F32 DEFAULT 1e39", 16, "DEFAULT of a: 1e+39 is out of range for F32"],
      ["a: F64 DEFAULT 1e400", 16, "DEFAULT of a: F64 must be finite"],
      ["a: [String] DEFAULT \"x\"", 21, "DEFAULT of a: expected a [String] literal, got a string"],
      ["a: [U8] DEFAULT [1, 300]", 17, "DEFAULT of a[1]: 300 is out of range for U8"],
      ["a: [Date] DEFAULT [NOW]", 20, "NOW is only a DEFAULT for a Date field"],
      ["a: { b: U8 } DEFAULT 1", 22, "DEFAULT of a: expected a { b: U8 } literal, got a number"],
      ["a: ID DEFAULT -1", 15, "DEFAULT of a: -1 is not a valid ID"],
    ];
    for (const [fieldText, column, message] of cases) {
      const d = only(`N::U { ${fieldText} }`);
      expect(d.at, fieldText).toEqual([1, column + 7, "schema_invalid"]);
      expect(d.message, fieldText).toContain(message);
    }
  });

  it("rejects INDEX and DEFAULT on nested fields, and conflicting modifiers", () => {
    expect(only("N::U { o: { INDEX k: U8 } }").message).toBe("INDEX is only allowed on top-level fields (nested paths are scan-only): k");
    expect(only("N::U { o: { k: U8 DEFAULT 1 } }").at).toEqual([1, 27, "schema_invalid"]);
    expect(only("N::U { INDEX UNIQUE INDEX k: U8 }").at).toEqual([1, 14, "schema_invalid"]);
    expect(only("N::U { REQUIRED REQUIRED k: U8 }").message).toBe("REQUIRED is given twice on k");
  });

  it("limits the nesting depth of field types", () => {
    const d = only(`N::U { a: ${"[".repeat(20)}U8${"]".repeat(20)} }`);
    expect(d.message).toContain("at most 16 levels");
  });
});

describe("reporting every error together", () => {
  const text = [
    "N::User {", //                              1
    "  $label: String,", //                     2  reserved
    "  age: U8 DEFAULT 300,", //                3  bad default (col 19)
    "  age: U8,", //                            4  duplicate field
    "  x: Strin,", //                           5  unknown type (col 6)
    "}", //                                     6
    "N::User {}", //                            7  duplicate type (col 4)
    "E::Likes { From: User, To: Post }", //     8  unknown endpoint (col 28)
  ].join("\n");

  it("lists them all in source order with lines and columns", () => {
    expect(diagnose(text).map((d) => [d.line, d.column, d.code])).toEqual([
      [2, 3, "schema_invalid"],
      [3, 19, "schema_invalid"],
      [4, 3, "schema_invalid"],
      [5, 6, "schema_invalid"],
      [7, 4, "schema_invalid"],
      [8, 28, "schema_invalid"],
    ]);
  });

  it("throws one schema_invalid SilkError whose message carries every diagnostic with line and caret", () => {
    const error = thrown({ file: "user.hx", text });
    expect(error.code).toBe("schema_invalid");
    expect(error.status).toBe(400);
    const lines = error.message.split("\n");
    expect(lines).toHaveLength(18);
    expect(lines.slice(0, 3)).toEqual(["user.hx:2:3: the field name $label is reserved for record labels [schema_invalid]", "  $label: String,", "  ^"]);
    expect(lines.slice(3, 6)).toEqual(["user.hx:3:19: DEFAULT of age: 300 is out of range for U8 (0 to 255) [schema_invalid]", "  age: U8 DEFAULT 300,", "                  ^"]);
    expect(lines[15]).toBe("user.hx:8:28: E::Likes: To names Post, which is not a declared node (N::) or vector (V::) type [schema_invalid]");
    expect(lines[17]).toBe(`${" ".repeat(27)}^`);
  });

  it("throws schema_syntax when any file has a syntax error, still listing the other files' errors", () => {
    const error = thrown([
      { file: "good-syntax.hx", text: "N::A { a: Strin }" },
      { file: "bad-syntax.hx", text: "N::B { b String }" },
    ]);
    expect(error.code).toBe("schema_syntax");
    expect(error.message).toContain("good-syntax.hx:1:11: unknown field type Strin");
    expect(error.message).toContain('bad-syntax.hx:1:10: syntax error: expected ":" but "S" found');
    expect(error.message.indexOf("good-syntax.hx")).toBeLessThan(error.message.indexOf("bad-syntax.hx"));
  });
});

describe("formatDiagnostic", () => {
  const d: Diagnostic = { code: "schema_invalid", file: "f.hx", line: 2, column: 4, message: "bad" };

  it("keeps tabs in the caret line so the caret lines up", () => {
    expect(formatDiagnostic(d, "first\n\tab: x\nthird")).toBe("f.hx:2:4: bad [schema_invalid]\n\tab: x\n\t  ^");
  });

  it("handles CRLF files and missing text", () => {
    expect(formatDiagnostic(d, "a\r\nabcdef\r\n")).toBe("f.hx:2:4: bad [schema_invalid]\nabcdef\n   ^");
    expect(formatDiagnostic(d)).toBe("f.hx:2:4: bad [schema_invalid]");
    expect(formatDiagnostic({ ...d, line: 9 }, "one line")).toBe("f.hx:9:4: bad [schema_invalid]");
  });
});
