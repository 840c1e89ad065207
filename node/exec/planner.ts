/**
 * The access path of a source step (`nodes_where`, `edges_where`, `vectors_where`): which records become candidates
 * before the step evaluates its whole predicate on each of them.
 *
 * The rule: a predicate that pins `$label` = L (alone or in an AND) scans L's records; if the same AND also holds a
 * comparison (eq, gt, gte, lt, lte, between, is_in) of an indexed top-level field of L with a constant or a parameter,
 * whose value has the field's kind, the candidates come from the index instead (when it is active; otherwise L is
 * scanned). Equalities are preferred to ranges. Without a pinned label every record of the kind is a candidate.
 * Since the whole predicate is evaluated on the candidates either way, the result equals the scan's.
 *
 * Ranges are planned for numbers, dates and strings (in UTF-8 byte order, as the scan compares them), and only with
 * values of the field's kind: the comparisons no record matches (ordering booleans, comparing a number field with a
 * string; predicates.ts) are left to the scan, which answers them the same way.
 *
 * A schemaless database declares no field types: its indexes (all made by `create_index`) key each value by its own
 * kind, and one field may hold numbers in one record and strings in another. There a comparison takes, besides the
 * index's hits of its value's kind, every entry of every other kind: a value of another kind matches nothing, but the
 * scan compares some after aligning them (an ISO string with a date, a decimal string with an ID), so they stay
 * candidates and the predicate answers them as the scan does. When the field holds one kind, the other kinds' ranges
 * are empty seeks.
 */
import type { IndexRange, RecordKind } from "../../protocol/records.js";
import type { Op } from "./ops.js";
import type { FieldDecl, ScalarTypeName, Schema } from "../../protocol/schema.js";
import type { CompareOp, Expr, Predicate } from "../../protocol/tree.js";
import type { Value } from "../../protocol/values.js";
import { encodeIndexValue, kindTagRange } from "../indexes/index-encoding.js";
import { type EvalScope } from "./predicates.js";
import { lookupParameter } from "./streams.js";
import { unreachable } from "../../protocol/errors.js";

export type SourceOp = "nodes_where" | "edges_where" | "vectors_where";
export type Access = "index" | "label_scan" | "full_scan";

/** What the planner did for one source step (the `$explain` of a request with `"explain": true`). */
export interface ExplainStep {
  readonly entry: string | null;
  readonly step: SourceOp;
  readonly access: Access;
  readonly index?: string;
  readonly candidates: number;
  /** false: the indexes answered the whole predicate and no candidate's record was read (search-candidates.ts). */
  readonly recordsRead?: false;
}

/** At most this many steps are explained per request (a source inside a per-record sub-traversal runs many times). */
export const EXPLAIN_STEPS_MAX = 1_000;

export class ExplainLog {
  readonly steps: ExplainStep[] = [];
  /** The name of the entry running now. */
  entry: string | null = null;

  record(step: Omit<ExplainStep, "entry">): void {
    if (this.steps.length < EXPLAIN_STEPS_MAX) this.steps.push({ entry: this.entry, ...step });
  }
}

/** The candidate IDs of a source step, in the order a scan gives them. */
export function* sourceIds(op: SourceOp, kind: RecordKind, predicate: Predicate, scope: EvalScope): Op<bigint[]> {
  const { view, schema, explain } = scope.context;
  const label = labelOfPredicate(predicate);
  if (label === undefined) {
    const ids = yield* view.allIds(kind);
    explain?.record({ step: op, access: "full_scan", candidates: ids.length });
    return ids;
  }
  const lookup = chooseIndex(schema, kind, label, predicate, scope);
  if (lookup !== undefined) {
    const ids = yield* view.indexIds(kind, label, lookup.field, lookup.ranges);
    if (ids !== undefined) {
      explain?.record({ step: op, access: "index", index: `${label}.${lookup.field}`, candidates: ids.length });
      return ids;
    }
  }
  const ids = yield* view.idsOfLabel(kind, label);
  explain?.record({ step: op, access: "label_scan", candidates: ids.length });
  return ids;
}

/** The label a source predicate pins (`$label == "X"`, alone or inside an AND), so the scan can use the label index. */
export function labelOfPredicate(predicate: Predicate): string | undefined {
  if (predicate.kind === "compare" && predicate.op === "eq") {
    const { left, right } = predicate;
    if (left.kind === "property" && left.path === "$label" && right.kind === "constant" && typeof right.value === "string") return right.value;
    if (right.kind === "property" && right.path === "$label" && left.kind === "constant" && typeof left.value === "string") return left.value;
  }
  if (predicate.kind === "and") {
    for (const inner of predicate.predicates) {
      const label = labelOfPredicate(inner);
      if (label !== undefined) return label;
    }
  }
  return undefined;
}

export interface IndexLookup {
  readonly field: string;
  readonly ranges: IndexRange[];
  readonly equality: boolean;
}

export function chooseIndex(schema: Schema | undefined, kind: RecordKind, label: string, predicate: Predicate, scope: EvalScope): IndexLookup | undefined {
  const runtime = scope.context.runtimeIndex;
  let indexed: IndexedType;
  if (schema === undefined) {
    if (runtime === undefined) return undefined;
    indexed = (expr) => (expr.kind === "property" && runtime(kind, label, expr.path) !== undefined ? UNTYPED : undefined);
  } else {
    const declared = kind === "node" ? schema.nodes.get(label) : kind === "edge" ? schema.edges.get(label) : schema.vectors.get(label);
    if (declared === undefined) return undefined;
    indexed = (expr) => indexedType(expr, declared.fields, (field) => runtime?.(kind, label, field) !== undefined);
  }
  let best: IndexLookup | undefined;
  for (const conjunct of conjuncts(predicate)) {
    const lookup = lookupOf(conjunct, indexed, scope);
    if (lookup !== undefined && (best === undefined || (lookup.equality && !best.equality))) best = lookup;
    if (best?.equality) break;
  }
  return best;
}

/** The members of a predicate's top-level AND (nested ANDs flattened), or the predicate itself. */
function conjuncts(predicate: Predicate): Predicate[] {
  return predicate.kind === "and" ? predicate.predicates.flatMap(conjuncts) : [predicate];
}

const FLIPPED: Record<Exclude<CompareOp, "neq">, Exclude<CompareOp, "neq">> = { eq: "eq", gt: "lt", gte: "lte", lt: "gt", lte: "gte" };

/** What an index of a schemaless database is keyed by: each value's own kind, not a declared type. */
const UNTYPED = "untyped";
type FieldType = ScalarTypeName | typeof UNTYPED;

/**
 * The declared type of the indexed field an expression reads (schema-declared or created by `create_index`), or
 * UNTYPED for an index of a schemaless database.
 */
type IndexedType = (expr: Expr) => FieldType | undefined;

function lookupOf(predicate: Predicate, indexed: IndexedType, scope: EvalScope): IndexLookup | undefined {
  switch (predicate.kind) {
    case "compare": {
      if (predicate.op === "neq") return undefined;
      const onLeft = predicate.left.kind === "property";
      const [field, other, op] = onLeft ? [predicate.left, predicate.right, predicate.op] : [predicate.right, predicate.left, FLIPPED[predicate.op]];
      const type = indexed(field);
      if (type === undefined || (op !== "eq" && !ordered(type))) return undefined;
      const value = boundValue(other, type, scope);
      // Booleans do not order (the scan matches none); an untyped field learns it from the value.
      if (value === undefined || (op !== "eq" && typeof value === "boolean")) return undefined;
      return { field: (field as { path: string }).path, ranges: withOtherKinds(type, [comparisonRange(op, value)], [value]), equality: op === "eq" };
    }
    case "between": {
      const type = indexed(predicate.value);
      if (type === undefined || !ordered(type)) return undefined;
      const low = boundValue(predicate.min, type, scope);
      const high = boundValue(predicate.max, type, scope);
      // Bounds of two kinds (or booleans) match no record; the scan is left to answer so.
      if (low === undefined || high === undefined || typeof low === "boolean" || kindTagRange(low)?.first !== kindTagRange(high)?.first) return undefined;
      return { field: (predicate.value as { path: string }).path, ranges: withOtherKinds(type, [{ low, lowInclusive: true, high, highInclusive: true }], [low]), equality: false };
    }
    case "is_in": {
      const type = indexed(predicate.value);
      const list = type === undefined ? undefined : rawValue(predicate.values, scope);
      if (type === undefined || !Array.isArray(list)) return undefined;
      const ranges: IndexRange[] = [];
      const values: Value[] = [];
      for (const item of list) {
        const value = asFieldKind(item as Value, type);
        if (value === undefined) return undefined;
        ranges.push({ low: value, lowInclusive: true, high: value, highInclusive: true });
        values.push(value);
      }
      return { field: (predicate.value as { path: string }).path, ranges: withOtherKinds(type, ranges, values), equality: true };
    }
    default:
      return undefined;
  }
}

function comparisonRange(op: Exclude<CompareOp, "neq">, value: Value): IndexRange {
  switch (op) {
    case "eq":
      return { low: value, lowInclusive: true, high: value, highInclusive: true };
    case "gt":
    case "gte":
      return { low: value, lowInclusive: op === "gte", high: null, highInclusive: false };
    case "lt":
    case "lte":
      return { low: null, lowInclusive: false, high: value, highInclusive: op === "lte" };
    default:
      return unreachable(op, "comparison");
  }
}

const NUMERIC: ReadonlySet<ScalarTypeName> = new Set<ScalarTypeName>(["F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "U128", "ID"]);
/** Types whose values GT, GTE, LT and LTE compare (SPEC: numbers and dates; its range indexes: strings too). */
const ORDERED: ReadonlySet<ScalarTypeName> = new Set<ScalarTypeName>([...NUMERIC, "Date", "String"]);

/** Whether a field of this type may be ordered: an untyped one by any value but a boolean (checked on the value). */
function ordered(type: FieldType): boolean {
  return type === UNTYPED || ORDERED.has(type);
}

/** The least value of each indexed kind: booleans, numbers, dates (the earliest instant a Date holds), strings. */
const KIND_LEAST: readonly Value[] = [false, Number.NEGATIVE_INFINITY, new Date(-8_640_000_000_000_000), ""];

/**
 * An untyped field's ranges: `ranges`, and every entry of each kind none of `values` has, from the kind's least
 * value to its end (an unbounded side stops at the edge of its bound's kind, secondary-index.ts); see the module
 * comment. A typed field's are `ranges` alone: its values all have its kind.
 */
function withOtherKinds(type: FieldType, ranges: IndexRange[], values: readonly Value[]): IndexRange[] {
  if (type !== UNTYPED) return ranges;
  const asked = new Set(values.map((value) => kindTagRange(value)?.first));
  const others = KIND_LEAST.filter((least) => !asked.has(kindTagRange(least)?.first));
  return [...ranges, ...others.map((low) => ({ low, lowInclusive: true, high: null, highInclusive: false }))];
}

/** The declared type of an indexed top-level field the expression reads, if it reads one. */
function indexedType(expr: Expr, fields: ReadonlyMap<string, FieldDecl>, runtimeIndexed: (field: string) => boolean): ScalarTypeName | undefined {
  if (expr.kind !== "property") return undefined;
  const decl = fields.get(expr.path);
  if (decl === undefined || decl.type.kind !== "scalar") return undefined;
  return decl.index !== undefined || runtimeIndexed(decl.name) ? decl.type.name : undefined;
}

/** A constant's or parameter's value; undefined for any other expression, or a parameter not supplied (the scan reports it). */
function rawValue(expr: Expr, scope: EvalScope): unknown {
  if (expr.kind === "constant") return expr.value;
  if (expr.kind !== "param") return undefined;
  try {
    return lookupParameter(expr.name, scope.parameters, "param");
  } catch {
    return undefined;
  }
}

function boundValue(expr: Expr, type: FieldType, scope: EvalScope): Value | undefined {
  const raw = rawValue(expr, scope);
  return raw === undefined ? undefined : asFieldKind(raw as Value, type);
}

/**
 * The value as the comparison with a field of this type would see it (an ISO string against a date is that date),
 * if it has the field's kind and is indexable; else undefined and the step scans. Any kind is an untyped field's.
 */
function asFieldKind(value: Value, type: FieldType): Value | undefined {
  let aligned: Value | undefined;
  if (type === UNTYPED) aligned = value;
  else if (NUMERIC.has(type)) aligned = typeof value === "number" || typeof value === "bigint" ? value : undefined;
  else if (type === "String") aligned = typeof value === "string" ? value : undefined;
  else if (type === "Boolean") aligned = typeof value === "boolean" ? value : undefined;
  else if (type === "Date") aligned = value instanceof Date ? value : typeof value === "string" ? new Date(value) : undefined;
  return aligned !== undefined && encodeIndexValue(aligned) !== undefined ? aligned : undefined;
}
