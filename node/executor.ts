/**
 * Executes a decoded operation tree (protocol/tree.ts) against a TxnView. Steps work a whole stream at a time, so
 * each step costs one batched read per partition, not one per element. The executor knows nothing of partitions,
 * LMDB or transports: the view hides them, and the caller commits (or abandons) the view's mutations.
 */
import { SilkError } from "../protocol/errors.js";
import { idToString, parseId } from "../protocol/ids.js";
import type { AdjacencyEntry, Direction, EndpointKind, RecordKind, StoredRecord } from "../protocol/records.js";
import type { Schema } from "../protocol/schema.js";
import type { Bound, Entry, Input, Plan, Predicate, PropertyAssignments, Ref, Step } from "../protocol/tree.js";
import { compareValues, valueToJson, type Properties, type Value } from "../protocol/values.js";
import { evaluateExpr, evaluatePredicate, type EvalScope } from "./predicates.js";
import { checkLabel, prepareCreate, prepareUpdate, toVector } from "./validation.js";
import { neighboursOf, type TxnView } from "./txn-view.js";

/** One element of a stream: a record reference, loaded lazily. */
export interface Element {
  readonly kind: RecordKind;
  readonly id: bigint;
  record?: StoredRecord;
}

export type Stream =
  | { readonly kind: "elements"; readonly items: Element[] }
  | { readonly kind: "values"; readonly items: unknown[] }
  | { readonly kind: "scalar"; readonly value: unknown };

export interface ExecutionContext {
  readonly view: TxnView;
  readonly schema: Schema | undefined;
  readonly now: () => Date;
  readonly writable: boolean;
}

/** Result rows per returned name, already in JSON form (IDs as decimal strings). */
export type QueryResult = Record<string, unknown>;

export const RESULT_ELEMENTS_MAX = 1_000_000;

export async function executePlan(plan: Plan, context: ExecutionContext): Promise<QueryResult> {
  const variables = new Map<string, Stream>();
  const defined = new Set<string>();
  collectNames(plan.entries, defined);
  for (const name of plan.returns) {
    if (!defined.has(name)) throw new SilkError("unknown_variable", `returns names ${JSON.stringify(name)}, which no entry defines`);
  }
  await runEntries(plan.entries, context, variables, plan.parameters, false);
  const result: QueryResult = {};
  for (const name of plan.returns) result[name] = await render(variables.get(name) ?? { kind: "elements", items: [] }, context);
  return result;
}

function collectNames(entries: readonly Entry[], names: Set<string>): void {
  for (const entry of entries) {
    if (entry.kind === "query") {
      if (entry.name !== undefined) names.add(entry.name);
    } else collectNames(entry.body, names);
  }
}

async function runEntries(
  entries: readonly Entry[],
  context: ExecutionContext,
  variables: Map<string, Stream>,
  parameters: Readonly<Record<string, unknown>>,
  appendToVariables: boolean,
): Promise<void> {
  let previous: Stream | undefined;
  for (const entry of entries) {
    if (entry.kind === "for_each") {
      const rows = parameters[entry.param];
      if (!(entry.param in parameters)) throw new SilkError("missing_parameter", `for_each needs array parameter ${JSON.stringify(entry.param)}`);
      if (!Array.isArray(rows)) throw new SilkError("invalid_type", `for_each parameter ${JSON.stringify(entry.param)} must be an array`);
      for (const row of rows) {
        if (typeof row !== "object" || row === null || Array.isArray(row)) {
          throw new SilkError("invalid_type", `for_each parameter ${JSON.stringify(entry.param)} must hold objects`);
        }
        await runEntries(entry.body, context, variables, { ...parameters, ...row }, true);
      }
      continue;
    }
    if (entry.condition && !conditionHolds(entry.condition, variables, previous)) continue;
    const scope: EvalScope = { context, variables, parameters, evalStep: (step, ctx) => evalStep(step, scopeWith(scope, ctx)) };
    const stream = await evalStep(entry.root, scope);
    previous = stream;
    if (entry.name === undefined) continue;
    const earlier = variables.get(entry.name);
    if (appendToVariables && earlier && earlier.kind === stream.kind && stream.kind !== "scalar") {
      variables.set(entry.name, { kind: stream.kind, items: [...(earlier as typeof stream).items, ...stream.items] } as Stream);
    } else variables.set(entry.name, stream);
  }
}

function scopeWith(scope: EvalScope, contextStream: Stream): EvalScope {
  return { ...scope, contextStream };
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
    default: {
      const unreachable: never = condition;
      throw new Error(`unknown condition ${JSON.stringify(unreachable)}`);
    }
  }
}

function elementsOf(stream: Stream, op: string): Element[] {
  if (stream.kind !== "elements") throw new SilkError("malformed_tree", `step ${op} needs a stream of records, not of values`);
  return stream.items;
}

function elements(items: Element[]): Stream {
  if (items.length > RESULT_ELEMENTS_MAX) throw new SilkError("limit_exceeded", `a step produced more than ${RESULT_ELEMENTS_MAX} elements`);
  return { kind: "elements", items };
}

/** Loads the records of the given elements; elements whose record no longer exists are dropped. */
export async function loaded(view: TxnView, items: Element[]): Promise<Element[]> {
  const missing = items.filter((item) => item.record === undefined);
  if (missing.length > 0) {
    const byKind = new Map<RecordKind, Element[]>();
    for (const item of missing) {
      const list = byKind.get(item.kind);
      if (list) list.push(item);
      else byKind.set(item.kind, [item]);
    }
    for (const [kind, list] of byKind) {
      const records = await view.records(kind, list.map((item) => item.id));
      list.forEach((item, i) => (item.record = records[i]));
    }
  }
  return items.filter((item) => item.record !== undefined);
}

/** Elements for the IDs that name a record of this kind; records load later, only if a step needs them. */
async function existing(view: TxnView, kind: RecordKind, ids: readonly bigint[]): Promise<Element[]> {
  const found = await view.exists(kind, ids);
  const items: Element[] = [];
  ids.forEach((id, i) => {
    if (found[i]) items.push({ kind, id });
  });
  return items;
}

async function resolveRef(ref: Ref, kind: RecordKind, scope: EvalScope, where: string): Promise<Element[]> {
  const { view } = scope.context;
  switch (ref.kind) {
    case "all":
      return (await view.allIds(kind)).map((id) => ({ kind, id }));
    case "ids":
      return existing(view, kind, ref.ids);
    case "var": {
      const stream = scope.variables.get(ref.name);
      if (stream === undefined) throw new SilkError("unknown_variable", `${where}: no earlier entry defines ${JSON.stringify(ref.name)}`);
      return elementsOf(stream, where).filter((item) => item.kind === kind);
    }
    case "param": {
      if (!(ref.name in scope.parameters)) throw new SilkError("missing_parameter", `${where}: parameter ${JSON.stringify(ref.name)} was not supplied`);
      const raw = scope.parameters[ref.name];
      const list = Array.isArray(raw) ? raw : [raw];
      return existing(view, kind, list.map((id, i) => parseId(id, `parameter ${ref.name}[${i}]`)));
    }
    default: {
      const unreachable: never = ref;
      throw new Error(`unknown reference ${JSON.stringify(unreachable)}`);
    }
  }
}

async function evalBound(bound: Bound, scope: EvalScope): Promise<number> {
  if (bound.kind === "literal") return bound.value;
  const value = await evaluateExpr(bound.expr, undefined, scope);
  const number = typeof value === "bigint" ? Number(value) : value;
  if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 0) {
    throw new SilkError("invalid_type", "a limit, skip or range bound must be a non-negative integer");
  }
  return number;
}

export async function evalInput(input: Input, scope: EvalScope): Promise<unknown> {
  return input.kind === "value" ? input.value : evaluateExpr(input.expr, undefined, scope);
}

async function assignments(properties: PropertyAssignments, scope: EvalScope): Promise<Record<string, unknown>> {
  const object: Record<string, unknown> = {};
  for (const [name, input] of properties) object[name] = await evalInput(input, scope);
  return object;
}

function requireWritable(scope: EvalScope, op: string): void {
  if (!scope.context.writable) throw new SilkError("write_in_read", `step ${op} writes, but this invocation is read-only`);
}

async function traverse(items: Element[], scope: EvalScope, directions: Direction[], label: string | undefined): Promise<AdjacencyEntry[][]> {
  const owners = items.filter((item) => item.kind !== "edge");
  const ids = owners.map((item) => item.id);
  if (directions.length === 1) return scope.context.view.adjacency(ids, directions[0], label);
  const perDirection = await Promise.all(directions.map((direction) => scope.context.view.adjacency(ids, direction, label)));
  return ids.map((_, i) => perDirection.flatMap((lists) => lists[i]));
}

export async function evalStep(step: Step, scope: EvalScope): Promise<Stream> {
  const { view } = scope.context;
  switch (step.op) {
    case "nodes":
    case "edges":
    case "vectors":
      return elements(await resolveRef(step.ref, kindOfSource(step.op), scope, step.op));
    case "nodes_where":
    case "edges_where":
    case "vectors_where": {
      const kind = kindOfSource(step.op);
      const label = labelOfPredicate(step.predicate);
      const ids = label === undefined ? await view.allIds(kind) : await view.idsOfLabel(kind, label);
      const candidates = await loaded(view, ids.map((id) => ({ kind, id })));
      return elements(await filterElements(candidates, scope, (element) => evaluatePredicate(step.predicate, element, scope)));
    }
    case "context":
      if (scope.contextStream === undefined) throw new SilkError("malformed_tree", "context is only valid inside a sub-traversal");
      return scope.contextStream;
    case "out":
    case "in":
    case "both": {
      const items = elementsOf(await evalStep(step.input, scope), step.op);
      const owners = items.filter((item) => item.kind !== "edge").map((item) => item.id);
      if (step.op !== "both") return elements(await view.neighbours(owners, step.op, step.label));
      return elements(neighboursOf(await traverse(items, scope, ["out", "in"], step.label)));
    }
    case "out_e":
    case "in_e":
    case "both_e": {
      const items = elementsOf(await evalStep(step.input, scope), step.op);
      const directions: Direction[] = step.op === "both_e" ? ["out", "in"] : [step.op === "out_e" ? "out" : "in"];
      const lists = await traverse(items, scope, directions, step.label);
      const edges: Element[] = [];
      for (const list of lists) for (const entry of list) edges.push({ kind: "edge", id: entry.edge });
      return elements(edges);
    }
    case "out_n":
    case "in_n":
    case "other_n": {
      const edges = await loaded(view, elementsOf(await evalStep(step.input, scope), step.op).filter((item) => item.kind === "edge"));
      const ends: Element[] = [];
      for (const element of edges) {
        const edge = element.record as Extract<StoredRecord, { kind: "edge" }>;
        if (step.op === "out_n" || step.op === "other_n") ends.push({ kind: edge.toKind, id: edge.to });
        if (step.op === "in_n") ends.push({ kind: edge.fromKind, id: edge.from });
      }
      return elements(ends);
    }
    case "has":
    case "has_label":
    case "has_key":
    case "where":
      return elements(await filterStep(step, scope));
    case "dedup": {
      const input = await evalStep(step.input, scope);
      if (input.kind === "scalar") return input;
      if (input.kind === "values") {
        const seen = new Set<string>();
        return { kind: "values", items: input.items.filter((item) => !seen.has(JSON.stringify(item)) && (seen.add(JSON.stringify(item)), true)) };
      }
      const seen = new Set<bigint>();
      return elements(input.items.filter((item) => !seen.has(item.id) && (seen.add(item.id), true)));
    }
    case "within":
    case "without": {
      const items = elementsOf(await evalStep(step.input, scope), step.op);
      const other = scope.variables.get(step.variable);
      if (other === undefined) throw new SilkError("unknown_variable", `${step.op}: no earlier entry defines ${JSON.stringify(step.variable)}`);
      const members = new Set(elementsOf(other, step.op).map((item) => item.id));
      return elements(items.filter((item) => members.has(item.id) === (step.op === "within")));
    }
    case "limit":
    case "skip":
    case "range":
      return page(step, scope);
    case "order_by":
      return orderBy(step, scope);
    case "count": {
      const input = await evalStep(step.input, scope);
      return { kind: "scalar", value: input.kind === "scalar" ? 1 : input.items.length };
    }
    case "exists": {
      const input = await evalStep(step.input, scope);
      return { kind: "scalar", value: input.kind === "scalar" ? true : input.items.length > 0 };
    }
    case "id":
      return { kind: "values", items: elementsOf(await evalStep(step.input, scope), "id").map((item) => idToString(item.id)) };
    case "label": {
      const items = await loaded(view, elementsOf(await evalStep(step.input, scope), "label"));
      return { kind: "values", items: items.map((item) => item.record!.label) };
    }
    case "values":
    case "value_map":
    case "project":
      return project(step, scope);
    case "add_n":
    case "add_e":
    case "add_v":
    case "set_property":
    case "update":
    case "remove_property":
    case "drop":
      requireWritable(scope, step.op);
      return mutate(step, scope);
    default: {
      const unreachable: never = step;
      throw new Error(`unknown step ${JSON.stringify(unreachable)}`);
    }
  }
}

function kindOfSource(op: "nodes" | "edges" | "vectors" | "nodes_where" | "edges_where" | "vectors_where"): RecordKind {
  return op.startsWith("nodes") ? "node" : op.startsWith("edges") ? "edge" : "vector";
}

/** The label a source predicate pins (`$label == "X"`, alone or inside an AND), so the scan can use the label index. */
function labelOfPredicate(predicate: Predicate): string | undefined {
  if (predicate.kind === "compare" && predicate.op === "eq") {
    const { left, right } = predicate;
    if (left.kind === "property" && left.path === "$label" && right.kind === "constant" && typeof right.value === "string") return right.value;
    if (right.kind === "property" && right.path === "$label" && left.kind === "constant" && typeof left.value === "string") return left.value;
  }
  if (predicate.kind === "and") {
    for (const inner of predicate.predicates) {
      const label = labelOfPredicate(inner);
      if (label !== undefined) return label;
    }
  }
  return undefined;
}

async function filterElements(items: Element[], scope: EvalScope, keep: (element: Element) => boolean | Promise<boolean>): Promise<Element[]> {
  const kept: Element[] = [];
  for (const element of items) if (await keep(element)) kept.push(element);
  return kept;
}

async function filterStep(step: Extract<Step, { op: "has" | "has_label" | "has_key" | "where" }>, scope: EvalScope): Promise<Element[]> {
  const items = await loaded(scope.context.view, elementsOf(await evalStep(step.input, scope), step.op));
  switch (step.op) {
    case "has":
      return filterElements(items, scope, (element) =>
        evaluatePredicate({ kind: "compare", op: "eq", left: { kind: "property", path: step.path }, right: { kind: "constant", value: step.value } }, element, scope),
      );
    case "has_label":
      return items.filter((element) => element.record!.label === step.label);
    case "has_key":
      return filterElements(items, scope, (element) => evaluatePredicate({ kind: "has_key", path: step.path }, element, scope));
    case "where":
      return filterElements(items, scope, (element) => evaluatePredicate(step.predicate, element, scope));
    default: {
      const unreachable: never = step;
      throw new Error(`unknown filter ${JSON.stringify(unreachable)}`);
    }
  }
}

async function page(step: Extract<Step, { op: "limit" | "skip" | "range" }>, scope: EvalScope): Promise<Stream> {
  const input = await evalStep(step.input, scope);
  if (input.kind === "scalar") return input;
  let start = 0;
  let end = Number.MAX_SAFE_INTEGER;
  if (step.op === "limit") end = await evalBound(step.count, scope);
  if (step.op === "skip") start = await evalBound(step.count, scope);
  if (step.op === "range") {
    start = await evalBound(step.start, scope);
    end = await evalBound(step.end, scope);
  }
  return input.kind === "values" ? { kind: "values", items: input.items.slice(start, end) } : elements(input.items.slice(start, end));
}

async function orderBy(step: Extract<Step, { op: "order_by" }>, scope: EvalScope): Promise<Stream> {
  const items = await loaded(scope.context.view, elementsOf(await evalStep(step.input, scope), "order_by"));
  const keyed = await Promise.all(
    items.map(async (element) => ({ element, key: await evaluateExpr({ kind: "property", path: step.path }, element, scope) })),
  );
  const sign = step.order === "asc" ? 1 : -1;
  keyed.sort((a, b) => {
    // Records without the property sort last in either direction.
    if (a.key === undefined || a.key === null) return b.key === undefined || b.key === null ? 0 : 1;
    if (b.key === undefined || b.key === null) return -1;
    return sign * (compareValues(a.key as Value, b.key as Value) ?? 0);
  });
  return elements(keyed.map((item) => item.element));
}

/** A record in its JSON form: `$id`, `$label`, `$from`/`$to` for edges, `$vector` for vectors, then properties. */
export function recordToJson(record: StoredRecord): Record<string, unknown> {
  const json: Record<string, unknown> = { $id: idToString(record.id), $label: record.label };
  if (record.kind === "edge") {
    json.$from = idToString(record.from);
    json.$to = idToString(record.to);
  }
  if (record.kind === "vector") json.$vector = Array.from(record.vector);
  for (const [key, value] of Object.entries(record.props)) json[key] = valueToJson(value);
  return json;
}

function virtualProperty(record: StoredRecord, name: string): unknown {
  switch (name) {
    case "$id":
      return idToString(record.id);
    case "$label":
      return record.label;
    case "$from":
      return record.kind === "edge" ? idToString(record.from) : null;
    case "$to":
      return record.kind === "edge" ? idToString(record.to) : null;
    default:
      return undefined;
  }
}

async function project(step: Extract<Step, { op: "values" | "value_map" | "project" }>, scope: EvalScope): Promise<Stream> {
  const items = await loaded(scope.context.view, elementsOf(await evalStep(step.input, scope), step.op));
  const propertyJson = async (element: Element, path: string): Promise<unknown> => {
    const virtual = virtualProperty(element.record!, path);
    if (virtual !== undefined) return virtual;
    const value = await evaluateExpr({ kind: "property", path }, element, scope);
    return value === undefined ? null : valueToJson(value as Value);
  };
  if (step.op === "values") {
    const out: unknown[] = [];
    for (const element of items) for (const path of step.properties) out.push(await propertyJson(element, path));
    return { kind: "values", items: out };
  }
  if (step.op === "value_map") {
    const rows: unknown[] = [];
    for (const element of items) {
      if (step.properties === undefined) rows.push(recordToJson(element.record!));
      else {
        const row: Record<string, unknown> = {};
        for (const path of step.properties) row[path] = await propertyJson(element, path);
        rows.push(row);
      }
    }
    return { kind: "values", items: rows };
  }
  const rows: unknown[] = [];
  for (const element of items) {
    const row: Record<string, unknown> = {};
    for (const projection of step.projections) {
      if (projection.kind === "property") row[projection.alias] = await propertyJson(element, projection.source);
      else {
        const value = await evaluateExpr(projection.expr, element, scope);
        row[projection.alias] = value === undefined ? null : valueToJson(value as Value);
      }
    }
    rows.push(row);
  }
  return { kind: "values", items: rows };
}

async function mutate(step: Extract<Step, { op: "add_n" | "add_e" | "add_v" | "set_property" | "update" | "remove_property" | "drop" }>, scope: EvalScope): Promise<Stream> {
  const { view, schema, now } = scope.context;
  switch (step.op) {
    case "add_n": {
      const count = step.input === undefined ? 1 : elementsOf(await evalStep(step.input, scope), "add_n").length;
      checkLabel(schema, "node", step.label);
      const props = prepareCreate(schema, "node", step.label, await assignments(step.properties, scope), now);
      const created: Element[] = [];
      for (let i = 0; i < count; i += 1) {
        const record: StoredRecord = { kind: "node", id: await view.allocate("node"), label: step.label, props };
        view.create(record);
        created.push({ kind: "node", id: record.id, record });
      }
      return elements(created);
    }
    case "add_v": {
      checkLabel(schema, "vector", step.label);
      const vector = toVector(await evalInput(step.vector, scope), "add_v.vector");
      const props = prepareCreate(schema, "vector", step.label, await assignments(step.properties, scope), now);
      const record: StoredRecord = { kind: "vector", id: await view.allocate("vector"), label: step.label, vector, props };
      view.create(record);
      return elements([{ kind: "vector", id: record.id, record }]);
    }
    case "add_e":
      return addEdges(step, scope);
    case "set_property":
    case "update":
    case "remove_property": {
      const items = await loaded(view, elementsOf(await evalStep(step.input, scope), step.op));
      const patch: Record<string, unknown> =
        step.op === "update"
          ? await assignments(step.properties, scope)
          : step.op === "set_property"
            ? { [step.name]: await evalInput(step.value, scope) }
            : { [step.name]: null };
      for (const element of items) {
        const before = element.record!;
        const changes = prepareUpdate(schema, before.kind, before.label, patch);
        const props: Properties = { ...before.props };
        for (const [key, value] of Object.entries(changes)) {
          if (value === null) delete props[key];
          else props[key] = value;
        }
        const after = { ...before, props } as StoredRecord;
        view.replace(before, after);
        element.record = after;
      }
      return elements(items);
    }
    case "drop": {
      const items = await loaded(view, elementsOf(await evalStep(step.input, scope), "drop"));
      await dropAll(items, scope);
      return elements([]);
    }
    default: {
      const unreachable: never = step;
      throw new Error(`unknown mutation ${JSON.stringify(unreachable)}`);
    }
  }
}

async function addEdges(step: Extract<Step, { op: "add_e" }>, scope: EvalScope): Promise<Stream> {
  const { view, schema, now } = scope.context;
  checkLabel(schema, "edge", step.label);
  // Sources named by ID must exist, as targets must: an edge from a missing node is an error, not nothing.
  const input = step.input;
  const namedSources = (input.op === "nodes" || input.op === "vectors") && (input.ref.kind === "ids" || input.ref.kind === "param");
  const sources = namedSources
    ? await resolveEndpoints(input.ref, scope)
    : await loaded(view, elementsOf(await evalStep(input, scope), "add_e").filter((item) => item.kind !== "edge"));
  const targets = await resolveEndpoints(step.to, scope);
  const declared = schema?.edges.get(step.label);
  for (const [role, list, expected] of [["From", sources, declared?.from], ["To", targets, declared?.to]] as const) {
    for (const element of list) {
      if (expected !== undefined && element.record!.label !== expected) {
        throw new SilkError(
          "edge_endpoint_mismatch",
          `${step.label}: ${role} must be a ${expected}, but record ${idToString(element.id)} is a ${element.record!.label}`,
        );
      }
    }
  }
  const props = prepareCreate(schema, "edge", step.label, await assignments(step.properties, scope), now);
  const created: Element[] = [];
  for (const source of sources) {
    for (const target of targets) {
      const record: StoredRecord = {
        kind: "edge",
        id: await view.allocate("edge", source.id),
        label: step.label,
        from: source.id,
        to: target.id,
        fromKind: source.kind as EndpointKind,
        toKind: target.kind as EndpointKind,
        props,
      };
      view.create(record);
      created.push({ kind: "edge", id: record.id, record });
    }
  }
  return elements(created);
}

/** An edge's endpoints named by reference: nodes or vectors, which must exist (an ID naming nothing is `node_not_found`). */
async function resolveEndpoints(ref: Ref, scope: EvalScope): Promise<Element[]> {
  const { view } = scope.context;
  if (ref.kind === "var") {
    const stream = scope.variables.get(ref.name);
    if (stream === undefined) throw new SilkError("unknown_variable", `add_e.to: no earlier entry defines ${JSON.stringify(ref.name)}`);
    return loaded(view, elementsOf(stream, "add_e").filter((item) => item.kind !== "edge"));
  }
  if (ref.kind === "all") return loaded(view, (await view.allIds("node")).map((id) => ({ kind: "node" as const, id })));
  const raw = ref.kind === "ids" ? ref.ids : scope.parameters[ref.name];
  if (ref.kind === "param" && !(ref.name in scope.parameters)) {
    throw new SilkError("missing_parameter", `add_e: parameter ${JSON.stringify(ref.name)} was not supplied`);
  }
  const ids = (Array.isArray(raw) ? raw : [raw]).map((id, i) => parseId(id, `add_e endpoint [${i}]`));
  const found: Element[] = [];
  for (const id of ids) {
    const [node] = await view.records("node", [id]);
    const record = node ?? (await view.records("vector", [id]))[0];
    if (record === undefined) throw new SilkError("node_not_found", `add_e: no node or vector has id ${idToString(id)}`);
    found.push({ kind: record.kind, id, record });
  }
  return found;
}

/** Drops records; a node or vector takes all its edges, on both sides and of every label, with it. */
async function dropAll(items: Element[], scope: EvalScope): Promise<void> {
  const { view } = scope.context;
  const owners = items.filter((item) => item.kind !== "edge");
  const incident = await traverse(owners, scope, ["out", "in"], undefined);
  const edgeIds = new Set<bigint>(items.filter((item) => item.kind === "edge").map((item) => item.id));
  for (const list of incident) for (const entry of list) edgeIds.add(entry.edge);
  const edges = await view.records("edge", [...edgeIds]);
  for (const edge of edges) if (edge !== undefined) view.drop(edge);
  for (const owner of owners) view.drop(owner.record!);
}

/**
 * Renders a returned stream. Records show their state at the end of the transaction: after a write, every record is
 * read again from the view (so a record updated by a later entry shows the update, and one dropped later is gone).
 */
async function render(stream: Stream, context: ExecutionContext): Promise<unknown> {
  if (stream.kind === "scalar") return stream.value;
  if (stream.kind === "values") return stream.items;
  const fresh = context.view.hasWrites ? stream.items.map((item) => ({ kind: item.kind, id: item.id })) : stream.items;
  const items = await loaded(context.view, fresh);
  return items.map((item) => recordToJson(item.record!));
}
