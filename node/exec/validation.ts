/**
 * Checks writes against the schema before they reach the view: the label must be declared for its kind, and
 * properties must be declared and of their declared type. Without a schema (schemaless mode) any identifier label
 * is accepted and property values are stored as given, with only `$label` refused, once they passed the checks of
 * every value from outside (`checkInputValue`: nesting depth, well-formed strings), which also cover bulk imports.
 */
import { SilkError } from "../../protocol/errors.js";
import { LABEL_BYTES_MAX, VECTOR_DIMENSIONS_MAX } from "../../protocol/limits.js";
import type { RecordKind } from "../../protocol/records.js";
import { prepareProperties, type FieldDecl, type Schema } from "../../protocol/schema.js";
import { isLabel } from "../../protocol/tree.js";
import { checkInputValue, checkWellFormed, RESERVED_LABEL_KEY, type Properties, type Value } from "../../protocol/values.js";

const KIND_WORD: Record<RecordKind, string> = { node: "N::", edge: "E::", vector: "V::" };

function fieldsOf(schema: Schema, kind: RecordKind, label: string): ReadonlyMap<string, FieldDecl> {
  const declared = kind === "node" ? schema.nodes.get(label) : kind === "edge" ? schema.edges.get(label) : schema.vectors.get(label);
  if (declared === undefined) throw new SilkError("unknown_label", `${KIND_WORD[kind]}${label} is not declared in the schema`);
  return declared.fields;
}

export function checkLabel(schema: Schema | undefined, kind: RecordKind, label: string): void {
  if (schema !== undefined) fieldsOf(schema, kind, label);
  else if (!isLabel(label)) {
    throw new SilkError("unknown_label", `label ${JSON.stringify(label)} is not an identifier of at most ${LABEL_BYTES_MAX} characters`);
  }
}

function schemaless(input: Record<string, unknown>, where: string, keepNull: boolean): Properties {
  const props: Properties = {};
  for (const [key, value] of Object.entries(input)) {
    if (key === RESERVED_LABEL_KEY) throw new SilkError("invalid_field", `${where}: ${RESERVED_LABEL_KEY} is reserved`);
    if (value === undefined || (value === null && !keepNull)) continue;
    checkWellFormed(key, where);
    checkInputValue(value, `${where}.${key}`);
    props[key] = value as Value;
  }
  return props;
}

/**
 * SPEC: a text index rejects null. Without this check a null would pass as "not given" on create and "remove" on
 * update, dropping the field and its postings without a word. An implied text index (SearchBM25 on a type without a
 * TEXT INDEX) keeps the field's ordinary rules: the project did not ask for the stricter one.
 */
function rejectNullTexts(fields: ReadonlyMap<string, FieldDecl>, input: Record<string, unknown>, label: string): void {
  for (const [key, value] of Object.entries(input)) {
    const textIndex = fields.get(key)?.textIndex;
    if (value === null && textIndex !== undefined && textIndex.implied !== true) {
      throw new SilkError("invalid_type", `${label}.${key} has a TEXT INDEX, which takes a String or [String], not null; give it text, or leave it out`);
    }
  }
}

export function prepareCreate(schema: Schema | undefined, kind: RecordKind, label: string, input: Record<string, unknown>, now: () => Date): Properties {
  if (schema === undefined) return schemaless(input, label, false);
  rejectNullTexts(fieldsOf(schema, kind, label), input, label);
  const props = prepareProperties(fieldsOf(schema, kind, label), input, "create", label, now);
  for (const key of Object.keys(props)) if (props[key] === null) delete props[key];
  return props;
}

/**
 * The changed properties of an update; a null value means "remove this property". A null for a text-indexed field
 * is `invalid_type` unless `removing` (remove_property, which names the field to remove rather than giving it a value).
 */
export function prepareUpdate(schema: Schema | undefined, kind: RecordKind, label: string, input: Record<string, unknown>, removing = false): Properties {
  if (schema === undefined) return schemaless(input, label, true);
  if (!removing) rejectNullTexts(fieldsOf(schema, kind, label), input, label);
  return prepareProperties(fieldsOf(schema, kind, label), input, "update", label, () => new Date());
}

export function toVector(input: unknown, where: string): Float64Array {
  let vector: Float64Array;
  if (input instanceof Float64Array) vector = input;
  else if (input instanceof Float32Array) vector = Float64Array.from(input);
  else if (Array.isArray(input) && input.every((item) => typeof item === "number" && Number.isFinite(item))) vector = Float64Array.from(input as number[]);
  else throw new SilkError("invalid_type", `${where}: a vector is an array of finite numbers`);
  if (vector.length === 0 || vector.length > VECTOR_DIMENSIONS_MAX) {
    throw new SilkError("invalid_value", `${where}: a vector has 1 to ${VECTOR_DIMENSIONS_MAX} dimensions, this one ${vector.length}`);
  }
  return vector;
}
