/**
 * The per-query surface of the gateway: `POST /<QueryName>` runs the project's HelixQL QUERY of that name with the
 * JSON body as its parameters (`{}`, or no body at all, for a query without any) and answers what its RETURN
 * clause builds, the way HelixDB's local endpoints do. One catch-all route looks the name up in the database's
 * map of queries, so the queries can change under a running server (`silk dev`) and an unknown name answers
 * 404 `query_not_found` rather than the router's `route_not_found`.
 */
import type { FastifyPluginAsync } from "fastify";
import { REQUEST_BODY_BYTES_MAX } from "./query-v2.js";

/** What the routes need from the database: running a query by name. */
export interface NamedQueryRunner {
  /**
   * The query's answer as JSON text (runtime/embedded.ts `queryJson`). Throws query_not_found for an unknown name, and the
   * parameter errors of bindParameters.
   */
  queryJson(name: string, parameters: Readonly<Record<string, unknown>>): Promise<string>;
}

export interface QueryRoutesOptions {
  readonly database: NamedQueryRunner;
}

export const queryRoutes: FastifyPluginAsync<QueryRoutesOptions> = async (app, options) => {
  const { database } = options;
  // Only JSON is accepted; fastify's default text/plain parser would hand the handler a string. An empty JSON body
  // means "no parameters" (clients of parameterless queries often send nothing), which the default parser refuses.
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string", bodyLimit: REQUEST_BODY_BYTES_MAX }, (request, body: string, done) => {
    if (body === "") done(null, {});
    else parseJson(request, body, done);
  });
  app.post<{ Params: { name: string } }>("/:name", { bodyLimit: REQUEST_BODY_BYTES_MAX }, async (request, reply) => {
    // No body means no parameters. Any JSON but an object (an array, a string, null) is refused by the query's
    // parameter check, which is why the cast is safe.
    const parameters = (request.body === undefined ? {} : request.body) as Readonly<Record<string, unknown>>;
    const body = await database.queryJson(request.params.name, parameters);
    return reply.type("application/json; charset=utf-8").send(body);
  });
};
