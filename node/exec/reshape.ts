/**
 * Steps that reshape or name a whole stream: `fold` / `unfold`, `order_by` / `order_by_multiple`, the
 * edge filters `edge_has` / `edge_has_label`, and the named streams `inject`, `as`, `store` and `select` (which read
 * and write the invocation's variables, the same names entries define).
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { andThen, ready, wait, type Maybe, type Op } from "./ops.js";
import type { RecordKind } from "../../protocol/records.js";
import type { Expr, Order, OrderRule, Step } from "../../protocol/tree.js";
import { compareValues, type Value } from "../../protocol/values.js";
import { evalInput } from "./mutations.js";
import { pacedFirst, sortNow } from "./paced-sort.js";
import { evaluateExpr, evaluatePredicate, exprNow, LATER, type EvalScope } from "./predicates.js";
import { concatStreams, elements, elementsOf, loaded, loadedNow, streamToJson, valuesStream, type Element, type Stream } from "./streams.js";

type ReshapeStep = Extract<Step, { op: "fold" | "unfold" | "edge_has" | "edge_has_label" }>;
export type OrderStep = Extract<Step, { op: "order_by" | "order_by_multiple" }>;

export function* reshape(step: ReshapeStep, input: Stream, scope: EvalScope): Op<Stream> {
  const { view } = scope.context;
  switch (step.op) {
    case "fold":
      // One array of the stream's JSON form (records as record objects): a barrier, like Gremlin's fold.
      return { kind: "scalar", value: input.kind === "scalar" ? [yield* streamToJson(input, view, scope.context.renderId)] : yield* streamToJson(input, view, scope.context.renderId) };
    case "unfold":
      return unfold(input);
    case "edge_has": {
      const value = (yield* evalInput(step.value, scope)) as Value;
      const edges = yield* loaded(view, elementsOf(input, step.op).filter((item) => item.kind === "edge"));
      const kept: Element[] = [];
      for (const edge of edges) {
        if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
        const predicate = { kind: "compare", op: "eq", left: { kind: "property", path: step.path }, right: { kind: "constant", value } } as const;
        if (yield* evaluatePredicate(predicate, edge, scope)) kept.push(edge);
      }
      return elements(kept);
    }
    case "edge_has_label": {
      const edges = yield* loaded(view, elementsOf(input, step.op).filter((item) => item.kind === "edge"));
      return elements(edges.filter((edge) => edge.record!.label === step.label));
    }
    default:
      return unreachable(step, "step");
  }
}

/** A folded array (or a values stream of arrays) spread into its items; records pass through. */
function unfold(input: Stream): Stream {
  switch (input.kind) {
    case "elements":
      return input;
    case "values":
      return valuesStream(input.items.flatMap((item) => (Array.isArray(item) ? item : [item])));
    case "scalar":
      return valuesStream(Array.isArray(input.value) ? input.value : input.value === null || input.value === undefined ? [] : [input.value]);
    default:
      return unreachable(input, "stream");
  }
}

/**
 * `order_by` and `order_by_multiple`: records sorted by each key in turn (an expression evaluated with the record as
 * the current element). A key that is absent or null is missing; where missing keys go and how ties break is the
 * step's rule (protocol/tree.ts OrderRule): HelixDB v3 ranks a missing key below every value and breaks ties by
 * element, HelixQL puts missing keys last in either order and keeps ties in stream order (the sort is stable).
 * `keep`: only the first `keep` of the sorted records are read (a `range` or `limit` of the ordering, executor.ts
 * `page`), selected without sorting the rest (paced-sort.ts `pacedFirst`). Plain while nothing waits.
 */
export function order(step: OrderStep, input: Stream, scope: EvalScope, keep = Infinity): Maybe<Stream> {
  const orderings: readonly (readonly [Expr, Order])[] =
    step.op === "order_by" ? [[step.by, step.order]] : step.orderings.map(([path, direction]): [Expr, Order] => [{ kind: "property", path }, direction]);
  const items = loadedNow(scope.context.view, elementsOf(input, step.op));
  const keyed = ready(items) ? keyedNow(items, orderings, scope) : andThen(items, (value) => keyedNow(value, orderings, scope));
  const sort = (records: Keyed[]): Maybe<Stream> => andThen(sortKeyed(records, orderings, step.rule, keep, scope), elements);
  return ready(keyed) ? sort(keyed) : andThen(keyed, sort);
}

/** A record and its sort keys. */
interface Keyed {
  readonly element: Element;
  readonly keys: (Value | undefined)[];
}

/** Each record with its keys: a plain loop while every key is read from the record itself and the slice lasts. */
function keyedNow(items: readonly Element[], orderings: readonly (readonly [Expr, Order])[], scope: EvalScope): Maybe<Keyed[]> {
  const keyed: Keyed[] = [];
  for (let i = 0; i < items.length; i++) {
    if (scope.context.deadline.tick()) return keyedFrom(items, orderings, scope, i, keyed, true);
    const keys: (Value | undefined)[] = [];
    for (const [by] of orderings) {
      const now = exprNow(by, items[i], scope);
      if (now === LATER) return keyedFrom(items, orderings, scope, i, keyed, false);
      keys.push(now);
    }
    keyed.push({ element: items[i], keys });
  }
  return keyed;
}

/** `keyedNow` from the `from`th record on, into `keyed`; `paused`: that record's slice check said to pause. */
function* keyedFrom(items: readonly Element[], orderings: readonly (readonly [Expr, Order])[], scope: EvalScope, from: number, keyed: Keyed[], paused: boolean): Op<Keyed[]> {
  const { deadline } = scope.context;
  for (let i = from; i < items.length; i++) {
    if (i === from ? paused : deadline.tick()) yield deadline.pause();
    const keys: (Value | undefined)[] = [];
    for (const [by] of orderings) {
      const now = exprNow(by, items[i], scope);
      keys.push(now !== LATER ? now : yield* evaluateExpr(by, items[i], scope));
    }
    keyed.push({ element: items[i], keys });
  }
  return keyed;
}

function sortKeyed(keyed: Keyed[], orderings: readonly (readonly [Expr, Order])[], rule: OrderRule, keep: number, scope: EvalScope): Maybe<Element[]> {
  const compare = (a: Keyed, b: Keyed): number => {
    for (let i = 0; i < orderings.length; i += 1) {
      const [left, right] = [a.keys[i], b.keys[i]];
      const direction = orderings[i][1] === "asc" ? 1 : -1;
      const leftMissing = left === undefined || left === null;
      const rightMissing = right === undefined || right === null;
      if (leftMissing || rightMissing) {
        if (leftMissing === rightMissing) continue;
        // HelixDB v3: missing is below every value, so the direction flips it; HelixQL: last either way.
        return (leftMissing ? 1 : -1) * (rule === "helixdb_v3" ? -direction : 1);
      }
      const order = (compareValues(left, right) ?? 0) * direction;
      if (order !== 0) return order;
    }
    return rule === "helixdb_v3" ? compareElements(a.element, b.element) : 0;
  };
  const { deadline } = scope.context;
  const sorted = keep < keyed.length ? pacedFirst(keyed, compare, keep, deadline) : sortNow(keyed, compare, deadline);
  return andThen(sorted, (records) => records.map((item) => item.element));
}

/** HelixDB v3's tie-break: by the element, nodes before edges (before Silk's vectors), then by ID ascending. */
const KIND_RANK: Readonly<Record<RecordKind, number>> = { node: 0, edge: 1, vector: 2 };

function compareElements(left: Element, right: Element): number {
  const kinds = KIND_RANK[left.kind] - KIND_RANK[right.kind];
  if (kinds !== 0) return kinds;
  return left.id < right.id ? -1 : left.id > right.id ? 1 : 0;
}

type NamedStep = Extract<Step, { op: "inject" | "as" | "store" | "select" }>;

/** `as` binds the stream to a name and passes it on; `store` appends to the name; `select` and `inject` read one. */
export function* named(step: NamedStep, scope: EvalScope): Op<Stream> {
  const { variables } = scope;
  const lookup = (name: string): Stream => {
    const stream = variables.get(name);
    if (stream === undefined) throw new SilkError("unknown_variable", `${step.op}: no earlier entry or step defines ${JSON.stringify(name)}`);
    return stream;
  };
  switch (step.op) {
    case "as": {
      const stream = yield* wait(scope.evalStep(step.input, scope));
      variables.set(step.name, stream);
      return stream;
    }
    case "store": {
      const stream = yield* wait(scope.evalStep(step.input, scope));
      const earlier = variables.get(step.name);
      variables.set(step.name, earlier === undefined ? stream : yield* concatStreams([earlier, stream], scope.context.view, scope.context.renderId));
      return stream;
    }
    case "select":
      yield* wait(scope.evalStep(step.input, scope));
      return lookup(step.name);
    case "inject": {
      const injected = lookup(step.variable);
      if (step.input === undefined) return injected;
      return yield* concatStreams([yield* wait(scope.evalStep(step.input, scope)), injected], scope.context.view, scope.context.renderId);
    }
    default:
      return unreachable(step, "step");
  }
}
