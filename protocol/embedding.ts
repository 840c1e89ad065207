/**
 * The embedding provider interface behind HelixQL's `Embed(text)` (and the tree's `embed` expression). Providers
 * live in cluster/embedders.ts (OpenAI-compatible HTTP, a local model directory, deterministic feature hashing);
 * the executor sees only this interface. See docs/INDEXES.md, "Embed".
 */

export interface Embedder {
  /** What it is, as `silk serve` reports it at start (`openai-compatible text-embedding-3-small`, `feature-hashing 256`). */
  readonly name: string;
  /** One vector per text, in order. Failures are SilkErrors: `embedding_failed` (provider), `invalid_value` (bad text). */
  embed(texts: readonly string[]): Promise<Float64Array[]>;
}
