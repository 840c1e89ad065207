/**
 * The local-model embedder: a sentence-embedding model in a directory on this machine (a Hugging Face model
 * exported to ONNX: config.json, tokenizer files, onnx/model.onnx), run by the OPTIONAL package
 * `@huggingface/transformers`, which Silk does not depend on: install it beside Silk to use this provider.
 *
 * Invariants: never touches the network (`allowRemoteModels = false`, `local_files_only`); vectors are the mean of
 * the token embeddings, L2-normalised (the `feature-extraction` pipeline with `pooling: "mean", normalize: true`);
 * the package and the model load once, on the first embed, and a failure to load is `embedding_not_configured`
 * naming what is missing and how to install it (and is retried on the next embed, so installing it later works).
 */
import { existsSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { SilkError } from "../protocol/errors.js";
import type { Embedder } from "../protocol/embedding.js";
import { checkEmbedTexts } from "./embedders-input.js";

export const TRANSFORMERS_PACKAGE = "@huggingface/transformers";

/** The part of `@huggingface/transformers` this module uses. */
export interface TransformersModule {
  readonly env: { allowRemoteModels: boolean; allowLocalModels: boolean; localModelPath: string };
  pipeline(task: "feature-extraction", model: string, options: Record<string, unknown>): Promise<FeatureExtractor>;
}

type FeatureExtractor = (texts: string[], options: { pooling: "mean"; normalize: boolean }) => Promise<{ tolist(): unknown }>;

export interface LocalModelOptions {
  readonly modelDirectory: string;
  /** How the package is loaded; the default imports TRANSFORMERS_PACKAGE (tests pass another). */
  readonly importTransformers?: () => Promise<unknown>;
}

export class LocalModelEmbedder implements Embedder {
  readonly name: string;
  private readonly modelDirectory: string;
  private readonly importTransformers: () => Promise<unknown>;
  private extractor: Promise<FeatureExtractor> | undefined;

  constructor(options: LocalModelOptions) {
    this.modelDirectory = resolve(options.modelDirectory);
    this.importTransformers = options.importTransformers ?? (() => import(TRANSFORMERS_PACKAGE as string));
    this.name = `local-model ${basename(this.modelDirectory)}`;
  }

  async embed(texts: readonly string[]): Promise<Float64Array[]> {
    checkEmbedTexts(texts);
    if (texts.length === 0) return [];
    const extractor = await this.load();
    let output: unknown;
    try {
      output = (await extractor([...texts], { pooling: "mean", normalize: true })).tolist();
    } catch (cause) {
      throw new SilkError("embedding_failed", `the local model ${this.modelDirectory} failed: ${cause instanceof Error ? cause.message : String(cause)}`);
    }
    return this.vectorsOf(output, texts.length);
  }

  /** Loads the package and the model once; a failed load is forgotten so that the next embed tries again. */
  private load(): Promise<FeatureExtractor> {
    this.extractor ??= this.open().catch((cause: unknown) => {
      this.extractor = undefined;
      throw cause;
    });
    return this.extractor;
  }

  private async open(): Promise<FeatureExtractor> {
    if (!existsSync(this.modelDirectory) || !statSync(this.modelDirectory).isDirectory()) {
      throw new SilkError("embedding_not_configured", `the local embedding model directory ${this.modelDirectory} does not exist; set SILK_EMBED_MODEL_DIR to a model exported to ONNX`);
    }
    if (!existsSync(join(this.modelDirectory, "config.json"))) {
      throw new SilkError("embedding_not_configured", `${this.modelDirectory} has no config.json; it is not a Hugging Face model directory (ONNX export)`);
    }
    let transformers: TransformersModule;
    try {
      const loaded = (await this.importTransformers()) as TransformersModule & { default?: TransformersModule };
      transformers = typeof loaded.pipeline === "function" ? loaded : loaded.default!;
      if (typeof transformers?.pipeline !== "function") throw new Error(`${TRANSFORMERS_PACKAGE} has no pipeline()`);
    } catch (cause) {
      throw new SilkError(
        "embedding_not_configured",
        `the local embedding provider needs the optional package ${TRANSFORMERS_PACKAGE}, which could not be loaded ` +
          `(${cause instanceof Error ? cause.message.split("\n")[0] : String(cause)}); install it beside Silk with \`npm install ${TRANSFORMERS_PACKAGE}\``,
      );
    }
    transformers.env.allowRemoteModels = false;
    transformers.env.allowLocalModels = true;
    transformers.env.localModelPath = dirname(this.modelDirectory);
    try {
      return await transformers.pipeline("feature-extraction", basename(this.modelDirectory), { local_files_only: true });
    } catch (cause) {
      throw new SilkError("embedding_not_configured", `the local model ${this.modelDirectory} could not be loaded: ${cause instanceof Error ? cause.message : String(cause)}`);
    }
  }

  private vectorsOf(output: unknown, count: number): Float64Array[] {
    if (!Array.isArray(output) || output.length !== count) throw new SilkError("embedding_failed", `the local model ${this.modelDirectory} gave no vector per text`);
    const vectors = output.map((row: unknown) => {
      if (!Array.isArray(row) || row.length === 0 || !row.every((x) => typeof x === "number" && Number.isFinite(x))) {
        throw new SilkError("embedding_failed", `the local model ${this.modelDirectory} gave something other than a list of numbers`);
      }
      return Float64Array.from(row as number[]);
    });
    if (vectors.some((vector) => vector.length !== vectors[0].length)) throw new SilkError("embedding_failed", `the local model ${this.modelDirectory} gave vectors of different lengths`);
    return vectors;
  }
}
