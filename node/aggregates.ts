/**
 * Aggregates over a whole stream: `aggregate` (sum, avg, min, max, count of a property or of the values themselves)
 * into one scalar (or, for HelixDB's `aggregate_by` form, one row holding it), and `group_count` / `aggregate_by` into one row per distinct combination of property values, in the
 * order the combinations were first seen.
 */
import { SilkError } from "../protocol/errors.js";
import type { AggregateFunction, Step } from "../protocol/tree.js";
import { compareValues, getPath, isPlainObject, type Properties, type Value } from "../protocol/values.js";
import { evaluateExpr, type EvalScope } from "./predicates.js";
import { propertyJson } from "./projection.js";
import { elementsOf, loaded, recordToJson, valuesStream, type Stream } from "./streams.js";

/** The values an aggregate runs over; missing and null ones are skipped. */
async function aggregatedValues(step: Extract<Step, { op: "aggregate" }>, input: Stream, scope: EvalScope): Promise<Value[]> {
  const path = step.path;
  let raw: (Value | undefined)[];
  switch (input.kind) {
    case "elements": {
      if (path === undefined) throw new SilkError("malformed_tree", `aggregate ${step.fn} over records needs a property`);
      const items = await loaded(scope.context.view, input.items);
      raw = [];
      for (const element of items) raw.push(await evaluateExpr({ kind: "property", path }, element, scope));
      break;
    }
    case "values":
      // Rows of a projection are objects: `property` then picks one field of each.
      raw = (input.items as Value[]).map((item) => (path !== undefined && isPlainObject(item) ? getPath(item as Properties, path) : item));
      break;
    case "scalar":
      raw = [input.value as Value];
      break;
    default: {
      const unreachable: never = input;
      throw new Error(`unknown stream ${JSON.stringify(unreachable)}`);
    }
  }
  return raw.filter((value): value is Value => value !== undefined && value !== null);
}

function numeric(value: Value, fn: AggregateFunction): number {
  const number = typeof value === "bigint" ? Number(value) : value;
  if (typeof number !== "number") throw new SilkError("invalid_type", `${fn} adds numbers, not ${JSON.stringify(value) ?? typeof value}`);
  return number;
}

export async function aggregate(step: Extract<Step, { op: "aggregate" }>, input: Stream, scope: EvalScope): Promise<Stream> {
  const value = aggregateOf(step.fn, await aggregatedValues(step, input, scope));
  return step.field === undefined ? { kind: "scalar", value } : valuesStream([{ [step.field]: value }]);
}

function aggregateOf(fn: AggregateFunction, values: readonly Value[]): Value {
  switch (fn) {
    case "count":
      return values.length;
    case "sum":
    case "avg": {
      let sum = 0;
      for (const value of values) sum += numeric(value, fn);
      if (fn === "sum") return sum;
      return values.length === 0 ? null : sum / values.length;
    }
    case "min":
    case "max": {
      const sign = fn === "min" ? -1 : 1;
      let best: Value | null = null;
      for (const value of values) {
        if (best === null) best = value;
        else {
          const order = compareValues(value, best);
          if (order === undefined) throw new SilkError("invalid_type", `${fn} cannot order ${JSON.stringify(value) ?? typeof value} against ${JSON.stringify(best) ?? typeof best}`);
          if (order * sign > 0) best = value;
        }
      }
      return best;
    }
    default: {
      const unreachable: never = fn;
      throw new Error(`unknown aggregate ${String(unreachable)}`);
    }
  }
}

interface Group {
  readonly row: Record<string, unknown>;
  count: number;
  readonly items: unknown[];
}

/** `group_count` rows `{p1, ..., count}` and `aggregate_by` rows `{p1, ..., count, items}`, one per combination. */
export async function group(step: Extract<Step, { op: "group_count" | "aggregate_by" }>, input: Stream, scope: EvalScope): Promise<Stream> {
  const items = await loaded(scope.context.view, elementsOf(input, step.op));
  const groups = new Map<string, Group>();
  for (const element of items) {
    if (scope.context.deadline.tick()) await scope.context.deadline.pause();
    const row: Record<string, unknown> = {};
    // A missing value groups as null (unlike a projection, which leaves it out): every row names every property.
    for (const path of step.properties) row[path] = (await propertyJson(element, path, scope)) ?? null;
    const key = JSON.stringify(step.properties.map((path) => row[path]));
    let found = groups.get(key);
    if (found === undefined) {
      found = { row, count: 0, items: [] };
      groups.set(key, found);
    }
    found.count += 1;
    if (step.op === "aggregate_by") found.items.push(recordToJson(element.record!));
  }
  const rows = [...groups.values()].map(({ row, count, items: members }) =>
    step.op === "group_count" ? { ...row, count } : { ...row, count, items: members },
  );
  return valuesStream(rows);
}
