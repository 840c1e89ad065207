/**
 * HelixQL's scalar types and the rules that turn an input value (from JSON or from a JS caller) into the stored
 * value of one of them. These run for every property of every write, so the common cases (a string for String,
 * a safe integer for U32) take the first branch and allocate nothing.
 *
 * Stored forms: String → string; Boolean → boolean; F32/F64 → number; integers → number while a safe integer,
 * bigint beyond; Date → Date; ID → bigint.
 */

import { SilkError } from "../errors.js";
import { parseId } from "../ids.js";
import type { ScalarTypeName } from "../schema.js";
import { checkWellFormed, type Value } from "../values.js";

export const SCALAR_TYPE_NAMES: readonly ScalarTypeName[] = [
  "String", "Boolean", "F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "U128", "Date", "ID",
];

const SCALAR_NAME_SET: ReadonlySet<string> = new Set(SCALAR_TYPE_NAMES);

export function isScalarTypeName(name: string): name is ScalarTypeName {
  return SCALAR_NAME_SET.has(name);
}

/**
 * HelixDB v2.3.5's grammar reads an unknown type name as an identifier, and its code generator writes that
 * identifier into the generated Rust as it is: `[f64]` becomes `Vec<f64>`, exactly what `[F64]` becomes. So the
 * Rust spellings of HelixQL's scalar types are the same types there, and here (docs/HELIXQL.md, "Schema").
 */
const RUST_SPELLINGS: ReadonlyMap<string, ScalarTypeName> = new Map([
  ["bool", "Boolean"],
  ["f32", "F32"],
  ["f64", "F64"],
  ["i8", "I8"],
  ["i16", "I16"],
  ["i32", "I32"],
  ["i64", "I64"],
  ["u8", "U8"],
  ["u16", "U16"],
  ["u32", "U32"],
  ["u64", "U64"],
  ["u128", "U128"],
]);

/** The scalar type a written type name means: HelixQL's own names and their Rust spellings (`f64` is F64). */
export function scalarTypeOf(written: string): ScalarTypeName | undefined {
  return isScalarTypeName(written) ? written : RUST_SPELLINGS.get(written);
}

export type IntegerTypeName = "I8" | "I16" | "I32" | "I64" | "U8" | "U16" | "U32" | "U64" | "U128";

interface IntegerBounds {
  readonly min: bigint;
  readonly max: bigint;
  // The same bounds as doubles. A safe integer compares correctly against them even where the conversion rounds
  // (only the 64- and 128-bit bounds round, and they lie far outside the safe range).
  readonly minNumber: number;
  readonly maxNumber: number;
}

function bounds(min: bigint, max: bigint): IntegerBounds {
  return { min, max, minNumber: Number(min), maxNumber: Number(max) };
}

const INTEGER_BOUNDS: Readonly<Record<IntegerTypeName, IntegerBounds>> = {
  I8: bounds(-(2n ** 7n), 2n ** 7n - 1n),
  I16: bounds(-(2n ** 15n), 2n ** 15n - 1n),
  I32: bounds(-(2n ** 31n), 2n ** 31n - 1n),
  I64: bounds(-(2n ** 63n), 2n ** 63n - 1n),
  U8: bounds(0n, 2n ** 8n - 1n),
  U16: bounds(0n, 2n ** 16n - 1n),
  U32: bounds(0n, 2n ** 32n - 1n),
  U64: bounds(0n, 2n ** 64n - 1n),
  U128: bounds(0n, 2n ** 128n - 1n),
};

export function isIntegerTypeName(name: ScalarTypeName): name is IntegerTypeName {
  return Object.prototype.hasOwnProperty.call(INTEGER_BOUNDS, name);
}

/** The largest finite float32; an F32 value beyond it would become Infinity in any 32-bit consumer. */
export const F32_MAX = 3.4028234663852886e38;

/** Digits of 2^128 - 1, the widest integer type; a longer significant part is out of range without parsing it. */
const INTEGER_DIGITS_MAX = 39;

const INTEGER_TEXT = /^-?[0-9]+$/;

/** Coerces one input value to a scalar type's stored form, or throws invalid_type / invalid_value / invalid_id. */
export function coerceScalar(name: ScalarTypeName, input: unknown, where: string): Value {
  switch (name) {
    case "String":
      if (typeof input !== "string") throw typeError(name, input, where);
      checkWellFormed(input, where);
      return input;
    case "Boolean":
      if (typeof input === "boolean") return input;
      throw typeError(name, input, where);
    case "F32":
    case "F64":
      return coerceFloat(name, input, where);
    case "Date":
      return coerceDate(input, where);
    case "ID":
      if (typeof input === "string" || typeof input === "number" || typeof input === "bigint") return parseId(input, where);
      throw typeError(name, input, where);
    default:
      return coerceInteger(name, input, where);
  }
}

function coerceFloat(name: "F32" | "F64", input: unknown, where: string): number {
  let n: number;
  if (typeof input === "number") n = input;
  else if (typeof input === "bigint" && input >= -9007199254740991n && input <= 9007199254740991n) n = Number(input);
  else if (typeof input === "bigint") {
    throw new SilkError("invalid_value", `${where}: ${input} cannot be stored exactly as ${name}; it is beyond ±(2^53-1)`);
  } else throw typeError(name, input, where);
  if (!Number.isFinite(n)) throw new SilkError("invalid_value", `${where}: ${name} must be finite, got ${n}`);
  if (name === "F32" && Math.abs(n) > F32_MAX) {
    throw new SilkError("invalid_value", `${where}: ${n} is out of range for F32 (at most ±${F32_MAX})`);
  }
  return n;
}

/** Integers accept numbers, bigints and decimal strings (so u64 and u128 values survive JSON), range-checked. */
export function coerceInteger(name: IntegerTypeName, input: unknown, where: string): number | bigint {
  const range = INTEGER_BOUNDS[name];
  if (typeof input === "number") {
    if (!Number.isInteger(input)) throw typeError(name, input, where);
    if (!Number.isSafeInteger(input)) {
      throw new SilkError(
        "invalid_value",
        `${where}: ${input} is beyond ±(2^53-1), where a JSON number may already have been rounded; send it as a decimal string`,
      );
    }
    if (input < range.minNumber || input > range.maxNumber) throw outOfRange(name, input, where);
    return input === 0 ? 0 : input; // -0 is not an integer any storage should keep
  }
  if (typeof input === "bigint") {
    if (input < range.min || input > range.max) throw outOfRange(name, input, where);
    return input >= -9007199254740991n && input <= 9007199254740991n ? Number(input) : input;
  }
  if (typeof input === "string") return coerceIntegerText(name, range, input, where);
  throw typeError(name, input, where);
}

function coerceIntegerText(name: IntegerTypeName, range: IntegerBounds, text: string, where: string): number | bigint {
  if (!INTEGER_TEXT.test(text)) {
    throw new SilkError("invalid_value", `${where}: ${describeInput(text)} is not a decimal integer (expected ${name})`);
  }
  const negative = text.startsWith("-");
  const significant = (negative ? text.slice(1) : text).replace(/^0+(?=[0-9])/, "");
  if (significant.length > INTEGER_DIGITS_MAX) throw outOfRange(name, text, where);
  const value = negative ? -BigInt(significant) : BigInt(significant);
  return coerceInteger(name, value, where);
}

function outOfRange(name: IntegerTypeName, input: number | bigint | string, where: string): SilkError {
  const range = INTEGER_BOUNDS[name];
  const shown = typeof input === "string" ? describeInput(input) : String(input);
  return new SilkError("invalid_value", `${where}: ${shown} is out of range for ${name} (${range.min} to ${range.max})`);
}

function coerceDate(input: unknown, where: string): Date {
  if (input instanceof Date) {
    const time = input.getTime();
    if (Number.isNaN(time)) throw new SilkError("invalid_value", `${where}: the Date is invalid`);
    return new Date(time); // a copy: the caller may mutate its Date after the write
  }
  if (typeof input === "string") {
    const date = parseIsoDate(input);
    if (date !== undefined) return date;
    throw new SilkError(
      "invalid_value",
      `${where}: ${describeInput(input)} is not an ISO 8601 date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[.fff]Z (or ±HH:MM)`,
    );
  }
  throw typeError("Date", input, where);
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}))?$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Parses the two ISO 8601 forms HelixQL uses: a date (YYYY-MM-DD, midnight UTC) and a timestamp with seconds, an
 * optional fraction (kept to the millisecond) and a zone (Z or ±HH:MM). Unlike `Date.parse`, it rejects dates that
 * do not exist (2023-02-29), local times without a zone, and the many other shapes engines happen to accept.
 */
export function parseIsoDate(text: string): Date | undefined {
  const m = ISO_DATE.exec(text);
  if (m === null) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12 || day < 1) return undefined;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // not Date.UTC, which maps years 0-99 to 1900-1999
  if (m[4] === undefined) return date;
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = Number(m[6]);
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const millisecond = m[7] === undefined ? 0 : Number(m[7].padEnd(3, "0").slice(0, 3));
  date.setUTCHours(hour, minute, second, millisecond);
  const zone = m[8];
  if (zone === "Z") return date;
  const offsetHours = Number(zone.slice(1, 3));
  const offsetMinutes = Number(zone.slice(4, 6));
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;
  const offsetMs = (offsetHours * 60 + offsetMinutes) * 60_000 * (zone.startsWith("-") ? -1 : 1);
  return new Date(date.getTime() - offsetMs);
}

/** invalid_type naming the place, the expected type and what was given. */
export function typeError(expected: string, input: unknown, where: string): SilkError {
  return new SilkError("invalid_type", `${where}: expected ${expected}, got ${describeInput(input)}`);
}

/** A short description of an input value for error messages; long strings are cut so messages stay readable. */
export function describeInput(input: unknown): string {
  switch (typeof input) {
    case "string":
      return `the string ${JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}...` : input)}`;
    case "number":
      return `the number ${input}`;
    case "bigint":
      return `the integer ${input}`;
    case "boolean":
      return `the boolean ${input}`;
    case "undefined":
      return "undefined";
    case "object":
      if (input === null) return "null";
      if (Array.isArray(input)) return "an array";
      if (input instanceof Date) return "a Date";
      if (ArrayBuffer.isView(input)) return `a ${input.constructor.name}`;
      return "an object";
    default:
      return `a ${typeof input}`;
  }
}
