/**
 * Steps answered without building the stream they read, where the answer can be had otherwise (issue 16):
 *
 * - `count` of every record of a kind, or of a node or vector label (`nodes` all, `nodes_where` whose predicate is
 *   `$label` = L and nothing else): the store counts its keys (LMDB, without decoding a record or an ID).
 * - `count` of a stream every partition can compute from its own records alone (`localStep`): each partition counts
 *   its own and the counts are added (a coordinator over several partitions, cluster/scatter-reader.ts), so a
 *   partition sends back a number instead of every ID, and the coordinator reads no record.
 * - `limit` and `range` of every record of a kind or node/vector label: the store's scan is read up to the page's end.
 * - `limit` and `range` of a partition-local stream: each partition sends its first `end` IDs (and its stream's
 *   length, for the size limit), and the coordinator keeps the first `end` of them in ID order.
 *
 * The answers are the stream's: a label's index holds exactly its records; a partition-local stream is the union of
 * the partitions' streams, which share no record (each record lives on one partition), and it is in ID order (every
 * source is, and filters keep the order), so its first `end` elements are among the partitions' first `end`. All of
 * it is used only when the invocation has written nothing yet (its own writes are in no store) and asked for no
 * `$explain` (which lists the access path of every source step, so the stream is built).
 */
import { unreachable } from "../../protocol/errors.js";
import { wait, type Maybe, type Op } from "./ops.js";
import { sourceKind, type Bound, type Entry, type Expr, type Predicate, type Step } from "../../protocol/tree.js";
import type { RecordKind } from "../../protocol/records.js";
import { labelOfPredicate } from "./planner.js";
import type { EvalScope } from "./predicates.js";
import { tooManyElements, type Element } from "./streams.js";
import { RESULT_ELEMENTS_MAX } from "../../protocol/limits.js";

/** The length of the stream `input` yields, or undefined when it must be built and counted. */
export function* countWithoutElements(input: Step, scope: EvalScope): Op<number | undefined> {
  const { view, explain } = scope.context;
  if (explain !== undefined || view.hasWrites) return undefined;
  const whole = wholeKindOrLabel(input);
  let count = whole === undefined ? undefined : yield* wait(view.countIds(whole.kind, whole.label));
  if (count === undefined) {
    const local = localStep(input);
    if (local !== undefined) count = yield* wait(view.countWhereStored(input, parametersNamed(local.parameters, scope.parameters)));
  }
  // The stream itself would have been refused past this size: so is its count, as it is everywhere else.
  if (count !== undefined && count > RESULT_ELEMENTS_MAX) throw tooManyElements();
  return count;
}

/**
 * The elements a `limit` or `range` keeps of the stream `input` yields, without building that stream, or undefined
 * when it must be built: every record of a kind or node/vector label is read up to the page's end from the store's
 * scan (nothing past it is read or decoded); a partition-local stream is paged from the partitions' first `end` IDs.
 * `bounds` evaluates the page's [start, end) before the input (undefined: it cannot, and the caller builds the stream).
 */
export function pageWithoutElements(input: Step, scope: EvalScope, bounds: () => Op<[number, number] | undefined>): Maybe<Element[] | undefined> {
  const { view, explain } = scope.context;
  if (explain !== undefined || view.hasWrites) return undefined;
  const whole = wholeKindOrLabel(input);
  const local = view.pagesWhereStored ? localStep(input) : undefined;
  if (whole === undefined && local === undefined) return undefined;
  return pageFromStore(input, scope, bounds, whole, local);
}

function* pageFromStore(
  input: Step,
  scope: EvalScope,
  bounds: () => Op<[number, number] | undefined>,
  whole: { kind: RecordKind; label?: string } | undefined,
  local: { kind: RecordKind; parameters: string[] } | undefined,
): Op<Element[] | undefined> {
  const { view } = scope.context;
  const page = yield* bounds();
  if (page === undefined) return undefined;
  const [start, end] = page;
  if (whole !== undefined) {
    const ids = yield* wait(view.firstIds(whole.kind, whole.label, end));
    if (ids !== undefined) return ids.slice(start, end).map((id) => ({ kind: whole.kind, id }));
  }
  if (local === undefined) return undefined;
  const first = yield* wait(view.firstIdsWhereStored(input, local.kind, end, parametersNamed(local.parameters, scope.parameters)));
  if (first === undefined) return undefined;
  // The stream itself would have been refused past this size, whatever the page kept of it.
  if (first.total > RESULT_ELEMENTS_MAX) throw tooManyElements();
  return first.ids.slice(start, end).map((id) => ({ kind: local.kind, id }));
}

/** The names a partition's answers go under in the plans of `countEntries` and `firstIdsEntries`. */
export const PUSHED_COUNT = "count";
export const PUSHED_IDS = "ids";
const PUSHED_STREAM = "stream";

/** The entries of the read plan a partition runs to count a partition-local step: `count` of it, as PUSHED_COUNT. */
export function countEntries(step: Step): Entry[] {
  return [{ kind: "query", name: PUSHED_COUNT, root: { op: "count", input: step } }];
}

/**
 * The entries of the read plan a partition runs for the first `count` IDs of a partition-local step: the stream's
 * length (PUSHED_COUNT) and the IDs of its first `count` elements (PUSHED_IDS). A whole kind or label is counted and
 * paged from the store's keys; any other stream is built once, as a variable, and counted and paged from that.
 */
export function firstIdsEntries(step: Step, kind: RecordKind, count: number): Entry[] {
  const page = (input: Step): Step => ({ op: "id", input: { op: "limit", input, count: { kind: "literal", value: count } } });
  if (wholeKindOrLabel(step) !== undefined) {
    return [...countEntries(step), { kind: "query", name: PUSHED_IDS, root: page(step) }];
  }
  const stream: Step = { op: kind === "node" ? "nodes" : kind === "edge" ? "edges" : "vectors", ref: { kind: "var", name: PUSHED_STREAM } };
  return [
    { kind: "query", name: PUSHED_STREAM, root: step },
    { kind: "query", name: PUSHED_COUNT, root: { op: "count", input: stream } },
    { kind: "query", name: PUSHED_IDS, root: page(stream) },
  ];
}

/**
 * A `limit` or `range` bound that can be evaluated before its input without changing what the invocation answers:
 * a literal, or a constant or parameter (reading one has no effect; one that fails is left to be evaluated after the
 * input, as the executor orders them, so an error of the input still comes first).
 */
export function plainBound(bound: Bound): boolean {
  return bound.kind === "literal" || bound.expr.kind === "param" || bound.expr.kind === "constant";
}

/** The kind (and label) whose every record `step` yields, when that is all it does. */
function wholeKindOrLabel(step: Step): { kind: RecordKind; label?: string } | undefined {
  switch (step.op) {
    case "nodes":
    case "edges":
    case "vectors":
      return step.ref.kind === "all" ? { kind: sourceKind(step.op) } : undefined;
    case "nodes_where":
    case "edges_where":
    case "vectors_where": {
      const { predicate } = step;
      // Exactly `$label = L`: an AND holding it has other conditions, which only the records can answer.
      if (predicate.kind !== "compare") return undefined;
      const label = labelOfPredicate(predicate);
      return label === undefined ? undefined : { kind: sourceKind(step.op), label };
    }
    default:
      return undefined;
  }
}

/**
 * A partition-local step's record kind and the parameters it reads, or undefined when the step is not
 * partition-local. Partition-local: a source of every record of a kind, or of those a predicate selects, filtered by
 * further predicates, where each predicate reads only the record itself (its fields, `$id`, `$label`), constants and
 * parameters: no traversal, no variable, no other record (`$from.name`), no clock (`NOW` would be read on each
 * partition) and no embedder.
 */
export function localStep(step: Step): { kind: RecordKind; parameters: string[] } | undefined {
  const names = new Set<string>();
  const localKind = (current: Step): RecordKind | undefined => {
    switch (current.op) {
      case "nodes":
      case "edges":
      case "vectors":
        return current.ref.kind === "all" ? sourceKind(current.op) : undefined;
      case "nodes_where":
      case "edges_where":
      case "vectors_where":
        return localPredicate(current.predicate, names) ? sourceKind(current.op) : undefined;
      case "has":
      case "has_key":
        return ownPath(current.path) ? localKind(current.input) : undefined;
      case "has_label":
        return localKind(current.input);
      case "where":
        return localPredicate(current.predicate, names) ? localKind(current.input) : undefined;
      default:
        return undefined;
    }
  };
  const kind = localKind(step);
  return kind === undefined ? undefined : { kind, parameters: [...names] };
}
/** A path into the record itself: `$from.x` and `$to.x` read the edge's endpoint records. */
function ownPath(path: string): boolean {
  return !path.startsWith("$from.") && !path.startsWith("$to.");
}

function localPredicate(predicate: Predicate, names: Set<string>): boolean {
  const expr = (value: Expr): boolean => localExpr(value, names);
  switch (predicate.kind) {
    case "compare":
      return expr(predicate.left) && expr(predicate.right);
    case "between":
      return expr(predicate.value) && expr(predicate.min) && expr(predicate.max);
    case "is_null":
    case "is_not_null":
    case "has_key":
      return ownPath(predicate.path);
    case "contains":
      return expr(predicate.value) && expr(predicate.needle);
    case "starts_with":
    case "ends_with":
      return expr(predicate.value) && expr(predicate.affix);
    case "is_in":
      return expr(predicate.value) && expr(predicate.values);
    case "and":
    case "or":
      return predicate.predicates.every((inner) => localPredicate(inner, names));
    case "not":
      return localPredicate(predicate.predicate, names);
    case "exists":
      return false;
    default:
      return unreachable(predicate, "predicate");
  }
}

function localExpr(expr: Expr, names: Set<string>): boolean {
  switch (expr.kind) {
    case "property":
      return ownPath(expr.path);
    case "constant":
    case "id":
      return true;
    case "param":
      names.add(expr.name);
      return true;
    case "arith":
      return localExpr(expr.left, names) && localExpr(expr.right, names);
    case "call":
      return expr.args.every((arg) => localExpr(arg, names));
    case "neg":
      return localExpr(expr.expr, names);
    case "case":
      return (
        expr.branches.every((branch) => localPredicate(branch.when, names) && localExpr(branch.then, names)) &&
        (expr.otherwise === undefined || localExpr(expr.otherwise, names))
      );
    case "count":
    case "var":
    case "traversal":
    case "first":
    case "embed":
    case "timestamp":
    case "date_time_now":
      return false;
    default:
      return unreachable(expr, "expression");
  }
}

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * The parameters a step names, as `lookupParameter` finds them (a whole parameter, or the top-level one a dotted name
 * reads into): only they travel to the partitions, not a large array another entry loops over. A name not supplied
 * is left out, and the partition refuses it as the invocation would.
 */
function parametersNamed(names: readonly string[], parameters: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of names) {
    const dot = name.indexOf(".");
    if (hasOwn.call(parameters, name)) picked[name] = parameters[name];
    if (dot > 0 && hasOwn.call(parameters, name.slice(0, dot))) picked[name.slice(0, dot)] = parameters[name.slice(0, dot)];
  }
  return picked;
}
