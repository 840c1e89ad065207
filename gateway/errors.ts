/**
 * Error replies of the HTTP gateway: every failure, whether the engine's (a SilkError), fastify's own (body
 * parsing, size and media-type checks) or an unknown route, answers `{"error": code, "msg": message}` with the
 * status of that code in protocol/errors.ts. A failure that is not the caller's fault is logged; the caller's
 * mistakes are not, since logging them would let any client fill the log.
 */
import type { FastifyError, FastifyInstance } from "fastify";
import { asSilkError, SilkError, type ErrorCode } from "../protocol/errors.js";

/** fastify's error codes for bad requests, and the stable codes they answer with. */
const FASTIFY_ERROR_CODES: Readonly<Record<string, ErrorCode>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: "invalid_query_json",
  FST_ERR_CTP_EMPTY_JSON_BODY: "invalid_query_json",
  FST_ERR_CTP_BODY_TOO_LARGE: "payload_too_large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "bad_request",
  FST_ERR_BAD_URL: "bad_request",
  FST_ERR_ASYNC_CONSTRAINT: "bad_request",
};

const FASTIFY_MESSAGES: Partial<Record<ErrorCode, string>> = {
  invalid_query_json: "the request body is not valid JSON; send a JSON object (the operation tree to /v2/query, the parameters to /<QueryName>)",
  payload_too_large: "the request body is larger than this route accepts; split the batch into smaller requests",
  unsupported_media_type: "the request body must be sent with Content-Type: application/json",
};

/** Turns anything a request can fail with into a SilkError with a stable code. */
export function requestError(cause: unknown): SilkError {
  if (cause instanceof SilkError) return cause;
  const code = (cause as Partial<FastifyError> | null)?.code;
  const mapped = typeof code === "string" ? FASTIFY_ERROR_CODES[code] : undefined;
  if (mapped !== undefined) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    return new SilkError(mapped, FASTIFY_MESSAGES[mapped] ?? detail);
  }
  // Any other 4xx from fastify is a malformed request; everything else is ours (a bug or an IO failure).
  const status = (cause as Partial<FastifyError> | null)?.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return new SilkError("bad_request", cause instanceof Error ? cause.message : String(cause));
  }
  return asSilkError(cause);
}

/**
 * Installs the error handler and the 404 handler on the root instance. It must run before the route plugins are
 * registered: fastify gives each plugin the error handler its parent had at registration time.
 */
export function installErrorReplies(app: FastifyInstance): void {
  app.setErrorHandler((cause, request, reply) => {
    const error = requestError(cause);
    if (error.kind !== "user") request.log.error({ err: cause, reqId: request.id, url: request.url }, `${error.code}: ${error.message}`);
    void reply.code(error.status).type("application/json; charset=utf-8").send(JSON.stringify(error.toJSON()));
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new SilkError("route_not_found", `no route ${request.method} ${request.url.split("?")[0]}; see docs/SERVER.md`);
    void reply.code(error.status).type("application/json; charset=utf-8").send(JSON.stringify(error.toJSON()));
  });
}
