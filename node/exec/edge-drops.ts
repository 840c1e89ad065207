/**
 * `drop_edge` / `drop_edge_labeled` (the edges out of the input's records to the `to` records, of one label or of
 * any) and `drop_edge_by_id` (edges named by reference). Edges that do not exist are simply not there to drop; the
 * steps write through the view like every mutation, so a failed invocation drops nothing.
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { wait, type Op } from "./ops.js";
import { parseId } from "../../protocol/ids.js";
import type { Ref, Step } from "../../protocol/tree.js";
import { type EvalScope } from "./predicates.js";
import { adjacencyOf, elements, elementsOf, lookupParameter, type Stream } from "./streams.js";

/** The IDs a reference names, or "all"; names of nothing are kept (they match nothing). */
function referencedIds(ref: Ref, scope: EvalScope, where: string): ReadonlySet<bigint> | "all" {
  switch (ref.kind) {
    case "all":
      return "all";
    case "ids":
      return new Set(ref.ids);
    case "var": {
      const stream = scope.variables.get(ref.name);
      if (stream === undefined) throw new SilkError("unknown_variable", `${where}: no earlier entry defines ${JSON.stringify(ref.name)}`);
      return new Set(elementsOf(stream, where).map((item) => item.id));
    }
    case "param": {
      const raw = lookupParameter(ref.name, scope.parameters, where);
      return new Set((Array.isArray(raw) ? raw : [raw]).map((id, i) => parseId(id, `parameter ${ref.name}[${i}]`)));
    }
    default:
      return unreachable(ref, "reference");
  }
}

function* dropEdgeIds(ids: Iterable<bigint>, scope: EvalScope): Op<void> {
  const { view } = scope.context;
  for (const edge of yield* wait(view.records("edge", [...ids]))) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    if (edge !== undefined) view.drop(edge);
  }
}

/** `drop_edge` answers its input (so a chain can go on, say to `add_e`); `drop_edge_by_id` its input, or nothing. */
export function* dropEdges(step: Extract<Step, { op: "drop_edge" | "drop_edge_by_id" }>, scope: EvalScope): Op<Stream> {
  switch (step.op) {
    case "drop_edge": {
      const input = yield* wait(scope.evalStep(step.input, scope));
      const owners = elementsOf(input, "drop_edge").filter((item) => item.kind !== "edge");
      const targets = referencedIds(step.to, scope, "drop_edge.to");
      const lists = yield* adjacencyOf(scope.context.view, owners, ["out"], step.label);
      const doomed = new Set<bigint>();
      for (const list of lists) for (const entry of list) if (targets === "all" || targets.has(entry.other)) doomed.add(entry.edge);
      yield* dropEdgeIds(doomed, scope);
      return input;
    }
    case "drop_edge_by_id": {
      const input = step.input === undefined ? elements([]) : yield* wait(scope.evalStep(step.input, scope));
      const named = referencedIds(step.edges, scope, "drop_edge_by_id.edges");
      yield* dropEdgeIds(named === "all" ? yield* wait(scope.context.view.allIds("edge")) : named, scope);
      return input;
    }
    default:
      return unreachable(step, "step");
  }
}
