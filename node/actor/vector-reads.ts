/**
 * Whether a plan can look at the vector data of the `V::` records it reads. Most vector queries return a few
 * properties of their hits (`SearchV<Doc>(v, 10)::{title}`); loading each hit whole would read its vector too
 * (784 float64s are 6 KB, several times the cost of the rest of the record), only to drop it. A plan that cannot
 * observe vectors reads vector records without them (Snapshot.vectorRecordProps), from a small per-record value of
 * the label and properties alone.
 *
 * The rule is an allowlist, so a step added later reads whole records until it is listed here:
 * - read plans only (writes re-encode whole records);
 * - every step, also in sub-traversals, predicates, projections and inputs, is one that reads properties, labels
 *   or IDs only: sources, traversals, filters, paging, ordering, counting, property projections, searches and RRF
 *   (RerankMMR compares vectors; expressions that render sub-traversals or variables as JSON are left out);
 * - every returned entry ends in a step that yields values (counts, IDs, labels, property rows, aggregates), never
 *   records: a returned record is rendered whole, `$vector` included.
 *
 * Invariant: a record read without its vector carries VECTOR_NOT_LOADED, and rendering or comparing it throws
 * `internal` (streams.ts recordToJson, search.ts vectorOfHit) rather than answer an empty vector.
 */
import type { Bound, Entry, Expr, Input, Plan, Predicate, Step } from "../../protocol/tree.js";
import { unreachable } from "../../protocol/errors.js";

/** Steps that read no record's vector (their inputs and arguments are checked on their own). */
const PROPERTY_STEPS: ReadonlySet<Step["op"]> = new Set<Step["op"]>([
  "context", "nodes", "edges", "vectors", "nodes_where", "edges_where", "vectors_where",
  "out", "in", "both", "out_e", "in_e", "both_e", "out_n", "in_n", "other_n",
  "has", "has_label", "has_key", "where", "dedup", "edge_has", "edge_has_label",
  "limit", "skip", "range", "order_by", "order_by_multiple",
  "count", "exists", "id", "label", "values", "value_map", "project", "aggregate", "group_count",
  "vector_search", "text_search", "rerank_rrf",
]);

/** Steps whose output is values, not records: what a returned entry must end in. */
const VALUE_STEPS: ReadonlySet<Step["op"]> = new Set<Step["op"]>([
  "count", "exists", "id", "label", "values", "value_map", "project", "aggregate", "group_count",
]);

/** The virtual property that reads a vector record's vector (streams.ts recordField). */
const VECTOR_PROPERTY = "$vector";

const verdicts = new WeakMap<readonly Entry[], boolean>();

/** True when running `plan` may read a vector record's vector; false only when it certainly cannot. */
export function readsVectorData(plan: Plan): boolean {
  let verdict = verdicts.get(plan.entries);
  if (verdict === undefined) {
    verdict = plan.requestType !== "read" || !entriesReadPropertiesOnly(plan.entries) || !returnsValuesOnly(plan);
    verdicts.set(plan.entries, verdict);
  }
  return verdict;
}

function entriesReadPropertiesOnly(entries: readonly Entry[]): boolean {
  return entries.every((entry) => entry.kind === "query" && stepReadsPropertiesOnly(entry.root));
}

function returnsValuesOnly(plan: Plan): boolean {
  return plan.returns.every((name) =>
    plan.entries.every((entry) => entry.kind !== "query" || entry.name !== name || VALUE_STEPS.has(entry.root.op)),
  );
}

function stepReadsPropertiesOnly(step: Step): boolean {
  if (!PROPERTY_STEPS.has(step.op)) return false;
  if ("input" in step && step.input !== undefined && !stepReadsPropertiesOnly(step.input)) return false;
  switch (step.op) {
    case "value_map":
      return step.properties !== undefined && !step.properties.includes(VECTOR_PROPERTY);
    case "values":
    case "group_count":
      return !step.properties.includes(VECTOR_PROPERTY);
    case "aggregate":
      return step.path !== VECTOR_PROPERTY;
    case "project":
      return !step.all && step.projections.every((projection) =>
        projection.kind === "property" ? projection.source !== VECTOR_PROPERTY : exprReadsPropertiesOnly(projection.expr),
      );
    case "nodes_where":
    case "edges_where":
    case "vectors_where":
    case "where":
      return predicateReadsPropertiesOnly(step.predicate);
    case "order_by":
      return exprReadsPropertiesOnly(step.by);
    case "limit":
    case "skip":
      return boundReadsPropertiesOnly(step.count);
    case "range":
      return boundReadsPropertiesOnly(step.start) && boundReadsPropertiesOnly(step.end);
    case "edge_has":
      return inputReadsPropertiesOnly(step.value);
    case "vector_search":
    case "text_search":
      return inputReadsPropertiesOnly(step.query) && inputReadsPropertiesOnly(step.k) && (step.tenant === undefined || inputReadsPropertiesOnly(step.tenant));
    case "rerank_rrf":
      return step.k === undefined || inputReadsPropertiesOnly(step.k);
    default:
      return true;
  }
}

function boundReadsPropertiesOnly(bound: Bound): boolean {
  return bound.kind === "literal" || exprReadsPropertiesOnly(bound.expr);
}

function inputReadsPropertiesOnly(input: Input): boolean {
  return input.kind !== "expr" || exprReadsPropertiesOnly(input.expr);
}

function exprReadsPropertiesOnly(expr: Expr): boolean {
  switch (expr.kind) {
    case "property":
      return expr.path !== VECTOR_PROPERTY;
    case "constant":
    case "param":
    case "id":
      return true;
    case "count":
      return stepReadsPropertiesOnly(expr.traversal);
    case "arith":
      return exprReadsPropertiesOnly(expr.left) && exprReadsPropertiesOnly(expr.right);
    case "call":
      return expr.args.every(exprReadsPropertiesOnly);
    case "embed":
      return exprReadsPropertiesOnly(expr.text);
    default:
      return false; // var, traversal and first render records as JSON
  }
}

function predicateReadsPropertiesOnly(predicate: Predicate): boolean {
  switch (predicate.kind) {
    case "compare":
      return exprReadsPropertiesOnly(predicate.left) && exprReadsPropertiesOnly(predicate.right);
    case "between":
      return exprReadsPropertiesOnly(predicate.value) && exprReadsPropertiesOnly(predicate.min) && exprReadsPropertiesOnly(predicate.max);
    case "is_null":
    case "is_not_null":
    case "has_key":
      return predicate.path !== VECTOR_PROPERTY;
    case "contains":
      return exprReadsPropertiesOnly(predicate.value) && exprReadsPropertiesOnly(predicate.needle);
    case "starts_with":
    case "ends_with":
      return exprReadsPropertiesOnly(predicate.value) && exprReadsPropertiesOnly(predicate.affix);
    case "is_in":
      return exprReadsPropertiesOnly(predicate.value) && exprReadsPropertiesOnly(predicate.values);
    case "and":
    case "or":
      return predicate.predicates.every(predicateReadsPropertiesOnly);
    case "not":
      return predicateReadsPropertiesOnly(predicate.predicate);
    case "exists":
      return stepReadsPropertiesOnly(predicate.traversal);
    default:
      return unreachable(predicate, "predicate");
  }
}
