/**
 * Thin builders for the JSON operation tree of `/v2/query` (protocol/tree.ts), so a test reads like the query it
 * runs. Every builder returns plain JSON of the documented wire shape and nothing else: `JSON.stringify` of a built
 * tree is exactly what a client would send. Steps wrap the step before them in `input`, as on the wire, so
 * `out(nodesOf("User"), "Follows")` is `{"out":{"input":{"nodes_where":...},"label":"Follows"}}`.
 *
 * Conveniences, each visible in the output:
 * - plain JS values become tagged literals (`"a"` → `{"string":"a"}`, `3` → `{"i64":3}`, `1.5` → `{"f64":1.5}`,
 *   `true` → `{"bool":true}`, a `Date` → `{"date_time":"<ISO>"}`, arrays and objects → `array` / `object`);
 * - property assignments take `{ name: value }`, each value becoming `{"value": literal}`, or `{"expr": ...}` for
 *   `param("x")` / `expr(...)`;
 * - comparison sides take expressions (`prop("age")`, `countOf(...)`, `param("x")`) or plain values (constants).
 */

/** Any JSON value (the tree is JSON). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A step, predicate, expression, literal or entry of the tree. */
export type TreeNode = { [key: string]: Json } | string;

/**
 * Expressions and predicates built by the helpers below, and literals built by `lit`: lets a plain JS object (an
 * object constant) be told apart from an already-built node.
 */
const built = new WeakSet<object>();
const literals = new WeakSet<object>();

function mark<T extends object>(node: T): T {
  built.add(node);
  return node;
}

function markLiteral<T extends object>(node: T): T {
  literals.add(node);
  return node;
}

/** A request parameter used as a value: `{"expr":{"param":name}}` in assignments, `{"param":name}` in comparisons. */
export class Param {
  constructor(readonly name: string) {}
}

export const param = (name: string): Param => new Param(name);

// ---------------------------------------------------------------------------------------------------------------
// Literals.

/** Explicitly tagged literals, for when the JS value alone does not say which tag is meant. */
export const lit = {
  string: (value: string): TreeNode => markLiteral({ string: value }),
  i64: (value: number | string | bigint): TreeNode => markLiteral({ i64: typeof value === "bigint" ? value.toString() : value }),
  f64: (value: number): TreeNode => markLiteral({ f64: value }),
  bool: (value: boolean): TreeNode => markLiteral({ bool: value }),
  /** A date literal from an ISO 8601 string or epoch milliseconds. */
  date: (value: string | number): TreeNode => markLiteral({ date_time: value }),
  null: "null" as TreeNode,
} as const;

/** A JS value as a tagged literal (see the module comment). */
export function literal(value: unknown): TreeNode {
  if (typeof value === "object" && value !== null && literals.has(value)) return value as TreeNode;
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return { string: value };
    case "boolean":
      return { bool: value };
    case "number":
      return Number.isInteger(value) ? { i64: value } : { f64: value };
    case "bigint":
      return { i64: value.toString() };
    default:
      break;
  }
  if (value instanceof Date) return { date_time: value.toISOString() };
  if (Array.isArray(value)) return { array: value.map((item) => literal(item) as Json) };
  if (typeof value === "object") {
    const object: { [key: string]: Json } = {};
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) object[key] = literal(item) as Json;
    return { object };
  }
  throw new Error(`no literal form for ${String(value)}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Expressions and predicates.

/** A comparison side: a built expression, a `param(...)`, or a plain value (a constant). */
export type ExprLike = unknown;

export const prop = (path: string): TreeNode => mark({ property: path });
export const constant = (value: unknown): TreeNode => mark({ constant: literal(value) as Json });
/** `count` of a sub-traversal, as an expression: `{"count":{"traversal":...}}`. */
export const countOf = (traversal: TreeNode): TreeNode => mark({ count: { traversal: traversal as Json } });
/** Marks a hand-written expression so comparisons pass it through untouched. */
export const expr = (node: { [key: string]: Json } | "id"): TreeNode => (typeof node === "string" ? node : mark(node));

function toExpr(value: ExprLike): Json {
  if (value instanceof Param) return { param: value.name };
  if (typeof value === "object" && value !== null && built.has(value)) return value as Json;
  return { constant: literal(value) as Json };
}

type Comparison = (left: ExprLike, right: ExprLike) => TreeNode;
const comparison =
  (op: "eq" | "neq" | "gt" | "gte" | "lt" | "lte"): Comparison =>
  (left, right) =>
    mark({ [op]: { left: toExpr(left), right: toExpr(right) } });

export const eq = comparison("eq");
export const neq = comparison("neq");
export const gt = comparison("gt");
export const gte = comparison("gte");
export const lt = comparison("lt");
export const lte = comparison("lte");
/** Inclusive at both ends. */
export const between = (value: ExprLike, min: ExprLike, max: ExprLike): TreeNode => mark({ between: { value: toExpr(value), min: toExpr(min), max: toExpr(max) } });
export const isIn = (value: ExprLike, values: ExprLike): TreeNode => mark({ is_in: { value: toExpr(value), values: toExpr(values) } });
export const and = (...predicates: TreeNode[]): TreeNode => mark({ and: { predicates: predicates as Json[] } });
export const or = (...predicates: TreeNode[]): TreeNode => mark({ or: { predicates: predicates as Json[] } });
export const not = (predicate: TreeNode): TreeNode => mark({ not: { predicate: predicate as Json } });
/** `EXISTS(<traversal>)` as a predicate. */
export const existsP = (traversal: TreeNode): TreeNode => mark({ exists: { traversal: traversal as Json } });
/** `$label == label`, the predicate that selects all records of one label. */
export const hasLabelP = (label: string): TreeNode => eq(prop("$label"), label);

// ---------------------------------------------------------------------------------------------------------------
// Sources and references.

export type Ref = "all" | { ids: Json[] } | { var: string } | { param: string };

export const ref = {
  all: "all" as Ref,
  ids: (...ids: (string | number | bigint)[]): Ref => ({ ids: ids.map((id) => (typeof id === "bigint" ? id.toString() : id)) }),
  var: (name: string): Ref => ({ var: name }),
  param: (name: string): Ref => ({ param: name }),
} as const;

export const nodes = (reference: Ref): TreeNode => ({ nodes: { reference: reference as Json } });
export const edges = (reference: Ref): TreeNode => ({ edges: { reference: reference as Json } });
export const allNodes = (): TreeNode => nodes(ref.all);
export const allEdges = (): TreeNode => edges(ref.all);
export const nodesById = (...ids: (string | number | bigint)[]): TreeNode => nodes(ref.ids(...ids));
export const nodesVar = (name: string): TreeNode => nodes(ref.var(name));
export const edgesById = (...ids: (string | number | bigint)[]): TreeNode => edges(ref.ids(...ids));
export const nodesWhere = (predicate: TreeNode): TreeNode => ({ nodes_where: { predicate: predicate as Json } });
export const edgesWhere = (predicate: TreeNode): TreeNode => ({ edges_where: { predicate: predicate as Json } });
/** Every node of one label: `nodes_where $label == label`. */
export const nodesOf = (label: string): TreeNode => nodesWhere(hasLabelP(label));
export const edgesOf = (label: string): TreeNode => edgesWhere(hasLabelP(label));
/** The element a sub-traversal starts from. */
export const context: TreeNode = "context";

// ---------------------------------------------------------------------------------------------------------------
// Steps.

const traversal =
  (op: "out" | "in" | "both" | "out_e" | "in_e" | "both_e") =>
  (input: TreeNode, label?: string): TreeNode =>
    ({ [op]: label === undefined ? { input: input as Json } : { input: input as Json, label } });
const unary =
  (op: "out_n" | "in_n" | "other_n" | "dedup" | "count" | "exists" | "id" | "label" | "drop") =>
  (input: TreeNode): TreeNode =>
    ({ [op]: { input: input as Json } });

export const out = traversal("out");
export const in_ = traversal("in");
export const both = traversal("both");
export const outE = traversal("out_e");
export const inE = traversal("in_e");
export const bothE = traversal("both_e");
export const outN = unary("out_n");
export const inN = unary("in_n");
export const otherN = unary("other_n");
export const dedup = unary("dedup");
export const count = unary("count");
export const exists = unary("exists");
export const id = unary("id");
export const label = unary("label");
export const drop = unary("drop");

export const where = (input: TreeNode, predicate: TreeNode): TreeNode => ({ where: { input: input as Json, predicate: predicate as Json } });
export const limit = (input: TreeNode, n: number): TreeNode => ({ limit: { input: input as Json, count: { literal: n } } });
export const skip = (input: TreeNode, n: number): TreeNode => ({ skip: { input: input as Json, count: { literal: n } } });
export const range = (input: TreeNode, start: number, end: number): TreeNode => ({
  range: { input: input as Json, start: { literal: start }, end: { literal: end } },
});
export const orderBy = (input: TreeNode, property: string, order: "asc" | "desc" = "asc"): TreeNode => ({
  order_by: { input: input as Json, property, order },
});
export const values = (input: TreeNode, ...properties: string[]): TreeNode => ({ values: { input: input as Json, properties } });
export const valueMap = (input: TreeNode, properties?: string[]): TreeNode => ({
  value_map: properties === undefined ? { input: input as Json } : { input: input as Json, properties },
});
/** Projections: `"name"` keeps a property under its own name, `[alias, source]` renames it, `[alias, expr]` computes. */
export const project = (input: TreeNode, ...projections: (string | [string, string] | [string, TreeNode])[]): TreeNode => ({
  project: {
    input: input as Json,
    projections: projections.map((item): Json => {
      if (typeof item === "string") return { property: { source: item } };
      const [alias, source] = item;
      return typeof source === "string" ? { property: { source, alias } } : { expr: { alias, expr: source as Json } };
    }),
  },
});

// ---------------------------------------------------------------------------------------------------------------
// Mutations.

/** A mutation's value: `{"value": literal}`, or `{"expr": {"param": name}}` for `param(name)`. */
export function input(value: unknown): Json {
  if (value instanceof Param) return { expr: { param: value.name } };
  return { value: literal(value) as Json };
}

/** Property assignments in wire form: `[[name, input], ...]`. */
export function assignments(properties: Record<string, unknown>): Json[] {
  return Object.entries(properties).map(([name, value]) => [name, input(value)]);
}

export const addN = (label: string, properties: Record<string, unknown> = {}): TreeNode => ({
  add_n: { label, properties: assignments(properties) },
});
/** `AddE<label>::From(from)::To(to)`: `from` is a step (its nodes are the sources), `to` a reference. */
export const addE = (from: TreeNode, label: string, to: Ref, properties: Record<string, unknown> = {}): TreeNode => ({
  add_e: { input: from as Json, label, to: to as Json, properties: assignments(properties) },
});
export const setProperty = (target: TreeNode, name: string, value: unknown): TreeNode => ({
  set_property: { input: target as Json, name, value: input(value) },
});
export const update = (target: TreeNode, properties: Record<string, unknown>): TreeNode => ({
  update: { input: target as Json, properties: assignments(properties) },
});
export const removeProperty = (target: TreeNode, name: string): TreeNode => ({ remove_property: { input: target as Json, name } });

// ---------------------------------------------------------------------------------------------------------------
// Entries and requests.

export type Entry = { query: { [key: string]: Json } } | { for_each: { param?: string; var?: string; as?: string; body: Json[] } };

/** A named entry (`name <- root`); pass `undefined` as name for a bare operation. */
export const entry = (name: string | undefined, root: TreeNode): Entry => ({
  query: name === undefined ? { root: root as Json } : { name, root: root as Json },
});
export const forEach = (paramName: string, body: Entry[]): Entry => ({ for_each: { param: paramName, body: body as unknown as Json[] } });

export interface Request {
  request_type: "read" | "write";
  query: { read: { entries: Entry[]; returns: string[] } } | { write: { entries: Entry[]; returns: string[] } };
  parameters: Record<string, unknown>;
}

function request(type: "read" | "write", entries: Entry[], returns: string[], parameters: Record<string, unknown>): Request {
  const batch = { entries, returns };
  return { request_type: type, query: type === "read" ? { read: batch } : { write: batch }, parameters };
}

export const read = (entries: Entry[], returns: string[], parameters: Record<string, unknown> = {}): Request =>
  request("read", entries, returns, parameters);
export const write = (entries: Entry[], returns: string[], parameters: Record<string, unknown> = {}): Request =>
  request("write", entries, returns, parameters);

/** A read of one traversal, returned as `r`. */
export const readOne = (root: TreeNode, parameters: Record<string, unknown> = {}): Request => read([entry("r", root)], ["r"], parameters);
/** A write of one traversal, returned as `r`. */
export const writeOne = (root: TreeNode, parameters: Record<string, unknown> = {}): Request => write([entry("r", root)], ["r"], parameters);
