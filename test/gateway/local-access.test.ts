/**
 * The local server's checks against web pages of other sites (gateway/local-access.ts, docs/SERVER.md "Who may
 * call"), on `silk serve`, `silk serve --workers 2` and `silk dev` as real processes on real LMDB files, through a
 * real HTTP client (node:http, which sends whatever Host, Origin and Sec-Fetch-* a browser would): a cross-site POST
 * of the kind a page sends without a CORS preflight is refused 403 origin_not_allowed before the write query runs
 * (the data read back is unchanged, while the same request without Origin writes); a DNS-rebinding request (Host
 * evil.example) is refused 403 host_not_allowed on read routes, /metrics, /console and /mcp; requests from loopback
 * pages, from the server's own address, from no page at all, and to names of --allowed-hosts pass. The parsing of
 * --allowed-hosts and the Host and Origin rules are checked as functions first.
 */
import { request } from "node:http";
import { connect } from "node:net";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hostNameOf, isAllowedHost, isAllowedOrigin, localAccessOf, parseAllowedHosts } from "../../gateway/local-access.js";
import { SilkError } from "../../protocol/errors.js";
import { removeTemporaryDirectories, runSilk, temporaryDirectory } from "../cli/helpers.js";
import { startServer, type StartedServer } from "./serve-process.js";

afterAll(removeTemporaryDirectories);

/** Starting servers (three processes for --workers 2) under tsx on a loaded 2-core machine takes a while. */
const SERVER_TEST_TIMEOUT_MS = 240_000;

/** A project with a write query that takes no parameters: a page can run it with a bodiless no-cors POST. */
function writeProject(): string {
  const project = temporaryDirectory();
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, "schema.hx"), "N::Guest { name: String }\n");
  writeFileSync(
    join(project, "queries.hx"),
    `QUERY AddGuest() =>
    guest <- AddN<Guest>({name: "mallory"})
    RETURN guest

QUERY Guests() =>
    guests <- N<Guest>
    RETURN guests
`,
  );
  return project;
}

interface Answer {
  readonly status: number;
  readonly body: string;
}

/** One request on a fresh connection (so that a --workers server hands them to its workers in turn). */
function send(url: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${url}${path}`, { agent: false, method: options.method ?? "GET", headers: options.headers ?? {} });
    outgoing.on("error", reject);
    outgoing.on("response", (response) => {
      let received = "";
      response.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: received }));
    });
    outgoing.end(options.body);
  });
}

/** `GET /health` as HTTP/1.0 without a Host header, on a raw socket: what the server answers, status line first. */
function withoutHost(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(url).port), "127.0.0.1", () => socket.end("GET /health HTTP/1.0\r\n\r\n"));
    let received = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
  });
}

function expectRefused(answer: Answer, code: "origin_not_allowed" | "host_not_allowed"): void {
  expect(answer.status, answer.body).toBe(403);
  expect((JSON.parse(answer.body) as { error: string }).error).toBe(code);
}

async function guestCount(server: StartedServer): Promise<number> {
  const answer = await send(server.url, "/Guests", { method: "POST" });
  expect(answer.status, answer.body).toBe(200);
  return (JSON.parse(answer.body) as { guests: unknown[] }).guests.length;
}

/**
 * What a page of evil.example sends when it POSTs to the server without a preflight (fetch no-cors, a form). Without
 * the checks the bodiless one runs AddGuest (a query without parameters takes no body); one with a text/plain body
 * would be refused by the routes' JSON-only parsers (415), after the body was read.
 */
const CROSS_SITE_POSTS: readonly Record<string, string>[] = [
  { origin: "http://evil.example", "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors" },
  { origin: "http://evil.example", "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "content-type": "text/plain;charset=UTF-8" },
  // A sandboxed frame or a redirect: Origin null.
  { origin: "null", "content-type": "text/plain" },
  // A browser that sends Sec-Fetch-Site but (for this request) no Origin.
  { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors" },
];

/**
 * The checks every local server must make: the write route refuses cross-site POSTs (and writes nothing), every
 * route refuses a rebinding Host, and loopback pages, the server's own address and programs pass.
 */
async function expectGuarded(server: StartedServer): Promise<void> {
  const port = new URL(server.url).port;
  const before = await guestCount(server);
  for (const headers of CROSS_SITE_POSTS) {
    const body = headers["content-type"]?.startsWith("text/plain") === true ? '{"name":"mallory"}' : undefined;
    expectRefused(await send(server.url, "/AddGuest", { method: "POST", headers, body }), "origin_not_allowed");
  }
  expect(await guestCount(server)).toBe(before);
  // The same request without a page behind it (curl, an SDK) is a real write: the refusals above are the checks'.
  expect((await send(server.url, "/AddGuest", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(200);
  expect(await guestCount(server)).toBe(before + 1);

  // DNS rebinding: evil.example resolves to 127.0.0.1, so its page is same-origin with the server in the browser.
  const rebound = { host: `evil.example:${port}`, origin: `http://evil.example:${port}`, "sec-fetch-site": "same-origin", "content-type": "application/json" };
  expectRefused(await send(server.url, "/Guests", { method: "POST", headers: rebound, body: "{}" }), "host_not_allowed");
  expectRefused(await send(server.url, "/AddGuest", { method: "POST", headers: rebound, body: "{}" }), "host_not_allowed");
  const v2 = JSON.stringify({ request_type: "read", query: { read: { entries: [], returns: [] } } });
  expectRefused(await send(server.url, "/v2/query", { method: "POST", headers: rebound, body: v2 }), "host_not_allowed");
  for (const path of ["/introspect", "/health", "/metrics", "/console", "/console/api/indexes", "/no-such-route"]) {
    expectRefused(await send(server.url, path, { headers: { host: `evil.example:${port}` } }), "host_not_allowed");
  }
  expectRefused(await send(server.url, "/mcp", { method: "POST", headers: { ...rebound, accept: "application/json, text/event-stream" }, body: "{}" }), "host_not_allowed");
  // A Host that smuggles an address after a name is no address.
  expectRefused(await send(server.url, "/Guests", { method: "POST", headers: { host: `evil.example@127.0.0.1:${port}` } }), "host_not_allowed");
  expect(await guestCount(server)).toBe(before + 1);

  // Programs and pages of this machine pass.
  const passing: Record<string, string>[] = [
    { host: `localhost:${port}` },
    { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}`, "sec-fetch-site": "same-origin" },
    { host: `[::1]:${port}`, origin: "http://[::1]:8080" },
    // A local app on another port: another site by the browser's rules, but a page of this machine.
    { host: `127.0.0.1:${port}`, origin: "http://localhost:5173", "sec-fetch-site": "cross-site", "sec-fetch-mode": "cors" },
    // The server reached on a LAN address, by its own console page.
    { host: `192.168.1.5:${port}`, origin: `http://192.168.1.5:${port}`, "sec-fetch-site": "same-origin" },
  ];
  for (const headers of passing) {
    const answer = await send(server.url, "/Guests", { method: "POST", headers });
    expect(answer.status, `${JSON.stringify(headers)}: ${answer.body}`).toBe(200);
  }
  // HTTP/1.0 may leave Host out; no browser does, so the request passes.
  expect(await withoutHost(server.url)).toMatch(/^HTTP\/1\.1 200 /);
  // A page on another machine of the LAN is another site, even when the server is reached on an address.
  expectRefused(await send(server.url, "/Guests", { method: "POST", headers: { host: `192.168.1.5:${port}`, origin: "http://192.168.1.9:8080" } }), "origin_not_allowed");
  // A link from another site is a top-level navigation, which reads nothing back: it opens.
  const navigation = await send(server.url, "/health", { headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" } });
  expect(navigation.status, navigation.body).toBe(200);
  // An image or script tag of another site is not.
  expectRefused(await send(server.url, "/introspect", { headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "script" } }), "origin_not_allowed");
}

describe("the Host and Origin rules", () => {
  it("reads --allowed-hosts as lowercase names and domains, refusing schemes, ports and wildcards", () => {
    expect(parseAllowedHosts(undefined)).toEqual([]);
    expect(parseAllowedHosts(" Silk.Example, .svc.cluster.local,,silk-coordinator. ")).toEqual(["silk.example", ".svc.cluster.local", "silk-coordinator"]);
    for (const bad of ["http://silk.example", "silk.example:6969", "*.example.com", ".", "silk example", "silk/x"]) {
      expect(() => parseAllowedHosts(bad), bad).toThrow(SilkError);
      try {
        parseAllowedHosts(bad);
      } catch (cause) {
        expect((cause as SilkError).code).toBe("invalid_option");
      }
    }
  });

  it("adds --host to the names when it is a name, not an address", () => {
    expect(localAccessOf("127.0.0.1", []).allowedHosts).toEqual([]);
    expect(localAccessOf("0.0.0.0", ["a.example"]).allowedHosts).toEqual(["a.example"]);
    expect(localAccessOf("::", []).allowedHosts).toEqual([]);
    expect(localAccessOf("[::1]", []).allowedHosts).toEqual([]);
    expect(localAccessOf("localhost", []).allowedHosts).toEqual([]);
    expect(localAccessOf("Silk-Box", ["silk-box"]).allowedHosts).toEqual(["silk-box"]);
    expect(localAccessOf(".example.com", []).allowedHosts).toEqual([]);
  });

  it("answers to localhost, any IP address and the allowed names, and to nothing else", () => {
    const access = { allowedHosts: ["silk.example", ".svc.cluster.local"] };
    const allowed = (header: string): boolean => {
      const name = hostNameOf(header);
      return name !== undefined && isAllowedHost(name, access);
    };
    for (const header of ["localhost:6969", "LOCALHOST", "localhost.:6969", "127.0.0.1:6969", "127.8.9.10", "[::1]:6969", "10.0.0.7:6969", "[fe80::1]", "silk.example:443", "silk.default.svc.cluster.local:6969", "svc.cluster.local"]) {
      expect(allowed(header), header).toBe(true);
    }
    for (const header of ["evil.example:6969", "localhost.evil.example", "127.0.0.1.evil.example", "evilsvc.cluster.local", "silk.example.evil", "evil@127.0.0.1", "127.0.0.1/x", "[::1", "", "[evil]"]) {
      expect(allowed(header), header).toBe(false);
    }
  });

  it("takes pages of loopback, of the addressed host and of the allowed names, and no other Origin", () => {
    const access = { allowedHosts: ["app.example"] };
    expect(isAllowedOrigin("http://localhost:5173", "127.0.0.1", access)).toBe(true);
    expect(isAllowedOrigin("https://127.0.0.1", "localhost", access)).toBe(true);
    expect(isAllowedOrigin("http://[::1]:3000", "[::1]", access)).toBe(true);
    expect(isAllowedOrigin("http://192.168.1.5:6969", "192.168.1.5", access)).toBe(true);
    expect(isAllowedOrigin("https://app.example", "127.0.0.1", access)).toBe(true);
    expect(isAllowedOrigin("http://evil.example", "127.0.0.1", access)).toBe(false);
    expect(isAllowedOrigin("http://192.168.1.9", "192.168.1.5", access)).toBe(false);
    expect(isAllowedOrigin("http://localhost.evil.example", "localhost", access)).toBe(false);
    expect(isAllowedOrigin("null", "127.0.0.1", access)).toBe(false);
    expect(isAllowedOrigin("file:///home/user/page.html", "127.0.0.1", access)).toBe(false);
    expect(isAllowedOrigin("chrome-extension://abcdef", "127.0.0.1", access)).toBe(false);
    // No Host (HTTP/1.0): only loopback pages and allowed names.
    expect(isAllowedOrigin("http://192.168.1.5", undefined, access)).toBe(false);
  });
});

describe("silk serve, silk serve --workers and silk dev refuse requests of other sites' pages", () => {
  it(
    "silk serve: a cross-site POST to a write query writes nothing, a rebinding Host reads nothing, loopback passes",
    async () => {
      const server = await startServer(["serve", "--project", writeProject(), "--port", "0", "--data", join(temporaryDirectory(), "data")]);
      try {
        await expectGuarded(server);
      } finally {
        server.child.kill("SIGTERM");
        await server.exited;
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );

  it(
    "silk serve --workers 2: every read worker makes the same checks",
    async () => {
      const server = await startServer(["serve", "--project", writeProject(), "--port", "0", "--data", join(temporaryDirectory(), "data"), "--workers", "2"]);
      try {
        // Each request on its own connection: the primary hands connections to the workers in turn, so both answer.
        await expectGuarded(server);
        await expectGuarded(server);
      } finally {
        server.child.kill("SIGTERM");
        await server.exited;
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );

  it(
    "silk dev, with --allowed-hosts: the allowed names and their pages pass, other names do not",
    async () => {
      const server = await startServer(["dev", writeProject(), "--port", "0", "--data", join(temporaryDirectory(), "data"), "--allowed-hosts", "silk.internal,.svc.cluster.local"]);
      try {
        await expectGuarded(server);
        const port = new URL(server.url).port;
        const allowed: Record<string, string>[] = [
          { host: `silk.internal:${port}`, origin: `http://silk.internal:${port}` },
          { host: `silk.default.svc.cluster.local:${port}` },
          { host: `127.0.0.1:${port}`, origin: "https://silk.internal" },
        ];
        for (const headers of allowed) {
          const answer = await send(server.url, "/Guests", { method: "POST", headers });
          expect(answer.status, `${JSON.stringify(headers)}: ${answer.body}`).toBe(200);
        }
        expectRefused(await send(server.url, "/Guests", { method: "POST", headers: { host: `other.internal:${port}` } }), "host_not_allowed");
        expectRefused(await send(server.url, "/Guests", { method: "POST", headers: { origin: "http://other.internal" } }), "origin_not_allowed");
      } finally {
        server.child.kill("SIGTERM");
        await server.exited;
      }
    },
    SERVER_TEST_TIMEOUT_MS,
  );

  it("refuses a bad --allowed-hosts before opening anything, with exit code 1", async () => {
    const run = await runSilk(["serve", "--port", "0", "--data", join(temporaryDirectory(), "data"), "--allowed-hosts", "http://silk.example"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/silk serve: invalid_option: --allowed-hosts takes host names separated by commas/);
  });
});
