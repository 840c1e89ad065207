/**
 * The steps that turn records into JSON rows: `values`, `value_map` and `project`. Rows are already in their JSON
 * form (IDs as decimal strings, dates as ISO strings), so a values stream needs no rendering later.
 */
import type { Step } from "../protocol/tree.js";
import { valueToJson, type Value } from "../protocol/values.js";
import { evaluateExpr, type EvalScope } from "./predicates.js";
import { elementsOf, loaded, recordToJson, valuesStream, virtualPropertyJson, type Element, type Stream } from "./streams.js";

/** One property of a loaded element in JSON form; `$id`, `$label`, `$from`, `$to` included, missing as null. */
export async function propertyJson(element: Element, path: string, scope: EvalScope): Promise<unknown> {
  const virtual = virtualPropertyJson(element.record!, path);
  if (virtual !== undefined) return virtual;
  const value = await evaluateExpr({ kind: "property", path }, element, scope);
  return value === undefined ? null : valueToJson(value);
}

export async function project(step: Extract<Step, { op: "values" | "value_map" | "project" }>, scope: EvalScope): Promise<Stream> {
  const items = await loaded(scope.context.view, elementsOf(await scope.evalStep(step.input, scope), step.op));
  const rows: unknown[] = [];
  const { deadline } = scope.context;
  switch (step.op) {
    case "values":
      for (const element of items) {
        if (deadline.tick()) await deadline.pause();
        for (const path of step.properties) rows.push(await propertyJson(element, path, scope));
      }
      break;
    case "value_map":
      for (const element of items) {
        if (deadline.tick()) await deadline.pause();
        if (step.properties === undefined) rows.push(recordToJson(element.record!));
        else {
          const row: Record<string, unknown> = {};
          for (const path of step.properties) row[path] = await propertyJson(element, path, scope);
          rows.push(row);
        }
      }
      break;
    case "project":
      for (const element of items) {
        if (deadline.tick()) await deadline.pause();
        rows.push(await projectRow(step, element, scope));
      }
      break;
    default: {
      const unreachable: never = step;
      throw new Error(`unknown projection step ${JSON.stringify(unreachable)}`);
    }
  }
  return valuesStream(rows);
}

/** One row of `project`: the whole record first when `all` (less `exclude`), then each projection in order. */
async function projectRow(step: Extract<Step, { op: "project" }>, element: Element, scope: EvalScope): Promise<Record<string, unknown>> {
  const row: Record<string, unknown> = step.all ? recordToJson(element.record!) : {};
  for (const name of step.exclude) delete row[name];
  for (const projection of step.projections) {
    if (projection.kind === "property") row[projection.alias] = await propertyJson(element, projection.source, scope);
    else {
      const value = await evaluateExpr(projection.expr, element, scope);
      row[projection.alias] = value === undefined ? null : valueToJson(value as Value);
    }
  }
  return row;
}
