/**
 * `POST /mcp` with the official MCP SDK's own client over real HTTP (StreamableHTTPClientTransport) against a real
 * gateway: the `#[mcp]` queries are the tools (name, doc comment, JSON Schema of the parameters), calling one runs
 * the query as one transaction, `#[model("name")]` reaches the embedding provider, a bad argument is a tool error
 * with Silk's code that writes nothing, an unknown tool is a protocol error; the HTTP-level refusals (GET, a web
 * page's Origin) have their codes; a schemaless server lists no tools; a QUERY named mcp keeps its route.
 */
import type { FastifyInstance } from "fastify";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode as McpErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { FeatureHashingEmbedder } from "../../embedders/index.js";
import type { Embedder } from "../../protocol/embedding.js";
import { listeningGateway } from "../helpers/gateway.js";

const PROJECT = `N::Note { text: String, priority: U8, due: Date }
V::Memory(dimension: 64) { text: String }

// Remembers a text
// for later recall.
#[mcp]
#[model("memory-model")]
QUERY Remember(text: String) =>
    memory <- AddV<Memory>(Embed(text), {text: text})
    RETURN memory

// Recalls the memories nearest to a text.
#[mcp] #[model("memory-model")]
QUERY Recall(text: String, k: I64) =>
    memories <- SearchV<Memory>(Embed(text), k)
    RETURN memories::{text}

#[mcp]
QUERY AddNote(text: String, priority: U8, due?: Date) =>
    note <- AddN<Note>({text: text, priority: priority, due: due})
    RETURN note

// Not offered: it has no #[mcp].
QUERY CountNotes() =>
    n <- N<Note>::COUNT
    RETURN n
`;

/** The hashing embedder, recording the model of every call. */
class RecordingEmbedder implements Embedder {
  readonly name = "recording hashing";
  readonly models: (string | undefined)[] = [];
  private readonly inner = new FeatureHashingEmbedder({ dimensions: 64 });

  embed(texts: readonly string[], model?: string): Promise<Float64Array[]> {
    this.models.push(model);
    return this.inner.embed(texts, model);
  }
}

interface Served {
  readonly database: Database;
  readonly app: FastifyInstance;
  readonly base: string;
}

async function serve(schema: string | undefined, embedder?: Embedder): Promise<Served> {
  const database = await Database.open({ storage: "memory", ...(schema === undefined ? {} : { schema: [{ file: "project.hx", text: schema }] }), ...(embedder === undefined ? {} : { embedder }) });
  const { app, base } = await listeningGateway(database);
  return { database, app, base };
}

async function connect(base: string): Promise<Client> {
  const client = new Client({ name: "silk-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
  return client;
}

/** The Silk error a tool result carries as its text. */
function toolError(result: Awaited<ReturnType<Client["callTool"]>>): { error: string; msg: string } {
  expect(result.isError).toBe(true);
  const content = result.content as { type: string; text: string }[];
  expect(content).toHaveLength(1);
  expect(content[0].type).toBe("text");
  return JSON.parse(content[0].text) as { error: string; msg: string };
}

const embedder = new RecordingEmbedder();
let served: Served;
let client: Client;

beforeAll(async () => {
  served = await serve(PROJECT, embedder);
  client = await connect(served.base);
});

afterAll(async () => {
  await client?.close();
  await served?.app.close();
  await served?.database.close();
});

async function noteCount(): Promise<number> {
  const response = await fetch(`${served.base}/CountNotes`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
  return ((await response.json()) as { n: number }).n;
}

describe("tools/list", () => {
  it("offers the #[mcp] queries only, described by their comments, with their parameters as JSON Schema", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["Remember", "Recall", "AddNote"]);
    const [remember, recall, addNote] = tools;
    expect(remember.description).toBe("Remembers a text\nfor later recall.");
    expect(recall.description).toBe("Recalls the memories nearest to a text.");
    expect(addNote.description).toBe("Runs the HelixQL query AddNote of this Silk database.");
    expect(recall.inputSchema).toEqual({
      type: "object",
      properties: {
        text: { type: "string" },
        k: { anyOf: [{ type: "integer" }, { type: "string", pattern: "^-?[0-9]+$" }], description: "I64: a whole number, or its decimal string" },
      },
      required: ["text", "k"],
      additionalProperties: false,
    });
    expect(addNote.inputSchema.required).toEqual(["text", "priority"]);
    expect(addNote.inputSchema.properties).toMatchObject({ priority: { type: "integer", minimum: 0, maximum: 255 }, due: { type: "string" } });
    expect(recall.annotations?.readOnlyHint).toBe(true);
    expect(remember.annotations?.readOnlyHint).toBe(false);
    expect(client.getServerVersion()?.name).toBe("silk");
  });
});

describe("tools/call", () => {
  it("runs the query with the model its #[model] names, and answers its JSON as text and structured content", async () => {
    embedder.models.length = 0;
    for (const text of ["the cat sat on the mat", "stock prices fell sharply"]) {
      const result = await client.callTool({ name: "Remember", arguments: { text } });
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ memory: { label: "Memory", text } });
    }
    const recalled = await client.callTool({ name: "Recall", arguments: { text: "where did the cat sit", k: 1 } });
    expect(recalled.isError ?? false).toBe(false);
    expect(recalled.structuredContent).toEqual({ memories: [{ text: "the cat sat on the mat" }] });
    const [content] = recalled.content as { type: string; text: string }[];
    expect(JSON.parse(content.text)).toEqual(recalled.structuredContent);
    expect(embedder.models).toEqual(["memory-model", "memory-model", "memory-model"]);
  });

  it("answers a bad argument with a tool error carrying Silk's code, and writes nothing", async () => {
    const before = await noteCount();
    expect(toolError(await client.callTool({ name: "AddNote", arguments: { text: "x", priority: "high" } })).error).toBe("invalid_type");
    expect(toolError(await client.callTool({ name: "AddNote", arguments: { text: "x" } })).error).toBe("missing_parameter");
    expect(toolError(await client.callTool({ name: "AddNote", arguments: { text: "x", priority: 1, colour: "red" } })).error).toBe("unknown_parameter");
    expect(toolError(await client.callTool({ name: "AddNote", arguments: { text: "x", priority: 1, due: "not a date" } })).error).toBe("invalid_value");
    expect(await noteCount()).toBe(before);
    const added = await client.callTool({ name: "AddNote", arguments: { text: "buy milk", priority: 2 } });
    expect(added.structuredContent).toMatchObject({ note: { text: "buy milk", priority: 2 } });
    expect(await noteCount()).toBe(before + 1);
  });

  it("refuses a tool it does not offer (unknown, or a query without #[mcp]) with a JSON-RPC invalid-params error", async () => {
    for (const name of ["NoSuchTool", "CountNotes"]) {
      const refusal = await client.callTool({ name, arguments: {} }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(McpError);
      expect((refusal as McpError).code).toBe(McpErrorCode.InvalidParams);
    }
  });
});

describe("HTTP refusals", () => {
  async function expectSilkError(response: Response, status: number, code: string): Promise<void> {
    expect(response.status).toBe(status);
    expect(await response.json()).toMatchObject({ error: code });
  }
  const initialize = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } },
  });
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };

  it("GET and DELETE /mcp are method_not_allowed: the endpoint is stateless", async () => {
    await expectSilkError(await fetch(`${served.base}/mcp`, { headers: { accept: "text/event-stream" } }), 405, "method_not_allowed");
    await expectSilkError(await fetch(`${served.base}/mcp`, { method: "DELETE" }), 405, "method_not_allowed");
  });

  it("refuses a web page of another host (DNS rebinding), and answers localhost's pages and Origin-less clients", async () => {
    await expectSilkError(await fetch(`${served.base}/mcp`, { method: "POST", body: initialize, headers: { ...headers, origin: "http://evil.example" } }), 403, "origin_not_allowed");
    for (const origin of ["http://localhost:6274", "http://127.0.0.1:3000", undefined]) {
      const response = await fetch(`${served.base}/mcp`, { method: "POST", body: initialize, headers: origin === undefined ? headers : { ...headers, origin } });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { result: { serverInfo: { name: string } } }).result.serverInfo.name).toBe("silk");
    }
  });

  it("takes JSON bodies only", async () => {
    await expectSilkError(await fetch(`${served.base}/mcp`, { method: "POST", body: initialize, headers: { ...headers, "content-type": "text/plain" } }), 415, "unsupported_media_type");
  });
});

describe("other projects", () => {
  it("a schemaless server offers no tools, and says why in its instructions", async () => {
    const schemaless = await serve(undefined);
    const schemalessClient = await connect(schemaless.base);
    try {
      expect((await schemalessClient.listTools()).tools).toEqual([]);
      expect(schemalessClient.getInstructions()).toContain("without a HelixQL project");
    } finally {
      await schemalessClient.close();
      await schemaless.app.close();
      await schemaless.database.close();
    }
  });

  it("a project with a QUERY named mcp keeps POST /mcp for that query", async () => {
    const project = await serve(`N::Thing { name: String }\nQUERY mcp(name: String) =>\n    thing <- AddN<Thing>({name: name})\n    RETURN thing\n`);
    try {
      const response = await fetch(`${project.base}/mcp`, { method: "POST", body: JSON.stringify({ name: "a" }), headers: { "content-type": "application/json" } });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ thing: { label: "Thing", name: "a" } });
    } finally {
      await project.app.close();
      await project.database.close();
    }
  });
});
