/**
 * HelixDB v3's spellings of the operation tree, as its SDKs send them, beside Silk's own (which stay accepted):
 * search `query_vector`/`query_text` and `k` as `{"literal": n}`; `group_count` with one `property`; `aggregate_by`
 * with `function` and `property`; `shortest_path` with `source`, `target`, `max_depth`; index operations with `spec`
 * and `operation_id`; integers beyond 2^53 as bigints (what the gateway's lossless parse makes of them). Each decodes
 * to the plan Silk's spelling gives, and each malformed shape is malformed_tree naming its JSON path.
 */
import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { checkProject } from "../../protocol/helixql/query-check.js";
import { decodeRequest, type Entry, type Step } from "../../protocol/tree.js";
import type { IndexOperation } from "../../protocol/tree-indexes.js";

const ROOT = "$.query.read.entries[0].query.root";
const WRITE_ROOT = "$.query.write.entries[0].query.root";

function read(root: unknown, parameters: Record<string, unknown> = {}): unknown {
  return { request_type: "read", query: { read: { entries: [{ query: { name: "r", root } }], returns: ["r"] } }, parameters };
}

function decodeRoot(root: unknown): Step {
  return (decodeRequest(read(root)).entries[0] as Extract<Entry, { kind: "query" }>).root;
}

function indexOperation(root: unknown): IndexOperation {
  const plan = decodeRequest({ request_type: "write", query: { write: { entries: [{ query: { name: "op", root } }], returns: ["op"] } } });
  return (plan.entries[0] as Extract<Entry, { kind: "index_operation" }>).operation;
}

/** The request is malformed_tree and the message starts with the JSON path at fault. */
function expectFault(body: unknown, path: string): void {
  let error: unknown;
  try {
    decodeRequest(body);
  } catch (cause) {
    error = cause;
  }
  expect(error).toBeInstanceOf(SilkError);
  expect((error as SilkError).code, (error as SilkError).message).toBe("malformed_tree");
  expect((error as SilkError).message.startsWith(`${path}:`), (error as SilkError).message).toBe(true);
}

function writeRoot(root: unknown): unknown {
  return { request_type: "write", query: { write: { entries: [{ query: { name: "op", root } }], returns: ["op"] } } };
}

const NODES = { nodes: { reference: "all" } };

describe("search: query_vector, query_text and k as a stream bound", () => {
  const vector = { value: { f32_array: [0.5, 0.25] } };

  it("decodes HelixDB's spelling to the plan of Silk's", () => {
    const silk = decodeRoot({ vector_search_nodes: { label: "Doc", property: "embedding", query: vector, k: { value: { i64: 3 } } } });
    expect(decodeRoot({ vector_search_nodes: { label: "Doc", property: "embedding", query_vector: vector, k: { literal: 3 } } })).toEqual(silk);
    const text = decodeRoot({ text_search_nodes: { label: "Doc", property: "body", query: { value: { string: "graph" } }, k: { value: { i64: 2 } } } });
    expect(decodeRoot({ text_search_nodes: { label: "Doc", property: "body", query_text: { value: { string: "graph" } }, k: { literal: 2 } } })).toEqual(text);
    expect(decodeRoot({ text_search_nodes_within: { input: NODES, label: "Doc", property: "body", query_text: { expr: { param: "q" } }, k: { expr: { param: "k" } } } })).toMatchObject({
      op: "text_search",
      input: { op: "nodes" },
      query: { kind: "expr", expr: { kind: "param", name: "q" } },
      k: { kind: "expr", expr: { kind: "param", name: "k" } },
    });
  });

  it("refuses the query given twice, the other kind's key, and a k literal below 1, naming the path", () => {
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "embedding", query: vector, query_vector: vector, k: { literal: 3 } } }), `${ROOT}.vector_search_nodes.query_vector`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "embedding", query_text: vector, k: { literal: 3 } } }), `${ROOT}.vector_search_nodes.query_text`);
    expectFault(read({ text_search_edges: { label: "Doc", property: "body", k: { literal: 3 } } }), `${ROOT}.text_search_edges.query`);
    expectFault(read({ text_search_nodes: { label: "Doc", property: "body", query_text: { value: { i64: 3 } }, k: { literal: 3 } } }), `${ROOT}.text_search_nodes.query_text`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "embedding", query_vector: vector, k: { literal: 0 } } }), `${ROOT}.vector_search_nodes.k.literal`);
    expectFault(read({ vector_search_nodes: { label: "Doc", property: "embedding", query_vector: vector, k: { literal: "3" } } }), `${ROOT}.vector_search_nodes.k.literal`);
  });
});

describe("group_count with one property, aggregate_by with function and property", () => {
  it("decodes group_count's property as one-element properties answered in value order, Silk's form in first-seen order", () => {
    const silk = decodeRoot({ group_count: { input: NODES, properties: ["active"] } });
    expect(decodeRoot({ group_count: { input: NODES, property: "active" } })).toEqual({ ...silk, order: "value" });
    expect(silk).toMatchObject({ op: "group_count", properties: ["active"], order: "first_seen" });
  });

  it("decodes aggregate_by's function into an aggregate answered as one row named <property>_<Function>", () => {
    const cases = [["count", "count", "rank_Count"], ["sum", "sum", "rank_Sum"], ["min", "min", "rank_Min"], ["max", "max", "rank_Max"], ["mean", "avg", "rank_Mean"]] as const;
    for (const [helix, fn, field] of cases) {
      expect(decodeRoot({ aggregate_by: { input: NODES, function: helix, property: "rank" } })).toEqual({ op: "aggregate", input: { op: "nodes", ref: { kind: "all" } }, fn, path: "rank", field });
    }
    expect(decodeRoot({ aggregate_by: { input: NODES, properties: ["rank"] } })).toEqual({ op: "aggregate_by", input: { op: "nodes", ref: { kind: "all" } }, properties: ["rank"], shape: "keyed" });
  });

  it("refuses mixed spellings, unknown functions and reserved names, naming the path", () => {
    expectFault(read({ group_count: { input: NODES, property: "a", properties: ["b"] } }), `${ROOT}.group_count.properties`);
    expectFault(read({ group_count: { input: NODES, property: "count" } }), `${ROOT}.group_count.property`);
    expectFault(read({ group_count: { input: NODES, property: 3 } }), `${ROOT}.group_count.property`);
    expectFault(read({ aggregate_by: { input: NODES, function: "median", property: "rank" } }), `${ROOT}.aggregate_by.function`);
    expectFault(read({ aggregate_by: { input: NODES, function: "sum" } }), `${ROOT}.aggregate_by.property`);
    expectFault(read({ aggregate_by: { input: NODES, function: "sum", property: "rank", properties: ["rank"] } }), `${ROOT}.aggregate_by.properties`);
  });

  it("decodes Silk's aggregate_by shape: keyed by default, count_data (HelixQL's COUNT::AGGREGATE_BY) frees the row's own names", () => {
    expect(decodeRoot({ aggregate_by: { input: NODES, properties: ["count"], shape: "count_data" } })).toEqual({
      op: "aggregate_by", input: { op: "nodes", ref: { kind: "all" } }, properties: ["count"], shape: "count_data",
    });
    expectFault(read({ aggregate_by: { input: NODES, properties: ["count"], shape: "keyed" } }), `${ROOT}.aggregate_by.properties[0]`);
    expectFault(read({ aggregate_by: { input: NODES, properties: ["rank"], shape: "flat" } }), `${ROOT}.aggregate_by.shape`);
    expectFault(read({ group_count: { input: NODES, properties: ["rank"], shape: "count_data" } }), `${ROOT}.group_count.shape`);
  });
});

describe("shortest_path with source, target and max_depth", () => {
  it("decodes to a breadth-first search from one node to one node, bounded by max_depth", () => {
    const step = decodeRoot({ shortest_path: { source: { ids: [1] }, target: { var: "t" }, label: "KNOWS", direction: "both", max_depth: 3 } });
    expect(step).toEqual({
      op: "shortest_path",
      input: { op: "nodes", ref: { kind: "ids", ids: [1n] } },
      to: { kind: "var", name: "t" },
      label: "KNOWS",
      direction: "both",
      algorithm: { kind: "bfs" },
      helixForm: { maxDepth: 3 },
    });
    expect(decodeRoot({ shortest_path: { input: NODES, to: { ids: [2] } } })).not.toHaveProperty("helixForm");
  });

  it("refuses an end that names all nodes or several, a missing max_depth and Silk's fields beside HelixDB's", () => {
    const at = `${ROOT}.shortest_path`;
    expectFault(read({ shortest_path: { source: "all", target: { ids: [2] }, direction: "out", max_depth: 3 } }), `${at}.source`);
    expectFault(read({ shortest_path: { source: { ids: [1] }, target: { ids: [2, 3] }, direction: "out", max_depth: 3 } }), `${at}.target.ids`);
    expectFault(read({ shortest_path: { source: { ids: [1] }, direction: "out", max_depth: 3 } }), `${at}.target`);
    expectFault(read({ shortest_path: { source: { ids: [1] }, target: { ids: [2] }, direction: "out" } }), `${at}.max_depth`);
    expectFault(read({ shortest_path: { source: { ids: [1] }, target: { ids: [2] }, direction: "out", max_depth: -1 } }), `${at}.max_depth`);
    expectFault(read({ shortest_path: { source: { ids: [1] }, target: { ids: [2] }, max_depth: 2, algorithm: "dijkstra" } }), `${at}.algorithm`);
    expectFault(read({ shortest_path: { input: NODES, to: { ids: [2] }, max_depth: 2 } }), `${at}.max_depth`);
  });
});

describe("index operations with spec and operation_id", () => {
  const spec = (tag: string, fields: Record<string, unknown>) => ({ [tag]: { label: "Doc", property: "p", ...fields } });

  it("decodes every HelixDB index spec to Silk's kind, family and options", () => {
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [spec("node_equality", { unique: false }), { kind: "node", spec: { family: "secondary", unique: false } }],
      [spec("node_equality", { unique: true }), { kind: "node", spec: { family: "secondary", unique: true } }],
      [spec("node_range", { direction: "desc" }), { kind: "node", spec: { family: "secondary", unique: false } }],
      [spec("edge_equality", {}), { kind: "edge", spec: { family: "secondary", unique: false } }],
      [spec("edge_range", { direction: "asc" }), { kind: "edge", spec: { family: "secondary", unique: false } }],
      [spec("node_vector", { dimension: 4, metric: "euclidean", tenant_property: "org" }), { kind: "node", spec: { family: "vector", metric: "euclidean", dimension: 4, tenant: "org" } }],
      [spec("edge_vector", { dimension: 2, metric: "manhattan" }), { kind: "edge", spec: { family: "vector", metric: "manhattan", dimension: 2 } }],
      [spec("node_text", { tenant_property: "tenant_id" }), { kind: "node", spec: { family: "text", analyzer: "standard", positions: false, tenant: "tenant_id" } }],
      [spec("edge_text", {}), { kind: "edge", spec: { family: "text", analyzer: "standard", positions: false } }],
    ];
    for (const [given, expected] of cases) {
      expect(indexOperation({ create_index: { spec: given, if_not_exists: true } })).toEqual({ action: "create", label: "Doc", field: "p", ...expected, helixForm: true, ifNotExists: true });
    }
    // if_not_exists false asks for index_already_exists on an existing index; absent, Silk answers the existing one.
    expect(indexOperation({ create_index: { spec: spec("node_equality", {}), if_not_exists: false } })).toMatchObject({ action: "create", ifNotExists: false });
    expect(indexOperation({ create_index: { spec: spec("node_equality", {}) } })).toMatchObject({ action: "create", ifNotExists: true });
    expect(indexOperation({ create_index: { label: "Doc", property: "p" } })).toMatchObject({ action: "create", helixForm: false, ifNotExists: true });
    expect(indexOperation({ drop_index: { spec: spec("node_equality", { unique: false }) } })).toMatchObject({ action: "drop", kind: "node", label: "Doc", field: "p", helixForm: true });
    // Silk's form answers Silk's shape; a spec answers HelixDB's receipt.
    expect(indexOperation({ drop_index: { label: "Doc", property: "p" } })).toMatchObject({ action: "drop", helixForm: false });
  });

  it("decodes operation_id for get, retry and abort", () => {
    const id = "0f8fad5b-d9cb-869f-a165-70867728950e";
    expect(indexOperation({ get_index_operation: { operation_id: id } })).toEqual({ action: "get", operationId: id });
    expect(indexOperation({ retry_index_operation: { operation_id: id } })).toEqual({ action: "retry", operationId: id });
    expect(indexOperation({ abort_index_operation: { operation_id: id } })).toEqual({ action: "abort", operationId: id });
  });

  it("reads an operation in a read batch, as HelixDB's SDKs send it, and refuses the others there", () => {
    const readOf = (root: unknown) => ({ request_type: "read", query: { read: { entries: [{ query: { name: "op", root } }], returns: ["op"] } } });
    const id = "0f8fad5b-d9cb-869f-a165-70867728950e";
    expect(decodeRequest(readOf({ get_index_operation: { operation_id: id } })).entries).toEqual([{ kind: "index_operation", name: "op", operation: { action: "get", operationId: id } }]);
    expect(() => decodeRequest(readOf({ retry_index_operation: { operation_id: id } }))).toThrow(expect.objectContaining({ code: "write_in_read" }));
  });

  it("refuses bad specs and IDs, naming the path", () => {
    const create = `${WRITE_ROOT}.create_index`;
    expectFault(writeRoot({ create_index: { spec: spec("node_hash", {}) } }), `${create}.spec`);
    expectFault(writeRoot({ create_index: { spec: spec("edge_equality", { unique: true }) } }), `${create}.spec.edge_equality.unique`);
    expectFault(writeRoot({ create_index: { spec: spec("node_range", { direction: "up" }) } }), `${create}.spec.node_range.direction`);
    expectFault(writeRoot({ create_index: { spec: spec("node_vector", { metric: "cosine" }) } }), `${create}.spec.node_vector.dimension`);
    expectFault(writeRoot({ create_index: { spec: spec("node_vector", { dimension: 4, metric: "dot" }) } }), `${create}.spec.node_vector.metric`);
    expectFault(writeRoot({ create_index: { spec: spec("node_text", { tenant_property: "org" }) } }), `${create}.spec.node_text.tenant_property`);
    expectFault(writeRoot({ create_index: { spec: spec("node_equality", {}), if_not_exists: "yes" } }), `${create}.if_not_exists`);
    expectFault(writeRoot({ create_index: { spec: spec("node_equality", {}), label: "Doc" } }), `${create}.label`);
    expectFault(writeRoot({ drop_index: { spec: spec("node_equality", {}), if_not_exists: true } }), `${WRITE_ROOT}.drop_index.if_not_exists`);
    const get = `${WRITE_ROOT}.get_index_operation`;
    expectFault(writeRoot({ get_index_operation: { operation_id: "0F8FAD5B-D9CB-869F-A165-70867728950E" } }), `${get}.operation_id`);
    expectFault(writeRoot({ get_index_operation: { operation_id: "00000000-0000-0000-0000-000000000000" } }), `${get}.operation_id`);
    expectFault(writeRoot({ get_index_operation: { operation_id: "0f8fad5b-d9cb-869f-a165-70867728950e", kind: "node" } }), `${get}.kind`);
  });
});

describe("integers beyond 2^53 as bigints", () => {
  const big = 9_223_372_036_854_775_000n;

  it("reads them in i64 literals, float literals, ID lists and i64 parameters", () => {
    const step = decodeRoot({ has: { input: { nodes: { reference: { ids: [18_446_744_073_709_551_615n] } } }, property: "n", value: { i64: big } } });
    expect(step).toEqual({ op: "has", input: { op: "nodes", ref: { kind: "ids", ids: [18_446_744_073_709_551_615n] } }, path: "n", value: big });
    expect(decodeRoot({ has: { input: NODES, property: "n", value: { f64: big } } })).toMatchObject({ value: Number(big) });
    const plan = decodeRequest({ ...(read(NODES) as object), parameters: { n: big }, parameter_types: { n: "i64" } });
    expect(plan.parameters).toEqual({ n: big });
  });

  it("refuses one outside 64 bits, naming the path, and an i64 parameter beyond i64 as invalid_type", () => {
    expectFault(read({ has: { input: NODES, property: "n", value: { i64: 2n ** 64n } } }), `${ROOT}.has.value.i64`);
    expect(() => decodeRequest({ ...(read(NODES) as object), parameters: { n: 2n ** 63n }, parameter_types: { n: "i64" } })).toThrow(
      expect.objectContaining({ code: "invalid_type", message: expect.stringContaining(String(2n ** 63n)) }),
    );
    expect(() => decodeRequest({ ...(read(NODES) as object), parameters: { n: [big] }, parameter_types: { n: "string" } })).toThrow(
      expect.objectContaining({ code: "invalid_type", message: expect.stringContaining(`["${big}"]`) }),
    );
  });
});

describe("order_by's rule", () => {
  it("is HelixDB v3's for a tree, HelixQL's when asked (as HelixQL's ORDER compiles), and refuses another", () => {
    const by = { kind: "property", path: "age" };
    expect(decodeRoot({ order_by: { input: NODES, property: "age", order: "desc" } })).toMatchObject({ op: "order_by", by, order: "desc", rule: "helixdb_v3" });
    expect(decodeRoot({ order_by: { input: NODES, property: "age", rule: "helixql" } })).toMatchObject({ op: "order_by", by, order: "asc", rule: "helixql" });
    expect(decodeRoot({ order_by_multiple: { input: NODES, orderings: [["age", "asc"]] } })).toMatchObject({ op: "order_by_multiple", rule: "helixdb_v3" });
    expectFault(read({ order_by: { input: NODES, property: "age", rule: "stable" } }), `${ROOT}.order_by.rule`);
    expectFault(read({ order_by_multiple: { input: NODES, orderings: [["age", "asc"]], rule: "helixql" } }), `${ROOT}.order_by_multiple.rule`);
  });

  it("is HelixQL's in every ORDER a HelixQL query compiles", () => {
    const compiled = checkProject({
      file: "q.hx",
      text: `N::User { age: I64 }\nE::Knows { From: User, To: User }\n` +
        `QUERY A() => u <- N<User>::ORDER<Desc>(_::{age}) RETURN u\nQUERY B() => u <- N<User>::ORDER<Asc>(_::Out<Knows>::COUNT) RETURN u`,
    });
    expect(compiled.diagnostics).toEqual([]);
    for (const query of compiled.queries) {
      const plan = decodeRequest(query.tree);
      expect((plan.entries[0] as Extract<Entry, { kind: "query" }>).root).toMatchObject({ op: "order_by", rule: "helixql" });
    }
  });
});
