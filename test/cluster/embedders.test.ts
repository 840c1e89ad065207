/**
 * The embedding providers: the OpenAI-compatible client against a stub server on loopback (request shape, batching,
 * ordering, retries, timeouts, malformed answers, the key never in a message), the feature-hashing embedder
 * (determinism, similarity), the local-model embedder's missing-package and missing-directory paths, and the
 * environment parsing the servers start from, and `silk serve` logging its provider or refusing a bad one.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  batchesOf,
  embedderFromEnvironment,
  embedderStartMessage,
  FeatureHashingEmbedder,
  LocalModelEmbedder,
  OpenAiCompatibleEmbedder,
  stableHash32,
  type OpenAiCompatibleOptions,
} from "../../embedders/index.js";
import { SilkError, type ErrorCode } from "../../protocol/errors.js";
import { REPO, removeTemporaryDirectories, runSilk, temporaryDirectory } from "../cli/helpers.js";
import { startServer } from "../gateway/serve-process.js";
import { startEmbeddingStub, stubVector, type EmbeddingStub } from "../helpers/embedding-stub.js";

const KEY = "sk-test-SECRET-0123456789";

async function refused(promise: Promise<unknown>, code: ErrorCode): Promise<SilkError> {
  const error = await promise.then(
    () => undefined,
    (cause: unknown) => cause,
  );
  expect(error).toBeInstanceOf(SilkError);
  expect((error as SilkError).code).toBe(code);
  return error as SilkError;
}

function refusedSync(work: () => unknown, code: ErrorCode): SilkError {
  try {
    work();
  } catch (cause) {
    expect(cause).toBeInstanceOf(SilkError);
    expect((cause as SilkError).code).toBe(code);
    return cause as SilkError;
  }
  throw new Error(`expected ${code}, but nothing was thrown`);
}

function cosine(a: Float64Array, b: Float64Array): number {
  let dot = 0;
  for (let i = 0; i < a.length; i += 1) dot += a[i] * b[i];
  return dot;
}

describe("OpenAiCompatibleEmbedder", () => {
  let stub: EmbeddingStub;
  const waits: number[] = [];
  const make = (options: Partial<OpenAiCompatibleOptions> = {}): OpenAiCompatibleEmbedder =>
    new OpenAiCompatibleEmbedder({
      apiKey: KEY,
      baseUrl: stub.baseUrl,
      retries: 2,
      backoffMs: 10,
      backoffMaxMs: 40,
      random: () => 0.5,
      sleep: async (ms) => {
        waits.push(ms);
      },
      ...options,
    });

  beforeAll(async () => {
    stub = await startEmbeddingStub({ dimension: 4 });
  });
  afterAll(() => stub.close());
  afterEach(() => {
    stub.requests.length = 0;
    waits.length = 0;
  });

  it("posts {model, input} to /v1/embeddings with the bearer key, and returns vectors in input order", async () => {
    const embedder = make({ model: "m-1" });
    expect(embedder.name).toBe("openai-compatible m-1");
    const vectors = await embedder.embed(["alpha", "bravo!", "c"]);
    expect(stub.requests).toHaveLength(1);
    const [request] = stub.requests;
    expect(request.method).toBe("POST");
    expect(request.path).toBe("/v1/embeddings");
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.body).toEqual({ model: "m-1", input: ["alpha", "bravo!", "c"] });
    // The stub lists the data in reverse: the client puts each vector back at its index.
    expect(vectors.map((v) => Array.from(v))).toEqual([stubVector("alpha", 4), stubVector("bravo!", 4), stubVector("c", 4)]);
    expect(vectors[0]).toBeInstanceOf(Float64Array);
  });

  it("sends dimensions when configured and checks the answer has them", async () => {
    const vectors = await make({ dimensions: 4 }).embed(["x"]);
    expect(stub.requests[0].body).toEqual({ model: "text-embedding-3-small", input: ["x"], dimensions: 4 });
    expect(vectors[0]).toHaveLength(4);
    const error = await refused(make({ dimensions: 8 }).embed(["x"]), "embedding_failed");
    expect(error.message).toContain("answered 4 dimensions; 8 were asked for");
  });

  it("batches by text count and by bytes, keeping the order across batches", async () => {
    const texts = Array.from({ length: 7 }, (_, i) => `text number ${i}`);
    const vectors = await make({ batchTextsMax: 3 }).embed(texts);
    expect(stub.requests.map((r) => (r.body.input as string[]).length)).toEqual([3, 3, 1]);
    expect(vectors.map((v) => Array.from(v))).toEqual(texts.map((t) => stubVector(t, 4)));
    expect(batchesOf(["aaaa", "bbbb", "cccccccccc", "d"], 10, 8)).toEqual([["aaaa", "bbbb"], ["cccccccccc"], ["d"]]);
    expect(batchesOf([], 10, 8)).toEqual([]);
  });

  it("answers an empty list without a request", async () => {
    expect(await make().embed([])).toEqual([]);
    expect(stub.requests).toHaveLength(0);
  });

  it("retries a 429 (honouring Retry-After up to the cap) and a 503, then succeeds", async () => {
    stub.script({ status: 429, body: { error: { message: "slow down" } }, headers: { "retry-after": "1" } }, { status: 503, body: "busy" });
    const vectors = await make().embed(["ok"]);
    expect(Array.from(vectors[0])).toEqual(stubVector("ok", 4));
    expect(stub.requests).toHaveLength(3);
    // Attempt 0: jitter 0.5 × 10 = 5, but Retry-After 1 s capped at 40; attempt 1: 0.5 × 20 = 10.
    expect(waits).toEqual([40, 10]);
  });

  it("gives up after the retries with embedding_failed, the status and the provider's message", async () => {
    stub.script(...Array.from({ length: 3 }, () => ({ status: 500, body: { error: { message: "the model is overloaded" } } })));
    const error = await refused(make().embed(["x"]), "embedding_failed");
    expect(stub.requests).toHaveLength(3);
    expect(error.message).toContain("HTTP 500");
    expect(error.message).toContain("the model is overloaded");
    expect(error.message).toContain("after 3 attempts");
  });

  it("does not retry a 400 or 401, and never shows the key even when the provider echoes it", async () => {
    stub.script({ status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}` } } });
    const error = await refused(make().embed(["x"]), "embedding_failed");
    expect(stub.requests).toHaveLength(1);
    expect(error.message).toContain("HTTP 401");
    expect(error.message).not.toContain(KEY);
    expect(error.message).toContain("<redacted>");
    stub.script({ status: 400, body: "plain text problem" });
    expect((await refused(make().embed(["x"]), "embedding_failed")).message).toContain("plain text problem");
  });

  it("times out a provider that does not answer, without retrying", async () => {
    stub.script({ delayMs: 500 });
    const error = await refused(make({ timeoutMs: 50 }).embed(["x"]), "embedding_failed");
    expect(error.message).toContain("did not answer within 50 ms");
    expect(stub.requests).toHaveLength(1);
  });

  it("retries a dropped connection and reports an unreachable provider", async () => {
    stub.script({ hangUp: true });
    expect(await make().embed(["x"])).toHaveLength(1);
    expect(stub.requests).toHaveLength(2);
    const closed = make({ baseUrl: "http://127.0.0.1:1/v1", retries: 1 });
    const error = await refused(closed.embed(["x"]), "embedding_failed");
    expect(error.message).toContain("could not be reached");
    expect(error.message).toContain("after 2 attempts");
  });

  it("refuses malformed answers with embedding_failed", async () => {
    const cases: [unknown, string][] = [
      ["not json", "not JSON"],
      [{ object: "list" }, "without a data list"],
      [{ data: [{ index: 0, embedding: [1, 2] }] }, "1 embeddings for 2 texts"],
      [{ data: [{ index: 0, embedding: [1, 2] }, { index: 0, embedding: [3, 4] }] }, "index 0"],
      [{ data: [{ index: 0, embedding: [1, 2] }, { index: 2, embedding: [3, 4] }] }, "index 2"],
      [{ data: [{ index: 0, embedding: [1, "2"] }, { index: 1, embedding: [3, 4] }] }, "non-number"],
      [{ data: [{ index: 0, embedding: [1, null] }, { index: 1, embedding: [3, 4] }] }, "non-number"],
      [{ data: [{ index: 0, embedding: [1, 2] }, { index: 1, embedding: [3, 4, 5] }] }, "different lengths"],
      [{ data: [{ index: 0, embedding: [] }, { index: 1, embedding: [3] }] }, "without an embedding list"],
      [{ data: [null, { index: 1, embedding: [3] }] }, "index undefined"],
    ];
    for (const [body, expected] of cases) {
      stub.script({ status: 200, body });
      const error = await refused(make().embed(["a", "b"]), "embedding_failed");
      expect(error.message).toContain(expected);
    }
  });

  it("refuses vectors of different lengths across batches", async () => {
    stub.script({ status: 200, body: { data: [{ index: 0, embedding: [1, 2] }] } }, { status: 200, body: { data: [{ index: 0, embedding: [1, 2, 3] }] } });
    const error = await refused(make({ batchTextsMax: 1 }).embed(["a", "b"]), "embedding_failed");
    expect(error.message).toContain("different lengths");
  });

  it("refuses bad texts with invalid_value before sending anything", async () => {
    await refused(make().embed(["ok", ""]), "invalid_value");
    await refused(make().embed(["   "]), "invalid_value");
    await refused(make().embed([42 as unknown as string]), "invalid_value");
    await refused(make().embed(["x".repeat(1_048_577)]), "invalid_value");
    expect(stub.requests).toHaveLength(0);
  });

  it("refuses bad settings with invalid_option", () => {
    refusedSync(() => new OpenAiCompatibleEmbedder({ apiKey: "" }), "invalid_option");
    refusedSync(() => new OpenAiCompatibleEmbedder({ apiKey: KEY, baseUrl: "not a url" }), "invalid_option");
    refusedSync(() => new OpenAiCompatibleEmbedder({ apiKey: KEY, baseUrl: "ftp://example.com" }), "invalid_option");
    refusedSync(() => new OpenAiCompatibleEmbedder({ apiKey: KEY, dimensions: 0 }), "invalid_option");
    refusedSync(() => new OpenAiCompatibleEmbedder({ apiKey: KEY, retries: -1 }), "invalid_option");
    refusedSync(() => new OpenAiCompatibleEmbedder({ apiKey: KEY, timeoutMs: 0.5 }), "invalid_option");
  });

  it("refuses a base URL with credentials (the key goes in the header), without echoing them", () => {
    const error = refusedSync(() => make({ baseUrl: "http://user:pw-secret@127.0.0.1:9/v1" }), "invalid_option");
    expect(error.message).not.toContain("pw-secret");
  });
});

describe("FeatureHashingEmbedder", () => {
  it("is deterministic, unit length, named as what it is", async () => {
    const embedder = new FeatureHashingEmbedder();
    expect(embedder.name).toBe("feature-hashing 256");
    const [a, b] = await embedder.embed(["The quick brown fox", "The quick brown fox"]);
    expect(a).toHaveLength(256);
    expect(Array.from(a)).toEqual(Array.from(b));
    expect(cosine(a, a)).toBeCloseTo(1, 12);
    // Fixed across runs and machines: FNV-1a then murmur3's fmix32, values computed independently (Python).
    expect(["", "a", "silk", "Silk", "héllo"].map(stableHash32)).toEqual([2872998923, 444641715, 562430392, 1544711616, 4198468525]);
    expect(stableHash32("silk")).not.toBe(stableHash32("Silk"));
  });

  it("gives texts that share words a higher cosine similarity", async () => {
    const embedder = new FeatureHashingEmbedder({ dimensions: 512 });
    const [query, close, far] = await embedder.embed([
      "graph database with vector search",
      "a vector search engine inside a graph database",
      "recipes for sourdough bread and pastry",
    ]);
    expect(cosine(query, close)).toBeGreaterThan(0.4);
    expect(cosine(query, close)).toBeGreaterThan(cosine(query, far) + 0.3);
    // Case and punctuation do not matter; word order matters a little (pairs of words).
    const [lower, upper, reordered] = await embedder.embed(["graph database", "GRAPH, Database!", "database graph"]);
    expect(Array.from(lower)).toEqual(Array.from(upper));
    expect(cosine(lower, reordered)).toBeLessThan(1 - 1e-9);
    expect(cosine(lower, reordered)).toBeGreaterThan(0.5);
  });

  it("embeds punctuation-only text, and refuses bad input and dimensions", async () => {
    const embedder = new FeatureHashingEmbedder({ dimensions: 8 });
    const [symbols] = await embedder.embed(["?!"]);
    expect(cosine(symbols, symbols)).toBeCloseTo(1, 12);
    await refused(embedder.embed([""]), "invalid_value");
    refusedSync(() => new FeatureHashingEmbedder({ dimensions: 0 }), "invalid_value");
    refusedSync(() => new FeatureHashingEmbedder({ dimensions: 2.5 }), "invalid_value");
  });
});

describe("LocalModelEmbedder", () => {
  const directory = mkdtempSync(join(tmpdir(), "silk-model-"));
  writeFileSync(join(directory, "config.json"), "{}");
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it("without @huggingface/transformers installed: embedding_not_configured naming the package and how to install it", async () => {
    const embedder = new LocalModelEmbedder({ modelDirectory: directory });
    const error = await refused(embedder.embed(["x"]), "embedding_not_configured");
    expect(error.message).toContain("@huggingface/transformers");
    expect(error.message).toContain("npm install @huggingface/transformers");
  });

  it("without the model directory or its config.json: embedding_not_configured naming it", async () => {
    const missing = join(directory, "nope");
    expect((await refused(new LocalModelEmbedder({ modelDirectory: missing }).embed(["x"]), "embedding_not_configured")).message).toContain(missing);
    const empty = mkdtempSync(join(tmpdir(), "silk-empty-model-"));
    try {
      expect((await refused(new LocalModelEmbedder({ modelDirectory: empty }).embed(["x"]), "embedding_not_configured")).message).toContain("config.json");
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("runs the feature-extraction pipeline offline with mean pooling and normalisation", async () => {
    const calls: unknown[] = [];
    const env = { allowRemoteModels: true, allowLocalModels: false, localModelPath: "" };
    const transformers = {
      env,
      pipeline: async (task: string, model: string, options: unknown) => {
        calls.push({ task, model, options });
        return async (texts: string[], run: unknown) => {
          calls.push({ texts, run });
          return { tolist: () => texts.map((text) => [text.length, 0.5]) };
        };
      },
    };
    const embedder = new LocalModelEmbedder({ modelDirectory: directory, importTransformers: async () => ({ default: transformers }) });
    const vectors = await embedder.embed(["ab", "abc"]);
    expect(vectors.map((v) => Array.from(v))).toEqual([[2, 0.5], [3, 0.5]]);
    await embedder.embed(["x"]);
    expect(env.allowRemoteModels).toBe(false);
    expect(env.localModelPath).toBe(join(directory, ".."));
    expect(calls.filter((call) => (call as { task?: string }).task !== undefined)).toHaveLength(1);
    expect(calls[0]).toEqual({ task: "feature-extraction", model: directory.split("/").pop(), options: { local_files_only: true } });
    expect(calls[1]).toEqual({ texts: ["ab", "abc"], run: { pooling: "mean", normalize: true } });
  });
});

describe("embedderFromEnvironment", () => {
  it("gives no provider when nothing is set, and a warning line to log", () => {
    expect(embedderFromEnvironment({})).toBeUndefined();
    expect(embedderFromEnvironment({ SILK_EMBED_PROVIDER: "" })).toBeUndefined();
    expect(embedderStartMessage(undefined).level).toBe("warn");
    expect(embedderStartMessage(undefined).message).toContain("embedding_not_configured");
    expect(embedderStartMessage(new FeatureHashingEmbedder())).toEqual({ level: "info", message: "embedding provider: feature-hashing 256" });
  });

  it("reads openai, local and hashing", () => {
    expect(embedderFromEnvironment({ SILK_EMBED_PROVIDER: "openai", SILK_EMBED_API_KEY: KEY })?.name).toBe("openai-compatible text-embedding-3-small");
    const configured = embedderFromEnvironment({
      SILK_EMBED_PROVIDER: "OpenAI",
      OPENAI_API_KEY: KEY,
      SILK_EMBED_MODEL: "nomic-embed-text",
      SILK_EMBED_BASE_URL: "http://127.0.0.1:11434/v1",
      SILK_EMBED_DIMENSIONS: "768",
    });
    expect(configured?.name).toBe("openai-compatible nomic-embed-text (768 dimensions)");
    // HelixDB's habit: OPENAI_API_KEY alone selects OpenAI.
    expect(embedderFromEnvironment({ OPENAI_API_KEY: KEY })).toBeInstanceOf(OpenAiCompatibleEmbedder);
    expect(embedderFromEnvironment({ SILK_EMBED_PROVIDER: "hashing" })?.name).toBe("feature-hashing 256");
    expect(embedderFromEnvironment({ SILK_EMBED_PROVIDER: "hashing", SILK_EMBED_DIMENSIONS: "64" })?.name).toBe("feature-hashing 64");
    expect(embedderFromEnvironment({ SILK_EMBED_PROVIDER: "local", SILK_EMBED_MODEL_DIR: tmpdir() })).toBeInstanceOf(LocalModelEmbedder);
  });

  it("refuses unknown providers, missing keys or directories, and bad numbers with invalid_option", () => {
    const cases: [NodeJS.ProcessEnv, string][] = [
      [{ SILK_EMBED_PROVIDER: "cohere" }, "not a provider"],
      [{ SILK_EMBED_PROVIDER: "openai" }, "SILK_EMBED_API_KEY"],
      [{ SILK_EMBED_PROVIDER: "local" }, "SILK_EMBED_MODEL_DIR"],
      [{ SILK_EMBED_PROVIDER: "local", SILK_EMBED_MODEL_DIR: join(tmpdir(), "silk-no-such-model") }, "is not a directory"],
      [{ SILK_EMBED_PROVIDER: "hashing", SILK_EMBED_DIMENSIONS: "0" }, "SILK_EMBED_DIMENSIONS"],
      [{ SILK_EMBED_PROVIDER: "hashing", SILK_EMBED_DIMENSIONS: "12abc" }, "SILK_EMBED_DIMENSIONS"],
      [{ SILK_EMBED_PROVIDER: "openai", OPENAI_API_KEY: KEY, SILK_EMBED_DIMENSIONS: "99999" }, "SILK_EMBED_DIMENSIONS"],
      [{ SILK_EMBED_PROVIDER: "openai", OPENAI_API_KEY: KEY, SILK_EMBED_BASE_URL: "nope" }, "not a URL"],
    ];
    for (const [env, expected] of cases) {
      const error = refusedSync(() => embedderFromEnvironment(env), "invalid_option");
      expect(error.message).toContain(expected);
      expect(error.message).not.toContain(KEY);
    }
  });
});

describe("silk serve's embedding configuration", () => {
  afterAll(removeTemporaryDirectories);
  // The provider line comes after the signal handlers are installed, so a SIGTERM once it shows closes cleanly.
  const serve = async (env: NodeJS.ProcessEnv, line: RegExp): Promise<string> => {
    const server = await startServer(["serve", "--project", join(REPO, "examples"), "--port", "0", "--data", join(temporaryDirectory(), "data")], env);
    for (let waited = 0; !line.test(server.stderr()) && waited < 10_000; waited += 20) await new Promise((done) => setTimeout(done, 20));
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    return server.stderr();
  };

  it("logs the provider at start, or warns that Embed will answer embedding_not_configured", async () => {
    const provider = /"level":30.*embedding provider: feature-hashing 64/;
    expect(await serve({ SILK_EMBED_PROVIDER: "hashing", SILK_EMBED_DIMENSIONS: "64" }, provider)).toMatch(provider);
    const warning = /"level":40.*no embedding provider: Embed\(text\) will answer embedding_not_configured/;
    expect(await serve({ SILK_EMBED_PROVIDER: "", OPENAI_API_KEY: "" }, warning)).toMatch(warning);
  });

  it("refuses to start with a bad provider setting, without showing the key", async () => {
    const run = await runSilk(["serve", "--project", join(REPO, "examples"), "--port", "0", "--data", join(temporaryDirectory(), "data")], {
      env: { SILK_EMBED_PROVIDER: "openai", SILK_EMBED_API_KEY: "", OPENAI_API_KEY: "", SILK_EMBED_DIMENSIONS: "12" },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/silk serve: invalid_option: SILK_EMBED_PROVIDER=openai needs an API key/);
  });
});

describe("a named model (a QUERY's #[model(\"name\")])", () => {
  it("OpenAI-compatible: sends that model instead of the configured one, and names it in failures", async () => {
    const stub = await startEmbeddingStub({ dimension: 4 });
    try {
      const embedder = new OpenAiCompatibleEmbedder({ apiKey: KEY, baseUrl: stub.baseUrl, model: "m-1", retries: 0 });
      await embedder.embed(["x"], "m-2");
      await embedder.embed(["y"]);
      expect(stub.requests.map((request) => request.body.model)).toEqual(["m-2", "m-1"]);
      stub.script({ status: 404, body: { error: { message: "no such model" } } });
      const error = await refused(embedder.embed(["x"], "m-404"), "embedding_failed");
      expect(error.message).toContain("(model m-404)");
      const sent = stub.requests.length;
      for (const bad of ["", "   ", "a\nb", "x".repeat(257)]) await refused(embedder.embed(["x"], bad), "invalid_value");
      expect(stub.requests).toHaveLength(sent);
    } finally {
      await stub.close();
    }
  });

  it("feature hashing: each name is a model of its own, deterministic, unrelated to the others", async () => {
    const embedder = new FeatureHashingEmbedder({ dimensions: 512 });
    const text = "graph database with vector search";
    const [own] = await embedder.embed([text]);
    const [a1] = await embedder.embed([text], "model-a");
    const [a2] = await embedder.embed([text], "model-a");
    const [b] = await embedder.embed([text], "model-b");
    expect(Array.from(a1)).toEqual(Array.from(a2));
    expect(cosine(a1, a1)).toBeCloseTo(1, 12);
    expect(Math.abs(cosine(a1, own))).toBeLessThan(0.5);
    expect(Math.abs(cosine(a1, b))).toBeLessThan(0.5);
    // Within one model, shared words still count.
    const [close] = await embedder.embed(["a vector search engine inside a graph database"], "model-a");
    expect(cosine(a1, close)).toBeGreaterThan(0.4);
    await refused(embedder.embed([text], ""), "invalid_value");
  });

  it("local: runs the model directory of that name beside the configured one, never outside their parent", async () => {
    const parent = mkdtempSync(join(tmpdir(), "silk-models-"));
    try {
      for (const name of ["base", "other", join("org", "third")]) {
        mkdirSync(join(parent, name), { recursive: true });
        writeFileSync(join(parent, name, "config.json"), "{}");
      }
      const loaded: string[] = [];
      const env = { allowRemoteModels: true, allowLocalModels: false, localModelPath: "" };
      const transformers = {
        env,
        pipeline: async (_task: string, model: string) => {
          loaded.push(model);
          return async (texts: string[]) => ({ tolist: () => texts.map(() => [model.length, 1]) });
        },
      };
      const embedder = new LocalModelEmbedder({ modelDirectory: join(parent, "base"), importTransformers: async () => transformers });
      expect((await embedder.embed(["x"], "other")).map((v) => Array.from(v))).toEqual([[5, 1]]);
      expect((await embedder.embed(["x"], "org/third")).map((v) => Array.from(v))).toEqual([[9, 1]]);
      expect((await embedder.embed(["x"])).map((v) => Array.from(v))).toEqual([[4, 1]]);
      await embedder.embed(["y"], "other");
      expect(loaded).toEqual(["other", "org/third", "base"]);
      expect(env.localModelPath).toBe(parent);
      expect((await refused(embedder.embed(["x"], "missing"), "embedding_not_configured")).message).toContain("#[model(\"name\")]");
      for (const outside of ["../elsewhere", "/etc", "org/../../x", "."]) await refused(embedder.embed(["x"], outside), "invalid_value");
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
