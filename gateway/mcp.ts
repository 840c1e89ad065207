/**
 * The Model Context Protocol surface: `POST /mcp` speaks MCP's streamable HTTP transport (the official
 * `@modelcontextprotocol/sdk` server), and offers every QUERY marked `#[mcp]` as a tool: its name, its doc comment
 * as the description, its parameters as a JSON Schema (protocol/helixql/parameter-schema.ts). Calling the tool runs
 * the query exactly as `POST /<QueryName>` does (the same `queryJson`, one transaction) and answers its JSON.
 * See docs/MCP.md.
 *
 * Stateless: every POST gets a fresh MCP server and transport, so nothing is kept between requests, any number of
 * gateways can serve the same clients, and `silk dev` can swap the project under a running client (the next
 * `tools/list` sees the new queries). Hence no server-to-client stream: `GET /mcp` and `DELETE /mcp` answer 405.
 *
 * Failures are told apart as MCP tells them apart: a query's own failure (a bad argument, a missing record, an
 * embedding provider down) is a tool result with `isError` and Silk's `{"error", "msg"}` body as its text, which the
 * agent reads and can act on; an unknown tool is a JSON-RPC error; HTTP-level refusals (method, media type, size, and
 * on the local server the host and origin checks every route has, local-access.ts) answer in the gateway's error
 * shape (errors.ts).
 *
 * A database without a project offers no tools: its `tools/list` is empty, and the server's instructions say why.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ErrorCode as McpErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyBaseLogger, FastifyPluginAsync } from "fastify";
import { asSilkError, SilkError } from "../protocol/errors.js";
import { parametersJsonSchema } from "../protocol/helixql/parameter-schema.js";
import type { CompiledQuery } from "../protocol/helixql/query.js";
import type { ServedProject } from "./admin.js";
import type { NamedQueryRunner } from "./query-routes.js";
import { REQUEST_BODY_BYTES_MAX } from "./query-v2.js";
import { packageVersion } from "./version.js";

/** The path of the MCP endpoint. */
export const MCP_PATH = "/mcp";
/** The name the server gives itself in MCP's initialize answer. */
export const MCP_SERVER_NAME = "silk";

/** What the endpoint needs: the project's queries (read on every request) and running one by name. */
export interface McpDatabase extends NamedQueryRunner, Pick<ServedProject, "schema" | "queries"> {}

export interface McpRoutesOptions {
  readonly database: McpDatabase;
}

export const mcpRoutes: FastifyPluginAsync<McpRoutesOptions> = async (app, options) => {
  const { database } = options;
  const version = packageVersion();
  // Only JSON, as on the other routes; an empty body is handed on as nothing, for the transport to refuse.
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string", bodyLimit: REQUEST_BODY_BYTES_MAX }, (request, body: string, done) => {
    if (body === "") done(null, undefined);
    else parseJson(request, body, done);
  });
  app.post(MCP_PATH, { bodyLimit: REQUEST_BODY_BYTES_MAX }, async (request, reply) => {
    // A project that defines a QUERY named mcp keeps `POST /mcp` for it, as HelixDB projects expect of their routes.
    if (database.queries.some((query) => query.name === "mcp")) {
      const body = await database.queryJson("mcp", (request.body ?? {}) as Readonly<Record<string, unknown>>);
      return reply.type("application/json; charset=utf-8").send(body);
    }
    const server = mcpServer(database, version, request.log);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    // The transport writes the answer on the raw response itself; fastify must not answer as well.
    reply.hijack();
    reply.raw.on("close", () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (cause) {
      // Only a bug gets here (the transport answers every protocol error itself); answer it if nothing was sent.
      const error = asSilkError(cause);
      request.log.error({ err: cause, reqId: request.id }, `${MCP_PATH}: ${error.code}: ${error.message}`);
      if (!reply.raw.headersSent) reply.raw.writeHead(error.status, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(error.toJSON()));
    }
  });
  const noStream = async (): Promise<never> => {
    throw new SilkError("method_not_allowed", `${MCP_PATH} is stateless: it opens no event stream and keeps no session; send JSON-RPC requests with POST`);
  };
  app.get(MCP_PATH, noStream);
  app.delete(MCP_PATH, noStream);
};

/** An MCP server over the project as it is now: its `#[mcp]` queries as tools. */
function mcpServer(database: McpDatabase, version: string, log: FastifyBaseLogger): Server {
  const instructions =
    database.schema === undefined
      ? "This Silk database was started without a HelixQL project, so it offers no tools. Mark a QUERY with #[mcp] in a project to offer it."
      : "Each tool runs one HelixQL query of this Silk database as one transaction and answers its JSON.";
  const server = new Server({ name: MCP_SERVER_NAME, version }, { capabilities: { tools: {} }, instructions });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolQueries(database).map(toolOf) }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    if (!toolQueries(database).some((query) => query.name === name)) {
      throw new McpError(McpErrorCode.InvalidParams, `no tool ${JSON.stringify(name)}; tools/list names this server's tools`);
    }
    try {
      const text = await database.queryJson(name, args ?? {});
      const value: unknown = JSON.parse(text);
      const structured = typeof value === "object" && value !== null && !Array.isArray(value) ? { structuredContent: value as Record<string, unknown> } : {};
      return { content: [{ type: "text", text }], ...structured };
    } catch (cause) {
      const error = asSilkError(cause);
      if (error.kind !== "user") log.error({ err: cause, tool: name }, `${MCP_PATH} tool ${name}: ${error.code}: ${error.message}`);
      return { isError: true, content: [{ type: "text", text: JSON.stringify(error.toJSON()) }] };
    }
  });
  return server;
}

/** The queries offered as tools, in the project's order. */
function toolQueries(database: McpDatabase): readonly CompiledQuery[] {
  return database.schema === undefined ? [] : database.queries.filter((query) => query.mcp === true);
}

function toolOf(query: CompiledQuery): Tool {
  return {
    name: query.name,
    description: query.description ?? `Runs the HelixQL query ${query.name} of this Silk database.`,
    inputSchema: parametersJsonSchema(query) as Tool["inputSchema"],
    annotations: { readOnlyHint: query.requestType === "read" },
  };
}
