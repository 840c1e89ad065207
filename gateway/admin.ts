/**
 * The admin surface of the gateway: `GET /health`, which answers as long as the process serves requests (with a bucket
 * database's position and lag, docs/STORAGE.md), and
 * `GET /introspect`, the project's schema in its JSON form (protocol/helixql/schema-json.ts) next to the queries
 * the server exposes as `POST /<QueryName>` routes (protocol/helixql/query.ts queryToJson).
 *
 * A schemaless database (served without a project) has no schema and no queries to show; what describes it is its
 * indexes, so its introspection adds them: every index of every family with its options and state, as
 * `db.indexes()` lists them. Its labels are not listed: edges have no label index (node/keys.ts), so naming every
 * edge label would read every adjacency key of the database for one GET.
 */
import type { FastifyPluginAsync } from "fastify";
import type { CompiledQuery } from "../protocol/helixql/query.js";
import { queryToJson } from "../protocol/helixql/query.js";
import type { IndexStatus } from "../protocol/indexes.js";
import { schemaToJson, type Schema } from "../protocol/schema.js";
import type { DatabaseStatus } from "../runtime/embedded.js";

/** The project being served; `silk dev` replaces its schema and queries while the server runs. */
export interface ServedProject {
  readonly schema: Schema | undefined;
  readonly queries: readonly CompiledQuery[];
  /** Every index of the database, merged over partitions (a schemaless database's introspection lists them). */
  indexStatuses(): Promise<IndexStatus[]>;
  /** Where the data lives (runtime/embedded.ts `Database.status`); a bucket database's is part of `/health`. */
  status?(): DatabaseStatus;
}

export interface AdminOptions {
  readonly project: ServedProject;
}

export const adminRoutes: FastifyPluginAsync<AdminOptions> = async (app, options) => {
  const { project } = options;
  // The JSON is rebuilt only when the project's schema or queries were replaced.
  let cached: { schema: Schema; queries: readonly CompiledQuery[]; text: string } | undefined;
  const introspection = async (): Promise<string> => {
    const { schema, queries } = project;
    // Indexes come and go at run time (create_index), so a schemaless answer is built on every request.
    if (schema === undefined) return JSON.stringify({ schema: null, queries: [], indexes: await project.indexStatuses() });
    if (cached === undefined || cached.schema !== schema || cached.queries !== queries) {
      cached = { schema, queries, text: JSON.stringify({ schema: schemaToJson(schema), queries: queries.map(queryToJson) }) };
    }
    return cached.text;
  };
  // A bucket database adds its storage: a writer's epoch and stored segment, a follower's position and lag.
  app.get("/health", async (_request, reply) => {
    const status = project.status?.();
    const body = status?.storage === "s3" ? JSON.stringify({ status: "ok", storage: status }) : '{"status":"ok"}';
    return reply.type("application/json; charset=utf-8").send(body);
  });
  app.get("/introspect", async (_request, reply) => reply.type("application/json; charset=utf-8").send(await introspection()));
};
