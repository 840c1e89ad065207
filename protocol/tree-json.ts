/**
 * The JSON readers the operation-tree decoders share (tree.ts and tree-steps.ts): each checks one value's shape
 * and reports a fault as `malformed_tree` with the JSON path of the value.
 */
import { SilkError } from "./errors.js";
import { LABEL_BYTES_MAX } from "./limits.js";
import { checkWellFormed } from "./values.js";

export type Json = unknown;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A label is an identifier of at most LABEL_BYTES_MAX characters (ASCII, so characters are bytes). */
export function isLabel(label: string): boolean {
  return label.length <= LABEL_BYTES_MAX && IDENTIFIER.test(label);
}

export function fault(path: string, message: string): SilkError {
  return new SilkError("malformed_tree", `${path}: ${message}`);
}

function isObject(value: Json): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function objectAt(value: Json, path: string): Record<string, Json> {
  if (!isObject(value)) throw fault(path, "expected an object");
  return value;
}

/** A string of the tree: every one is well-formed Unicode (values.ts `checkWellFormed`), names as much as values. */
export function stringAt(value: Json, path: string): string {
  if (typeof value !== "string") throw fault(path, "expected a string");
  checkWellFormed(value, path);
  return value;
}

export function labelAt(value: Json, path: string): string {
  const label = stringAt(value, path);
  if (!isLabel(label)) {
    throw fault(path, `label ${JSON.stringify(label)} is not an identifier of at most ${LABEL_BYTES_MAX} characters`);
  }
  return label;
}

export function arrayAt(value: Json, path: string): Json[] {
  if (!Array.isArray(value)) throw fault(path, "expected an array");
  return value;
}

export function stringList(value: Json, path: string): string[] {
  return arrayAt(value, path).map((item, i) => stringAt(item, `${path}[${i}]`));
}

/** Splits an externally tagged `{"tag": body}` object (or a bare unit-variant string) into tag and body. */
export function tagged(value: Json, path: string): [string, Json] {
  if (typeof value === "string") return [value, null];
  const object = objectAt(value, path);
  const keys = Object.keys(object);
  if (keys.length !== 1) throw fault(path, `expected exactly one tag, found ${keys.length ? keys.join(", ") : "none"}`);
  return [keys[0], object[keys[0]]];
}

export function allowOnly(body: Record<string, Json>, allowed: readonly string[], path: string): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw fault(`${path}.${key}`, `unknown field (expected ${allowed.join(", ")})`);
  }
}
