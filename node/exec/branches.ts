/**
 * The branching steps: `union`, `coalesce`, `optional` and `choose` run sub-traversals once per element of their
 * input (the sub-traversal's `context` is that one element, so a `count` inside counts per element, as in
 * Gremlin); `repeat` runs its body over the whole frontier at once, level by level, so each iteration costs one
 * batched read per step. Results keep the input's order: element by element, then branch by branch. `intersect`
 * runs its sub-traversal once per element too, and keeps what every run reached.
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { wait, type Op } from "./ops.js";
import { REPEAT_ELEMENTS_MAX } from "../../protocol/limits.js";
import type { Predicate, Step } from "../../protocol/tree.js";
import { enterSubTraversal, evaluatePredicate, type EvalScope } from "./predicates.js";
import { concatStreams, elements, elementsOf, loaded, unitsOf, yieldsSomething, type Element, type Stream } from "./streams.js";

type BranchStep = Extract<Step, { op: "union" | "coalesce" | "optional" | "choose" }>;

function runFrom(traversal: Step, unit: Stream, scope: EvalScope): Op<Stream> {
  return wait(scope.evalStep(traversal, enterSubTraversal(scope, unit)));
}

export function* branch(step: BranchStep, input: Stream, scope: EvalScope): Op<Stream> {
  const pieces: Stream[] = [];
  const units = step.op === "choose" ? yield* chooseUnits(input, scope) : unitsOf(input);
  for (const unit of units) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    switch (step.op) {
      case "union":
        for (const traversal of step.traversals) pieces.push(yield* runFrom(traversal, unit, scope));
        break;
      case "coalesce":
        for (const traversal of step.traversals) {
          const result = yield* runFrom(traversal, unit, scope);
          if (yieldsSomething(result)) {
            pieces.push(result);
            break;
          }
        }
        break;
      case "optional": {
        const result = yield* runFrom(step.traversal, unit, scope);
        pieces.push(yieldsSomething(result) ? result : unit);
        break;
      }
      case "choose": {
        const element = (unit as { items: Element[] }).items[0];
        const chosen = (yield* evaluatePredicate(step.condition, element, scope)) ? step.then : step.otherwise;
        // Without an else branch, an element the condition rejects passes through unchanged.
        pieces.push(chosen === undefined ? unit : yield* runFrom(chosen, unit, scope));
        break;
      }
      default:
        unreachable(step, "branch");
    }
  }
  return yield* concatStreams(pieces, scope.context.view, scope.context.renderId);
}

/**
 * `intersect` (HelixQL's `::INTERSECT`), as HelixDB computes it: the sub-traversal runs once per input record, and
 * the records (by ID) that every run reached are kept, in the order of the smallest run's result (the earliest
 * record's among runs of equal size), a record that run reached twice twice. An empty input gives nothing.
 */
export function* intersect(step: Extract<Step, { op: "intersect" }>, input: Stream, scope: EvalScope): Op<Stream> {
  const runs: Element[][] = [];
  for (const unit of unitsOf(elements(elementsOf(input, "intersect")))) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    runs.push(elementsOf(yield* runFrom(step.traversal, unit, scope), "intersect"));
  }
  if (runs.length === 0) return elements([]);
  const seed = runs.reduce((smallest, run, index) => (run.length < runs[smallest].length ? index : smallest), 0);
  let common = new Set(runs[seed].map((item) => item.id));
  for (const [index, run] of runs.entries()) {
    if (index === seed) continue;
    const reached = new Set(run.map((item) => item.id));
    common = new Set([...common].filter((id) => reached.has(id)));
  }
  return elements(runs[seed].filter((item) => common.has(item.id)));
}

/** `choose` tests a predicate on each record, so its input must be records, loaded. */
function* chooseUnits(input: Stream, scope: EvalScope): Op<Stream[]> {
  return unitsOf(elements(yield* loaded(scope.context.view, elementsOf(input, "choose"))));
}

function* holding(items: Element[], predicate: Predicate, scope: EvalScope): Op<[Element[], Element[]]> {
  const yes: Element[] = [];
  const no: Element[] = [];
  for (const element of yield* loaded(scope.context.view, items)) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    ((yield* evaluatePredicate(predicate, element, scope)) ? yes : no).push(element);
  }
  return [yes, no];
}

/**
 * `repeat`, as HelixDB v3 runs it: levels L0 (the input), L1 = body(L0), ..., at most `times` iterations (and
 * `max_depth`). Each iteration emits the level it starts from (`before`, `all`) and the level it makes (`after`,
 * `all`; with `emit_predicate`, only its records that satisfy it), then ends the loop when the new level is empty or
 * any of its records satisfies `until`. The answer is what was emitted, or the last level when nothing is (`none`).
 */
export function* repeat(step: Extract<Step, { op: "repeat" }>, input: Stream, scope: EvalScope): Op<Stream> {
  const { config } = step;
  const iterations = Math.min(config.times ?? Infinity, config.maxDepth);
  const emitted: Element[] = [];
  let held = 0;
  let level = elementsOf(input, "repeat");
  for (let depth = 0; depth < iterations; depth += 1) {
    if (config.emit === "before" || config.emit === "all") append(emitted, level);
    const next = elementsOf(yield* runFrom(config.body, elements(level), scope), "repeat");
    held += next.length;
    if (held > REPEAT_ELEMENTS_MAX) throw new SilkError("limit_exceeded", `repeat reached more than ${REPEAT_ELEMENTS_MAX} records`);
    if (config.emit === "after" || config.emit === "all") append(emitted, config.emitPredicate === undefined ? next : (yield* holding(next, config.emitPredicate, scope))[0]);
    const stop = config.until !== undefined && (yield* holding(next, config.until, scope))[0].length > 0;
    level = next;
    if (level.length === 0 || stop) break;
  }
  return elements(config.emit === "none" ? level : emitted);
}

/** Appended one by one: spreading a level of a million records into push's arguments overflows the stack. */
function append(into: Element[], items: readonly Element[]): void {
  for (const item of items) into.push(item);
}
