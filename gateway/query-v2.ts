/**
 * `POST /v2/query`: the operation tree (protocol/tree.ts) as a JSON body, run as one transaction, answered with
 * the result's JSON. Bodies must be `application/json` and at most REQUEST_BODY_BYTES_MAX; the JSON parser is
 * fastify's, which refuses `__proto__` and `constructor.prototype` keys rather than let them reach the engine, and a
 * body it accepted that holds an integer beyond 2^53 is read again losslessly (request-json.ts). The answer's IDs are
 * JSON numbers, as HelixDB v3 answers them, written digit for digit (an ID beyond 2^53 too; protocol/ids.ts JsonId).
 */
import type { FastifyPluginAsync } from "fastify";
import type { QueryResult } from "../protocol/messages.js";
import { SilkError } from "../protocol/errors.js";
import { stringifyAnswer } from "./json.js";
import { mayHoldUnsafeInteger, parseLossless } from "./request-json.js";

/** The largest `/v2/query` body, in bytes; a bigger one answers 413 payload_too_large before it is read. */
export const REQUEST_BODY_BYTES_MAX = 16 * 1024 * 1024;

/** What the route needs from the database: running one request body, its IDs as JsonId (Database.runV2). */
export interface QueryRunner {
  runV2(tree: unknown): Promise<QueryResult>;
}

export interface QueryV2Options {
  readonly database: QueryRunner;
}

export const queryV2Routes: FastifyPluginAsync<QueryV2Options> = async (app, options) => {
  // Only JSON is accepted here; fastify's default text/plain parser would hand the handler a string.
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string", bodyLimit: REQUEST_BODY_BYTES_MAX }, (request, body, done) => {
    // parseAs "string" hands a string; the type also allows the Buffer of parseAs "buffer".
    const text = typeof body === "string" ? body : body.toString("utf8");
    parseJson(request, text, (error, parsed) => {
      if (error !== null || !mayHoldUnsafeInteger(text)) return done(error, parsed);
      try {
        done(null, parseLossless(text));
      } catch (cause) {
        done(cause as Error, undefined);
      }
    });
  });
  app.post("/v2/query", { bodyLimit: REQUEST_BODY_BYTES_MAX }, async (request, reply) => {
    if (request.body === undefined || request.body === null) {
      throw new SilkError("invalid_query_json", "the request body is empty; send the operation tree as a JSON object");
    }
    const result = await options.database.runV2(request.body);
    return reply.type("application/json; charset=utf-8").send(stringifyAnswer(result));
  });
};
