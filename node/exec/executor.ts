/**
 * Executes a decoded operation tree (protocol/tree.ts) against a TxnView. Steps work a whole stream at a time, so
 * each step costs one batched read per partition, not one per element. The executor knows nothing of partitions,
 * LMDB or transports: the view hides them, and the caller commits (or abandons) the view's mutations.
 *
 * This module runs entries and the reading steps (sources, traversals, filters, paging, ordering) and hands the
 * others to their modules: projection.ts, aggregates.ts, paths.ts, mutations.ts and upsert.ts.
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { andThen, ready, runAsync, wait, type Maybe, type Op } from "./ops.js";
import { idRendererOf } from "../../protocol/ids.js";
import type { QueryResult } from "../../protocol/messages.js";
import type { Direction, RecordKind, StoredRecord } from "../../protocol/records.js";
import { childSteps, sourceKind, type Bound, type Entry, type Plan, type Predicate, type Ref, type Step } from "../../protocol/tree.js";
import { aggregate, group, groupsByValue } from "./aggregates.js";
import { branch, intersect, repeat } from "./branches.js";
import { dropEdges } from "./edge-drops.js";
import { mutate, requireWritable } from "./mutations.js";
import { shortestPaths } from "./paths.js";
import { rerank, search } from "./search.js";
import { ExplainLog, sourceIds } from "./planner.js";
import { evaluateExpr, evaluatePredicate, LATER, predicateNow, type EvalScope } from "./predicates.js";
import { project, type ProjectionStep } from "./projection.js";
import { named, order, reshape, type OrderStep } from "./reshape.js";
import { bindings } from "./bindings.js";
import { sack } from "./sacks.js";
import { carriesRows, traverseRows, walk } from "./walks.js";
import { adjacencyOf, elements, elementsOf, existing, loaded, loadedNow, lookupParameter, parameterIds, streamToJsonNow, variableElements, type Element, type ExecutionContext, type Stream } from "./streams.js";
import { neighboursOf } from "./txn-view.js";
import { checkUniqueWrites } from "./unique.js";
import { countWithoutElements, pageWithoutElements, plainBound } from "./pushdown.js";
import { checkUniqueEdges } from "./unique-edges.js";
import { upsert } from "./upsert.js";

export type { Element, ExecutionContext, Stream } from "./streams.js";

/** `planRun` as a promise, for callers whose reads may be remote (a cluster's coordinator). */
export function executePlan(plan: Plan, base: Omit<ExecutionContext, "renderId">, parameters: Plan["parameters"] = plan.parameters): Promise<QueryResult> {
  return runAsync(planRun(plan, base, parameters));
}

/**
 * Runs a plan's entries, checks its writes against UNIQUE indexes and UNIQUE edge types (before the caller commits
 * them) and renders what it returns, plus `$explain` when the plan asks for it. A plain function answering a Maybe
 * (ops.ts): the result when nothing had to wait, building no generator, else an op a partition drives.
 */
export function planRun(plan: Plan, base: Omit<ExecutionContext, "renderId">, parameters: Plan["parameters"] = plan.parameters): Maybe<QueryResult> {
  // Built field by field, not spread: a spread context's shape follows its base's, and its every read site goes megamorphic.
  const context: ExecutionContext = {
    view: base.view,
    schema: base.schema,
    now: base.now,
    writable: base.writable,
    deadline: base.deadline,
    explain: plan.explain ? new ExplainLog() : undefined,
    runtimeIndex: base.runtimeIndex,
    embedder: base.embedder,
    renderId: idRendererOf(plan),
  };
  const variables = new Map<string, Stream>();
  checkReturns(plan);
  const scope: EvalScope = { context, variables, parameters, evalStep };
  const ran = runEntries(plan.entries, scope, false, plan.returns);
  return ready(ran) ? finishRun(plan, context, variables) : andThen(ran, () => finishRun(plan, context, variables));
}

/** After the entries: the UNIQUE checks of the writes, then the returns rendered. */
function finishRun(plan: Plan, context: ExecutionContext, variables: Map<string, Stream>): Maybe<QueryResult> {
  if (!context.view.hasWrites) return renderReturns(plan, context, variables, 0, {});
  return andThen(checkWrites(context), () => renderReturns(plan, context, variables, 0, {}));
}

function* checkWrites(context: ExecutionContext): Op<void> {
  yield* checkUniqueWrites(context.view, context.schema, context.runtimeIndex);
  yield* checkUniqueEdges(context.view, context.schema);
}

/** Renders the plan's returns from the `from`th on into `result`, then the `$explain`, and checks the deadline. */
function renderReturns(plan: Plan, context: ExecutionContext, variables: Map<string, Stream>, from: number, result: QueryResult): Maybe<QueryResult> {
  for (let i = from; i < plan.returns.length; i++) {
    const name = plan.returns[i];
    const json = render(variables.get(name) ?? { kind: "elements", items: [] }, context);
    if (!ready(json)) {
      return andThen(json, (value) => {
        result[name] = value;
        return renderReturns(plan, context, variables, i + 1, result);
      });
    }
    result[name] = json;
  }
  if (context.explain !== undefined) result.$explain = context.explain.steps;
  // The last check before the caller commits: an invocation that finished late is rolled back all the same.
  context.deadline.check();
  return result;
}

/** Plans (by their entries, which a prepared plan's runs share) whose returns were found defined. */
const checkedReturns = new WeakMap<readonly Entry[], readonly string[]>();

/** Every returned name must be defined by the plan; checked once per prepared plan, not on every run. */
function checkReturns(plan: Plan): void {
  if (checkedReturns.get(plan.entries) === plan.returns) return;
  const defined = new Set<string>();
  collectNames(plan.entries, defined);
  for (const name of plan.returns) {
    if (!defined.has(name)) throw new SilkError("unknown_variable", `returns names ${JSON.stringify(name)}, which no entry defines`);
  }
  checkedReturns.set(plan.entries, plan.returns);
}

/** The names a plan can return: its entries' names, and the streams its steps bind with `as` and `store`. */
function collectNames(entries: readonly Entry[], names: Set<string>): void {
  const walk = (step: Step): void => {
    if (step.op === "as" || step.op === "store") names.add(step.name);
    childSteps(step).forEach(walk);
  };
  for (const entry of entries) {
    switch (entry.kind) {
      case "query":
        if (entry.name !== undefined) names.add(entry.name);
        walk(entry.root);
        break;
      case "for_each":
        collectNames(entry.body, names);
        break;
      case "index_operation":
        if (entry.name !== undefined) names.add(entry.name);
        break;
      default:
        unreachable(entry, "entry");
    }
  }
}

/**
 * Runs entries from the `from`th on (`previous`: the stream of the entry before it; `checked`: the `from`th's slice
 * check is done). Plain while nothing waits; at a wait it answers an op that goes on from there.
 * `returns`: the names the plan returns, whose source reads load records at once (they are rendered).
 */
function runEntries(entries: readonly Entry[], scope: EvalScope, appendToVariables: boolean, returns: readonly string[], from = 0, previous?: Stream, checked = false): Maybe<void> {
  const { context, variables } = scope;
  for (let i = from; i < entries.length; i++) {
    const entry = entries[i];
    if (entry.kind === "for_each") return andThen(runForEach(entry, scope, returns), () => runEntries(entries, scope, appendToVariables, returns, i + 1, previous));
    if (entry.kind === "index_operation") throw new SilkError("internal", "internal error (a bug in Silk): index operations run in the coordinator, not the executor");
    if (!checked && context.deadline.checkSlice()) return andThen(context.deadline.pause(), () => runEntries(entries, scope, appendToVariables, returns, i, previous, true));
    checked = false;
    if (entry.condition && !conditionHolds(entry.condition, variables, previous)) continue;
    if (context.explain !== undefined) context.explain.entry = entry.name ?? null;
    // The entry's slice check above is its root step's: nothing runs between them.
    const stream = stepStream(entry.root, scope, entry.name !== undefined && returns.includes(entry.name));
    if (!ready(stream)) {
      return andThen(stream, (value) => {
        bindEntry(entry, value, variables, appendToVariables);
        return runEntries(entries, scope, appendToVariables, returns, i + 1, value);
      });
    }
    bindEntry(entry, stream, variables, appendToVariables);
    previous = stream;
  }
  return undefined;
}

/** Binds an entry's stream to its name (a FOR body's entries collect theirs over its iterations). */
function bindEntry(entry: Extract<Entry, { kind: "query" }>, stream: Stream, variables: Map<string, Stream>, appendToVariables: boolean): void {
  if (entry.name === undefined) return;
  const earlier = variables.get(entry.name);
  if (!appendToVariables) variables.set(entry.name, stream);
  else if (stream.kind === "scalar") {
    // A FOR body's count or EXISTS collects one value per iteration, as its records and values do.
    const before = earlier === undefined ? [] : earlier.kind === "values" ? earlier.items : earlier.kind === "scalar" ? [earlier.value] : undefined;
    variables.set(entry.name, before === undefined ? stream : { kind: "values", items: [...before, stream.value] });
  } else if (earlier && earlier.kind === stream.kind) {
    variables.set(entry.name, { kind: stream.kind, items: [...(earlier as typeof stream).items, ...stream.items] } as Stream);
  } else variables.set(entry.name, stream);
}

/**
 * Runs a body once per element of an array parameter. With `as`, the element (any JSON value) is bound as that one
 * parameter; without, each element must be an object whose fields become parameters. Over a variable (`source`
 * "var"), each of its records is bound in turn as the one-record variable `as`, which is gone after the loop.
 */
function* runForEach(entry: Extract<Entry, { kind: "for_each" }>, scope: EvalScope, returns: readonly string[]): Op<void> {
  const { context, variables, parameters } = scope;
  if (entry.source === "var") {
    const as = entry.as as string; // the decoder requires it with var
    const stream = variables.get(entry.over);
    if (stream === undefined) throw new SilkError("unknown_variable", `for_each: no earlier entry defines ${JSON.stringify(entry.over)}`);
    const elements = elementsOf(stream, "for_each");
    const shadowed = variables.get(as);
    for (const element of elements) {
      if (context.deadline.checkSlice()) yield context.deadline.pause();
      variables.set(as, { kind: "elements", items: [element] });
      yield* wait(runEntries(entry.body, scope, true, returns));
    }
    if (shadowed === undefined) variables.delete(as);
    else variables.set(as, shadowed);
    return;
  }
  const rows = lookupParameter(entry.over, parameters, "for_each");
  if (!Array.isArray(rows)) throw new SilkError("invalid_type", `for_each parameter ${JSON.stringify(entry.over)} must be an array`);
  for (const row of rows) {
    if (context.deadline.checkSlice()) yield context.deadline.pause();
    if (entry.as !== undefined) {
      yield* wait(runEntries(entry.body, { ...scope, parameters: { ...parameters, [entry.as]: row } }, true, returns));
      continue;
    }
    if (typeof row !== "object" || row === null || Array.isArray(row)) {
      throw new SilkError("invalid_type", `for_each parameter ${JSON.stringify(entry.over)} must hold objects (or name them with "as")`);
    }
    yield* wait(runEntries(entry.body, { ...scope, parameters: { ...parameters, ...row } }, true, returns));
  }
}

function streamSize(stream: Stream): number {
  return stream.kind === "scalar" ? (stream.value === null || stream.value === false || stream.value === 0 ? 0 : 1) : stream.items.length;
}

function conditionHolds(condition: NonNullable<Extract<Entry, { kind: "query" }>["condition"]>, variables: Map<string, Stream>, previous?: Stream): boolean {
  switch (condition.kind) {
    case "var_empty":
      return streamSize(variables.get(condition.name) ?? { kind: "elements", items: [] }) === 0;
    case "var_not_empty":
      return streamSize(variables.get(condition.name) ?? { kind: "elements", items: [] }) > 0;
    case "var_min_size":
      return streamSize(variables.get(condition.name) ?? { kind: "elements", items: [] }) >= condition.size;
    case "prev_not_empty":
      return previous !== undefined && streamSize(previous) > 0;
    default:
      return unreachable(condition, "condition");
  }
}

/** A source's elements; with `withRecords` (its consumer reads them), IDs and parameters read records, not existence. */
function resolveRef(ref: Ref, kind: RecordKind, scope: EvalScope, where: string, withRecords: boolean): Maybe<Element[]> {
  const { view } = scope.context;
  switch (ref.kind) {
    case "all":
      return andThen(view.allIds(kind), (ids) => ids.map((id): Element => ({ kind, id })));
    case "ids":
      return existing(view, kind, ref.ids, withRecords);
    case "var":
      return variableElements(scope.variables, ref.name, kind, where);
    case "param":
      return existing(view, kind, parameterIds(scope.parameters, ref.name, where), withRecords);
    default:
      return unreachable(ref, "reference");
  }
}

/** The current element `depth` sub-traversals out (0: this one's), refused where there is none. */
function contextAt(depth: number, scope: EvalScope): Stream {
  const outer = scope.outerContexts ?? [];
  const stream = depth === 0 ? scope.contextStream : outer[outer.length - depth];
  if (stream !== undefined) return stream;
  if (depth === 0) throw new SilkError("malformed_tree", "context is only valid inside a sub-traversal");
  throw new SilkError("malformed_tree", `context at depth ${depth} needs ${depth} enclosing sub-traversals with a current element`);
}

/** A limit's, skip's or range's bound: a literal at once, an expression through its op. */
function boundOf(bound: Bound, scope: EvalScope): Maybe<number> {
  return bound.kind === "literal" ? bound.value : evalBound(bound, scope);
}

function* evalBound(bound: Extract<Bound, { kind: "expr" }>, scope: EvalScope): Op<number> {
  const value = yield* evaluateExpr(bound.expr, undefined, scope);
  const number = typeof value === "bigint" ? Number(value) : value;
  if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 0) {
    throw new SilkError("invalid_type", "a limit, skip or range bound must be a non-negative integer");
  }
  return number;
}

/**
 * A step's stream: a plain function answering the stream when nothing had to wait (the steps a common read passes
 * through are plain too, so it builds no generator), else an op. `withRecords`: the consumer reads the records, so a
 * source by IDs or parameter reads them at once (one read where existence and then records would be two).
 */
export function evalStep(step: Step, scope: EvalScope, withRecords = false): Maybe<Stream> {
  const { deadline } = scope.context;
  // Every step, a sub-traversal's included, is a point where the invocation may let other requests run.
  if (deadline.checkSlice()) return andThen(deadline.pause(), () => stepStream(step, scope, withRecords));
  return stepStream(step, scope, withRecords);
}

/**
 * `evalStep` past its slice check: for a step whose caller checked with nothing run since (an entry's root, the input
 * a step reads first), so a chain of steps reads the clock once, not once per step, before any of them reads.
 */
function stepStream(step: Step, scope: EvalScope, withRecords: boolean): Maybe<Stream> {
  switch (step.op) {
    case "nodes":
    case "edges":
    case "vectors":
      return andThen(resolveRef(step.ref, sourceKind(step.op), scope, step.op, withRecords), elements);
    case "nodes_where":
    case "edges_where":
    case "vectors_where":
      return sourceWhere(step, scope);
    case "context":
      return contextAt(step.depth ?? 0, scope);
    case "out":
    case "in":
    case "both":
    case "out_e":
    case "in_e":
    case "both_e":
    case "out_n":
    case "in_n":
    case "other_n":
      return traverse(step, scope);
    case "has":
    case "has_label":
    case "has_key":
    case "where":
      return andThen(filterStep(step, scope), elements);
    case "dedup":
    case "within":
    case "without":
      return distinct(step, scope, withRecords);
    case "limit":
    case "skip":
    case "range":
      return page(step, scope, withRecords);
    case "order_by":
    case "order_by_multiple":
      return andThen(evalStep(step.input, scope), (input) => order(step, input, scope));
    case "fold":
    case "unfold":
    case "edge_has":
    case "edge_has_label":
      return andThen(evalStep(step.input, scope), (input) => reshape(step, input, scope));
    case "union":
    case "coalesce":
    case "optional":
    case "choose":
      return andThen(evalStep(step.input, scope), (input) => branch(step, input, scope));
    case "repeat":
      return andThen(evalStep(step.input, scope), (input) => repeat(step, input, scope));
    case "intersect":
      return andThen(evalStep(step.input, scope), (input) => intersect(step, input, scope));
    case "inject":
    case "as":
    case "store":
    case "select":
      return named(step, scope);
    case "count":
    case "exists":
    case "id":
    case "label":
      return summarize(step, scope);
    case "values":
    case "value_map":
    case "project":
      return projection(step, scope);
    case "aggregate":
      return andThen(evalStep(step.input, scope), (input) => aggregate(step, input, scope));
    case "group_count":
    case "aggregate_by":
      return andThen(evalStep(step.input, scope), (input) => group(step, input, scope));
    case "group":
      return andThen(evalStep(step.input, scope), (input) => groupsByValue(step.path, true, input, scope));
    case "shortest_path":
      return andThen(evalStep(step.input, scope), (input) => shortestPaths(step, input, scope));
    case "path":
    case "simple_path":
      return walk(step, scope);
    case "bind":
    case "project_bindings":
    case "edge_properties":
      return bindings(step, scope);
    case "with_sack":
    case "sack_set":
    case "sack_add":
    case "sack_get":
      return andThen(evalStep(step.input, scope), (input) => sack(step, input, scope));
    case "vector_search":
    case "text_search":
      return search(step, scope);
    case "rerank_rrf":
    case "rerank_mmr":
      return rerank(step, scope);
    case "add_n":
    case "add_e":
    case "add_v":
    case "set_property":
    case "update":
    case "remove_property":
    case "drop":
      requireWritable(scope, step.op);
      return mutate(step, scope);
    case "drop_edge":
    case "drop_edge_by_id":
      requireWritable(scope, step.op);
      return dropEdges(step, scope);
    case "upsert_n":
    case "upsert_v":
    case "upsert_e":
      requireWritable(scope, step.op);
      return andThen(evalStep(step.input, scope), (input) => upsert(step, input, scope));
    default:
      return unreachable(step, "step");
  }
}

/** `nodes_where`, `edges_where`, `vectors_where`: the planner's candidates (planner.ts), filtered by the predicate. */
function* sourceWhere(step: Extract<Step, { op: "nodes_where" | "edges_where" | "vectors_where" }>, scope: EvalScope): Op<Stream> {
  const kind = sourceKind(step.op);
  const ids = yield* sourceIds(step.op, kind, step.predicate, scope);
  const candidates = yield* loaded(scope.context.view, ids.map((id) => ({ kind, id })));
  return elements(yield* wait(filterElements(candidates, step.predicate, scope)));
}

/** `dedup` (records by ID, values by JSON form) and `within` / `without` (membership in a variable's records). */
function distinct(step: Extract<Step, { op: "dedup" | "within" | "without" }>, scope: EvalScope, withRecords: boolean): Maybe<Stream> {
  return andThen(stepStream(step.input, scope, withRecords), (input): Stream => {
    if (step.op !== "dedup") {
      const other = scope.variables.get(step.variable);
      if (other === undefined) throw new SilkError("unknown_variable", `${step.op}: no earlier entry defines ${JSON.stringify(step.variable)}`);
      const members = new Set(elementsOf(other, step.op).map((item) => item.id));
      return elements(elementsOf(input, step.op).filter((item) => members.has(item.id) === (step.op === "within")));
    }
    if (input.kind === "scalar") return input;
    if (input.kind === "values") {
      const seen = new Set<string>();
      return { kind: "values", items: input.items.filter((item) => !seen.has(JSON.stringify(item)) && (seen.add(JSON.stringify(item)), true)) };
    }
    const seen = new Set<bigint>();
    return elements(input.items.filter((item) => !seen.has(item.id) && (seen.add(item.id), true)));
  });
}

type SummaryStep = Extract<Step, { op: "count" | "exists" | "id" | "label" }>;

/** `count` and `exists` of any stream; `id` and `label` of records. */
function summarize(step: SummaryStep, scope: EvalScope): Maybe<Stream> {
  if (step.op === "count") {
    return andThen(countWithoutElements(step.input, scope), (counted) =>
      counted !== undefined ? { kind: "scalar", value: counted } : andThen(evalStep(step.input, scope), (input) => summary(step, input, scope)),
    );
  }
  const input = stepStream(step.input, scope, step.op === "label");
  return ready(input) ? summary(step, input, scope) : andThen(input, (value) => summary(step, value, scope));
}

function summary(step: SummaryStep, input: Stream, scope: EvalScope): Maybe<Stream> {
  const op = step.op;
  switch (op) {
    case "count":
      return { kind: "scalar", value: input.kind === "scalar" ? 1 : input.items.length };
    case "exists":
      return { kind: "scalar", value: (input.kind === "scalar" || input.items.length > 0) !== step.negate };
    case "id":
      return { kind: "values", items: elementsOf(input, "id").map((item) => scope.context.renderId(item.id)) };
    case "label":
      return andThen(loadedNow(scope.context.view, elementsOf(input, "label")), (items): Stream => ({ kind: "values", items: items.map((item) => item.record!.label) }));
    default:
      return unreachable(op, "step");
  }
}

/** `values`, `value_map`, `project` (projection.ts) of their input, read with its records. */
function projection(step: ProjectionStep, scope: EvalScope): Maybe<Stream> {
  const input = stepStream(step.input, scope, true);
  return ready(input) ? project(step, input, scope) : andThen(input, (value) => project(step, value, scope));
}

type TraversalStep = Extract<Step, { op: "out" | "in" | "both" | "out_e" | "in_e" | "both_e" | "out_n" | "in_n" | "other_n" }>;

/** Node → node (`out`, `in`, `both`), node → edge (`*_e`) and edge → node (`*_n`). */
function traverse(step: TraversalStep, scope: EvalScope): Maybe<Stream> {
  const input = stepStream(step.input, scope, false);
  if (!ready(input)) return andThen(input, (value) => traverseFrom(step, elementsOf(value, step.op), scope));
  return traverseFrom(step, elementsOf(input, step.op), scope);
}

function traverseFrom(step: TraversalStep, items: Element[], scope: EvalScope): Maybe<Stream> {
  const { view } = scope.context;
  if (carriesRows(items, scope)) return traverseRows(step, items, scope);
  switch (step.op) {
    case "out":
    case "in":
      return andThen(view.neighbours(items.filter((item) => item.kind !== "edge").map((item) => item.id), step.op, step.label), elements);
    case "both":
      return andThen(adjacencyOf(view, items, ["out", "in"], step.label), (lists) => elements(neighboursOf(lists)));
    case "out_e":
    case "in_e":
    case "both_e": {
      const owners = items.filter((item) => item.kind !== "edge");
      const read =
        step.op === "both_e"
          ? adjacencyOf(view, owners, ["out", "in"], step.label)
          : view.adjacency(
              owners.map((item) => item.id),
              step.op === "out_e" ? "out" : "in",
              step.label,
            );
      return andThen(read, (lists) => {
        const edges: Element[] = [];
        lists.forEach((list, i) => {
          for (const entry of list) edges.push({ kind: "edge", id: entry.edge, via: owners[i].id });
        });
        return elements(edges);
      });
    }
    case "out_n":
    case "in_n":
    case "other_n":
      return andThen(loadedNow(view, items.filter((item) => item.kind === "edge")), (edges) => {
        const ends: Element[] = [];
        for (const element of edges) {
          const edge = element.record as Extract<StoredRecord, { kind: "edge" }>;
          // other_n: the end the edge was not reached from; an edge not reached from a record gives its target.
          const source = step.op === "in_n" || (step.op === "other_n" && element.via === edge.to && edge.from !== edge.to);
          ends.push(source ? { kind: edge.fromKind, id: edge.from } : { kind: edge.toKind, id: edge.to });
        }
        return elements(ends);
      });
    default:
      return unreachable(step, "traversal");
  }
}

/**
 * The elements the predicate holds for: a plain loop while each element is decided from its own record
 * (predicateNow) and the slice lasts, so a filter that never waits builds no generator; from the first element that
 * must wait (a predicate reading other records, a spent slice) an op goes on with the rest.
 */
function filterElements(items: Element[], predicate: Predicate, scope: EvalScope): Maybe<Element[]> {
  const { deadline } = scope.context;
  const kept: Element[] = [];
  for (let i = 0; i < items.length; i++) {
    if (deadline.tick()) return filterElementsFrom(items, predicate, scope, i, kept, true);
    const now = predicateNow(predicate, items[i], scope);
    if (now === LATER) return filterElementsFrom(items, predicate, scope, i, kept, false);
    if (now) kept.push(items[i]);
  }
  return kept;
}

/** `filterElements` from the `from`th element on, into `kept`; `paused`: that element's slice check said to pause. */
function* filterElementsFrom(items: Element[], predicate: Predicate, scope: EvalScope, from: number, kept: Element[], paused: boolean): Op<Element[]> {
  const { deadline } = scope.context;
  for (let i = from; i < items.length; i++) {
    const element = items[i];
    if (i === from ? paused : deadline.tick()) yield deadline.pause();
    const now = predicateNow(predicate, element, scope);
    if (now === LATER ? yield* evaluatePredicate(predicate, element, scope) : now) kept.push(element);
  }
  return kept;
}

type FilterStep = Extract<Step, { op: "has" | "has_label" | "has_key" | "where" }>;

/** `has`, `has_label`, `has_key` and `where` over their input's records; plain while nothing waits. */
function filterStep(step: FilterStep, scope: EvalScope): Maybe<Element[]> {
  const input = evalStep(step.input, scope, true);
  return ready(input) ? filterInput(step, input, scope) : andThen(input, (value) => filterInput(step, value, scope));
}

function filterInput(step: FilterStep, input: Stream, scope: EvalScope): Maybe<Element[]> {
  const items = loadedNow(scope.context.view, elementsOf(input, step.op));
  return ready(items) ? filterLoaded(step, items, scope) : andThen(items, (value) => filterLoaded(step, value, scope));
}

function filterLoaded(step: FilterStep, items: Element[], scope: EvalScope): Maybe<Element[]> {
  switch (step.op) {
    case "has":
      return filterElements(items, { kind: "compare", op: "eq", left: { kind: "property", path: step.path }, right: { kind: "constant", value: step.value } }, scope);
    case "has_label":
      return items.filter((element) => element.record!.label === step.label);
    case "has_key":
      return filterElements(items, { kind: "has_key", path: step.path }, scope);
    case "where":
      return filterElements(items, step.predicate, scope);
    default:
      return unreachable(step, "filter");
  }
}

type PageStep = Extract<Step, { op: "limit" | "skip" | "range" }>;

/** `limit`, `skip` and `range`: read from the store's scan where the input allows it (pushdown.ts), else sliced. */
function page(step: PageStep, scope: EvalScope, withRecords: boolean): Maybe<Stream> {
  if (step.op === "skip") return pageOfInput(step, scope, withRecords);
  const paged = pageWithoutElements(step.input, scope, () => boundsBeforeInput(step, scope));
  if (!ready(paged)) return andThen(paged, (value) => (value !== undefined ? elements(value) : pageOfInput(step, scope, withRecords)));
  return paged !== undefined ? elements(paged) : pageOfInput(step, scope, withRecords);
}

function pageOfInput(step: PageStep, scope: EvalScope, withRecords: boolean): Maybe<Stream> {
  const keep = orderedPageEnd(step);
  const input = keep === undefined ? evalStep(step.input, scope, withRecords) : firstOrdered(step.input as OrderStep, scope, keep);
  return ready(input) ? pageInput(step, input, scope) : andThen(input, (value) => pageInput(step, value, scope));
}

/** The input's [start, end) slice, its bounds evaluated after it (start first). */
function pageInput(step: PageStep, input: Stream, scope: EvalScope): Maybe<Stream> {
  if (input.kind === "scalar") return input;
  if (step.op !== "range") {
    const count = boundOf(step.count, scope);
    const sliceOf = step.op === "limit" ? (end: number): Stream => slice(input, 0, end) : (start: number): Stream => slice(input, start, Number.MAX_SAFE_INTEGER);
    return ready(count) ? sliceOf(count) : andThen(count, sliceOf);
  }
  const start = boundOf(step.start, scope);
  if (!ready(start)) return andThen(start, (from) => andThen(boundOf(step.end, scope), (end) => slice(input, from, end)));
  const end = boundOf(step.end, scope);
  return ready(end) ? slice(input, start, end) : andThen(end, (to) => slice(input, start, to));
}

/**
 * The end of a `limit` or `range` with literal bounds over an ordering, or undefined: the ordering then selects only
 * that many of its records, in the order sorting them all would give them (reshape.ts `order`).
 */
function orderedPageEnd(step: PageStep): number | undefined {
  const input = step.input;
  if (input.op !== "order_by" && input.op !== "order_by_multiple") return undefined;
  if (step.op === "range") return step.start.kind === "literal" && step.end.kind === "literal" ? step.end.value : undefined;
  return step.op === "limit" && step.count.kind === "literal" ? step.count.value : undefined;
}

/** `evalStep` of an ordering of which only the first `keep` records are read. */
function firstOrdered(step: OrderStep, scope: EvalScope, keep: number): Maybe<Stream> {
  const { deadline } = scope.context;
  const run = (): Maybe<Stream> => andThen(evalStep(step.input, scope), (input) => order(step, input, scope, keep));
  return deadline.checkSlice() ? andThen(deadline.pause(), run) : run();
}

function slice(input: Exclude<Stream, { kind: "scalar" }>, start: number, end: number): Stream {
  return input.kind === "values" ? { kind: "values", items: input.items.slice(start, end) } : elements(input.items.slice(start, end));
}

/**
 * A `limit`'s or `range`'s [start, end) evaluated before its input (pushdown.ts `plainBound`), for a page read
 * without building the stream; undefined when a bound is not plain or fails, and then `page` evaluates it after the input,
 * so an error of the input is still the one answered.
 */
function* boundsBeforeInput(step: PageStep, scope: EvalScope): Op<[number, number] | undefined> {
  // A skip keeps every element after its count: nothing short of the whole stream answers it.
  if (step.op === "skip") return undefined;
  const [start, end] = step.op === "range" ? [step.start, step.end] : [undefined, step.count];
  if ((start !== undefined && !plainBound(start)) || !plainBound(end)) return undefined;
  try {
    return [start === undefined ? 0 : yield* wait(boundOf(start, scope)), yield* wait(boundOf(end, scope))];
  } catch (cause) {
    if (cause instanceof SilkError) return undefined;
    throw cause;
  }
}

/**
 * Renders a returned stream. Records show their state at the end of the transaction: after a write, every record is
 * read again from the view (so a record updated by a later entry shows the update, and one dropped later is gone).
 */
function render(stream: Stream, context: ExecutionContext): Maybe<unknown> {
  // A values stream with an `answer` (a `values` step's one object per element) answers that.
  if (stream.kind === "values" && stream.answer !== undefined) return stream.answer;
  if (stream.kind !== "elements" || !context.view.hasWrites) return streamToJsonNow(stream, context.view, context.renderId);
  // Reloaded from the view (records may have changed since the step ran); a search hit keeps its tag, a row its state.
  const items = stream.items.map((item): Element => ({ kind: item.kind, id: item.id, ...(item.hit === undefined ? {} : { hit: item.hit }), ...(item.row === undefined ? {} : { row: item.row }) }));
  return streamToJsonNow({ kind: "elements", items }, context.view, context.renderId);
}
