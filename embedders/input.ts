/**
 * What every embedding provider checks before it does any work (embedders/index.ts): the texts are strings, not
 * empty, and within a size bound; a model a query names is a well-formed name; a configured dimension is a whole number within bounds. Bad input is the caller's
 * fault (`invalid_value`), never the provider's (`embedding_failed`), and nothing is sent anywhere.
 */
import { embedModelNameProblem } from "../protocol/embedding.js";
import { SilkError } from "../protocol/errors.js";
import { EMBED_DIMENSIONS_MAX, EMBED_TEXT_BYTES_MAX } from "../protocol/limits.js";

/** Throws `invalid_value` for the first text that is not a non-empty string of at most EMBED_TEXT_BYTES_MAX bytes. */
export function checkEmbedTexts(texts: readonly unknown[]): asserts texts is readonly string[] {
  if (!Array.isArray(texts)) throw new SilkError("invalid_value", "Embed takes a list of texts");
  texts.forEach((text, i) => {
    if (typeof text !== "string") throw new SilkError("invalid_value", `Embed text ${i} is ${text === null ? "null" : typeof text}, not a string`);
    if (text.trim() === "") throw new SilkError("invalid_value", `Embed text ${i} is empty; there is nothing to embed`);
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > EMBED_TEXT_BYTES_MAX) {
      throw new SilkError("invalid_value", `Embed text ${i} has ${bytes} bytes; the limit is ${EMBED_TEXT_BYTES_MAX}`);
    }
  });
}

/** Throws `invalid_value` for a model name that is not one (protocol/embedding.ts); undefined passes (the default model). */
export function checkEmbedModel(model: unknown): asserts model is string | undefined {
  if (model === undefined) return;
  const problem = typeof model === "string" ? embedModelNameProblem(model) : "an embedding model name is a string";
  if (problem !== undefined) throw new SilkError("invalid_value", `Embed model ${JSON.stringify(model)}: ${problem}`);
}

/** A dimension setting: a whole number from 1 to EMBED_DIMENSIONS_MAX, else `code` (`invalid_option` from settings). */
export function checkDimensions(value: number, what: string, code: "invalid_option" | "invalid_value" = "invalid_value"): number {
  if (!Number.isInteger(value) || value < 1 || value > EMBED_DIMENSIONS_MAX) {
    throw new SilkError(code, `${what} must be a whole number from 1 to ${EMBED_DIMENSIONS_MAX}, got ${String(value)}`);
  }
  return value;
}
