/**
 * The embedding providers behind `Embed(text)` (protocol/embedding.ts), and the one place the servers read their
 * choice from the environment. Three providers, each in its own module:
 * - OpenAiCompatibleEmbedder (openai.ts): any `/v1/embeddings` HTTP endpoint, key from the environment;
 * - LocalModelEmbedder (local.ts): a model directory run by the optional `@huggingface/transformers`;
 * - FeatureHashingEmbedder (hashing.ts): deterministic and offline, for tests; not a semantic model.
 *
 * Invariant: a server either starts with a working configuration or refuses to start (`invalid_option` naming the
 * variable at fault); no variable set means no provider, and Embed is then `embedding_not_configured`.
 * See docs/EMBEDDING.md.
 */
import { existsSync, statSync } from "node:fs";
import { SilkError } from "../protocol/errors.js";
import type { Embedder } from "../protocol/embedding.js";
import { EMBED_DIMENSIONS_MAX } from "../protocol/limits.js";
import { FeatureHashingEmbedder, HASHING_DIMENSIONS_DEFAULT } from "./hashing.js";
import { LocalModelEmbedder } from "./local.js";
import { OPENAI_MODEL_DEFAULT, OpenAiCompatibleEmbedder } from "./openai.js";

export { FeatureHashingEmbedder, HASHING_DIMENSIONS_DEFAULT, hashingTokens, stableHash32 } from "./hashing.js";
export { LocalModelEmbedder, TRANSFORMERS_PACKAGE, type LocalModelOptions, type TransformersModule } from "./local.js";
export {
  batchesOf,
  EMBED_BATCH_BYTES_MAX,
  EMBED_BATCH_TEXTS_MAX,
  EMBED_RETRIES_DEFAULT,
  EMBED_TIMEOUT_MS_DEFAULT,
  OPENAI_BASE_URL_DEFAULT,
  OPENAI_MODEL_DEFAULT,
  OpenAiCompatibleEmbedder,
  type OpenAiCompatibleOptions,
} from "./openai.js";

export const EMBED_PROVIDERS = ["openai", "local", "hashing"] as const;
export type EmbedProvider = (typeof EMBED_PROVIDERS)[number];

/**
 * The embedder the environment configures, or undefined when none is:
 * - `SILK_EMBED_PROVIDER=openai`: `SILK_EMBED_API_KEY` (else `OPENAI_API_KEY`), `SILK_EMBED_BASE_URL` (default
 *   OpenAI's), `SILK_EMBED_MODEL` (default text-embedding-3-small), optional `SILK_EMBED_DIMENSIONS`;
 * - `SILK_EMBED_PROVIDER=local`: `SILK_EMBED_MODEL_DIR`, an existing directory;
 * - `SILK_EMBED_PROVIDER=hashing`: `SILK_EMBED_DIMENSIONS` (default 256);
 * - unset (or empty) with `OPENAI_API_KEY` set: openai, as HelixDB users expect; unset otherwise: undefined.
 * An unknown provider, a missing key or directory, or a bad number is `invalid_option`, so the server refuses to start.
 */
export function embedderFromEnvironment(env: NodeJS.ProcessEnv): Embedder | undefined {
  const chosen = nonEmpty(env.SILK_EMBED_PROVIDER)?.toLowerCase();
  const provider = chosen ?? (nonEmpty(env.OPENAI_API_KEY) !== undefined ? "openai" : undefined);
  if (provider === undefined) return undefined;
  switch (provider) {
    case "openai": {
      const apiKey = nonEmpty(env.SILK_EMBED_API_KEY) ?? nonEmpty(env.OPENAI_API_KEY);
      if (apiKey === undefined) {
        throw new SilkError("invalid_option", "SILK_EMBED_PROVIDER=openai needs an API key: set SILK_EMBED_API_KEY (or OPENAI_API_KEY)");
      }
      return new OpenAiCompatibleEmbedder({
        apiKey,
        baseUrl: nonEmpty(env.SILK_EMBED_BASE_URL),
        model: nonEmpty(env.SILK_EMBED_MODEL) ?? OPENAI_MODEL_DEFAULT,
        dimensions: dimensionsOf(env.SILK_EMBED_DIMENSIONS),
      });
    }
    case "local": {
      const directory = nonEmpty(env.SILK_EMBED_MODEL_DIR);
      if (directory === undefined) throw new SilkError("invalid_option", "SILK_EMBED_PROVIDER=local needs SILK_EMBED_MODEL_DIR, the model's directory");
      if (!existsSync(directory) || !statSync(directory).isDirectory()) {
        throw new SilkError("invalid_option", `SILK_EMBED_MODEL_DIR=${directory} is not a directory`);
      }
      return new LocalModelEmbedder({ modelDirectory: directory });
    }
    case "hashing":
      return new FeatureHashingEmbedder({ dimensions: dimensionsOf(env.SILK_EMBED_DIMENSIONS) ?? HASHING_DIMENSIONS_DEFAULT });
    default:
      throw new SilkError("invalid_option", `SILK_EMBED_PROVIDER=${JSON.stringify(provider)} is not a provider; use one of ${EMBED_PROVIDERS.join(", ")}`);
  }
}

/** The line a server logs at start about Embed: which provider, or a warning that Embed will fail. */
export function embedderStartMessage(embedder: Embedder | undefined): { readonly level: "info" | "warn"; readonly message: string } {
  if (embedder !== undefined) return { level: "info", message: `embedding provider: ${embedder.name}` };
  return {
    level: "warn",
    message: "no embedding provider: Embed(text) will answer embedding_not_configured; set SILK_EMBED_PROVIDER (docs/EMBEDDING.md)",
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === "" ? undefined : trimmed;
}

function dimensionsOf(value: string | undefined): number | undefined {
  const text = nonEmpty(value);
  if (text === undefined) return undefined;
  const dimensions = Number(text);
  if (!/^[0-9]+$/.test(text) || dimensions < 1 || dimensions > EMBED_DIMENSIONS_MAX) {
    throw new SilkError("invalid_option", `SILK_EMBED_DIMENSIONS must be a whole number from 1 to ${EMBED_DIMENSIONS_MAX}, got ${JSON.stringify(text)}`);
  }
  return dimensions;
}
