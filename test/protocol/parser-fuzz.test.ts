/**
 * Whatever text arrives, checkSchema answers with a schema or with diagnostics that point inside the text; it never
 * throws and never hangs. Inputs: random token soup, random strings, truncations and mutations of a valid file that
 * mixes schema and queries, and nesting far deeper than the parser's recursion can follow.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkSchema } from "../../protocol/schema.js";

const VALID = `// schema
N::User { INDEX name: String, age: U8, handle: String }
N::Tag { name: String }
N::City { name: String }
E::Follows { From: User, To: User, Properties: { since: Date } }
E::Wrote { From: User, To: User }
E::Road { From: City, To: City, Properties: { distance: F64 } }
V::Doc { title: String }

QUERY GetUser(id: ID) =>
    user <- N<User>(id)
    RETURN user

QUERY Create(name: String, age: U8, tags: [String], rows: [{name: String, age: U8}], maybe?: I64,) =>
    u <- AddN<User>({name: name, age: age, active: true, score: -1.5})
    e <- AddE<Follows>({since: "2024-01-01"})::From(u)::To(other)
    AddE<Follows>::From(a)::To(b)
    v <- AddV<Doc>(vec, {title: t})
    v2 <- AddV<Doc>(Embed(text))
    DROP N<User>(id)::OutE<Follows>
    FOR {name, age} IN rows {
        AddN<User>({name: name, age: age})
    }
    FOR x IN tags { AddN<Tag>({name: x}) }
    FOR row IN rows { AddN<User>({name: row.name}) }
    RETURN u, e, "Success"

QUERY Q2() =>
    users <- N<User>::WHERE(AND(_::{age}::GT(18), OR(_::{name}::EQ("a"), !EXISTS(_::In<Follows>))))::RANGE(0, 10)
    names <- users::{name, followers: _::In<Follows>::COUNT, posts: _::Out<Wrote>::{title}, ..}
    slim <- users::!{age, name}
    c <- users::|u| { name: u::{name}, n: u::Out<Follows>::COUNT }
    top <- N<User>
        ::ORDER<Desc>(_::{age}) // oldest first
        ::FIRST
    n <- N<User>({handle: "x"})::ID
    s <- SearchV<Doc>(vec, 10)
    p <- N<City>(a)::ShortestPathDijkstras<Road>(_::{distance})::To(b)
    m <- ADD(POW(2, 3), SQRT(x))
    RETURN {users: users, count: c}, [1, 2], PI()

QUERY NoReturn(id: ID) =>
    DROP N<User>(id)
`;

/** Tokens and fragments of HelixQL, so that random text gets past the first character often enough. */
const FRAGMENTS = [
  "QUERY", "RETURN", "DROP", "FOR", "IN", "N::", "E::", "V::", "N", "E", "AddN", "User", "_", "x", "row.name", "=>", "<-", "::",
  "(", ")", "{", "}", "[", "]", "<", ">", "|", "!", ",", ":", "?", "..", ".", "-", "1", "2.5", '"s"', "true", "//c\n", " ", "\n", "\t",
];

const NESTING_DEPTH_MAX = 10_000;

/** Asserts the one promise checkSchema makes to every caller, and returns its diagnostics for further checks. */
function checkAnswers(text: string) {
  const result = checkSchema({ file: "fuzz.hx", text });
  if (result.schema === undefined) expect(result.diagnostics.length).toBeGreaterThan(0);
  else expect(result.diagnostics).toEqual([]);
  const lines = text.split("\n");
  for (const diagnostic of result.diagnostics) {
    expect(diagnostic.file).toBe("fuzz.hx");
    expect(diagnostic.line).toBeGreaterThanOrEqual(1);
    expect(diagnostic.line).toBeLessThanOrEqual(lines.length);
    expect(diagnostic.column).toBeGreaterThanOrEqual(1);
    expect(diagnostic.column).toBeLessThanOrEqual(lines[diagnostic.line - 1].length + 1);
  }
  return result.diagnostics;
}

/** One edit of a text: delete, insert or replace a piece at a position, the position and piece drawn at random. */
interface Edit {
  kind: "delete" | "insert" | "replace";
  position: number;
  length: number;
  piece: string;
}

const edit: fc.Arbitrary<Edit> = fc.record({
  kind: fc.constantFrom("delete" as const, "insert" as const, "replace" as const),
  position: fc.nat(),
  length: fc.integer({ min: 1, max: 8 }),
  piece: fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 3 })),
});

function applyEdit(text: string, change: Edit): string {
  const at = change.position % (text.length + 1);
  switch (change.kind) {
    case "delete":
      return text.slice(0, at) + text.slice(at + change.length);
    case "insert":
      return text.slice(0, at) + change.piece + text.slice(at);
    case "replace":
      return text.slice(0, at) + change.piece + text.slice(at + change.length);
    default:
      throw new Error(`unknown edit ${String(change.kind satisfies never)}`);
  }
}

describe("checkSchema on arbitrary text", () => {
  it("accepts the valid file this fuzzing starts from", () => {
    expect(checkAnswers(VALID)).toEqual([]);
  });

  it("answers random token soup", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 60 }), (tokens) => {
        checkAnswers(tokens.join(""));
        checkAnswers(`QUERY Q() =>\n${tokens.join(" ")}`);
      }),
      { numRuns: 300 },
    );
  });

  it("answers random strings", () => {
    // ASCII control and printable characters, plus a few that are wide, astral or line-breaking elsewhere; fast-check's
    // full "binary" unit would spend a second generating what the parser rejects in milliseconds.
    const character = fc.oneof(fc.string({ unit: "binary-ascii", minLength: 1, maxLength: 1 }), fc.constantFrom("é", "€", "😀", "\u2028", "\ufeff"));
    fc.assert(
      fc.property(fc.string({ unit: character, maxLength: 200 }), (text) => {
        checkAnswers(text);
      }),
      { numRuns: 200 },
    );
  });

  it("answers every truncation of the valid file with a syntax error or a schema", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: VALID.length }), (length) => {
        const diagnostics = checkAnswers(VALID.slice(0, length));
        expect(diagnostics.every((d) => d.code === "schema_syntax" || d.code === "schema_invalid")).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("answers random mutations of the valid file", () => {
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 5 }), (changes) => {
        checkAnswers(changes.reduce(applyEdit, VALID));
      }),
      { numRuns: 300 },
    );
  });
});

describe("checkSchema on deep nesting", () => {
  // Each shape wraps an expression (or a type) `depth` times; the closing text is left off at random.
  const shapes: { name: string; open: string; close: string; inner: string; wrap: (body: string) => string }[] = [
    { name: "arrays", open: "[", close: "]", inner: "1", wrap: (body) => `QUERY Q() => RETURN ${body}` },
    { name: "objects", open: "{a: ", close: "}", inner: "x", wrap: (body) => `QUERY Q() => RETURN ${body}` },
    { name: "arguments", open: "F(", close: ")", inner: "x", wrap: (body) => `QUERY Q() => RETURN ${body}` },
    { name: "negations", open: "!", close: "", inner: "x", wrap: (body) => `QUERY Q() => RETURN ${body}` },
    { name: "projections", open: "x::{a: ", close: "}", inner: "y", wrap: (body) => `QUERY Q() => RETURN ${body}` },
    { name: "closures", open: "x::|u| {a: ", close: "}", inner: "u", wrap: (body) => `QUERY Q() => RETURN ${body}` },
    { name: "FOR loops", open: "FOR x IN y { ", close: "}", inner: "DROP x", wrap: (body) => `QUERY Q() => ${body}` },
    { name: "parameter types", open: "[", close: "]", inner: "I32", wrap: (body) => `QUERY Q(p: ${body}) =>` },
    { name: "field types", open: "{a: ", close: "}", inner: "I32", wrap: (body) => `N::T { f: ${body} }` },
  ];

  it.each(shapes)("answers $name nested up to 10k deep, closed or not", ({ open, close, inner, wrap }) => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: NESTING_DEPTH_MAX }), fc.boolean(), (depth, closed) => {
        const text = wrap(open.repeat(depth) + inner + (closed ? close.repeat(depth) : ""));
        checkAnswers(text);
      }),
      { numRuns: 20, examples: [[NESTING_DEPTH_MAX, true], [NESTING_DEPTH_MAX, false], [50, true]] },
    );
  });

  it("reports nesting too deep as a syntax error at the start of the file", () => {
    const text = `QUERY Q() => RETURN ${"[".repeat(NESTING_DEPTH_MAX)}${"]".repeat(NESTING_DEPTH_MAX)}`;
    expect(checkAnswers(text)).toEqual([
      { code: "schema_syntax", file: "fuzz.hx", line: 1, column: 1, message: "syntax error: nesting too deep to parse" },
    ]);
  });

  it("parses a 10k-step chain and 10k statements, which are loops rather than recursion", () => {
    expect(checkAnswers(`QUERY Q() => RETURN x${"::Out<E>".repeat(NESTING_DEPTH_MAX)}`)).toEqual([]);
    expect(checkAnswers(`QUERY Q() =>\n${"  x <- N<User>::{name}\n".repeat(NESTING_DEPTH_MAX)}`)).toEqual([]);
  });

  it("parses moderate nesting that real queries could plausibly reach", () => {
    const depth = 200;
    expect(checkAnswers(`QUERY Q() => RETURN ${"AND(".repeat(depth)}_::{a}::GT(1)${")".repeat(depth)}`)).toEqual([]);
  });
});
