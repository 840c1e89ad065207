/**
 * The checks the hosted gateway (`silk gateway`) puts in front of the routes, in SPEC's order:
 *
 * 1. header validation and authentication (onRequest, before the body is read): exactly one API key, in
 *    `Authorization: Bearer <key>` or `x-api-key: <key>` — none is 401 unauthorized, an unknown or revoked one
 *    403 forbidden, two 400 bad_request; then the account-credit switch, 402 tenant_disabled;
 * 2. fastify's own header and body checks (Content-Type 415, size 413, outer JSON 400) while it parses the body;
 * 3. admission (preHandler, only `POST /v2/query`): one token from the database's bucket, else 429 rate_limited
 *    with Retry-After, or 503 rate_limit_unavailable when the shared bucket cannot decide;
 * 4. the route: decoding the operation tree, planning and running it. Failures from here on have cost a token.
 *
 * So authentication, header and outer JSON failures cost nothing, and tree and planner failures cost one token
 * (SPEC Limits rule 4). `GET /health` needs no key, so load balancers can probe it. The per-query routes need a
 * key but take no token: SPEC puts the rate limit on `/v2/query` only.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { SilkError } from "../../protocol/errors.js";
import type { AdmissionDecision } from "../metrics.js";
import type { KeyStore } from "./key-store.js";
import type { Admitter } from "./token-bucket.js";

/** What the hosted checks need: the database's keys, its account switch and its bucket. */
export interface HostedAccess {
  /** The database's id (`<data>/gateway/database.json`), the label of its bucket's decisions in `/metrics`. */
  readonly databaseId: string;
  readonly keys: Pick<KeyStore, "verify">;
  /** Read on every request: the switch takes effect without a restart. */
  isDisabled(): boolean;
  readonly bucket: Admitter;
}

/** The one route that draws tokens (SPEC: the rate limit applies to this endpoint only). */
const RATE_LIMITED_ROUTE = "/v2/query";
/** Routes open without a key: liveness probes carry no credentials. */
const OPEN_ROUTES: ReadonlySet<string> = new Set(["/health"]);
const BEARER = /^Bearer +(\S+)$/i;

/**
 * The key a request presents. rawHeaders is read rather than headers because Node keeps only the first of several
 * Authorization headers and joins several x-api-key headers with commas: either would hide a second key.
 */
export function presentedKey(rawHeaders: readonly string[]): string {
  const credentials: { name: string; value: string }[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    if (name === "authorization" || name === "x-api-key") credentials.push({ name, value: rawHeaders[i + 1] });
  }
  if (credentials.length === 0) {
    throw new SilkError("unauthorized", "an API key is required: send Authorization: Bearer <key> (or x-api-key: <key>); `silk keys create` makes one");
  }
  if (credentials.length > 1) {
    throw new SilkError("bad_request", "send one API key, in one Authorization: Bearer <key> header or one x-api-key header, not several");
  }
  const [{ name, value }] = credentials;
  if (name === "x-api-key") {
    const key = value.trim();
    if (key === "") throw new SilkError("unauthorized", "the x-api-key header is empty; send x-api-key: <key>");
    return key;
  }
  const match = BEARER.exec(value.trim());
  if (match === null) throw new SilkError("unauthorized", "the Authorization header must be Bearer <key>");
  return match[1];
}

/**
 * Hosted rejections are answered here rather than thrown to the error handler: the 429 must carry Retry-After,
 * and their Content-Type is exactly `application/json` (SPEC Errors rule 1).
 */
function reject(reply: FastifyReply, error: SilkError, headers: Readonly<Record<string, string>> = {}): FastifyReply {
  // A Buffer, because fastify appends `; charset=utf-8` to a JSON type whenever the body is a string.
  return reply.code(error.status).headers(headers).type("application/json").send(Buffer.from(JSON.stringify(error.toJSON())));
}

function routeOf(request: FastifyRequest): string | undefined {
  return request.routeOptions.url;
}

/**
 * Installs the checks on the root instance; like the error replies, before the route plugins are registered, so
 * that every plugin inherits them.
 */
export function installHostedAccess(app: FastifyInstance, access: HostedAccess, countAdmission: (decision: AdmissionDecision) => void): void {
  app.addHook("onRequest", async (request, reply) => {
    const route = routeOf(request);
    if (route !== undefined && OPEN_ROUTES.has(route)) return;
    let key: string;
    try {
      key = presentedKey(request.raw.rawHeaders);
    } catch (cause) {
      const error = cause as SilkError;
      return reject(reply, error, error.code === "unauthorized" ? { "www-authenticate": 'Bearer realm="silk"' } : {});
    }
    if (access.keys.verify(key) === undefined) return reject(reply, new SilkError("forbidden", "this API key is unknown to this database or was revoked"));
    if (access.isDisabled()) return reject(reply, new SilkError("tenant_disabled", "this database is disabled for account credit; nothing ran"));
  });
  app.addHook("preHandler", async (request, reply) => {
    if (request.method !== "POST" || routeOf(request) !== RATE_LIMITED_ROUTE) return;
    let admission;
    try {
      admission = await access.bucket.admit();
    } catch (cause) {
      if (cause instanceof SilkError && cause.code === "rate_limit_unavailable") {
        countAdmission("unavailable");
        return reject(reply, cause);
      }
      throw cause;
    }
    if (!admission.admitted) {
      countAdmission("rate_limited");
      return reject(reply, new SilkError("rate_limited", "rate limit exceeded"), { "retry-after": String(admission.retryAfterSeconds) });
    }
    countAdmission("admitted");
  });
}
