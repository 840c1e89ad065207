/**
 * The feature-hashing embedder: a deterministic, offline text vectoriser for tests, demos and air-gapped use. It is
 * NOT a semantic model: texts are close when they share words (and word pairs), never because they mean the same.
 * It is named as what it is (`feature-hashing <dimension>`) so that nobody mistakes it for one.
 *
 * How: the text is NFKC-normalised and lowercased, cut into word tokens (runs of letters and digits), and each word
 * and each pair of neighbouring words is hashed (FNV-1a over UTF-8, then murmur3's finaliser) to a dimension and a
 * sign; the signed counts (words 1, pairs 0.5) are summed and the vector L2-normalised. A text with no word at all
 * (only punctuation) hashes as one token, the whole trimmed text.
 *
 * Models: a call that names a model (a QUERY's `#[model("name")]`) hashes every feature together with that name, so
 * each name is a model of its own whose vectors are unrelated to the others', as two real models' are; without a
 * name the features are hashed alone (the provider's own model).
 *
 * Invariants: the same text and dimension give the same vector on every run and machine (no randomness, no
 * platform-dependent arithmetic: only 32-bit integer operations and IEEE sums in a fixed order); every vector has
 * length `dimension` and unit L2 norm.
 */
import type { Embedder } from "../protocol/embedding.js";
import { checkDimensions, checkEmbedModel, checkEmbedTexts } from "./input.js";

export const HASHING_DIMENSIONS_DEFAULT = 256;
/** The weight of a pair of neighbouring words, relative to a single word's 1: word order counts, but less. */
const BIGRAM_WEIGHT = 0.5;
const WORD = /[\p{L}\p{N}]+/gu;
const encoder = new TextEncoder();

export class FeatureHashingEmbedder implements Embedder {
  readonly name: string;
  readonly dimension: number;

  constructor(options: { readonly dimensions?: number } = {}) {
    this.dimension = checkDimensions(options.dimensions ?? HASHING_DIMENSIONS_DEFAULT, "the feature-hashing dimension");
    this.name = `feature-hashing ${this.dimension}`;
  }

  async embed(texts: readonly string[], model?: string): Promise<Float64Array[]> {
    checkEmbedTexts(texts);
    checkEmbedModel(model);
    return texts.map((text) => this.embedOne(text, model));
  }

  /** The vector of one text, of the named model or the provider's own (synchronous; `embed` is the Embedder interface over it). */
  embedOne(text: string, model?: string): Float64Array {
    const vector = new Float64Array(this.dimension);
    const words = hashingTokens(text);
    // A model's features are its name (which holds no NUL, protocol/embedding.ts) followed by the feature.
    const prefix = model === undefined ? "" : `${model}\u0000`;
    for (let i = 0; i < words.length; i += 1) {
      this.add(vector, `${prefix}w:${words[i]}`, 1);
      if (i > 0) this.add(vector, `${prefix}b:${words[i - 1]} ${words[i]}`, BIGRAM_WEIGHT);
    }
    let sumOfSquares = 0;
    for (const component of vector) sumOfSquares += component * component;
    // Opposite signs can cancel every feature out (rare); the first dimension then stands for the text.
    if (sumOfSquares === 0) {
      vector[0] = 1;
      return vector;
    }
    const norm = Math.sqrt(sumOfSquares);
    for (let i = 0; i < vector.length; i += 1) vector[i] /= norm;
    return vector;
  }

  private add(vector: Float64Array, feature: string, weight: number): void {
    const hash = stableHash32(feature);
    // The low bits choose the dimension, the top bit the sign: for the mixed hash they are independent.
    const dimension = hash % this.dimension;
    vector[dimension] += hash >>> 31 === 1 ? -weight : weight;
  }
}

/** The word tokens of a text as the hashing embedder sees them; the whole trimmed text when it has no word. */
export function hashingTokens(text: string): string[] {
  const normalised = text.normalize("NFKC").toLowerCase();
  const words = normalised.match(WORD) ?? [];
  return words.length > 0 ? words : [normalised.trim()];
}

/** FNV-1a (32-bit) over the UTF-8 bytes, then murmur3's fmix32 so that every output bit depends on every input bit. */
export function stableHash32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
