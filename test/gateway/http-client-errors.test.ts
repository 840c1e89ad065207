/**
 * Requests that fail in Node's HTTP parser, before any route: bad framing (400 bad_request), headers over the limit
 * (431 header_too_large), and requests that never finish arriving (408 request_timeout). Each is answered in Silk's
 * `{"error", "msg"}` shape on the raw socket, and the socket is closed: a client that sends headers and half a body,
 * or half its headers, cannot hold a socket beyond the request timeout. Driven with raw `net` sockets on loopback
 * against a real gateway over a real database, with the timeouts shortened so the suite runs in about a second;
 * the defaults are checked on the server object separately.
 */
import { connect, type Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { HTTP_HEADER_BYTES_MAX, HTTP_HEADERS_TIMEOUT_MS, HTTP_KEEP_ALIVE_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS, type HttpTimeouts } from "../../gateway/http-limits.js";
import { buildGateway, type GatewayDatabase } from "../../gateway/server.js";
import { countRequest, nodesLabeled } from "../cli/helpers.js";

const TIMEOUTS: HttpTimeouts = { headersMs: 300, requestMs: 600, checkIntervalMs: 50 };
/** A request must be closed within its timeout, one check interval, and this much scheduling slack on a busy machine. */
const CLOSE_SLACK_MS = 1_000;
const HALF_BODY_SOCKETS = 30;

let database: Database;
let app: FastifyInstance;
let port: number;

/** The real database, but each /v2/query run first waits past the request timeout (a slow query, not a slow client). */
function slowDatabase(inner: Database): GatewayDatabase {
  return {
    get schema() {
      return inner.schema;
    },
    get queries() {
      return inner.queries;
    },
    queryJson: (name, parameters) => inner.queryJson(name, parameters),
    indexStatuses: () => inner.indexStatuses(),
    statistics: () => inner.statistics(),
    runV2: async (tree) => {
      await new Promise((done) => setTimeout(done, TIMEOUTS.requestMs * 2));
      return inner.runV2(tree);
    },
  };
}

beforeAll(async () => {
  database = await Database.open({ storage: "memory" });
  app = await buildGateway({ database: slowDatabase(database), httpTimeouts: TIMEOUTS });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("the gateway has no TCP address");
  port = address.port;
});

afterAll(async () => {
  await app?.close();
  await database?.close();
});

interface Exchange {
  /** Everything the server sent before it closed the connection. */
  readonly received: string;
  /** Milliseconds from the last byte sent to the close. */
  readonly closedAfterMs: number;
}

/** How long any exchange may wait for the server to close its socket: far beyond every timeout above. */
const EXCHANGE_WAIT_MS = 5_000;

/** Opens a socket, sends `text`, and resolves with what came back once the server closes it. */
function exchange(text: string): Promise<Exchange> {
  return new Promise((done, fail) => {
    const socket: Socket = connect(port, "127.0.0.1");
    let received = "";
    let sentAt = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      fail(new Error(`the server left the socket open for ${EXCHANGE_WAIT_MS} ms; it had sent ${JSON.stringify(received)}`));
    }, EXCHANGE_WAIT_MS);
    socket.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
    socket.on("error", fail);
    socket.on("close", () => {
      clearTimeout(timer);
      done({ received, closedAfterMs: performance.now() - sentAt });
    });
    socket.write(text, () => (sentAt = performance.now()));
  });
}

/** Parses a raw HTTP response and checks it is Silk's error shape with `status` and `code`; answers its msg. */
function expectSilkError(received: string, status: number, code: string): string {
  const headEnd = received.indexOf("\r\n\r\n");
  expect(headEnd).toBeGreaterThan(0);
  const [statusLine, ...headerLines] = received.slice(0, headEnd).split("\r\n");
  expect(statusLine).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
  const headers = new Map(headerLines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
  expect(headers.get("content-type")).toMatch(/^application\/json/);
  expect(headers.get("connection")).toBe("close");
  const body = received.slice(headEnd + 4);
  expect(Buffer.byteLength(body)).toBe(Number(headers.get("content-length")));
  const parsed = JSON.parse(body) as { error: string; msg: string };
  expect(Object.keys(parsed)).toEqual(["error", "msg"]);
  expect(parsed.error).toBe(code);
  return parsed.msg;
}

const POST_HEAD = (length: number): string => `POST /v2/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
const COUNT_BODY = JSON.stringify(countRequest({ users: nodesLabeled("User") }));

describe("errors of the HTTP parser answer in Silk's shape", () => {
  it("answers bad framing with 400 bad_request and closes the connection", async () => {
    const badMethod = await exchange("G@T /health HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(expectSilkError(badMethod.received, 400, "bad_request")).toMatch(/^the request is not valid HTTP\/1\.1 \(.+\); the connection is closed$/);
    // Two Content-Lengths that disagree: request smuggling's favourite ambiguity.
    const twoLengths = await exchange("POST /v2/query HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}");
    expectSilkError(twoLengths.received, 400, "bad_request");
    const badChunk = await exchange("POST /v2/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n");
    expectSilkError(badChunk.received, 400, "bad_request");
  });

  it("answers headers over the limit with 431 header_too_large", async () => {
    const { received } = await exchange(`GET /health HTTP/1.1\r\nHost: x\r\nX-Padding: ${"a".repeat(HTTP_HEADER_BYTES_MAX)}\r\n\r\n`);
    expect(expectSilkError(received, 431, "header_too_large")).toBe(`the request's headers are over ${HTTP_HEADER_BYTES_MAX} bytes in all; send fewer or shorter headers`);
  });
});

describe("a request that never finishes arriving", () => {
  it("is answered 408 request_timeout and closed: headers and half a body, on many sockets at once", async () => {
    const exchanges = await Promise.all(Array.from({ length: HALF_BODY_SOCKETS }, () => exchange(POST_HEAD(COUNT_BODY.length) + COUNT_BODY.slice(0, 10))));
    for (const { received, closedAfterMs } of exchanges) {
      expect(expectSilkError(received, 408, "request_timeout")).toMatch(/^the request did not arrive in time \(its headers within 300 ms, all of it within 600 ms\)/);
      expect(closedAfterMs).toBeLessThan(TIMEOUTS.requestMs + TIMEOUTS.checkIntervalMs + CLOSE_SLACK_MS);
    }
  });

  it("is answered 408 and closed when even the headers stop half way, or never start", async () => {
    for (const text of ["POST /v2/query HTTP/1.1\r\nHost: x\r\nContent-Ty", ""]) {
      const { received, closedAfterMs } = await exchange(text);
      expectSilkError(received, 408, "request_timeout");
      expect(closedAfterMs).toBeLessThan(TIMEOUTS.headersMs + TIMEOUTS.checkIntervalMs + CLOSE_SLACK_MS);
    }
  });

  it("does not cut short a request that arrived whole and runs longer than the request timeout", async () => {
    const response = await fetch(`http://127.0.0.1:${port}/v2/query`, { method: "POST", body: COUNT_BODY, headers: { "content-type": "application/json" } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ users: 0 });
  });
});

describe("the timeouts a gateway gets by default", () => {
  it("are the documented ones", async () => {
    const standard = await buildGateway({ database });
    try {
      // maxHeaderSize is set through fastify's `http` options; Node's Server has it at run time, its types do not.
      const { headersTimeout, requestTimeout, keepAliveTimeout, maxHeaderSize } = standard.server as typeof standard.server & { maxHeaderSize: number };
      expect({ headersTimeout, requestTimeout, keepAliveTimeout, maxHeaderSize }).toEqual({
        headersTimeout: HTTP_HEADERS_TIMEOUT_MS,
        requestTimeout: HTTP_REQUEST_TIMEOUT_MS,
        keepAliveTimeout: HTTP_KEEP_ALIVE_TIMEOUT_MS,
        maxHeaderSize: HTTP_HEADER_BYTES_MAX,
      });
    } finally {
      await standard.close();
    }
  });
});
