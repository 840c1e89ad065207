/**
 * The embedding provider interface behind HelixQL's `Embed(text)` (and the tree's `embed` expression). Providers
 * live in embedders/ (OpenAI-compatible HTTP, a local model directory, deterministic feature hashing);
 * the executor sees only this interface. See docs/EMBEDDING.md.
 */
export interface Embedder {
  /** What it is, as `silk serve` reports it at start (`openai-compatible text-embedding-3-small`, `feature-hashing 256`). */
  readonly name: string;
  /**
   * One vector per text, in order. `model` names one of the provider's models (HelixQL's `#[model("name")]` before a
   * QUERY, the tree's `embed.model`); without it the provider uses the model it was configured with. Failures are
   * SilkErrors: `embedding_failed` (provider), `invalid_value` (bad text), `embedding_not_configured` (a model the
   * provider cannot load).
   */
  embed(texts: readonly string[], model?: string): Promise<Float64Array[]>;
}

/** The longest model name `#[model(..)]` or `embed.model` may give, in characters. */
export const EMBED_MODEL_NAME_CHARS_MAX = 256;

/**
 * What is wrong with a model name, or undefined when nothing is: it must be a non-empty string of at most
 * EMBED_MODEL_NAME_CHARS_MAX characters, not only spaces, without control characters (it travels in HTTP bodies
 * and log lines). The tree decoder and the HelixQL checker both ask it.
 */
export function embedModelNameProblem(model: string): string | undefined {
  if (model.trim() === "" || model.length > EMBED_MODEL_NAME_CHARS_MAX) {
    return `an embedding model name has 1 to ${EMBED_MODEL_NAME_CHARS_MAX} characters, and not only spaces`;
  }
  if (/[\u0000-\u001f\u007f]/.test(model)) return "an embedding model name has no control characters";
  return undefined;
}
