/**
 * Traversals of HelixQL queries: a chain's source (`N<User>(id)`, `AddN<User>({..})`, a variable, `_`) and its
 * `::` steps, compiled to operation-tree steps, each wrapping the one before it in `input`. Every step checks what
 * it is given (records of which label, values, rows) so a traversal that could only fail or return nothing at run
 * time (`Out<Follows>` from a Post, `UPDATE` of an undeclared field) is reported when the file loads.
 */
import type { CallAst, ExprAst, StepAst } from "./ast.js";
import type { WireBound, WireExpr, WireInput, WireOrder, WirePredicate, WireRef, WireStep } from "../tree-wire.js";
import { closureDepth, contextTree, elementContext, type ChainAst, type Compiled, type CompilerScope, type ElementContext, type RecordsType, COMPARISONS } from "./query-scope.js";
import {
  ANY, assignable, describeStaticType, describeValueType, familyOf, fieldValue, FLOAT, scalarValue, type RecordKind, type StaticType, type ValueType,
} from "./query-types.js";
import {
  compileCondition, compileExists, compileInput, compileProjection, compileProperties, compileValue, fieldsOf, isBareName, isElement,
  isMathFunction, locOf, refuseNamedArguments, resolveField, singleField,
} from "./query-values.js";
import { compileRerank, compileSearch } from "./query-search.js";
import { unreachable } from "../errors.js";

/** The source step of records of `kind` by reference (`{"nodes": {"reference": ..}}`). */
function sourceStep(kind: RecordKind, reference: WireRef): WireStep {
  switch (kind) {
    case "node":
      return { nodes: { reference } };
    case "edge":
      return { edges: { reference } };
    case "vector":
      return { vectors: { reference } };
    default:
      return unreachable(kind, "record kind");
  }
}

/** The source step of the records of `kind` that a predicate selects (`{"nodes_where": {"predicate": ..}}`). */
function sourceWhere(kind: RecordKind, predicate: WirePredicate): WireStep {
  switch (kind) {
    case "node":
      return { nodes_where: { predicate } };
    case "edge":
      return { edges_where: { predicate } };
    case "vector":
      return { vectors_where: { predicate } };
    default:
      return unreachable(kind, "record kind");
  }
}
const PREFIXES: ReadonlyMap<string, RecordKind> = new Map([
  ["N", "node"],
  ["E", "edge"],
  ["V", "vector"],
]);
/** Sources that always take a type, so a bare one is a missing `<Type>`, not an unknown variable. */
const SOURCES_WITH_TYPE: ReadonlySet<string> = new Set(["N", "E", "V", "AddN", "AddE", "AddV", "SearchV", "SearchBM25"]);

/** The calls that take named arguments (query-search.ts checks which). */
const NAMED_ARGUMENT_CALLS: ReadonlySet<string> = new Set(["SearchV", "SearchBM25", "RerankRRF", "RerankMMR"]);

/** Compiles a whole chain: its source, then each step in turn. */
export function compileChain(scope: CompilerScope, expr: ChainAst, context: ElementContext | undefined): Compiled | undefined {
  const calls = [expr.start, ...expr.steps.flatMap((step) => (step.kind === "call" ? [step.call] : []))];
  if (!calls.every((call) => NAMED_ARGUMENT_CALLS.has(call.name.text) || refuseNamedArguments(scope, call))) return undefined;
  const started = compileSource(scope, expr.start, expr.steps, context);
  if (started === undefined) return undefined;
  let current = started.compiled;
  let index = started.consumed;
  while (index < expr.steps.length) {
    const next = compileStep(scope, current, expr.steps, index);
    if (next === undefined) return undefined;
    current = next.compiled;
    index = next.next;
  }
  return current;
}

interface Started {
  readonly compiled: Compiled;
  /** Steps the source took for itself (AddE's From and To). */
  readonly consumed: number;
}

function done(compiled: Compiled | undefined, consumed = 0): Started | undefined {
  return compiled === undefined ? undefined : { compiled, consumed };
}

function compileSource(scope: CompilerScope, start: CallAst, steps: readonly StepAst[], context: ElementContext | undefined): Started | undefined {
  const name = start.name.text;
  // `_` or a closure parameter, this closure's or one further out: the element it names.
  const closure = isBareName(start) ? closureDepth(context, name) : undefined;
  if (closure !== undefined) return done({ tree: contextTree(closure.depth), type: closure.context.type });
  if (name === "_") {
    scope.report("query_invalid", start.loc, "_ is the current element; it is only valid inside WHERE, a projection or a closure");
    return undefined;
  }
  if (isBareName(start)) return done(variableSource(scope, start));
  const kind = PREFIXES.get(name);
  if (kind !== undefined) return done(selectSource(scope, start, kind));
  switch (name) {
    case "AddN":
      return done(addRecord(scope, start, "node"));
    case "AddV":
      return done(addRecord(scope, start, "vector"));
    case "AddE":
      return addEdge(scope, start, steps);
    case "SearchV":
    case "SearchBM25":
      return done(compileSearch(scope, start, undefined, vectorInput));
    case "EXISTS":
      if (steps.length > 0) {
        scope.report("query_invalid", start.loc, "EXISTS(...) is true or false; no step can follow it");
        return undefined;
      }
      return done(compileExists(scope, start, false, context));
    default:
      if (isMathFunction(name)) {
        scope.report("query_invalid", start.loc, `${name} computes a value; it cannot start a traversal`);
      } else {
        scope.report("query_invalid", start.loc, `unknown source ${name}: a traversal starts at N<T>, E<T>, V<T>, AddN, AddE, AddV, SearchV, SearchBM25, a variable or _`);
      }
      return undefined;
  }
}

function variableSource(scope: CompilerScope, start: CallAst): Compiled | undefined {
  const name = start.name.text;
  const binding = scope.lookup(name);
  if (binding === undefined && SOURCES_WITH_TYPE.has(name)) {
    scope.report("query_invalid", start.loc, `${name} needs a type, as in ${name}<Name>`);
    return undefined;
  }
  if (binding === undefined && name === "NONE") {
    scope.report("query_invalid", start.loc, "NONE is only allowed alone, as RETURN NONE");
    return undefined;
  }
  if (binding === undefined) {
    scope.report("unknown_variable", start.loc, `no variable named ${name}`);
    return undefined;
  }
  if (binding.kind === "param") {
    scope.report("query_invalid", start.loc, `${name} is a parameter, not a traversal; select records with N<Type>(${name})`);
    return undefined;
  }
  const type = binding.type;
  if (type.kind !== "records") {
    scope.report("query_invalid", start.loc, `${name} holds ${describeStaticType(type)}; a traversal needs records`);
    return undefined;
  }
  return { tree: sourceStep(type.record, { var: binding.tree }), type };
}

/** The declared label of a generic, reported when missing or unknown for the kind. */
function labelOf(scope: CompilerScope, call: CallAst, kind: RecordKind): string | undefined {
  const generic = call.generic;
  const prefix = { node: "N", edge: "E", vector: "V" }[kind];
  if (generic === undefined) {
    scope.report("query_invalid", call.loc, `${call.name.text} needs a type, as in ${call.name.text}<Name>`);
    return undefined;
  }
  const { schema } = scope;
  const known = kind === "node" ? schema.nodes : kind === "edge" ? schema.edges : schema.vectors;
  if (!known.has(generic.text)) {
    scope.report("unknown_label", generic.loc, `${generic.text} is not a declared ${prefix}:: type`);
    return undefined;
  }
  return generic.text;
}

function labelPredicate(label: string): WirePredicate {
  return { eq: { left: { property: "$label" }, right: { constant: { string: label } } } };
}

/** `N<T>`, `N<T>(id)`, `N<T>(ids)`, `N<T>({indexed_field: v})` and the same for E and V. */
function selectSource(scope: CompilerScope, call: CallAst, kind: RecordKind): Compiled | undefined {
  const label = labelOf(scope, call, kind);
  if (label === undefined) return undefined;
  const many: RecordsType = { kind: "records", record: kind, label, one: false };
  const args = call.args ?? [];
  if (args.length === 0) return { tree: sourceWhere(kind, labelPredicate(label)), type: many };
  if (args.length > 1) {
    scope.report("query_invalid", call.loc, `${call.name.text}<${label}> takes one ID (or a list of IDs) or one {field: value}`);
    return undefined;
  }
  const [arg] = args;
  if (arg.kind === "object") return indexLookup(scope, call, kind, label, arg);
  const reference = idReference(scope, arg, `${call.name.text}<${label}>`);
  if (reference === undefined) return undefined;
  const tree: WireStep = { has_label: { input: sourceStep(kind, reference.ref), label } };
  return { tree, type: { ...many, one: reference.one } };
}

function indexLookup(scope: CompilerScope, call: CallAst, kind: RecordKind, label: string, arg: Extract<ExprAst, { kind: "object" }>): Compiled | undefined {
  const [item] = arg.items;
  if (arg.items.length !== 1 || item.kind === "spread") {
    scope.report("query_invalid", arg.loc, `${call.name.text}<${label}>({field: value}) looks up one indexed field`);
    return undefined;
  }
  const key = item.kind === "field" ? item.name : item.key;
  const valueAst: ExprAst = item.kind === "field" ? { kind: "chain", start: { name: item.name, loc: item.name.loc }, steps: [], loc: item.name.loc } : item.value;
  const fields = fieldsOf(scope, kind, label);
  const decl = fields?.get(key.text);
  if (decl === undefined) {
    scope.report("invalid_field", key.loc, `${label} has no field ${key.text}`);
    return undefined;
  }
  if (decl.index === undefined) {
    scope.report("query_invalid", key.loc, `${label}.${key.text} is not indexed: declare it INDEX or UNIQUE INDEX, or filter with ::WHERE(_::{${key.text}}::EQ(...))`);
    return undefined;
  }
  const value = compileValue(scope, valueAst, undefined);
  if (value === undefined) return undefined;
  if (!assignable(value.type, decl.type)) {
    scope.report("invalid_type", key.loc, `${label}.${key.text} is ${describeValueType({ t: "field", type: decl.type })}, not ${describeValueType(value.type)}`);
    return undefined;
  }
  const predicate: WirePredicate = { and: { predicates: [labelPredicate(label), { eq: { left: { property: key.text }, right: value.expr } }] } };
  return { tree: sourceWhere(kind, predicate), type: { kind: "records", record: kind, label, one: decl.index === "unique" } };
}

/** An ID argument: an ID (or [ID]) parameter, a FOR binding, or an integer or string literal. */
function idReference(scope: CompilerScope, arg: ExprAst, where: string): { ref: WireRef; one: boolean } | undefined {
  if (arg.kind === "literal" && (arg.literal.kind === "number" || arg.literal.kind === "string")) {
    const text = arg.literal.kind === "number" ? arg.literal.text : arg.literal.value;
    if (!/^[0-9]+$/.test(text) || BigInt(text) > 0xffff_ffff_ffff_ffffn) {
      scope.report("invalid_id", arg.literal.loc, `${JSON.stringify(text)} is not an ID (an unsigned 64-bit integer)`);
      return undefined;
    }
    return { ref: { ids: [text] }, one: true };
  }
  if (arg.kind === "chain" && arg.steps.length === 0 && isBareName(arg.start)) {
    const value = compileValue(scope, arg, undefined);
    if (value === undefined) return undefined;
    const binding = scope.lookup(arg.start.name.text.split(".")[0]);
    if (binding?.kind === "var") {
      scope.report("query_invalid", arg.loc, `${where} takes an ID parameter; ${arg.start.name.text} is a variable (use it directly)`);
      return undefined;
    }
    const type = value.type;
    const element = type.t === "field" && type.type.kind === "array" ? fieldValue(type.type.element) : type;
    const isList = element !== type;
    if (!isIdLike(element)) {
      scope.report("invalid_type", arg.loc, `${where} takes an ID, not ${describeValueType(type)}`);
      return undefined;
    }
    return { ref: { param: arg.start.name.text }, one: !isList };
  }
  scope.report("query_invalid", arg.kind === "literal" ? arg.literal.loc : arg.loc, `${where} takes an ID parameter or literal`);
  return undefined;
}

/** IDs come as ID or String parameters (decimal text) or unsigned integers. */
function isIdLike(type: ValueType): boolean {
  const family = familyOf(type);
  if (family === "id" || family === "string" || family === "any" || type.t === "int") return true;
  return type.t === "field" && type.type.kind === "scalar" && /^U(8|16|32|64|128)$/.test(type.type.name);
}

/** `AddN<T>`, `AddN<T>({..})`, `AddV<T>(vector)`, `AddV<T>(vector, {..})`. */
function addRecord(scope: CompilerScope, call: CallAst, kind: "node" | "vector"): Compiled | undefined {
  const label = labelOf(scope, call, kind);
  if (label === undefined) return undefined;
  const args = call.args ?? [];
  scope.markWrite();
  const type: StaticType = { kind: "records", record: kind, label, one: true };
  if (kind === "node") {
    if (args.length > 1) {
      scope.report("query_invalid", call.loc, `AddN<${label}> takes at most one property block`);
      return undefined;
    }
    const properties = compileProperties(scope, args[0], { kind, label, loc: call.loc }, "create");
    return properties === undefined ? undefined : { tree: { add_n: { label, properties } }, type };
  }
  if (args.length < 1 || args.length > 2) {
    scope.report("query_invalid", call.loc, `AddV<${label}> takes a vector and an optional property block: AddV<${label}>(vector, {..})`);
    return undefined;
  }
  const vector = vectorInput(scope, args[0]);
  const properties = compileProperties(scope, args[1], { kind, label, loc: call.loc }, "create");
  if (vector === undefined || properties === undefined) return undefined;
  return { tree: { add_v: { label, vector, properties } }, type };
}

/** A vector argument: `Embed(text)` or a [F64] value. */
function vectorInput(scope: CompilerScope, arg: ExprAst): WireInput | undefined {
  if (arg.kind === "chain" && arg.steps.length === 0 && arg.start.name.text === "Embed" && arg.start.generic === undefined) {
    const args = arg.start.args ?? [];
    if (args.length !== 1) {
      scope.report("query_invalid", arg.loc, "Embed takes one text, as in Embed(text)");
      return undefined;
    }
    const text = compileValue(scope, args[0], undefined);
    if (text === undefined) return undefined;
    if (!["string", "any"].includes(familyOf(text.type))) {
      scope.report("invalid_type", arg.loc, `Embed takes a string, not ${describeValueType(text.type)}`);
      return undefined;
    }
    const model = scope.embeddingModel;
    return { expr: { embed: model === undefined ? { text: text.expr } : { text: text.expr, model } } };
  }
  const input = compileInput(scope, arg, undefined);
  if (input === undefined) return undefined;
  if (!assignable(input.type, { kind: "array", element: { kind: "scalar", name: "F64" } })) {
    scope.report("invalid_type", arg.kind === "literal" ? arg.literal.loc : arg.loc, `a vector is [F64] or Embed(text), not ${describeValueType(input.type)}`);
    return undefined;
  }
  return input.input;
}

/** An end of AddE, UpsertE or a shortest path: the step selecting it, its reference, and whether it is one record. */
interface Endpoint {
  readonly source: WireStep;
  readonly ref: WireRef;
  readonly one: boolean;
}

interface Endpoints {
  readonly from: Endpoint;
  readonly to: Endpoint;
}

/** `::From(a)::To(b)` (in either order) right after AddE, UpsertE or a shortest path. */
function endpoints(scope: CompilerScope, owner: CallAst, steps: readonly StepAst[], index: number, edgeLabel: string | undefined): Endpoints | undefined {
  const found: Partial<Record<"From" | "To", Endpoint>> = {};
  for (const step of steps.slice(index, index + 2)) {
    if (step.kind !== "call" || (step.call.name.text !== "From" && step.call.name.text !== "To")) break;
    const role = step.call.name.text as "From" | "To";
    const endpoint = endpoint_(scope, step.call, edgeLabel, role);
    if (endpoint === undefined) return undefined;
    found[role] = endpoint;
  }
  if (found.From === undefined || found.To === undefined) {
    scope.report("query_invalid", owner.loc, `${owner.name.text} needs ::From(source)::To(target)`);
    return undefined;
  }
  return { from: found.From, to: found.To };
}

function endpoint_(scope: CompilerScope, call: CallAst, edgeLabel: string | undefined, role: "From" | "To"): Endpoint | undefined {
  const args = call.args ?? [];
  if (args.length !== 1 || call.generic !== undefined) {
    scope.report("query_invalid", call.loc, `${role} takes one node: a variable or an ID`);
    return undefined;
  }
  const [arg] = args;
  if (arg.kind === "chain" && arg.steps.length === 0 && isBareName(arg.start)) {
    const binding = scope.lookup(arg.start.name.text);
    if (binding?.kind === "var") {
      const type = binding.type;
      if (type.kind !== "records" || type.record === "edge") {
        scope.report("query_invalid", arg.loc, `${role} needs a node or vector; ${arg.start.name.text} holds ${describeStaticType(type)}`);
        return undefined;
      }
      const decl = edgeLabel === undefined ? undefined : scope.schema.edges.get(edgeLabel);
      const expected = role === "From" ? decl?.from : decl?.to;
      // "" is an endpoint the declaration lacks, already reported where the schema is checked.
      if (expected !== undefined && expected !== "" && type.label !== undefined && expected !== type.label) {
        scope.report("edge_endpoint_mismatch", arg.loc, `${edgeLabel}: ${role} must be a ${expected}, but ${arg.start.name.text} holds ${type.label}`);
        return undefined;
      }
      const ref: WireRef = { var: binding.tree };
      return { source: sourceStep(type.record, ref), ref, one: type.one };
    }
  }
  const reference = idReference(scope, arg, role);
  if (reference === undefined) return undefined;
  return { source: sourceStep("node", reference.ref), ref: reference.ref, one: reference.one };
}

/** `AddE<T>({..})::From(a)::To(b)`. */
function addEdge(scope: CompilerScope, call: CallAst, steps: readonly StepAst[]): Started | undefined {
  const label = labelOf(scope, call, "edge");
  if (label === undefined) return undefined;
  scope.markWrite();
  const args = call.args ?? [];
  if (args.length > 1) {
    scope.report("query_invalid", call.loc, `AddE<${label}> takes at most one property block`);
    return undefined;
  }
  const properties = compileProperties(scope, args[0], { kind: "edge", label, loc: call.loc }, "create");
  const ends = endpoints(scope, call, steps, 0, label);
  if (properties === undefined || ends === undefined) return undefined;
  const tree: WireStep = { add_e: { input: ends.from.source, label, to: ends.to.ref, properties } };
  return { compiled: { tree, type: { kind: "records", record: "edge", label, one: ends.from.one && ends.to.one } }, consumed: 2 };
}

// ---- Steps ------------------------------------------------------------------------------------------------------

interface Stepped {
  readonly compiled: Compiled;
  readonly next: number;
}

/** Compiles the step at `index`; `next` is the index after it and after the steps it takes for itself (To, From). */
function compileStep(scope: CompilerScope, current: Compiled, steps: readonly StepAst[], index: number): Stepped | undefined {
  const step = steps[index];
  if (step.kind !== "call") {
    const projected = compileProjection(scope, step, current);
    return projected === undefined ? undefined : { compiled: projected, next: index + 1 };
  }
  const call = step.call;
  const name = call.name.text;
  const one = (compiled: Compiled | undefined): Stepped | undefined => (compiled === undefined ? undefined : { compiled, next: index + 1 });
  switch (name) {
    case "Out":
    case "In":
    case "OutE":
    case "InE":
      return one(adjacency(scope, current, call));
    case "FromN":
    case "ToN":
    case "FromV":
    case "ToV":
      return one(edgeEnd(scope, current, call));
    case "WHERE":
      return one(where(scope, current, call));
    case "RANGE":
      return one(range(scope, current, call));
    case "ORDER":
      return one(order(scope, current, call));
    case "FIRST":
      return one(noArgs(scope, call) ? { tree: { limit: { input: current.tree, count: { literal: 1 } } }, type: single(current.type) } : undefined);
    case "COUNT": {
      if (!noArgs(scope, call)) return undefined;
      // `::COUNT::GROUP_BY(..)` and `::COUNT::AGGREGATE_BY(..)` group the elements before the count (HelixDB drops the
      // COUNT and answers the counting form of the grouping), so the two steps compile as one.
      const next = steps[index + 1];
      const grouped = next?.kind === "call" && (next.call.name.text === "GROUP_BY" || next.call.name.text === "AGGREGATE_BY") ? next.call : undefined;
      if (grouped !== undefined) {
        const compiled = grouping(scope, current, grouped, true);
        return compiled === undefined ? undefined : { compiled, next: index + 2 };
      }
      return one({ tree: { count: { input: current.tree } }, type: { kind: "values", value: scalarValue("I64"), shape: "scalar" } });
    }
    case "ID":
      return one(idStep(scope, current, call));
    case "DEDUP":
      return one(dedup(scope, current, call));
    case "INTERSECT":
      return one(intersect(scope, current, call));
    case "UPDATE":
      return one(update(scope, current, call));
    case "GROUP_BY":
    case "AGGREGATE_BY":
      return one(grouping(scope, current, call, false));
    case "SUM":
    case "AVG":
    case "MIN":
    case "MAX":
      return one(aggregate(scope, current, call));
    case "ShortestPath":
    case "ShortestPathBFS":
    case "ShortestPathDijkstras":
    case "ShortestPathAStar":
      return shortestPath(scope, current, steps, index);
    case "UpsertN":
    case "UpsertV":
      return one(upsertRecord(scope, current, call));
    case "UpsertE":
      return upsertEdge(scope, current, steps, index);
    case "SearchV":
    case "SearchBM25":
      return one(compileSearch(scope, call, current, vectorInput));
    case "RerankRRF":
    case "RerankMMR":
      return one(compileRerank(scope, current, call));
    default:
      if (COMPARISONS.has(name)) {
        scope.report("query_invalid", call.loc, `${name} compares a value and is only allowed in a condition, as in WHERE(_::{field}::${name}(v))`);
      } else if (name === "From" || name === "To") {
        scope.report("query_invalid", call.loc, `${name} only follows AddE, UpsertE or a ShortestPath step`);
      } else {
        scope.report("query_invalid", call.loc, `unknown step ${name}`);
      }
      return undefined;
  }
}

/** The type of the first element of a stream (FIRST). */
function single(type: StaticType): StaticType {
  return type.kind === "values" ? { ...type, shape: "one" } : { ...type, one: true };
}

function noArgs(scope: CompilerScope, call: CallAst): boolean {
  if (call.args === undefined && call.generic === undefined) return true;
  scope.report("query_invalid", call.loc, `${call.name.text} takes no arguments`);
  return false;
}

function records(scope: CompilerScope, current: Compiled, call: CallAst, kinds: readonly RecordKind[]): RecordsType | undefined {
  const type = current.type;
  if (type.kind === "records" && kinds.includes(type.record)) return type;
  const wanted = kinds.map((kind) => ({ node: "nodes", edge: "edges", vector: "vectors" })[kind]).join(" or ");
  scope.report("query_invalid", call.loc, `${call.name.text} needs ${wanted}, but the traversal before it yields ${describeStaticType(type)}`);
  return undefined;
}

function adjacency(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const input = records(scope, current, call, ["node", "vector"]);
  const label = labelOf(scope, call, "edge");
  if (input === undefined || label === undefined) return undefined;
  if (call.args !== undefined) {
    scope.report("query_invalid", call.loc, `${call.name.text}<${label}> takes no arguments`);
    return undefined;
  }
  const decl = scope.schema.edges.get(label)!;
  const outward = call.name.text.startsWith("Out");
  const here = outward ? decl.from : decl.to;
  if (input.label !== undefined && input.label !== here) {
    const side = outward ? "goes out of" : "comes into";
    scope.report("query_invalid", call.loc, `${call.name.text}<${label}>: ${label} ${side} ${here}, but the traversal yields ${input.label}`);
    return undefined;
  }
  const body = { input: current.tree, label };
  if (call.name.text.endsWith("E")) return { tree: outward ? { out_e: body } : { in_e: body }, type: { kind: "records", record: "edge", label, one: false } };
  const there = outward ? decl.to : decl.from;
  const record: RecordKind = scope.schema.vectors.has(there) ? "vector" : "node";
  return { tree: outward ? { out: body } : { in: body }, type: { kind: "records", record, label: there, one: false } };
}

function edgeEnd(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const input = records(scope, current, call, ["edge"]);
  if (input === undefined || !noArgs(scope, call)) return undefined;
  const source = call.name.text.startsWith("From");
  const decl = input.label === undefined ? undefined : scope.schema.edges.get(input.label);
  const label = source ? decl?.from : decl?.to;
  const record: RecordKind = call.name.text.endsWith("V") ? "vector" : "node";
  if (label !== undefined && (record === "vector") !== scope.schema.vectors.has(label)) {
    scope.report("query_invalid", call.loc, `${call.name.text}: the ${source ? "source" : "target"} of ${input.label} is ${label}, use ${source ? "From" : "To"}${record === "vector" ? "N" : "V"}`);
    return undefined;
  }
  return { tree: source ? { in_n: { input: current.tree } } : { out_n: { input: current.tree } }, type: { kind: "records", record, label, one: input.one } };
}

function where(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const input = records(scope, current, call, ["node", "edge", "vector"]);
  const args = call.args ?? [];
  if (input === undefined) return undefined;
  if (args.length !== 1) {
    scope.report("query_invalid", call.loc, "WHERE takes one condition");
    return undefined;
  }
  const predicate = compileCondition(scope, args[0], elementContext(scope, { ...input, one: true }));
  return predicate === undefined ? undefined : { tree: { where: { input: current.tree, predicate } }, type: input };
}

function bound(scope: CompilerScope, arg: ExprAst): WireBound | undefined {
  if (arg.kind === "literal" && arg.literal.kind === "number" && /^[0-9]+$/.test(arg.literal.text)) return { literal: Number(arg.literal.text) };
  const value = compileValue(scope, arg, undefined);
  if (value === undefined) return undefined;
  if (!["number", "any"].includes(familyOf(value.type)) || value.type.t === "float") {
    scope.report("invalid_type", arg.kind === "literal" ? arg.literal.loc : arg.loc, `a RANGE bound is a non-negative integer, not ${describeValueType(value.type)}`);
    return undefined;
  }
  return { expr: value.expr };
}

function range(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const args = call.args ?? [];
  if (args.length !== 2 || call.generic !== undefined) {
    scope.report("query_invalid", call.loc, "RANGE takes a start and an end, as in RANGE(0, 10)");
    return undefined;
  }
  const start = bound(scope, args[0]);
  const end = bound(scope, args[1]);
  if (start === undefined || end === undefined) return undefined;
  const type: StaticType = current.type.kind === "values" ? { ...current.type, shape: current.type.shape === "scalar" ? "scalar" : "many" } : { ...current.type, one: false };
  return { tree: { range: { input: current.tree, start, end } }, type };
}

/** The field named by a `_::{field}` argument (ORDER, SUM...), checked on the element type. */
function fieldArgument(scope: CompilerScope, call: CallAst, element: RecordsType): string | undefined {
  const [arg] = call.args ?? [];
  const field = arg?.kind === "chain" && arg.start.name.text === "_" && arg.steps.length === 1 ? singleField(arg.steps[0]) : undefined;
  if (call.args?.length !== 1 || field === undefined) {
    scope.report("query_invalid", call.loc, `${call.name.text} takes the field to use, as in ${call.name.text}(_::{age})`);
    return undefined;
  }
  return resolveField(scope, element, field.text, field.loc)?.path;
}

function order(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const input = records(scope, current, call, ["node", "edge", "vector"]);
  if (input === undefined) return undefined;
  const direction = call.generic?.text;
  if (direction !== "Asc" && direction !== "Desc") {
    scope.report("query_invalid", call.generic?.loc ?? call.loc, "ORDER takes a direction: ORDER<Asc>(_::{field}) or ORDER<Desc>(_::{field})");
    return undefined;
  }
  const order: WireOrder = direction === "Asc" ? "asc" : "desc";
  const [arg] = call.args ?? [];
  const field = arg?.kind === "chain" && arg.start.name.text === "_" && arg.steps.length === 1 ? singleField(arg.steps[0]) : undefined;
  if (call.args?.length === 1 && field === undefined) {
    const by = orderKey(scope, arg, { ...input, one: true });
    return by === undefined ? undefined : { tree: { order_by: { input: current.tree, expr: by, order, rule: "helixql" } }, type: input };
  }
  const property = fieldArgument(scope, call, { ...input, one: true });
  if (property === undefined) return undefined;
  return { tree: { order_by: { input: current.tree, property, order, rule: "helixql" } }, type: input };
}

/**
 * The key of `ORDER<..>(_::Out<Follows>::COUNT)`: an anonymous traversal that yields one value per element (a count,
 * an aggregate, a property reached by traversal), as the tree expression that reads it. HelixDB orders by any
 * anonymous traversal; one that yields records, rows or several values has no single key to sort by, and those are
 * the compiled values whose type is not known (`ANY`).
 */
function orderKey(scope: CompilerScope, arg: ExprAst, element: RecordsType): WireExpr | undefined {
  const usage = "ORDER takes a field or a traversal from _ that yields one value, as in ORDER<Desc>(_::{age}) or ORDER<Desc>(_::In<Follows>::COUNT)";
  if (arg.kind !== "chain" || arg.start.name.text !== "_" || arg.steps.length === 0) {
    scope.report("query_invalid", arg.kind === "literal" ? arg.literal.loc : arg.loc, usage);
    return undefined;
  }
  const value = compileValue(scope, arg, elementContext(scope, element));
  if (value === undefined) return undefined;
  if (value.type.t === "any") {
    scope.report("query_invalid", arg.loc, `${usage}; this one yields records or a list`);
    return undefined;
  }
  return value.expr;
}

function idStep(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const input = records(scope, current, call, ["node", "edge", "vector"]);
  if (input === undefined || !noArgs(scope, call)) return undefined;
  return { tree: { id: { input: current.tree } }, type: { kind: "values", value: scalarValue("ID"), shape: input.one ? "one" : "many" } };
}

/** Silk's `::DEDUP`: the records without repeats, each where it first came (the tree's `dedup`). */
function dedup(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const input = records(scope, current, call, ["node", "edge", "vector"]);
  if (input === undefined || !noArgs(scope, call)) return undefined;
  return { tree: { dedup: { input: current.tree } }, type: input };
}

/** `::INTERSECT(_::traversal)`: the records that the traversal reaches from every element (the tree's `intersect`). */
function intersect(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const input = records(scope, current, call, ["node", "edge", "vector"]);
  if (input === undefined) return undefined;
  const [arg] = call.args ?? [];
  if (call.generic !== undefined || call.args?.length !== 1 || arg.kind !== "chain" || arg.start.name.text !== "_" || !isBareName(arg.start)) {
    scope.report("query_invalid", call.loc, "INTERSECT takes one traversal from the current element, as in INTERSECT(_::Out<Follows>)");
    return undefined;
  }
  const traversal = scope.chain(arg, elementContext(scope, { ...input, one: true }));
  if (traversal === undefined) return undefined;
  if (traversal.type.kind !== "records") {
    scope.report("query_invalid", locOf(arg), `INTERSECT keeps the records every element's traversal reaches; this traversal yields ${describeStaticType(traversal.type)}`);
    return undefined;
  }
  return { tree: { intersect: { input: current.tree, traversal: { root: traversal.tree } } }, type: { ...traversal.type, one: false } };
}

function update(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const input = records(scope, current, call, ["node", "edge", "vector"]);
  if (input === undefined) return undefined;
  scope.markWrite();
  const args = call.args ?? [];
  if (args.length !== 1) {
    scope.report("query_invalid", call.loc, "UPDATE takes one property block, as in UPDATE({name: name})");
    return undefined;
  }
  if (input.label === undefined) {
    scope.report("query_invalid", call.loc, "UPDATE needs records of one known type");
    return undefined;
  }
  const properties = compileProperties(scope, args[0], { kind: input.record, label: input.label, loc: call.loc }, "update");
  return properties === undefined ? undefined : { tree: { update: { input: current.tree, properties } }, type: input };
}

/**
 * `GROUP_BY(f, ..)` rows `{f, .., count}`; `AGGREGATE_BY(f, ..)` rows `{f, .., count, items}`, or after COUNT
 * (`counted`) HelixDB's `{count, data}`. `::COUNT::GROUP_BY` answers what GROUP_BY does, which counts already.
 */
function grouping(scope: CompilerScope, current: Compiled, call: CallAst, counted: boolean): Compiled | undefined {
  const input = records(scope, current, call, ["node", "edge", "vector"]);
  if (input === undefined) return undefined;
  const args = call.args ?? [];
  const properties: string[] = [];
  for (const arg of args) {
    if (arg.kind !== "chain" || arg.steps.length > 0 || !isBareName(arg.start)) {
      scope.report("query_invalid", arg.kind === "literal" ? arg.literal.loc : arg.loc, `${call.name.text} takes field names, as in ${call.name.text}(age, city)`);
      return undefined;
    }
    const field = resolveField(scope, { ...input, one: true }, arg.start.name.text, arg.start.loc);
    if (field === undefined) return undefined;
    properties.push(field.path);
  }
  if (properties.length === 0) {
    scope.report("query_invalid", call.loc, `${call.name.text} needs at least one field`);
    return undefined;
  }
  const tree: WireStep = call.name.text === "GROUP_BY"
    ? { group_count: { input: current.tree, properties } }
    : { aggregate_by: { input: current.tree, properties, ...(counted ? { shape: "count_data" as const } : {}) } };
  return { tree, type: { kind: "rows", one: false } };
}

/** The tree's `aggregate` function of each aggregating step. */
const AGGREGATES: ReadonlyMap<string, "sum" | "avg" | "min" | "max"> = new Map([
  ["SUM", "sum"],
  ["AVG", "avg"],
  ["MIN", "min"],
  ["MAX", "max"],
] as const);

function aggregate(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const fn = AGGREGATES.get(call.name.text)!;
  const type = current.type;
  if (type.kind === "values" && call.args === undefined) {
    const value = fn === "avg" ? FLOAT : type.value;
    return { tree: { aggregate: { input: current.tree, fn } }, type: { kind: "values", value, shape: "scalar" } };
  }
  const input = records(scope, current, call, ["node", "edge", "vector"]);
  if (input === undefined) return undefined;
  const property = fieldArgument(scope, call, { ...input, one: true });
  if (property === undefined) return undefined;
  const field = resolveField(scope, { ...input, one: true }, property, call.loc)!;
  const family = familyOf(field.type);
  if ((fn === "sum" || fn === "avg") && family !== "number" && family !== "any") {
    scope.report("invalid_type", call.loc, `${call.name.text} adds numbers; ${property} is ${describeValueType(field.type)}`);
    return undefined;
  }
  const value = fn === "avg" ? FLOAT : fn === "sum" && field.type.t === "any" ? ANY : field.type;
  return { tree: { aggregate: { input: current.tree, fn, property } }, type: { kind: "values", value, shape: "scalar" } };
}

/** The reference a by-ID source selects (`N<T>(id)` compiles to has_label over nodes by reference). */
function referenceOf(tree: WireStep): WireRef | undefined {
  const source = typeof tree !== "string" && "has_label" in tree ? tree.has_label.input : tree;
  if (typeof source === "string") return undefined;
  if ("nodes" in source) return source.nodes.reference;
  if ("edges" in source) return source.edges.reference;
  if ("vectors" in source) return source.vectors.reference;
  return undefined;
}

function shortestPath(scope: CompilerScope, current: Compiled, steps: readonly StepAst[], index: number): Stepped | undefined {
  const call = (steps[index] as Extract<StepAst, { kind: "call" }>).call;
  const input = records(scope, current, call, ["node", "vector"]);
  const label = labelOf(scope, call, "edge");
  if (input === undefined || label === undefined) return undefined;
  const algorithm = pathAlgorithm(scope, call, label);
  if (algorithm === undefined) return undefined;
  const next = steps[index + 1];
  const role = next?.kind === "call" ? next.call.name.text : undefined;
  if (next?.kind !== "call" || (role !== "To" && role !== "From")) {
    scope.report("query_invalid", call.loc, `${call.name.text} needs ::To(target) or ::From(source) after it`);
    return undefined;
  }
  const end = endpoint_(scope, next.call, undefined, role as "From" | "To");
  if (end === undefined) return undefined;
  let source = current.tree;
  let to = end.ref;
  if (role === "From") {
    const here = referenceOf(current.tree);
    if (here === undefined) {
      scope.report("query_invalid", next.call.loc, "ShortestPath...::From(x) needs the traversal before it to be a node selected by ID or a variable; or use ::To");
      return undefined;
    }
    source = end.source;
    to = here;
  }
  const tree: WireStep = { shortest_path: { input: source, to, label, direction: "out", ...algorithm } };
  return { compiled: { tree, type: { kind: "rows", one: false } }, next: index + 2 };
}

/** The tree's `algorithm` of a shortest path, with the weight (Dijkstra, A*) and heuristic (A*) it takes. */
interface PathAlgorithm {
  readonly algorithm: "bfs" | "dijkstra" | "astar";
  readonly weight?: WireExpr;
  readonly heuristic?: string;
}

const PATH_ALGORITHMS: Record<string, { readonly algorithm: PathAlgorithm["algorithm"]; readonly args: number; readonly form: string }> = {
  ShortestPath: { algorithm: "bfs", args: 0, form: "" },
  ShortestPathBFS: { algorithm: "bfs", args: 0, form: "" },
  ShortestPathDijkstras: { algorithm: "dijkstra", args: 1, form: "(_::{distance})" },
  ShortestPathAStar: { algorithm: "astar", args: 2, form: '(_::{distance}, "heuristic_property")' },
};

/**
 * The tree's `algorithm` with its arguments: Dijkstra's and A*'s edge weight (a number), and A*'s heuristic, the name
 * of a numeric field that the edge's endpoint types declare, written as a string literal as HelixDB's grammar has it.
 */
function pathAlgorithm(scope: CompilerScope, call: CallAst, label: string): PathAlgorithm | undefined {
  const shape = PATH_ALGORITHMS[call.name.text];
  const args = call.args ?? [];
  if (shape.args === 0) {
    if (call.args === undefined) return { algorithm: shape.algorithm };
    scope.report("query_invalid", call.loc, `${call.name.text}<${label}> takes no arguments; weights need ShortestPathDijkstras or ShortestPathAStar`);
    return undefined;
  }
  if (args.length !== shape.args) {
    const what = shape.args === 1 ? "the weight of an edge" : "the weight of an edge and the name of a node property that estimates the cost still to go";
    scope.report("query_invalid", call.loc, `${call.name.text}<${label}> takes ${what}, as in ${call.name.text}<${label}>${shape.form}`);
    return undefined;
  }
  const value = compileValue(scope, args[0], elementContext(scope, { kind: "records", record: "edge", label, one: true }));
  if (value === undefined) return undefined;
  if (!["number", "any"].includes(familyOf(value.type))) {
    scope.report("invalid_type", call.loc, `an edge weight is a number, not ${describeValueType(value.type)}`);
    return undefined;
  }
  if (shape.args === 1) return { algorithm: shape.algorithm, weight: value.expr };
  const heuristic = heuristicProperty(scope, args[1], label);
  return heuristic === undefined ? undefined : { algorithm: shape.algorithm, weight: value.expr, heuristic };
}

/** A*'s heuristic: a string literal naming a numeric field (a dotted path may reach into an object) of both ends of E. */
function heuristicProperty(scope: CompilerScope, arg: ExprAst, label: string): string | undefined {
  if (arg.kind !== "literal" || arg.literal.kind !== "string") {
    scope.report("query_invalid", locOf(arg), 'the heuristic of ShortestPathAStar is a property name in quotes, as in "distance_to_goal"');
    return undefined;
  }
  const name = arg.literal.value;
  // The name starts one column after the opening quote.
  const at = { ...arg.literal.loc, column: arg.literal.loc.column + 1, offset: arg.literal.loc.offset + 1 };
  const edge = scope.schema.edges.get(label)!;
  for (const end of new Set([edge.from, edge.to])) {
    const record: RecordKind = scope.schema.nodes.has(end) ? "node" : "vector";
    const field = resolveField(scope, { kind: "records", record, label: end, one: true }, name, at);
    if (field === undefined) return undefined;
    // id, label, and a vector's data and score, are read from the record itself, not from a stored property.
    if (field.path !== name) {
      scope.report("invalid_field", at, `the heuristic is a stored property of ${end}, not its ${name}`);
      return undefined;
    }
    if (!["number", "any"].includes(familyOf(field.type))) {
      scope.report("invalid_type", at, `the heuristic ${end}.${name} is ${describeValueType(field.type)}, not a number`);
      return undefined;
    }
  }
  return name;
}

function upsertRecord(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const kind: RecordKind = call.name.text === "UpsertN" ? "node" : "vector";
  const input = records(scope, current, call, [kind]);
  if (input === undefined) return undefined;
  const label = call.generic === undefined ? input.label : labelOf(scope, call, kind);
  if (label === undefined) {
    scope.report("query_invalid", call.loc, `${call.name.text} needs a type: ${call.name.text}<Name>`);
    return undefined;
  }
  scope.markWrite();
  const args = call.args ?? [];
  const type: StaticType = { kind: "records", record: kind, label, one: input.one };
  if (kind === "node") {
    if (args.length > 1) {
      scope.report("query_invalid", call.loc, "UpsertN takes one property block");
      return undefined;
    }
    const properties = compileProperties(scope, args[0], { kind, label, loc: call.loc }, "update");
    return properties === undefined ? undefined : { tree: { upsert_n: { input: current.tree, label, properties } }, type };
  }
  if (args.length < 1 || args.length > 2) {
    scope.report("query_invalid", call.loc, "UpsertV takes a vector and an optional property block");
    return undefined;
  }
  const vector = vectorInput(scope, args[0]);
  const properties = compileProperties(scope, args[1], { kind, label, loc: call.loc }, "update");
  if (vector === undefined || properties === undefined) return undefined;
  return { tree: { upsert_v: { input: current.tree, label, vector, properties } }, type };
}

function upsertEdge(scope: CompilerScope, current: Compiled, steps: readonly StepAst[], index: number): Stepped | undefined {
  const call = (steps[index] as Extract<StepAst, { kind: "call" }>).call;
  const input = records(scope, current, call, ["edge"]);
  if (input === undefined) return undefined;
  const label = call.generic === undefined ? input.label : labelOf(scope, call, "edge");
  if (label === undefined) {
    scope.report("query_invalid", call.loc, "UpsertE needs a type: UpsertE<Name>");
    return undefined;
  }
  scope.markWrite();
  const args = call.args ?? [];
  if (args.length > 1) {
    scope.report("query_invalid", call.loc, "UpsertE takes one property block");
    return undefined;
  }
  const properties = compileProperties(scope, args[0], { kind: "edge", label, loc: call.loc }, "update");
  const ends = endpoints(scope, call, steps, index + 1, label);
  if (properties === undefined || ends === undefined) return undefined;
  const tree: WireStep = { upsert_e: { input: current.tree, label, from: ends.from.ref, to: ends.to.ref, properties } };
  return { compiled: { tree, type: { kind: "records", record: "edge", label, one: input.one } }, next: index + 3 };
}
