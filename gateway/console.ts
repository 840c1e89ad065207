/**
 * The web console (docs/CONSOLE.md): `GET /console` serves the page that vite builds from console/ into
 * dist/console/ (static files, shipped in the package: nothing is fetched from elsewhere at run time), and
 * `/console/api/...` answers what the page needs beyond the routes every client has (`POST /v2/query` for the graph
 * explorer's reads):
 *
 * - `POST /console/api/check` `{"text"}`: the editor's QUERY definitions checked against the served project's
 *   schema (protocol/helixql/query-check.ts checkQueryText), answered as `{"diagnostics", "queries"}`: every error and
 *   warning with its 1-based line and column, as `silk check` prints them, and the queries that checked. It answers
 *   200 whatever the text holds, since diagnostics are its answer, not a failure of the request.
 * - `POST /console/api/run` `{"text", "query"?, "parameters"?}`: checks the text the same way and runs one of its
 *   read queries (the one named, else the first) with the parameters, as one transaction through the same path as
 *   `/v2/query`; the answer is what `POST /<name>` would answer for that query were it in the project (IDs as decimal
 *   strings). A text that does not check is its first diagnostic's error, with every diagnostic in the message.
 *   Write queries are refused (`unsupported_operation`): the console reads.
 * - `GET /console/api/indexes`: every index with its state and build counters (`db.indexes()`, `silk index status`).
 * - `GET /console/api/partitions`: on `silk serve --cluster`, the cluster's map and each partition's leader, term,
 *   log, latest snapshot, ranges and each replica's applied sequence and lag (`silk cluster status`'s figures);
 *   `unsupported_operation` on a server that is not a cluster's.
 *
 * The console is registered by `silk serve` and `silk dev` only (not the hosted gateway, whose routes all take a
 * key that a browser's page load cannot send), so it has the rules of their other routes: loopback unless `--host`
 * says otherwise, and no credentials. A schemaless server has no schema to check HelixQL against; its check and run
 * routes answer `unsupported_operation`, and the graph explorer still works.
 */
import { existsSync, readFileSync } from "node:fs";
import { extname } from "node:path";
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { SilkError } from "../protocol/errors.js";
import { checkQueryText } from "../protocol/helixql/query-check.js";
import { bindParameters, type CompiledQuery } from "../protocol/helixql/query.js";
import { renderOutput } from "../protocol/helixql/output.js";
import { idToString, JsonId } from "../protocol/ids.js";
import type { Diagnostic, Schema, Warning } from "../protocol/schema.js";
import { formatDiagnostics } from "../protocol/schema.js";
import { stringifyJson } from "./json.js";
import type { QueryRunner } from "./query-v2.js";
import { REQUEST_BODY_BYTES_MAX } from "./query-v2.js";
import type { ServedProject } from "./admin.js";

/** The file name diagnostics give the editor's text. */
export const CONSOLE_FILE = "console.hx";
/** The editor's text, at most; a HelixQL file is a few KiB. */
export const CONSOLE_TEXT_CHARS_MAX = 1 << 20;

/**
 * Where vite put the built page: dist/console/, one level up from gateway/ run from source (tests, tsx), beside
 * the compiled gateway in dist/ (`dist/gateway/../console`). The console/ of the sources has an index.html too, but
 * no assets/: only a build has both.
 */
function staticDirectory(): URL | undefined {
  for (const relative of ["../dist/console/", "../console/"]) {
    const url = new URL(relative, import.meta.url);
    if (existsSync(new URL("index.html", url)) && existsSync(new URL("assets/", url))) return url;
  }
  return undefined;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json; charset=utf-8",
};
/** The names vite gives built assets (`index-Bx3k9.js`): no separators, so a request cannot leave the folder. */
const ASSET_NAME = /^[A-Za-z0-9_.-]+$/;

/**
 * Reads a cluster's status (cluster/nats/cluster-status.ts readClusterStatus, what `silk cluster status` prints), as
 * the JSON the partition page shows; `silk serve --cluster` gives one.
 */
export type ClusterStatusReader = () => Promise<object>;

export interface ConsoleOptions {
  readonly database: QueryRunner & ServedProject;
  /** The cluster's status reader on `silk serve --cluster`; without one `/console/api/partitions` is unsupported_operation. */
  readonly clusterStatus?: ClusterStatusReader;
}

interface DiagnosticJson {
  readonly severity: "error" | "warning";
  readonly code: string;
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

function diagnosticJson(found: Diagnostic | Warning): DiagnosticJson {
  const severity = "severity" in found ? "warning" : "error";
  return { severity, code: found.code, line: found.line, column: found.column, message: found.message };
}

/** The body's `text`, or bad_request; a body that is not an object is refused the same way. */
function textOf(body: unknown): string {
  const text = typeof body === "object" && body !== null ? (body as { text?: unknown }).text : undefined;
  if (typeof text !== "string") throw new SilkError("bad_request", 'send {"text": "<HelixQL QUERY definitions>"} as the JSON body');
  if (text.length > CONSOLE_TEXT_CHARS_MAX) throw new SilkError("limit_exceeded", `the text is ${text.length} characters; the console checks at most ${CONSOLE_TEXT_CHARS_MAX}`);
  return text;
}

function servedSchema(project: ServedProject): Schema {
  const schema = project.schema;
  if (schema === undefined) {
    throw new SilkError("unsupported_operation", "this server has no project, so HelixQL has no schema to check against: serve one with --project (the graph explorer works without)");
  }
  return schema;
}

/** The query of a checked text that `name` picks (the first without a name), or the reason none can run. */
function queryToRun(queries: readonly CompiledQuery[], name: unknown): CompiledQuery {
  if (name !== undefined && typeof name !== "string") throw new SilkError("bad_request", '"query" must be the name of a QUERY of the text');
  const query = name === undefined ? queries[0] : queries.find((candidate) => candidate.name === name);
  if (query === undefined) {
    throw new SilkError("query_not_found", name === undefined ? "the text defines no QUERY" : `the text defines no QUERY named ${JSON.stringify(name)}`);
  }
  if (query.requestType === "write") {
    throw new SilkError("unsupported_operation", `${query.name} writes: the console runs read queries only; run writes through POST /<name> or POST /v2/query`);
  }
  return query;
}

/**
 * A `/v2/query` result with its IDs (JsonId) as decimal strings, as HelixQL routes answer them: the page parses
 * JSON numbers as doubles, where an ID beyond 2^53 would lose digits, and renderOutput copies records key by key,
 * which would turn a JsonId into an object.
 */
function withStringIds(value: unknown): unknown {
  if (value instanceof JsonId) return idToString(value.id);
  if (Array.isArray(value)) return value.map(withStringIds);
  if (typeof value !== "object" || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) copy[key] = withStringIds(inner);
  return copy;
}

export const consoleRoutes: FastifyPluginAsync<ConsoleOptions> = async (app, options) => {
  const { database } = options;
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string", bodyLimit: REQUEST_BODY_BYTES_MAX }, (request, body: string, done) => parseJson(request, body, done));

  const sendStatic = (reply: FastifyReply, name: string): FastifyReply => {
    const directory = staticDirectory();
    if (directory === undefined) throw new SilkError("route_not_found", "the console was not built (dist/console/ is missing): run `npm run build`");
    const path = new URL(name, directory);
    if (!existsSync(path)) throw new SilkError("route_not_found", `no console file ${name}`);
    // Built asset names change with their content, so they may be kept; the page itself names the current ones.
    const caching = name === "index.html" ? "no-cache" : "public, max-age=31536000, immutable";
    return reply.type(CONTENT_TYPES[extname(name)] ?? "application/octet-stream").header("cache-control", caching).send(readFileSync(path));
  };
  app.get("/console", async (_request, reply) => sendStatic(reply, "index.html"));
  app.get("/console/", async (_request, reply) => sendStatic(reply, "index.html"));
  app.get<{ Params: { name: string } }>("/console/assets/:name", async (request, reply) => {
    const { name } = request.params;
    if (!ASSET_NAME.test(name)) throw new SilkError("route_not_found", `no console file assets/${name}`);
    return sendStatic(reply, `assets/${name}`);
  });

  app.post("/console/api/check", async (request, reply) => {
    const text = textOf(request.body);
    const { queries, diagnostics, warnings } = checkQueryText({ file: CONSOLE_FILE, text }, servedSchema(database));
    const found = [...diagnostics, ...warnings].sort((a, b) => a.line - b.line || a.column - b.column).map(diagnosticJson);
    const checked = queries.map((query) => ({
      name: query.name,
      request_type: query.requestType,
      parameters: query.parameters.map((parameter) => ({ name: parameter.name, optional: parameter.optional })),
    }));
    return reply.type("application/json; charset=utf-8").send(JSON.stringify({ diagnostics: found, queries: checked }));
  });

  app.post("/console/api/run", async (request, reply) => {
    const text = textOf(request.body);
    const body = request.body as { query?: unknown; parameters?: unknown };
    const source = { file: CONSOLE_FILE, text };
    const { queries, diagnostics } = checkQueryText(source, servedSchema(database));
    const first = diagnostics[0];
    if (first !== undefined) {
      const code = diagnostics.some((diagnostic) => diagnostic.code === "schema_syntax") ? "schema_syntax" : first.code;
      throw new SilkError(code, formatDiagnostics(diagnostics, [source]));
    }
    const query = queryToRun(queries, body.query);
    const parameters = bindParameters(query, body.parameters ?? {});
    // renderOutput of an empty result is what a query without statements (only literals) returns.
    const result = query.tree === undefined ? {} : (withStringIds(await database.runV2({ ...query.tree, parameters })) as Record<string, unknown>);
    return reply.type("application/json; charset=utf-8").send(stringifyJson(renderOutput(query.output, result)));
  });

  app.get("/console/api/indexes", async (_request, reply) => {
    return reply.type("application/json; charset=utf-8").send(stringifyJson({ indexes: await database.indexStatuses() }));
  });

  app.get("/console/api/partitions", async (_request, reply) => {
    const { clusterStatus } = options;
    if (clusterStatus === undefined) {
      throw new SilkError("unsupported_operation", "this server's database is not a cluster's: the partition page is served by silk serve --cluster");
    }
    return reply.type("application/json; charset=utf-8").send(stringifyJson(await clusterStatus()));
  });
};
