/**
 * The local-model embedder: a sentence-embedding model in a directory on this machine (a Hugging Face model
 * exported to ONNX: config.json, tokenizer files, onnx/model.onnx), run by the OPTIONAL package
 * `@huggingface/transformers`, which Silk does not depend on: install it beside Silk to use this provider.
 *
 * Invariants: never touches the network (`allowRemoteModels = false`, `local_files_only`); vectors are the mean of
 * the token embeddings, L2-normalised (the `feature-extraction` pipeline with `pooling: "mean", normalize: true`);
 * the package and the model load once, on the first embed, and a failure to load is `embedding_not_configured`
 * naming what is missing and how to install it (and is retried on the next embed, so installing it later works).
 *
 * Models: the configured directory is the provider's own model. A call that names a model (a QUERY's
 * `#[model("name")]`) runs the model directory of that name beside it, in the same parent directory (the name may
 * have segments, `Xenova/bge-small-en-v1.5`, but never leaves that parent); each model loads once, on its first use.
 */
import { existsSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { SilkError } from "../protocol/errors.js";
import type { Embedder } from "../protocol/embedding.js";
import { checkEmbedModel, checkEmbedTexts } from "./input.js";

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
  /** The models loaded or loading, by directory. */
  private readonly extractors = new Map<string, Promise<FeatureExtractor>>();

  constructor(options: LocalModelOptions) {
    this.modelDirectory = resolve(options.modelDirectory);
    this.importTransformers = options.importTransformers ?? (() => import(TRANSFORMERS_PACKAGE as string));
    this.name = `local-model ${basename(this.modelDirectory)}`;
  }

  async embed(texts: readonly string[], model?: string): Promise<Float64Array[]> {
    checkEmbedTexts(texts);
    checkEmbedModel(model);
    const directory = model === undefined ? this.modelDirectory : this.namedModelDirectory(model);
    if (texts.length === 0) return [];
    const extractor = await this.load(directory);
    let output: unknown;
    try {
      output = (await extractor([...texts], { pooling: "mean", normalize: true })).tolist();
    } catch (cause) {
      throw new SilkError("embedding_failed", `the local model ${directory} failed: ${cause instanceof Error ? cause.message : String(cause)}`);
    }
    return vectorsOf(output, texts.length, directory);
  }

  /** The directory of a named model: beside the configured one; a name that would leave their parent is invalid_value. */
  private namedModelDirectory(model: string): string {
    const parent = dirname(this.modelDirectory);
    const directory = resolve(parent, model);
    const inside = relative(parent, directory);
    if (isAbsolute(model) || inside === "" || inside.startsWith("..") || isAbsolute(inside)) {
      throw new SilkError("invalid_value", `Embed model ${JSON.stringify(model)}: a local model is named by its directory beside ${this.modelDirectory}, inside ${parent}`);
    }
    return directory;
  }

  /** Loads the package and a model once; a failed load is forgotten so that the next embed tries again. */
  private load(directory: string): Promise<FeatureExtractor> {
    let extractor = this.extractors.get(directory);
    if (extractor === undefined) {
      extractor = this.open(directory).catch((cause: unknown) => {
        this.extractors.delete(directory);
        throw cause;
      });
      this.extractors.set(directory, extractor);
    }
    return extractor;
  }

  private async open(directory: string): Promise<FeatureExtractor> {
    if (!existsSync(directory) || !statSync(directory).isDirectory()) {
      const fix =
        directory === this.modelDirectory
          ? "set SILK_EMBED_MODEL_DIR to a model exported to ONNX"
          : `a QUERY's #[model("name")] names a model directory beside ${this.modelDirectory}`;
      throw new SilkError("embedding_not_configured", `the local embedding model directory ${directory} does not exist; ${fix}`);
    }
    if (!existsSync(join(directory, "config.json"))) {
      throw new SilkError("embedding_not_configured", `${directory} has no config.json; it is not a Hugging Face model directory (ONNX export)`);
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
    // Every model of this provider lies under the configured model's parent, so the package's global model path is
    // the same for all of them, and loads of two models at once cannot change it under each other.
    const parent = dirname(this.modelDirectory);
    transformers.env.localModelPath = parent;
    try {
      return await transformers.pipeline("feature-extraction", relative(parent, directory).split(sep).join("/"), { local_files_only: true });
    } catch (cause) {
      throw new SilkError("embedding_not_configured", `the local model ${directory} could not be loaded: ${cause instanceof Error ? cause.message : String(cause)}`);
    }
  }
}

/** The vectors of the pipeline's answer; `embedding_failed` for anything but one list of numbers per text, all of one length. */
function vectorsOf(output: unknown, count: number, directory: string): Float64Array[] {
  if (!Array.isArray(output) || output.length !== count) throw new SilkError("embedding_failed", `the local model ${directory} gave no vector per text`);
  const vectors = output.map((row: unknown) => {
    if (!Array.isArray(row) || row.length === 0 || !row.every((x) => typeof x === "number" && Number.isFinite(x))) {
      throw new SilkError("embedding_failed", `the local model ${directory} gave something other than a list of numbers`);
    }
    return Float64Array.from(row as number[]);
  });
  if (vectors.some((vector) => vector.length !== vectors[0].length)) throw new SilkError("embedding_failed", `the local model ${directory} gave vectors of different lengths`);
  return vectors;
}
