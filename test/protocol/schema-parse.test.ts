import { describe, expect, it } from "vitest";
import {
  checkSchema,
  emptySchema,
  fieldTypeToString,
  parseSchema,
  type FieldDecl,
  type FieldType,
  type Schema,
} from "../../protocol/schema.js";

/** The example schema from the issue, verbatim. */
export const EXAMPLE = `// line comments
N::User {
    INDEX name: String,
    UNIQUE INDEX email: String,
    age: U32 DEFAULT 0,
    score: F64,
    created_at: Date DEFAULT NOW,
    tags: [String],
    address: { city: String, zip: U32 },
    REQUIRED handle: String
}
E::Follows {
    From: User,
    To: User,
    Properties: {
        since: Date,
        weight: F64 DEFAULT 1.0
    }
}
E::Likes { From: User, To: Post }
V::Document { content: String }
V::Empty {}
`;

function parse(text: string): Schema {
  return parseSchema({ file: "schema.hx", text });
}

function field(schema: Schema, type: string, name: string): FieldDecl {
  const decl = schema.nodes.get(type) ?? schema.vectors.get(type) ?? schema.edges.get(type);
  const found = decl?.fields.get(name);
  if (found === undefined) throw new Error(`no field ${type}.${name}`);
  return found;
}

const scalar = (name: string): FieldType => ({ kind: "scalar", name }) as FieldType;

describe("parseSchema on the example", () => {
  it("reports only the undeclared Post in the example as given", () => {
    const result = checkSchema({ file: "schema.hx", text: EXAMPLE });
    expect(result.schema).toBeUndefined();
    expect(result.diagnostics).toEqual([
      {
        code: "schema_invalid",
        file: "schema.hx",
        line: 20,
        column: 28,
        message: "E::Likes: To names Post, which is not a declared node (N::) or vector (V::) type",
      },
    ]);
  });

  it("parses the example once Post is declared", () => {
    const schema = parse(`${EXAMPLE}N::Post { title: String }\n`);
    expect([...schema.nodes.keys()]).toEqual(["User", "Post"]);
    expect([...schema.edges.keys()]).toEqual(["Follows", "Likes"]);
    expect([...schema.vectors.keys()]).toEqual(["Document", "Empty"]);

    const user = schema.nodes.get("User");
    expect(user?.kind).toBe("node");
    expect([...(user?.fields.keys() ?? [])]).toEqual(["name", "email", "age", "score", "created_at", "tags", "address", "handle"]);
    expect(field(schema, "User", "name")).toEqual({ name: "name", type: scalar("String"), required: false, index: "index" });
    expect(field(schema, "User", "email")).toEqual({ name: "email", type: scalar("String"), required: false, index: "unique" });
    expect(field(schema, "User", "age")).toEqual({ name: "age", type: scalar("U32"), required: false, default: { kind: "value", value: 0 } });
    expect(field(schema, "User", "score")).toEqual({ name: "score", type: scalar("F64"), required: false });
    expect(field(schema, "User", "created_at").default).toEqual({ kind: "now" });
    expect(field(schema, "User", "tags").type).toEqual({ kind: "array", element: scalar("String") });
    expect(field(schema, "User", "handle")).toEqual({ name: "handle", type: scalar("String"), required: true });

    const address = field(schema, "User", "address").type;
    expect(address.kind).toBe("object");
    expect(fieldTypeToString(address)).toBe("{ city: String, zip: U32 }");

    const follows = schema.edges.get("Follows");
    expect(follows).toMatchObject({ kind: "edge", name: "Follows", from: "User", to: "User", unique: false });
    expect(field(schema, "Follows", "weight").default).toEqual({ kind: "value", value: 1 });
    expect(field(schema, "Follows", "since").type).toEqual(scalar("Date"));
    expect(schema.edges.get("Likes")).toMatchObject({ from: "User", to: "Post" });
    expect(schema.edges.get("Likes")?.fields.size).toBe(0);
    expect(schema.vectors.get("Document")?.fields.get("content")?.type).toEqual(scalar("String"));
    expect(schema.vectors.get("Empty")).toEqual({ kind: "vector", name: "Empty", fields: new Map(), index: { metric: "cosine" } });
  });
});

describe("UNIQUE edge types", () => {
  it("reads HelixDB's UNIQUE between an edge type's name and its body", () => {
    const schema = parse(`N::User { name: String }\nE::Best UNIQUE { From: User, To: User, Properties: { since: Date } }\nE::Knows{From:User,To:User}\n`);
    expect(schema.edges.get("Best")).toMatchObject({ kind: "edge", name: "Best", from: "User", to: "User", unique: true });
    expect(schema.edges.get("Best")?.fields.has("since")).toBe(true);
    expect(schema.edges.get("Knows")?.unique).toBe(false);
  });

  it("refuses UNIQUE elsewhere in an edge declaration as a syntax error", () => {
    for (const text of ["E::Best { UNIQUE From: User, To: User }", "E::Best UNIQUE UNIQUE { From: User, To: User }", "E::Best UNIQUEX { From: User, To: User }"]) {
      const result = checkSchema({ file: "schema.hx", text: `N::User { name: String }\n${text}\n` });
      expect(result.schema, text).toBeUndefined();
      expect(result.diagnostics.map((diagnostic) => diagnostic.code), text).toEqual(["schema_syntax"]);
    }
  });
});

describe("field types", () => {
  const names = ["String", "Boolean", "F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "U128", "Date", "ID"];

  it("parses every scalar type", () => {
    const text = `N::All {\n${names.map((n) => `  f_${n}: ${n},`).join("\n")}\n}`;
    const fields = parse(text).nodes.get("All")?.fields;
    expect(fields?.size).toBe(names.length);
    for (const n of names) expect(fields?.get(`f_${n}`)?.type).toEqual(scalar(n));
  });

  it("parses arrays, nested arrays and inline objects with nested objects", () => {
    const schema = parse(`N::T {
      a: [F64],
      b: [[I32]],
      c: [{ x: F32, y: [String] }],
      d: { inner: { deeper: Boolean }, list: [[Date]] },
      e: {},
    }`);
    expect(fieldTypeToString(field(schema, "T", "a").type)).toBe("[F64]");
    expect(field(schema, "T", "b").type).toEqual({ kind: "array", element: { kind: "array", element: scalar("I32") } });
    expect(fieldTypeToString(field(schema, "T", "c").type)).toBe("[{ x: F32, y: [String] }]");
    expect(fieldTypeToString(field(schema, "T", "d").type)).toBe("{ inner: { deeper: Boolean }, list: [[Date]] }");
    expect(fieldTypeToString(field(schema, "T", "e").type)).toBe("{}");
  });

  it("keeps REQUIRED on inline object fields", () => {
    const schema = parse("N::T { o: { REQUIRED k: String, v: U8 } }");
    expect(fieldTypeToString(field(schema, "T", "o").type)).toBe("{ REQUIRED k: String, v: U8 }");
  });
});

describe("syntax details", () => {
  it("allows trailing commas, comments anywhere and no whitespace", () => {
    const schema = parse(`// header
N::A{x:String,}// after
E::B{From:A,To:A,Properties:{w:F64,},} // edge
V::C { // inside
  v: [F64], // trailing
}
`);
    expect(schema.nodes.get("A")?.fields.has("x")).toBe(true);
    expect(schema.edges.get("B")?.fields.has("w")).toBe(true);
    expect(schema.vectors.get("C")?.fields.has("v")).toBe(true);
  });

  it("accepts an empty file, a comment-only file and no sources", () => {
    expect(parse("")).toEqual(emptySchema());
    expect(parse("// nothing here\n\n")).toEqual(emptySchema());
    expect(parseSchema([])).toEqual(emptySchema());
  });

  it("accepts edge items in any order, with Properties optional", () => {
    const schema = parse("N::A {}\nE::E1 { Properties: { w: F64 }, To: A, From: A }\nE::E2 { From: A, To: A }");
    expect(schema.edges.get("E1")).toMatchObject({ from: "A", to: "A" });
    expect(schema.edges.get("E1")?.fields.has("w")).toBe(true);
    expect(schema.edges.get("E2")?.fields.size).toBe(0);
  });

  it("lets edges end at vector types", () => {
    const schema = parse("N::Chunk {}\nV::Embedding {}\nE::HasEmbedding { From: Chunk, To: Embedding }");
    expect(schema.edges.get("HasEmbedding")).toMatchObject({ from: "Chunk", to: "Embedding" });
  });

  it("treats modifier keywords as field names when no name follows", () => {
    const schema = parse("N::K { INDEX: String, REQUIRED: U8, UNIQUE: Boolean, DEFAULT: I8, From: ID, NOW: Date }");
    expect([...(schema.nodes.get("K")?.fields.keys() ?? [])]).toEqual(["INDEX", "REQUIRED", "UNIQUE", "DEFAULT", "From", "NOW"]);
    expect(field(schema, "K", "INDEX").index).toBeUndefined();
    expect(field(schema, "K", "REQUIRED").required).toBe(false);
  });

  it("combines modifiers in either order", () => {
    const schema = parse("N::M { REQUIRED INDEX a: String, UNIQUE INDEX REQUIRED b: String }");
    expect(field(schema, "M", "a")).toMatchObject({ required: true, index: "index" });
    expect(field(schema, "M", "b")).toMatchObject({ required: true, index: "unique" });
  });

  it("allows the same name for different kinds", () => {
    const schema = parse("N::Thing {}\nE::Thing { From: Thing, To: Thing }");
    expect(schema.nodes.has("Thing")).toBe(true);
    expect(schema.edges.get("Thing")).toMatchObject({ from: "Thing", to: "Thing" });
  });

  it("reads declarations from several files, edges referring across files", () => {
    const schema = parseSchema([
      { file: "edges.hx", text: "E::Wrote { From: Author, To: Book }" },
      { file: "nodes.hx", text: "N::Author { name: String }\nN::Book { title: String }" },
    ]);
    expect([...schema.nodes.keys()]).toEqual(["Author", "Book"]);
    expect(schema.edges.get("Wrote")).toMatchObject({ from: "Author", to: "Book" });
  });
});

describe("DEFAULT literals", () => {
  it("converts every kind of literal to the field's stored form", () => {
    const schema = parse(`N::D {
      s: String DEFAULT "a \\"quoted\\" \\\\ line\\n\\u00e9",
      b: Boolean DEFAULT false,
      f32: F32 DEFAULT -1.5e3,
      f64: F64 DEFAULT 0.25,
      i8: I8 DEFAULT -128,
      u64: U64 DEFAULT 18446744073709551615,
      u128: U128 DEFAULT 340282366920938463463374607431768211455,
      small: I64 DEFAULT 42,
      day: Date DEFAULT "2024-02-29",
      at: Date DEFAULT "2024-01-02T03:04:05.678+01:00",
      now: Date DEFAULT NOW,
      ids: [ID] DEFAULT [0, 18446744073709551615],
      tags: [String] DEFAULT ["x", "y",],
      grid: [[U8]] DEFAULT [[1, 2], []],
      empty: [F64] DEFAULT [],
    }`);
    const value = (name: string) => {
      const d = field(schema, "D", name).default;
      return d?.kind === "value" ? d.value : d;
    };
    expect(value("s")).toBe('a "quoted" \\ line\né');
    expect(value("b")).toBe(false);
    expect(value("f32")).toBe(-1500);
    expect(value("f64")).toBe(0.25);
    expect(value("i8")).toBe(-128);
    expect(value("u64")).toBe(18446744073709551615n);
    expect(value("u128")).toBe(2n ** 128n - 1n);
    expect(value("small")).toBe(42);
    expect(value("day")).toEqual(new Date("2024-02-29T00:00:00Z"));
    expect(value("at")).toEqual(new Date("2024-01-02T02:04:05.678Z"));
    expect(value("now")).toEqual({ kind: "now" });
    expect(value("ids")).toEqual([0n, 18446744073709551615n]);
    expect(value("tags")).toEqual(["x", "y"]);
    expect(value("grid")).toEqual([[1, 2], []]);
    expect(value("empty")).toEqual([]);
  });
});
