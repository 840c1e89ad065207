/**
 * The checks the local server (`silk serve`, `silk dev`, each read worker of `silk serve --workers`) puts in front of
 * every route. It takes no credentials, so on its own any web page the user visits could call it: a page of another
 * site can send a "simple" POST (Content-Type text/plain, no CORS preflight) to a write route, and a page whose name
 * the attacker re-resolves to 127.0.0.1 (DNS rebinding) is then the same origin as the server in the browser's eyes
 * and reads every answer. Two checks, in an onRequest hook, so that a refused request costs no body parsing and no
 * database work:
 *
 * 1. The Host header must name this server: `localhost`, an IP address (any: a browser sends an address only when the
 *    page's own URL holds it, so no DNS answer can put one there, and probes address a pod by its IP), `--host` when
 *    it is a name, or a name given to `--allowed-hosts` (`.example.com` takes the domain and its subdomains).
 *    Anything else is 403 `host_not_allowed`: that is the name of a rebinding page. A request without Host (HTTP/1.0)
 *    comes from no browser and passes.
 * 2. A request from a web page must come from a page of this machine or of a name this server answers to: an Origin
 *    header must name localhost, 127.0.0.0/8 or [::1] (a local app, any port), the very host the request is
 *    addressed to (the console served on a LAN address), or an allowed name; any other Origin (`null` included) is
 *    403 `origin_not_allowed`. A request without Origin but with `Sec-Fetch-Site: cross-site` is refused the same way
 *    unless it is a top-level GET navigation (a link to `/console` from another site reads nothing back). Clients that
 *    are not browsers (the SDKs, curl) send neither header and pass.
 *
 * The hosted gateway (`silk gateway`, hosted/access.ts) has none of this: it is meant to be reached from anywhere,
 * and each request carries an API key that a page of another site does not have. See docs/SERVER.md, "Who may call".
 */
import { isIP } from "node:net";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { SilkError } from "../protocol/errors.js";

/** The names beyond localhost and IP addresses that a local server answers to. */
export interface LocalAccess {
  /** Lowercase host names; one that starts with a dot takes that domain and every name under it. */
  readonly allowedHosts: readonly string[];
}

/** A Host header: a name or IPv4 address, or an IPv6 address in brackets, and an optional port. Nothing else. */
const HOST_HEADER = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::[0-9]{1,5})?$/;
/** A host name as `--allowed-hosts` takes it: DNS labels, a leading dot for a domain and its subdomains. */
const HOST_NAME = /^\.?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/**
 * `--allowed-hosts a,b,.example.com`: the names, lowercase. A port, a scheme, a path or a wildcard is invalid_option:
 * the check compares names (any port of an allowed name is allowed), and an entry that could never match a Host
 * header would fail silently.
 */
export function parseAllowedHosts(option: string | undefined): string[] {
  if (option === undefined) return [];
  const names = option
    .split(",")
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== "");
  for (const name of names) {
    if (!HOST_NAME.test(name.replace(/\.$/, "")) || name === ".") {
      throw new SilkError(
        "invalid_option",
        `--allowed-hosts takes host names separated by commas (server.example, or .example.com for a domain and its subdomains), without scheme, port or wildcard; got ${JSON.stringify(name)}`,
      );
    }
  }
  return names.map((name) => name.replace(/\.$/, ""));
}

/**
 * The names a local server answers to from its settings: `--allowed-hosts`, and `--host` when it is a name rather
 * than an address (an address is allowed anyway).
 */
export function localAccessOf(host: string, allowedHosts: readonly string[]): LocalAccess {
  const listen = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  const names = isIP(listen) === 0 && listen !== "localhost" && !listen.startsWith(".") && HOST_NAME.test(listen) ? [listen] : [];
  return { allowedHosts: [...new Set([...names, ...allowedHosts])] };
}

/** The host name of a Host header, lowercase, IPv6 in brackets, no trailing dot; undefined when it is malformed. */
export function hostNameOf(header: string): string | undefined {
  const match = HOST_HEADER.exec(header.trim());
  if (match === null) return undefined;
  const name = match[1].toLowerCase();
  return name.endsWith(".") ? name.slice(0, -1) : name;
}

/** Whether a host name (as hostNameOf or URL.hostname gives it) is this machine: localhost, 127.0.0.0/8, [::1]. */
function isLoopbackName(name: string): boolean {
  return name === "localhost" || name === "[::1]" || (isIP(name) === 4 && name.startsWith("127."));
}

/** Whether a host name is an IP address (IPv6 in brackets, as in a Host header or URL.hostname). */
function isAddress(name: string): boolean {
  return isIP(name) === 4 || (name.startsWith("[") && name.endsWith("]") && isIP(name.slice(1, -1)) === 6);
}

function isAllowedName(name: string, access: LocalAccess): boolean {
  return access.allowedHosts.some((allowed) => (allowed.startsWith(".") ? name === allowed.slice(1) || name.endsWith(allowed) : name === allowed));
}

/** Whether a request addressed to this host name may be answered (check 1 above). */
export function isAllowedHost(name: string, access: LocalAccess): boolean {
  return isLoopbackName(name) || isAddress(name) || isAllowedName(name, access);
}

function originHostName(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.protocol === "http:" || url.protocol === "https:" ? url.hostname : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a page of this Origin may call a server addressed as `host` (check 2 above). */
export function isAllowedOrigin(origin: string, host: string | undefined, access: LocalAccess): boolean {
  const name = originHostName(origin);
  if (name === undefined) return false;
  return isLoopbackName(name) || name === host || isAllowedName(name, access);
}

/** Refuses, with host_not_allowed or origin_not_allowed, a request that a web page of another site could have sent. */
function checkLocalRequest(request: FastifyRequest, access: LocalAccess): void {
  const header = request.headers.host;
  let host: string | undefined;
  if (header !== undefined) {
    host = hostNameOf(header);
    if (host === undefined || !isAllowedHost(host, access)) {
      throw new SilkError(
        "host_not_allowed",
        `this server does not answer to the host ${JSON.stringify(header)}: a local server answers requests for localhost, an IP address or a name given to --allowed-hosts, so that no web page can reach it through DNS rebinding (docs/SERVER.md)`,
      );
    }
  }
  const origin = request.headers.origin;
  if (origin !== undefined) {
    if (!isAllowedOrigin(origin, host, access)) {
      throw new SilkError(
        "origin_not_allowed",
        `a web page of ${JSON.stringify(origin)} may not call this server: it takes no credentials, so it answers pages of localhost, of its own address and of the names given to --allowed-hosts only (docs/SERVER.md)`,
      );
    }
    return;
  }
  const navigation = request.headers["sec-fetch-mode"] === "navigate" && (request.method === "GET" || request.method === "HEAD");
  if (request.headers["sec-fetch-site"] === "cross-site" && !navigation) {
    throw new SilkError(
      "origin_not_allowed",
      "a web page of another site (Sec-Fetch-Site: cross-site) may not call this server: it takes no credentials, so it answers pages of localhost, of its own address and of the names given to --allowed-hosts only (docs/SERVER.md)",
    );
  }
}

/**
 * Installs the checks on the root instance, before the route plugins are registered, so that every route (and the
 * 404 of a path that has none) inherits them.
 */
export function installLocalAccess(app: FastifyInstance, access: LocalAccess): void {
  app.addHook("onRequest", async (request) => checkLocalRequest(request, access));
}
