/**
 * Exact JSON for `/v2/query`. Its answers write IDs as bare JSON numbers, as HelixDB v3 does, and a cluster's IDs
 * beyond its first partition start at 2^63: JSON.parse would round them to the nearest double and name another
 * record. `parseJsonExact` reads every integer beyond 2^53 as a bigint (as HelixDB's own SDK does) and everything else
 * as JSON.parse does; `stringifyJsonExact` writes bigints back as bare digits, so an ID read from one answer can be
 * sent in the next request unchanged. Text without a run of 16 digits (nearly every answer) takes JSON.parse itself.
 */
import { isInteger, isSafeNumber, parse, stringify } from "lossless-json";

/** 2^53 has 16 digits: text without a run of 16 digits holds no unsafe integer, and JSON.parse reads it exactly. */
const DIGIT_RUN = /[0-9]{16}/;

/** A number token as a bigint when it is an integer beyond 2^53, else as the double JSON.parse would give. */
function numberOf(token: string): number | bigint {
  return isInteger(token) && !isSafeNumber(token) ? BigInt(token) : Number(token);
}

/** JSON text as JSON.parse reads it, except that each integer beyond 2^53 is a bigint holding its exact digits. */
export function parseJsonExact(text: string): unknown {
  if (!DIGIT_RUN.test(text)) return JSON.parse(text);
  return parse(text, null, { parseNumber: numberOf, onDuplicateKey: ({ newValue }) => newValue });
}

/** A value as JSON.stringify writes it, except that a bigint is written as a bare JSON integer of its digits. */
export function stringifyJsonExact(value: unknown): string {
  let holdsBigInt = false;
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item !== "bigint") return item;
    holdsBigInt = true;
    return item.toString(10);
  });
  if (!holdsBigInt) return text;
  const exact = stringify(value);
  if (exact === undefined) throw new TypeError("the value has no JSON form");
  return exact;
}
