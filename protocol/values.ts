/**
 * The stored value model: what a property of a node, edge or vector can hold once it has been checked against
 * the schema, and the operations the engine runs on such values on its hot paths (path lookup, equality,
 * ordering in filters, and the JSON form of results).
 *
 * Integers are JS numbers while they are safe integers and bigints beyond that, so the same integer can reach
 * these functions as either; equality and ordering treat a number and a bigint with the same mathematical value
 * as the same, exactly, without converting through floating point.
 */

import { SilkError } from "./errors.js";
import { JsonId } from "./ids.js";
import { VALUE_DEPTH_MAX } from "./limits.js";

/** A UTF-16 unit of a surrogate pair standing alone: no Unicode text, and UTF-8 (storage, keys) cannot carry it. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Refuses a string with a lone surrogate (`invalid_value`). Stored, it would come back as U+FFFD, so two different
 * strings would become one (in a UNIQUE index too).
 */
export function checkWellFormed(text: string, where: string): void {
  if (LONE_SURROGATE.test(text)) {
    throw new SilkError("invalid_value", `${where}: the string holds a lone UTF-16 surrogate, which is not Unicode text and cannot be stored as it is; send well-formed text (pair the surrogate, or escape the data as bytes)`);
  }
}

/**
 * Checks a value from outside (JSON, or a JS caller's values) before the engine walks it: nesting at most
 * VALUE_DEPTH_MAX arrays and objects, and every string and object key well-formed. Typed arrays and Dates hold no
 * strings. The walk itself stops at the limit, so it cannot overflow.
 */
export function checkInputValue(value: unknown, where: string, depth = 0): void {
  if (typeof value === "string") return checkWellFormed(value, where);
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value) || value instanceof Date) return;
  if (depth >= VALUE_DEPTH_MAX) {
    throw new SilkError("invalid_value", `${where}: a value nests at most ${VALUE_DEPTH_MAX} arrays and objects deep (VALUE_DEPTH_MAX); flatten it or store it as a JSON string`);
  }
  if (Array.isArray(value)) {
    for (const item of value) checkInputValue(item, where, depth + 1);
    return;
  }
  for (const key of Object.keys(value)) {
    checkWellFormed(key, where);
    checkInputValue((value as Record<string, unknown>)[key], where, depth + 1);
  }
}

/** A stored property value. Typed arrays are stored as they came (vectors stay compact); Uint8Array is bytes. */
export type Value =
  | null
  | boolean
  | number
  | bigint
  | string
  | Date
  | Uint8Array
  | Float32Array
  | Float64Array
  | Int32Array
  | BigInt64Array
  | Value[]
  | { [key: string]: Value };

/** The properties of one record: top-level property name to value. */
export type Properties = { [key: string]: Value };

/** The property key that holds a record's label in label-scoped filters and indexes; no schema may declare it. */
export const RESERVED_LABEL_KEY = "$label";

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * True for objects that are plain property bags (`{...}`, JSON.parse output, null-prototype objects), false for
 * arrays, typed arrays, Dates, class instances and everything that is not an object.
 */
export function isPlainObject(v: unknown): v is { [key: string]: unknown } {
  if (typeof v !== "object" || v === null) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * Reads a dotted path (`address.city`) through nested plain objects. Arrays and typed arrays are opaque, as the
 * spec says: a path that would have to go through one yields undefined, as does a missing key or an empty segment.
 * Only own properties count, so a path such as `constructor` never reaches Object.prototype.
 */
export function getPath(props: Properties, path: string): Value | undefined {
  let dot = path.indexOf(".");
  if (dot < 0) return hasOwn.call(props, path) ? props[path] : undefined;
  let current: Value = props;
  let start = 0;
  for (;;) {
    const key = dot < 0 ? path.slice(start) : path.slice(start, dot);
    if (key === "" || !isPlainObject(current) || !hasOwn.call(current, key)) return undefined;
    current = (current as { [key: string]: Value })[key];
    if (dot < 0) return current;
    start = dot + 1;
    dot = path.indexOf(".", start);
  }
}

/**
 * Deep equality of two stored values. A number equals a bigint of the same value; Dates are equal when they
 * denote the same instant; plain arrays and numeric typed arrays are sequences compared element by element
 * whatever their container (a `[F64]` property may hold a number[] or a Float64Array depending on how it was
 * written), while bytes (Uint8Array) only equal bytes. NaN equals nothing, as in IEEE 754.
 */
export function valuesEqual(a: Value, b: Value): boolean {
  if (a === b) return true;
  const typeA = typeof a;
  const typeB = typeof b;
  if (typeA === "number") return typeB === "bigint" && numberEqualsBigint(a as number, b as bigint);
  if (typeA === "bigint") return typeB === "number" && numberEqualsBigint(b as number, a as bigint);
  if (typeA !== "object" || typeB !== "object" || a === null || b === null) return false;
  if (a instanceof Date) return b instanceof Date && a.getTime() === b.getTime();
  if (b instanceof Date) return false;
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    return a instanceof Uint8Array && b instanceof Uint8Array && bytesEqual(a, b);
  }
  const sequenceA = Array.isArray(a) || ArrayBuffer.isView(a);
  const sequenceB = Array.isArray(b) || ArrayBuffer.isView(b);
  if (sequenceA || sequenceB) {
    return sequenceA && sequenceB && sequencesEqual(a as ArrayLike<Value>, b as ArrayLike<Value>);
  }
  return objectsEqual(a as { [key: string]: Value }, b as { [key: string]: Value });
}

function numberEqualsBigint(n: number, b: bigint): boolean {
  return Number.isInteger(n) && BigInt(n) === b;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sequencesEqual(a: ArrayLike<Value>, b: ArrayLike<Value>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!valuesEqual(a[i], b[i])) return false;
  return true;
}

function objectsEqual(a: { [key: string]: Value }, b: { [key: string]: Value }): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!hasOwn.call(b, key) || !valuesEqual(a[key], b[key])) return false;
  }
  return true;
}

/**
 * Orders two values for GT/LT/GTE/LTE and sorting: negative, zero or positive like a comparator, or undefined
 * when the two are not comparable (different kinds, null, NaN, arrays, objects, bytes). Numbers and bigints form
 * one kind and compare exactly; strings compare by Unicode code point (the order of their UTF-8 bytes, which is
 * also the order of range-index keys); Dates by instant; false sorts before true.
 */
export function compareValues(a: Value, b: Value): number | undefined {
  switch (typeof a) {
    case "number":
      if (typeof b === "number") return compareNumbers(a, b);
      if (typeof b === "bigint") return compareNumberToBigint(a, b);
      return undefined;
    case "bigint":
      if (typeof b === "bigint") return a < b ? -1 : a > b ? 1 : 0;
      if (typeof b === "number") return negate(compareNumberToBigint(b, a));
      return undefined;
    case "string":
      return typeof b === "string" ? compareStringsByCodePoint(a, b) : undefined;
    case "boolean":
      return typeof b === "boolean" ? Number(a) - Number(b) : undefined;
    default:
      if (a instanceof Date && b instanceof Date) return compareNumbers(a.getTime(), b.getTime());
      return undefined;
  }
}

function compareNumbers(a: number, b: number): number | undefined {
  if (a < b) return -1;
  if (a > b) return 1;
  return a === b ? 0 : undefined; // NaN on either side
}

function negate(order: number | undefined): number | undefined {
  return order === undefined || order === 0 ? order : -order; // never -0, which is not === 0 under Object.is
}

/** Exact: a bigint beyond 2^53 is never rounded to a double; a fractional number is placed between two integers. */
function compareNumberToBigint(n: number, b: bigint): number | undefined {
  if (Number.isNaN(n)) return undefined;
  if (n === Infinity) return 1;
  if (n === -Infinity) return -1;
  const floor = Math.floor(n);
  const floorBig = BigInt(floor);
  if (floor === n) return floorBig < b ? -1 : floorBig > b ? 1 : 0;
  // n lies strictly between floor and floor + 1, so it is below b exactly when floor + 1 <= b.
  return floorBig < b ? -1 : 1;
}

/**
 * A total order over every value, HelixDB v3's (its `PropertyValue::total_order`, which orders its groups): first by
 * kind, null < boolean < number < date < string < bytes < integer array < float64 array < float32 array < array <
 * object, then within the kind: numbers and bigints exactly (NaN after every number), dates by instant, strings by
 * code point, arrays and bytes element by element then by length, objects by their keys in order, each key then its
 * value. Silk keeps a `[String]` as a plain array, so it orders among the arrays.
 */
export function totalOrder(a: Value | undefined, b: Value | undefined): number {
  const rank = totalOrderRank(a) - totalOrderRank(b);
  if (rank !== 0) return rank;
  if (a === undefined || a === null || b === undefined || b === null) return 0;
  if (typeof a === "number" && Number.isNaN(a)) return typeof b === "number" && Number.isNaN(b) ? 0 : 1;
  if (typeof b === "number" && Number.isNaN(b)) return -1;
  const scalar = compareValues(a, b);
  if (scalar !== undefined) return scalar;
  if (ArrayBuffer.isView(a) || Array.isArray(a)) return totalOrderOfLists(a as ArrayLike<Value>, b as ArrayLike<Value>);
  return totalOrderOfObjects(a as { [key: string]: Value }, b as { [key: string]: Value });
}

function totalOrderRank(v: Value | undefined): number {
  if (v === undefined || v === null) return 0;
  switch (typeof v) {
    case "boolean":
      return 1;
    case "number":
    case "bigint":
      return 2;
    case "string":
      return 4;
    default:
      break;
  }
  if (v instanceof Date) return 3;
  if (v instanceof Uint8Array) return 5;
  if (v instanceof BigInt64Array || v instanceof Int32Array) return 6;
  if (v instanceof Float64Array) return 7;
  if (v instanceof Float32Array) return 8;
  return Array.isArray(v) ? 10 : 11;
}

function totalOrderOfLists(a: ArrayLike<Value>, b: ArrayLike<Value>): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const order = totalOrder(a[i], b[i]);
    if (order !== 0) return order;
  }
  return a.length - b.length;
}

function totalOrderOfObjects(a: { [key: string]: Value }, b: { [key: string]: Value }): number {
  const keysA = Object.keys(a).sort(compareStringsByCodePoint);
  const keysB = Object.keys(b).sort(compareStringsByCodePoint);
  const length = Math.min(keysA.length, keysB.length);
  for (let i = 0; i < length; i++) {
    const order = compareStringsByCodePoint(keysA[i], keysB[i]) || totalOrder(a[keysA[i]], b[keysB[i]]);
    if (order !== 0) return order;
  }
  return keysA.length - keysB.length;
}

/**
 * JS `<` on strings compares UTF-16 code units, which puts U+E000..U+FFFF after astral characters (whose
 * surrogates are 0xD800..0xDFFF). At the first differing unit, lifting surrogates above 0xE000..0xFFFF restores
 * code point order.
 */
export function compareStringsByCodePoint(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    let unitA = a.charCodeAt(i);
    let unitB = b.charCodeAt(i);
    if (unitA === unitB) continue;
    if (unitA >= 0xd800 && unitB >= 0xd800) {
      unitA = unitA >= 0xe000 ? unitA - 0x800 : unitA + 0x2000;
      unitB = unitB >= 0xe000 ? unitB - 0x800 : unitB + 0x2000;
    }
    return unitA < unitB ? -1 : 1;
  }
  return a.length < b.length ? -1 : 1;
}

/**
 * The JSON form of a stored value in results: a bigint becomes a decimal string, always, because stored bigints are
 * IDs (an ID field always holds one: IDs are decimal strings in JSON, however small) or integers beyond 2^53 (which a
 * client would round); writes turn other integers into numbers. A BigInt64Array's elements are numbers while safe
 * integers, as an [I64]'s plain elements are. Dates become ISO 8601 strings; bytes become
 * base64; typed arrays become plain arrays; NaN and infinities, which JSON cannot carry, become null. An answer's ID
 * (JsonId) inside a value already in its JSON form (a `fold`, a `first`, a `var` of records on `/v2/query`) stays one.
 */
export function valueToJson(v: Value): unknown {
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      return Number.isFinite(v) ? v : null;
    case "bigint":
      return v.toString(10);
    default:
      break;
  }
  if (v === null) return null;
  if (Array.isArray(v)) return v.map(valueToJson);
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
  if (v instanceof BigInt64Array) return Array.from(v, bigintToJson);
  if (ArrayBuffer.isView(v)) return Array.from(v as ArrayLike<number>, finiteOrNull);
  if ((v as unknown) instanceof JsonId) return v;
  const out: { [key: string]: unknown } = {};
  for (const key of Object.keys(v)) out[key] = valueToJson(v[key]);
  return out;
}

function bigintToJson(b: bigint): number | string {
  return b >= -9007199254740991n && b <= 9007199254740991n ? Number(b) : b.toString(10);
}

function finiteOrNull(n: number): number | null {
  return Number.isFinite(n) ? n : null;
}
