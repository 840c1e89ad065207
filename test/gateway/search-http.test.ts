/**
 * Embed and vector search over HTTP on a real `silk serve` (a child process) whose provider is the OpenAI-compatible
 * stub of test/helpers/embedding-stub.ts on loopback, configured through SILK_EMBED_* as an operator would:
 *
 * - AddV(Embed(text)) then SearchV(Embed(text)) through the project's query routes: the stub saw one POST per text
 *   at `<base>/embeddings` with the key as a bearer token, the model and the text, and the stored vector is the
 *   stub's answer;
 * - the stub answering 500 (every retry too) makes the call answer 502 `embedding_failed` and write nothing;
 * - the key never appears in an answer's body, nor in what the server prints;
 * - without SILK_EMBED_PROVIDER the server starts, warns, and Embed answers 503 `embedding_not_configured`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";
import { defaultAnswer, startEmbeddingStub, stubVector, type EmbeddingStub, type StubReply, type StubRequest } from "../helpers/embedding-stub.js";
import { startServer, type StartedServer } from "./serve-process.js";

afterAll(removeTemporaryDirectories);

const KEY = "sk-test-Zq8vV3nKey-never-shown";
const DIMENSION = 4;

const SCHEMA = `V::Note(dimension: ${DIMENSION}, metric: euclidean) { text: String }\n`;
const QUERIES = `
QUERY AddNote(text: String) =>
    n <- AddV<Note>(Embed(text), {text: text})
    RETURN n

QUERY Similar(text: String) =>
    n <- SearchV<Note>(Embed(text), 3)
    RETURN n

QUERY Nearest(v: [F64]) =>
    n <- SearchV<Note>(v, 100)
    RETURN n
`;

function project(): { dir: string; data: string } {
  const dir = temporaryDirectory();
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "schema.hx"), SCHEMA);
  writeFileSync(join(dir, "queries.hx"), QUERIES);
  return { dir, data: join(dir, "data") };
}

async function call(server: StartedServer, name: string, body: unknown): Promise<{ status: number; text: string; json: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/${name}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text) as Record<string, unknown> };
}

interface Note {
  readonly id: string;
  readonly text: string;
  readonly $distance?: number;
}

/** Every note, through a search whose vector is given (no Embed), so the count does not depend on the provider. */
async function notes(server: StartedServer): Promise<Note[]> {
  const answer = await call(server, "Nearest", { v: [0, 0, 0, 0] });
  expect(answer.status).toBe(200);
  return answer.json.n as Note[];
}

let server: StartedServer | undefined;
let stub: EmbeddingStub | undefined;
afterEach(async () => {
  if (server !== undefined) {
    server.child.kill("SIGTERM");
    await server.exited;
    server = undefined;
  }
  await stub?.close();
  stub = undefined;
});

describe("Embed over HTTP with an OpenAI-compatible provider", () => {
  it("embeds on write and on search, sends the key only to the provider, and fails cleanly when it fails", async () => {
    stub = await startEmbeddingStub({ dimension: DIMENSION });
    let failing = false;
    // Every reply consults `failing`, so the stub can fail (500) for a while, retries included.
    const reply = (request: StubRequest): StubReply => (failing ? { status: 500, body: { error: { message: "upstream exploded" } } } : defaultAnswer(request, DIMENSION));
    stub.script(...Array.from({ length: 200 }, () => reply));
    const { dir, data } = project();
    server = await startServer(["serve", "--project", dir, "--port", "0", "--data", data], {
      SILK_EMBED_PROVIDER: "openai",
      SILK_EMBED_BASE_URL: stub.baseUrl,
      SILK_EMBED_API_KEY: KEY,
      SILK_EMBED_MODEL: "stub-model",
      OPENAI_API_KEY: "",
    });
    const bodies: string[] = [];

    const texts = ["graph databases", "baking bread", "vector search engines"];
    const added: Note[] = [];
    for (const text of texts) {
      const answer = await call(server, "AddNote", { text });
      bodies.push(answer.text);
      expect(answer.status, answer.text).toBe(200);
      added.push(answer.json.n as Note);
    }
    expect(stub.requests).toHaveLength(texts.length);
    stub.requests.forEach((request, i) => {
      expect(request.method).toBe("POST");
      expect(request.path).toBe("/v1/embeddings");
      expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(request.body.model).toBe("stub-model");
      expect(request.body.input).toEqual([texts[i]]);
    });

    // The search embeds its text the same way, so each note's own text finds it first, at distance 0.
    for (const [i, text] of texts.entries()) {
      const answer = await call(server, "Similar", { text });
      bodies.push(answer.text);
      expect(answer.status, answer.text).toBe(200);
      const hits = answer.json.n as Note[];
      expect(hits[0].id).toBe(added[i].id);
      expect(hits[0].$distance).toBeCloseTo(0, 5);
      expect(hits.map((hit) => hit.id).sort()).toEqual(added.map((note) => note.id).sort());
    }
    expect(stub.requests).toHaveLength(texts.length * 2);
    expect(stub.requests.at(-1)!.body.input).toEqual([texts[2]]);
    // The stored vector is the provider's: a search by the stub's vector for a text, without Embed, finds that note.
    const direct = await call(server, "Nearest", { v: stubVector(texts[1], DIMENSION) });
    expect((direct.json.n as Note[])[0]).toMatchObject({ id: added[1].id, text: texts[1] });

    // The provider fails (500 on every attempt): 502 embedding_failed, and nothing is written.
    failing = true;
    const before = await notes(server);
    const requestsBefore = stub.requests.length;
    const failedAdd = await call(server, "AddNote", { text: "never stored" });
    bodies.push(failedAdd.text);
    expect(failedAdd.status).toBe(502);
    expect(failedAdd.json.error).toBe("embedding_failed");
    expect(stub.requests.length).toBeGreaterThan(requestsBefore); // it did ask (and retried) before giving up
    const failedSearch = await call(server, "Similar", { text: "graph databases" });
    bodies.push(failedSearch.text);
    expect(failedSearch.status).toBe(502);
    expect(failedSearch.json.error).toBe("embedding_failed");
    expect(await notes(server)).toEqual(before);

    // Healthy again, the same server embeds as before.
    failing = false;
    const recovered = await call(server, "AddNote", { text: "stored after all" });
    expect(recovered.status, recovered.text).toBe(200);
    expect(await notes(server)).toHaveLength(before.length + 1);

    for (const body of bodies) expect(body).not.toContain(KEY);
    expect(server.stdout()).not.toContain(KEY);
    expect(server.stderr()).not.toContain(KEY);
  }, 60_000);
});

describe("Embed without a provider over HTTP", () => {
  it("the server starts and warns; Embed answers 503 embedding_not_configured and writes nothing", async () => {
    const { dir, data } = project();
    server = await startServer(["serve", "--project", dir, "--port", "0", "--data", data], { SILK_EMBED_PROVIDER: "", OPENAI_API_KEY: "" });
    // The warning is a log line (stderr, as pino writes it here); it may come just after the listening line.
    for (let waited = 0; !/no embedding provider/.test(server.stdout() + server.stderr()) && waited < 5_000; waited += 20) {
      await new Promise((resume) => setTimeout(resume, 20));
    }
    expect(server.stdout() + server.stderr()).toMatch(/"level":40.*no embedding provider: Embed\(text\) will answer embedding_not_configured/);
    const added = await call(server, "AddNote", { text: "x" });
    expect(added.status).toBe(503);
    expect(added.json.error).toBe("embedding_not_configured");
    const searched = await call(server, "Similar", { text: "x" });
    expect(searched.status).toBe(503);
    expect(searched.json.error).toBe("embedding_not_configured");
    expect(await notes(server)).toEqual([]);
  }, 30_000);
});
