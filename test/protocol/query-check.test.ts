/**
 * The query checker: every problem of every query is reported at its place with a stable code, and what checks
 * compiles to a tree the decoder takes. Run-time behaviour of the compiled queries is the conformance suite's.
 */
import { describe, expect, it } from "vitest";
import { checkProject, checkQueryText } from "../../protocol/helixql/query-check.js";
import type { Diagnostic } from "../../protocol/schema.js";
import { decodeRequest } from "../../protocol/tree.js";

const SCHEMA = `
N::User { UNIQUE INDEX handle: String, INDEX city: String, name: String, age: U8, REQUIRED email: String, born: Date }
N::Post { title: String, tags: [String] }
V::Doc { title: String }
E::Follows { From: User, To: User, Properties: { since: Date, weight: F64 } }
E::Wrote { From: User, To: Post }
E::About { From: Doc, To: Post }
`;

function check(queries: string): { diagnostics: readonly Diagnostic[]; names: string[] } {
  const result = checkProject({ file: "q.hx", text: SCHEMA + queries });
  return { diagnostics: result.diagnostics, names: result.queries.map((q) => q.name) };
}

/** The diagnostics as `code line:column`, lines counted within the query text. */
function problems(queries: string): string[] {
  const offset = SCHEMA.split("\n").length - 1;
  return check(queries).diagnostics.map((d) => `${d.code} ${d.line - offset}:${d.column}`);
}

describe("the query checker", () => {
  it("accepts well-formed queries and compiles each to a tree the decoder takes", () => {
    const text = `
QUERY A(id: ID) => u <- N<User>(id) RETURN u
QUERY B(h: String) => u <- N<User>({handle: h}) p <- u::Out<Wrote> RETURN u, p
QUERY C(name: String, email: String) => u <- AddN<User>({name: name, email: email}) RETURN u
QUERY D(a: ID, b: ID) => AddE<Follows>({weight: 1.5})::From(a)::To(b) RETURN "ok"
QUERY E1(min: U8) => n <- N<User>::WHERE(AND(_::{age}::GTE(min), !EXISTS(_::In<Follows>)))::COUNT RETURN n
QUERY F(v: [F64]) => d <- AddV<Doc>(v, {title: "t"}) RETURN d
QUERY G() => rows <- N<User>::{name, n: _::Out<Follows>::COUNT, x: ADD(_::{age}, 1)} RETURN rows
`;
    const result = checkProject({ file: "q.hx", text: SCHEMA + text });
    expect(result.diagnostics).toEqual([]);
    expect(result.queries.map((q) => [q.name, q.requestType])).toEqual([
      ["A", "read"], ["B", "read"], ["C", "write"], ["D", "write"], ["E1", "read"], ["F", "write"], ["G", "read"],
    ]);
    for (const query of result.queries) expect(() => decodeRequest(query.tree)).not.toThrow();
  });

  it("reports every problem of every query, each at its line and column with a stable code", () => {
    const text = `
QUERY A(id: ID) => u <- N<Usr>(id) RETURN u
QUERY B() => u <- N<User>::WHERE(_::{nme}::EQ("x")) RETURN u
QUERY C(id: ID) => u <- N<User>(id)::UPDATE({age: "old"}) RETURN u
QUERY D(id: ID) => u <- N<User>(id)::UPDATE({shoe: 3}) RETURN zz
QUERY E1() => u <- AddN<User>({name: "x"}) RETURN u
`;
    expect(problems(text)).toEqual([
      "unknown_label 2:27",
      "invalid_field 3:38",
      "invalid_type 4:46",
      "invalid_field 5:46",
      "unknown_variable 5:63",
      "missing_property 6:20",
    ]);
  });

  it("checks comparisons by SPEC's type rules", () => {
    // Strings are ordered (by UTF-8 bytes); a string against a number is not.
    expect(problems(`QUERY A() => u <- N<User>::WHERE(_::{name}::GT("b")) RETURN u`)).toEqual([]);
    expect(problems(`QUERY A() => u <- N<User>::WHERE(_::{name}::LTE(3)) RETURN u`)).toEqual(["invalid_type 1:45"]);
    expect(problems(`QUERY A() => u <- N<User>::WHERE(_::{age}::EQ("b")) RETURN u`)).toEqual(["invalid_type 1:44"]);
    expect(problems(`QUERY A() => u <- N<User>::WHERE(_::{born}::GT("2024-01-01")) RETURN u`)).toEqual([]);
    expect(problems(`QUERY A() => u <- N<User>::WHERE(_::{name}::CONTAINS(3)) RETURN u`)).toEqual(["invalid_type 1:45"]);
    expect(problems(`QUERY A(names: [String]) => u <- N<User>::WHERE(_::{name}::IS_IN(names)) RETURN u`)).toEqual([]);
    expect(problems(`QUERY A(n: String) => u <- N<User>::WHERE(_::{age}::IS_IN(n)) RETURN u`)).toEqual(["invalid_type 1:53"]);
  });

  it("checks traversals against the edge types' endpoints", () => {
    expect(problems(`QUERY A(id: ID) => p <- N<Post>(id)::Out<Follows> RETURN p`)).toEqual(["query_invalid 1:38"]);
    expect(problems(`QUERY A(id: ID) => p <- N<Post>(id)::In<Wrote> RETURN p`)).toEqual([]);
    expect(problems(`QUERY A(id: ID) => p <- N<User>(id)::Out<Nope> RETURN p`)).toEqual(["unknown_label 1:42"]);
    expect(problems(`QUERY A(id: ID) => p <- N<User>(id)::FromN RETURN p`)).toEqual(["query_invalid 1:38"]);
    expect(
      problems(`QUERY A(d: ID, p: ID) =>
  doc <- N<Post>(p)
  AddE<About>::From(doc)::To(doc)
  RETURN doc`),
    ).toEqual(["edge_endpoint_mismatch 3:21"]);
  });

  it("requires an index for N<T>({field: value}) and knows a UNIQUE one returns one record", () => {
    expect(problems(`QUERY A(n: String) => u <- N<User>({name: n}) RETURN u`)).toEqual(["query_invalid 1:37"]);
    const result = checkProject({ file: "q.hx", text: SCHEMA + `QUERY A(h: String, c: String) => u <- N<User>({handle: h}) v <- N<User>({city: c}) RETURN u, v` });
    expect(result.queries[0].output).toEqual({
      kind: "keyed",
      fields: [
        ["u", { kind: "entry", entry: "u", cardinality: "one" }],
        ["v", { kind: "entry", entry: "v", cardinality: "many" }],
      ],
    });
  });

  it("reports misplaced constructs: comparisons outside WHERE, _ outside a sub-traversal, unknown steps, bad arity", () => {
    expect(problems(`QUERY A() => u <- N<User>::GT(3) RETURN u`)).toEqual(["query_invalid 1:28"]);
    expect(problems(`QUERY A() => u <- _::Out<Follows> RETURN u`)).toEqual(["query_invalid 1:19"]);
    expect(problems(`QUERY A() => u <- N<User>::Sideways RETURN u`)).toEqual(["query_invalid 1:28"]);
    expect(problems(`QUERY A() => u <- N<User>::RANGE(1) RETURN u`)).toEqual(["query_invalid 1:28"]);
    expect(problems(`QUERY A() => u <- N<User>::{x: POW(2)} RETURN u`)).toEqual(["query_invalid 1:32"]);
    expect(problems(`QUERY A() => u <- N<User>::ORDER<Up>(_::{age}) RETURN u`)).toEqual(["query_invalid 1:34"]);
  });

  it("reports duplicate queries, parameters and variables", () => {
    expect(problems(`QUERY A() => u <- N<User> RETURN u\nQUERY A() => u <- N<User> RETURN u`)).toEqual(["query_invalid 2:7"]);
    expect(problems(`QUERY A(x: ID, x: ID) => u <- N<User>(x) RETURN u`)).toEqual(["query_invalid 1:16"]);
    // The second: RETURN of a name that is (still) the parameter.
    expect(problems(`QUERY A(x: ID) => x <- N<User> RETURN x`)).toEqual(["query_invalid 1:19", "query_invalid 1:39"]);
    expect(problems(`QUERY A(x: Strng) => u <- N<User> RETURN u`)).toEqual(["query_invalid 1:12"]);
  });

  it("types FOR bindings from the array parameter's element type", () => {
    expect(
      problems(`QUERY A(rows: [{name: String, email: String}]) =>
  FOR {name, email} IN rows { AddN<User>({name: name, email: email}) }
  RETURN "ok"`),
    ).toEqual([]);
    expect(problems(`QUERY A(rows: [{name: String}]) => FOR {nme} IN rows { AddN<Post>({title: nme}) } RETURN "ok"`)).toEqual(["invalid_field 1:41"]);
    expect(problems(`QUERY A(ages: [U8]) => FOR a IN ages { AddN<Post>({title: a}) } RETURN "ok"`)).toEqual(["invalid_type 1:52"]);
    expect(problems(`QUERY A(n: U8) => FOR a IN n { AddN<Post>({title: "x"}) } RETURN "ok"`)).toEqual(["invalid_type 1:28"]);
    expect(
      problems(`QUERY A(rows: [{title: String}]) => FOR row IN rows { AddN<Post>({title: row.title}) } RETURN "ok"`),
    ).toEqual([]);
  });

  it("checks RETURN: variables, literals, objects and arrays, not parameters or mixtures", () => {
    expect(problems(`QUERY A(id: ID) => RETURN id`)).toEqual(["query_invalid 1:27"]);
    expect(problems(`QUERY A() => u <- N<User> RETURN u, "x"`)).toEqual(["query_invalid 1:27"]);
    expect(problems(`QUERY A() => u <- N<User> RETURN {users: u, n: 3, list: [1, "a"]}`)).toEqual([]);
  });

  it("compiles a dotted path to the tree's dotted property and checks each segment against the object types", () => {
    const schema = `N::Place { name: String, tags: [String], addr: { city: String, geo: { lat: F64 } } }\n`;
    const good = checkProject({
      file: "q.hx",
      text: `${schema}QUERY A() => p <- N<Place>::WHERE(_::{addr.city}::EQ("Paris"))::ORDER<Asc>(_::{addr.geo.lat})::{addr.city} RETURN p`,
    });
    expect(good.diagnostics).toEqual([]);
    const tree = JSON.stringify(good.queries[0].tree);
    expect(tree).toContain(`{"property":"addr.city"}`);
    expect(tree).toContain(`"property":"addr.geo.lat"`);
    // A HelixQL field is an expression item reading the property, so a missing one stays null (a tree's property item
    // leaves it out, as HelixDB v3 does).
    expect(tree).toContain(`{"expr":{"alias":"addr.city","expr":{"property":"addr.city"}}}`);
    expect(() => decodeRequest(good.queries[0].tree)).not.toThrow();
    const bad = checkProject({
      file: "q.hx",
      text: `${schema}QUERY B() => p <- N<Place>::{name.x, tags.x, addr.geo.lon, addr.city.x, label.x} RETURN p\n` +
        `QUERY C() => p <- N<Place>::WHERE(_::{addr.geo.lat}::EQ("x")) RETURN p`,
    });
    // Each query stops at its first bad item, as every projection does; the place is the segment that fails.
    expect(bad.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(["invalid_field 2:35", "invalid_type 3:54"]);
    for (const path of ["tags.x", "addr.geo.lon", "addr.city.x", "label.x"]) {
      const only = checkProject({ file: "q.hx", text: `${schema}QUERY B() => p <- N<Place>::{${path}} RETURN p` });
      expect(only.diagnostics.map((d) => [d.code, d.column])).toEqual([["invalid_field", 30 + path.lastIndexOf(".") + 1]]);
    }
  });

  it("a syntax error is one schema_syntax diagnostic and no query is compiled", () => {
    const result = check(`QUERY A() => u <- N<User>::WHERE( RETURN u`);
    expect(result.diagnostics.map((d) => d.code)).toEqual(["schema_syntax"]);
    expect(result.names).toEqual([]);
  });
});

describe("checkQueryText (the web console's editor)", () => {
  const schema = checkProject({ file: "schema.hx", text: SCHEMA }).schema!;

  it("checks QUERY definitions against a loaded schema, with the positions silk check gives", () => {
    const ok = checkQueryText({ file: "console.hx", text: "QUERY A(id: ID) => u <- N<User>(id) RETURN u" }, schema);
    expect(ok.diagnostics).toEqual([]);
    expect(ok.queries.map((query) => [query.name, query.requestType])).toEqual([["A", "read"]]);

    const bad = checkQueryText({ file: "console.hx", text: "QUERY A() =>\n  u <- N<Nobody>\n  RETURN u" }, schema);
    expect(bad.queries).toEqual([]);
    expect(bad.diagnostics.map((d) => `${d.file} ${d.code} ${d.line}:${d.column}`)).toEqual(["console.hx unknown_label 2:10"]);
    const inProject = checkProject({ file: "console.hx", text: `${SCHEMA}QUERY A() =>\n  u <- N<Nobody>\n  RETURN u` });
    expect(inProject.diagnostics.map((d) => [d.code, d.message])).toEqual(bad.diagnostics.map((d) => [d.code, d.message]));
  });

  it("reports a syntax error at its place and compiles nothing", () => {
    const result = checkQueryText({ file: "console.hx", text: "QUERY A( =>" }, schema);
    expect(result.queries).toEqual([]);
    expect(result.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(["schema_syntax 1:10"]);
  });

  it("refuses type declarations: the types are the project's", () => {
    const result = checkQueryText({ file: "console.hx", text: "N::Extra { name: String }\nQUERY A() => u <- N<User> RETURN u" }, schema);
    expect(result.queries).toEqual([]);
    expect(result.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(["schema_invalid 1:4"]);
    expect(result.diagnostics[0].message).toMatch(/only QUERY definitions/);
  });

  it("reports a duplicate QUERY name at the second", () => {
    const result = checkQueryText({ file: "console.hx", text: "QUERY A() => u <- N<User> RETURN u\nQUERY A() => u <- N<Post> RETURN u" }, schema);
    expect(result.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(["query_invalid 2:7"]);
  });
});
