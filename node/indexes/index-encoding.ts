/**
 * The order-preserving byte encoding of indexed values: for two values of one kind, the byte order of their
 * encodings is the order `compareValues` (protocol/values.ts) gives them, and equal encodings mean equal values.
 * Secondary-index keys (keys.ts) embed it, so an equality or range lookup is one LMDB range scan.
 *
 * What is encoded: booleans, numbers and bigints (one kind, exactly: a bigint beyond 2^53 is never rounded, a
 * fractional number sorts between its neighbouring integers), dates (by instant), strings (UTF-8, whose byte order is
 * code point order). NaN, invalid dates, strings with unpaired surrogates (UTF-8 cannot carry them), null, bytes,
 * arrays and objects are not: `encodeIndexValue` answers undefined and such values are simply not in the index —
 * which keeps lookups exact, because none of them equals or orders against an encodable value.
 *
 * Every encoding is prefix-free (no encoding is a proper prefix of another), so the record ID that follows it in a
 * key never changes the order of two different values.
 *
 *   boolean  0x10 | 0x00 or 0x01
 *   number   0x20 | number body (below)
 *   date     0x30 | number body of the epoch milliseconds
 *   string   0x40 | UTF-8 with 0x00 written as 0x00 0xFF | 0x00 0x00
 *   long     0x40 | the first P bytes of the UTF-8, 0x00 written as 0x00 0xFF | 0x00 0x01 | SHA-256 of the UTF-8
 *
 * Long strings: an LMDB key holds at most KEY_BYTES_MAX bytes (keys.ts), so a string whose encoding does not fit in its
 * index's key (`valueBytesMax`, what the index's prefix and the record ID leave) is written in the long form, with
 * P = `longStringPrefixBytes(valueBytesMax)` (at most INDEX_STRING_PREFIX_BYTES_MAX). A string whose encoding fits
 * keeps the plain form, so every key written before long strings were indexable stays valid. Equal long strings
 * have equal keys; two different ones share a key only if SHA-256 collides (the UNIQUE check of unique.ts compares
 * the values themselves). Key order places the long strings that start with P right after P itself, in hash order
 * among them, and before every longer plain string that starts with P: exact against every value that differs
 * within P bytes, not among the strings that share them. A range lookup therefore widens a string bound of more
 * than P bytes to every string that shares its first P bytes (`sharedPrefixRange`): the index may hand out a few
 * more candidates, never fewer, and the planner evaluates the whole predicate on them (planner.ts).
 *
 * Number body: 0x00 for -Infinity, 0x03 for +Infinity; otherwise the integer part floor(x) — 0x01 | (255 - n) |
 * the n magnitude bytes inverted for a negative floor, 0x02 | n | the n big-endian magnitude bytes for a
 * non-negative one — followed by the fraction x - floor(x) exactly, as its binary digits in groups of 7, each group g
 * written as (g << 1) | 1, trailing zero groups dropped, and a terminating 0x00 (an integer has no groups).
 */
import { createHash } from "node:crypto";
import type { Value } from "../../protocol/values.js";

/** The most UTF-8 bytes of a long string that its index key keeps in order (see the module comment). */
export const INDEX_STRING_PREFIX_BYTES_MAX = 512;

const TAG = { boolean: 0x10, number: 0x20, date: 0x30, string: 0x40 } as const;
const NUMBER = { negativeInfinity: 0x00, negative: 0x01, nonNegative: 0x02, positiveInfinity: 0x03 } as const;
const FRACTION_GROUP_BITS = 7;
/** A double's binary fraction has at most 1,074 digits (the smallest subnormal is 2^-1074). */
const DOUBLE_MANTISSA_BITS = 52;
const DOUBLE_EXPONENT_BIAS = 1075;
const SUBNORMAL_EXPONENT = -1074;
const UNPAIRED_SURROGATE = /\p{Cs}/u;
const STRING_END = { plain: 0x00, long: 0x01 } as const;
/** UTF-8 never holds 0xFF, and an escaped NUL is 0x00 0xFF: after P, this byte sorts after every string's next one. */
const AFTER_EVERY_BYTE = 0xff;
const SHA256_BYTES = 32;
/** Tag, the 0x00 0x01 marker and the hash: the long form's bytes besides its escaped prefix. */
const LONG_STRING_OVERHEAD_BYTES = 1 + 2 + SHA256_BYTES;

/**
 * The encoding of an indexable value in an index whose keys leave `valueBytesMax` bytes for it, or undefined when
 * the value is not indexed (see the module comment). Without a bound every string has its plain form, which is
 * exact: unique.ts uses it to tell values apart in memory.
 */
export function encodeIndexValue(value: Value, valueBytesMax = Number.POSITIVE_INFINITY): Buffer | undefined {
  switch (typeof value) {
    case "boolean":
      return Buffer.from([TAG.boolean, value ? 1 : 0]);
    case "number":
    case "bigint": {
      const out: number[] = [TAG.number];
      return writeNumber(out, value) ? Buffer.from(out) : undefined;
    }
    case "string":
      return UNPAIRED_SURROGATE.test(value) ? undefined : encodeString(value, valueBytesMax);
    default: {
      if (!(value instanceof Date)) return undefined;
      const out: number[] = [TAG.date];
      return writeNumber(out, value.getTime()) ? Buffer.from(out) : undefined;
    }
  }
}

/** The first byte of every encoding of a value of this kind, and the byte after it: a whole kind is one key range. */
export function kindTagRange(value: Value): { first: number; end: number } | undefined {
  const tag =
    typeof value === "boolean" ? TAG.boolean
    : typeof value === "number" || typeof value === "bigint" ? TAG.number
    : typeof value === "string" ? TAG.string
    : value instanceof Date ? TAG.date
    : undefined;
  return tag === undefined ? undefined : { first: tag, end: tag + 1 };
}

function encodeString(text: string, valueBytesMax: number): Buffer {
  const utf8 = Buffer.from(text, "utf8");
  const plain = escapeString(utf8, STRING_END.plain);
  if (plain.length <= valueBytesMax) return plain;
  const kept = escapeString(utf8.subarray(0, longStringPrefixBytes(valueBytesMax)), STRING_END.long);
  return Buffer.concat([kept, createHash("sha256").update(utf8).digest()]);
}

/**
 * How many UTF-8 bytes of a long string an index keeps in its keys: INDEX_STRING_PREFIX_BYTES_MAX, or fewer when
 * the index's label and field leave less room (every byte may be a NUL, which takes two). One number per index,
 * which the order argument of the module comment needs.
 */
export function longStringPrefixBytes(valueBytesMax: number): number {
  return Math.max(0, Math.min(INDEX_STRING_PREFIX_BYTES_MAX, Math.floor((valueBytesMax - LONG_STRING_OVERHEAD_BYTES) / 2)));
}

/**
 * Keys around every string of an index that starts with the first P bytes of `text`, or undefined when `text` has no
 * more than P bytes (then no long string orders differently against it): `start` is the first key of the long
 * strings among them (the plain ones sort after), `end` is after all of them.
 */
export function sharedPrefixRange(text: string, valueBytesMax: number): { start: Buffer; end: Buffer } | undefined {
  const utf8 = Buffer.from(text, "utf8");
  const kept = longStringPrefixBytes(valueBytesMax);
  if (utf8.length <= kept) return undefined;
  const start = escapeString(utf8.subarray(0, kept), STRING_END.long);
  const end = Buffer.from(start.subarray(0, start.length - 1));
  end[end.length - 1] = AFTER_EVERY_BYTE;
  return { start, end };
}

/** 0x40 | the bytes with 0x00 written as 0x00 0xFF | 0x00 | `end`. */
function escapeString(utf8: Buffer, end: number): Buffer {
  let zeros = 0;
  for (const byte of utf8) if (byte === 0) zeros += 1;
  const out = Buffer.allocUnsafe(1 + utf8.length + zeros + 2);
  out[0] = TAG.string;
  let at = 1;
  for (const byte of utf8) {
    out[at++] = byte;
    if (byte === 0) out[at++] = 0xff;
  }
  out[at++] = 0;
  out[at] = end;
  return out;
}

/** Appends the number body; false for NaN, which is not indexed. */
function writeNumber(out: number[], value: number | bigint): boolean {
  if (typeof value === "bigint") {
    writeInteger(out, value);
    out.push(0);
    return true;
  }
  if (Number.isNaN(value)) return false;
  if (value === -Infinity) out.push(NUMBER.negativeInfinity);
  else if (value === Infinity) out.push(NUMBER.positiveInfinity);
  else if (Number.isSafeInteger(value)) {
    writeSafeInteger(out, value);
    out.push(0);
  } else if (Number.isInteger(value)) {
    writeInteger(out, BigInt(value));
    out.push(0);
  } else writeFractional(out, value);
  return true;
}

function writeInteger(out: number[], integer: bigint): void {
  const negative = integer < 0n;
  const magnitude = magnitudeBytes(negative ? -integer : integer);
  if (negative) {
    out.push(NUMBER.negative, 255 - magnitude.length);
    for (const byte of magnitude) out.push(~byte & 0xff);
  } else {
    out.push(NUMBER.nonNegative, magnitude.length);
    for (const byte of magnitude) out.push(byte);
  }
}

/** `writeInteger` without a BigInt, for the common case (bulk loads index mostly small integers). */
function writeSafeInteger(out: number[], integer: number): void {
  const negative = integer < 0;
  let magnitude = Math.abs(integer);
  const bytes: number[] = [];
  while (magnitude > 0) {
    bytes.push(magnitude % 256);
    magnitude = Math.floor(magnitude / 256);
  }
  out.push(negative ? NUMBER.negative : NUMBER.nonNegative, negative ? 255 - bytes.length : bytes.length);
  for (let i = bytes.length - 1; i >= 0; i -= 1) out.push(negative ? ~bytes[i] & 0xff : bytes[i]);
}

/** Big-endian bytes of a non-negative integer without leading zeros (none at all for 0). */
function magnitudeBytes(magnitude: bigint): Buffer {
  if (magnitude === 0n) return Buffer.alloc(0);
  const hex = magnitude.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, "hex");
}

/**
 * A finite non-integer double is mantissa * 2^exponent exactly with exponent < 0; splitting that integer arithmetic
 * gives floor and fraction without any rounding (x - Math.floor(x) in doubles rounds for tiny negative x).
 */
function writeFractional(out: number[], value: number): void {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  const high = view.getUint32(0);
  const biased = (high >>> 20) & 0x7ff;
  const fractionField = (BigInt(high & 0xfffff) << 32n) | BigInt(view.getUint32(4));
  let mantissa = biased === 0 ? fractionField : fractionField | (1n << BigInt(DOUBLE_MANTISSA_BITS));
  if (high >>> 31 === 1) mantissa = -mantissa;
  const digits = biased === 0 ? -SUBNORMAL_EXPONENT : DOUBLE_EXPONENT_BIAS - biased;
  const floor = mantissa >> BigInt(digits); // arithmetic shift: floor division, also for negatives
  writeInteger(out, floor);
  const pad = (FRACTION_GROUP_BITS - (digits % FRACTION_GROUP_BITS)) % FRACTION_GROUP_BITS;
  const fraction = (mantissa - (floor << BigInt(digits))) << BigInt(pad);
  const groups: number[] = [];
  for (let shift = digits + pad - FRACTION_GROUP_BITS; shift >= 0; shift -= FRACTION_GROUP_BITS) {
    groups.push(Number((fraction >> BigInt(shift)) & 0x7fn));
  }
  while (groups.length > 0 && groups[groups.length - 1] === 0) groups.pop();
  for (const group of groups) out.push((group << 1) | 1);
  out.push(0);
}
