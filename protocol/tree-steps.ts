/**
 * Decoders of the operation tree's branching and stream-shaping steps (`union`, `coalesce`, `optional`, `choose`,
 * `intersect`, `repeat`, `fold`, `unfold`, `group`, `order_by_multiple`, `inject`, `as`, `store`, `select`, `edge_has`,
 * `edge_has_label`, `drop_edge`, `drop_edge_labeled`, `drop_edge_by_id`) and of search and rerank
 * (`vector_search_*`, `text_search_*`, `rerank_rrf`, `rerank_mmr`), kept apart from tree.ts for size. Field names
 * follow HelixDB's v3 wire shape; see docs/OPERATION_TREE.md.
 *
 * The decoders of steps, predicates, inputs and references are passed in, so this module does not import tree.ts
 * (which imports it).
 */
import { SilkError, unreachable } from "./errors.js";
import { BRANCH_TRAVERSALS_MAX, REPEAT_ITERATIONS_MAX } from "./limits.js";
import { isVectorEf, VECTOR_EF_MAX, VECTOR_FIELD } from "./indexes.js";
import type { RecordKind } from "./records.js";
import type { EmitBehavior, Input, MmrDistance, Order, Predicate, Ref, RepeatConfig, Step } from "./tree.js";
import { allowOnly, arrayAt, fault, labelAt, objectAt, stringAt, tagged, type Json } from "./tree-json.js";
import { WIRE_FIELDS, type WireStepTag } from "./tree-wire.js";

/** HelixDB's default `max_depth` of a `repeat` that sets neither it nor `times`. */
export const REPEAT_DEPTH_DEFAULT = 100;

export interface StepDecoders {
  step(value: Json, path: string, depth: number): Step;
  predicate(value: Json, path: string, depth: number): Predicate;
  input(value: Json, path: string): Input;
  ref(value: Json, path: string): Ref;
}

type SearchTag = Extract<WireStepTag, `${"vector" | "text"}_search_${string}`>;

const EXTENDED_STEP_TAGS = [
  "union", "coalesce", "optional", "choose", "intersect", "repeat", "fold", "unfold", "group", "order_by_multiple", "inject", "as",
  "store", "select", "edge_has", "edge_has_label", "drop_edge", "drop_edge_labeled", "drop_edge_by_id",
  "rerank_rrf", "rerank_mmr",
] as const satisfies readonly WireStepTag[];

/** The steps decodeExtendedStep decodes: the branching and stream-shaping steps, search and rerank. */
export type ExtendedStepTag = (typeof EXTENDED_STEP_TAGS)[number] | SearchTag;

const EXTENDED: ReadonlySet<string> = new Set(EXTENDED_STEP_TAGS);

function isSearchTag(tag: WireStepTag): tag is SearchTag {
  return tag.startsWith("vector_search_") || tag.startsWith("text_search_");
}

export function isExtendedStepTag(tag: WireStepTag): tag is ExtendedStepTag {
  return EXTENDED.has(tag) || isSearchTag(tag);
}

const SEARCH_KINDS: Readonly<Record<string, RecordKind>> = { nodes: "node", edges: "edge", vectors: "vector" };
const MMR_DISTANCES: readonly MmrDistance[] = ["cosine", "euclidean", "dotproduct"];

type Decoding = { readonly object: Record<string, Json>; readonly at: string; readonly depth: number; readonly decoders: StepDecoders };

/** Decodes one step whose tag is an ExtendedStepTag; tree.ts `decodeStep` has checked its fields (WIRE_STEP_FIELDS). */
export function decodeExtendedStep(tag: ExtendedStepTag, object: Record<string, Json>, at: string, depth: number, decoders: StepDecoders): Step {
  const d: Decoding = { object, at, depth, decoders };
  const input = (): Step => decoders.step(object.input, `${at}.input`, depth + 1);
  const optionalInput = (): Step | undefined => (object.input === undefined || object.input === null ? undefined : input());
  switch (tag) {
    case "union":
    case "coalesce":
      return { op: tag, input: input(), traversals: traversalList(d) };
    case "optional":
    case "intersect":
      return { op: tag, input: input(), traversal: subTraversal(object.traversal, `${at}.traversal`, d) };
    case "choose":
      return {
        op: "choose",
        input: input(),
        condition: decoders.predicate(object.condition, `${at}.condition`, depth + 1),
        then: subTraversal(object.then_traversal, `${at}.then_traversal`, d),
        otherwise: object.else_traversal === undefined || object.else_traversal === null ? undefined : subTraversal(object.else_traversal, `${at}.else_traversal`, d),
      };
    case "repeat":
      return { op: "repeat", input: input(), config: repeatConfig(d) };
    case "fold":
    case "unfold":
      return { op: tag, input: input() };
    case "group": {
      const path = stringAt(object.property, `${at}.property`);
      // The row's own fields (HelixDB's rows are maps, where a grouping property of the same name would be lost).
      if (path === "count" || path === "ids") throw fault(`${at}.property`, `${JSON.stringify(path)} names a field of the group row itself`);
      return { op: "group", input: input(), path };
    }
    case "order_by_multiple":
      return { op: "order_by_multiple", input: input(), orderings: orderings(object.orderings, `${at}.orderings`), rule: "helixdb_v3" };
    case "inject":
      return { op: "inject", input: optionalInput(), variable: stringAt(object.variable, `${at}.variable`) };
    case "as":
    case "store":
    case "select":
      return { op: tag, input: input(), name: stringAt(object.name, `${at}.name`) };
    case "edge_has":
      return { op: "edge_has", input: input(), path: stringAt(object.property, `${at}.property`), value: decoders.input(object.value, `${at}.value`) };
    case "edge_has_label":
      return { op: "edge_has_label", input: input(), label: labelAt(object.label, `${at}.label`) };
    case "drop_edge":
      return { op: "drop_edge", input: input(), to: decoders.ref(object.to, `${at}.to`) };
    case "drop_edge_labeled":
      return { op: "drop_edge", input: input(), to: decoders.ref(object.to, `${at}.to`), label: labelAt(object.label, `${at}.label`) };
    case "drop_edge_by_id":
      return { op: "drop_edge_by_id", input: optionalInput(), edges: decoders.ref(object.edges, `${at}.edges`) };
    case "rerank_rrf":
      return { op: "rerank_rrf", input: input(), k: object.k === undefined || object.k === null ? undefined : positiveNumberInput(object.k, `${at}.k`, d) };
    case "rerank_mmr": {
      const distance = object.distance === undefined || object.distance === null ? "cosine" : stringAt(object.distance, `${at}.distance`);
      if (!(MMR_DISTANCES as readonly string[]).includes(distance)) throw fault(`${at}.distance`, `expected one of ${MMR_DISTANCES.join(", ")}`);
      return { op: "rerank_mmr", input: input(), lambda: lambdaInput(d), distance: distance as MmrDistance };
    }
    default:
      if (isSearchTag(tag)) return searchStep(tag, d);
      return unreachable(tag, "extended step");
  }
}

/**
 * `vector_search_<kinds>[_within]` and `text_search_<kinds>[_within]`: `{"input"? (the _within forms only), "label",
 * "property" (none for vectors' own vector; optional for text), "query", "k", "tenant_value"?}`; a vector search
 * also `"ef"?`, its beam width (a whole number from 1 to VECTOR_EF_MAX, over the index's own).
 */
function searchStep(tag: SearchTag, d: Decoding): Step {
  const [, op, kindName, within] = /^(vector_search|text_search)_(nodes|edges|vectors)(_within)?$/.exec(tag) ?? [];
  const kind = SEARCH_KINDS[kindName];
  const { object, at, decoders } = d;
  const vector = op === "vector_search";
  const ownVector = vector && kind === "vector";
  // HelixDB's SDKs name the query `query_vector` or `query_text`; Silk's `query` stays accepted.
  const helixKey = vector ? "query_vector" : "query_text";
  const label = labelAt(object.label, `${at}.label`);
  const absent = (key: string): boolean => object[key] === undefined || object[key] === null;
  const property = ownVector ? VECTOR_FIELD : vector || !absent("property") ? stringAt(object.property, `${at}.property`) : undefined;
  if (!absent("query") && !absent(helixKey)) throw fault(`${at}.${helixKey}`, `give the query once, as query or as ${helixKey}`);
  const queryKey = absent(helixKey) ? "query" : helixKey;
  if (absent(queryKey)) throw fault(`${at}.query`, vector ? "a vector search needs a query vector" : "a text search needs a query text");
  const query = decoders.input(object[queryKey], `${at}.${queryKey}`);
  if (query.kind === "value" && vector && !isNumberVector(query.value)) throw fault(`${at}.${queryKey}`, "expected a vector of numbers");
  if (query.kind === "value" && !vector && typeof query.value !== "string") throw fault(`${at}.${queryKey}`, "expected a string");
  if (absent("k")) throw fault(`${at}.k`, "a search needs k, the number of results");
  const k = positiveInput(object.k, `${at}.k`, d);
  const tenant = absent("tenant_value") ? undefined : decoders.input(object.tenant_value, `${at}.tenant_value`);
  const input = within ? decoders.step(object.input, `${at}.input`, d.depth + 1) : undefined;
  const common = { ...(input === undefined ? {} : { input }), kind, label, query, k, ...(tenant === undefined ? {} : { tenant }) };
  if (vector) {
    if (absent("ef")) return { op: "vector_search", property: property!, ...common };
    if (!isVectorEf(object.ef)) throw fault(`${at}.ef`, `the search beam width is an integer from 1 to ${VECTOR_EF_MAX}`);
    return { op: "vector_search", property: property!, ...common, ef: object.ef };
  }
  return { op: "text_search", ...(property === undefined ? {} : { property }), ...common };
}

function isNumberVector(value: unknown): boolean {
  if (value instanceof Float64Array || value instanceof Float32Array) return value.length > 0;
  return Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === "number" || typeof item === "bigint");
}

/**
 * k of a search or of RRF: a mutation value, or HelixDB's stream bound `{"literal": n}` (what its SDKs send; its
 * `{"expr": ..}` form is a mutation value already). A literal must be a whole number of at least 1 (a parameter is
 * checked when it runs).
 */
/** RRF's k: any finite number greater than 0 (HelixDB's grammar takes `k: 30.0`); the rank adds to it. */
function positiveNumberInput(value: Json, path: string, d: Decoding): Input {
  const positive = (n: unknown): boolean => (typeof n === "number" && Number.isFinite(n) && n > 0) || (typeof n === "bigint" && n >= 1n);
  const [tag, body] = tagged(value, path);
  if (tag === "literal") {
    if (positive(body)) return { kind: "value", value: body as number | bigint };
    throw fault(`${path}.literal`, "expected a number greater than 0");
  }
  const input = d.decoders.input(value, path);
  if (input.kind !== "value" || positive(input.value)) return input;
  throw fault(`${path}.value`, "expected a number greater than 0");
}

function positiveInput(value: Json, path: string, d: Decoding): Input {
  const [tag, body] = tagged(value, path);
  if (tag === "literal") {
    if ((typeof body === "number" && Number.isSafeInteger(body) && body >= 1) || (typeof body === "bigint" && body >= 1n)) return { kind: "value", value: body };
    throw fault(`${path}.literal`, "expected a whole number of at least 1");
  }
  const input = d.decoders.input(value, path);
  if (input.kind !== "value") return input;
  const n = input.value;
  if ((typeof n === "number" && Number.isSafeInteger(n) && n >= 1) || (typeof n === "bigint" && n >= 1n)) return input;
  throw fault(`${path}.value`, "expected a whole number of at least 1");
}

/** MMR's lambda: a literal must be a number from 0 to 1 (1 is pure relevance, 0 pure diversity). */
function lambdaInput(d: Decoding): Input {
  const path = `${d.at}.lambda`;
  if (d.object.lambda === undefined || d.object.lambda === null) throw fault(path, "rerank_mmr needs lambda, from 0 to 1");
  const input = d.decoders.input(d.object.lambda, path);
  if (input.kind !== "value") return input;
  if (typeof input.value === "number" && input.value >= 0 && input.value <= 1) return input;
  throw fault(`${path}.value`, "expected a number from 0 to 1");
}

/** A sub-traversal: `{"root": <step>}`, whose chain usually starts at `"context"`. */
function subTraversal(value: Json, path: string, d: Decoding): Step {
  const object = objectAt(value, path);
  allowOnly(object, WIRE_FIELDS.sub_traversal, path);
  if (object.root === undefined) throw fault(`${path}.root`, "a sub-traversal needs a root step");
  return d.decoders.step(object.root, `${path}.root`, d.depth + 1);
}

function traversalList(d: Decoding): Step[] {
  const path = `${d.at}.traversals`;
  const list = arrayAt(d.object.traversals, path);
  if (list.length === 0) throw fault(path, "expected at least one sub-traversal");
  if (list.length > BRANCH_TRAVERSALS_MAX) throw fault(path, `at most ${BRANCH_TRAVERSALS_MAX} sub-traversals, not ${list.length}`);
  return list.map((item, i) => subTraversal(item, `${path}[${i}]`, d));
}

function orderAt(value: Json, path: string): Order {
  const order = stringAt(value, path);
  if (order !== "asc" && order !== "desc") throw fault(path, 'expected "asc" or "desc"');
  return order;
}

function orderings(value: Json, path: string): [string, Order][] {
  const list = arrayAt(value, path);
  if (list.length === 0) throw fault(path, "expected at least one [property, order] pair");
  return list.map((pair, i) => {
    const items = arrayAt(pair, `${path}[${i}]`);
    if (items.length !== 2) throw fault(`${path}[${i}]`, 'expected a [property, "asc" | "desc"] pair');
    return [stringAt(items[0], `${path}[${i}][0]`), orderAt(items[1], `${path}[${i}][1]`)];
  });
}

const EMIT_BEHAVIORS: readonly EmitBehavior[] = ["none", "before", "after", "all"];

function iterationsAt(value: Json, path: string, least: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < least || value > REPEAT_ITERATIONS_MAX) {
    throw fault(path, `expected an integer from ${least} to ${REPEAT_ITERATIONS_MAX}`);
  }
  return value;
}

/** `{"traversal", "times"?, "until"?, "emit"?, "emit_predicate"?, "max_depth"?}`. */
function repeatConfig(d: Decoding): RepeatConfig {
  const at = `${d.at}.config`;
  const config = objectAt(d.object.config, at);
  allowOnly(config, WIRE_FIELDS.repeat_config, at);
  const present = (key: string): boolean => config[key] !== undefined && config[key] !== null;
  const emit = present("emit") ? stringAt(config.emit, `${at}.emit`) : "none";
  if (!(EMIT_BEHAVIORS as readonly string[]).includes(emit)) throw fault(`${at}.emit`, `expected one of ${EMIT_BEHAVIORS.join(", ")}`);
  const times = present("times") ? iterationsAt(config.times, `${at}.times`, 0) : undefined;
  const maxDepth = present("max_depth") ? iterationsAt(config.max_depth, `${at}.max_depth`, 1) : (times ?? REPEAT_DEPTH_DEFAULT);
  // A loop that stopped at max_depth before `times` would return fewer levels than asked for: refuse it instead.
  if (times !== undefined && times > maxDepth) throw fault(`${at}.times`, `times ${times} is beyond max_depth ${maxDepth}`);
  // HelixDB v3 filters only the levels an iteration makes: a predicate with `before`, `all` or `none` is refused.
  if (present("emit_predicate") && emit !== "after") throw fault(`${at}.emit_predicate`, `emit_predicate needs emit "after", not ${JSON.stringify(emit)}`);
  const predicate = (key: string): Predicate | undefined => (present(key) ? d.decoders.predicate(config[key], `${at}.${key}`, d.depth + 1) : undefined);
  return {
    body: subTraversal(config.traversal, `${at}.traversal`, d),
    times,
    until: predicate("until"),
    emit: emit as EmitBehavior,
    emitPredicate: predicate("emit_predicate"),
    maxDepth,
  };
}
