/**
 * The schema checker's rules for single fields: which names a field may have, and whether a DEFAULT literal fits
 * the field's type. A DEFAULT is checked by the same coerceValue that checks writes, so a default can never be a
 * value that a client could not have written.
 */

import { SilkError, unreachable } from "../errors.js";
import type { FieldDecl, FieldType } from "../schema.js";
import { RESERVED_LABEL_KEY } from "../values.js";
import type { LiteralAst, NameAst, SourceLocation } from "./ast.js";
import { coerceValue, fieldTypeToString } from "./coerce.js";
import { SCALAR_TYPE_NAMES, isIntegerTypeName } from "./scalars.js";

/** Reports one schema_invalid diagnostic at a place in the current file. */
export type Reporter = (loc: SourceLocation, message: string) => void;

/** How deeply `[...]` and `{...}` may nest in one field type; real schemas use two or three levels. */
export const FIELD_TYPE_DEPTH_MAX = 16;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `$label` is the label key of filters and indexes, and `id` and `label` are the keys every returned record carries
 * (its ID and its type's name, HelixDB's record shape), so none can be a top-level property: a property `label`
 * would hide the type name in every rendering, and `_::{label}` could not say which it reads. `__proto__` would be taken as an object's prototype rather than a key.
 */
export function checkFieldName(name: NameAst, topLevel: boolean, report: Reporter): boolean {
  const text = name.text;
  if (text === RESERVED_LABEL_KEY) {
    report(name.loc, `the field name ${RESERVED_LABEL_KEY} is reserved for record labels`);
  } else if (!IDENTIFIER.test(text)) {
    report(name.loc, `the field name ${text} is not an identifier (letters, digits and _, not starting with a digit)`);
  } else if (topLevel && text === "id") {
    report(name.loc, "the field name id is reserved: every record already has an id");
  } else if (topLevel && text === "label") {
    report(name.loc, "the field name label is reserved: every returned record carries its type's name as label; call the field something else, such as kind or tag");
  } else if (text === "__proto__") {
    report(name.loc, "the field name __proto__ is reserved");
  } else {
    return true;
  }
  return false;
}

export function unknownTypeMessage(name: string): string {
  const near = SCALAR_TYPE_NAMES.find((candidate) => candidate.toLowerCase() === name.toLowerCase());
  const hint = near === undefined ? "" : ` (did you mean ${near}?)`;
  return `unknown field type ${name}${hint}; the types are ${SCALAR_TYPE_NAMES.join(", ")}, [T] and { field: T }`;
}

class LiteralMismatch {
  constructor(
    readonly loc: SourceLocation,
    readonly message: string,
  ) {}
}

/** Checks a DEFAULT literal against the field's type; undefined (after a report) when it does not fit. */
export function convertDefault(type: FieldType, literal: LiteralAst, field: string, report: Reporter): FieldDecl["default"] {
  if (literal.kind === "now" && type.kind === "scalar" && type.name === "Date") return { kind: "now" };
  const where = `DEFAULT of ${field}`;
  try {
    return { kind: "value", value: coerceValue(type, literalToInput(type, literal, where), where) };
  } catch (error) {
    if (error instanceof LiteralMismatch) report(error.loc, error.message);
    else if (error instanceof SilkError) report(literal.loc, error.message);
    else throw error;
    return undefined;
  }
}

/**
 * The input a literal stands for, when its kind suits the type. Kinds are matched strictly ("5" is not a U32
 * default even though writes accept decimal strings for integers); values are then checked by coerceValue.
 */
function literalToInput(type: FieldType, literal: LiteralAst, where: string): unknown {
  const scalar = type.kind === "scalar" ? type.name : undefined;
  switch (literal.kind) {
    case "boolean":
      if (scalar === "Boolean") return literal.value;
      break;
    case "string":
      if (scalar === "String" || scalar === "Date") return literal.value;
      break;
    case "number":
      if (scalar === "F32" || scalar === "F64") return Number(literal.text);
      if (scalar === "ID" || (scalar !== undefined && isIntegerTypeName(scalar))) {
        if (/^-?[0-9]+$/.test(literal.text)) return BigInt(literal.text);
        throw new LiteralMismatch(literal.loc, `${where}: ${literal.text} is not an integer (expected ${scalar})`);
      }
      break;
    case "array":
      if (type.kind === "array") return literal.elements.map((element) => literalToInput(type.element, element, where));
      break;
    case "now":
      throw new LiteralMismatch(literal.loc, `${where}: NOW is only a DEFAULT for a Date field, as the whole value`);
    default:
      return unreachable(literal, "literal");
  }
  const given = { boolean: "a boolean", string: "a string", number: "a number", array: "an array" }[literal.kind];
  throw new LiteralMismatch(literal.loc, `${where}: expected a ${fieldTypeToString(type)} literal, got ${given}`);
}
