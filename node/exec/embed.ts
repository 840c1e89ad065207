/**
 * The Embed expression: a text's vector from the invocation's embedding provider (protocol/embedding.ts), with the
 * model the expression names (a QUERY's `#[model("name")]`) or the provider's own, cached per invocation so that one
 * text costs one provider call per model however often the plan embeds it.
 */
import { SilkError } from "../../protocol/errors.js";
import { wait, type Op } from "./ops.js";
import type { Value } from "../../protocol/values.js";
import type { ExecutionContext } from "./streams.js";

/**
 * Embeddings computed during one invocation, by model and text (the key is `model NUL text`; no model name holds a
 * NUL, protocol/embedding.ts): Embed of one text costs one provider call per model and invocation.
 */
const embeddingCaches = new WeakMap<ExecutionContext, Map<string, Float64Array>>();

/** `Embed(text)`: the configured provider's vector for the text, from `model` when given, else its own model. */
export function* embed(text: Value | undefined, model: string | undefined, context: ExecutionContext): Op<Float64Array> {
  if (typeof text !== "string") throw new SilkError("invalid_type", `Embed takes a text (a string), not ${text === null || text === undefined ? "null" : typeof text}`);
  const embedder = context.embedder;
  if (embedder === undefined) {
    throw new SilkError("embedding_not_configured", "Embed needs an embedding provider, and this database has none: pass open({ embedder }) to an embedded database, or start the server with SILK_EMBED_PROVIDER set (docs/EMBEDDING.md)");
  }
  let cache = embeddingCaches.get(context);
  if (cache === undefined) embeddingCaches.set(context, (cache = new Map()));
  const key = `${model ?? ""}\u0000${text}`;
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  const [vector] = yield* wait(embedder.embed([text], model));
  cache.set(key, vector);
  return vector;
}
