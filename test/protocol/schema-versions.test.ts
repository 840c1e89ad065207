/**
 * Versioned schemas and MIGRATIONs at check time (protocol/helixql/schema-versions.ts): the highest version is the
 * project's schema, each migration compiles to explicit field moves, and everything that would lose or corrupt data
 * silently is refused at its place.
 */
import { describe, expect, it } from "vitest";
import { checkProject } from "../../protocol/helixql/query-check.js";
import { migrateProperties } from "../../protocol/helixql/schema-versions.js";

const V1 = `schema::1 {
  N::User { name: String, age: U8, city: String, note: String }
  E::Knows { From: User, To: User, Properties: { since: Date } }
  V::Doc { title: String }
}
`;

function diagnostics(text: string): string[] {
  return checkProject({ file: "s.hx", text }).diagnostics.map((d) => `${d.line}:${d.column} ${d.code} ${d.message}`);
}

describe("versioned schemas", () => {
  it("checks queries against the highest version and compiles the migration into explicit moves", () => {
    const checked = checkProject({
      file: "s.hx",
      text: `${V1}
schema::2 {
  N::Person { INDEX username: String, given_age: U32, city: String, joined: Date DEFAULT NOW, kind: String DEFAULT "human" }
  E::Knows { From: Person, To: Person, Properties: { created_at: Date } }
  V::Doc { title: String }
}
MIGRATION schema::1 => schema::2 {
  N::User => N::Person { username: name, given_age: age AS U32, kind: "user", .. }
  E::Knows => _::{ Properties: { created_at: since } }
}
QUERY ByName(n: String) => p <- N<Person>::WHERE(_::{username}::EQ(n)) RETURN p
`,
    });
    expect(checked.diagnostics).toEqual([]);
    expect([...checked.schema!.nodes.keys()]).toEqual(["Person"]);
    expect(checked.history).toMatchObject({ version: 2, first: 1 });
    const [migration] = checked.history!.migrations;
    expect(migration.items.map((item) => `${item.kind} ${item.from}->${item.to}`)).toEqual(["node User->Person", "edge Knows->Knows"]);
    const person = migration.items[0];
    expect(person.moves).toEqual([
      { kind: "copy", target: "username", source: "name" },
      { kind: "copy", target: "given_age", source: "age", cast: { kind: "scalar", name: "U32" } },
      { kind: "value", target: "kind", value: "user" },
      { kind: "copy", target: "city", source: "city" },
    ]);
    expect(person.defaults).toEqual([{ kind: "now", target: "joined" }]);
    const now = new Date("2026-11-25T00:00:00Z");
    // `note` is not declared by Person: it is dropped; `joined` takes its DEFAULT NOW.
    expect(migrateProperties(person, { name: "ann", age: 30, city: "Oslo", note: "x" }, now, "N::User 1")).toEqual({ username: "ann", given_age: 30, kind: "user", city: "Oslo", joined: now });
    // V::Doc is the same in both versions: nothing to rewrite.
    expect(migration.items.some((item) => item.kind === "vector")).toBe(false);
  });

  it("takes unversioned types as version 1 and a project without versions as one version", () => {
    const plain = checkProject({ file: "s.hx", text: "N::User { name: String }" });
    expect(plain.history).toEqual({ version: 1, first: 1, migrations: [] });
    const mixed = checkProject({
      file: "s.hx",
      text: "N::User { name: String }\nschema::2 { N::User { name: String, n: I32 DEFAULT 0 } }\nMIGRATION schema::1 => schema::2 { N::User => _::{ .. } }",
    });
    expect(mixed.diagnostics).toEqual([]);
    expect(mixed.history).toMatchObject({ version: 2, first: 1 });
    expect(mixed.history!.migrations[0].items[0].defaults).toEqual([{ kind: "value", target: "n", value: 0 }]);
  });

  it("converts with AS between numbers and to and from String, and refuses values that do not convert", () => {
    const checked = checkProject({
      file: "s.hx",
      text: `schema::1 { N::T { a: String, b: I64, c: String, d: F64, e: Boolean } }
schema::2 { N::T { a: I32, b: String, c: Date, d: U8, e: String } }
MIGRATION schema::1 => schema::2 { N::T => _::{ a: a AS I32, b: b AS String, c: c AS Date, d: d AS U8, e: e AS String } }`,
    });
    expect(checked.diagnostics).toEqual([]);
    const item = checked.history!.migrations[0].items[0];
    const now = new Date();
    expect(migrateProperties(item, { a: "-12", b: 9007199254740993n, c: "2024-02-29", d: 200, e: true }, now, "N::T 1")).toEqual({
      a: -12,
      b: "9007199254740993",
      c: new Date("2024-02-29T00:00:00.000Z"),
      d: 200,
      e: "true",
    });
    expect(() => migrateProperties(item, { a: "twelve" }, now, "N::T 7")).toThrow(expect.objectContaining({ code: "invalid_value", message: expect.stringContaining("N::T 7, field a") }));
    expect(() => migrateProperties(item, { d: 300 }, now, "N::T 8")).toThrow(expect.objectContaining({ code: "invalid_value" }));
    expect(() => migrateProperties(item, { d: 2.5 }, now, "N::T 9")).toThrow(expect.objectContaining({ code: "invalid_value" }));
  });

  it("refuses what would lose or corrupt data, each at its place", () => {
    const required = `${V1}schema::2 { N::User { REQUIRED email: String } E::Knows { From: User, To: User, Properties: { since: Date } } V::Doc { title: String } }
MIGRATION schema::1 => schema::2 { N::User => _::{ .. } }`;
    expect(diagnostics(required)).toEqual([
      "7:36 schema_invalid N::User (schema::2)'s field email is REQUIRED and nothing in the MIGRATION fills it: map it, or give it a DEFAULT",
    ]);
    expect(diagnostics(`${V1}schema::2 { N::User { name: String } E::Knows { From: User, To: User, Properties: { since: Date } } V::Doc { title: String } }`)).toEqual([
      "6:1 schema_invalid schema::2 has no MIGRATION schema::1 => schema::2: write one, saying how records of schema::1 become records of schema::2",
    ]);
    const next = `schema::2 {
  N::User { name: I32, age: Boolean }
  E::Knows { From: User, To: User, Properties: { since: Date } }
  N::Extra { REQUIRED must: String }
}
`;
    expect(diagnostics(`${V1}${next}MIGRATION schema::1 => schema::2 {
  N::User => _::{ name: nme, age: age AS Boolean, .. }
  E::Knows => E::Meets { Properties: { since: since } }
}`)).toEqual([
      "11:1 schema_invalid schema::2 has no V::Doc of its own and MIGRATION schema::1 => schema::2 does not map it: its records would be lost; map it to a type of schema::2 (V::Doc => V::Other {..})",
      "12:25 schema_invalid N::User (schema::1) has no field nme",
      "12:42 schema_invalid age: no value converts from U8 to Boolean (AS converts between scalars: numbers, and String to and from any scalar)",
      "13:18 schema_invalid schema::2 has no E::Meets",
    ]);
    expect(diagnostics(`${V1}${next}MIGRATION schema::1 => schema::2 {
  N::User => _::{ name: name, age: age, .. }
  N::User => N::Extra { }
  E::Knows => _::{ since: since }
  V::Doc => N::Extra { }
}`)).toEqual([
      "12:25 schema_invalid name: name changes type from String to I32; convert it with name AS I32",
      "12:36 schema_invalid age: age changes type from U8 to Boolean; convert it with age AS Boolean",
      "13:3 schema_invalid N::User is mapped twice in MIGRATION schema::1 => schema::2",
      "14:3 schema_invalid E::Knows: an edge type's fields are mapped inside { Properties: {..} }",
      "15:13 schema_invalid V::Doc cannot become N::Extra: a record keeps its kind",
    ]);
  });

  it("refuses migrations between versions that are not consecutive, unknown or backwards, and bad version numbers", () => {
    const three = "schema::1 { N::A { x: I32 } }\nschema::2 { N::A { x: I32 } }\nschema::3 { N::A { x: I32 } }\n";
    expect(diagnostics(`${three}MIGRATION schema::1 => schema::3 { }\nMIGRATION schema::2 => schema::3 { }\nMIGRATION schema::2 => schema::1 { }\nMIGRATION schema::4 => schema::5 { }\nMIGRATION schema::2 => schema::3 { }`)).toEqual([
      "2:1 schema_invalid schema::2 has no MIGRATION schema::1 => schema::2: write one, saying how records of schema::1 become records of schema::2",
      "4:24 schema_invalid MIGRATION schema::1 => schema::3 skips schema::2: write one MIGRATION per step, schema::1 => schema::2",
      "6:24 schema_invalid MIGRATION schema::2 => schema::1 goes backwards: a migration goes to a higher version",
      "7:11 schema_invalid MIGRATION from schema::4: no such version is declared (declared: schema::1, schema::2, schema::3)",
      "8:1 schema_invalid a second MIGRATION schema::2 => schema::3; the first is at s.hx:5:1",
    ]);
    expect(diagnostics("schema::0 { N::A { x: I32 } }")).toEqual(["1:1 schema_invalid schema::0: a schema version is an integer from 1 to 1000000"]);
  });

  it("parses a migration and a version block after a QUERY without RETURN", () => {
    const checked = checkProject({
      file: "s.hx",
      text: `schema::1 { N::A { x: I32 } }
QUERY Add(x: I32) => AddN<A>({x: x})
schema::2 { N::A { x: I32, y: I32 DEFAULT 1 } }
QUERY Count() => n <- N<A>::COUNT RETURN n
MIGRATION schema::1 => schema::2 { N::A => _::{ .. } }`,
    });
    expect(checked.diagnostics).toEqual([]);
    expect(checked.queries.map((query) => query.name)).toEqual(["Add", "Count"]);
  });
});
