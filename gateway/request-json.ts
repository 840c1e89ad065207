/**
 * The `/v2/query` body parser. HelixDB's SDKs send i64 values as bare JSON integers (`{"i64": 9223372036854775000}`,
 * node IDs, parameters), and JSON.parse rounds any integer beyond 2^53 to the nearest double: the value that reaches
 * the engine would not be the one sent. Such bodies are parsed losslessly instead, each integer beyond 2^53 becoming
 * a bigint (which the tree decoder, parseId and parameter_types accept). Bodies without one, which is nearly all of
 * them, take fastify's own parser unchanged: the only cost there is one scan for a run of 16 digits.
 */
import { isInteger, isSafeNumber, parse } from "lossless-json";
import { SilkError } from "../protocol/errors.js";

/** 2^53 has 16 digits: an integer token shorter than that is always safe, so such a body needs no lossless parse. */
const DIGIT_RUN = /[0-9]{16}/;
/** A JSON integer token of 16 digits or more: not part of a fraction or an exponent, not followed by one. */
const LONG_INTEGER_TOKEN = /(?:^|[^0-9.eE+-])-?[0-9]{16,}(?![0-9.eE])/;

/** Whether a body may hold an integer beyond 2^53 (a digit run in a string also counts: the lossless parse is exact either way). */
export function mayHoldUnsafeInteger(text: string): boolean {
  return DIGIT_RUN.test(text) && LONG_INTEGER_TOKEN.test(text);
}

/** A number token as a bigint when it is an integer beyond 2^53, else as the double JSON.parse would give. */
function numberOf(token: string): number | bigint {
  return isInteger(token) && !isSafeNumber(token) ? BigInt(token) : Number(token);
}

/**
 * Parses JSON text with every integer beyond 2^53 as a bigint, and otherwise as JSON.parse does (a key given twice:
 * the last one wins). Call it on text that fastify's parser accepted, so that syntax errors and `__proto__` keys are
 * answered as that parser answers them; anything it still refuses is `invalid_query_json`.
 */
export function parseLossless(text: string): unknown {
  try {
    return parse(text, null, { parseNumber: numberOf, onDuplicateKey: ({ newValue }) => newValue });
  } catch (cause) {
    throw new SilkError("invalid_query_json", `the request body could not be read exactly: ${(cause as Error).message}`);
  }
}
