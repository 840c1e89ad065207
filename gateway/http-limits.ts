/**
 * The limits on how a request arrives over HTTP, before any route sees it: how long its headers and its whole body
 * may take, and how large its head may be. Node's HTTP parser enforces them (gateway/server.ts passes them in) and
 * gateway/errors.ts answers a request past them in Silk's error shape. The body's own size limit belongs to each
 * route (query-v2.ts).
 */

/**
 * How long a client may take to send a request's headers, in milliseconds, counted from the moment it connects (on a
 * kept-alive connection, from the first byte of its next request). A client that opens connections and sends
 * nothing would otherwise hold a socket, and its memory, for as long as it likes.
 */
export const HTTP_HEADERS_TIMEOUT_MS = 5_000;
/**
 * How long a client may take to send a whole request, headers and body, in milliseconds. A body that never
 * completes is the cheapest way to hold sockets open; 10 s asks the 16 MiB body limit of /v2/query to arrive at
 * 1.7 MB/s or more, which a client of a database has. Execution is not counted: the deadline (`--timeout-ms`) is.
 */
export const HTTP_REQUEST_TIMEOUT_MS = 10_000;
/**
 * How often Node looks for requests past those two limits, in milliseconds: a request is closed at most this long
 * after its limit (Node's default, 30 s, would let a request outlive its 10 s limit by up to 30 s).
 */
export const HTTP_TIMEOUT_CHECK_INTERVAL_MS = 500;
/**
 * How long a kept-alive connection may sit idle between requests, in milliseconds: fastify's default, kept because
 * it outlasts the 60 s idle timeout of common load balancers, which must close first or they reuse a connection
 * the server is closing. Named here so that every bound on a socket's life is in one place.
 */
export const HTTP_KEEP_ALIVE_TIMEOUT_MS = 72_000;
/** The largest request head (request line and headers), in bytes; beyond it the answer is 431 header_too_large. */
export const HTTP_HEADER_BYTES_MAX = 16 * 1024;

/** The limits on how long a request may take to arrive; tests shorten them to see them act in milliseconds. */
export interface HttpTimeouts {
  readonly headersMs: number;
  readonly requestMs: number;
  readonly checkIntervalMs: number;
}

export const HTTP_TIMEOUTS_DEFAULT: HttpTimeouts = {
  headersMs: HTTP_HEADERS_TIMEOUT_MS,
  requestMs: HTTP_REQUEST_TIMEOUT_MS,
  checkIntervalMs: HTTP_TIMEOUT_CHECK_INTERVAL_MS,
};

