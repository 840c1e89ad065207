/**
 * Record identifiers. Node, edge and vector IDs are unsigned 64-bit integers: `bigint` everywhere inside Silk and
 * decimal strings in JSON, because a JSON number loses precision above 2^53 and most JSON parsers silently round;
 * `/v2/query` answers alone write them as JSON numbers (JsonId), as HelixDB v3 does and its SDKs expect.
 * This module is the one place that decides what counts as a valid ID on input.
 */

import { SilkError } from "./errors.js";

/** The largest ID: 2^64 - 1. */
export const ID_MAX = 2n ** 64n - 1n;

/** Decimal digits of ID_MAX (18446744073709551615); a longer significant part is out of range without parsing it. */
const ID_DECIMAL_DIGITS_MAX = 20;

const DIGITS_ONLY = /^[0-9]+$/;

/**
 * Reads an ID from a decimal string, a non-negative safe-integer number, or a bigint in [0, ID_MAX].
 *
 * Strings must be digits only: no sign, no spaces, no exponent, no fraction. Leading zeros are accepted ("007" is
 * ID 7) because the decimal value is unambiguous, and clients that pad IDs to a fixed width should not be
 * punished for it. Numbers must be safe integers: 1e20 is an integer, but a JSON number that large has already
 * been rounded by the sender's parser, so the ID it names is not knowable. Anything else is `invalid_id`, with a
 * message naming `where` (for example "AddE<Follows>::From") and the rejected value.
 */
export function parseId(input: unknown, where: string): bigint {
  const id = idOf(input);
  if (id !== undefined) return id;
  throw new SilkError(
    "invalid_id",
    `${where}: ${describeIdInput(input)} is not a valid ID; IDs are unsigned 64-bit integers (0 to ${ID_MAX}) ` +
      "given as a decimal string of digits or as a non-negative integer",
  );
}

/**
 * The ID `input` names under parseId's rules, or undefined when it is not one: for callers whose error message
 * (parseId's `where`) costs something to build, asked only on failure.
 */
export function idOf(input: unknown): bigint | undefined {
  switch (typeof input) {
    case "bigint":
      return input >= 0n && input <= ID_MAX ? input : undefined;
    case "number":
      // -0 passes both tests and becomes 0n, which is what a caller writing -0 can only have meant.
      return Number.isSafeInteger(input) && input >= 0 ? BigInt(input) : undefined;
    case "string": {
      if (!DIGITS_ONLY.test(input)) return undefined;
      // Strip leading zeros before measuring, so that a huge string of digits is rejected without the
      // (super-linear) cost of turning it into a bigint.
      const significant = input.charCodeAt(0) === 48 /* "0" */ ? input.replace(/^0+(?=[0-9])/, "") : input;
      if (significant.length > ID_DECIMAL_DIGITS_MAX) return undefined;
      const id = BigInt(significant);
      return id <= ID_MAX ? id : undefined;
    }
    case "object":
      // An ID from an answer of `/v2/query` (a `var` of records, an `id` step's values) names its record.
      return input instanceof JsonId ? input.id : undefined;
    default:
      return undefined;
  }
}

/** The JSON form of an ID: its decimal string. */
export function idToString(id: bigint): string {
  return id.toString(10);
}

/**
 * An ID that an answer writes as a bare JSON number: HelixDB v3's wire (`POST /v2/query`) answers its i64 IDs as
 * numbers, an ID beyond 2^53 too, and its SDKs read them as `number | bigint`. JSON.stringify cannot write digits
 * without quotes, so `toJSON` gives ID_NUMBER_MARK and the digits, and `writeIdNumbers` unquotes them in the text:
 * the digits are the bigint's own, never a double's. The mark is a lone surrogate, which no stored or requested
 * string can hold (values.ts checkInputValue) and which JSON.stringify always escapes, so only an ID matches.
 */
export class JsonId {
  constructor(readonly id: bigint) {}

  toJSON(): string {
    return ID_NUMBER_MARK + idToString(this.id);
  }
}

const ID_NUMBER_MARK = "\ud800";
/** How JSON.stringify writes a JsonId: the escaped mark and the digits, quoted. */
const ID_NUMBER_TEXT = /"\\ud800([0-9]+)"/g;

/** How an answer renders an ID: `idToString` (the embedded API, HelixQL routes) or `idToJsonId` (`/v2/query`). */
export type IdRenderer = (id: bigint) => string | JsonId;

export function idToJsonId(id: bigint): JsonId {
  return new JsonId(id);
}

/** The renderer of a plan's answer: JsonId when it asks for `idsAsNumbers` (protocol/tree.ts Plan), else strings. */
export function idRendererOf(plan: { readonly idsAsNumbers?: boolean }): IdRenderer {
  return plan.idsAsNumbers === true ? idToJsonId : idToString;
}

/** JSON text (JSON.stringify's) with every JsonId written as a bare JSON number of its digits. */
export function writeIdNumbers(json: string): string {
  return json.includes("\\ud800") ? json.replace(ID_NUMBER_TEXT, "$1") : json;
}

/** A short rendering of a rejected ID for error messages, long strings cut so a message stays readable. */
function describeIdInput(input: unknown): string {
  if (typeof input === "string") {
    const shown = input.length > 40 ? `${input.slice(0, 40)}...` : input;
    return JSON.stringify(shown);
  }
  if (typeof input === "bigint" || typeof input === "number") return String(input);
  if (input === null) return "null";
  if (Array.isArray(input)) return "an array";
  return `a value of type ${typeof input}`;
}

// Writing a u64 through one scratch DataView and copying its 8 bytes is about twice as fast as
// Buffer#writeBigUInt64BE, whose range checks on BigInts dominate bulk writes of keys and mutation lists.
const scratch = new ArrayBuffer(8);
const scratchView = new DataView(scratch);
const scratchBytes = new Uint8Array(scratch);

/** Writes `value` (0 to 2^64-1) big-endian at `offset`; returns the offset after it. */
export function writeU64(target: Uint8Array, value: bigint, offset: number): number {
  scratchView.setBigUint64(0, value, false);
  target.set(scratchBytes, offset);
  return offset + 8;
}
