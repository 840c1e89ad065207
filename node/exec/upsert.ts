/**
 * Upserts (HelixQL's `UpsertN`, `UpsertV`, `UpsertE`): update what the input found, or create one record when it
 * found nothing. Only records of the upsert's label (and, for edges, between the named endpoints) count as found, so
 * an input that matched something else still creates.
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { wait, type Op } from "./ops.js";
import type { Step } from "../../protocol/tree.js";
import type { EvalScope } from "./predicates.js";
import { assignments, createEdges, createProps, createVector, evalInput, resolveEndpoints, updateAll } from "./mutations.js";
import { elements, elementsOf, loaded, type Element, type Stream } from "./streams.js";
import { toVector } from "./validation.js";

export type UpsertStep = Extract<Step, { op: "upsert_n" | "upsert_v" | "upsert_e" }>;

/** The loaded input elements of one kind and label, each once. */
function* found(input: Stream, step: UpsertStep, scope: EvalScope): Op<Element[]> {
  const kind = step.op === "upsert_n" ? "node" : step.op === "upsert_v" ? "vector" : "edge";
  const seen = new Set<bigint>();
  const candidates = elementsOf(input, step.op).filter((item) => item.kind === kind && !seen.has(item.id) && (seen.add(item.id), true));
  return (yield* loaded(scope.context.view, candidates)).filter((item) => item.record!.label === step.label);
}

export function* upsert(step: UpsertStep, input: Stream, scope: EvalScope): Op<Stream> {
  const matches = yield* found(input, step, scope);
  switch (step.op) {
    case "upsert_n": {
      if (matches.length > 0) return yield* updated(matches, step, scope);
      const props = yield* createProps("node", step.label, step.properties, scope);
      const record = { kind: "node", id: yield* wait(scope.context.view.allocate("node")), label: step.label, props } as const;
      scope.context.view.create(record);
      return elements([{ kind: "node", id: record.id, record }]);
    }
    case "upsert_v": {
      const vector = step.vector === undefined ? undefined : yield* evalInput(step.vector, scope);
      if (matches.length > 0) return yield* updated(matches, step, scope, vector === undefined ? undefined : toVector(vector, "upsert_v.vector"));
      if (vector === undefined) throw new SilkError("missing_property", `upsert_v found no ${step.label} and cannot create one without a vector`);
      return elements([yield* createVector("upsert_v", step.label, vector, step.properties, scope)]);
    }
    case "upsert_e": {
      const sources = yield* resolveEndpoints(step.from, scope, "upsert_e.from");
      const targets = yield* resolveEndpoints(step.to, scope, "upsert_e.to");
      const sourceIds = new Set(sources.map((item) => item.id));
      const targetIds = new Set(targets.map((item) => item.id));
      const between = matches.filter((item) => {
        const edge = item.record!;
        return edge.kind === "edge" && sourceIds.has(edge.from) && targetIds.has(edge.to);
      });
      if (between.length > 0) return yield* updated(between, step, scope);
      return elements(yield* createEdges(step.label, sources, targets, step.properties, scope));
    }
    default:
      return unreachable(step, "upsert");
  }
}

function* updated(matches: Element[], step: UpsertStep, scope: EvalScope, vector?: Float64Array): Op<Stream> {
  updateAll(matches, yield* assignments(step.properties, scope), scope, vector);
  return elements(matches);
}
