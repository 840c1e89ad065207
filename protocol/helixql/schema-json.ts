/**
 * The JSON form of a Schema: what introspection returns and what the database stores so that it can be reopened
 * without the `.hx` files. schemaFromJson(schemaToJson(s)) gives back an equal schema. Reading is strict, since
 * a stored schema governs every write: anything malformed is schema_invalid with the JSON path at fault.
 *
 * Shape (version 1):
 *   { version: 1, nodes: [Type], edges: [Type & { from, to, unique? }], vectors: [Type] }   (unique: true only;
 *   schemas stored before unique edges have none)
 *   Type  = { name, fields: [Field] }
 *   Field = { name, type: FieldTypeJson, required, default?: { kind: "now" } | { kind: "value", value }, index?,
 *             vector_index?: VectorIndex, text_index?: { analyzer, positions, tenant? } }   (at most one index)
 *   FieldTypeJson = "U32" | { array: FieldTypeJson } | { object: [Field] }
 *   A vector type also has `index: VectorIndex` = { metric, dimension?, tenant?, ef? } (read as cosine when absent, as
 *   schemas stored before vector indexes have it).
 * DEFAULT values are in valueToJson form and are read back through the field's type, which restores bigints
 * and Dates exactly.
 */

import { SilkError, unreachable } from "../errors.js";
import { isVectorEf, TEXT_ANALYZERS, VECTOR_EF_MAX, VECTOR_METRICS, type TextAnalyzer, type VectorMetric } from "../indexes.js";
import type { EdgeTypeDecl, FieldDecl, FieldType, NodeTypeDecl, Schema, TextIndexOptions, VectorIndexOptions, VectorTypeDecl } from "../schema.js";
import { isPlainObject, RESERVED_LABEL_KEY, valueToJson } from "../values.js";
import { coerceValue } from "./coerce.js";
import { FIELD_TYPE_DEPTH_MAX } from "./field-rules.js";
import { isScalarTypeName } from "./scalars.js";
import { TEXT_TENANT_FIELD } from "./schema-index-options.js";
import { VECTOR_DIMENSIONS_MAX } from "../limits.js";

const SCHEMA_JSON_VERSION = 1;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function schemaToJson(schema: Schema): unknown {
  return {
    version: SCHEMA_JSON_VERSION,
    nodes: [...schema.nodes.values()].map((t) => ({ name: t.name, fields: fieldsToJson(t.fields) })),
    edges: [...schema.edges.values()].map((t) => ({ name: t.name, from: t.from, to: t.to, ...(t.unique ? { unique: true } : {}), fields: fieldsToJson(t.fields) })),
    vectors: [...schema.vectors.values()].map((t) => ({ name: t.name, index: { ...t.index }, fields: fieldsToJson(t.fields) })),
  };
}

function fieldsToJson(fields: ReadonlyMap<string, FieldDecl>): unknown[] {
  return [...fields.values()].map((f) => {
    const out: { [key: string]: unknown } = { name: f.name, type: typeToJson(f.type), required: f.required };
    if (f.default?.kind === "now") out.default = { kind: "now" };
    else if (f.default?.kind === "value") out.default = { kind: "value", value: valueToJson(f.default.value) };
    if (f.index !== undefined) out.index = f.index;
    if (f.vectorIndex !== undefined) out.vector_index = { ...f.vectorIndex };
    if (f.textIndex !== undefined) out.text_index = { ...f.textIndex };
    return out;
  });
}

function typeToJson(t: FieldType): unknown {
  switch (t.kind) {
    case "scalar":
      return t.name;
    case "array":
      return { array: typeToJson(t.element) };
    case "object":
      return { object: fieldsToJson(t.fields) };
    default:
      return unreachable(t, "field type");
  }
}

/** The inverse of schemaToJson; throws schema_invalid naming the JSON path of the first problem. */
export function schemaFromJson(json: unknown): Schema {
  const root = expectObject(json, "$");
  if (root.version !== SCHEMA_JSON_VERSION) fail("$.version", `expected ${SCHEMA_JSON_VERSION}, got ${JSON.stringify(root.version)}`);
  const nodes = new Map<string, NodeTypeDecl>();
  const edges = new Map<string, EdgeTypeDecl>();
  const vectors = new Map<string, VectorTypeDecl>();
  forEachType(root.nodes, "$.nodes", nodes, (name, fields) => ({ kind: "node", name, fields }));
  forEachType(root.vectors, "$.vectors", vectors, (name, fields, raw, path): VectorTypeDecl => {
    const index = raw.index === undefined ? { metric: "cosine" as const } : vectorIndexFromJson(raw.index, `${path}.index`, fields);
    return { kind: "vector", name, fields, index };
  });
  forEachType(root.edges, "$.edges", edges, (name, fields, raw, path) => {
    const from = expectString(raw.from, `${path}.from`);
    const to = expectString(raw.to, `${path}.to`);
    for (const [role, target] of [["from", from], ["to", to]] as const) {
      if (nodes.has(target) === vectors.has(target)) {
        fail(`${path}.${role}`, `${target} must name exactly one declared node or vector type`);
      }
    }
    if (raw.unique !== undefined && typeof raw.unique !== "boolean") fail(`${path}.unique`, "expected a boolean");
    return { kind: "edge", name, from, to, unique: raw.unique === true, fields };
  });
  return { nodes, edges, vectors };
}

function forEachType<T>(
  list: unknown,
  path: string,
  into: Map<string, T>,
  make: (name: string, fields: ReadonlyMap<string, FieldDecl>, raw: { [key: string]: unknown }, path: string) => T,
): void {
  if (!Array.isArray(list)) fail(path, "expected an array");
  list.forEach((item: unknown, i) => {
    const itemPath = `${path}[${i}]`;
    const raw = expectObject(item, itemPath);
    const name = expectString(raw.name, `${itemPath}.name`);
    if (!IDENTIFIER.test(name)) fail(`${itemPath}.name`, `${JSON.stringify(name)} is not an identifier`);
    if (into.has(name)) fail(`${itemPath}.name`, `duplicate type ${name}`);
    into.set(name, make(name, fieldsFromJson(raw.fields, `${itemPath}.fields`, 0), raw, itemPath));
  });
}

function fieldsFromJson(list: unknown, path: string, depth: number): Map<string, FieldDecl> {
  if (!Array.isArray(list)) fail(path, "expected an array");
  const out = new Map<string, FieldDecl>();
  list.forEach((item: unknown, i) => {
    const fieldPath = `${path}[${i}]`;
    const raw = expectObject(item, fieldPath);
    const name = expectString(raw.name, `${fieldPath}.name`);
    const reserved = name === "__proto__" || (depth === 0 && (name === "id" || name === RESERVED_LABEL_KEY));
    if (!IDENTIFIER.test(name) || reserved) fail(`${fieldPath}.name`, `${JSON.stringify(name)} is not an allowed field name`);
    if (out.has(name)) fail(`${fieldPath}.name`, `duplicate field ${name}`);
    if (typeof raw.required !== "boolean") fail(`${fieldPath}.required`, "expected a boolean");
    const decl: FieldDecl = { name, type: typeFromJson(raw.type, `${fieldPath}.type`, depth), required: raw.required };
    if (raw.index !== undefined) {
      if (depth > 0 || (raw.index !== "index" && raw.index !== "unique")) fail(`${fieldPath}.index`, "expected \"index\" or \"unique\" on a top-level field");
      decl.index = raw.index;
    }
    if (raw.default !== undefined) {
      if (depth > 0) fail(`${fieldPath}.default`, "DEFAULT is only allowed on top-level fields");
      decl.default = defaultFromJson(decl.type, raw.default, `${fieldPath}.default`);
    }
    readFieldIndexes(decl, raw, fieldPath, depth);
    out.set(name, decl);
  });
  if (depth === 0) checkTenantsDeclared(list as { [key: string]: unknown }[], out, path);
  return out;
}

/** `vector_index` and `text_index`: on top-level fields of the right type, at most one index per field. */
function readFieldIndexes(decl: FieldDecl, raw: { [key: string]: unknown }, path: string, depth: number): void {
  const given = ["index", "vector_index", "text_index"].filter((key) => raw[key] !== undefined);
  if (given.length > 1) fail(`${path}.${given[1]}`, `a field has at most one index, not ${given.join(" and ")}`);
  if (given.length === 1 && given[0] !== "index" && depth > 0) fail(`${path}.${given[0]}`, "indexes are only allowed on top-level fields");
  const element = decl.type.kind === "array" && decl.type.element.kind === "scalar" ? decl.type.element.name : undefined;
  if (raw.vector_index !== undefined) {
    if (element !== "F32" && element !== "F64" && element !== "I64") fail(`${path}.vector_index`, "a vector index covers [F32], [F64] or [I64] fields");
    decl.vectorIndex = vectorIndexFromJson(raw.vector_index, `${path}.vector_index`, undefined);
  }
  if (raw.text_index !== undefined) {
    if (!(decl.type.kind === "scalar" && decl.type.name === "String") && element !== "String") fail(`${path}.text_index`, "a text index covers String or [String] fields");
    decl.textIndex = textIndexFromJson(raw.text_index, `${path}.text_index`);
  }
}

/** Tenant fields of field indexes must be fields of the same type (a V:: type's own index is checked on its own). */
function checkTenantsDeclared(list: readonly { [key: string]: unknown }[], fields: ReadonlyMap<string, FieldDecl>, path: string): void {
  list.forEach((raw, i) => {
    const decl = fields.get(raw.name as string);
    const tenant = decl?.vectorIndex?.tenant ?? decl?.textIndex?.tenant;
    const key = decl?.vectorIndex !== undefined ? "vector_index" : "text_index";
    if (tenant !== undefined && !fields.has(tenant)) fail(`${path}[${i}].${key}.tenant`, `${tenant} is not a field of this type`);
  });
}

function vectorIndexFromJson(json: unknown, path: string, fields: ReadonlyMap<string, FieldDecl> | undefined): VectorIndexOptions {
  const raw = expectObject(json, path);
  allowKeys(raw, ["metric", "dimension", "tenant", "ef"], path);
  if (!(VECTOR_METRICS as readonly unknown[]).includes(raw.metric)) fail(`${path}.metric`, `expected one of ${VECTOR_METRICS.join(", ")}`);
  const out: VectorIndexOptions = { metric: raw.metric as VectorMetric };
  if (raw.dimension !== undefined) {
    const dimension = raw.dimension;
    if (typeof dimension !== "number" || !Number.isInteger(dimension) || dimension < 1 || dimension > VECTOR_DIMENSIONS_MAX) {
      fail(`${path}.dimension`, `expected an integer from 1 to ${VECTOR_DIMENSIONS_MAX}`);
    }
    out.dimension = dimension;
  }
  if (raw.tenant !== undefined) {
    out.tenant = expectString(raw.tenant, `${path}.tenant`);
    if (fields !== undefined && !fields.has(out.tenant)) fail(`${path}.tenant`, `${out.tenant} is not a field of this type`);
  }
  if (raw.ef !== undefined) {
    if (!isVectorEf(raw.ef)) fail(`${path}.ef`, `expected an integer from 1 to ${VECTOR_EF_MAX}`);
    out.ef = raw.ef;
  }
  return out;
}

function textIndexFromJson(json: unknown, path: string): TextIndexOptions {
  const raw = expectObject(json, path);
  allowKeys(raw, ["analyzer", "positions", "tenant", "implied"], path);
  if (!(TEXT_ANALYZERS as readonly unknown[]).includes(raw.analyzer)) fail(`${path}.analyzer`, `expected one of ${TEXT_ANALYZERS.join(", ")}`);
  if (typeof raw.positions !== "boolean") fail(`${path}.positions`, "expected a boolean");
  const out: TextIndexOptions = { analyzer: raw.analyzer as TextAnalyzer, positions: raw.positions };
  if (raw.tenant !== undefined) {
    if (raw.tenant !== TEXT_TENANT_FIELD) fail(`${path}.tenant`, `a text index is partitioned by ${TEXT_TENANT_FIELD} only`);
    out.tenant = TEXT_TENANT_FIELD;
  }
  if (raw.implied !== undefined) {
    if (raw.implied !== true) fail(`${path}.implied`, "expected true, or no key");
    out.implied = true;
  }
  return out;
}

function allowKeys(raw: { [key: string]: unknown }, allowed: readonly string[], path: string): void {
  for (const key of Object.keys(raw)) if (!allowed.includes(key)) fail(`${path}.${key}`, `unknown key (expected ${allowed.join(", ")})`);
}

function typeFromJson(json: unknown, path: string, depth: number): FieldType {
  if (depth >= FIELD_TYPE_DEPTH_MAX) fail(path, `field types may nest at most ${FIELD_TYPE_DEPTH_MAX} levels deep`);
  if (typeof json === "string") {
    if (isScalarTypeName(json)) return { kind: "scalar", name: json };
    fail(path, `unknown scalar type ${JSON.stringify(json)}`);
  }
  const raw = expectObject(json, path);
  if (raw.array !== undefined) return { kind: "array", element: typeFromJson(raw.array, `${path}.array`, depth + 1) };
  if (raw.object !== undefined) return { kind: "object", fields: fieldsFromJson(raw.object, `${path}.object`, depth + 1) };
  return fail(path, "expected a scalar type name, { array } or { object }");
}

function defaultFromJson(type: FieldType, json: unknown, path: string): FieldDecl["default"] {
  const raw = expectObject(json, path);
  if (raw.kind === "now") {
    if (type.kind !== "scalar" || type.name !== "Date") fail(path, "NOW is only a DEFAULT for a Date field");
    return { kind: "now" };
  }
  if (raw.kind !== "value") fail(`${path}.kind`, "expected \"now\" or \"value\"");
  try {
    return { kind: "value", value: coerceValue(type, raw.value, `${path}.value`) };
  } catch (error) {
    if (error instanceof SilkError) fail(`${path}.value`, error.message);
    throw error;
  }
}

function expectObject(json: unknown, path: string): { [key: string]: unknown } {
  if (!isPlainObject(json)) fail(path, "expected an object");
  return json;
}

function expectString(json: unknown, path: string): string {
  if (typeof json !== "string") fail(path, "expected a string");
  return json;
}

function fail(path: string, message: string): never {
  throw new SilkError("schema_invalid", `stored schema JSON at ${path}: ${message}`);
}
