/**
 * The HTTP gateway over a real on-disk database, driven with a real HTTP client (fetch) on a random port: the
 * admin routes, `/v2/query` results, every error status with its JSON body, and that a refused write leaves the
 * data as it was.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database, type DatabaseStatistics } from "../../runtime/embedded.js";
import { REQUEST_BODY_BYTES_MAX } from "../../gateway/query-v2.js";
import { buildGateway } from "../../gateway/server.js";
import { addUser, allNodes, countRequest, nodesLabeled, REPO, removeTemporaryDirectories, str, temporaryDirectory, write } from "../cli/helpers.js";
import { listeningGateway } from "../helpers/gateway.js";

let database: Database;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  const schema = readFileSync(join(REPO, "examples", "schema.hx"), "utf8");
  database = await Database.open({ storage: { disk: join(temporaryDirectory(), "data") }, schema: { file: "examples/schema.hx", text: schema } });
  ({ app, base } = await listeningGateway(database));
});

afterAll(async () => {
  await app?.close();
  await database?.close();
  removeTemporaryDirectories();
});

function post(body: string, contentType: string | undefined = "application/json"): Promise<Response> {
  return fetch(`${base}/v2/query`, { method: "POST", body, headers: contentType === undefined ? {} : { "content-type": contentType } });
}


async function expectError(response: Response, status: number, code: string): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await response.json()) as { error: string; msg: string };
  expect(body.error).toBe(code);
  expect(typeof body.msg).toBe("string");
  return body.msg;
}

async function userCount(): Promise<number> {
  const response = await post(JSON.stringify(countRequest({ users: nodesLabeled("User") })));
  expect(response.status).toBe(200);
  return ((await response.json()) as { users: number }).users;
}

describe("admin routes", () => {
  it("GET /health answers ok", async () => {
    const response = await fetch(`${base}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  it("GET /introspect returns the schema's JSON, and no queries for a project without any", async () => {
    const body = (await (await fetch(`${base}/introspect`)).json()) as { schema: { version: number; nodes: { name: string }[] }; queries: unknown[] };
    expect(body.queries).toEqual([]);
    expect(body.schema.version).toBe(1);
    expect(body.schema.nodes.map((type) => type.name)).toEqual(["User", "Post"]);
  });
});

describe("POST /v2/query", () => {
  it("runs a write and a read; IDs come back as JSON numbers, as HelixDB v3 answers them", async () => {
    const created = await post(JSON.stringify(write({ ann: addUser("Ann", "ann") })));
    expect(created.status).toBe(200);
    const body = (await created.json()) as { ann: { $id: number; $label: string; name: string }[] };
    expect(body.ann).toHaveLength(1);
    expect(body.ann[0]).toMatchObject({ $label: "User", name: "Ann", handle: "ann" });
    expect(Number.isSafeInteger(body.ann[0].$id)).toBe(true);
    const counted = await post(JSON.stringify(countRequest({ users: nodesLabeled("User"), all: allNodes })), "application/json; charset=utf-8");
    expect(counted.status).toBe(200);
    expect(await counted.json()).toEqual({ users: 1, all: 1 });
  });

  it("a write that fails part-way leaves the data unchanged", async () => {
    const before = await userCount();
    const response = await post(JSON.stringify(write({
      first: addUser("Bea", "bea"),
      second: addUser("Cy", "cy", [["age", { value: { string: "not a number" } }]]),
    })));
    await expectError(response, 400, "invalid_value");
    expect(await userCount()).toBe(before);
  });

  it("malformed JSON is 400 invalid_query_json", async () => {
    await expectError(await post('{"request_type": "read",'), 400, "invalid_query_json");
  });

  it("an empty body is 400 invalid_query_json", async () => {
    await expectError(await post(""), 400, "invalid_query_json");
    await expectError(await fetch(`${base}/v2/query`, { method: "POST" }), 400, "invalid_query_json");
  });

  it("a __proto__ key is refused as invalid JSON rather than passed on", async () => {
    await expectError(await post('{"__proto__": {"polluted": true}}'), 400, "invalid_query_json");
  });

  it("an unknown step is 400 malformed_tree naming its path", async () => {
    const body = countRequest({ x: { frobnicate: { input: allNodes } } });
    const message = await expectError(await post(JSON.stringify(body)), 400, "malformed_tree");
    expect(message).toContain("frobnicate");
  });

  it("a mutation in a read batch is 400 write_in_read", async () => {
    const body = { request_type: "read", query: { read: { entries: [{ query: { name: "a", root: addUser("Dee", "dee") } }] } } };
    await expectError(await post(JSON.stringify(body)), 400, "write_in_read");
  });

  it("a Content-Type other than JSON is 415 unsupported_media_type", async () => {
    await expectError(await post("{}", "text/plain"), 415, "unsupported_media_type");
    await expectError(await post("{}", "application/x-www-form-urlencoded"), 415, "unsupported_media_type");
  });

  it("a body over 16 MiB is 413 payload_too_large", async () => {
    const body = `{"pad":"${"x".repeat(REQUEST_BODY_BYTES_MAX)}"}`;
    await expectError(await post(body), 413, "payload_too_large");
  });

  it("a body just under the limit is read and judged on its content", async () => {
    const padding = REQUEST_BODY_BYTES_MAX - 1024;
    const body = JSON.stringify({ ...(countRequest({ users: nodesLabeled("User") }) as object), parameters: { pad: "x".repeat(padding) } });
    expect(body.length).toBeLessThan(REQUEST_BODY_BYTES_MAX);
    expect((await post(body)).status).toBe(200);
  });
});

describe("unknown routes", () => {
  it("answer 404 route_not_found with a JSON body", async () => {
    await expectError(await fetch(`${base}/nope`), 404, "route_not_found");
    await expectError(await fetch(`${base}/v2/query`), 404, "route_not_found");
    await expectError(await fetch(`${base}/health`, { method: "DELETE" }), 404, "route_not_found");
  });
});

/** A stand-in database's statistics: no transactions, no partitions. */
const noStatistics = async (): Promise<DatabaseStatistics> => ({ transactions: { committed: 0, aborted: 0, commitAnomalies: 0 }, partitions: [] });

describe("replies the engine cannot give through a real database", () => {
  // A stand-in database: these are the engine's rare failures and values, which a real one cannot be made to
  // produce on demand.
  async function gatewayOver(run: () => Promise<Record<string, unknown>>): Promise<{ url: string; close: () => Promise<void> }> {
    const queryJson = (): Promise<string> => Promise.reject(new Error("this stand-in has no queries"));
    const gateway = await listeningGateway({ runV2: run, queryJson, queries: [], schema: undefined, indexStatuses: async () => [], statistics: noStatistics });
    return { url: `${gateway.base}/v2/query`, close: () => gateway.app.close() };
  }

  it("a bigint in a result is written as a decimal string", async () => {
    const server = await gatewayOver(async () => ({ big: 18446744073709551615n, list: [1n, 2] }));
    try {
      const response = await fetch(server.url, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('{"big":"18446744073709551615","list":["1",2]}');
    } finally {
      await server.close();
    }
  });

  it("a failure that is not a SilkError is 500 internal, with a JSON body", async () => {
    const server = await gatewayOver(async () => {
      throw new TypeError("boom");
    });
    try {
      const response = await fetch(server.url, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
      const message = await expectError(response, 500, "internal");
      expect(message).toContain("boom");
    } finally {
      await server.close();
    }
  });

  it("logs a 500 once, through the server's logger, naming the code, the request ID and the URL without its query values; a 400 is not logged", async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString("utf8")) as Record<string, unknown>);
        done();
      },
    });
    const logger = pino({ level: "info", base: { service: "gateway-test" } }, sink);
    const run = async (): Promise<Record<string, unknown>> => {
      throw new TypeError("boom");
    };
    const queryJson = (): Promise<string> => Promise.reject(new Error("this stand-in has no queries"));
    const app = await buildGateway({ database: { runV2: run, queryJson, queries: [], schema: undefined, indexStatuses: async () => [], statistics: noStatistics }, logger });
    try {
      // A client may put a credential in the query string: its value must never reach the log.
      const failed = await app.inject({ method: "POST", url: "/v2/query?api_key=silk_secret&x=1", payload: "{}", headers: { "content-type": "application/json" } });
      expect(failed.statusCode).toBe(500);
      const refused = await app.inject({ method: "POST", url: "/v2/query", payload: "{", headers: { "content-type": "application/json" } });
      expect(refused.statusCode).toBe(400);
      const errors = lines.filter((line) => line.level === 50);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ service: "gateway-test", url: "/v2/query?api_key=[redacted]&x=[redacted]", reqId: expect.any(String) });
      expect(JSON.stringify(lines)).not.toContain("silk_secret");
      expect(errors[0].msg).toMatch(/^internal: .*boom/);
    } finally {
      await app.close();
    }
  });

  it("introspection of a schemaless server says so, with the indexes in place of a schema", async () => {
    const server = await gatewayOver(async () => ({}));
    try {
      const response = await fetch(server.url.replace("/v2/query", "/introspect"));
      expect(await response.json()).toEqual({ schema: null, queries: [], indexes: [] });
    } finally {
      await server.close();
    }
  });
});
