/**
 * The wire JSON of the operation tree, as TypeScript types: every shape the decoder (tree.ts and the tree-*.ts
 * decoders) accepts, and the only shapes the HelixQL compiler (helixql/query-*.ts) may build, so `tsc` rejects a
 * misspelled step name, an unknown key or a value of the wrong type in a tree the compiler writes.
 *
 * Each family of externally tagged objects (`{"out": {"input": .., "label": ..}}`) is one interface of bodies by
 * tag (`WireStepBodies`, `WireExprBodies`, ...) and its union of one-key objects (`Tagged<Bodies>`); unit variants
 * are bare strings (`"context"`, `"id"`). The step decoder switches over `WireStepTag` (tree.ts, tree-steps.ts,
 * tree-rows.ts), each switch ending in `unreachable`, so a step tag the type has and the decoder lacks, or the
 * reverse, does not compile; and it checks each step's fields against `WIRE_STEP_FIELDS` (or, for the steps of two
 * forms, `WIRE_STEP_FORM_FIELDS`), made from a table tsc holds to WireStepBodies both ways, so neither can a field.
 *
 * Where the decoder also accepts `null` for an absent optional key (HelixDB's SDKs send it), the type allows `null`.
 * See docs/OPERATION_TREE.md for what each step does.
 */
import type { MathFunction } from "./math-functions.js";
import type { RecordKind } from "./records.js";

/** The union of one-key objects `{tag: body}`, one for each tag of a table of bodies. */
export type Tagged<Bodies> = { [K in keyof Bodies]: { readonly [P in K]: Bodies[P] } }[keyof Bodies];

/** An ID: a non-negative integer, a decimal string, or a bigint (a lossless parse of a JSON integer beyond 2^53). */
export type WireId = number | string | bigint;

/** An integer literal: a safe JSON number, a decimal string, or a bigint. */
export type WireInteger = number | string | bigint;

// ---- Literals ---------------------------------------------------------------------------------------------------

export interface WireLiteralBodies {
  readonly bool: boolean;
  readonly i64: WireInteger;
  readonly f64: number | bigint;
  readonly f32: number | bigint;
  readonly string: string;
  /** Epoch milliseconds or an ISO 8601 string. */
  readonly date_time: number | string;
  readonly bytes: readonly number[];
  readonly i64_array: readonly WireInteger[];
  readonly f64_array: readonly (number | bigint)[];
  readonly f32_array: readonly (number | bigint)[];
  readonly string_array: readonly string[];
  readonly array: readonly WireLiteral[];
  readonly object: { readonly [key: string]: WireLiteral };
}

export type WireLiteral = "null" | Tagged<WireLiteralBodies>;

// ---- References, inputs, bounds -----------------------------------------------------------------------------

export interface WireRefBodies {
  readonly ids: readonly WireId[];
  readonly var: string;
  readonly param: string;
}

/** Where a source step takes its records from. */
export type WireRef = "all" | Tagged<WireRefBodies>;

export interface WireInputBodies {
  readonly value: WireLiteral;
  readonly expr: WireExpr;
  /** Silk's: a parameter the call may omit; then the property is left out of the mutation. */
  readonly optional_param: string;
}

/** A mutation's value. */
export type WireInput = Tagged<WireInputBodies>;

/** A paging bound: a non-negative integer or an expression. */
export type WireBound = { readonly literal: number } | { readonly expr: WireExpr };

/** k of a search or of RRF: a mutation value, or HelixDB's stream bound `{"literal": n}`. */
export type WireCount = WireInput | { readonly literal: number | bigint };

/** `[name, value]` pairs of a mutation. */
export type WireAssignments = readonly (readonly [string, WireInput])[];

// ---- Expressions and predicates -------------------------------------------------------------------------------

export interface WireArithmetic {
  readonly left: WireExpr;
  readonly right: WireExpr;
}

export interface WireExprBodies {
  readonly property: string;
  readonly constant: WireLiteral;
  readonly param: string;
  readonly count: { readonly traversal: WireStep };
  readonly add: WireArithmetic;
  readonly sub: WireArithmetic;
  readonly mul: WireArithmetic;
  readonly div: WireArithmetic;
  readonly mod: WireArithmetic;
  readonly var: string;
  readonly traversal: WireStep;
  /** Silk's: the first element of a sub-traversal's JSON form, or null. */
  readonly first: WireStep;
  readonly call: { readonly fn: MathFunction; readonly args: readonly WireExpr[] };
  readonly embed: { readonly text: WireExpr; readonly model?: string };
  readonly neg: { readonly expr: WireExpr };
  readonly case: { readonly when_then: readonly { readonly when: WirePredicate; readonly then: WireExpr }[]; readonly else_expr?: WireExpr | null };
}

/** The unit expressions, written as bare strings. */
export type WireExprUnit = "id" | "timestamp" | "date_time_now";

export type WireExpr = WireExprUnit | Tagged<WireExprBodies>;

export type WireCompareOp = "eq" | "neq" | "gt" | "gte" | "lt" | "lte";

export interface WirePredicateBodies {
  readonly eq: WireArithmetic;
  readonly neq: WireArithmetic;
  readonly gt: WireArithmetic;
  readonly gte: WireArithmetic;
  readonly lt: WireArithmetic;
  readonly lte: WireArithmetic;
  readonly compare: { readonly left: WireExpr; readonly op: WireCompareOp; readonly right: WireExpr };
  readonly between: { readonly value: WireExpr; readonly min: WireExpr; readonly max: WireExpr };
  readonly is_null: { readonly property: string };
  readonly is_not_null: { readonly property: string };
  readonly has_key: { readonly property: string };
  readonly contains: { readonly value: WireExpr; readonly substring: WireExpr };
  readonly starts_with: { readonly value: WireExpr; readonly prefix: WireExpr };
  readonly ends_with: { readonly value: WireExpr; readonly suffix: WireExpr };
  readonly is_in: { readonly value: WireExpr; readonly values: WireExpr };
  readonly and: { readonly predicates: readonly WirePredicate[] };
  readonly or: { readonly predicates: readonly WirePredicate[] };
  readonly not: { readonly predicate: WirePredicate };
  readonly exists: { readonly traversal: WireStep };
}

export type WirePredicate = Tagged<WirePredicateBodies>;

// ---- Steps ------------------------------------------------------------------------------------------------------

/** A sub-traversal of a branch step; its chain usually starts at `"context"`. */
export interface WireSubTraversal {
  readonly root: WireStep;
}

export type WireProjection =
  | { readonly property: { readonly source: string; readonly alias?: string } }
  | { readonly expr: { readonly alias: string; readonly expr: WireExpr } };

export type WireBindingTarget = "current" | { readonly binding: string };

export interface WireBindingValueRef {
  readonly target: WireBindingTarget;
  readonly source: string;
}

export type WireBindingProjection =
  | { readonly property: { readonly target: WireBindingTarget; readonly source: string; readonly alias: string } }
  | { readonly coalesce: { readonly refs: readonly WireBindingValueRef[]; readonly alias: string } };

export type WireOrder = "asc" | "desc";
export type WireOrderRule = "helixdb_v3" | "helixql";
export type WireDirection = "out" | "in" | "both";
export type WireEmit = "none" | "before" | "after" | "all";
export type WireMmrDistance = "cosine" | "euclidean" | "dotproduct";

interface Piped {
  readonly input: WireStep;
}

interface Labelled extends Piped {
  readonly label?: string | null;
}

interface Named extends Piped {
  readonly name: string;
}

interface Mutating {
  readonly label: string;
  readonly properties?: WireAssignments;
}

/** `shortest_path` in Silk's form: `input` sources, `to` targets. */
export interface WireShortestPath extends Labelled {
  readonly to: WireRef;
  readonly direction?: WireDirection;
  readonly algorithm?: "bfs" | "dijkstra" | "astar";
  readonly weight?: WireExpr;
  readonly heuristic?: string;
}

/** `shortest_path` in HelixDB's v3 form: one source node, one target, at most `max_depth` hops. */
export interface WireHelixShortestPath {
  readonly source: WireRef;
  readonly target: WireRef;
  readonly label?: string | null;
  readonly direction?: WireDirection;
  readonly max_depth: number;
}

/** `group_count` in Silk's form: one row per combination of the `properties`' values. */
export interface WireGroupCount extends Piped {
  readonly properties: readonly string[];
}

/** `group_count` in HelixDB's v3 form: one `property`, rows ordered by its value. */
export interface WireHelixGroupCount extends Piped {
  readonly property: string;
}

/** `aggregate_by` in Silk's form: one row per combination of the `properties`' values, in a `shape`. */
export interface WireAggregateBy extends Piped {
  readonly properties: readonly string[];
  readonly shape?: "keyed" | "count_data";
}

/** `aggregate_by` in HelixDB's v3 form: one aggregate, `function` of one `property`. */
export interface WireHelixAggregateBy extends Piped {
  readonly function: "count" | "sum" | "min" | "max" | "mean";
  readonly property: string;
}

/**
 * The steps whose body has two forms with fields of their own: the decoder tells them apart by a key only one form
 * has, then checks that form's fields (tree.ts `decodeGrouping`, `decodeShortestPath`). WireStepBodies takes their
 * bodies from here, so a form is listed once.
 */
export interface WireStepForms {
  readonly group_count: { readonly silk: WireGroupCount; readonly helix: WireHelixGroupCount };
  readonly aggregate_by: { readonly silk: WireAggregateBy; readonly helix: WireHelixAggregateBy };
  readonly shortest_path: { readonly silk: WireShortestPath; readonly helix: WireHelixShortestPath };
}

type FormsOf<Tag extends keyof WireStepForms> = WireStepForms[Tag][keyof WireStepForms[Tag]];

export interface WireRepeatConfig {
  readonly traversal: WireSubTraversal;
  readonly times?: number | null;
  readonly until?: WirePredicate | null;
  readonly emit?: WireEmit | null;
  readonly emit_predicate?: WirePredicate | null;
  readonly max_depth?: number | null;
}

/** What every search step takes; the query under `query` (Silk's) or HelixDB's own name for it. */
interface WireSearch {
  readonly label: string;
  readonly k: WireCount;
  readonly tenant_value?: WireInput | null;
}

export interface WireVectorSearch extends WireSearch {
  readonly query?: WireInput;
  readonly query_vector?: WireInput;
  /** The beam width, a whole number from 1 to VECTOR_EF_MAX. */
  readonly ef?: number | null;
}

export interface WireTextSearch extends WireSearch {
  readonly query?: WireInput;
  readonly query_text?: WireInput;
  /** Absent: every text index of the label. */
  readonly property?: string | null;
}

/** A vector search of nodes or edges names the indexed property; one of vectors searches their own vector. */
type WirePropertySearch = WireVectorSearch & { readonly property: string };
type Within<T> = T & Piped;

export interface WireStepBodies {
  // Sources.
  readonly context: { readonly depth: number };
  readonly nodes: { readonly reference: WireRef };
  readonly edges: { readonly reference: WireRef };
  readonly vectors: { readonly reference: WireRef };
  readonly nodes_where: { readonly predicate: WirePredicate };
  readonly edges_where: { readonly predicate: WirePredicate };
  readonly vectors_where: { readonly predicate: WirePredicate };
  // Traversals.
  readonly out: Labelled;
  readonly in: Labelled;
  readonly both: Labelled;
  readonly out_e: Labelled;
  readonly in_e: Labelled;
  readonly both_e: Labelled;
  readonly out_n: Piped;
  readonly in_n: Piped;
  readonly other_n: Piped;
  // Filters.
  readonly has: Piped & { readonly property: string; readonly value: WireLiteral };
  readonly has_label: Piped & { readonly label: string };
  readonly has_key: Piped & { readonly property: string };
  readonly where: Piped & { readonly predicate: WirePredicate };
  readonly dedup: Piped;
  readonly within: Piped & { readonly variable: string };
  readonly without: Piped & { readonly variable: string };
  // Paging.
  readonly limit: Piped & { readonly count: WireBound };
  readonly skip: Piped & { readonly count: WireBound };
  readonly range: Piped & { readonly start: WireBound; readonly end: WireBound };
  // Terminals.
  readonly count: Piped;
  readonly id: Piped;
  readonly label: Piped;
  /** `negate` is Silk's: true when the input yields nothing. */
  readonly exists: Piped & { readonly negate?: boolean };
  readonly values: Piped & { readonly properties: readonly string[] };
  readonly value_map: Piped & { readonly properties?: readonly string[] | null };
  readonly project: Piped & { readonly projections?: readonly WireProjection[]; readonly all?: boolean; readonly exclude?: readonly string[] };
  /** By a `property` (HelixDB's form) or an `expr` (Silk's), not both. */
  readonly order_by: Piped & { readonly property?: string; readonly expr?: WireExpr; readonly order?: WireOrder; readonly rule?: WireOrderRule };
  readonly order_by_multiple: Piped & { readonly orderings: readonly (readonly [string, WireOrder])[] };
  // Branches.
  readonly union: Piped & { readonly traversals: readonly WireSubTraversal[] };
  readonly coalesce: Piped & { readonly traversals: readonly WireSubTraversal[] };
  readonly optional: Piped & { readonly traversal: WireSubTraversal };
  readonly intersect: Piped & { readonly traversal: WireSubTraversal };
  readonly choose: Piped & {
    readonly condition: WirePredicate;
    readonly then_traversal: WireSubTraversal;
    readonly else_traversal?: WireSubTraversal | null;
  };
  readonly repeat: Piped & { readonly config: WireRepeatConfig };
  // Streams as values, and named streams.
  readonly fold: Piped;
  readonly unfold: Piped;
  readonly group: Piped & { readonly property: string };
  readonly inject: { readonly input?: WireStep | null; readonly variable: string };
  readonly as: Named;
  readonly store: Named;
  readonly select: Named;
  readonly edge_has: Piped & { readonly property: string; readonly value: WireInput };
  readonly edge_has_label: Piped & { readonly label: string };
  // Rows.
  readonly path: Piped;
  readonly simple_path: Piped;
  readonly bind: Named;
  readonly project_bindings: Piped & { readonly projections: readonly WireBindingProjection[]; readonly distinct?: boolean };
  readonly edge_properties: Piped;
  readonly with_sack: Piped & { readonly initial: WireLiteral };
  readonly sack_set: Piped & { readonly property: string };
  readonly sack_add: Piped & { readonly property: string };
  readonly sack_get: Piped;
  // Aggregates and paths.
  readonly aggregate: Piped & { readonly fn: "sum" | "avg" | "min" | "max"; readonly property?: string | null };
  /** Silk's form (`properties`), or HelixDB's (one `property`, rows ordered by its value). */
  readonly group_count: FormsOf<"group_count">;
  /** Silk's form (`properties`, `shape`), or HelixDB's (`function` of one `property`). */
  readonly aggregate_by: FormsOf<"aggregate_by">;
  readonly shortest_path: FormsOf<"shortest_path">;
  // Search and rerank.
  readonly vector_search_nodes: WirePropertySearch;
  readonly vector_search_edges: WirePropertySearch;
  readonly vector_search_vectors: WireVectorSearch;
  readonly vector_search_nodes_within: Within<WirePropertySearch>;
  readonly vector_search_edges_within: Within<WirePropertySearch>;
  readonly vector_search_vectors_within: Within<WireVectorSearch>;
  readonly text_search_nodes: WireTextSearch;
  readonly text_search_edges: WireTextSearch;
  readonly text_search_vectors: WireTextSearch;
  readonly text_search_nodes_within: Within<WireTextSearch>;
  readonly text_search_edges_within: Within<WireTextSearch>;
  readonly text_search_vectors_within: Within<WireTextSearch>;
  readonly rerank_rrf: Piped & { readonly k?: WireCount | null };
  readonly rerank_mmr: Piped & { readonly lambda: WireInput; readonly distance?: WireMmrDistance | null };
  // Mutations.
  readonly add_n: Mutating & { readonly input?: WireStep };
  readonly add_e: Mutating & Piped & { readonly to: WireRef };
  readonly add_v: Mutating & { readonly vector: WireInput };
  readonly set_property: Piped & { readonly name: string; readonly value: WireInput };
  readonly update: Piped & { readonly properties?: WireAssignments };
  readonly remove_property: Named;
  readonly drop: Piped;
  readonly drop_edge: Piped & { readonly to: WireRef };
  readonly drop_edge_labeled: Piped & { readonly to: WireRef; readonly label: string };
  readonly drop_edge_by_id: { readonly input?: WireStep | null; readonly edges: WireRef };
  readonly upsert_n: Mutating & Piped;
  readonly upsert_v: Mutating & Piped & { readonly vector?: WireInput | null };
  readonly upsert_e: Mutating & Piped & { readonly from: WireRef; readonly to: WireRef };
}

export type WireStepTag = keyof WireStepBodies;

// ---- Each step's fields, at run time ---------------------------------------------------------------------------

/** Every key of any member of T (`keyof` of a union is only the keys all its members share). */
type KeysOf<T> = T extends unknown ? keyof T : never;

/**
 * The fields of a wire body, written `{field: true, ..}`: tsc refuses a field the type lacks (an excess property) and
 * a field of the type the set leaves out (a missing property), so a list made from it holds the type's fields
 * exactly. The order is the order a refusal names them in (`unknown field (expected input, label)`).
 */
export type WireFieldSet<T> = { readonly [K in KeysOf<T> & string]: true };

/** The steps with one form: the decoder checks their fields, before anything else, with WIRE_STEP_FIELDS. */
export type WireSingleFormStepTag = Exclude<WireStepTag, keyof WireStepForms>;

/**
 * Every field of every step, one literal per step (never a shared constant, whose surplus fields tsc would not
 * flag). This is the decoder's list of the fields a step accepts (tree.ts `decodeStep`), so a field the type has and
 * the decoder refuses, or the reverse, does not compile; and its keys are the step tags the decoder knows.
 */
const STEP_FIELD_SETS: { readonly [Tag in WireSingleFormStepTag]: WireFieldSet<WireStepBodies[Tag]> } = {
  context: { depth: true },
  nodes: { reference: true },
  edges: { reference: true },
  vectors: { reference: true },
  nodes_where: { predicate: true },
  edges_where: { predicate: true },
  vectors_where: { predicate: true },
  out: { input: true, label: true },
  in: { input: true, label: true },
  both: { input: true, label: true },
  out_e: { input: true, label: true },
  in_e: { input: true, label: true },
  both_e: { input: true, label: true },
  out_n: { input: true },
  in_n: { input: true },
  other_n: { input: true },
  has: { input: true, property: true, value: true },
  has_label: { input: true, label: true },
  has_key: { input: true, property: true },
  where: { input: true, predicate: true },
  dedup: { input: true },
  within: { input: true, variable: true },
  without: { input: true, variable: true },
  limit: { input: true, count: true },
  skip: { input: true, count: true },
  range: { input: true, start: true, end: true },
  count: { input: true },
  id: { input: true },
  label: { input: true },
  exists: { input: true, negate: true },
  values: { input: true, properties: true },
  value_map: { input: true, properties: true },
  project: { input: true, projections: true, all: true, exclude: true },
  order_by: { input: true, property: true, expr: true, order: true, rule: true },
  order_by_multiple: { input: true, orderings: true },
  union: { input: true, traversals: true },
  coalesce: { input: true, traversals: true },
  optional: { input: true, traversal: true },
  intersect: { input: true, traversal: true },
  choose: { input: true, condition: true, then_traversal: true, else_traversal: true },
  repeat: { input: true, config: true },
  fold: { input: true },
  unfold: { input: true },
  group: { input: true, property: true },
  inject: { input: true, variable: true },
  as: { input: true, name: true },
  store: { input: true, name: true },
  select: { input: true, name: true },
  edge_has: { input: true, property: true, value: true },
  edge_has_label: { input: true, label: true },
  path: { input: true },
  simple_path: { input: true },
  bind: { input: true, name: true },
  project_bindings: { input: true, projections: true, distinct: true },
  edge_properties: { input: true },
  with_sack: { input: true, initial: true },
  sack_set: { input: true, property: true },
  sack_add: { input: true, property: true },
  sack_get: { input: true },
  aggregate: { input: true, fn: true, property: true },
  vector_search_nodes: { label: true, property: true, query: true, query_vector: true, k: true, tenant_value: true, ef: true },
  vector_search_edges: { label: true, property: true, query: true, query_vector: true, k: true, tenant_value: true, ef: true },
  vector_search_vectors: { label: true, query: true, query_vector: true, k: true, tenant_value: true, ef: true },
  vector_search_nodes_within: { input: true, label: true, property: true, query: true, query_vector: true, k: true, tenant_value: true, ef: true },
  vector_search_edges_within: { input: true, label: true, property: true, query: true, query_vector: true, k: true, tenant_value: true, ef: true },
  vector_search_vectors_within: { input: true, label: true, query: true, query_vector: true, k: true, tenant_value: true, ef: true },
  text_search_nodes: { label: true, property: true, query: true, query_text: true, k: true, tenant_value: true },
  text_search_edges: { label: true, property: true, query: true, query_text: true, k: true, tenant_value: true },
  text_search_vectors: { label: true, property: true, query: true, query_text: true, k: true, tenant_value: true },
  text_search_nodes_within: { input: true, label: true, property: true, query: true, query_text: true, k: true, tenant_value: true },
  text_search_edges_within: { input: true, label: true, property: true, query: true, query_text: true, k: true, tenant_value: true },
  text_search_vectors_within: { input: true, label: true, property: true, query: true, query_text: true, k: true, tenant_value: true },
  rerank_rrf: { input: true, k: true },
  rerank_mmr: { input: true, lambda: true, distance: true },
  add_n: { input: true, label: true, properties: true },
  add_e: { input: true, label: true, to: true, properties: true },
  add_v: { label: true, vector: true, properties: true },
  set_property: { input: true, name: true, value: true },
  update: { input: true, properties: true },
  remove_property: { input: true, name: true },
  drop: { input: true },
  drop_edge: { input: true, to: true },
  drop_edge_labeled: { input: true, to: true, label: true },
  drop_edge_by_id: { input: true, edges: true },
  upsert_n: { input: true, label: true, properties: true },
  upsert_v: { input: true, label: true, vector: true, properties: true },
  upsert_e: { input: true, label: true, from: true, to: true, properties: true },
};

/** The fields of each form of the two-form steps, checked against WireStepForms the same way. */
const STEP_FORM_FIELD_SETS: { readonly [Tag in keyof WireStepForms]: { readonly [Form in keyof WireStepForms[Tag]]: WireFieldSet<WireStepForms[Tag][Form]> } } = {
  group_count: { silk: { input: true, properties: true }, helix: { input: true, property: true } },
  aggregate_by: { silk: { input: true, properties: true, shape: true }, helix: { input: true, function: true, property: true } },
  shortest_path: {
    silk: { input: true, to: true, label: true, direction: true, algorithm: true, weight: true, heuristic: true },
    helix: { source: true, target: true, label: true, direction: true, max_depth: true },
  },
};

function fieldList(set: object): readonly string[] {
  return Object.freeze(Object.keys(set));
}

function fieldLists<Key extends string>(sets: { readonly [K in Key]: object }): { readonly [K in Key]: readonly string[] } {
  return Object.fromEntries(Object.entries<object>(sets).map(([key, set]) => [key, fieldList(set)])) as { readonly [K in Key]: readonly string[] };
}

/** The fields each one-form step accepts, as the decoder's `allowOnly` takes them. */
export const WIRE_STEP_FIELDS = fieldLists<WireSingleFormStepTag>(STEP_FIELD_SETS);

/** The fields each form of a two-form step accepts. */
export const WIRE_STEP_FORM_FIELDS: { readonly [Tag in keyof WireStepForms]: { readonly [Form in keyof WireStepForms[Tag]]: readonly string[] } } = {
  group_count: fieldLists(STEP_FORM_FIELD_SETS.group_count),
  aggregate_by: fieldLists(STEP_FORM_FIELD_SETS.aggregate_by),
  shortest_path: fieldLists(STEP_FORM_FIELD_SETS.shortest_path),
};

/** The fields of a wire type T as a list, checked both ways as a WireFieldSet. */
function fieldsOf<T>(set: WireFieldSet<T>): readonly string[] {
  return fieldList(set);
}

/** The body under `tag` of a union of one-key objects (`{"property": body} | {"expr": body}`). */
type BodyOf<Union, Tag extends string> = Union extends { readonly [K in Tag]: infer Body } ? Body : never;

/** The fields of every predicate, checked against WirePredicateBodies both ways; its keys are the predicate tags. */
const PREDICATE_FIELD_SETS: { readonly [Tag in keyof WirePredicateBodies]: WireFieldSet<WirePredicateBodies[Tag]> } = {
  eq: { left: true, right: true },
  neq: { left: true, right: true },
  gt: { left: true, right: true },
  gte: { left: true, right: true },
  lt: { left: true, right: true },
  lte: { left: true, right: true },
  compare: { left: true, op: true, right: true },
  between: { value: true, min: true, max: true },
  is_null: { property: true },
  is_not_null: { property: true },
  has_key: { property: true },
  contains: { value: true, substring: true },
  starts_with: { value: true, prefix: true },
  ends_with: { value: true, suffix: true },
  is_in: { value: true, values: true },
  and: { predicates: true },
  or: { predicates: true },
  not: { predicate: true },
  exists: { traversal: true },
};

/** The fields each predicate accepts (tree.ts `decodePredicate` checks them before decoding). */
export const WIRE_PREDICATE_FIELDS = fieldLists<keyof WirePredicateBodies>(PREDICATE_FIELD_SETS);

export function isWirePredicateTag(tag: string): tag is keyof WirePredicateBodies {
  return Object.hasOwn(PREDICATE_FIELD_SETS, tag);
}

/** The expressions whose body is an object of fields (the others are a string, a literal or a step). */
export type WireExprObjectTag = "count" | "add" | "sub" | "mul" | "div" | "mod" | "call" | "embed" | "neg" | "case";

const EXPR_FIELD_SETS: { readonly [Tag in WireExprObjectTag]: WireFieldSet<WireExprBodies[Tag]> } = {
  count: { traversal: true },
  add: { left: true, right: true },
  sub: { left: true, right: true },
  mul: { left: true, right: true },
  div: { left: true, right: true },
  mod: { left: true, right: true },
  call: { fn: true, args: true },
  embed: { text: true, model: true },
  neg: { expr: true },
  case: { when_then: true, else_expr: true },
};

/** The fields of each expression with an object body (tree.ts and tree-computed.ts check them). */
export const WIRE_EXPR_FIELDS = fieldLists<WireExprObjectTag>(EXPR_FIELD_SETS);

/**
 * The fields of the other objects the decoder reads (tree.ts, tree-computed.ts, tree-steps.ts, tree-rows.ts), each
 * list made from its wire type the same way, so none can drift from what the compiler builds.
 */
export const WIRE_FIELDS = {
  request: fieldsOf<WireRequest>({ request_type: true, query_name: true, query: true, parameters: true, parameter_types: true, explain: true, timeout_ms: true }),
  batch: fieldsOf<WireBatch>({ entries: true, returns: true }),
  query: fieldsOf<WireEntryBodies["query"]>({ name: true, root: true, condition: true }),
  for_each: fieldsOf<WireEntryBodies["for_each"]>({ param: true, var: true, as: true, body: true }),
  case_branch: fieldsOf<WireExprBodies["case"]["when_then"][number]>({ when: true, then: true }),
  property_projection: fieldsOf<BodyOf<WireProjection, "property">>({ source: true, alias: true }),
  expr_projection: fieldsOf<BodyOf<WireProjection, "expr">>({ alias: true, expr: true }),
  sub_traversal: fieldsOf<WireSubTraversal>({ root: true }),
  repeat_config: fieldsOf<WireRepeatConfig>({ traversal: true, times: true, until: true, emit: true, emit_predicate: true, max_depth: true }),
  binding_value_ref: fieldsOf<WireBindingValueRef>({ target: true, source: true }),
  property_binding_projection: fieldsOf<BodyOf<WireBindingProjection, "property">>({ target: true, source: true, alias: true }),
  coalesce_binding_projection: fieldsOf<BodyOf<WireBindingProjection, "coalesce">>({ refs: true, alias: true }),
} as const;

/** Every step tag of the wire, at run time: the decoder refuses any other. */
export function isWireStepTag(tag: string): tag is WireStepTag {
  return Object.hasOwn(STEP_FIELD_SETS, tag) || Object.hasOwn(STEP_FORM_FIELD_SETS, tag);
}

export function isSingleFormStepTag(tag: WireStepTag): tag is WireSingleFormStepTag {
  return Object.hasOwn(STEP_FIELD_SETS, tag);
}

/** One step; `"context"` is the current element of the sub-traversal it starts. */
export type WireStep = "context" | Tagged<WireStepBodies>;

// ---- Index operations -------------------------------------------------------------------------------------------

/** Silk's form of an index: by kind (node when absent), label and property. */
interface WireIndexName {
  readonly label: string;
  readonly property: string;
  readonly kind?: RecordKind | null;
}

/** Silk's `create_index`: the name, `type` (or the earlier `unique`) and that type's options. */
export interface WireCreateIndex extends WireIndexName {
  readonly type?: "equality" | "range" | "unique" | "vector" | "text" | null;
  readonly unique?: boolean;
  readonly metric?: string | null;
  readonly dimension?: number | null;
  readonly tenant_property?: string | null;
  readonly ef?: number | null;
  readonly analyzer?: string | null;
  readonly positions?: boolean;
}

interface WireHelixIndexName {
  readonly label: string;
  readonly property: string;
}

export interface WireHelixSpecBodies {
  readonly node_equality: WireHelixIndexName & { readonly unique?: boolean };
  readonly node_range: WireHelixIndexName & { readonly direction?: WireOrder | null };
  readonly edge_equality: WireHelixIndexName;
  readonly edge_range: WireHelixIndexName & { readonly direction?: WireOrder | null };
  readonly node_vector: WireHelixIndexName & { readonly dimension: number; readonly metric: string; readonly tenant_property?: string | null; readonly ef?: number | null };
  readonly edge_vector: WireHelixIndexName & { readonly dimension: number; readonly metric: string; readonly tenant_property?: string | null; readonly ef?: number | null };
  readonly node_text: WireHelixIndexName & { readonly tenant_property?: string | null };
  readonly edge_text: WireHelixIndexName & { readonly tenant_property?: string | null };
}

/** HelixDB's index spec, `{"<kind>_<family>": {..}}`. */
export type WireHelixSpec = Tagged<WireHelixSpecBodies>;

/** HelixDB's operation ID of the operation that built an index. */
interface WireOperationId {
  readonly operation_id: string;
}

export interface WireIndexOperationBodies {
  readonly create_index: WireCreateIndex | { readonly spec: WireHelixSpec; readonly if_not_exists?: boolean };
  readonly drop_index: WireIndexName | { readonly spec: WireHelixSpec };
  readonly get_index_operation: WireIndexName | WireOperationId;
  readonly retry_index_operation: WireIndexName | WireOperationId;
  readonly abort_index_operation: WireIndexName | WireOperationId;
}

export type WireIndexOperationTag = keyof WireIndexOperationBodies;

export type WireIndexOperation = Tagged<WireIndexOperationBodies>;

// ---- Entries and the request ---------------------------------------------------------------------------------

export interface WireConditionBodies {
  readonly var_empty: string;
  readonly var_not_empty: string;
  readonly var_min_size: readonly [string, number];
}

/** When an entry runs. */
export type WireCondition = "prev_not_empty" | Tagged<WireConditionBodies>;

export interface WireEntryBodies {
  readonly query: { readonly name?: string | null; readonly root: WireStep | WireIndexOperation; readonly condition?: WireCondition | null };
  /** Over an array parameter (`param`) or an earlier entry's records (`var`, each named `as`). */
  readonly for_each: { readonly param?: string | null; readonly var?: string | null; readonly as?: string | null; readonly body: readonly WireEntry[] };
}

export type WireEntry = Tagged<WireEntryBodies>;

export interface WireBatch {
  readonly entries: readonly WireEntry[];
  readonly returns?: readonly string[];
}

/** What a request asks besides its batch. */
interface WireRequestOptions {
  readonly query_name?: string;
  /** Call values by parameter name (checked by the decoder, not typed here: they are the caller's data). */
  readonly parameters?: Readonly<Record<string, unknown>> | null;
  readonly parameter_types?: Readonly<Record<string, unknown>> | null;
  readonly explain?: boolean;
  readonly timeout_ms?: number | null;
}

/** A whole `POST /v2/query` body: the batch is tagged with the request type. */
export type WireRequest =
  | (WireRequestOptions & { readonly request_type: "read"; readonly query: { readonly read: WireBatch } })
  | (WireRequestOptions & { readonly request_type: "write"; readonly query: { readonly write: WireBatch } });
