/**
 * The admin surface of the gateway: `GET /health`, which answers as long as the process serves requests, and
 * `GET /introspect`, the project's schema in its JSON form (protocol/helixql/schema-json.ts) next to the queries
 * the server exposes as `POST /<QueryName>` routes (protocol/helixql/query.ts queryToJson).
 */
import type { FastifyPluginAsync } from "fastify";
import type { CompiledQuery } from "../protocol/helixql/query.js";
import { queryToJson } from "../protocol/helixql/query.js";
import { schemaToJson, type Schema } from "../protocol/schema.js";

/** The project being served; `silk dev` replaces its schema and queries while the server runs. */
export interface ServedProject {
  readonly schema: Schema | undefined;
  readonly queries: readonly CompiledQuery[];
}

export interface AdminOptions {
  readonly project: ServedProject;
}

export const adminRoutes: FastifyPluginAsync<AdminOptions> = async (app, options) => {
  const { project } = options;
  // The JSON is rebuilt only when the project's schema or queries were replaced.
  let cached: { schema: Schema | undefined; queries: readonly CompiledQuery[]; text: string } | undefined;
  const introspection = (): string => {
    const { schema, queries } = project;
    if (cached === undefined || cached.schema !== schema || cached.queries !== queries) {
      const text = JSON.stringify({ schema: schema === undefined ? null : schemaToJson(schema), queries: queries.map(queryToJson) });
      cached = { schema, queries, text };
    }
    return cached.text;
  };
  app.get("/health", async (_request, reply) => reply.type("application/json; charset=utf-8").send('{"status":"ok"}'));
  app.get("/introspect", async (_request, reply) => reply.type("application/json; charset=utf-8").send(introspection()));
};
