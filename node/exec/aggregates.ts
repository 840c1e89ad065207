/**
 * Aggregates over a whole stream: `aggregate` (sum, avg, min, max of a property or of the values themselves) into
 * one scalar, and `group_count` / `aggregate_by` into one row per distinct combination of property values, in the
 * order the combinations were first seen; HelixDB's `group_count` (one `property`) and `group` answer one row per
 * value instead, ordered by the value, as HelixDB v3 computes them (the same aggregate.rs): `{p, count}` and
 * `{p, count, ids}`, keyed in name order, a missing value grouped as null.
 *
 * HelixDB's `aggregate_by` form (`function` and `property`, decoded to an `aggregate` with a `field`) answers as
 * HelixDB v3 computes and serialises it (crates/db/src/execution/interpreter/stream/aggregate.rs): one row
 * `[{"<property>_<Function>": number}]` over the numeric values (numbers, and strings that read as one; anything
 * else is skipped), with 0 for min, max and mean of nothing.
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import type { Op } from "./ops.js";
import type { AggregateFunction, Step } from "../../protocol/tree.js";
import { compareStringsByCodePoint, compareValues, getPath, isPlainObject, totalOrder, type Properties, type Value } from "../../protocol/values.js";
import { evaluateExpr, exprNow, LATER, type EvalScope } from "./predicates.js";
import { propertyJson, propertyJsonNow } from "./projection.js";
import { elementsOf, loaded, recordToJson, valuesStream, type Stream } from "./streams.js";

/** The values an aggregate runs over; missing and null ones are skipped. */
function* aggregatedValues(step: Extract<Step, { op: "aggregate" }>, input: Stream, scope: EvalScope): Op<Value[]> {
  const path = step.path;
  let raw: (Value | undefined)[];
  switch (input.kind) {
    case "elements": {
      if (path === undefined) throw new SilkError("malformed_tree", `aggregate ${step.fn} over records needs a property`);
      const items = yield* loaded(scope.context.view, input.items);
      raw = [];
      const expr = { kind: "property", path } as const;
      for (const element of items) {
        const now = exprNow(expr, element, scope);
        raw.push(now !== LATER ? now : yield* evaluateExpr(expr, element, scope));
      }
      break;
    }
    case "values":
      // Rows of a projection are objects: `property` then picks one field of each.
      raw = (input.items as Value[]).map((item) => (path !== undefined && isPlainObject(item) ? getPath(item as Properties, path) : item));
      break;
    case "scalar":
      raw = [input.value as Value];
      break;
    default:
      unreachable(input, "stream");
  }
  return raw.filter((value): value is Value => value !== undefined && value !== null);
}

function numeric(value: Value, fn: AggregateFunction): number {
  const number = typeof value === "bigint" ? Number(value) : value;
  if (typeof number !== "number") throw new SilkError("invalid_type", `${fn} adds numbers, not ${JSON.stringify(value) ?? typeof value}`);
  return number;
}

export function* aggregate(step: Extract<Step, { op: "aggregate" }>, input: Stream, scope: EvalScope): Op<Stream> {
  if (step.field !== undefined) return yield* helixAggregate(step, step.field, input, scope);
  const values = yield* aggregatedValues(step, input, scope);
  switch (step.fn) {
    case "count":
      return { kind: "scalar", value: values.length };
    case "sum":
    case "avg": {
      let sum = 0;
      for (const value of values) sum += numeric(value, step.fn);
      if (step.fn === "sum") return { kind: "scalar", value: sum };
      return { kind: "scalar", value: values.length === 0 ? null : sum / values.length };
    }
    case "min":
    case "max": {
      const sign = step.fn === "min" ? -1 : 1;
      let best: Value | null = null;
      for (const value of values) {
        if (best === null) best = value;
        else {
          const order = compareValues(value, best);
          if (order === undefined) throw new SilkError("invalid_type", `${step.fn} cannot order ${JSON.stringify(value) ?? typeof value} against ${JSON.stringify(best) ?? typeof best}`);
          if (order * sign > 0) best = value;
        }
      }
      return { kind: "scalar", value: best };
    }
    default:
      return unreachable(step.fn, "aggregate");
  }
}

/**
 * HelixDB's `aggregate_by`: over records, the numeric values of the property (a search hit's `$distance`/`$score`
 * included) folded into the row `{field: number}`. Over values, only `count` runs, and answers the bare number of
 * values, as HelixDB's does; the other functions need records.
 */
function* helixAggregate(step: Extract<Step, { op: "aggregate" }>, field: string, input: Stream, scope: EvalScope): Op<Stream> {
  if (input.kind !== "elements") {
    if (step.fn === "count") return { kind: "scalar", value: input.kind === "values" ? input.items.length : 1 };
    throw new SilkError("malformed_tree", `aggregate_by ${step.fn} needs a stream of records, not of values`);
  }
  if (step.path === undefined) throw new SilkError("internal", "internal error (a bug in Silk): aggregate_by decoded without a property");
  const numbers: number[] = [];
  for (const element of yield* loaded(scope.context.view, input.items)) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    const now = propertyJsonNow(element, step.path, scope);
    const number = numericOf(now !== LATER ? now : yield* propertyJson(element, step.path, scope));
    if (number !== undefined) numbers.push(number);
  }
  return valuesStream([{ [field]: fold(step.fn, numbers) }]);
}

/** Rust's float syntax, which HelixDB's `str::parse::<f64>` reads a string with: no blanks, no hex, `inf` and `nan`. */
const RUST_FLOAT = /^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)$/i;

/** A property's JSON form as HelixDB's aggregates count it: numbers, and strings that parse as one (wide integers). */
function numericOf(json: unknown): number | undefined {
  if (typeof json === "number") return json;
  if (typeof json !== "string" || !RUST_FLOAT.test(json)) return undefined;
  const body = json.replace(/^[+-]/, "").toLowerCase();
  const sign = json.startsWith("-") ? -1 : 1;
  if (body === "nan") return Number.NaN;
  return body === "inf" || body === "infinity" ? sign * Number.POSITIVE_INFINITY : Number(json);
}

function fold(fn: AggregateFunction, numbers: readonly number[]): number {
  switch (fn) {
    case "count":
      return numbers.length;
    case "sum":
      return numbers.reduce((sum, number) => sum + number, 0);
    case "avg":
      return numbers.length === 0 ? 0 : numbers.reduce((sum, number) => sum + number, 0) / numbers.length;
    case "min":
      return numbers.length === 0 ? 0 : numbers.reduce((best, number) => Math.min(best, number));
    case "max":
      return numbers.length === 0 ? 0 : numbers.reduce((best, number) => Math.max(best, number));
    default:
      return unreachable(fn, "aggregate");
  }
}

interface Group {
  readonly row: Record<string, unknown>;
  count: number;
  readonly items: unknown[];
}

/**
 * `group_count` rows `{p1, ..., count}` and `aggregate_by` rows `{p1, ..., count, items}` (or, in its `count_data`
 * shape, `{count, data}`), one per combination.
 */
export function* group(step: Extract<Step, { op: "group_count" | "aggregate_by" }>, input: Stream, scope: EvalScope): Op<Stream> {
  if (step.op === "group_count" && step.order === "value") return yield* groupsByValue(step.properties[0], false, input, scope);
  const items = yield* loaded(scope.context.view, elementsOf(input, step.op));
  const groups = new Map<string, Group>();
  for (const element of items) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    const row: Record<string, unknown> = {};
    // A missing value groups as null (unlike a projection, which leaves it out): every row names every property.
    for (const path of step.properties) {
      const now = propertyJsonNow(element, path, scope);
      row[path] = (now !== LATER ? now : yield* propertyJson(element, path, scope)) ?? null;
    }
    const key = JSON.stringify(step.properties.map((path) => row[path]));
    let found = groups.get(key);
    if (found === undefined) {
      found = { row, count: 0, items: [] };
      groups.set(key, found);
    }
    found.count += 1;
    if (step.op === "aggregate_by") found.items.push(recordToJson(element.record!, scope.context.renderId));
  }
  const rows = [...groups.values()].map(({ row, count, items: members }) => {
    if (step.op === "group_count") return { ...row, count };
    return step.shape === "keyed" ? { ...row, count, items: members } : { count, data: members };
  });
  return valuesStream(rows);
}

/**
 * HelixDB's groups of one property: one row per distinct value (equal under `totalOrder`, so 2 and 2.0 are one
 * group), ordered by it; the row holds the value (null for records without one), `count`, and with `withIds` the IDs
 * of the group's records in stream order. Keys are in name order, as HelixDB serialises its rows (a BTreeMap).
 */
export function* groupsByValue(path: string, withIds: boolean, input: Stream, scope: EvalScope): Op<Stream> {
  const entries: { key: Value | undefined; json: unknown; id: bigint }[] = [];
  for (const element of yield* loaded(scope.context.view, elementsOf(input, withIds ? "group" : "group_count"))) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    const key = yield* evaluateExpr({ kind: "property", path }, element, scope);
    entries.push({ key, json: (yield* propertyJson(element, path, scope)) ?? null, id: element.id });
  }
  // Array.prototype.sort is stable: a group's records keep their stream order.
  entries.sort((a, b) => totalOrder(a.key, b.key));
  const rows: Record<string, unknown>[] = [];
  let ids: unknown[] = [];
  for (let i = 0; i < entries.length; i++) {
    ids.push(scope.context.renderId(entries[i].id));
    if (i + 1 < entries.length && totalOrder(entries[i].key, entries[i + 1].key) === 0) continue;
    const fields: [string, unknown][] = [[path, entries[i].json], ["count", ids.length]];
    if (withIds) fields.push(["ids", ids]);
    rows.push(Object.fromEntries(fields.sort(([a], [b]) => compareStringsByCodePoint(a, b))));
    ids = [];
  }
  return valuesStream(rows);
}
