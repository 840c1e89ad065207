/**
 * The static types of HelixQL query expressions, as the query checker sees them: what a traversal yields (records
 * of a label, values, projected rows) and how many (one or many), and the type of a value (a declared field or
 * parameter type, or the loose type of a literal). The checker uses them to reject a query at load time for what
 * would otherwise fail, or silently return nothing, at run time.
 */
import type { WireLiteral } from "../tree-wire.js";
import type { FieldType, ScalarTypeName } from "../schema.js";
import type { LiteralAst } from "./ast.js";
import { fieldTypeToString } from "./coerce.js";
import { isIntegerTypeName } from "./scalars.js";
import { SilkError, unreachable } from "../errors.js";

export type RecordKind = "node" | "edge" | "vector";

/** The type of a value: a declared type, or what a literal or computation is known to be. */
export type ValueType =
  | { readonly t: "field"; readonly type: FieldType }
  | { readonly t: "int" }
  | { readonly t: "float" }
  | { readonly t: "string" }
  | { readonly t: "bool" }
  | { readonly t: "any" };

/**
 * What a traversal yields. `one` records come from an ID lookup, a creation, FIRST or a UNIQUE index; a `scalar`
 * value is a COUNT or an aggregate (the tree answers a bare value, not a list).
 */
export type StaticType =
  | { readonly kind: "records"; readonly record: RecordKind; readonly label: string | undefined; readonly one: boolean }
  | { readonly kind: "values"; readonly value: ValueType; readonly shape: "scalar" | "one" | "many" }
  | { readonly kind: "rows"; readonly one: boolean };

export const ANY: ValueType = { t: "any" };
export const INT: ValueType = { t: "int" };
export const FLOAT: ValueType = { t: "float" };

export function fieldValue(type: FieldType): ValueType {
  return { t: "field", type };
}

export function scalarValue(name: ScalarTypeName): ValueType {
  return { t: "field", type: { kind: "scalar", name } };
}

export function describeValueType(type: ValueType): string {
  switch (type.t) {
    case "field":
      return fieldTypeToString(type.type);
    case "int":
      return "an integer";
    case "float":
      return "a float";
    case "string":
      return "a string";
    case "bool":
      return "a boolean";
    case "any":
      return "a value";
    default:
      return unreachable(type, "value type");
  }
}

export function describeStaticType(type: StaticType): string {
  switch (type.kind) {
    case "records": {
      const prefix = { node: "N", edge: "E", vector: "V" }[type.record];
      return `${type.one ? "one" : "a list of"} ${prefix}<${type.label ?? "?"}>`;
    }
    case "values":
      return type.shape === "many" ? `a list of ${describeValueType(type.value)}` : describeValueType(type.value);
    case "rows":
      return type.one ? "a projected row" : "a list of projected rows";
    default:
      return unreachable(type, "static type");
  }
}

/** The comparison family of a value type (SPEC: EQ/NEQ on strings, booleans, dates, numbers; GT... on numbers, dates). */
export type Family = "number" | "string" | "date" | "id" | "bool" | "other" | "any";

export function familyOf(type: ValueType): Family {
  switch (type.t) {
    case "int":
    case "float":
      return "number";
    case "string":
      return "string";
    case "bool":
      return "bool";
    case "any":
      return "any";
    case "field": {
      const field = type.type;
      if (field.kind !== "scalar") return "other";
      if (field.name === "String") return "string";
      if (field.name === "Boolean") return "bool";
      if (field.name === "Date") return "date";
      if (field.name === "ID") return "id";
      return "number";
    }
    default:
      return unreachable(type, "value type");
  }
}

/** Whether two families may be compared: equal ones, and a string against a date (ISO text) or an ID (decimal text). */
export function comparable(left: Family, right: Family): boolean {
  if (left === "any" || right === "any" || left === right) return true;
  const pair = new Set([left, right]);
  return pair.has("string") && (pair.has("date") || pair.has("id"));
}

/**
 * Whether a value of type `value` may be stored in (or passed as) a field of type `target`. Integers widen to any
 * numeric type and to floats; a float does not narrow to an integer; strings are accepted for dates (ISO 8601) and
 * IDs (decimal). The exact range of each number is checked when the value is written.
 */
export function assignable(value: ValueType, target: FieldType): boolean {
  switch (value.t) {
    case "any":
      return true;
    case "int":
      return target.kind === "scalar" && target.name !== "String" && target.name !== "Boolean" && target.name !== "Date";
    case "float":
      return target.kind === "scalar" && (target.name === "F32" || target.name === "F64");
    case "string":
      return target.kind === "scalar" && (target.name === "String" || target.name === "Date" || target.name === "ID");
    case "bool":
      return target.kind === "scalar" && target.name === "Boolean";
    case "field":
      return fieldAssignable(value.type, target);
    default:
      return unreachable(value, "value type");
  }
}

function fieldAssignable(source: FieldType, target: FieldType): boolean {
  if (source.kind === "array") return target.kind === "array" && fieldAssignable(source.element, target.element);
  if (source.kind === "object") return target.kind === "object";
  if (target.kind !== "scalar") return false;
  const from = source.name;
  const to = target.name;
  if (from === to) return true;
  if (isIntegerTypeName(from)) return to !== "String" && to !== "Boolean" && to !== "Date";
  if (from === "F32" || from === "F64") return to === "F32" || to === "F64";
  if (from === "String") return to === "Date" || to === "ID";
  return false;
}

/** The element type of an array value type (for FOR loops), or undefined when the value is not an array. */
export function elementOf(type: ValueType): ValueType | undefined {
  if (type.t === "any") return ANY;
  if (type.t === "field" && type.type.kind === "array") return fieldValue(type.type.element);
  return undefined;
}

/** A literal in the tree's tagged form (`{"i64": 3}`, `{"string": "a"}`) and its value type. */
export function literalToTree(literal: LiteralAst): { tree: WireLiteral; type: ValueType } {
  switch (literal.kind) {
    case "number": {
      if (/[.eE]/.test(literal.text)) return { tree: { f64: Number(literal.text) }, type: FLOAT };
      const big = BigInt(literal.text);
      const safe = big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER);
      return { tree: { i64: safe ? Number(big) : big.toString(10) }, type: INT };
    }
    case "string":
      return { tree: { string: literal.value }, type: { t: "string" } };
    case "boolean":
      return { tree: { bool: literal.value }, type: { t: "bool" } };
    case "now":
    case "array":
      // The query grammar writes arrays as expressions and NOW as a call; these forms occur only in schema DEFAULTs.
      throw new SilkError("internal", `internal error (a bug in Silk): literal ${literal.kind} does not occur in queries`);
    default:
      return unreachable(literal, "literal");
  }
}

/** The plain JSON value of a literal (for RETURN "text" and friends). */
export function literalToJson(literal: LiteralAst): unknown {
  if (literal.kind === "number") {
    if (/[.eE]/.test(literal.text)) return Number(literal.text);
    const big = BigInt(literal.text);
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big.toString(10);
  }
  if (literal.kind === "string" || literal.kind === "boolean") return literal.value;
  throw new SilkError("internal", `internal error (a bug in Silk): literal ${literal.kind} does not occur in queries`);
}
