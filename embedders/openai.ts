/**
 * The OpenAI-compatible HTTP embedder: POST `{baseUrl}/embeddings` with `{model, input: [texts]}` (and `dimensions`
 * when configured) and `Authorization: Bearer <key>`, the protocol of OpenAI, Azure's v1 surface, vLLM, Ollama's
 * /v1, LM Studio, Together and most hosted gateways.
 *
 * Invariants:
 * - The model sent is the one the call names (a QUERY's `#[model("name")]`), else the configured one; `dimensions`,
 *   when configured, is sent with every model, since the vector index it fills has one size.
 * - One vector per text, in the order of the texts, whatever order the provider answers in (`data[].index`).
 * - Requests carry at most `batchTextsMax` texts and about `batchBytesMax` bytes of text (a longer single text goes
 *   alone); batches run one after another.
 * - Every failure is `embedding_failed` with the HTTP status and the provider's own message; the API key never
 *   appears in any message (it is scrubbed even when the provider echoes it). A base URL may not carry credentials.
 * - 429, 5xx and connection failures are retried at most `retries` times with exponential backoff and full jitter
 *   (a 429's Retry-After is honoured up to `backoffMaxMs`); a timeout is not retried, so one request costs at most
 *   about (retries + 1) × timeoutMs plus the backoffs.
 * - A malformed answer (not JSON, wrong count, missing or repeated index, non-finite numbers, vectors of mixed
 *   lengths across the whole call, or not the configured dimension) is `embedding_failed`; nothing partial returns.
 * Time and randomness are passed in (`sleep`, `random`) so tests of retries are exact.
 */
import { SilkError } from "../protocol/errors.js";
import { backoffMs, type Backoff } from "../platform/backoff.js";
import type { Embedder } from "../protocol/embedding.js";
import { checkDimensions, checkEmbedModel, checkEmbedTexts } from "./input.js";

export const OPENAI_BASE_URL_DEFAULT = "https://api.openai.com/v1";
export const OPENAI_MODEL_DEFAULT = "text-embedding-3-small";
export const EMBED_BATCH_TEXTS_MAX = 256;
export const EMBED_BATCH_BYTES_MAX = 512 * 1024;
export const EMBED_TIMEOUT_MS_DEFAULT = 30_000;
export const EMBED_RETRIES_DEFAULT = 3;
export const EMBED_BACKOFF_MS_DEFAULT = 250;
export const EMBED_BACKOFF_MAX_MS_DEFAULT = 4_000;
/** The largest answer read from a provider; 256 texts × 3,072 numbers as JSON is about 16 MiB. */
export const EMBED_RESPONSE_BYTES_MAX = 64 * 1024 * 1024;
/** How much of a provider's error text a message quotes. */
const PROVIDER_MESSAGE_CHARS_MAX = 300;

export interface OpenAiCompatibleOptions {
  readonly apiKey: string;
  /** Default OPENAI_BASE_URL_DEFAULT; `/embeddings` is appended. */
  readonly baseUrl?: string;
  readonly model?: string;
  /** Sent as `dimensions` (models that can shorten their vectors), and checked on every answer. */
  readonly dimensions?: number;
  readonly batchTextsMax?: number;
  readonly batchBytesMax?: number;
  readonly timeoutMs?: number;
  readonly retries?: number;
  readonly backoffMs?: number;
  readonly backoffMaxMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** In [0, 1): the jitter's source. */
  readonly random?: () => number;
}

/** What one attempt gave: vectors, or a failure that may be retried. */
type Attempt = { readonly vectors: Float64Array[] } | { readonly failure: string; readonly retry: boolean; readonly retryAfterMs?: number };

export class OpenAiCompatibleEmbedder implements Embedder {
  readonly name: string;
  private readonly endpoint: string;
  /** The endpoint as messages show it: no credentials, no query. */
  private readonly shownEndpoint: string;
  private readonly apiKey: string;
  private readonly model: string;
  private readonly dimensions: number | undefined;
  private readonly batchTextsMax: number;
  private readonly batchBytesMax: number;
  private readonly timeoutMs: number;
  private readonly retries: number;
  /** Full jitter (AWS's): a random wait below the exponential ceiling, so that many clients spread out. */
  private readonly backoff: Backoff;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;

  constructor(options: OpenAiCompatibleOptions) {
    if (typeof options.apiKey !== "string" || options.apiKey === "") throw new SilkError("invalid_option", "the OpenAI-compatible embedder needs an API key");
    const base = (options.baseUrl ?? OPENAI_BASE_URL_DEFAULT).replace(/\/+$/, "");
    let url: URL;
    try {
      url = new URL(`${base}/embeddings`);
    } catch {
      throw new SilkError("invalid_option", `the embedding base URL is not a URL: ${JSON.stringify(base.replace(/\/\/[^/@]*@/, "//"))}`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new SilkError("invalid_option", `the embedding base URL must be http or https, got ${url.protocol}`);
    if (url.username !== "" || url.password !== "") {
      throw new SilkError("invalid_option", "the embedding base URL must not carry credentials; give the key as SILK_EMBED_API_KEY");
    }
    this.endpoint = url.href;
    this.shownEndpoint = `${url.protocol}//${url.host}${url.pathname}`;
    this.apiKey = options.apiKey;
    this.model = options.model ?? OPENAI_MODEL_DEFAULT;
    this.dimensions = options.dimensions === undefined ? undefined : checkDimensions(options.dimensions, "the embedding dimensions", "invalid_option");
    this.batchTextsMax = positiveWhole(options.batchTextsMax ?? EMBED_BATCH_TEXTS_MAX, "batchTextsMax");
    this.batchBytesMax = positiveWhole(options.batchBytesMax ?? EMBED_BATCH_BYTES_MAX, "batchBytesMax");
    this.timeoutMs = positiveWhole(options.timeoutMs ?? EMBED_TIMEOUT_MS_DEFAULT, "timeoutMs");
    this.retries = wholeAtLeastZero(options.retries ?? EMBED_RETRIES_DEFAULT, "retries");
    this.backoff = {
      firstMs: wholeAtLeastZero(options.backoffMs ?? EMBED_BACKOFF_MS_DEFAULT, "backoffMs"),
      maxMs: wholeAtLeastZero(options.backoffMaxMs ?? EMBED_BACKOFF_MAX_MS_DEFAULT, "backoffMaxMs"),
      jitter: "full",
    };
    this.sleep = options.sleep ?? ((ms) => new Promise((done) => setTimeout(done, ms)));
    this.random = options.random ?? Math.random;
    this.name = `openai-compatible ${this.model}${this.dimensions === undefined ? "" : ` (${this.dimensions} dimensions)`}`;
  }

  async embed(texts: readonly string[], model?: string): Promise<Float64Array[]> {
    checkEmbedTexts(texts);
    checkEmbedModel(model);
    const chosen = model ?? this.model;
    const vectors: Float64Array[] = [];
    for (const batch of batchesOf(texts, this.batchTextsMax, this.batchBytesMax)) {
      const answer = await this.embedBatch(batch, chosen);
      const length = vectors[0]?.length ?? answer[0].length;
      if (answer.some((vector) => vector.length !== length)) {
        throw this.failed(chosen, `answered vectors of different lengths (${length} and ${answer.find((v) => v.length !== length)!.length})`);
      }
      vectors.push(...answer);
    }
    return vectors;
  }

  /** One batch, with the retries. */
  private async embedBatch(texts: readonly string[], model: string): Promise<Float64Array[]> {
    for (let attempt = 0; ; attempt += 1) {
      const result = await this.attempt(texts, model);
      if ("vectors" in result) return result.vectors;
      if (!result.retry || attempt >= this.retries) {
        const tries = attempt + 1;
        throw this.failed(model, `${result.failure}${tries > 1 ? ` (after ${tries} attempts)` : ""}`);
      }
      const waitMs = Math.max(backoffMs(this.backoff, attempt, this.random), Math.min(result.retryAfterMs ?? 0, this.backoff.maxMs));
      await this.sleep(waitMs);
    }
  }

  private async attempt(texts: readonly string[], model: string): Promise<Attempt> {
    const body: Record<string, unknown> = { model, input: texts };
    if (this.dimensions !== undefined) body.dimensions = this.dimensions;
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.endpoint, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${this.apiKey}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await readCapped(response, EMBED_RESPONSE_BYTES_MAX);
    } catch (cause) {
      const name = (cause as { name?: unknown } | null)?.name;
      if (name === "TimeoutError" || name === "AbortError") return { failure: `did not answer within ${this.timeoutMs} ms`, retry: false };
      if (cause instanceof SilkError) return { failure: cause.message, retry: false };
      return { failure: `could not be reached: ${describeCause(cause)}`, retry: true };
    }
    if (!response.ok) {
      const retry = response.status === 429 || response.status >= 500;
      return { failure: `answered HTTP ${response.status}: ${providerMessage(text)}`, retry, retryAfterMs: retryAfterMs(response.headers.get("retry-after")) };
    }
    return { vectors: this.vectorsOf(text, texts.length, model) };
  }

  /** The vectors of a 2xx answer, in input order; throws `embedding_failed` for anything malformed. */
  private vectorsOf(text: string, count: number, model: string): Float64Array[] {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw this.failed(model, `answered something that is not JSON: ${quote(text)}`);
    }
    const data = (json as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw this.failed(model, `answered without a data list: ${quote(text)}`);
    if (data.length !== count) throw this.failed(model, `answered ${data.length} embeddings for ${count} texts`);
    const vectors = new Array<Float64Array | undefined>(count);
    data.forEach((item: unknown, position) => {
      const { index, embedding } = (item ?? {}) as { index?: unknown; embedding?: unknown };
      if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= count || vectors[index as number] !== undefined) {
        throw this.failed(model, `answered item ${position} with index ${JSON.stringify(index)}; want each of 0 to ${count - 1} once`);
      }
      if (!Array.isArray(embedding) || embedding.length === 0) throw this.failed(model, `answered item ${position} without an embedding list`);
      const vector = new Float64Array(embedding.length);
      embedding.forEach((component: unknown, i) => {
        if (typeof component !== "number" || !Number.isFinite(component)) throw this.failed(model, `answered item ${position} with a non-number at ${i}: ${quote(JSON.stringify(component) ?? String(component))}`);
        vector[i] = component;
      });
      if (this.dimensions !== undefined && vector.length !== this.dimensions) throw this.failed(model, `answered ${vector.length} dimensions; ${this.dimensions} were asked for`);
      vectors[index as number] = vector;
    });
    const length = vectors[0]!.length;
    if (vectors.some((vector) => vector!.length !== length)) throw this.failed(model, "answered vectors of different lengths");
    return vectors as Float64Array[];
  }

  private failed(model: string, what: string): SilkError {
    const message = `embedding provider ${this.shownEndpoint} (model ${model}) ${what}`;
    return new SilkError("embedding_failed", message.split(this.apiKey).join("<redacted>"));
  }
}

/** Consecutive batches of at most `textsMax` texts and (unless one text alone is larger) `bytesMax` bytes. */
export function batchesOf(texts: readonly string[], textsMax: number, bytesMax: number): string[][] {
  const batches: string[][] = [];
  let current: string[] = [];
  let bytes = 0;
  for (const text of texts) {
    const size = Buffer.byteLength(text, "utf8");
    if (current.length > 0 && (current.length >= textsMax || bytes + size > bytesMax)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(text);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

async function readCapped(response: Response, bytesMax: number): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > bytesMax) {
    await response.body?.cancel();
    throw new SilkError("embedding_failed", `answered ${declared} bytes; the limit is ${bytesMax}`);
  }
  if (response.body === null) return "";
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > bytesMax) {
      await reader.cancel();
      throw new SilkError("embedding_failed", `answered more than ${bytesMax} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** OpenAI's `{"error": {"message": ...}}`, a plain `{"error": "..."}` or `{"message": ...}`, else the text itself. */
function providerMessage(text: string): string {
  try {
    const json = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const error = json.error;
    if (typeof error === "string") return quote(error);
    if (typeof (error as { message?: unknown } | null)?.message === "string") return quote((error as { message: string }).message);
    if (typeof json.message === "string") return quote(json.message);
    if (typeof json.detail === "string") return quote(json.detail);
  } catch {
    // Not JSON: quote the text as it is.
  }
  return text.trim() === "" ? "(empty body)" : quote(text);
}

function quote(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > PROVIDER_MESSAGE_CHARS_MAX ? `${flat.slice(0, PROVIDER_MESSAGE_CHARS_MAX)}…` : flat;
}

/** Retry-After in seconds or as an HTTP date, in milliseconds; undefined when absent or unreadable. */
function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  if (/^[0-9]+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function describeCause(cause: unknown): string {
  const inner = (cause as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof inner?.code === "string") return inner.code;
  if (typeof inner?.message === "string") return inner.message;
  return cause instanceof Error ? cause.message : String(cause);
}

function positiveWhole(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 1) throw new SilkError("invalid_option", `${what} must be a whole number of at least 1, got ${String(value)}`);
  return value;
}

function wholeAtLeastZero(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 0) throw new SilkError("invalid_option", `${what} must be a whole number of at least 0, got ${String(value)}`);
  return value;
}
