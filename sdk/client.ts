/**
 * Silk's TypeScript client: calls a project's query routes (`POST /<QueryName>`) and the operation-tree endpoint
 * (`POST /v2/query`) over `fetch`, with one small dependency (lossless-json, through json.ts), so the same file runs
 * in Node 20, browsers and workers.
 * Every answer that is not a 2xx becomes a `SilkClientError` carrying the HTTP status, the stable `error` code of
 * the body and its `msg` (SPEC "Errors" rule 2); clients branch on `code`, never on `message`.
 *
 * Architecture invariant: this file imports nothing of the database (not even protocol/), so an application can
 * bundle it alone.
 */
import { parseJsonExact, stringifyJsonExact } from "./json.js";

/**
 * A JSON value as the server sends it. Query routes send IDs as decimal strings; `/v2/query` sends them as JSON
 * numbers, as HelixDB v3 does, and the client reads an integer beyond 2^53 there as a bigint (a cluster's IDs past
 * its first partition start at 2^63), which requests may carry back unchanged.
 */
export type Json = null | boolean | number | bigint | string | Json[] | { [key: string]: Json };

export interface SilkClientOptions {
  /** The server's base address, e.g. `http://127.0.0.1:6969`; a trailing slash is ignored. */
  readonly url: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given (the hosted gateway); local servers take none. */
  readonly apiKey?: string;
  /** Milliseconds before a request is abandoned with code `request_timeout`; default `REQUEST_TIMEOUT_MS_DEFAULT`. */
  readonly timeoutMs?: number;
  /** The fetch to use; the global one by default. Tests and proxies pass their own. */
  readonly fetch?: typeof fetch;
}

/** A request that has not answered after a minute is not going to: the server's own limits end queries sooner. */
export const REQUEST_TIMEOUT_MS_DEFAULT = 60_000;
/** How much of a body that is not the expected JSON goes into the error message. */
const BODY_EXCERPT_CHARS_MAX = 200;

/**
 * The one error the client throws. `status` is the HTTP status (0 when no answer arrived: `network_error`,
 * `request_timeout`); `code` is the server's stable code (`rate_limited`, `invalid_type`, ...) or the client's own
 * `bad_response` when the body is not the `{"error", "msg"}` JSON it should be.
 *
 * `retryAfterSeconds` is set only on `rate_limited` answers with a valid `Retry-After` header. SPEC rule 2 says
 * client errors expose status, code and diagnostic but not headers; we keep to that (no header map is exposed),
 * but hand on this one parsed number, because honouring `Retry-After` is the documented client action for 429 and
 * `withRetry` (retry.ts) needs it. It is a separate field so that code reading only status/code/message is unaffected.
 */
export class SilkClientError extends Error {
  override readonly name = "SilkClientError";

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export class SilkClient {
  private readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchFunction: typeof fetch;

  constructor(options: SilkClientOptions) {
    if (typeof options.url !== "string" || !/^https?:\/\//.test(options.url)) {
      throw new TypeError(`SilkClient needs an http(s) url, got ${JSON.stringify(options.url)}`);
    }
    this.baseUrl = options.url.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    this.fetchFunction = options.fetch ?? globalThis.fetch;
  }

  /**
   * Runs the project's `QUERY <name>` with `parameters` (IDs as decimal strings, dates as ISO 8601 strings) and
   * resolves to its response body. `T` is what the caller knows the body to be; the generated query functions
   * (silk codegen) supply it from the query's declaration.
   */
  query<T = Json>(name: string, parameters: Readonly<Record<string, unknown>> = {}): Promise<T> {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TypeError(`${JSON.stringify(name)} is not a query name`);
    return this.post<T>(`/${name}`, parameters, JSON.parse);
  }

  /**
   * Runs an operation tree (docs/OPERATION_TREE.md; builder.ts makes them) and resolves to its result object, read
   * exactly: IDs are numbers, those beyond 2^53 bigints.
   */
  v2<T = { [name: string]: Json }>(tree: Readonly<Record<string, unknown>>): Promise<T> {
    return this.post<T>("/v2/query", tree, parseJsonExact);
  }

  private async post<T>(path: string, body: unknown, parseAnswer: (text: string) => unknown): Promise<T> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.apiKey !== undefined) headers.authorization = `Bearer ${this.apiKey}`;
    let response: Response;
    try {
      response = await this.fetchFunction(`${this.baseUrl}${path}`, {
        method: "POST",
        headers,
        body: stringifyJsonExact(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (cause) {
      const reason = cause instanceof Error ? cause : new Error(String(cause));
      if (reason.name === "TimeoutError") throw new SilkClientError(0, "request_timeout", `POST ${path} had no answer within ${this.timeoutMs} ms`);
      throw new SilkClientError(0, "network_error", `POST ${path} failed before an answer: ${reason.message}`);
    }
    const text = await response.text();
    if (response.ok) {
      try {
        return parseAnswer(text) as T;
      } catch {
        throw new SilkClientError(response.status, "bad_response", `POST ${path} answered ${response.status} with a body that is not JSON: ${excerpt(text)}`);
      }
    }
    throw errorFromResponse(path, response, text);
  }
}

/** The error of a non-2xx answer: the server's `{"error", "msg"}` when the body is that, `bad_response` otherwise. */
function errorFromResponse(path: string, response: Response, text: string): SilkClientError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (typeof body === "object" && body !== null && typeof (body as { error?: unknown }).error === "string" && typeof (body as { msg?: unknown }).msg === "string") {
    const { error, msg } = body as { error: string; msg: string };
    const retryAfterSeconds = error === "rate_limited" ? parseRetryAfter(response.headers.get("retry-after")) : undefined;
    return new SilkClientError(response.status, error, msg, retryAfterSeconds);
  }
  return new SilkClientError(
    response.status,
    "bad_response",
    `POST ${path} answered ${response.status} without a {"error", "msg"} JSON body: ${excerpt(text)}`,
  );
}

/** SPEC: `Retry-After` is whole seconds. Anything else (an HTTP date, garbage) is treated as absent. */
function parseRetryAfter(header: string | null): number | undefined {
  if (header === null || !/^[0-9]{1,9}$/.test(header.trim())) return undefined;
  return Number(header.trim());
}

function excerpt(text: string): string {
  if (text === "") return "(empty)";
  return JSON.stringify(text.length > BODY_EXCERPT_CHARS_MAX ? `${text.slice(0, BODY_EXCERPT_CHARS_MAX)}...` : text);
}
