/**
 * Write-time typing: turns the properties a caller sends (parsed JSON, or JS values from an embedded caller) into
 * the stored Values the schema declares, or rejects them with a stable error code naming the offending place.
 * The engine runs prepareProperties for every AddN/AddE/AddV and UPDATE, so nothing reaches storage unchecked.
 *
 * Null handling lives at the field level, not in coerceValue: only the field knows whether it is REQUIRED, and
 * null means "absent" (on create) or "remove" (on update) there. A null inside an array is simply a wrong type.
 */

import { SilkError, unreachable } from "../errors.js";
import type { FieldDecl, FieldType, ScalarTypeName } from "../schema.js";
import { RESERVED_LABEL_KEY, isPlainObject, type Properties, type Value } from "../values.js";
import { coerceScalar, F32_MAX, typeError } from "./scalars.js";

export { SCALAR_TYPE_NAMES, isScalarTypeName } from "./scalars.js";

const NUMERIC_SCALARS: ReadonlySet<ScalarTypeName> = new Set<ScalarTypeName>([
  "F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "U128", "ID",
]);

/** Coerces `input` to `type`'s stored form. `where` names the place in messages, e.g. `AddN<User>.address.zip`. */
export function coerceValue(type: FieldType, input: unknown, where: string): Value {
  switch (type.kind) {
    case "scalar":
      return coerceScalar(type.name, input, where);
    case "array":
      if (Array.isArray(input)) return coerceArray(type.element, input, where);
      if (ArrayBuffer.isView(input)) return coerceTypedArray(type, input, where);
      throw typeError(fieldTypeToString(type), input, where);
    case "object":
      return coerceObject(type, input, where);
    default:
      return unreachable(type, "field type");
  }
}

function coerceArray(element: FieldType, input: readonly unknown[], where: string): Value[] {
  // Vectors arrive as long arrays of floats: check them in one tight loop and build element names only on failure.
  if (element.kind === "scalar" && (element.name === "F64" || element.name === "F32") && allFloats(input, element.name)) {
    return input.slice() as number[];
  }
  const out: Value[] = new Array<Value>(input.length);
  for (let i = 0; i < input.length; i++) out[i] = coerceValue(element, input[i], `${where}[${i}]`);
  return out;
}

function allFloats(items: ArrayLike<unknown>, name: "F32" | "F64"): boolean {
  const limit = name === "F32" ? F32_MAX : Number.MAX_VALUE;
  for (let i = 0; i < items.length; i++) {
    const x = items[i];
    if (typeof x !== "number" || !(x >= -limit && x <= limit)) return false; // also false for NaN
  }
  return true;
}

/**
 * A typed array is accepted for an array of a numeric type when every element is a valid value of that type. The
 * classes of the value model (Float32/Float64/Int32/BigInt64/Uint8Array) are stored as they came, copied so the
 * caller can reuse its buffer; other classes (Int16Array, Uint32Array...) become plain arrays.
 */
function coerceTypedArray(type: Extract<FieldType, { kind: "array" }>, input: ArrayBufferView, where: string): Value {
  const element = type.element;
  if (element.kind !== "scalar" || !NUMERIC_SCALARS.has(element.name) || input instanceof DataView) {
    throw typeError(fieldTypeToString(type), input, where);
  }
  const items = input as unknown as ArrayLike<number | bigint>;
  const floatsOnly = (element.name === "F64" || element.name === "F32") && allFloats(items, element.name);
  if (!floatsOnly) {
    for (let i = 0; i < items.length; i++) coerceScalar(element.name, items[i], `${where}[${i}]`);
  }
  if (input instanceof Float64Array) return new Float64Array(input);
  if (input instanceof Float32Array) return new Float32Array(input);
  if (input instanceof Int32Array) return new Int32Array(input);
  if (input instanceof BigInt64Array) return new BigInt64Array(input);
  if (input instanceof Uint8Array) return new Uint8Array(input); // also turns a Node Buffer into plain bytes
  return coerceArray(element, Array.from(items), where);
}

function coerceObject(type: Extract<FieldType, { kind: "object" }>, input: unknown, where: string): Value {
  if (!isPlainObject(input)) throw typeError(fieldTypeToString(type), input, where);
  const out: { [key: string]: Value } = {};
  for (const key of Object.keys(input)) {
    const field = type.fields.get(key);
    if (field === undefined) throw unknownField(type.fields, key, where);
    const value = input[key];
    if (value === null || value === undefined) {
      if (field.required) throw missingProperty(field, where);
      continue;
    }
    out[key] = coerceValue(field.type, value, `${where}.${key}`);
  }
  for (const field of type.fields.values()) {
    if (field.required && out[field.name] === undefined) throw missingProperty(field, where);
  }
  return out;
}

/**
 * Checks and converts the properties of one write. `input` must be a plain object; every key must be a declared
 * field (`$label` never is). In "create" mode DEFAULTs fill absent fields (NOW from `now()`) and an absent REQUIRED
 * field without a DEFAULT is missing_property; in "update" mode only the given keys appear in the result, and a
 * null value stays null to mean "remove this property" (refused for REQUIRED fields). `undefined` counts as absent
 * in both modes, so a JS caller's `{ age: undefined }` changes nothing.
 */
export function prepareProperties(
  fields: ReadonlyMap<string, FieldDecl>,
  input: unknown,
  mode: "create" | "update",
  where: string,
  now: () => Date,
): Properties {
  if (!isPlainObject(input)) throw typeError("an object of properties", input, where);
  const out: Properties = {};
  for (const key of Object.keys(input)) {
    if (key === RESERVED_LABEL_KEY) {
      throw new SilkError("invalid_field", `${where}: the key ${RESERVED_LABEL_KEY} is reserved for the record's label`);
    }
    const field = fields.get(key);
    if (field === undefined) throw unknownField(fields, key, where);
    const value = input[key];
    if (value === undefined) continue;
    if (value === null) {
      if (mode === "update" && field.required) {
        throw new SilkError("invalid_value", `${where}: ${key} is REQUIRED and cannot be removed`);
      }
      if (mode === "update") out[key] = null;
      continue;
    }
    out[key] = coerceValue(field.type, value, `${where}.${key}`);
  }
  if (mode === "create") fillDefaults(fields, out, where, now);
  return out;
}

function fillDefaults(fields: ReadonlyMap<string, FieldDecl>, out: Properties, where: string, now: () => Date): void {
  for (const field of fields.values()) {
    if (out[field.name] !== undefined) continue;
    const fallback = field.default;
    if (fallback?.kind === "now") out[field.name] = now();
    // Defaults are shared by every record created without the field; a copy keeps one record's mutable Date or
    // array from aliasing another's.
    else if (fallback?.kind === "value") out[field.name] = copyValue(fallback.value);
    else if (field.required) throw missingProperty(field, where);
  }
}

function copyValue(value: Value): Value {
  return typeof value === "object" && value !== null ? structuredClone(value) : value;
}

function unknownField(fields: ReadonlyMap<string, FieldDecl>, key: string, where: string): SilkError {
  const declared = [...fields.keys()];
  const list = declared.length === 0 ? "none" : declared.slice(0, 20).join(", ") + (declared.length > 20 ? ", ..." : "");
  const shown = JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}...` : key);
  return new SilkError("invalid_field", `${where}: field ${shown} is not declared in the schema (declared: ${list})`);
}

function missingProperty(field: FieldDecl, where: string): SilkError {
  return new SilkError(
    "missing_property",
    `${where}: the REQUIRED field ${field.name} (${fieldTypeToString(field.type)}) was not given and has no DEFAULT`,
  );
}

/** HelixQL spelling of a type: `U32`, `[String]`, `{ city: String, zip: U32 }`. */
export function fieldTypeToString(t: FieldType): string {
  switch (t.kind) {
    case "scalar":
      return t.name;
    case "array":
      return `[${fieldTypeToString(t.element)}]`;
    case "object": {
      if (t.fields.size === 0) return "{}";
      const parts = [...t.fields.values()].map((f) => `${f.required ? "REQUIRED " : ""}${f.name}: ${fieldTypeToString(f.type)}`);
      return `{ ${parts.join(", ")} }`;
    }
    default:
      return unreachable(t, "field type");
  }
}
