/**
 * `count` without building the stream it counts, where the answer can be had otherwise (issue 16):
 *
 * - Every record of a kind, or of a node or vector label (`nodes` all, `nodes_where` whose predicate is `$label`
 *   = L and nothing else): the store counts its keys (LMDB, without decoding a record or an ID).
 * - A stream every partition can compute from its own records alone (`localStepParameters`): each partition counts
 *   its own and the counts are added (a coordinator over several partitions, cluster/scatter-reader.ts), so a
 *   partition sends back a number instead of every ID, and the coordinator reads no record.
 *
 * Either way the answer is the stream's length: a label's index holds exactly its records, and a partition-local
 * stream is the union of the partitions' streams, which share no record (each record lives on one partition). Both
 * are used only when the invocation has written nothing yet (its own writes are in no store) and asked for no
 * `$explain` (which lists the access path of every source step, so the stream is built).
 */
import type { RecordKind } from "../protocol/records.js";
import type { Expr, Predicate, Step } from "../protocol/tree.js";
import { labelOfPredicate } from "./planner.js";
import type { EvalScope } from "./predicates.js";
import { RESULT_ELEMENTS_MAX, tooManyElements } from "./streams.js";

const hasOwn = Object.prototype.hasOwnProperty;

/** The length of the stream `input` yields, or undefined when it must be built and counted. */
export async function countWithoutElements(input: Step, scope: EvalScope): Promise<number | undefined> {
  const { view, explain } = scope.context;
  if (explain !== undefined || view.hasWrites) return undefined;
  const whole = wholeKindOrLabel(input);
  let count = whole === undefined ? undefined : await view.countIds(whole.kind, whole.label);
  if (count === undefined) {
    const names = localStepParameters(input);
    if (names !== undefined) count = await view.countWhereStored(input, parametersNamed(names, scope.parameters));
  }
  // The stream itself would have been refused past this size: so is its count, as it is everywhere else.
  if (count !== undefined && count > RESULT_ELEMENTS_MAX) throw tooManyElements();
  return count;
}

/** The kind (and label) whose every record `step` yields, when that is all it does. */
function wholeKindOrLabel(step: Step): { kind: RecordKind; label?: string } | undefined {
  switch (step.op) {
    case "nodes":
    case "edges":
    case "vectors":
      return step.ref.kind === "all" ? { kind: kindOf(step.op) } : undefined;
    case "nodes_where":
    case "edges_where":
    case "vectors_where": {
      const { predicate } = step;
      // Exactly `$label = L`: an AND holding it has other conditions, which only the records can answer.
      if (predicate.kind !== "compare") return undefined;
      const label = labelOfPredicate(predicate);
      return label === undefined ? undefined : { kind: kindOf(step.op), label };
    }
    default:
      return undefined;
  }
}

function kindOf(op: "nodes" | "edges" | "vectors" | "nodes_where" | "edges_where" | "vectors_where"): RecordKind {
  return op.startsWith("nodes") ? "node" : op.startsWith("edges") ? "edge" : "vector";
}

/**
 * The parameters a partition-local step reads, or undefined when the step is not partition-local. Partition-local:
 * a source of every record of a kind, or of those a predicate selects, filtered by further predicates, where each
 * predicate reads only the record itself (its fields, `$id`, `$label`), constants and parameters: no traversal, no
 * variable, no other record (`$from.name`), no clock (`NOW` would be read on each partition) and no embedder.
 */
export function localStepParameters(step: Step): string[] | undefined {
  const names = new Set<string>();
  const local = (current: Step): boolean => {
    switch (current.op) {
      case "nodes":
      case "edges":
      case "vectors":
        return current.ref.kind === "all";
      case "nodes_where":
      case "edges_where":
      case "vectors_where":
        return localPredicate(current.predicate, names);
      case "has":
      case "has_key":
        return ownPath(current.path) && local(current.input);
      case "has_label":
        return local(current.input);
      case "where":
        return localPredicate(current.predicate, names) && local(current.input);
      default:
        return false;
    }
  };
  return local(step) ? [...names] : undefined;
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
    default: {
      const unreachable: never = predicate;
      throw new Error(`unknown predicate ${JSON.stringify(unreachable)}`);
    }
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
    default: {
      const unreachable: never = expr;
      throw new Error(`unknown expression ${JSON.stringify(unreachable)}`);
    }
  }
}

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
