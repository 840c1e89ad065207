/**
 * Row bindings and the terminals that read rows' elements: `bind` names each row's current element,
 * `project_bindings` turns each row into an object of values read from its current and bound elements, and
 * `edge_properties` turns each edge of a stream into its record object. Semantics follow HelixDB v3's interpreter
 * (`bind_rows`, `project_bindings`, `binding_projection_with_resolver`, `project_edge_properties`):
 *
 * - `bind` records the current element under the name (a later `bind` of the name replaces it); the element keeps
 *   its search score, so `$distance` / `$score` read through the binding.
 * - A `project_bindings` field whose target is unbound, or whose value is missing, is left out of the row; a
 *   `coalesce` field takes the first reference whose value is present and not null. With `distinct`, a row equal to
 *   an earlier one is dropped (the first occurrence stays).
 * - `edge_properties` skips what is not an edge. HelixDB's object is the properties with `$id`, `$from` and `$to`;
 *   Silk's is the whole record (with `$label`), as its other answers are.
 */
import type { Step } from "../../protocol/tree.js";
import { wait, type Op } from "./ops.js";
import type { BindingProjection, BindingTarget } from "../../protocol/tree-rows.js";
import { valueToJson, type Value } from "../../protocol/values.js";
import { rowValue, type EvalScope } from "./predicates.js";
import { rowOf, withRow } from "./rows.js";
import { elements, elementsOf, loaded, recordToJson, valuesStream, virtualPropertyJson, type Element, type Stream } from "./streams.js";
import { unreachable } from "../../protocol/errors.js";

export function* bindings(step: Extract<Step, { op: "bind" | "project_bindings" | "edge_properties" }>, scope: EvalScope): Op<Stream> {
  const items = elementsOf(yield* wait(scope.evalStep(step.input, scope)), step.op);
  switch (step.op) {
    case "bind":
      return elements(yield* bind(items, step.name, scope));
    case "project_bindings":
      return valuesStream(yield* projectBindings(items, step.projections, step.distinct, scope));
    case "edge_properties": {
      const edges = yield* loaded(scope.context.view, items.filter((item) => item.kind === "edge"));
      const rows: unknown[] = [];
      for (const edge of edges) {
        if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
        rows.push(recordToJson(edge.record!, scope.context.renderId));
      }
      return valuesStream(rows);
    }
    default:
      return unreachable(step, "step");
  }
}

function* bind(items: Element[], name: string, scope: EvalScope): Op<Element[]> {
  const bound: Element[] = [];
  for (const element of items) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    // The bound reference keeps what a projection reads (kind, ID, search score), not the row it came with.
    const reference: Element = element.hit === undefined ? { kind: element.kind, id: element.id } : { kind: element.kind, id: element.id, hit: element.hit };
    const names = new Map(rowOf(element).bindings);
    names.set(name, reference);
    bound.push(withRow(element, { bindings: names }));
  }
  return bound;
}

function targetOf(element: Element, target: BindingTarget): Element | undefined {
  return target.kind === "current" ? element : rowOf(element).bindings.get(target.name);
}

/** Every element the projections read, loaded in one batch per kind. */
function* loadTargets(items: readonly Element[], projections: readonly BindingProjection[], scope: EvalScope): Op<void> {
  // Rows share their bound elements (a binding is copied by reference), so each is read once.
  const targets = new Set<Element>();
  for (const element of items) {
    for (const projection of projections) {
      const refs = projection.kind === "property" ? [projection.target] : projection.refs.map((ref) => ref.target);
      for (const target of refs) {
        const found = targetOf(element, target);
        if (found !== undefined) targets.add(found);
      }
    }
  }
  yield* loaded(scope.context.view, [...targets]);
}

/** A bound element's field; its IDs (`$id`, `$from`, `$to`) as the answer writes IDs (JSON numbers on `/v2/query`). */
function* targetValue(target: Element, source: string, scope: EvalScope): Op<Value | undefined> {
  const virtual = target.record === undefined ? undefined : virtualPropertyJson(target.record, source, scope.context.renderId);
  return virtual !== undefined ? (virtual as Value) : yield* rowValue(target, source, scope);
}

function* projectedValue(element: Element, projection: BindingProjection, scope: EvalScope): Op<Value | undefined> {
  if (projection.kind === "property") {
    const target = targetOf(element, projection.target);
    return target === undefined ? undefined : yield* targetValue(target, projection.source, scope);
  }
  for (const ref of projection.refs) {
    const target = targetOf(element, ref.target);
    const value = target === undefined ? undefined : yield* targetValue(target, ref.source, scope);
    if (value !== undefined && value !== null) return value;
  }
  return undefined;
}

function* projectBindings(items: Element[], projections: readonly BindingProjection[], distinct: boolean, scope: EvalScope): Op<unknown[]> {
  yield* loadTargets(items, projections, scope);
  const rows: unknown[] = [];
  const seen = new Set<string>();
  for (const element of items) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    const row: Record<string, unknown> = {};
    for (const projection of projections) {
      const value = yield* projectedValue(element, projection, scope);
      if (value !== undefined) row[projection.alias] = valueToJson(value);
    }
    if (distinct) {
      const key = JSON.stringify(row);
      if (seen.has(key)) continue;
      seen.add(key);
    }
    rows.push(row);
  }
  return rows;
}
