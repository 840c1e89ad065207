/**
 * Synchronous reads on one partition's snapshot, for the plans most endpoints send: sources by ID, parameter,
 * variable or label-less scan, `out`/`in`/`out_e`/`in_e`/`out_n`/`in_n` traversals, `has_label`, `dedup`, literal
 * paging, `count`/`exists`/`id`/`label` and whole-record `value_map`. The general executor (executor.ts) awaits at
 * every step because its view may be remote; on a local snapshot every read is synchronous, and those awaits were
 * half of a point read's cost. This module gives the same answers and the same errors for the plans it accepts
 * (`fastReadable`), which test/node/fast-read.test.ts checks against the executor on random plans; every other plan
 * runs through the executor.
 *
 * A fast read cannot yield (its snapshot may be lmdb-js's shared read transaction, valid only within one synchronous
 * run), so it gives up instead: once it has worked EXECUTION_SLICE_MS (deadline.ts), checked between the chunks of
 * a large read and every DEADLINE_CHECK_INTERVAL_ELEMENTS rows, `executeFastRead` answers undefined and the caller
 * runs the plan on the executor, which pauses to let other requests in. A point read never reaches such a check.
 *
 * The step semantics mirror executor.ts (evalStep, resolveRef, traverse, filterStep, distinct, page, summarize,
 * render) and streams.ts (loaded, existing): a change to one of those steps there must be made here too, or the
 * step dropped from FAST_STEPS.
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { RESULT_ELEMENTS_MAX } from "../../protocol/limits.js";
import { idRendererOf, type IdRenderer } from "../../protocol/ids.js";
import type { RecordKind, StoredRecord } from "../../protocol/records.js";
import { sourceKind, type Entry, type Plan, type Ref, type Step } from "../../protocol/tree.js";
import { valueToJson, type Value } from "../../protocol/values.js";
import type { Deadline } from "../exec/deadline.js";
import type { QueryResult } from "../../protocol/messages.js";
import { BASE_READ_CHUNK_IDS } from "../exec/txn-view.js";
import { elements, elementsOf, parameterIds, recordToJson, tooManyElements, unloadedByKind, valuesStream, variableElements, type Element, type Stream } from "../exec/streams.js";
import type { SnapshotReader } from "./partition-actor.js";

/** What a step yields, known from the plan alone for every step this module runs. */
type Yield = "elements" | "values" | "scalar";

/** The yield of a step this module can run with inputs it can run, or undefined. */
function yieldOf(step: Step): Yield | undefined {
  switch (step.op) {
    case "nodes":
    case "edges":
    case "vectors":
      return "elements";
    case "out":
    case "in":
    case "out_e":
    case "in_e":
    case "out_n":
    case "in_n":
    case "has_label":
    case "dedup":
      return yieldOf(step.input) === "elements" ? "elements" : undefined;
    case "limit":
    case "skip":
      return step.count.kind === "literal" && yieldOf(step.input) === "elements" ? "elements" : undefined;
    case "range":
      return step.start.kind === "literal" && step.end.kind === "literal" && yieldOf(step.input) === "elements" ? "elements" : undefined;
    case "count":
    case "exists":
      return yieldOf(step.input) === undefined ? undefined : "scalar";
    case "id":
    case "label":
      return yieldOf(step.input) === "elements" ? "values" : undefined;
    case "value_map":
      return step.properties === undefined && yieldOf(step.input) === "elements" ? "values" : undefined;
    default:
      return undefined;
  }
}

const readable = new WeakMap<readonly Entry[], boolean>();

/** Whether `executeFastRead` runs this plan: a read without explain whose entries are all plain steps it knows. */
export function fastReadable(plan: Plan): boolean {
  if (plan.requestType !== "read" || plan.explain === true) return false;
  let known = readable.get(plan.entries);
  if (known === undefined) {
    known = plan.entries.every((entry) => entry.kind === "query" && entry.condition === undefined && yieldOf(entry.root) !== undefined);
    readable.set(plan.entries, known);
  }
  return known;
}

interface Scope {
  readonly reader: SnapshotReader;
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly variables: Map<string, Stream>;
  readonly deadline: Deadline;
  /** The executor's ExecutionContext.renderId: how rendered JSON writes IDs. */
  readonly renderId: IdRenderer;
}

/** Thrown inside a fast read whose slice is spent; executeFastRead turns it into undefined. */
class SliceSpent {}

/**
 * Runs a plan `fastReadable` accepted; the caller checked its returns name defined entries (executor checkReturns).
 * Undefined when the read worked through its slice of time: the caller runs the plan on the executor instead.
 */
export function executeFastRead(plan: Plan, reader: SnapshotReader, parameters: Readonly<Record<string, unknown>>, deadline: Deadline): QueryResult | undefined {
  try {
    return fastRead(plan, { reader, parameters, variables: new Map(), deadline, renderId: idRendererOf(plan) });
  } catch (cause) {
    if (cause instanceof SliceSpent) return undefined;
    throw cause;
  }
}

function fastRead(plan: Plan, scope: Scope): QueryResult {
  const { deadline } = scope;
  for (const entry of plan.entries) {
    if (entry.kind !== "query") throw new SilkError("internal", "internal error (a bug in Silk): a fast read got an entry it cannot run");
    // evaluate checks the deadline before each step, this entry's first included. A returned entry's records are
    // rendered: a source by ID reads them at once instead of checking existence first.
    const stream = evaluate(entry.root, scope, entry.name !== undefined && plan.returns.includes(entry.name));
    if (entry.name !== undefined) scope.variables.set(entry.name, stream);
  }
  const result: QueryResult = {};
  for (const name of plan.returns) result[name] = render(scope.variables.get(name) ?? { kind: "elements", items: [] }, scope);
  deadline.check();
  return result;
}

/**
 * `withRecords`: the caller reads the elements' records, so a source by ID reads them instead of checking that they
 * exist (one read per ID instead of two); otherwise an element whose record is not needed is never decoded.
 */
function evaluate(step: Step, scope: Scope, withRecords = false): Stream {
  scope.deadline.check();
  switch (step.op) {
    case "nodes":
    case "edges":
    case "vectors":
      return elements(resolve(step.ref, sourceKind(step.op), scope, step.op, withRecords));
    case "out":
    case "in": {
      const items = elementsOf(evaluate(step.input, scope), step.op);
      const direction = step.op;
      return elements(inChunks(scope, ownerIds(items), (chunk) => scope.reader.neighbours(chunk, direction, step.label)));
    }
    case "out_e":
    case "in_e": {
      const owners = elementsOf(evaluate(step.input, scope), step.op).filter((item) => item.kind !== "edge");
      const direction = step.op === "out_e" ? "out" : "in";
      const lists = inChunks(
        scope,
        owners.map((item) => item.id),
        (chunk) => scope.reader.adjacency(chunk, direction, step.label),
      );
      const edges: Element[] = [];
      lists.forEach((list, i) => {
        for (const entry of list) edges.push({ kind: "edge", id: entry.edge, via: owners[i].id });
      });
      return elements(edges);
    }
    case "out_n":
    case "in_n": {
      const ends: Element[] = [];
      const edges = loaded(scope, elementsOf(evaluate(step.input, scope, true), step.op).filter((item) => item.kind === "edge"));
      for (const element of edges) {
        const edge = element.record as Extract<StoredRecord, { kind: "edge" }>;
        ends.push(step.op === "in_n" ? { kind: edge.fromKind, id: edge.from } : { kind: edge.toKind, id: edge.to });
      }
      return elements(ends);
    }
    case "has_label":
      return elements(loaded(scope, elementsOf(evaluate(step.input, scope, true), step.op)).filter((element) => element.record!.label === step.label));
    case "dedup": {
      const seen = new Set<bigint>();
      return elements(elementsOf(evaluate(step.input, scope, withRecords), step.op).filter((item) => !seen.has(item.id) && (seen.add(item.id), true)));
    }
    case "limit":
    case "skip":
    case "range":
      return page(step, scope, withRecords);
    case "count": {
      // Every record of a kind: the store counts its keys (executor.ts does the same through node/exec/pushdown.ts).
      const whole = step.input;
      if ((whole.op === "nodes" || whole.op === "edges" || whole.op === "vectors") && whole.ref.kind === "all") {
        const counted = scope.reader.countIds(sourceKind(whole.op));
        if (counted !== undefined && counted > RESULT_ELEMENTS_MAX) throw tooManyElements();
        if (counted !== undefined) return { kind: "scalar", value: counted };
      }
      const input = evaluate(step.input, scope);
      return { kind: "scalar", value: input.kind === "scalar" ? 1 : input.items.length };
    }
    case "exists": {
      const input = evaluate(step.input, scope);
      return { kind: "scalar", value: (input.kind === "scalar" || input.items.length > 0) !== step.negate };
    }
    case "id":
      return { kind: "values", items: elementsOf(evaluate(step.input, scope), "id").map((item) => scope.renderId(item.id)) };
    case "label":
      return { kind: "values", items: loaded(scope, elementsOf(evaluate(step.input, scope, true), "label")).map((item) => item.record!.label) };
    case "value_map": {
      const rows: unknown[] = [];
      for (const element of loaded(scope, elementsOf(evaluate(step.input, scope, true), step.op))) {
        if (scope.deadline.tick()) throw new SliceSpent();
        rows.push(recordToJson(element.record!, scope.renderId));
      }
      return valuesStream(rows);
    }
    default:
      throw new SilkError("internal", `internal error (a bug in Silk): a fast read got step ${step.op}`);
  }
}

function ownerIds(items: readonly Element[]): bigint[] {
  const ids: bigint[] = [];
  for (const item of items) if (item.kind !== "edge") ids.push(item.id);
  return ids;
}

function resolve(ref: Ref, kind: RecordKind, scope: Scope, where: string, withRecords: boolean): Element[] {
  switch (ref.kind) {
    case "all":
      return scope.reader.allIds(kind).map((id) => ({ kind, id }));
    case "ids":
      return existing(scope, kind, ref.ids, withRecords);
    case "var":
      return variableElements(scope.variables, ref.name, kind, where);
    case "param":
      return existing(scope, kind, parameterIds(scope.parameters, ref.name, where), withRecords);
    default:
      return unreachable(ref, "reference");
  }
}

/**
 * `read` over `ids`, in chunks of BASE_READ_CHUNK_IDS when there are more (the executor's TxnView reads the same
 * chunks), with the slice checked between chunks.
 */
function inChunks<T>(scope: Scope, ids: readonly bigint[], read: (chunk: readonly bigint[]) => T[]): T[] {
  if (ids.length <= BASE_READ_CHUNK_IDS) return read(ids);
  const results: T[] = [];
  for (let start = 0; start < ids.length; start += BASE_READ_CHUNK_IDS) {
    if (start > 0 && scope.deadline.checkSlice()) throw new SliceSpent();
    for (const result of read(ids.slice(start, start + BASE_READ_CHUNK_IDS))) results.push(result);
  }
  return results;
}

function existing(scope: Scope, kind: RecordKind, ids: readonly bigint[], withRecords: boolean): Element[] {
  const items: Element[] = [];
  if (withRecords) {
    const records = inChunks(scope, ids, (chunk) => scope.reader.records(kind, chunk));
    for (let i = 0; i < ids.length; i += 1) if (records[i] !== undefined) items.push({ kind, id: ids[i], record: records[i] });
    return items;
  }
  const found = inChunks(scope, ids, (chunk) => scope.reader.exists(kind, chunk));
  for (let i = 0; i < ids.length; i += 1) if (found[i]) items.push({ kind, id: ids[i] });
  return items;
}

/** streams.ts `loaded`: the elements' records read in one batch per kind; elements whose record is gone dropped. */
function loaded(scope: Scope, items: Element[]): Element[] {
  // Sources by ID that are rendered arrive loaded (evaluate's withRecords): nothing to group then.
  if (items.every((item) => item.record !== undefined)) return items;
  for (const [kind, list] of unloadedByKind(items)) {
    const records = inChunks(scope, list.map((item) => item.id), (chunk) => scope.reader.records(kind, chunk));
    list.forEach((item, i) => (item.record = records[i]));
  }
  return items.filter((item) => item.record !== undefined);
}

function page(step: Extract<Step, { op: "limit" | "skip" | "range" }>, scope: Scope, withRecords: boolean): Stream {
  const items = elementsOf(evaluate(step.input, scope, withRecords), step.op);
  const literal = (bound: Extract<Step, { op: "range" }>["start"]): number => {
    if (bound.kind !== "literal") throw new SilkError("internal", "internal error (a bug in Silk): a fast read got a computed bound");
    return bound.value;
  };
  let start = 0;
  let end = Number.MAX_SAFE_INTEGER;
  if (step.op === "limit") end = literal(step.count);
  if (step.op === "skip") start = literal(step.count);
  if (step.op === "range") {
    start = literal(step.start);
    end = literal(step.end);
  }
  return elements(items.slice(start, end));
}

/** executor.ts `render` of a read: records in JSON form, values as they are, a scalar as its JSON value. */
function render(stream: Stream, scope: Scope): unknown {
  if (stream.kind === "scalar") return valueToJson(stream.value as Value);
  if (stream.kind === "values") return stream.items;
  return loaded(scope, stream.items).map((item) => recordToJson(item.record!, scope.renderId));
}
