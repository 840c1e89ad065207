/**
 * Traversals that carry rows (rows.ts), and the path steps. HelixDB v3 records, per row, every element the row was
 * current at: a source's element, then each element a traversal moves it to (`out`/`in`/`both` append nodes only,
 * `out_e` then `in_n` append the edge and then the node; its `ExecutionRow::set_current`). `path` shows that path
 * in the answer, and `simple_path` keeps the rows whose path repeats no element (without showing it).
 *
 * The executor's own traversals read one adjacency batch for a whole stream and forget which element each result
 * came from; rows need that link, so `traverseRows` reads adjacency per owner (still one batched read per step) and
 * moves each row to each of its results. It runs when an input element has a row, or when a `path` or
 * `simple_path` step is evaluating its input (`EvalScope.trackPaths`), so a plain traversal pays nothing for rows.
 */
import type { Direction, StoredRecord } from "../../protocol/records.js";
import { wait, type Op } from "./ops.js";
import type { Step } from "../../protocol/tree.js";
import type { EvalScope } from "./predicates.js";
import { isSimplePath, movedTo, rowOf, withRow } from "./rows.js";
import { adjacencyOf, elements, elementsOf, loaded, tooManyElements, type Element, type Stream } from "./streams.js";
import { unreachable } from "../../protocol/errors.js";
import { RESULT_ELEMENTS_MAX } from "../../protocol/limits.js";

export type TraversalStep = Extract<Step, { op: "out" | "in" | "both" | "out_e" | "in_e" | "both_e" | "out_n" | "in_n" | "other_n" }>;

/** Whether a traversal over `items` must carry rows: one of them has a row, or a path step is tracking paths. */
export function carriesRows(items: readonly Element[], scope: EvalScope): boolean {
  return scope.trackPaths === true || items.some((item) => item.row !== undefined);
}

/** The executor's traversal (executor.ts `traverse`) with each result moved on from the row it was reached from. */
export function* traverseRows(step: TraversalStep, items: Element[], scope: EvalScope): Op<Stream> {
  const { view, deadline } = scope.context;
  const moved: Element[] = [];
  const push = (from: Element, next: Element): void => {
    if (moved.length >= RESULT_ELEMENTS_MAX) throw tooManyElements();
    moved.push(movedTo(from, next));
  };
  switch (step.op) {
    case "out":
    case "in":
    case "both":
    case "out_e":
    case "in_e":
    case "both_e": {
      const directions: Direction[] = step.op === "both" || step.op === "both_e" ? ["out", "in"] : [step.op.startsWith("out") ? "out" : "in"];
      const owners = items.filter((item) => item.kind !== "edge");
      const lists = yield* adjacencyOf(view, owners, directions, step.label);
      const toEdges = step.op.endsWith("_e");
      for (let i = 0; i < owners.length; i++) {
        if (deadline.tick()) yield deadline.pause();
        for (const entry of lists[i]) {
          push(owners[i], toEdges ? { kind: "edge", id: entry.edge, via: owners[i].id } : { kind: entry.otherKind, id: entry.other });
        }
      }
      return elements(moved);
    }
    case "out_n":
    case "in_n":
    case "other_n":
      for (const element of yield* loaded(view, items.filter((item) => item.kind === "edge"))) {
        if (deadline.tick()) yield deadline.pause();
        const edge = element.record as Extract<StoredRecord, { kind: "edge" }>;
        // As the executor's: other_n is the end the edge was not reached from; an edge not reached from one, its target.
        const source = step.op === "in_n" || (step.op === "other_n" && element.via === edge.to && edge.from !== edge.to);
        push(element, source ? { kind: edge.fromKind, id: edge.from } : { kind: edge.toKind, id: edge.to });
      }
      return elements(moved);
    default:
      return unreachable(step, "traversal");
  }
}

/** `path` shows each row's path; `simple_path` keeps the rows whose path repeats no element. */
export function* walk(step: Extract<Step, { op: "path" | "simple_path" }>, scope: EvalScope): Op<Stream> {
  // The input's traversals record paths only while some step will read them.
  const items = elementsOf(yield* wait(scope.evalStep(step.input, { ...scope, trackPaths: true })), step.op);
  const { deadline } = scope.context;
  const result: Element[] = [];
  for (const element of items) {
    if (deadline.tick()) yield deadline.pause();
    if (step.op === "path") result.push(withRow(element, { pathVisible: true }));
    else if (isSimplePath(rowOf(element).path)) result.push(element);
  }
  return elements(result);
}
