/**
 * The JSON operation tree of `POST /v2/query` (the HelixDB v3 wire shape) and its decoder into the plan the engine
 * executes. This is Silk's one internal plan format: HelixQL compiles to this JSON, `/v2/query` receives it, the
 * embedded runtime's `run(tree)` takes it.
 *
 * Wire shape: every step is an externally tagged snake_case object, `{"out": {"input": <step>, "label": "Follows"}}`,
 * each step wrapping the one before it in `input`. Literals are tagged (`{"string": "Alice"}`, `{"i64": 3}`), values
 * of mutations are `{"value": <literal>}` or `{"expr": {"param": "name"}}`. See docs/OPERATION_TREE.md.
 *
 * The decoder checks the whole shape before anything executes and reports the JSON path of the first fault with
 * `malformed_tree`; steps of the HelixDB vocabulary that Silk does not execute yet are `unsupported_operation`.
 */
import { embedModelNameProblem } from "./embedding.js";
import { SilkError, unreachable } from "./errors.js";
import { parseId } from "./ids.js";
import { BATCH_ENTRIES_MAX, QUERY_TIMEOUT_MS_MAX, TREE_DEPTH_MAX, VALUE_DEPTH_MAX } from "./limits.js";
import { isMathFunction, MATH_FUNCTIONS, type MathFunction } from "./math-functions.js";
import { checkParameters } from "./parameter-types.js";
import { allowOnly, arrayAt, fault, labelAt, objectAt, stringAt, stringList, tagged, type Json } from "./tree-json.js";
import { decodeIndexOperation, isIndexOperationTag, type IndexOperation } from "./tree-indexes.js";
import { decodeExtendedStep, isExtendedStepTag, type StepDecoders } from "./tree-steps.js";
import { COMPUTED_EXPR_TAGS, decodeComputedExpr, type ComputedDecoders } from "./tree-computed.js";
import { decodeRowStep, isRowStepTag, type BindingProjection, type RowDecoders } from "./tree-rows.js";
import {
  isSingleFormStepTag,
  isWirePredicateTag,
  isWireStepTag,
  WIRE_EXPR_FIELDS,
  WIRE_FIELDS,
  WIRE_PREDICATE_FIELDS,
  WIRE_STEP_FIELDS,
  WIRE_STEP_FORM_FIELDS,
} from "./tree-wire.js";
import type { RecordKind } from "./records.js";
import { checkInputValue, checkWellFormed, type Value } from "./values.js";

// ---------------------------------------------------------------------------------------------------------------
// The decoded plan.

export type RequestType = "read" | "write";

export interface Plan {
  readonly requestType: RequestType;
  readonly queryName?: string;
  readonly entries: readonly Entry[];
  readonly returns: readonly string[];
  readonly parameters: Readonly<Record<string, unknown>>;
  /** The request's `"explain": true`: the result gains `$explain`, the access path of each source step. */
  readonly explain?: boolean;
  /** The request's `"timeout_ms"`: its execution deadline, which overrides the server's default. */
  readonly timeoutMs?: number;
  /**
   * Set by the caller, never by the request: the answer's IDs as JsonId, which `/v2/query` writes as JSON numbers
   * (HelixDB v3's wire); absent, decimal strings (the embedded API, HelixQL routes).
   */
  readonly idsAsNumbers?: boolean;
}

export type Entry =
  | { readonly kind: "query"; readonly name?: string; readonly root: Step; readonly condition?: Condition }
  /**
   * Runs `body` once per element of `over`. Source "param": an array parameter; `as` binds each element as one
   * parameter, and without it each element is an object whose fields become parameters. Source "var": an earlier
   * entry's records, each bound in turn as the one-record variable `as`.
   */
  | { readonly kind: "for_each"; readonly over: string; readonly source: "param" | "var"; readonly as?: string; readonly body: readonly Entry[] }
  /** An index operation: run by the coordinator, never by the executor (a batch holding one holds only those). */
  | { readonly kind: "index_operation"; readonly name?: string; readonly operation: IndexOperation };

export type Condition =
  | { readonly kind: "var_empty"; readonly name: string }
  | { readonly kind: "var_not_empty"; readonly name: string }
  | { readonly kind: "var_min_size"; readonly name: string; readonly size: number }
  | { readonly kind: "prev_not_empty" };

/** Where a source step takes its records from. */
export type Ref =
  | { readonly kind: "all" }
  | { readonly kind: "ids"; readonly ids: readonly bigint[] }
  | { readonly kind: "var"; readonly name: string }
  | { readonly kind: "param"; readonly name: string };

export type Expr =
  | { readonly kind: "property"; readonly path: string }
  | { readonly kind: "constant"; readonly value: Value }
  | { readonly kind: "param"; readonly name: string }
  | { readonly kind: "id" }
  | { readonly kind: "count"; readonly traversal: Step }
  | { readonly kind: "arith"; readonly op: "add" | "sub" | "mul" | "div" | "mod"; readonly left: Expr; readonly right: Expr }
  | { readonly kind: "var"; readonly name: string }
  | { readonly kind: "traversal"; readonly traversal: Step }
  /** Silk's: the first element of a sub-traversal's JSON form, or null (HelixQL's one-record traversals in values). */
  | { readonly kind: "first"; readonly traversal: Step }
  | { readonly kind: "call"; readonly fn: MathFunction; readonly args: readonly Expr[] }
  /**
   * HelixQL's `Embed(text)`: the text's vector from the configured embedding provider (protocol/embedding.ts); `model`
   * names one of the provider's models (a QUERY's `#[model("name")]`), else the provider's configured one.
   */
  | { readonly kind: "embed"; readonly text: Expr; readonly model?: string }
  /** HelixDB's numeric negation; null stays null. */
  | { readonly kind: "neg"; readonly expr: Expr }
  /** HelixDB's conditional: the `then` of the first branch whose `when` holds, else `otherwise` (null without one). */
  | { readonly kind: "case"; readonly branches: readonly CaseBranch[]; readonly otherwise?: Expr }
  /** HelixDB's current UTC time in epoch milliseconds, from the invocation's clock. */
  | { readonly kind: "timestamp" }
  /** HelixDB's `date_time_now`: the current time as a date (a typed datetime), where `timestamp` is epoch milliseconds. */
  | { readonly kind: "date_time_now" };

export interface CaseBranch {
  readonly when: Predicate;
  readonly then: Expr;
}

export type CompareOp = "eq" | "neq" | "gt" | "gte" | "lt" | "lte";

export type Predicate =
  | { readonly kind: "compare"; readonly op: CompareOp; readonly left: Expr; readonly right: Expr }
  | { readonly kind: "between"; readonly value: Expr; readonly min: Expr; readonly max: Expr }
  | { readonly kind: "is_null" | "is_not_null" | "has_key"; readonly path: string }
  | { readonly kind: "contains"; readonly value: Expr; readonly needle: Expr }
  | { readonly kind: "starts_with" | "ends_with"; readonly value: Expr; readonly affix: Expr }
  | { readonly kind: "is_in"; readonly value: Expr; readonly values: Expr }
  | { readonly kind: "and" | "or"; readonly predicates: readonly Predicate[] }
  | { readonly kind: "not"; readonly predicate: Predicate }
  | { readonly kind: "exists"; readonly traversal: Step };

/** A mutation's value: a literal, or an expression (usually a parameter). */
export type Input =
  | { readonly kind: "value"; readonly value: Value }
  | { readonly kind: "expr"; readonly expr: Expr }
  /** Silk's: a parameter that the call may omit (or send as null); then the property is left out of the mutation. */
  | { readonly kind: "optional_param"; readonly name: string };

export type PropertyAssignments = readonly (readonly [string, Input])[];

export type Bound = { readonly kind: "literal"; readonly value: number } | { readonly kind: "expr"; readonly expr: Expr };

export type Projection =
  | { readonly kind: "property"; readonly source: string; readonly alias: string }
  | { readonly kind: "expr"; readonly alias: string; readonly expr: Expr };

/** `count` only from HelixDB's `aggregate_by` form (the number of non-null values). */
export type AggregateFunction = "sum" | "avg" | "min" | "max" | "count";

export type PathDirection = "out" | "in" | "both";

/**
 * How shortest_path searches: fewest hops, or least total weight with the weight computed per edge; A* queues each
 * record by its cost so far plus its `heuristic` property (a property path), an estimate of the cost still to go.
 */
export type PathAlgorithm =
  | { readonly kind: "bfs" }
  | { readonly kind: "dijkstra"; readonly weight: Expr }
  | { readonly kind: "astar"; readonly weight: Expr; readonly heuristic: string };

export type Order = "asc" | "desc";

/**
 * Where `order_by` puts elements whose key is missing (absent or null) and how it breaks ties. The two languages
 * Silk serves differ, so a decoded step carries its rule:
 * - `helixdb_v3`, what `/v2/query` trees get: HelixDB v3 ranks a missing key below every value (first ascending,
 *   last descending) and breaks a tie by the element (kind, then ID, ascending in either direction);
 * - `helixql`, what HelixQL's `ORDER<Asc|Desc>` compiles to (`"rule": "helixql"`, Silk's key): HelixDB v2.3.5 puts
 *   elements without the key last in either direction and keeps tied elements in stream order.
 */
export type OrderRule = "helixdb_v3" | "helixql";

export const ORDER_RULES: readonly OrderRule[] = ["helixdb_v3", "helixql"];

/** How RerankMMR measures how alike two results are. */
export type MmrDistance = "cosine" | "euclidean" | "dotproduct";

/** How `repeat` emits intermediate levels besides the records that leave the loop (docs/OPERATION_TREE.md). */
export type EmitBehavior = "none" | "before" | "after" | "all";

export interface RepeatConfig {
  /** The sub-traversal run once per iteration over the whole frontier (its `context`). */
  readonly body: Step;
  readonly times?: number;
  readonly until?: Predicate;
  readonly emit: EmitBehavior;
  readonly emitPredicate?: Predicate;
  readonly maxDepth: number;
}

export type Step =
  // Sources.
  | { readonly op: "nodes" | "edges" | "vectors"; readonly ref: Ref }
  | { readonly op: "nodes_where" | "edges_where" | "vectors_where"; readonly predicate: Predicate }
  /**
   * The current element of a sub-traversal; with `depth` d > 0, the current element of the sub-traversal d levels
   * out (HelixQL's outer closure variable, `usr::ID` inside `usr::Out<Wrote>::{..}`).
   */
  | { readonly op: "context"; readonly depth?: number }
  // Traversals: node → node, node → edge, edge → node.
  | { readonly op: "out" | "in" | "both" | "out_e" | "in_e" | "both_e"; readonly input: Step; readonly label?: string }
  | { readonly op: "out_n" | "in_n" | "other_n"; readonly input: Step }
  // Filters.
  | { readonly op: "has"; readonly input: Step; readonly path: string; readonly value: Value }
  | { readonly op: "has_label"; readonly input: Step; readonly label: string }
  | { readonly op: "has_key"; readonly input: Step; readonly path: string }
  | { readonly op: "where"; readonly input: Step; readonly predicate: Predicate }
  | { readonly op: "dedup"; readonly input: Step }
  | { readonly op: "within" | "without"; readonly input: Step; readonly variable: string }
  // Paging.
  | { readonly op: "limit" | "skip"; readonly input: Step; readonly count: Bound }
  | { readonly op: "range"; readonly input: Step; readonly start: Bound; readonly end: Bound }
  // Terminals.
  | { readonly op: "count" | "id" | "label"; readonly input: Step }
  /** `negate` is Silk's: true when the input yields nothing (HelixQL's `x <- !EXISTS(..)`). */
  | { readonly op: "exists"; readonly input: Step; readonly negate: boolean }
  | { readonly op: "values"; readonly input: Step; readonly properties: readonly string[] }
  | { readonly op: "value_map"; readonly input: Step; readonly properties?: readonly string[] }
  | {
      readonly op: "project";
      readonly input: Step;
      readonly projections: readonly Projection[];
      /** Rows start as the whole record (`all`), less the `exclude`d properties. */
      readonly all: boolean;
      readonly exclude: readonly string[];
    }
  /**
   * Sorted by `by`, evaluated per record: `{"property": p}` in HelixDB's form, or Silk's `{"expr": e}` (HelixQL's
   * `ORDER<Asc>(_::Out<E>::COUNT)`); either way a property expression.
   */
  | { readonly op: "order_by"; readonly input: Step; readonly by: Expr; readonly order: Order; readonly rule: OrderRule }
  | { readonly op: "order_by_multiple"; readonly input: Step; readonly orderings: readonly (readonly [string, Order])[]; readonly rule: OrderRule }
  // Branches: sub-traversals that start at `context`.
  | { readonly op: "union" | "coalesce"; readonly input: Step; readonly traversals: readonly Step[] }
  | { readonly op: "optional"; readonly input: Step; readonly traversal: Step }
  /** Silk's (HelixQL's `::INTERSECT`): the records every input element's sub-traversal reaches. */
  | { readonly op: "intersect"; readonly input: Step; readonly traversal: Step }
  | { readonly op: "choose"; readonly input: Step; readonly condition: Predicate; readonly then: Step; readonly otherwise?: Step }
  | { readonly op: "repeat"; readonly input: Step; readonly config: RepeatConfig }
  // Streams as values, and named streams.
  | { readonly op: "fold" | "unfold"; readonly input: Step }
  | { readonly op: "group"; readonly input: Step; readonly path: string }
  | { readonly op: "inject"; readonly input?: Step; readonly variable: string }
  | { readonly op: "as" | "store" | "select"; readonly input: Step; readonly name: string }
  | { readonly op: "edge_has"; readonly input: Step; readonly path: string; readonly value: Input }
  | { readonly op: "edge_has_label"; readonly input: Step; readonly label: string }
  // Rows: HelixDB's traverser state beside the current element (tree-rows.ts, docs/OPERATION_TREE.md "Rows").
  | { readonly op: "path" | "simple_path"; readonly input: Step }
  | { readonly op: "bind"; readonly input: Step; readonly name: string }
  | { readonly op: "project_bindings"; readonly input: Step; readonly projections: readonly BindingProjection[]; readonly distinct: boolean }
  | { readonly op: "edge_properties"; readonly input: Step }
  | { readonly op: "with_sack"; readonly input: Step; readonly initial: Value }
  | { readonly op: "sack_set" | "sack_add"; readonly input: Step; readonly path: string }
  | { readonly op: "sack_get"; readonly input: Step }
  // Aggregates and paths.
  | {
      readonly op: "aggregate";
      readonly input: Step;
      readonly fn: AggregateFunction;
      readonly path?: string;
      /** HelixDB's `aggregate_by` form answers one row `{field: value}` (`rank_Sum`), not the bare value. */
      readonly field?: string;
    }
  /**
   * `order`: `first_seen` (Silk's form, `properties`: rows in the order their combinations first appear) or `value`
   * (HelixDB's form, one `property`: rows ordered by the value and keyed in name order, as HelixDB v3 answers).
   */
  | { readonly op: "group_count"; readonly input: Step; readonly properties: readonly string[]; readonly order: "first_seen" | "value" }
  /**
   * `keyed` rows `{p.., count, items}`; `count_data` rows `{count, data}` (no property values), as HelixDB answers
   * HelixQL's `::COUNT::AGGREGATE_BY(..)`.
   */
  | { readonly op: "aggregate_by"; readonly input: Step; readonly properties: readonly string[]; readonly shape: AggregateByShape }
  | {
      readonly op: "shortest_path";
      readonly input: Step;
      readonly to: Ref;
      readonly label?: string;
      readonly direction: PathDirection;
      readonly algorithm: PathAlgorithm;
      /**
       * HelixDB's v3 form (`source`, `target`, `max_depth`): one source node and one target, a breadth-first search
       * of at most `maxDepth` hops, answered as the path's node IDs (an empty list when there is none).
       */
      readonly helixForm?: { readonly maxDepth: number };
    }
  // Search: the k best records of an index, best first; with `input` (the `_within` forms) only among its records.
  | {
      readonly op: "vector_search";
      readonly input?: Step;
      readonly kind: RecordKind;
      readonly label: string;
      /** A property, or VECTOR_FIELD for a `V::` type's own vector. */
      readonly property: string;
      readonly query: Input;
      readonly k: Input;
      readonly tenant?: Input;
      /** The beam width, over the index's own (protocol/indexes.ts VECTOR_EF_MAX). */
      readonly ef?: number;
    }
  | {
      readonly op: "text_search";
      readonly input?: Step;
      readonly kind: RecordKind;
      readonly label: string;
      /** Absent: every text index of the label, a record's score the sum of its fields' scores. */
      readonly property?: string;
      readonly query: Input;
      readonly k: Input;
      readonly tenant?: Input;
    }
  // Rerankers over search results (docs/INDEXES.md): fusion of the rankings in a stream, and diversification.
  | { readonly op: "rerank_rrf"; readonly input: Step; readonly k?: Input }
  | { readonly op: "rerank_mmr"; readonly input: Step; readonly lambda: Input; readonly distance: MmrDistance }
  // Mutations.
  | { readonly op: "add_n"; readonly input?: Step; readonly label: string; readonly properties: PropertyAssignments }
  | { readonly op: "add_e"; readonly input: Step; readonly label: string; readonly to: Ref; readonly properties: PropertyAssignments }
  | { readonly op: "add_v"; readonly label: string; readonly vector: Input; readonly properties: PropertyAssignments }
  | { readonly op: "set_property"; readonly input: Step; readonly name: string; readonly value: Input }
  | { readonly op: "update"; readonly input: Step; readonly properties: PropertyAssignments }
  | { readonly op: "remove_property"; readonly input: Step; readonly name: string }
  | { readonly op: "drop"; readonly input: Step }
  | { readonly op: "drop_edge"; readonly input: Step; readonly to: Ref; readonly label?: string }
  | { readonly op: "drop_edge_by_id"; readonly input?: Step; readonly edges: Ref }
  | { readonly op: "upsert_n"; readonly input: Step; readonly label: string; readonly properties: PropertyAssignments }
  | { readonly op: "upsert_v"; readonly input: Step; readonly label: string; readonly vector?: Input; readonly properties: PropertyAssignments }
  | { readonly op: "upsert_e"; readonly input: Step; readonly label: string; readonly from: Ref; readonly to: Ref; readonly properties: PropertyAssignments };

export type StepOp = Step["op"];

const MUTATING_OPS: ReadonlySet<StepOp> = new Set<StepOp>([
  "add_n", "add_e", "add_v", "set_property", "update", "remove_property", "drop", "upsert_n", "upsert_v", "upsert_e",
  "drop_edge", "drop_edge_by_id",
]);

export function isMutation(op: StepOp): boolean {
  return MUTATING_OPS.has(op);
}

/** The kind of record a source step yields: `nodes` and `nodes_where` nodes, and so on. */
export function sourceKind(op: "nodes" | "edges" | "vectors" | "nodes_where" | "edges_where" | "vectors_where"): RecordKind {
  return op.startsWith("nodes") ? "node" : op.startsWith("edges") ? "edge" : "vector";
}

export { isLabel } from "./tree-json.js";
// ---------------------------------------------------------------------------------------------------------------
// Decoding.

/** A tagged literal; `depth` counts the `array` and `object` literals around it (at most VALUE_DEPTH_MAX). */
export function decodeLiteral(value: Json, path: string, depth = 0): Value {
  if (value === "null") return null;
  const [tag, body] = tagged(value, path);
  const at = `${path}.${tag}`;
  if ((tag === "array" || tag === "object") && depth >= VALUE_DEPTH_MAX) {
    throw new SilkError("invalid_value", `${at}: a value nests at most ${VALUE_DEPTH_MAX} arrays and objects deep (VALUE_DEPTH_MAX); flatten it or store it as a JSON string`);
  }
  switch (tag) {
    case "bool":
      if (typeof body !== "boolean") throw fault(at, "expected a boolean");
      return body;
    case "i64":
      return integerLiteral(body, at);
    case "f64":
    case "f32":
      return finiteAt(body, at);
    case "string":
      return stringAt(body, at);
    case "date_time": {
      if (typeof body !== "number" && typeof body !== "string") throw fault(at, "expected epoch milliseconds or an ISO 8601 string");
      const date = new Date(body);
      if (Number.isNaN(date.getTime())) throw fault(at, "not a valid date");
      return date;
    }
    case "bytes":
      return Uint8Array.from(arrayAt(body, at).map((byte, i) => byteAt(byte, `${at}[${i}]`)));
    case "i64_array":
      return arrayAt(body, at).map((item, i) => integerLiteral(item, `${at}[${i}]`));
    case "f64_array":
      return Float64Array.from(arrayAt(body, at).map((item, i) => finiteAt(item, `${at}[${i}]`)));
    case "f32_array":
      return Float32Array.from(arrayAt(body, at).map((item, i) => finiteAt(item, `${at}[${i}]`)));
    case "string_array":
      return arrayAt(body, at).map((item, i) => stringAt(item, `${at}[${i}]`));
    case "array":
      return arrayAt(body, at).map((item, i) => decodeLiteral(item, `${at}[${i}]`, depth + 1));
    case "object": {
      const object = objectAt(body, at);
      const result: Record<string, Value> = {};
      for (const [key, item] of Object.entries(object)) {
        checkWellFormed(key, at);
        result[key] = decodeLiteral(item, `${at}.${key}`, depth + 1);
      }
      return result;
    }
    default:
      throw fault(path, `unknown literal type ${JSON.stringify(tag)}`);
  }
}

/**
 * An integer: a safe JSON number, a decimal string, or a bigint (what the gateway's lossless parse makes of a bare
 * JSON integer beyond 2^53, as HelixDB's SDKs send i64 values).
 */
function integerLiteral(value: Json, path: string): number | bigint {
  if (typeof value === "number" && Number.isSafeInteger(value)) return value;
  if (typeof value === "bigint" || (typeof value === "string" && /^-?\d+$/.test(value))) {
    const big = BigInt(value);
    if (big < -(2n ** 63n) || big > 2n ** 64n - 1n) throw fault(path, "integer out of 64-bit range");
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  }
  throw fault(path, "expected an integer (a JSON number, or a decimal string beyond 2^53)");
}

/** A float; a bigint (a bare JSON integer beyond 2^53, parsed losslessly) is the nearest double, as a float reads it. */
function finiteAt(value: Json, path: string): number {
  const number = typeof value === "bigint" ? Number(value) : value;
  if (typeof number !== "number" || !Number.isFinite(number)) throw fault(path, "expected a finite number");
  return number;
}

function byteAt(value: Json, path: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 255) throw fault(path, "expected a byte");
  return value;
}

function decodeRef(value: Json, path: string): Ref {
  if (value === "all") return { kind: "all" };
  const [tag, body] = tagged(value, path);
  const at = `${path}.${tag}`;
  switch (tag) {
    case "ids":
      return { kind: "ids", ids: arrayAt(body, at).map((id, i) => parseId(id, `${at}[${i}]`)) };
    case "var":
      return { kind: "var", name: stringAt(body, at) };
    case "param":
      return { kind: "param", name: stringAt(body, at) };
    default:
      throw fault(path, `unknown reference ${JSON.stringify(tag)} (expected "all", ids, var or param)`);
  }
}

function decodeExpr(value: Json, path: string, depth: number): Expr {
  if (depth > TREE_DEPTH_MAX) throw new SilkError("limit_exceeded", `${path}: nesting deeper than ${TREE_DEPTH_MAX}`);
  if (value === "id") return { kind: "id" };
  const [tag, body] = tagged(value, path);
  const at = `${path}.${tag}`;
  switch (tag) {
    case "property":
      return { kind: "property", path: stringAt(body, at) };
    case "constant":
      return { kind: "constant", value: decodeLiteral(body, at) };
    case "param":
      return { kind: "param", name: stringAt(body, at) };
    case "count": {
      const object = objectAt(body, at);
      allowOnly(object, WIRE_EXPR_FIELDS.count, at);
      return { kind: "count", traversal: decodeStep(object.traversal, `${at}.traversal`, depth + 1) };
    }
    case "add":
    case "sub":
    case "mul":
    case "div":
    case "mod": {
      const object = objectAt(body, at);
      allowOnly(object, WIRE_EXPR_FIELDS[tag], at);
      return {
        kind: "arith",
        op: tag,
        left: decodeExpr(object.left, `${at}.left`, depth + 1),
        right: decodeExpr(object.right, `${at}.right`, depth + 1),
      };
    }
    case "var":
      return { kind: "var", name: stringAt(body, at) };
    case "traversal":
    case "first":
      return { kind: tag, traversal: decodeStep(body, at, depth + 1) };
    case "call":
      return decodeCall(body, at, depth);
    case "embed": {
      const object = objectAt(body, at);
      allowOnly(object, WIRE_EXPR_FIELDS.embed, at);
      if (object.text === undefined) throw fault(`${at}.text`, "embed needs the text to embed");
      const text = decodeExpr(object.text, `${at}.text`, depth + 1);
      return object.model === undefined ? { kind: "embed", text } : { kind: "embed", text, model: embedModelAt(object.model, `${at}.model`) };
    }
    default:
      if (COMPUTED_EXPR_TAGS.has(tag)) return decodeComputedExpr(tag, body, at, depth, COMPUTED_DECODERS);
      throw fault(path, `unknown expression ${JSON.stringify(tag)}`);
  }
}

/** `{"fn": "pow", "args": [e, e]}`: the function must be known and take that many arguments. */
function decodeCall(body: Json, at: string, depth: number): Expr {
  const object = objectAt(body, at);
  allowOnly(object, WIRE_EXPR_FIELDS.call, at);
  const fn = stringAt(object.fn, `${at}.fn`);
  if (!isMathFunction(fn)) throw fault(`${at}.fn`, `unknown function ${JSON.stringify(fn)} (expected ${Object.keys(MATH_FUNCTIONS).join(", ")})`);
  const args = arrayAt(object.args, `${at}.args`);
  const [fewest, most] = MATH_FUNCTIONS[fn].arity;
  if (args.length < fewest || args.length > most) {
    const expected = fewest === most ? `${fewest}` : `at least ${fewest}`;
    throw fault(`${at}.args`, `${fn} takes ${expected} argument${fewest === 1 && most === 1 ? "" : "s"}, not ${args.length}`);
  }
  return { kind: "call", fn, args: args.map((arg, i) => decodeExpr(arg, `${at}.args[${i}]`, depth + 1)) };
}

const COMPARE_OPS: readonly CompareOp[] = ["eq", "neq", "gt", "gte", "lt", "lte"];

export function decodePredicate(value: Json, path: string, depth = 0): Predicate {
  if (depth > TREE_DEPTH_MAX) throw new SilkError("limit_exceeded", `${path}: nesting deeper than ${TREE_DEPTH_MAX}`);
  const [tag, body] = tagged(value, path);
  const at = `${path}.${tag}`;
  const object = objectAt(body, at);
  const expr = (key: string): Expr => decodeExpr(object[key], `${at}.${key}`, depth + 1);
  // Every predicate's fields are checked here, against the list tsc holds to the wire type.
  if (isWirePredicateTag(tag)) allowOnly(object, WIRE_PREDICATE_FIELDS[tag], at);
  if ((COMPARE_OPS as readonly string[]).includes(tag)) {
    return { kind: "compare", op: tag as CompareOp, left: expr("left"), right: expr("right") };
  }
  switch (tag) {
    case "compare": {
      const op = stringAt(object.op, `${at}.op`);
      if (!(COMPARE_OPS as readonly string[]).includes(op)) throw fault(`${at}.op`, `unknown comparison ${JSON.stringify(op)}`);
      return { kind: "compare", op: op as CompareOp, left: expr("left"), right: expr("right") };
    }
    case "between":
      return { kind: "between", value: expr("value"), min: expr("min"), max: expr("max") };
    case "is_null":
    case "is_not_null":
    case "has_key":
      return { kind: tag, path: stringAt(object.property, `${at}.property`) };
    case "contains":
      return { kind: "contains", value: expr("value"), needle: expr("substring") };
    case "starts_with":
      return { kind: "starts_with", value: expr("value"), affix: expr("prefix") };
    case "ends_with":
      return { kind: "ends_with", value: expr("value"), affix: expr("suffix") };
    case "is_in":
      return { kind: "is_in", value: expr("value"), values: expr("values") };
    case "and":
    case "or":
      return {
        kind: tag,
        predicates: arrayAt(object.predicates, `${at}.predicates`).map((item, i) =>
          decodePredicate(item, `${at}.predicates[${i}]`, depth + 1),
        ),
      };
    case "not":
      return { kind: "not", predicate: decodePredicate(object.predicate, `${at}.predicate`, depth + 1) };
    case "exists":
      return { kind: "exists", traversal: decodeStep(object.traversal, `${at}.traversal`, depth + 1) };
    default:
      throw fault(path, `unknown predicate ${JSON.stringify(tag)}`);
  }
}

function decodeInput(value: Json, path: string): Input {
  const [tag, body] = tagged(value, path);
  if (tag === "value") return { kind: "value", value: decodeLiteral(body, `${path}.value`) };
  if (tag === "expr") return { kind: "expr", expr: decodeExpr(body, `${path}.expr`, 0) };
  if (tag === "optional_param") return { kind: "optional_param", name: stringAt(body, `${path}.optional_param`) };
  throw fault(path, `expected {"value": literal}, {"expr": expression} or {"optional_param": name}, found ${JSON.stringify(tag)}`);
}

function decodeAssignments(value: Json, path: string): PropertyAssignments {
  if (value === undefined) return [];
  const seen = new Set<string>();
  return arrayAt(value, path).map((pair, i) => {
    const at = `${path}[${i}]`;
    const items = arrayAt(pair, at);
    if (items.length !== 2) throw fault(at, "expected a [name, value] pair");
    const name = stringAt(items[0], `${at}[0]`);
    if (seen.has(name)) throw fault(`${at}[0]`, `property ${JSON.stringify(name)} is assigned twice`);
    seen.add(name);
    return [name, decodeInput(items[1], `${at}[1]`)] as const;
  });
}

function decodeBound(value: Json, path: string): Bound {
  const [tag, body] = tagged(value, path);
  if (tag === "literal") {
    if (typeof body !== "number" || !Number.isSafeInteger(body) || body < 0) throw fault(`${path}.literal`, "expected a non-negative integer");
    return { kind: "literal", value: body };
  }
  if (tag === "expr") return { kind: "expr", expr: decodeExpr(body, `${path}.expr`, 0) };
  throw fault(path, `expected {"literal": n} or {"expr": ...}`);
}

function decodeProjection(value: Json, path: string): Projection {
  const [tag, body] = tagged(value, path);
  const at = `${path}.${tag}`;
  const object = objectAt(body, at);
  if (tag === "property") {
    allowOnly(object, WIRE_FIELDS.property_projection, at);
    const source = stringAt(object.source, `${at}.source`);
    return { kind: "property", source, alias: object.alias === undefined ? source : stringAt(object.alias, `${at}.alias`) };
  }
  if (tag === "expr") {
    allowOnly(object, WIRE_FIELDS.expr_projection, at);
    return { kind: "expr", alias: stringAt(object.alias, `${at}.alias`), expr: decodeExpr(object.expr, `${at}.expr`, 0) };
  }
  throw fault(path, `unknown projection ${JSON.stringify(tag)}`);
}


function decodeProject(object: Record<string, Json>, at: string, input: Step): Step {
  if (object.all !== undefined && typeof object.all !== "boolean") throw fault(`${at}.all`, "expected a boolean");
  const exclude = object.exclude === undefined ? [] : stringList(object.exclude, `${at}.exclude`);
  return {
    op: "project",
    input,
    projections: arrayAt(object.projections ?? [], `${at}.projections`).map((item, i) => decodeProjection(item, `${at}.projections[${i}]`)),
    // Leaving properties out only makes sense of a row that starts as the whole record.
    all: object.all === true || exclude.length > 0,
    exclude,
  };
}

/** The functions of Silk's `aggregate` step; HelixDB's `aggregate_by` form has its own (HELIX_AGGREGATES). */
const AGGREGATE_FUNCTIONS: readonly AggregateFunction[] = ["sum", "avg", "min", "max"];

function decodeAggregate(object: Record<string, Json>, at: string, input: Step): Step {
  const fn = stringAt(object.fn, `${at}.fn`);
  if (!(AGGREGATE_FUNCTIONS as readonly string[]).includes(fn)) throw fault(`${at}.fn`, `expected one of ${AGGREGATE_FUNCTIONS.join(", ")}`);
  const path = object.property === undefined || object.property === null ? undefined : stringAt(object.property, `${at}.property`);
  return { op: "aggregate", input, fn: fn as AggregateFunction, path };
}

/** The rows of Silk's `aggregate_by`: `{p.., count, items}` (keyed), or `{count, data}` (HelixQL's COUNT form). */
export type AggregateByShape = "keyed" | "count_data";

/**
 * Grouping properties; the names the result row uses for itself (`count`, and `items` of keyed aggregate_by rows) are
 * refused. `count_data` rows name no property, so any name is allowed there.
 */
function groupProperties(value: Json, path: string, op: "group_count" | "aggregate_by", shape: AggregateByShape): string[] {
  const properties = stringList(value, path);
  const reserved = op === "group_count" ? ["count"] : shape === "keyed" ? ["count", "items"] : [];
  properties.forEach((property, i) => {
    if (reserved.includes(property)) throw fault(`${path}[${i}]`, `${JSON.stringify(property)} names a field of the ${op} row itself`);
  });
  if (new Set(properties).size !== properties.length) throw fault(path, "a property is listed twice");
  return properties;
}

/** HelixDB's `aggregate_by` functions: Silk's function, and the function's name in the answer's field. */
const HELIX_AGGREGATES: ReadonlyMap<string, readonly [AggregateFunction, string]> = new Map([
  ["count", ["count", "Count"]],
  ["sum", ["sum", "Sum"]],
  ["min", ["min", "Min"]],
  ["max", ["max", "Max"]],
  ["mean", ["avg", "Mean"]],
]);

/**
 * `group_count` and `aggregate_by` in Silk's form (`properties`: one row per combination of values), or in HelixDB's
 * v3 form: `group_count` with one `property`, and `aggregate_by` with `function` and `property`, which is not a
 * grouping but one aggregate answered as a row `{"<property>_<Function>": value}` (`{"rank_Mean": 2}`).
 */
function decodeGrouping(tag: "group_count" | "aggregate_by", object: Record<string, Json>, at: string, input: () => Step): Step {
  if (tag === "aggregate_by" && object.function !== undefined) {
    allowOnly(object, WIRE_STEP_FORM_FIELDS.aggregate_by.helix, at);
    const name = stringAt(object.function, `${at}.function`);
    const helix = HELIX_AGGREGATES.get(name);
    if (helix === undefined) throw fault(`${at}.function`, `expected one of ${[...HELIX_AGGREGATES.keys()].join(", ")}`);
    const path = stringAt(object.property, `${at}.property`);
    return { op: "aggregate", input: input(), fn: helix[0], path, field: `${path}_${helix[1]}` };
  }
  if (tag === "group_count" && object.property !== undefined) {
    allowOnly(object, WIRE_STEP_FORM_FIELDS.group_count.helix, at);
    const property = stringAt(object.property, `${at}.property`);
    if (property === "count") throw fault(`${at}.property`, '"count" names a field of the group_count row itself');
    return { op: tag, input: input(), properties: [property], order: "value" };
  }
  if (tag === "group_count") {
    allowOnly(object, WIRE_STEP_FORM_FIELDS.group_count.silk, at);
    return { op: tag, input: input(), properties: groupProperties(object.properties, `${at}.properties`, tag, "keyed"), order: "first_seen" };
  }
  allowOnly(object, WIRE_STEP_FORM_FIELDS.aggregate_by.silk, at);
  const shape = object.shape === undefined ? "keyed" : stringAt(object.shape, `${at}.shape`);
  if (shape !== "keyed" && shape !== "count_data") throw fault(`${at}.shape`, 'expected "keyed" or "count_data"');
  return { op: tag, input: input(), properties: groupProperties(object.properties, `${at}.properties`, tag, shape), shape };
}

/**
 * `shortest_path` in Silk's form (`input` sources, `to` targets, `algorithm`, `weight`: one row per source that
 * reaches a target) or in HelixDB's v3 form (`source` and `target`, one node each, `max_depth`: the path's node IDs).
 */
function decodeShortestPath(object: Record<string, Json>, at: string, input: () => Step, depth: number): Step {
  const direction = object.direction === undefined ? "out" : stringAt(object.direction, `${at}.direction`);
  if (direction !== "out" && direction !== "in" && direction !== "both") throw fault(`${at}.direction`, 'expected "out", "in" or "both"');
  const label = object.label === undefined || object.label === null ? undefined : labelAt(object.label, `${at}.label`);
  if (object.source !== undefined || object.target !== undefined) {
    allowOnly(object, WIRE_STEP_FORM_FIELDS.shortest_path.helix, at);
    const maxDepth = object.max_depth;
    if (typeof maxDepth !== "number" || !Number.isSafeInteger(maxDepth) || maxDepth < 0) throw fault(`${at}.max_depth`, "expected the most hops, a non-negative integer");
    const source = oneNode(object.source, `${at}.source`);
    return { op: "shortest_path", input: { op: "nodes", ref: source }, to: oneNode(object.target, `${at}.target`), label, direction, algorithm: { kind: "bfs" }, helixForm: { maxDepth } };
  }
  allowOnly(object, WIRE_STEP_FORM_FIELDS.shortest_path.silk, at);
  return { op: "shortest_path", input: input(), to: decodeRef(object.to, `${at}.to`), label, direction, algorithm: decodePathAlgorithm(object, at, depth) };
}

/** `algorithm` with the `weight` (Dijkstra, A*) and `heuristic` (A* only) it needs. */
function decodePathAlgorithm(object: Record<string, Json>, at: string, depth: number): PathAlgorithm {
  const algorithm = object.algorithm === undefined ? "bfs" : stringAt(object.algorithm, `${at}.algorithm`);
  if (algorithm !== "bfs" && algorithm !== "dijkstra" && algorithm !== "astar") throw fault(`${at}.algorithm`, 'expected "bfs", "dijkstra" or "astar"');
  // BFS counts hops, so a weight given with it is ignored (but must still be well formed).
  const weight = object.weight === undefined ? undefined : decodeExpr(object.weight, `${at}.weight`, depth + 1);
  if (algorithm !== "bfs" && weight === undefined) throw fault(`${at}.weight`, `${algorithm} needs a weight expression`);
  // A heuristic steers only A*; with another algorithm it would silently do nothing, so it is refused.
  if (algorithm !== "astar" && object.heuristic !== undefined) throw fault(`${at}.heuristic`, 'a heuristic needs "algorithm": "astar"');
  if (algorithm === "bfs" || weight === undefined) return { kind: "bfs" };
  if (algorithm === "dijkstra") return { kind: "dijkstra", weight };
  if (object.heuristic === undefined) throw fault(`${at}.heuristic`, "astar needs a heuristic: the name of a numeric property of each record");
  const heuristic = stringAt(object.heuristic, `${at}.heuristic`);
  if (heuristic.length === 0) throw fault(`${at}.heuristic`, "expected a property name, not an empty string");
  return { kind: "astar", weight, heuristic };
}

/** An end of HelixDB's shortest path: a reference that names one node (a variable or parameter is checked when it runs). */
function oneNode(value: Json, path: string): Ref {
  if (value === undefined) throw fault(path, "expected a node reference");
  const ref = decodeRef(value, path);
  if (ref.kind === "all") throw fault(path, "must name exactly one node, not all nodes");
  if (ref.kind === "ids" && ref.ids.length !== 1) throw fault(`${path}.ids`, `must name exactly one node, not ${ref.ids.length}`);
  return ref;
}

function decodeUpsert(tag: "upsert_n" | "upsert_v" | "upsert_e", object: Record<string, Json>, at: string, input: Step): Step {
  const label = (): string => labelAt(object.label, `${at}.label`);
  const properties = (): PropertyAssignments => decodeAssignments(object.properties, `${at}.properties`);
  switch (tag) {
    case "upsert_n":
      return { op: tag, input, label: label(), properties: properties() };
    case "upsert_v":
      return {
        op: tag,
        input,
        label: label(),
        vector: object.vector === undefined || object.vector === null ? undefined : decodeInput(object.vector, `${at}.vector`),
        properties: properties(),
      };
    case "upsert_e":
      return {
        op: tag,
        input,
        label: label(),
        from: decodeRef(object.from, `${at}.from`),
        to: decodeRef(object.to, `${at}.to`),
        properties: properties(),
      };
    default:
      unreachable(tag, "upsert");
  }
}

/** Decodes one step (and, through `input`, everything before it). */
export function decodeStep(value: Json, path: string, depth = 0): Step {
  if (depth > TREE_DEPTH_MAX) throw new SilkError("limit_exceeded", `${path}: nesting deeper than ${TREE_DEPTH_MAX}`);
  if (value === "context") return { op: "context" };
  const [tag, body] = tagged(value, path);
  const at = `${path}.${tag}`;
  if (isIndexOperationTag(tag)) throw fault(at, `${tag} is an index operation: it must be the root of an entry`);
  const object = objectAt(body ?? {}, at);
  const input = (): Step => decodeStep(object.input, `${at}.input`, depth + 1);
  if (!isWireStepTag(tag)) throw fault(path, `unknown step ${JSON.stringify(tag)}`);
  // Every step's fields are checked here, against the list tsc holds to the wire type; a step of two forms checks
  // the fields of the form it is (decodeGrouping, decodeShortestPath).
  if (isSingleFormStepTag(tag)) allowOnly(object, WIRE_STEP_FIELDS[tag], at);
  switch (tag) {
    case "context": {
      const depth = object.depth;
      if (typeof depth !== "number" || !Number.isSafeInteger(depth) || depth < 0 || depth > TREE_DEPTH_MAX) {
        throw fault(`${at}.depth`, `expected how many sub-traversals out, an integer from 0 to ${TREE_DEPTH_MAX}`);
      }
      return depth === 0 ? { op: "context" } : { op: "context", depth };
    }
    case "nodes":
    case "edges":
    case "vectors":
      return { op: tag, ref: decodeRef(object.reference, `${at}.reference`) };
    case "nodes_where":
    case "edges_where":
    case "vectors_where":
      return { op: tag, predicate: decodePredicate(object.predicate, `${at}.predicate`, depth + 1) };
    case "out":
    case "in":
    case "both":
    case "out_e":
    case "in_e":
    case "both_e":
      return { op: tag, input: input(), label: object.label === undefined || object.label === null ? undefined : labelAt(object.label, `${at}.label`) };
    case "out_n":
    case "in_n":
    case "other_n":
    case "dedup":
    case "count":
    case "id":
    case "label":
    case "drop":
      return { op: tag, input: input() };
    case "exists":
      if (object.negate !== undefined && typeof object.negate !== "boolean") throw fault(`${at}.negate`, "expected a boolean");
      return { op: "exists", input: input(), negate: object.negate === true };
    case "has":
      return { op: "has", input: input(), path: stringAt(object.property, `${at}.property`), value: decodeLiteral(object.value, `${at}.value`) };
    case "has_label":
      return { op: "has_label", input: input(), label: labelAt(object.label, `${at}.label`) };
    case "has_key":
      return { op: "has_key", input: input(), path: stringAt(object.property, `${at}.property`) };
    case "where": {
      const source = input();
      const predicate = decodePredicate(object.predicate, `${at}.predicate`, depth + 1);
      // A filter straight on a source step is that source's predicate (its AND): the planner then sees the filter's
      // comparisons and takes the candidates from an index (node/exec/planner.ts). The same records, in the same order,
      // with the same predicate evaluations (AND stops at the source's own false), so the same answer or error.
      if (source.op === "nodes_where" || source.op === "edges_where" || source.op === "vectors_where") {
        return { op: source.op, predicate: { kind: "and", predicates: [source.predicate, predicate] } };
      }
      return { op: "where", input: source, predicate };
    }
    case "within":
    case "without":
      return { op: tag, input: input(), variable: stringAt(object.variable, `${at}.variable`) };
    case "limit":
    case "skip":
      return { op: tag, input: input(), count: decodeBound(object.count, `${at}.count`) };
    case "range":
      return { op: "range", input: input(), start: decodeBound(object.start, `${at}.start`), end: decodeBound(object.end, `${at}.end`) };
    case "values":
      return { op: "values", input: input(), properties: stringList(object.properties, `${at}.properties`) };
    case "value_map":
      return {
        op: "value_map",
        input: input(),
        properties: object.properties === undefined || object.properties === null ? undefined : stringList(object.properties, `${at}.properties`),
      };
    case "project":
      return decodeProject(object, at, input());
    case "order_by": {
      const order = object.order === undefined ? "asc" : stringAt(object.order, `${at}.order`);
      const rule = object.rule === undefined ? "helixdb_v3" : stringAt(object.rule, `${at}.rule`);
      if (!(ORDER_RULES as readonly string[]).includes(rule)) throw fault(`${at}.rule`, `expected one of ${ORDER_RULES.join(", ")}`);
      if (order !== "asc" && order !== "desc") throw fault(`${at}.order`, 'expected "asc" or "desc"');
      if (object.property !== undefined && object.expr !== undefined) throw fault(`${at}.expr`, "order_by takes a property or an expr, not both");
      const by: Expr =
        object.expr === undefined ? { kind: "property", path: stringAt(object.property, `${at}.property`) } : decodeExpr(object.expr, `${at}.expr`, depth + 1);
      return { op: "order_by", input: input(), by, order, rule: rule as OrderRule };
    }
    case "aggregate":
      return decodeAggregate(object, at, input());
    case "group_count":
    case "aggregate_by":
      return decodeGrouping(tag, object, at, input);
    case "shortest_path":
      return decodeShortestPath(object, at, input, depth);
    case "upsert_n":
    case "upsert_v":
    case "upsert_e":
      return decodeUpsert(tag, object, at, input());
    case "add_n":
      return {
        op: "add_n",
        input: object.input === undefined ? undefined : input(),
        label: labelAt(object.label, `${at}.label`),
        properties: decodeAssignments(object.properties, `${at}.properties`),
      };
    case "add_e":
      return {
        op: "add_e",
        input: input(),
        label: labelAt(object.label, `${at}.label`),
        to: decodeRef(object.to, `${at}.to`),
        properties: decodeAssignments(object.properties, `${at}.properties`),
      };
    case "add_v":
      return {
        op: "add_v",
        label: labelAt(object.label, `${at}.label`),
        vector: decodeInput(object.vector, `${at}.vector`),
        properties: decodeAssignments(object.properties, `${at}.properties`),
      };
    case "set_property":
      return { op: "set_property", input: input(), name: stringAt(object.name, `${at}.name`), value: decodeInput(object.value, `${at}.value`) };
    case "update":
      return { op: "update", input: input(), properties: decodeAssignments(object.properties, `${at}.properties`) };
    case "remove_property":
      return { op: "remove_property", input: input(), name: stringAt(object.name, `${at}.name`) };
    default:
      if (isExtendedStepTag(tag)) return decodeExtendedStep(tag, object, at, depth, STEP_DECODERS);
      if (isRowStepTag(tag)) return decodeRowStep(tag, object, at, depth, ROW_DECODERS);
      return unreachable(tag, "step");
  }
}

const STEP_DECODERS: StepDecoders = {
  step: decodeStep,
  predicate: decodePredicate,
  input: decodeInput,
  ref: decodeRef,
};

const COMPUTED_DECODERS: ComputedDecoders = {
  expr: decodeExpr,
  predicate: decodePredicate,
};

const ROW_DECODERS: RowDecoders = {
  step: decodeStep,
  literal: decodeLiteral,
};

function decodeCondition(value: Json, path: string): Condition {
  if (value === "prev_not_empty") return { kind: "prev_not_empty" };
  const [tag, body] = tagged(value, path);
  const at = `${path}.${tag}`;
  switch (tag) {
    case "var_empty":
    case "var_not_empty":
      return { kind: tag, name: stringAt(body, at) };
    case "var_min_size": {
      const pair = arrayAt(body, at);
      const size = pair[1];
      if (pair.length !== 2 || typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) {
        throw fault(at, "expected [variable, size]");
      }
      return { kind: "var_min_size", name: stringAt(pair[0], `${at}[0]`), size };
    }
    default:
      throw fault(path, `unknown condition ${JSON.stringify(tag)}`);
  }
}

function decodeEntry(value: Json, path: string): Entry {
  const [tag, body] = tagged(value, path);
  const at = `${path}.${tag}`;
  const object = objectAt(body, at);
  if (tag === "query") {
    allowOnly(object, WIRE_FIELDS.query, at);
    const name = object.name === undefined || object.name === null ? undefined : stringAt(object.name, `${at}.name`);
    const [rootTag, rootBody] = object.root === "context" ? ["context", null] : tagged(object.root, `${at}.root`);
    if (isIndexOperationTag(rootTag)) {
      if (object.condition !== undefined && object.condition !== null) throw fault(`${at}.condition`, "an index operation takes no condition");
      return { kind: "index_operation", name, operation: decodeIndexOperation(rootTag, rootBody, `${at}.root.${rootTag}`) };
    }
    return {
      kind: "query",
      name,
      root: decodeStep(object.root, `${at}.root`),
      condition: object.condition === undefined || object.condition === null ? undefined : decodeCondition(object.condition, `${at}.condition`),
    };
  }
  if (tag === "for_each") {
    allowOnly(object, WIRE_FIELDS.for_each, at);
    const source = object.var === undefined || object.var === null ? "param" : "var";
    if (source === "var" && object.param !== undefined && object.param !== null) throw fault(at, "for_each takes param or var, not both");
    const as = object.as === undefined || object.as === null ? undefined : stringAt(object.as, `${at}.as`);
    if (source === "var" && as === undefined) throw fault(at, "for_each over var names each record with as");
    return {
      kind: "for_each",
      over: source === "var" ? stringAt(object.var, `${at}.var`) : stringAt(object.param, `${at}.param`),
      source,
      as,
      body: arrayAt(object.body, `${at}.body`).map((item, i) => decodeEntry(item, `${at}.body[${i}]`)),
    };
  }
  throw fault(path, `unknown entry ${JSON.stringify(tag)} (expected query or for_each)`);
}

/** The steps a step runs directly: its input and the sub-traversals of a branch. */
export function childSteps(step: Step): Step[] {
  const children: Step[] = "input" in step && step.input !== undefined ? [step.input] : [];
  switch (step.op) {
    case "union":
    case "coalesce":
      return [...children, ...step.traversals];
    case "optional":
    case "intersect":
      return [...children, step.traversal];
    case "choose":
      return step.otherwise === undefined ? [...children, step.then] : [...children, step.then, step.otherwise];
    case "repeat":
      return [...children, step.config.body];
    default:
      return children;
  }
}

function containsMutation(step: Step): boolean {
  return isMutation(step.op) || childSteps(step).some(containsMutation);
}

/** Index operations change the database (a read batch may not hold one), except get, which HelixDB's SDKs send in either. */
function entriesContainMutation(entries: readonly Entry[]): boolean {
  return entries.some((entry) => {
    switch (entry.kind) {
      case "query":
        return containsMutation(entry.root);
      case "for_each":
        return entriesContainMutation(entry.body);
      case "index_operation":
        return entry.operation.action !== "get";
      default:
        return unreachable(entry, "entry");
    }
  });
}

/**
 * Index operations are administration that the coordinator runs outside any transaction: a batch of them holds
 * nothing else, and none sits inside a `for_each`.
 */
function checkIndexOperations(entries: readonly Entry[], path: string): void {
  const admin = entries.map((entry) => entry.kind === "index_operation");
  if (!admin.some(Boolean)) return;
  const other = admin.indexOf(false);
  if (other >= 0) throw fault(`${path}[${other}]`, "a batch with index operations holds only index operations");
}

function checkNoNestedIndexOperations(entries: readonly Entry[], path: string): void {
  entries.forEach((entry, i) => {
    if (entry.kind !== "for_each") return;
    const nested = entry.body.findIndex((inner) => inner.kind === "index_operation");
    if (nested >= 0) throw fault(`${path}[${i}].for_each.body[${nested}]`, "an index operation cannot run inside for_each");
    checkNoNestedIndexOperations(entry.body, `${path}[${i}].for_each.body`);
  });
}

/** Whether a decoded plan is a batch of index operations (the coordinator runs those itself). */
export function isIndexOperationPlan(plan: Plan): boolean {
  return plan.entries.some((entry) => entry.kind === "index_operation");
}

/** Decodes and validates a whole `/v2/query` request body. Nothing executes before this returns. */
export function decodeRequest(body: Json): Plan {
  const request = objectAt(body, "$");
  allowOnly(request, WIRE_FIELDS.request, "$");
  if (request.explain !== undefined && typeof request.explain !== "boolean") throw fault("$.explain", "must be true or false");
  const timeoutMs = request.timeout_ms === undefined || request.timeout_ms === null ? undefined : decodeTimeout(request.timeout_ms);
  const requestType = request.request_type;
  if (requestType !== "read" && requestType !== "write") throw fault("$.request_type", 'must be lowercase "read" or "write"');
  if (request.query === undefined) throw fault("$.query", "a request must include query");
  const [batchType, batchBody] = tagged(request.query, "$.query");
  if (batchType !== requestType) throw fault("$.query", `request_type ${requestType} does not match the ${batchType} batch`);
  const batch = objectAt(batchBody, `$.query.${batchType}`);
  allowOnly(batch, WIRE_FIELDS.batch, `$.query.${batchType}`);
  const entriesJson = arrayAt(batch.entries, `$.query.${batchType}.entries`);
  if (entriesJson.length === 0) throw fault(`$.query.${batchType}.entries`, "a batch needs at least one entry");
  if (entriesJson.length > BATCH_ENTRIES_MAX) {
    throw new SilkError("limit_exceeded", `a batch holds at most ${BATCH_ENTRIES_MAX} entries, this one ${entriesJson.length}`);
  }
  const entries = entriesJson.map((item, i) => decodeEntry(item, `$.query.${batchType}.entries[${i}]`));
  checkNoNestedIndexOperations(entries, `$.query.${batchType}.entries`);
  checkIndexOperations(entries, `$.query.${batchType}.entries`);
  const returns = batch.returns === undefined ? [] : stringList(batch.returns, `$.query.${batchType}.returns`);
  if (new Set(returns).size !== returns.length) throw fault(`$.query.${batchType}.returns`, "a name is returned twice");
  if (requestType === "read" && entriesContainMutation(entries)) {
    throw new SilkError("write_in_read", "a read batch contains a mutation; send it with request_type write");
  }
  const supplied = request.parameters === undefined || request.parameters === null ? {} : objectAt(request.parameters, "$.parameters");
  for (const [name, value] of Object.entries(supplied)) {
    checkWellFormed(name, "$.parameters");
    checkInputValue(value, `$.parameters.${name}`);
  }
  const parameters = request.parameter_types === undefined || request.parameter_types === null ? supplied : checkParameters(request.parameter_types, supplied);
  return {
    requestType,
    queryName: typeof request.query_name === "string" ? request.query_name : undefined,
    entries,
    returns,
    parameters,
    ...(request.explain === true ? { explain: true } : {}),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  };
}

/** `timeout_ms`: whole milliseconds from 1 to QUERY_TIMEOUT_MS_MAX. */
function decodeTimeout(value: Json): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1 || value > QUERY_TIMEOUT_MS_MAX) {
    throw fault("$.timeout_ms", `expected whole milliseconds from 1 to ${QUERY_TIMEOUT_MS_MAX}`);
  }
  return value;
}

/** The `model` of an `embed` expression: a model name the provider is given as it is (protocol/embedding.ts). */
function embedModelAt(value: Json, path: string): string {
  const model = stringAt(value, path);
  const problem = embedModelNameProblem(model);
  if (problem !== undefined) throw fault(path, problem);
  return model;
}
