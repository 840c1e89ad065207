/**
 * The steps that turn records into JSON rows: `values`, `value_map` and `project`. Rows are already in their JSON
 * form (IDs as decimal strings, dates as ISO strings), so a values stream needs no rendering later.
 *
 * Rows are shaped as HelixDB v3 serialises them (crates/db/src/execution/interpreter/stream/projection/rows.rs): a
 * property the element does not have is left out of its row, not given as null; `values` answers one object per
 * element (elements with none of the properties give no object); a search hit's `$distance` or `$score` reads like a
 * property. Expression items of `project` are always present, null when they evaluate to nothing, as there.
 */
import type { Step } from "../../protocol/tree.js";
import { andThen, ready, type Maybe, type Op } from "./ops.js";
import { valueToJson, type Value } from "../../protocol/values.js";
import { evaluateExpr, exprNow, LATER, type EvalScope } from "./predicates.js";
import { elementsOf, loadedNow, recordToJson, valuesStream, virtualPropertyJson, type Element, type Stream } from "./streams.js";
import { unreachable } from "../../protocol/errors.js";

/**
 * One property of a loaded element in JSON form, undefined when the element has none. Virtual properties: `$id`,
 * `$label`, an edge's `$from` and `$to`, and a search hit's `$distance` (vector searches) or `$score` (text searches
 * and rerankers), which the hit keeps until a step leaves the hit stream.
 */
export function* propertyJson(element: Element, path: string, scope: EvalScope): Op<unknown> {
  const now = propertyJsonNow(element, path, scope);
  if (now !== LATER) return now;
  const value = yield* evaluateExpr({ kind: "property", path }, element, scope);
  return value === undefined ? undefined : valueToJson(value);
}

/** `propertyJson` of a path that reads nothing but the element's record; LATER for an endpoint's (`$from.name`). */
export function propertyJsonNow(element: Element, path: string, scope: EvalScope): unknown {
  const virtual = virtualPropertyJson(element.record!, path, scope.context.renderId);
  if (virtual !== undefined) return virtual;
  const { hit } = element;
  if (path === "$distance") return hit?.measure === "distance" ? hit.score : undefined;
  if (path === "$score") return hit?.measure === "relevance" ? hit.score : undefined;
  const value = exprNow({ kind: "property", path }, element, scope);
  return value === undefined || value === LATER ? value : valueToJson(value);
}

/** `values`, `value_map` and `project` of their input's records: plain while no row has to wait (ops.ts). */
export function project(step: ProjectionStep, input: Stream, scope: EvalScope): Maybe<Stream> {
  const items = loadedNow(scope.context.view, elementsOf(input, step.op));
  return ready(items) ? rowsFrom(step, items, scope, 0, [], [], false) : andThen(items, (value) => rowsFrom(step, value, scope, 0, [], [], false));
}

export type ProjectionStep = Extract<Step, { op: "values" | "value_map" | "project" }>;

/**
 * The rows of the `from`th element on, added to `rows` (and, for `values`, its flat `values`); `ticked`: the
 * `from`th's deadline tick is done. At a row or pause that must wait it answers an op that goes on from there.
 */
function rowsFrom(step: ProjectionStep, items: Element[], scope: EvalScope, from: number, rows: unknown[], values: unknown[], ticked: boolean): Maybe<Stream> {
  const { deadline } = scope.context;
  for (let i = from; i < items.length; i++) {
    if (!ticked && deadline.tick()) return andThen(deadline.pause(), () => rowsFrom(step, items, scope, i, rows, values, true));
    ticked = false;
    const row = rowOf(step, items[i], scope);
    if (!ready(row)) {
      return andThen(row, (value) => {
        addRow(step, value, rows, values);
        return rowsFrom(step, items, scope, i + 1, rows, values, false);
      });
    }
    addRow(step, row, rows, values);
  }
  return step.op === "values" ? valuesStream(values, rows) : valuesStream(rows);
}

function rowOf(step: ProjectionStep, element: Element, scope: EvalScope): Maybe<Record<string, unknown>> {
  switch (step.op) {
    case "values":
    case "value_map": {
      if (step.properties === undefined) return recordToJson(element.record!, scope.context.renderId);
      const now = selectedRowNow(element, step.properties, scope);
      return now !== LATER ? now : selectedRow(element, step.properties, scope);
    }
    case "project":
      return projectRow(step, element, scope);
    default:
      return unreachable(step, "projection step");
  }
}

/**
 * A `values` row keeps one value per element and property (null for a missing one) in `values`: the flat form
 * expressions such as `first` read (HelixQL's `x::ToN::{age}`); its answer is HelixDB's, one object per element
 * (none for an element with none of the properties). Other rows are answered as they are.
 */
function addRow(step: ProjectionStep, row: Record<string, unknown>, rows: unknown[], values: unknown[]): void {
  if (step.op !== "values") {
    rows.push(row);
    return;
  }
  for (const path of step.properties) values.push(row[path] ?? null);
  if (Object.keys(row).length > 0) rows.push(row);
}

/** The listed properties the element has, keyed by path as written; missing ones are left out. */
/** `selectedRow` when no path reads another record, else LATER. */
function selectedRowNow(element: Element, paths: readonly string[], scope: EvalScope): Record<string, unknown> | typeof LATER {
  const row: Record<string, unknown> = {};
  for (const path of paths) {
    const value = propertyJsonNow(element, path, scope);
    if (value === LATER) return LATER;
    if (value !== undefined) row[path] = value;
  }
  return row;
}

function* selectedRow(element: Element, paths: readonly string[], scope: EvalScope): Op<Record<string, unknown>> {
  const row: Record<string, unknown> = {};
  for (const path of paths) {
    const value = yield* propertyJson(element, path, scope);
    if (value !== undefined) row[path] = value;
  }
  return row;
}

/** One row of `project`: the whole record first when `all` (less `exclude`), then each projection in order. */
function* projectRow(step: Extract<Step, { op: "project" }>, element: Element, scope: EvalScope): Op<Record<string, unknown>> {
  const row: Record<string, unknown> = step.all ? recordToJson(element.record!, scope.context.renderId) : {};
  for (const name of step.exclude) delete row[name];
  for (const projection of step.projections) {
    if (projection.kind === "property") {
      const value = yield* propertyJson(element, projection.source, scope);
      if (value !== undefined) row[projection.alias] = value;
    } else if (projection.expr.kind === "id") {
      // The `id` expression's value is an ID: written as the answer writes IDs (a JSON number on `/v2/query`).
      row[projection.alias] = scope.context.renderId(element.id);
    } else {
      const value = yield* evaluateExpr(projection.expr, element, scope);
      row[projection.alias] = value === undefined ? null : valueToJson(value as Value);
    }
  }
  return row;
}
