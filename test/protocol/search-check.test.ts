/**
 * The query checker on SearchV, SearchBM25, Embed, RerankRRF and RerankMMR: the trees they compile to (each one
 * decoded, as the checker does), and every diagnostic at its place with its code.
 */
import { describe, expect, it } from "vitest";
import { checkProject } from "../../protocol/helixql/query-check.js";
import { decodeRequest } from "../../protocol/tree.js";

const SCHEMA = `N::Doc {
    TEXT INDEX(analyzer: standard_stem_en) body: String,
    TEXT INDEX tags: [String],
    VECTOR INDEX(dimension: 3, tenant: org) embedding: [F32],
    org: String,
}
N::Multi { VECTOR INDEX a: [F64], VECTOR INDEX b: [F64], TEXT INDEX(tenant: tenant_id) t: String, tenant_id: String }
N::User { name: String }
N::Plain { name: String }
N::Count { n: U32 }
E::Owns { From: User, To: Doc }
E::Cites { From: Doc, To: Doc, Properties: { TEXT INDEX note: String } }
V::Chunk(dimension: 3, metric: euclidean, tenant: org) { org: String, TEXT INDEX text: String }
V::Open { text: String }
`;

/** The compiled tree's first entry root, after checking that the query has no diagnostics and decodes. */
function root(query: string): unknown {
  const result = checkProject({ file: "q.hx", text: SCHEMA + query });
  expect(result.diagnostics.map((d) => d.message)).toEqual([]);
  const tree = result.queries[0].tree;
  if (tree?.request_type !== "read") throw new Error("expected a read query");
  expect(() => decodeRequest(tree)).not.toThrow();
  const [entry] = tree.query.read.entries;
  if (!("query" in entry)) throw new Error("expected a query entry");
  return entry.query.root;
}

/** Each diagnostic as `code line:column`, lines counted within the query text. */
function problems(query: string): string[] {
  const offset = SCHEMA.split("\n").length - 1;
  return checkProject({ file: "q.hx", text: SCHEMA + query }).diagnostics.map((d) => `${d.code} ${d.line - offset}:${d.column}`);
}

function messages(query: string): string[] {
  return checkProject({ file: "q.hx", text: SCHEMA + query }).diagnostics.map((d) => d.message);
}

describe("SearchV", () => {
  it("searches a V:: type's own vector, with the tenant value as a named argument", () => {
    expect(root("QUERY Q(v: [F64], o: String) => r <- SearchV<Chunk>(v, 5, tenant: o) RETURN r")).toEqual({
      vector_search_vectors: { label: "Chunk", query: { expr: { param: "v" } }, k: { value: { i64: 5 } }, tenant_value: { expr: { param: "o" } } },
    });
    expect(root("QUERY Q() => r <- SearchV<Open>([1.0, 0.5], 2) RETURN r")).toEqual({
      vector_search_vectors: { label: "Open", query: { value: { array: [{ f64: 1 }, { f64: 0.5 }] } }, k: { value: { i64: 2 } } },
    });
  });

  it("searches the one VECTOR INDEX field of an N:: type, or the field a third argument names", () => {
    expect(root("QUERY Q(t: String, o: String, k: I64) => r <- SearchV<Doc>(Embed(t), k, tenant: o) RETURN r")).toEqual({
      vector_search_nodes: {
        label: "Doc", property: "embedding", query: { expr: { embed: { text: { param: "t" } } } }, k: { expr: { param: "k" } }, tenant_value: { expr: { param: "o" } },
      },
    });
    expect(root("QUERY Q(v: [F64]) => r <- SearchV<Multi>(v, 3, b) RETURN r")).toMatchObject({ vector_search_nodes: { label: "Multi", property: "b" } });
  });

  it("after :: searches among the traversal's records (the _within form)", () => {
    expect(root("QUERY Q(id: ID, v: [F64], o: String) => r <- N<User>(id)::Out<Owns>::SearchV<Doc>(v, 5, tenant: o) RETURN r")).toMatchObject({
      vector_search_nodes_within: { input: { out: { label: "Owns" } }, label: "Doc", property: "embedding" },
    });
    expect(root("QUERY Q(v: [F64]) => r <- V<Open>::SearchV<Open>(v, 5) RETURN r")).toMatchObject({ vector_search_vectors_within: { label: "Open" } });
  });

  it("takes ef, the search's beam width, as a named integer literal (Silk's extension), plain and after ::", () => {
    expect(root("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5, ef: 200) RETURN r")).toEqual({
      vector_search_vectors: { label: "Open", query: { expr: { param: "v" } }, k: { value: { i64: 5 } }, ef: 200 },
    });
    expect(root("QUERY Q(v: [F64], o: String) => r <- SearchV<Chunk>(v, 5, ef: 1, tenant: o) RETURN r")).toMatchObject({ vector_search_vectors: { ef: 1 } });
    expect(root("QUERY Q(v: [F64]) => r <- SearchV<Multi>(v, 3, b, ef: 10000) RETURN r")).toMatchObject({ vector_search_nodes: { property: "b", ef: 10_000 } });
    expect(root("QUERY Q(v: [F64]) => r <- V<Open>::SearchV<Open>(v, 5, ef: 32) RETURN r")).toMatchObject({ vector_search_vectors_within: { ef: 32 } });
  });

  it("refuses an ef that is not an integer literal from 1 to 10,000, and ef on SearchBM25", () => {
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5, ef: 0) RETURN r")).toEqual(["invalid_type 1:51"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5, ef: 10001) RETURN r")).toEqual(["invalid_type 1:51"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5, ef: 64.5) RETURN r")).toEqual(["invalid_type 1:51"]);
    expect(messages("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5, ef: 0) RETURN r")).toEqual([
      "SearchV<Open>: ef (the search beam width) is an integer from 1 to 10000, not 0",
    ]);
    expect(problems("QUERY Q(v: [F64], e: I64) => r <- SearchV<Open>(v, 5, ef: e) RETURN r")).toEqual(["query_invalid 1:59"]);
    expect(problems('QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5, ef: "64") RETURN r')).toEqual(["query_invalid 1:51"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5, ef: 64, ef: 65) RETURN r")).toEqual(["query_invalid 1:55"]);
    expect(problems("QUERY Q(q: String) => r <- SearchBM25<Doc>(q, 10, ef: 64) RETURN r")).toEqual(["query_invalid 1:51"]);
  });

  it("reports wrong arguments, missing indexes, tenants and record kinds at their place", () => {
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Chunk>(v) RETURN r")).toEqual(["query_invalid 1:27"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Chunk>(v, 5, org) RETURN r")).toEqual(["query_invalid 1:27"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Nope>(v, 5) RETURN r")).toEqual(["unknown_label 1:35"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV(v, 5) RETURN r")).toEqual(["query_invalid 1:27"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Plain>(v, 5) RETURN r")).toEqual(["query_invalid 1:27"]);
    expect(messages("QUERY Q(v: [F64]) => r <- SearchV<Multi>(v, 5) RETURN r")).toEqual([
      "SearchV<Multi>: Multi has several VECTOR INDEX fields (a, b): name one as the third argument",
    ]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Multi>(v, 5, t) RETURN r")).toEqual(["query_invalid 1:48"]);
    expect(problems("QUERY Q(t: String) => r <- SearchV<Open>(t, 5) RETURN r")).toEqual(["invalid_type 1:42"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 0) RETURN r")).toEqual(["invalid_type 1:44"]);
    expect(problems('QUERY Q(v: [F64]) => r <- SearchV<Open>(v, "5") RETURN r')).toEqual(["invalid_type 1:44"]);
    expect(messages("QUERY Q(v: [F64]) => r <- SearchV<Chunk>(v, 5) RETURN r")).toEqual([
      "SearchV<Chunk>: the index is partitioned by org; pass the tenant as SearchV<Chunk>(.., tenant: value)",
    ]);
    expect(problems('QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5, tenant: "a") RETURN r')).toEqual(["query_invalid 1:47"]);
    expect(problems('QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5, team: "a") RETURN r')).toEqual(["query_invalid 1:47"]);
    expect(problems('QUERY Q(v: [F64]) => r <- SearchV<Chunk>(v, 5, tenant: "a", tenant: "b") RETURN r')).toEqual(["query_invalid 1:61"]);
    expect(problems("QUERY Q(v: [F64]) => r <- N<User>::SearchV<Open>(v, 5) RETURN r")).toEqual(["query_invalid 1:36"]);
    expect(problems("QUERY Q(v: [F64], o: String) => r <- V<Chunk>::SearchV<Doc>(v, 5, tenant: o) RETURN r")).toEqual(["query_invalid 1:48"]);
    expect(problems("QUERY Q(v: [F64]) => r <- N<User>::COUNT::SearchV<Open>(v, 5) RETURN r")).toEqual(["query_invalid 1:43"]);
  });
});

describe("SearchBM25", () => {
  it("searches every TEXT INDEX field of a type", () => {
    expect(root("QUERY Q(q: String) => r <- SearchBM25<Doc>(q, 10) RETURN r")).toEqual({
      text_search_nodes: { label: "Doc", query: { expr: { param: "q" } }, k: { value: { i64: 10 } } },
    });
    expect(root('QUERY Q() => r <- SearchBM25<Cites>("graph", 3) RETURN r')).toEqual({
      text_search_edges: { label: "Cites", query: { value: { string: "graph" } }, k: { value: { i64: 3 } } },
    });
    expect(root('QUERY Q(o: String) => r <- SearchBM25<Chunk>("graph", 3)::RerankRRF RETURN r')).toMatchObject({
      rerank_rrf: { input: { text_search_vectors: { label: "Chunk" } } },
    });
    expect(root("QUERY Q(q: String, t: String) => r <- SearchBM25<Multi>(q, 10, tenant: t) RETURN r")).toMatchObject({
      text_search_nodes: { label: "Multi", tenant_value: { expr: { param: "t" } } },
    });
    expect(root("QUERY Q(id: ID, q: String) => r <- N<Doc>(id)::Out<Cites>::SearchBM25<Doc>(q, 2) RETURN r")).toMatchObject({
      text_search_nodes_within: { input: { out: { label: "Cites" } }, label: "Doc" },
    });
  });

  it("implies a text index on a type without one, with a warning at each search that relies on it", () => {
    const query = "QUERY Q(q: String) => r <- SearchBM25<Plain>(q, 10) RETURN r\nQUERY R(q: String) => r <- SearchBM25<Plain>(q, 1) RETURN r";
    const result = checkProject({ file: "q.hx", text: SCHEMA + query });
    expect(result.diagnostics).toEqual([]);
    const offset = SCHEMA.split("\n").length - 1;
    expect(result.warnings.map((w) => `${w.severity} ${w.code} ${w.line - offset}:${w.column}`)).toEqual(["warning implied_text_index 1:28", "warning implied_text_index 2:28"]);
    expect(result.schema?.nodes.get("Plain")?.fields.get("name")?.textIndex).toEqual({ analyzer: "standard", positions: false, implied: true });
    expect(root("QUERY Q(q: String) => r <- SearchBM25<Plain>(q, 10) RETURN r")).toEqual({
      text_search_nodes: { label: "Plain", query: { expr: { param: "q" } }, k: { value: { i64: 10 } } },
    });
  });

  it("reports wrong arguments and types without a text index", () => {
    expect(problems("QUERY Q(q: String) => r <- SearchBM25<Count>(q, 10) RETURN r")).toEqual(["query_invalid 1:28"]);
    expect(problems("QUERY Q(q: String) => r <- SearchBM25<Doc>(q) RETURN r")).toEqual(["query_invalid 1:28"]);
    expect(problems("QUERY Q(q: String) => r <- SearchBM25<Doc>(q, 10, body) RETURN r")).toEqual(["query_invalid 1:28"]);
    expect(problems("QUERY Q(q: I64) => r <- SearchBM25<Doc>(q, 10) RETURN r")).toEqual(["invalid_type 1:41"]);
    expect(problems("QUERY Q(q: String) => r <- SearchBM25<Multi>(q, 10) RETURN r")).toEqual(["query_invalid 1:28"]);
  });
});

describe("RerankRRF and RerankMMR", () => {
  it("compile with their named arguments and defaults", () => {
    expect(root("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankRRF RETURN r")).toEqual({
      rerank_rrf: { input: { vector_search_vectors: { label: "Open", query: { expr: { param: "v" } }, k: { value: { i64: 5 } } } } },
    });
    expect(root("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankRRF(k: 30) RETURN r")).toMatchObject({ rerank_rrf: { k: { value: { i64: 30 } } } });
    // HelixDB's grammar takes any number for RRF's constant k, `k: 30.0` as its docs write it.
    expect(root("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankRRF(k: 30.5) RETURN r")).toMatchObject({ rerank_rrf: { k: { value: { f64: 30.5 } } } });
    expect(root("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankMMR(lambda: 0.7) RETURN r")).toMatchObject({
      rerank_mmr: { lambda: { value: { f64: 0.7 } }, distance: "cosine" },
    });
    expect(root('QUERY Q(v: [F64], l: F64) => r <- SearchV<Open>(v, 5)::RerankMMR(lambda: l, distance: "euclidean",) RETURN r')).toMatchObject({
      rerank_mmr: { lambda: { expr: { param: "l" } }, distance: "euclidean" },
    });
  });

  it("reports positional, unknown, missing and bad arguments", () => {
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankRRF(30) RETURN r")).toEqual(["query_invalid 1:48"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankRRF(lambda: 1) RETURN r")).toEqual(["query_invalid 1:58"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankRRF(k: 0) RETURN r")).toEqual(["invalid_type 1:61"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankMMR RETURN r")).toEqual(["query_invalid 1:48"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankMMR(lambda: 2) RETURN r")).toEqual(["invalid_type 1:66"]);
    expect(problems('QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankMMR(lambda: "a") RETURN r')).toEqual(["invalid_type 1:66"]);
    expect(problems('QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::RerankMMR(lambda: 0.5, distance: "manhattan") RETURN r')).toEqual(["query_invalid 1:81"]);
    expect(problems("QUERY Q(v: [F64]) => r <- SearchV<Open>(v, 5)::COUNT::RerankRRF RETURN r")).toEqual(["query_invalid 1:55"]);
  });
});

describe("named arguments elsewhere", () => {
  it("are refused on every other call, and a positional argument cannot follow one", () => {
    expect(problems("QUERY Q() => r <- N<User>::RANGE(start: 0, 1) RETURN r")).toEqual(["schema_syntax 1:33"]);
    expect(problems("QUERY Q() => r <- N<User>::WHERE(c: true) RETURN r")).toEqual(["query_invalid 1:34"]);
    expect(problems("QUERY Q() => r <- N<User>::{n: ADD(a: 1, b: 2)} RETURN r")).toEqual(["query_invalid 1:36"]);
    expect(problems("QUERY Q() => r <- N<User>::WHERE(_::{name}::EQ(v: 1)) RETURN r")).toEqual(["query_invalid 1:48"]);
    expect(problems("QUERY Q() => r <- N<User>::WHERE(AND(a: true)) RETURN r")).toEqual(["query_invalid 1:38"]);
  });
});

describe("Embed", () => {
  it("compiles in AddV and refuses anything but one string", () => {
    const result = checkProject({ file: "q.hx", text: SCHEMA + 'QUERY Q(t: String, o: String) => c <- AddV<Chunk>(Embed(t), {org: o, text: t}) RETURN c' });
    expect(result.diagnostics).toEqual([]);
    expect(JSON.stringify(result.queries[0].tree)).toContain('"vector":{"expr":{"embed":{"text":{"param":"t"}}}}');
    expect(problems("QUERY Q(n: I64) => r <- SearchV<Open>(Embed(n), 5) RETURN r")).toEqual(["invalid_type 1:39"]);
    expect(problems('QUERY Q() => r <- SearchV<Open>(Embed("a", "b"), 5) RETURN r')).toEqual(["query_invalid 1:33"]);
  });
});
