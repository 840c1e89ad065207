/**
 * HelixQL's search and rerank calls, compiled to the operation tree's search steps (docs/HELIXQL.md, "Search"):
 *
 * - `SearchV<T>(vector | Embed(text), k)` and `SearchBM25<T>(text, k)` start a traversal (`vector_search_<kinds>`,
 *   `text_search_<kinds>`); after `::` they search only among the records of the traversal so far (the `_within`
 *   forms). A named `tenant: expr` gives the tenant value of a partitioned index; SearchV's `ef: n` (Silk's
 *   extension: HelixDB v2.3.5's SearchV has no such argument) sets that search's beam width.
 * - `::RerankRRF`, `::RerankRRF(k: 60)`, `::RerankMMR(lambda: 0.7)`, `::RerankMMR(lambda: 0.5, distance: "euclidean")`.
 *
 * Invariants: a search names an index the schema declares (a `V::` type's own vector, a `VECTOR INDEX` field, the
 * `TEXT INDEX` fields of the type), a tenant value is given exactly when that index is tenant-partitioned, and a
 * search after `::` gets records of the same kind and type as it searches. What only the data can tell (k and
 * lambda in range when they are parameters, a vector's length) is checked when the query runs.
 */
import { VECTOR_EF_MAX, VECTOR_FIELD } from "../indexes.js";
import type { FieldDecl, FieldType } from "../schema.js";
import type { CallAst, ExprAst, NamedArgumentAst } from "./ast.js";
import type { WireInput, WireMmrDistance, WireStep, WireTextSearch, WireVectorSearch } from "../tree-wire.js";
import type { Compiled, CompilerScope } from "./query-scope.js";
import { describeStaticType, describeValueType, familyOf, type RecordKind } from "./query-types.js";
import { compileInput, isBareName, locOf } from "./query-values.js";
import { unreachable } from "../errors.js";

const PREFIX: Readonly<Record<RecordKind, string>> = { node: "N", edge: "E", vector: "V" };
const MMR_DISTANCES: readonly WireMmrDistance[] = ["cosine", "euclidean", "dotproduct"];

/** Compiles a vector input (`Embed(text)` or a [F64] value); query-steps.ts's, shared with AddV. */
export type VectorInputCompiler = (scope: CompilerScope, arg: ExprAst) => WireInput | undefined;

interface Target {
  readonly kind: RecordKind;
  readonly label: string;
  readonly fields: ReadonlyMap<string, FieldDecl>;
}

/** The type a search names: a `V::` type first, then `N::`, then `E::` (a name may be declared in several kinds). */
function target(scope: CompilerScope, call: CallAst): Target | undefined {
  const generic = call.generic;
  if (generic === undefined) {
    scope.report("query_invalid", call.loc, `${call.name.text} needs a type, as in ${call.name.text}<Name>`);
    return undefined;
  }
  const { schema } = scope;
  const found = schema.vectors.get(generic.text) ?? schema.nodes.get(generic.text) ?? schema.edges.get(generic.text);
  if (found === undefined) {
    scope.report("unknown_label", generic.loc, `${generic.text} is not a declared V::, N:: or E:: type`);
    return undefined;
  }
  return { kind: found.kind, label: found.name, fields: found.fields };
}

/** `SearchV` / `SearchBM25`; `input` is the traversal before it when written after `::`. */
export function compileSearch(scope: CompilerScope, call: CallAst, input: Compiled | undefined, vectorInput: VectorInputCompiler): Compiled | undefined {
  const isVector = call.name.text === "SearchV";
  const found = target(scope, call);
  if (found === undefined) return undefined;
  const { kind, label } = found;
  const named = namedArguments(scope, call, isVector ? ["tenant", "ef"] : ["tenant"]);
  if (named === undefined) return undefined;
  if (input !== undefined) {
    const type = input.type;
    if (type.kind !== "records" || type.record !== kind || (type.label !== undefined && type.label !== label)) {
      scope.report("query_invalid", call.loc, `${call.name.text}<${label}> after :: searches among ${PREFIX[kind]}<${label}> records, but the traversal before it yields ${describeStaticType(type)}`);
      return undefined;
    }
  }
  const vectorIndex = isVector ? vectorIndexOf(scope, call, found) : undefined;
  const index = isVector ? vectorIndex : textIndexOf(scope, call, found);
  if (index === undefined) return undefined;
  const args = call.args ?? [];
  const query = isVector ? vectorInput(scope, args[0]) : textInput(scope, args[0]);
  const k = countInput(scope, args[1], `${call.name.text}'s k (the number of results)`);
  if (query === undefined || k === undefined) return undefined;
  const tenant = tenantInput(scope, call, named.get("tenant"), index.tenant);
  if (tenant === null) return undefined;
  const efArgument = named.get("ef");
  const ef = efArgument === undefined ? undefined : efInput(scope, call, efArgument);
  if (ef === null) return undefined;
  const search = { query, k, ...(tenant === undefined ? {} : { tenant_value: tenant }) };
  const tree =
    vectorIndex === undefined
      ? textSearch(kind, input?.tree, { label, ...search })
      : vectorSearch(kind, input?.tree, label, vectorIndex.property, { ...search, ...(ef === undefined ? {} : { ef }) });
  return { tree, type: { kind: "records", record: kind, label, one: false } };
}

/** `vector_search_<kinds>[_within]`; a `V::` type's own vector (VECTOR_FIELD) is searched without a property. */
function vectorSearch(kind: RecordKind, input: WireStep | undefined, label: string, property: string, search: Omit<WireVectorSearch, "label">): WireStep {
  if (kind === "vector") {
    return input === undefined ? { vector_search_vectors: { label, ...search } } : { vector_search_vectors_within: { input, label, ...search } };
  }
  const body = { label, property, ...search };
  if (kind === "node") return input === undefined ? { vector_search_nodes: body } : { vector_search_nodes_within: { input, ...body } };
  return input === undefined ? { vector_search_edges: body } : { vector_search_edges_within: { input, ...body } };
}

/** `text_search_<kinds>[_within]`, over every text index of the type (a record's score sums its fields'). */
function textSearch(kind: RecordKind, input: WireStep | undefined, body: WireTextSearch): WireStep {
  switch (kind) {
    case "node":
      return input === undefined ? { text_search_nodes: body } : { text_search_nodes_within: { input, ...body } };
    case "edge":
      return input === undefined ? { text_search_edges: body } : { text_search_edges_within: { input, ...body } };
    case "vector":
      return input === undefined ? { text_search_vectors: body } : { text_search_vectors_within: { input, ...body } };
    default:
      return unreachable(kind, "record kind");
  }
}

/** What a search reads of its index; a vector search also names its `property` (VECTOR_FIELD: a `V::` type's own vector). */
interface SearchedIndex {
  /** The tenant field, when the index is partitioned (for text: when any of the type's text indexes is). */
  readonly tenant?: string;
}

/** A `V::` type's own vector, or the type's one `VECTOR INDEX` field (or the one named by a third argument). */
function vectorIndexOf(scope: CompilerScope, call: CallAst, found: Target): (SearchedIndex & { readonly property: string }) | undefined {
  const args = call.args ?? [];
  const usage = `SearchV<${found.label}>(vector or Embed(text), k${found.kind === "vector" ? "" : ", field?"})`;
  const most = found.kind === "vector" ? 2 : 3;
  if (args.length < 2 || args.length > most) {
    scope.report("query_invalid", call.loc, `${usage} takes ${most === 2 ? "2" : "2 or 3"} arguments, not ${args.length}`);
    return undefined;
  }
  if (found.kind === "vector") return { property: VECTOR_FIELD, tenant: scope.schema.vectors.get(found.label)?.index.tenant };
  const indexed = [...found.fields.values()].filter((field) => field.vectorIndex !== undefined);
  const third = args[2];
  if (third !== undefined) {
    const name = third.kind === "chain" && third.steps.length === 0 && isBareName(third.start) ? third.start.name.text : undefined;
    const field = name === undefined ? undefined : found.fields.get(name);
    if (field?.vectorIndex === undefined) {
      const listed = indexed.map((f) => f.name).join(", ") || "none";
      scope.report("query_invalid", locOf(third), `${usage}: the third argument names a VECTOR INDEX field of ${found.label} (${listed})`);
      return undefined;
    }
    return { property: field.name, tenant: field.vectorIndex.tenant };
  }
  if (indexed.length !== 1) {
    const why = indexed.length === 0 ? `${PREFIX[found.kind]}::${found.label} has no VECTOR INDEX field` : `${found.label} has several VECTOR INDEX fields (${indexed.map((f) => f.name).join(", ")}): name one as the third argument`;
    scope.report("query_invalid", call.loc, `SearchV<${found.label}>: ${why}`);
    return undefined;
  }
  return { property: indexed[0].name, tenant: indexed[0].vectorIndex!.tenant };
}

/**
 * Every `TEXT INDEX` field of the type (a record's score sums its fields'). A type without one gets an implied
 * `standard` index on each top-level String and [String] field, as HelixDB indexes every node for BM25 without a
 * declaration: the fields are marked in the schema (so the index is built like a declared one) and each search that
 * relies on them is warned about.
 */
function textIndexOf(scope: CompilerScope, call: CallAst, found: Target): SearchedIndex | undefined {
  const args = call.args ?? [];
  if (args.length !== 2) {
    scope.report("query_invalid", call.loc, `SearchBM25<${found.label}>(text, k) takes 2 arguments, not ${args.length}`);
    return undefined;
  }
  const fields = [...found.fields.values()];
  let indexed = fields.filter((field) => field.textIndex !== undefined);
  const type = `${PREFIX[found.kind]}::${found.label}`;
  if (indexed.every((field) => field.textIndex?.implied === true)) {
    indexed = fields.filter((field) => isTextField(field.type));
    if (indexed.length === 0) {
      scope.report("query_invalid", call.loc, `SearchBM25<${found.label}>: ${type} has no TEXT INDEX field, and no String or [String] field to search`);
      return undefined;
    }
    for (const field of indexed) field.textIndex = { analyzer: "standard", positions: false, implied: true };
    const names = indexed.map((field) => field.name).join(", ");
    scope.warn("implied_text_index", call.loc, `SearchBM25<${found.label}>: ${type} has no TEXT INDEX field; searching an implied standard text index over ${names} (declare TEXT INDEX on the fields to search)`);
  }
  const tenant = indexed.find((field) => field.textIndex?.tenant !== undefined)?.textIndex?.tenant;
  return tenant === undefined ? {} : { tenant };
}

/** What a text index covers: String and [String] (schema-index-options.ts checks the same of a declared one). */
function isTextField(type: FieldType): boolean {
  const scalar = type.kind === "array" ? type.element : type;
  return scalar.kind === "scalar" && scalar.name === "String";
}

function textInput(scope: CompilerScope, arg: ExprAst): WireInput | undefined {
  const text = compileInput(scope, arg, undefined);
  if (text === undefined) return undefined;
  if (!["string", "any"].includes(familyOf(text.type))) {
    scope.report("invalid_type", locOf(arg), `SearchBM25 searches for a string, not ${describeValueType(text.type)}`);
    return undefined;
  }
  return text.input;
}

/** k of a search: a number (a literal is checked to be a whole number of at least 1). */
function countInput(scope: CompilerScope, arg: ExprAst, what: string): WireInput | undefined {
  const value = compileInput(scope, arg, undefined);
  if (value === undefined) return undefined;
  const literal = arg.kind === "literal" && arg.literal.kind === "number" ? arg.literal.text : undefined;
  if (!["number", "any"].includes(familyOf(value.type)) || (literal !== undefined && !/^[1-9][0-9]*$/.test(literal))) {
    scope.report("invalid_type", locOf(arg), `${what} is a whole number of at least 1, not ${literal ?? describeValueType(value.type)}`);
    return undefined;
  }
  return value.input;
}

/**
 * SearchV's `ef`: an integer literal from 1 to VECTOR_EF_MAX (null after a report). A literal only, because the
 * operation tree's `ef` is part of the prepared plan, not a value computed per call: a query's effort is a choice
 * made where its recall is measured, like the index's own `ef`.
 */
function efInput(scope: CompilerScope, call: CallAst, given: NamedArgumentAst): number | null {
  const value = given.value;
  const literal = value.kind === "literal" && value.literal.kind === "number" ? value.literal.text : undefined;
  if (literal === undefined) {
    scope.report("query_invalid", locOf(value), `${call.name.text}<${call.generic?.text}>: ef (the search beam width) is an integer literal, as in ef: 100`);
    return null;
  }
  if (!/^[0-9]+$/.test(literal) || Number(literal) < 1 || Number(literal) > VECTOR_EF_MAX) {
    scope.report("invalid_type", locOf(value), `${call.name.text}<${call.generic?.text}>: ef (the search beam width) is an integer from 1 to ${VECTOR_EF_MAX}, not ${literal}`);
    return null;
  }
  return Number(literal);
}

/** RerankRRF's k: a number (a literal is checked to be greater than 0; `k: 30.0` as HelixDB's grammar takes it). */
function rrfKInput(scope: CompilerScope, arg: ExprAst): WireInput | undefined {
  const value = compileInput(scope, arg, undefined);
  if (value === undefined) return undefined;
  const literal = arg.kind === "literal" && arg.literal.kind === "number" ? arg.literal.text : undefined;
  if (!["number", "any"].includes(familyOf(value.type)) || (literal !== undefined && !(Number(literal) > 0))) {
    scope.report("invalid_type", locOf(arg), `RerankRRF's k is a number greater than 0, not ${literal ?? describeValueType(value.type)}`);
    return undefined;
  }
  return value.input;
}

/** The tenant value: required by a partitioned index, refused by another. null after a report. */
function tenantInput(scope: CompilerScope, call: CallAst, given: NamedArgumentAst | undefined, tenant: string | undefined): WireInput | undefined | null {
  const what = `${call.name.text}<${call.generic?.text}>`;
  if (given === undefined) {
    if (tenant === undefined) return undefined;
    scope.report("query_invalid", call.loc, `${what}: the index is partitioned by ${tenant}; pass the tenant as ${call.name.text}<${call.generic?.text}>(.., tenant: value)`);
    return null;
  }
  if (tenant === undefined) {
    scope.report("query_invalid", given.name.loc, `${what}: the index is not partitioned by tenant, so it takes no tenant argument`);
    return null;
  }
  return compileInput(scope, given.value, undefined)?.input ?? null;
}

/** `RerankRRF`, `RerankRRF(k: 60)`, `RerankMMR(lambda: 0.7)`, `RerankMMR(lambda: 0.7, distance: "euclidean")`. */
export function compileRerank(scope: CompilerScope, current: Compiled, call: CallAst): Compiled | undefined {
  const rrf = call.name.text === "RerankRRF";
  const usage = rrf ? "RerankRRF or RerankRRF(k: 60)" : 'RerankMMR(lambda: 0.7) or RerankMMR(lambda: 0.7, distance: "cosine")';
  if (current.type.kind !== "records") {
    scope.report("query_invalid", call.loc, `${call.name.text} reorders records, but the traversal before it yields ${describeStaticType(current.type)}`);
    return undefined;
  }
  if ((call.args?.length ?? 0) > 0 || call.generic !== undefined) {
    scope.report("query_invalid", call.loc, `${call.name.text} takes named arguments only: ${usage}`);
    return undefined;
  }
  const named = namedArguments(scope, call, rrf ? ["k"] : ["lambda", "distance"]);
  if (named === undefined) return undefined;
  if (rrf) {
    const k = named.get("k");
    const input = k === undefined ? undefined : rrfKInput(scope, k.value);
    if (k !== undefined && input === undefined) return undefined;
    return { tree: { rerank_rrf: { input: current.tree, ...(input === undefined ? {} : { k: input }) } }, type: current.type };
  }
  const lambda = named.get("lambda");
  if (lambda === undefined) {
    scope.report("query_invalid", call.loc, `RerankMMR needs lambda, from 0 (diversity) to 1 (relevance): ${usage}`);
    return undefined;
  }
  const lambdaInput = compileInput(scope, lambda.value, undefined);
  if (lambdaInput === undefined) return undefined;
  const literal = lambda.value.kind === "literal" && lambda.value.literal.kind === "number" ? Number(lambda.value.literal.text) : undefined;
  if (!["number", "any"].includes(familyOf(lambdaInput.type)) || (literal !== undefined && !(literal >= 0 && literal <= 1))) {
    scope.report("invalid_type", locOf(lambda.value), `RerankMMR's lambda is a number from 0 to 1, not ${literal ?? describeValueType(lambdaInput.type)}`);
    return undefined;
  }
  const distanceArg = named.get("distance");
  let distance: WireMmrDistance = "cosine";
  if (distanceArg !== undefined) {
    const value = distanceArg.value;
    const written = value.kind === "literal" && value.literal.kind === "string" ? value.literal.value : undefined;
    const text = MMR_DISTANCES.find((known) => known === written);
    if (text === undefined) {
      scope.report("query_invalid", locOf(value), `RerankMMR's distance is one of ${MMR_DISTANCES.map((d) => `"${d}"`).join(", ")}`);
      return undefined;
    }
    distance = text;
  }
  return { tree: { rerank_mmr: { input: current.tree, lambda: lambdaInput.input, distance } }, type: current.type };
}

/** The named arguments of a call by name; unknown and repeated names are reported (undefined). */
function namedArguments(scope: CompilerScope, call: CallAst, allowed: readonly string[]): Map<string, NamedArgumentAst> | undefined {
  const out = new Map<string, NamedArgumentAst>();
  let ok = true;
  for (const arg of call.named ?? []) {
    const name = arg.name.text;
    if (!allowed.includes(name)) {
      scope.report("query_invalid", arg.name.loc, `${call.name.text} takes no argument named ${name}${allowed.length > 0 ? ` (named arguments: ${allowed.join(", ")})` : ""}`);
      ok = false;
    } else if (out.has(name)) {
      scope.report("query_invalid", arg.name.loc, `${call.name.text}: the argument ${name} is given twice`);
      ok = false;
    } else {
      out.set(name, arg);
    }
  }
  return ok ? out : undefined;
}
