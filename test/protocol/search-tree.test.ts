/**
 * The operation tree's search, rerank and embed shapes and create_index's index types: what each decodes to, and
 * every malformed shape refused as malformed_tree naming its JSON path.
 */
import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { VECTOR_FIELD } from "../../protocol/indexes.js";
import { decodeRequest, type Entry, type Step } from "../../protocol/tree.js";
import type { NamedIndexOperation } from "../../protocol/tree-indexes.js";

const ROOT = "$.query.read.entries[0].query.root";

function read(root: unknown): unknown {
  return { request_type: "read", query: { read: { entries: [{ query: { name: "r", root } }], returns: ["r"] } } };
}

function decodeRoot(root: unknown): Step {
  const entry = decodeRequest(read(root)).entries[0] as Extract<Entry, { kind: "query" }>;
  return entry.root;
}

function refused(body: unknown): SilkError {
  try {
    decodeRequest(body);
  } catch (error) {
    expect(error).toBeInstanceOf(SilkError);
    return error as SilkError;
  }
  throw new Error("the decoder accepted the tree");
}

/** The request is malformed_tree and the message starts with the JSON path at fault. */
function expectFault(body: unknown, path: string): void {
  const error = refused(body);
  expect(error.code, error.message).toBe("malformed_tree");
  expect(error.message.startsWith(`${path}:`), error.message).toBe(true);
}

const V = { value: { f64_array: [0.1, 0.2, 0.3] } };
const K = { value: { i64: 5 } };
const ALL_USERS = { nodes_where: { predicate: { eq: { left: { property: "$label" }, right: { constant: { string: "User" } } } } } };

describe("vector_search", () => {
  it("decodes the nodes, edges and vectors forms", () => {
    expect(decodeRoot({ vector_search_nodes: { label: "Doc", property: "embedding", query: V, k: K } })).toEqual({
      op: "vector_search", kind: "node", label: "Doc", property: "embedding", query: { kind: "value", value: Float64Array.from([0.1, 0.2, 0.3]) }, k: { kind: "value", value: 5 },
    });
    expect(decodeRoot({ vector_search_edges: { label: "Cites", property: "v", query: { expr: { param: "v" } }, k: { expr: { param: "k" } } } })).toMatchObject({
      op: "vector_search", kind: "edge", label: "Cites", property: "v", query: { kind: "expr", expr: { kind: "param", name: "v" } }, k: { kind: "expr" },
    });
    expect(decodeRoot({ vector_search_vectors: { label: "Chunk", query: V, k: K, tenant_value: { value: { string: "acme" } } } })).toMatchObject({
      op: "vector_search", kind: "vector", label: "Chunk", property: VECTOR_FIELD, tenant: { kind: "value", value: "acme" },
    });
  });

  it("decodes the _within forms with their input", () => {
    const step = decodeRoot({ vector_search_nodes_within: { input: { out: { input: ALL_USERS, label: "Owns" } }, label: "Doc", property: "embedding", query: V, k: K } });
    expect(step).toMatchObject({ op: "vector_search", kind: "node", input: { op: "out", label: "Owns" } });
    expect(decodeRoot({ vector_search_vectors_within: { input: { vectors: { reference: "all" } }, label: "Chunk", query: V, k: K } })).toMatchObject({
      op: "vector_search", kind: "vector", input: { op: "vectors" },
    });
  });

  it("takes a beam width `ef` (a whole number from 1 to 10,000) for vector searches only", () => {
    expect(decodeRoot({ vector_search_nodes: { label: "Doc", property: "embedding", query: V, k: K, ef: 200 } })).toMatchObject({ op: "vector_search", ef: 200 });
    expect(decodeRoot({ vector_search_vectors: { label: "Chunk", query: V, k: K, ef: 10_000 } })).toMatchObject({ ef: 10_000 });
    expect(decodeRoot({ vector_search_nodes: { label: "Doc", property: "embedding", query: V, k: K, ef: null } })).not.toHaveProperty("ef");
    const at = `${ROOT}.vector_search_nodes`;
    for (const bad of [0, -1, 10_001, 1.5, "64", true, { i64: 64 }]) expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: V, k: K, ef: bad } }), `${at}.ef`);
    expectFault(read({ text_search_nodes: { label: "Doc", query: { value: { string: "x" } }, k: K, ef: 64 } }), `${ROOT}.text_search_nodes.ef`);
  });

  it("takes an embed expression as the query", () => {
    const step = decodeRoot({ vector_search_vectors: { label: "Chunk", query: { expr: { embed: { text: { param: "q" } } } }, k: K } });
    expect(step).toMatchObject({ query: { kind: "expr", expr: { kind: "embed", text: { kind: "param", name: "q" } } } });
    expect((step as { query: { expr: object } }).query.expr).not.toHaveProperty("model");
  });

  it("takes the embed expression's model (HelixQL's #[model(\"name\")]), a well-formed name", () => {
    const query = (model: unknown): unknown => read({ vector_search_vectors: { label: "Chunk", query: { expr: { embed: { text: { param: "q" }, model } } }, k: K } });
    const step = decodeRoot({ vector_search_vectors: { label: "Chunk", query: { expr: { embed: { text: { param: "q" }, model: "text-embedding-3-large" } } }, k: K } });
    expect(step).toMatchObject({ query: { kind: "expr", expr: { kind: "embed", model: "text-embedding-3-large" } } });
    const at = `${ROOT}.vector_search_vectors.query.expr.embed.model`;
    for (const bad of ["", "  ", "a\u0000b", "x".repeat(257)]) expectFault(query(bad), at);
  });

  it("refuses malformed shapes, naming the path", () => {
    const at = `${ROOT}.vector_search_nodes`;
    expectFault(read({ vector_search_nodes: { label: "Doc", query: V, k: K } }), `${at}.property`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", k: K } }), `${at}.query`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: V } }), `${at}.k`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: V, k: { value: { i64: 0 } } } }), `${at}.k.value`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: V, k: { value: { f64: 2.5 } } } }), `${at}.k.value`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: { value: { string: "x" } }, k: K } }), `${at}.query`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: { value: { f64_array: [] } }, k: K } }), `${at}.query`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: V, k: K, input: ALL_USERS } }), `${at}.input`);
    expectFault(read({ vector_search_nodes: { label: "no such", property: "e", query: V, k: K } }), `${at}.label`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: V, k: K, tenant: K } }), `${at}.tenant`);
    expectFault(read({ vector_search_vectors: { label: "C", property: "e", query: V, k: K } }), `${ROOT}.vector_search_vectors.property`);
    expectFault(read({ vector_search_nodes_within: { label: "Doc", property: "e", query: V, k: K } }), `${ROOT}.vector_search_nodes_within.input`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: { expr: { embed: {} } }, k: K } }), `${at}.query.expr.embed.text`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "e", query: { expr: { embed: { text: { param: "q" }, model: 1 } } }, k: K } }), `${at}.query.expr.embed.model`);
  });
});

describe("text_search", () => {
  it("decodes with and without a property, and the _within forms", () => {
    expect(decodeRoot({ text_search_nodes: { label: "Doc", query: { value: { string: "graph" } }, k: K } })).toEqual({
      op: "text_search", kind: "node", label: "Doc", query: { kind: "value", value: "graph" }, k: { kind: "value", value: 5 },
    });
    expect(decodeRoot({ text_search_edges: { label: "Cites", property: "note", query: { expr: { param: "q" } }, k: K, tenant_value: { expr: { param: "t" } } } })).toMatchObject({
      op: "text_search", kind: "edge", property: "note", tenant: { kind: "expr" },
    });
    expect(decodeRoot({ text_search_vectors_within: { input: { vectors: { reference: "all" } }, label: "Chunk", property: "text", query: { value: { string: "x" } }, k: K } })).toMatchObject({
      op: "text_search", kind: "vector", input: { op: "vectors" }, property: "text",
    });
  });

  it("refuses malformed shapes, naming the path", () => {
    const at = `${ROOT}.text_search_nodes`;
    expectFault(read({ text_search_nodes: { label: "Doc", k: K } }), `${at}.query`);
    expectFault(read({ text_search_nodes: { label: "Doc", query: { value: { i64: 3 } }, k: K } }), `${at}.query`);
    expectFault(read({ text_search_nodes: { label: "Doc", query: { value: { string: "x" } }, k: K, property: 3 } }), `${at}.property`);
    expectFault(read({ text_search_nodes: { label: "Doc", query: { value: { string: "x" } }, k: { value: { i64: -1 } } } }), `${at}.k.value`);
    expectFault(read({ text_search_nodes: { label: "Doc", query: { nope: 1 }, k: K } }), `${at}.query`);
    expectFault(read({ text_search_edges_within: { label: "Doc", query: { value: { string: "x" } }, k: K, input: "nope" } }), `${ROOT}.text_search_edges_within.input`);
  });
});

describe("rerank_rrf and rerank_mmr", () => {
  const search = { vector_search_vectors: { label: "Chunk", query: V, k: K } };

  it("decodes RRF with and without k, and MMR with its default distance", () => {
    expect(decodeRoot({ rerank_rrf: { input: search } })).toMatchObject({ op: "rerank_rrf", input: { op: "vector_search" } });
    expect((decodeRoot({ rerank_rrf: { input: search } }) as { k?: unknown }).k).toBeUndefined();
    expect(decodeRoot({ rerank_rrf: { input: search, k: { value: { i64: 60 } } } })).toMatchObject({ k: { kind: "value", value: 60 } });
    expect(decodeRoot({ rerank_rrf: { input: search, k: { value: { f64: 2.5 } } } })).toMatchObject({ k: { kind: "value", value: 2.5 } });
    expect(decodeRoot({ rerank_mmr: { input: search, lambda: { value: { f64: 0.7 } } } })).toMatchObject({
      op: "rerank_mmr", lambda: { kind: "value", value: 0.7 }, distance: "cosine",
    });
    for (const distance of ["cosine", "euclidean", "dotproduct"]) {
      expect(decodeRoot({ rerank_mmr: { input: search, lambda: { expr: { param: "l" } }, distance } })).toMatchObject({ distance });
    }
  });

  it("refuses malformed shapes, naming the path", () => {
    expectFault(read({ rerank_rrf: {} }), `${ROOT}.rerank_rrf.input`);
    expectFault(read({ rerank_rrf: { input: search, k: { value: { i64: 0 } } } }), `${ROOT}.rerank_rrf.k.value`);
    expectFault(read({ rerank_rrf: { input: search, k: { value: { f64: -0.5 } } } }), `${ROOT}.rerank_rrf.k.value`);
    expectFault(read({ rerank_rrf: { input: search, lambda: K } }), `${ROOT}.rerank_rrf.lambda`);
    expectFault(read({ rerank_mmr: { input: search } }), `${ROOT}.rerank_mmr.lambda`);
    expectFault(read({ rerank_mmr: { input: search, lambda: { value: { f64: 1.5 } } } }), `${ROOT}.rerank_mmr.lambda.value`);
    expectFault(read({ rerank_mmr: { input: search, lambda: { value: { string: "x" } } } }), `${ROOT}.rerank_mmr.lambda.value`);
    expectFault(read({ rerank_mmr: { input: search, lambda: { value: { f64: 0.5 } }, distance: "manhattan" } }), `${ROOT}.rerank_mmr.distance`);
  });
});

describe("create_index types and options", () => {
  function operation(body: Record<string, unknown>, tag = "create_index"): NamedIndexOperation {
    const plan = decodeRequest({ request_type: "write", query: { write: { entries: [{ query: { root: { [tag]: body } } }] } } });
    const decoded = (plan.entries[0] as Extract<Entry, { kind: "index_operation" }>).operation;
    if ("operationId" in decoded) throw new Error("expected an operation naming its index by kind, label and field");
    return decoded;
  }
  const at = "$.query.write.entries[0].query.root.create_index";
  const write = (body: Record<string, unknown>) => ({ request_type: "write", query: { write: { entries: [{ query: { root: { create_index: body } } }] } } });
  const base = { label: "Doc", property: "body" };

  it("decodes every type into its spec, and keeps the unique flag of the earlier form", () => {
    expect(operation(base).spec).toEqual({ family: "secondary", unique: false });
    expect(operation({ ...base, unique: true }).spec).toEqual({ family: "secondary", unique: true });
    expect(operation({ ...base, type: "equality" }).spec).toEqual({ family: "secondary", unique: false });
    expect(operation({ ...base, type: "range" }).spec).toEqual({ family: "secondary", unique: false });
    expect(operation({ ...base, type: "unique" }).spec).toEqual({ family: "secondary", unique: true });
    expect(operation({ ...base, type: "vector" }).spec).toEqual({ family: "vector", metric: "cosine" });
    expect(operation({ ...base, type: "vector", metric: "manhattan", dimension: 384, tenant_property: "org" }).spec).toEqual({
      family: "vector", metric: "manhattan", dimension: 384, tenant: "org",
    });
    expect(operation({ ...base, type: "vector", ef: 128 }).spec).toEqual({ family: "vector", metric: "cosine", ef: 128 });
    expect(operation({ spec: { node_vector: { label: "Doc", property: "v", metric: "cosine", dimension: 3, ef: 1 } } }).spec).toEqual({
      family: "vector", metric: "cosine", dimension: 3, ef: 1,
    });
    expect(operation({ ...base, type: "text" }).spec).toEqual({ family: "text", analyzer: "standard", positions: false });
    expect(operation({ ...base, type: "text", analyzer: "whitespace_lowercase", positions: true, tenant_property: "tenant_id" }).spec).toEqual({
      family: "text", analyzer: "whitespace_lowercase", positions: true, tenant: "tenant_id",
    });
    expect(operation(base, "drop_index")).toMatchObject({ action: "drop", kind: "node", label: "Doc", field: "body", spec: { family: "secondary", unique: false } });
  });

  it("refuses unknown types, options of another type and bad values, naming the path", () => {
    expectFault(write({ ...base, type: "hash" }), `${at}.type`);
    expectFault(write({ ...base, type: 3 }), `${at}.type`);
    expectFault(write({ ...base, type: "vector", unique: true }), `${at}.unique`);
    expectFault(write({ ...base, type: "text", metric: "cosine" }), `${at}.metric`);
    expectFault(write({ ...base, type: "equality", analyzer: "standard" }), `${at}.analyzer`);
    expectFault(write({ ...base, metric: "cosine" }), `${at}.metric`);
    expectFault(write({ ...base, type: "vector", metric: "dot" }), `${at}.metric`);
    expectFault(write({ ...base, type: "vector", dimension: 0 }), `${at}.dimension`);
    expectFault(write({ ...base, type: "vector", dimension: 65_537 }), `${at}.dimension`);
    expectFault(write({ ...base, type: "vector", dimension: "384" }), `${at}.dimension`);
    expectFault(write({ ...base, type: "vector", tenant_property: 3 }), `${at}.tenant_property`);
    for (const ef of [0, 10_001, 2.5, "64"]) expectFault(write({ ...base, type: "vector", ef }), `${at}.ef`);
    expectFault(write({ spec: { node_vector: { label: "Doc", property: "v", metric: "cosine", dimension: 3, ef: 0 } } }), `${at}.spec.node_vector.ef`);
    expectFault(write({ ...base, type: "text", ef: 64 }), `${at}.ef`);
    expectFault(write({ ...base, type: "text", analyzer: "french" }), `${at}.analyzer`);
    expectFault(write({ ...base, type: "text", positions: "yes" }), `${at}.positions`);
    expectFault(write({ ...base, type: "text", tenant_property: "org" }), `${at}.tenant_property`);
    expectFault(write({ ...base, unique: "yes" }), `${at}.unique`);
    expectFault(
      { request_type: "write", query: { write: { entries: [{ query: { root: { drop_index: { ...base, type: "vector" } } } }] } } },
      "$.query.write.entries[0].query.root.drop_index.type",
    );
  });
});
