/**
 * Error replies of the HTTP gateway: every failure, whether the engine's (a SilkError), fastify's own (body
 * parsing, size and media-type checks) or an unknown route, answers `{"error": code, "msg": message}` with the
 * status of that code in protocol/errors.ts. A failure that is not the caller's fault is logged; the caller's
 * mistakes are not, since logging them would let any client fill the log, and no logged URL carries its query
 * string's values (a client may put a credential there). Errors of Node's HTTP parser, which come before fastify
 * routes anything, are answered in the same shape on the raw socket (answerClientError).
 */
import { STATUS_CODES, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance } from "fastify";
import { HTTP_HEADER_BYTES_MAX, type HttpTimeouts } from "./http-limits.js";
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
    if (error.kind !== "user") request.log.error({ err: cause, reqId: request.id, url: redactedUrl(request.url) }, `${error.code}: ${error.message}`);
    void reply.code(error.status).type("application/json; charset=utf-8").send(JSON.stringify(error.toJSON()));
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new SilkError("route_not_found", `no route ${request.method} ${request.url.split("?")[0]}; see docs/SERVER.md`);
    void reply.code(error.status).type("application/json; charset=utf-8").send(JSON.stringify(error.toJSON()));
  });
}

/**
 * The URL as logged: each query parameter keeps its name, but its value is replaced. Silk reads no credential from
 * the query string, yet clients put keys there (`?api_key=...`), and a log is read by more people than a key may be.
 */
export function redactedUrl(url: string): string {
  const queryAt = url.indexOf("?");
  if (queryAt === -1) return url;
  const names = url
    .slice(queryAt + 1)
    .split("&")
    .filter((pair) => pair !== "")
    .map((pair) => `${pair.split("=")[0]}=[redacted]`);
  return `${url.slice(0, queryAt)}?${names.join("&")}`;
}

/** The stable error for a failure of Node's HTTP parser or of its request timeouts. */
export function clientErrorOf(cause: Error & { code?: string; reason?: string }, timeouts: HttpTimeouts): SilkError {
  if (cause.code === "HPE_HEADER_OVERFLOW") {
    return new SilkError("header_too_large", `the request's headers are over ${HTTP_HEADER_BYTES_MAX} bytes in all; send fewer or shorter headers`);
  }
  if (cause.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return new SilkError(
      "request_timeout",
      `the request did not arrive in time (its headers within ${timeouts.headersMs} ms, all of it within ${timeouts.requestMs} ms); send each request whole and at once`,
    );
  }
  const reason = cause.reason ?? cause.message;
  return new SilkError("bad_request", `the request is not valid HTTP/1.1 (${reason}); the connection is closed`);
}

/**
 * Answers an error of Node's HTTP parser on the raw socket, then closes it: after bad framing the rest of the
 * stream cannot be read as requests, and a request that did not arrive in time would otherwise hold the socket
 * forever. A reply is written only where no response on this socket has begun (as Node's own default does), since
 * bytes written into the middle of another response would corrupt it; the socket is closed either way. These are
 * the caller's mistakes (or a network's), so nothing is logged.
 */
export function answerClientError(cause: Error & { code?: string }, socket: Socket, responses: WeakMap<object, ServerResponse>, timeouts: HttpTimeouts): void {
  // A reset connection is already gone; there is nobody to answer.
  if (cause.code === "ECONNRESET" || socket.destroyed) return;
  const response = responses.get(socket);
  if (socket.writable && (response === undefined || !response.headersSent || response.writableEnded)) {
    const error = clientErrorOf(cause, timeouts);
    const body = JSON.stringify(error.toJSON());
    socket.write(
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
