/**
 * JSON encoding of results for HTTP replies. Results carry IDs as decimal strings (HelixQL routes) or as JsonId
 * (`/v2/query`, written as bare numbers by stringifyAnswer), but a bigint that slipped through (an integer property
 * beyond 2^53) would make JSON.stringify throw and turn a good answer into a 500; here it is written as a decimal
 * string, the wire form of every 64-bit integer in Silk that is not an ID on `/v2/query`.
 */
import { writeIdNumbers } from "../protocol/ids.js";

function bigintAsString(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString(10) : value;
}

/**
 * JSON text of a value, bigints as decimal strings. The plain JSON.stringify runs first: a replacer costs a call
 * per value on every reply, and bigints are rare.
 */
export function stringifyJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (cause) {
    if (!(cause instanceof TypeError)) throw cause;
    return JSON.stringify(value, bigintAsString);
  }
}

/** A `/v2/query` answer's JSON text: as stringifyJson, with its IDs (JsonId) as bare JSON numbers. */
export function stringifyAnswer(value: unknown): string {
  return writeIdNumbers(stringifyJson(value));
}
