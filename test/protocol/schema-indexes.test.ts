/**
 * Vector and text indexes in the schema: the `VECTOR INDEX(..)` / `TEXT INDEX(..)` field modifiers and the options of
 * a `V::` type, every diagnostic of their checker, their JSON form, and schemaIndexDefinitions over all families.
 */
import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { VECTOR_FIELD } from "../../protocol/indexes.js";
import { checkSchema, parseSchema, schemaFromJson, schemaToJson, type Diagnostic } from "../../protocol/schema.js";
import { schemaIndexDefinitions } from "../../protocol/schema-indexes.js";

const EXAMPLE = `N::Doc {
    TEXT INDEX(analyzer: standard_stem_en, positions: true) body: String,
    TEXT INDEX tags: [String],
    VECTOR INDEX(dimension: 384, metric: cosine, tenant: org) embedding: [F32],
    INDEX org: String,
    tenant_id: String,
}
V::Chunk(dimension: 384, metric: euclidean, tenant: org, ef: 128) { org: String, text: String }
V::Plain { text: String }
E::Cites { From: Doc, To: Doc, Properties: { TEXT INDEX(tenant: tenant_id) note: String, tenant_id: String, VECTOR INDEX(metric: manhattan) v: [I64] } }
`;

function diagnose(text: string): Diagnostic[] {
  const result = checkSchema({ file: "s.hx", text });
  expect(result.schema).toBeUndefined();
  return result.diagnostics;
}

/** Each diagnostic as `code line:column message`. */
function problems(text: string): string[] {
  return diagnose(text).map((d) => `${d.code} ${d.line}:${d.column} ${d.message}`);
}

function storedFault(json: unknown): SilkError {
  try {
    schemaFromJson(json);
  } catch (error) {
    expect(error).toBeInstanceOf(SilkError);
    return error as SilkError;
  }
  throw new Error("schemaFromJson accepted the JSON");
}

describe("the schema syntax of vector and text indexes", () => {
  it("carries the options of fields and V:: types into the schema, with the defaults", () => {
    const schema = parseSchema({ file: "s.hx", text: EXAMPLE });
    const doc = schema.nodes.get("Doc")!.fields;
    expect(doc.get("body")?.textIndex).toEqual({ analyzer: "standard_stem_en", positions: true });
    expect(doc.get("tags")?.textIndex).toEqual({ analyzer: "standard", positions: false });
    expect(doc.get("embedding")?.vectorIndex).toEqual({ metric: "cosine", dimension: 384, tenant: "org" });
    expect(doc.get("org")?.index).toBe("index");
    expect(doc.get("tenant_id")).toEqual({ name: "tenant_id", type: { kind: "scalar", name: "String" }, required: false });
    expect(schema.vectors.get("Chunk")?.index).toEqual({ metric: "euclidean", dimension: 384, tenant: "org", ef: 128 });
    expect(schema.vectors.get("Plain")?.index).toEqual({ metric: "cosine" });
    const cites = schema.edges.get("Cites")!.fields;
    expect(cites.get("note")?.textIndex).toEqual({ analyzer: "standard", positions: false, tenant: "tenant_id" });
    expect(cites.get("v")?.vectorIndex).toEqual({ metric: "manhattan" });
  });

  it("accepts string option values, trailing commas and an empty option list", () => {
    const schema = parseSchema({ file: "s.hx", text: 'N::A { VECTOR INDEX(metric: "euclidean",) v: [F64], TEXT INDEX() t: String }\nV::B() {}' });
    expect(schema.nodes.get("A")?.fields.get("v")?.vectorIndex).toEqual({ metric: "euclidean" });
    expect(schema.nodes.get("A")?.fields.get("t")?.textIndex).toEqual({ analyzer: "standard", positions: false });
    expect(schema.vectors.get("B")?.index).toEqual({ metric: "cosine" });
  });

  it("keeps VECTOR, TEXT and INDEX working as field names", () => {
    const schema = parseSchema({ file: "s.hx", text: "N::A { VECTOR: String, TEXT: [String], INDEX: String }\nN::B { TEXT INDEX INDEX: String }" });
    expect([...schema.nodes.get("A")!.fields.keys()]).toEqual(["VECTOR", "TEXT", "INDEX"]);
    expect(schema.nodes.get("A")?.fields.get("TEXT")?.textIndex).toBeUndefined();
    expect(schema.nodes.get("B")?.fields.get("INDEX")?.textIndex).toEqual({ analyzer: "standard", positions: false });
  });

  it("reads a query without RETURN followed by a V:: type with options", () => {
    const result = checkSchema({ file: "s.hx", text: "N::A { x: String }\nQUERY Q() => a <- N<A>\nV::B(metric: manhattan) { x: String }" });
    expect(result.diagnostics).toEqual([]);
    expect(result.schema?.vectors.get("B")?.index).toEqual({ metric: "manhattan" });
  });
});

describe("diagnostics of vector and text indexes", () => {
  it("refuses a vector index on a field that is not [F32], [F64] or [I64]", () => {
    expect(problems("N::A { VECTOR INDEX v: [String] }")).toEqual([
      "schema_invalid 1:8 VECTOR INDEX on v: a vector index covers [F32], [F64] or [I64] fields, not [String]",
    ]);
    expect(problems("N::A { VECTOR INDEX v: F64 }")).toHaveLength(1);
    expect(problems("N::A { VECTOR INDEX v: [[F64]] }")).toHaveLength(1);
  });

  it("refuses a text index on a field that is not String or [String]", () => {
    expect(problems("N::A { TEXT INDEX n: U32 }")).toEqual([
      "schema_invalid 1:8 TEXT INDEX on n: a text index covers String or [String] fields, not U32",
    ]);
    expect(problems("N::A { TEXT INDEX o: { s: String } }")).toHaveLength(1);
  });

  it("refuses unknown and repeated options, and bad values, each at its place", () => {
    expect(problems("N::A { VECTOR INDEX(size: 3, metric: cosine, metric: euclidean) v: [F32] }")).toEqual([
      "schema_invalid 1:21 VECTOR INDEX on v: unknown option size; the options are dimension, metric, tenant, ef",
      "schema_invalid 1:46 VECTOR INDEX on v: option metric is given twice",
    ]);
    expect(problems("N::A { VECTOR INDEX(dimension: 0) a: [F32], VECTOR INDEX(dimension: 65537) b: [F32], VECTOR INDEX(dimension: 1.5) c: [F32] }")).toEqual([
      "schema_invalid 1:32 VECTOR INDEX on a: dimension is an integer from 1 to 65536, not 0",
      "schema_invalid 1:69 VECTOR INDEX on b: dimension is an integer from 1 to 65536, not 65537",
      "schema_invalid 1:110 VECTOR INDEX on c: dimension is an integer from 1 to 65536, not 1.5",
    ]);
    expect(problems("N::A { VECTOR INDEX(metric: dot) v: [F32] }")).toEqual([
      "schema_invalid 1:29 VECTOR INDEX on v: metric is one of cosine, euclidean, manhattan, not dot",
    ]);
    expect(problems('N::A { TEXT INDEX(analyzer: "french", positions: yes) t: String }')).toEqual([
      'schema_invalid 1:29 TEXT INDEX on t: analyzer is one of standard, standard_stem_en, whitespace_lowercase, not "french"',
      "schema_invalid 1:50 TEXT INDEX on t: positions is true or false, not yes",
    ]);
    expect(problems("N::A { TEXT INDEX(dimension: 3) t: String }")).toEqual([
      "schema_invalid 1:19 TEXT INDEX on t: unknown option dimension; the options are analyzer, positions, tenant",
    ]);
    expect(problems("V::A(dimension: -1, positions: true) {}")).toEqual([
      "schema_invalid 1:17 V::A: dimension is an integer from 1 to 65536, not -1",
      "schema_invalid 1:21 V::A: unknown option positions; the options are dimension, metric, tenant, ef",
    ]);
    expect(problems("N::A { VECTOR INDEX(ef: 0) a: [F32], VECTOR INDEX(ef: 10001) b: [F32], VECTOR INDEX(ef: wide) c: [F32] }")).toEqual([
      "schema_invalid 1:25 VECTOR INDEX on a: ef (the search beam width) is an integer from 1 to 10000, not 0",
      "schema_invalid 1:55 VECTOR INDEX on b: ef (the search beam width) is an integer from 1 to 10000, not 10001",
      "schema_invalid 1:89 VECTOR INDEX on c: ef (the search beam width) is an integer from 1 to 10000, not wide",
    ]);
    expect(problems("V::A(ef: 1.5) {}")).toEqual(["schema_invalid 1:10 V::A: ef (the search beam width) is an integer from 1 to 10000, not 1.5"]);
  });

  it("refuses a field with two index modifiers", () => {
    expect(problems("N::A { INDEX VECTOR INDEX v: [F32], TEXT INDEX UNIQUE INDEX t: String }")).toEqual([
      "schema_invalid 1:8 INDEX on v: a secondary index covers scalar fields (String, Boolean, numbers, Date, ID), not [F32]; filter it with WHERE instead",
      "schema_invalid 1:14 v has more than one index modifier (INDEX, then VECTOR INDEX); a field takes one of INDEX, UNIQUE INDEX, VECTOR INDEX, TEXT INDEX",
      "schema_invalid 1:48 t has more than one index modifier (TEXT INDEX, then UNIQUE INDEX); a field takes one of INDEX, UNIQUE INDEX, VECTOR INDEX, TEXT INDEX",
    ]);
  });

  it("refuses INDEX and UNIQUE INDEX on an array or object field, which the secondary index cannot hold", () => {
    expect(problems("N::A { INDEX tags: [String], UNIQUE INDEX address: { city: String }, INDEX ok: U8 }")).toEqual([
      "schema_invalid 1:8 INDEX on tags: a secondary index covers scalar fields (String, Boolean, numbers, Date, ID), not [String]; filter it with WHERE instead",
      "schema_invalid 1:30 UNIQUE INDEX on address: a secondary index covers scalar fields (String, Boolean, numbers, Date, ID), not { city: String }; filter it with WHERE instead",
    ]);
  });

  it("refuses a tenant field that is not declared, and a text tenant other than tenant_id", () => {
    expect(problems("N::A { VECTOR INDEX(tenant: org) v: [F32] }\nV::B(tenant: team) { org: String }")).toEqual([
      "schema_invalid 1:29 VECTOR INDEX on v: the tenant field org is not a declared field of this type",
      "schema_invalid 2:14 V::B: the tenant field team is not a declared field of this type",
    ]);
    expect(problems("N::A { TEXT INDEX(tenant: org) t: String, org: String }")).toEqual([
      "schema_invalid 1:27 TEXT INDEX on t: a text index is partitioned by the property tenant_id only, not org",
    ]);
    expect(problems("N::A { TEXT INDEX(tenant: tenant_id) t: String }")).toEqual([
      "schema_invalid 1:27 TEXT INDEX on t: the tenant field tenant_id is not a declared field of this type",
    ]);
    expect(problems("N::A { VECTOR INDEX(tenant: 3) v: [F32] }")).toEqual([
      "schema_invalid 1:29 VECTOR INDEX on v: tenant names a field of the type, not 3",
    ]);
  });

  it("refuses index modifiers on nested fields", () => {
    expect(problems("N::A { o: { TEXT INDEX t: String } }")).toEqual([
      "schema_invalid 1:13 TEXT INDEX is only allowed on top-level fields (nested paths are scan-only): t",
    ]);
  });

  it("reports an unclosed option list as a syntax error", () => {
    const [d] = diagnose("N::A { VECTOR INDEX(metric: cosine v: [F32] }");
    expect(d.code).toBe("schema_syntax");
  });
});

describe("the JSON form of vector and text indexes", () => {
  it("round-trips every option", () => {
    const schema = parseSchema({ file: "s.hx", text: EXAMPLE });
    const json = schemaToJson(schema);
    expect(schemaFromJson(JSON.parse(JSON.stringify(json)))).toEqual(schema);
    const stored = json as { vectors: { name: string; index: unknown }[] };
    expect(stored.vectors[0]).toMatchObject({ name: "Chunk", index: { metric: "euclidean", dimension: 384, tenant: "org", ef: 128 } });
  });

  it("reads a vector type stored before vector indexes as cosine", () => {
    const schema = schemaFromJson({ version: 1, nodes: [], edges: [], vectors: [{ name: "V", fields: [] }] });
    expect(schema.vectors.get("V")?.index).toEqual({ metric: "cosine" });
  });

  it("refuses malformed stored indexes, naming the JSON path", () => {
    const field = (extra: object, type: unknown = { array: "F32" }) => ({
      version: 1,
      nodes: [{ name: "A", fields: [{ name: "v", type, required: false, ...extra }, { name: "tenant_id", type: "String", required: false }] }],
      edges: [],
      vectors: [],
    });
    const cases: [unknown, string][] = [
      [field({ vector_index: { metric: "dot" } }), "$.nodes[0].fields[0].vector_index.metric"],
      [field({ vector_index: { metric: "cosine", dimension: 0 } }), "$.nodes[0].fields[0].vector_index.dimension"],
      [field({ vector_index: { metric: "cosine", extra: 1 } }), "$.nodes[0].fields[0].vector_index.extra"],
      [field({ vector_index: { metric: "cosine", ef: 0 } }), "$.nodes[0].fields[0].vector_index.ef"],
      [field({ vector_index: { metric: "cosine", ef: "64" } }), "$.nodes[0].fields[0].vector_index.ef"],
      [field({ vector_index: { metric: "cosine", tenant: "nope" } }), "$.nodes[0].fields[0].vector_index.tenant"],
      [field({ vector_index: { metric: "cosine" } }, "String"), "$.nodes[0].fields[0].vector_index"],
      [field({ text_index: { analyzer: "standard", positions: false } }), "$.nodes[0].fields[0].text_index"],
      [field({ text_index: { analyzer: "x", positions: false } }, "String"), "$.nodes[0].fields[0].text_index.analyzer"],
      [field({ text_index: { analyzer: "standard", positions: 1 } }, "String"), "$.nodes[0].fields[0].text_index.positions"],
      [field({ text_index: { analyzer: "standard", positions: false, tenant: "org" } }, "String"), "$.nodes[0].fields[0].text_index.tenant"],
      [field({ index: "index", text_index: { analyzer: "standard", positions: false } }, "String"), "$.nodes[0].fields[0].text_index"],
      [{ version: 1, nodes: [], edges: [], vectors: [{ name: "V", index: { metric: "cosine", tenant: "org" }, fields: [] }] }, "$.vectors[0].index.tenant"],
      [{ version: 1, nodes: [], edges: [], vectors: [{ name: "V", index: "cosine", fields: [] }] }, "$.vectors[0].index"],
    ];
    for (const [json, path] of cases) {
      const error = storedFault(json);
      expect(error.code).toBe("schema_invalid");
      expect(error.message).toContain(`at ${path}:`);
    }
  });
});

describe("schemaIndexDefinitions", () => {
  it("lists every index of every family, named Type.field, in declaration order", () => {
    const schema = parseSchema({ file: "s.hx", text: EXAMPLE + "N::User { UNIQUE INDEX handle: String, INDEX age: U8 }" });
    expect(schemaIndexDefinitions(schema)).toEqual([
      { kind: "node", label: "Doc", field: "body", name: "Doc.body", family: "text", analyzer: "standard_stem_en", positions: true },
      { kind: "node", label: "Doc", field: "tags", name: "Doc.tags", family: "text", analyzer: "standard", positions: false },
      { kind: "node", label: "Doc", field: "embedding", name: "Doc.embedding", family: "vector", metric: "cosine", dimension: 384, tenant: "org" },
      { kind: "node", label: "Doc", field: "org", name: "Doc.org", family: "secondary", unique: false, type: "String" },
      { kind: "node", label: "User", field: "handle", name: "User.handle", family: "secondary", unique: true, type: "String" },
      { kind: "node", label: "User", field: "age", name: "User.age", family: "secondary", unique: false, type: "U8" },
      { kind: "edge", label: "Cites", field: "note", name: "Cites.note", family: "text", analyzer: "standard", positions: false, tenant: "tenant_id" },
      { kind: "edge", label: "Cites", field: "v", name: "Cites.v", family: "vector", metric: "manhattan" },
      { kind: "vector", label: "Chunk", field: VECTOR_FIELD, name: "Chunk.$vector", family: "vector", metric: "euclidean", dimension: 384, tenant: "org", ef: 128 },
      { kind: "vector", label: "Plain", field: VECTOR_FIELD, name: "Plain.$vector", family: "vector", metric: "cosine" },
    ]);
  });

  it("is empty without a schema", () => {
    expect(schemaIndexDefinitions(undefined)).toEqual([]);
  });
});
