/**
 * TypeScript types for `silk codegen`, as source text: parameter types from HelixQL's declared types, record types
 * from the schema, and the type of each returned entry inferred from the compiled operation tree.
 *
 * A CompiledQuery carries the tree and the RETURN shape (entry names and cardinality), not static types, so the
 * result types are recovered here by walking the tree: a source's label comes from `has_label` or an `eq` on
 * `$label`, a traversal's from the edge type's From/To in the schema, a terminal's from its op (`count` is a number,
 * `id` strings). Where the tree does not say (an unlabelled traversal, a computed column, `values`), the type is
 * `Json` or `SilkRecord`, which are honest: every answer is JSON, every record has `id` and `label`.
 */
import type { FieldDecl, FieldType, Schema } from "../protocol/schema.js";
import type { ReturnShape } from "../protocol/helixql/query.js";
import type { Entry, Expr, Predicate, Projection, Step } from "../protocol/tree.js";
import { unreachable } from "../protocol/errors.js";

type RecordKind = "node" | "edge" | "vector";
interface RecordRef {
  readonly kind: RecordKind;
  readonly label: string;
}

/** What a step yields: records (of known labels, or any when `refs` is undefined), values, rows or one scalar. */
export type StreamType =
  | { readonly kind: "records"; readonly refs: readonly RecordRef[] | undefined }
  | { readonly kind: "values"; readonly element: string }
  | { readonly kind: "rows"; readonly row: string }
  | { readonly kind: "scalar"; readonly type: string };

const JSON_TYPE = "Json";
const ANY_RECORDS: StreamType = { kind: "records", refs: undefined };
const OPEN_ROW = "{ [key: string]: Json }";

/** The TypeScript type a caller passes for a HelixQL parameter type (what the server's coercion accepts). */
export function inputType(type: FieldType): string {
  switch (type.kind) {
    case "scalar":
      switch (type.name) {
        case "String":
        case "Date":
        case "ID":
          return "string";
        case "Boolean":
          return "boolean";
        case "I64":
        case "U64":
        case "U128":
          // Decimal strings carry every value; numbers only up to 2^53, which the server checks.
          return "string | number";
        default:
          return "number";
      }
    case "array":
      return `readonly ${arrayElement(inputType(type.element))}[]`;
    case "object":
      return objectType(type.fields, inputType, (field) => field.required);
    default:
      return unreachable(type, "field type");
  }
}

/** The TypeScript type of a stored value in a response: 64-bit integers beyond 2^53 arrive as decimal strings. */
export function outputType(type: FieldType): string {
  switch (type.kind) {
    case "scalar":
      return inputType(type).replace("string | number", "number | string");
    case "array":
      return `${arrayElement(outputType(type.element))}[]`;
    case "object":
      return objectType(type.fields, outputType, (field) => field.required);
    default:
      return unreachable(type, "field type");
  }
}

/** An array's element type as source: a union or a readonly array needs parentheses before `[]`. */
function arrayElement(type: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*(\[\])*$/.test(type) ? type : `(${type})`;
}

function objectType(fields: ReadonlyMap<string, FieldDecl>, typeOf: (type: FieldType) => string, present: (field: FieldDecl) => boolean): string {
  const members = [...fields.values()].map((field) => `${propertyKey(field.name)}${present(field) ? "" : "?"}: ${typeOf(field.type)}`);
  return members.length === 0 ? "{}" : `{ ${members.join("; ")} }`;
}

/** An object key as TypeScript source: bare when it is an identifier, quoted otherwise. */
export function propertyKey(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

export function recordTypeName(ref: RecordRef): string {
  return `${ref.label}${ref.kind === "node" ? "Node" : ref.kind === "edge" ? "Edge" : "Vector"}`;
}

/**
 * The record type of one declared label, as responses render it: `id` and `label` first, edges' `from_node` and
 * `to_node`, vectors' `data`, then the fields. A field is always present only when it is REQUIRED or has a DEFAULT.
 */
export function recordTypeSource(kind: RecordKind, label: string, fields: ReadonlyMap<string, FieldDecl>): string {
  const members = [`id: string`, `label: ${JSON.stringify(label)}`];
  if (kind === "edge") members.push("from_node: string", "to_node: string");
  if (kind === "vector") members.push("data: number[]");
  for (const field of fields.values()) {
    members.push(`${propertyKey(field.name)}${field.required || field.default !== undefined ? "" : "?"}: ${outputType(field.type)}`);
  }
  return `export type ${recordTypeName({ kind, label })} = {\n${members.map((member) => `  ${member};`).join("\n")}\n};`;
}

/** Infers the stream type of every named entry of a plan (entries inside FOR loops accumulate, so only records keep their type). */
export function entryTypes(schema: Schema, entries: readonly Entry[]): Map<string, StreamType> {
  const types = new Map<string, StreamType>();
  const visit = (list: readonly Entry[], inLoop: boolean): void => {
    for (const entry of list) {
      if (entry.kind === "for_each") {
        visit(entry.body, true);
        continue;
      }
      if (entry.name === undefined) continue;
      if (entry.kind === "index_operation") {
        types.set(entry.name, { kind: "scalar", type: JSON_TYPE }); // its answer is an object
        continue;
      }
      const type = streamType(schema, entry.root, types);
      types.set(entry.name, inLoop && type.kind !== "records" ? { kind: "scalar", type: JSON_TYPE } : type);
    }
  };
  visit(entries, false);
  return types;
}

function streamType(schema: Schema, step: Step, vars: ReadonlyMap<string, StreamType>): StreamType {
  const input = (inner: Step): StreamType => streamType(schema, inner, vars);
  switch (step.op) {
    case "nodes":
    case "edges":
    case "vectors":
      return step.ref.kind === "var" ? (vars.get(step.ref.name) ?? ANY_RECORDS) : ANY_RECORDS;
    case "nodes_where":
    case "edges_where":
    case "vectors_where": {
      const label = labelOfPredicate(step.predicate);
      const kind: RecordKind = step.op === "nodes_where" ? "node" : step.op === "edges_where" ? "edge" : "vector";
      const declared = step.op === "nodes_where" ? schema.nodes : step.op === "edges_where" ? schema.edges : schema.vectors;
      return { kind: "records", refs: label === undefined || !declared.has(label) ? undefined : [{ kind, label }] };
    }
    case "context":
      return ANY_RECORDS;
    case "out":
    case "in":
    case "both":
      return { kind: "records", refs: endpoints(schema, step.label === undefined ? undefined : [step.label], step.op) };
    case "out_e":
    case "in_e":
    case "both_e":
      return { kind: "records", refs: step.label === undefined ? undefined : [{ kind: "edge", label: step.label }] };
    case "out_n":
    case "in_n":
    case "other_n": {
      const edges = input(step.input);
      const labels = edges.kind === "records" && edges.refs !== undefined ? edges.refs.filter((r) => r.kind === "edge").map((r) => r.label) : undefined;
      return { kind: "records", refs: endpoints(schema, labels, step.op === "out_n" ? "out" : step.op === "in_n" ? "in" : "both") };
    }
    case "has_label":
      return narrowToLabel(schema, input(step.input), step.label);
    case "has":
    case "has_key":
    case "where":
    case "dedup":
    case "within":
    case "without":
    case "limit":
    case "skip":
    case "range":
    case "order_by":
    case "order_by_multiple":
    case "set_property":
    case "update":
    case "remove_property":
    case "drop":
    case "drop_edge":
    case "optional":
    case "as":
    case "store":
      return input(step.input);
    case "edge_has":
    case "edge_has_label":
      return narrowToKind(input(step.input), "edge");
    case "union":
    case "coalesce":
    case "choose":
    case "intersect":
    case "repeat":
    case "inject":
    case "select":
    case "unfold":
      // Their streams depend on sub-traversals or variables decided at run time: any records, or JSON.
      return step.op === "unfold" ? { kind: "values", element: JSON_TYPE } : ANY_RECORDS;
    case "drop_edge_by_id":
      return step.input === undefined ? ANY_RECORDS : input(step.input);
    case "fold":
      return { kind: "scalar", type: JSON_TYPE };
    case "count":
      return { kind: "scalar", type: "number" };
    case "exists":
      return { kind: "scalar", type: "boolean" };
    case "id":
    case "label":
      return { kind: "values", element: "string" };
    case "values":
      return { kind: "values", element: JSON_TYPE };
    case "project":
      return { kind: "rows", row: step.all ? OPEN_ROW : projectRow(schema, input(step.input), step.projections) };
    case "value_map":
    case "group_count":
    case "group":
    case "aggregate_by":
    case "shortest_path":
      return { kind: "rows", row: OPEN_ROW };
    case "aggregate":
      return { kind: "scalar", type: step.fn === "sum" ? "number" : step.fn === "avg" ? "number | null" : JSON_TYPE };
    case "add_n":
    case "upsert_n":
      return { kind: "records", refs: [{ kind: "node", label: step.label }] };
    case "add_e":
    case "upsert_e":
      return { kind: "records", refs: [{ kind: "edge", label: step.label }] };
    case "add_v":
    case "upsert_v":
      return { kind: "records", refs: [{ kind: "vector", label: step.label }] };
    case "vector_search":
    case "text_search":
      return { kind: "records", refs: [{ kind: step.kind, label: step.label }] };
    case "rerank_rrf":
    case "rerank_mmr":
    case "simple_path":
    case "with_sack":
    case "sack_set":
    case "sack_add":
      return input(step.input);
    case "path":
    case "bind":
    case "sack_get":
    case "project_bindings":
    case "edge_properties":
      // Rows with bindings, a path or a sack answer HelixDB's row objects (node/exec/rows.ts), not records.
      return { kind: "rows", row: OPEN_ROW };
    default:
      return unreachable(step, "step");
  }
}

/** Only the records of one kind (edge filters drop the others). */
function narrowToKind(stream: StreamType, kind: RecordKind): StreamType {
  if (stream.kind !== "records" || stream.refs === undefined) return stream;
  return { kind: "records", refs: stream.refs.filter((ref) => ref.kind === kind) };
}

/** `eq($label, "User")` (either side, alone or inside an `and`, as index lookups compile) names the label a `*_where` scan yields. */
function labelOfPredicate(predicate: Predicate): string | undefined {
  if (predicate.kind === "and") return predicate.predicates.map(labelOfPredicate).find((label) => label !== undefined);
  if (predicate.kind !== "compare" || predicate.op !== "eq") return undefined;
  const isLabel = (expr: Expr): boolean => expr.kind === "property" && expr.path === "$label";
  const text = (expr: Expr): string | undefined => (expr.kind === "constant" && typeof expr.value === "string" ? expr.value : undefined);
  if (isLabel(predicate.left)) return text(predicate.right);
  if (isLabel(predicate.right)) return text(predicate.left);
  return undefined;
}

/** The records at the From (`in`), To (`out`) or both ends of edges of these labels; undefined when unknown. */
function endpoints(schema: Schema, edgeLabels: readonly string[] | undefined, direction: "out" | "in" | "both"): RecordRef[] | undefined {
  if (edgeLabels === undefined) return undefined;
  const refs: RecordRef[] = [];
  for (const label of edgeLabels) {
    const edge = schema.edges.get(label);
    if (edge === undefined) return undefined;
    const ends = direction === "out" ? [edge.to] : direction === "in" ? [edge.from] : [edge.from, edge.to];
    for (const end of ends) {
      const ref: RecordRef = { kind: schema.vectors.has(end) ? "vector" : "node", label: end };
      if (!refs.some((known) => known.kind === ref.kind && known.label === ref.label)) refs.push(ref);
    }
  }
  return refs;
}

/** `has_label`: keeps the input's records of that label; of an unknown input, every declared type of that name. */
function narrowToLabel(schema: Schema, stream: StreamType, label: string): StreamType {
  if (stream.kind !== "records") return stream;
  if (stream.refs !== undefined) return { kind: "records", refs: stream.refs.filter((ref) => ref.label === label) };
  const refs: RecordRef[] = [];
  if (schema.nodes.has(label)) refs.push({ kind: "node", label });
  if (schema.edges.has(label)) refs.push({ kind: "edge", label });
  if (schema.vectors.has(label)) refs.push({ kind: "vector", label });
  return { kind: "records", refs: refs.length === 0 ? undefined : refs };
}

/**
 * A projection row: `$id` and `$label` columns are strings, a declared top-level field of every input label has its
 * type or null (a record without the property gives null), counts are numbers, anything else Json.
 */
function projectRow(schema: Schema, input: StreamType, projections: readonly Projection[]): string {
  const refs = input.kind === "records" ? input.refs : undefined;
  const columns = projections.map((projection) => {
    const key = propertyKey(projection.alias);
    // HelixQL compiles a field `::{name}` to an expression item that reads the property (null when the record lacks
    // it, where a tree's property item leaves the column out), so both type as the field.
    const source = projection.kind === "property" ? projection.source : projection.expr.kind === "property" ? projection.expr.path : undefined;
    if (source === undefined) return `${key}: ${projection.kind === "expr" && projection.expr.kind === "count" ? "number" : JSON_TYPE}`;
    if (source === "$id" || source === "$label") return `${key}: string`;
    return `${key}: ${declaredFieldType(schema, refs, source) ?? JSON_TYPE}`;
  });
  return columns.length === 0 ? "{}" : `{ ${columns.join("; ")} }`;
}

function declaredFieldType(schema: Schema, refs: readonly RecordRef[] | undefined, name: string): string | undefined {
  if (refs === undefined || refs.length === 0) return undefined;
  const types = new Set<string>();
  for (const ref of refs) {
    const declaration = ref.kind === "node" ? schema.nodes.get(ref.label) : ref.kind === "edge" ? schema.edges.get(ref.label) : schema.vectors.get(ref.label);
    const field = declaration?.fields.get(name);
    if (field === undefined) return undefined;
    types.add(outputType(field.type));
  }
  return `${[...types].join(" | ")} | null`;
}

/** The TypeScript type of one RETURN item, given the entries' stream types. */
export function shapeType(shape: ReturnShape, types: ReadonlyMap<string, StreamType>): string {
  switch (shape.kind) {
    case "literal":
      return literalType(shape.value);
    case "object":
      return shape.fields.length === 0 ? "{}" : `{ ${shape.fields.map(([name, inner]) => `${propertyKey(name)}: ${shapeType(inner, types)}`).join("; ")} }`;
    case "array":
      return `[${shape.elements.map((inner) => shapeType(inner, types)).join(", ")}]`;
    case "entry":
      return entryType(types.get(shape.entry), shape.cardinality);
    default:
      return unreachable(shape, "return shape");
  }
}

function literalType(value: unknown): string {
  if (value === null || typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) {
    return JSON.stringify(value);
  }
  return JSON_TYPE;
}

function entryType(stream: StreamType | undefined, cardinality: "one" | "many" | "scalar"): string {
  if (stream === undefined) return JSON_TYPE;
  if (stream.kind === "scalar") return cardinality === "scalar" ? stream.type : JSON_TYPE;
  if (cardinality === "scalar") return JSON_TYPE;
  const element =
    stream.kind === "records"
      ? stream.refs === undefined || stream.refs.length === 0
        ? "SilkRecord"
        : stream.refs.map(recordTypeName).join(" | ")
      : stream.kind === "values"
        ? stream.element
        : stream.row;
  return cardinality === "one" ? `${element} | null` : `${arrayElement(element)}[]`;
}
