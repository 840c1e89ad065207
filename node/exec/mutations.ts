/**
 * The mutation steps: create, update and drop records through the invocation's view. Every value is checked against
 * the schema (validation.ts) before it reaches the view, and nothing here writes to storage: the caller commits the
 * view's mutations, or abandons them.
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { wait, type Op } from "./ops.js";
import { idToString, JsonId, parseId } from "../../protocol/ids.js";
import type { EndpointKind, RecordKind, StoredRecord } from "../../protocol/records.js";
import type { Input, PropertyAssignments, Ref, Step } from "../../protocol/tree.js";
import type { Properties } from "../../protocol/values.js";
import { evaluateExpr, type EvalScope } from "./predicates.js";
import { adjacencyOf, elements, elementsOf, loaded, lookupParameter, type Element, type Stream } from "./streams.js";
import { checkLabel, prepareCreate, prepareUpdate, toVector } from "./validation.js";

export type MutationStep = Extract<Step, { op: "add_n" | "add_e" | "add_v" | "set_property" | "update" | "remove_property" | "drop" }>;

/** A mutation's value; undefined only for an optional parameter that the call left out (or sent as null). */
export function* evalInput(input: Input, scope: EvalScope): Op<unknown> {
  switch (input.kind) {
    case "value":
      return input.value;
    case "expr":
      return storedIds(yield* evaluateExpr(input.expr, undefined, scope));
    case "optional_param": {
      const value = Object.hasOwn(scope.parameters, input.name) ? scope.parameters[input.name] : undefined;
      return value === null ? undefined : value;
    }
    default:
      return unreachable(input, "input");
  }
}

/**
 * An expression's value with every answer's ID (JsonId: a `var` of records, a `first` record or a `fold` on
 * `/v2/query`) as its decimal string, what `Database.run` gives the same expression: the stored value does not depend
 * on the route that wrote it. A value without one is returned as it is.
 */
function storedIds(value: unknown): unknown {
  if (value instanceof JsonId) return idToString(value.id);
  if (Array.isArray(value)) {
    const items = value.map(storedIds);
    return items.some((item, i) => item !== value[i]) ? items : value;
  }
  if (typeof value !== "object" || value === null || Object.getPrototypeOf(value) !== Object.prototype) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const stored = storedIds(item);
    if (stored !== item) (copy ??= { ...value })[key] = stored;
  }
  return copy ?? value;
}

/** The properties of a mutation; those given by an omitted optional parameter are left out (not set, or unchanged). */
export function* assignments(properties: PropertyAssignments, scope: EvalScope): Op<Record<string, unknown>> {
  const object: Record<string, unknown> = {};
  for (const [name, input] of properties) {
    const value = yield* evalInput(input, scope);
    if (value !== undefined) object[name] = value;
  }
  return object;
}

export function requireWritable(scope: EvalScope, op: string): void {
  if (!scope.context.writable) throw new SilkError("write_in_read", `step ${op} writes, but this invocation is read-only`);
}

export function* mutate(step: MutationStep, scope: EvalScope): Op<Stream> {
  const { view } = scope.context;
  switch (step.op) {
    case "add_n": {
      const count = step.input === undefined ? 1 : elementsOf(yield* wait(scope.evalStep(step.input, scope)), "add_n").length;
      const props = yield* createProps("node", step.label, step.properties, scope);
      const created: Element[] = [];
      for (let i = 0; i < count; i += 1) {
        if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
        const record: StoredRecord = { kind: "node", id: yield* wait(view.allocate("node")), label: step.label, props };
        view.create(record);
        created.push({ kind: "node", id: record.id, record });
      }
      return elements(created);
    }
    case "add_v":
      return elements([yield* createVector("add_v", step.label, yield* evalInput(step.vector, scope), step.properties, scope)]);
    case "add_e":
      return yield* addEdges(step, scope);
    case "set_property":
    case "update":
    case "remove_property": {
      const items = yield* loaded(view, elementsOf(yield* wait(scope.evalStep(step.input, scope)), step.op));
      const patch: Record<string, unknown> =
        step.op === "update"
          ? yield* assignments(step.properties, scope)
          : step.op === "set_property"
            ? { [step.name]: yield* evalInput(step.value, scope) }
            : { [step.name]: null };
      updateAll(items, patch, scope, undefined, step.op === "remove_property");
      return elements(items);
    }
    case "drop": {
      const items = yield* loaded(view, elementsOf(yield* wait(scope.evalStep(step.input, scope)), "drop"));
      yield* dropAll(items, scope);
      return elements([]);
    }
    default:
      return unreachable(step, "mutation");
  }
}

/** The checked properties of a new record of this label. */
export function* createProps(kind: RecordKind, label: string, properties: PropertyAssignments, scope: EvalScope): Op<Properties> {
  const { schema, now } = scope.context;
  checkLabel(schema, kind, label);
  return prepareCreate(schema, kind, label, yield* assignments(properties, scope), now);
}

export function* createVector(op: string, label: string, rawVector: unknown, properties: PropertyAssignments, scope: EvalScope): Op<Element> {
  const { view, schema, now } = scope.context;
  checkLabel(schema, "vector", label);
  const vector = toVector(rawVector, `${op}.vector`);
  const props = prepareCreate(schema, "vector", label, yield* assignments(properties, scope), now);
  const record: StoredRecord = { kind: "vector", id: yield* wait(view.allocate("vector")), label, vector, props };
  view.create(record);
  return { kind: "vector", id: record.id, record };
}

/**
 * Merges a patch into each loaded element's record (null removes a property) and puts the new record in the view;
 * `vector`, when given, replaces a vector record's embedding; `removing` says the patch comes from remove_property.
 */
export function updateAll(items: Element[], patch: Record<string, unknown>, scope: EvalScope, vector?: Float64Array, removing = false): void {
  const { view, schema } = scope.context;
  for (const element of items) {
    scope.context.deadline.tick();
    const before = element.record!;
    const changes = prepareUpdate(schema, before.kind, before.label, patch, removing);
    const props: Properties = { ...before.props };
    for (const [key, value] of Object.entries(changes)) {
      if (value === null) delete props[key];
      else props[key] = value;
    }
    const after = (before.kind === "vector" && vector !== undefined ? { ...before, props, vector } : { ...before, props }) as StoredRecord;
    view.replace(before, after);
    element.record = after;
  }
}

function* addEdges(step: Extract<Step, { op: "add_e" }>, scope: EvalScope): Op<Stream> {
  // Sources named by ID must exist, as targets must: an edge from a missing node is an error, not nothing.
  const input = step.input;
  const namedSources = (input.op === "nodes" || input.op === "vectors") && (input.ref.kind === "ids" || input.ref.kind === "param");
  const sources = namedSources
    ? yield* resolveEndpoints(input.ref, scope, "add_e")
    : yield* loaded(scope.context.view, elementsOf(yield* wait(scope.evalStep(input, scope)), "add_e").filter((item) => item.kind !== "edge"));
  const targets = yield* resolveEndpoints(step.to, scope, "add_e.to");
  return elements(yield* createEdges(step.label, sources, targets, step.properties, scope));
}

/** Creates one edge of the label for each source × target pair, after checking the endpoints' declared labels. */
export function* createEdges(
  label: string,
  sources: readonly Element[],
  targets: readonly Element[],
  properties: PropertyAssignments,
  scope: EvalScope,
): Op<Element[]> {
  const { view, schema } = scope.context;
  checkLabel(schema, "edge", label);
  const declared = schema?.edges.get(label);
  for (const [role, list, expected] of [["From", sources, declared?.from], ["To", targets, declared?.to]] as const) {
    for (const element of list) {
      if (expected !== undefined && element.record!.label !== expected) {
        throw new SilkError(
          "edge_endpoint_mismatch",
          `${label}: ${role} must be a ${expected}, but record ${idToString(element.id)} is a ${element.record!.label}`,
        );
      }
    }
  }
  const props = yield* createProps("edge", label, properties, scope);
  const created: Element[] = [];
  for (const source of sources) {
    for (const target of targets) {
      if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
      const record: StoredRecord = {
        kind: "edge",
        id: yield* wait(view.allocate("edge", source.id)),
        label,
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
  return created;
}

/** An edge's endpoints named by reference: nodes or vectors, which must exist (an ID naming nothing is `node_not_found`). */
export function* resolveEndpoints(ref: Ref, scope: EvalScope, where: string): Op<Element[]> {
  const { view } = scope.context;
  switch (ref.kind) {
    case "var": {
      const stream = scope.variables.get(ref.name);
      if (stream === undefined) throw new SilkError("unknown_variable", `${where}: no earlier entry defines ${JSON.stringify(ref.name)}`);
      return yield* loaded(view, elementsOf(stream, where).filter((item) => item.kind !== "edge"));
    }
    case "all":
      return yield* loaded(view, (yield* wait(view.allIds("node"))).map((id) => ({ kind: "node" as const, id })));
    case "ids":
    case "param":
      return yield* endpointsById(ref.kind === "ids" ? ref.ids : lookupParameter(ref.name, scope.parameters, where), scope, where);
    default:
      return unreachable(ref, "reference");
  }
}

function* endpointsById(raw: unknown, scope: EvalScope, where: string): Op<Element[]> {
  const { view } = scope.context;
  const ids = (Array.isArray(raw) ? raw : [raw]).map((id, i) => parseId(id, `${where} endpoint [${i}]`));
  const found: Element[] = [];
  for (const id of ids) {
    const [node] = yield* wait(view.records("node", [id]));
    const record = node ?? (yield* wait(view.records("vector", [id])))[0];
    if (record === undefined) throw new SilkError("node_not_found", `${where}: no node or vector has id ${idToString(id)}`);
    found.push({ kind: record.kind, id, record });
  }
  return found;
}

/** Drops records; a node or vector takes all its edges, on both sides and of every label, with it. */
export function* dropAll(items: Element[], scope: EvalScope): Op<void> {
  const { view } = scope.context;
  const owners = items.filter((item) => item.kind !== "edge");
  const incident = yield* adjacencyOf(view, owners, ["out", "in"], undefined);
  const edgeIds = new Set<bigint>(items.filter((item) => item.kind === "edge").map((item) => item.id));
  for (const list of incident) for (const entry of list) edgeIds.add(entry.edge);
  const edges = yield* wait(view.records("edge", [...edgeIds]));
  for (const edge of edges) if (edge !== undefined) view.drop(edge);
  for (const owner of owners) view.drop(owner.record!);
}
