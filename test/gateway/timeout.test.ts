/**
 * The execution deadline over HTTP: 408 `{"error": "query_timeout", "msg": ...}` from `/v2/query` (the request's
 * `timeout_ms`) and from a per-query route (the server's default), with nothing of the timed-out request written.
 * The database runs on a fake clock that moves one millisecond per reading, so no assertion depends on speed.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVE_TIMEOUT_MS_DEFAULT } from "../../bin/defaults.js";
import { serveTimeoutMs } from "../../bin/serve-settings.js";
import { Database } from "../../runtime/embedded.js";
import { QUERY_TIMEOUT_MS_MAX } from "../../protocol/limits.js";
import { listeningGateway } from "../helpers/gateway.js";
import { SOCIAL_SOURCES } from "./social-project.js";

let database: Database;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  let now = 0;
  database = await Database.open({ storage: "memory", schema: SOCIAL_SOURCES }, { clockMs: () => (now += 1), defaultTimeoutMs: 2 });
  ({ app, base } = await listeningGateway(database));
});

afterAll(async () => {
  await app?.close();
  await database?.close();
});

function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${base}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
}

const rows = Array.from({ length: 50 }, (_, i) => ({ name: `u${i}`, age: 20 }));
const bulkCreate = (timeoutMs: number): unknown => ({
  request_type: "write",
  timeout_ms: timeoutMs,
  parameters: { rows },
  query: {
    write: {
      entries: [{ for_each: { param: "rows", body: [{ query: { root: { add_n: { label: "User", properties: [["name", { expr: { param: "name" } }], ["age", { expr: { param: "age" } }]] } } } }] } }],
      returns: [],
    },
  },
});
const countUsers = { request_type: "read", timeout_ms: QUERY_TIMEOUT_MS_MAX, query: { read: { entries: [{ query: { name: "n", root: { count: { input: { nodes: { reference: "all" } } } } } }], returns: ["n"] } } };

async function expectTimeout(response: Response): Promise<void> {
  expect(response.status).toBe(408);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await response.json()) as { error: string; msg: string };
  expect(body.error).toBe("query_timeout");
  expect(body.msg).toMatch(/deadline/);
}

async function users(): Promise<number> {
  return ((await (await post("/v2/query", countUsers)).json()) as { n: number }).n;
}

describe("408 query_timeout over HTTP", () => {
  it("/v2/query past its timeout_ms answers 408 and writes nothing", async () => {
    await expectTimeout(await post("/v2/query", bulkCreate(20)));
    expect(await users()).toBe(0);
    expect((await post("/v2/query", bulkCreate(QUERY_TIMEOUT_MS_MAX))).status).toBe(200);
    expect(await users()).toBe(50);
  });

  it("a per-query route runs under the server's default deadline", async () => {
    await expectTimeout(await post("/CreateUser", { name: "Late", age: 3 }));
    expect(await users()).toBe(50);
  });
});

describe("--timeout-ms", () => {
  it("defaults to 30 seconds and takes whole milliseconds up to the maximum", () => {
    expect(serveTimeoutMs(undefined)).toBe(SERVE_TIMEOUT_MS_DEFAULT);
    expect(serveTimeoutMs("250")).toBe(250);
    for (const bad of ["0", "-5", "1.5", "soon", String(QUERY_TIMEOUT_MS_MAX + 1)]) {
      expect(() => serveTimeoutMs(bad)).toThrow(expect.objectContaining({ code: "invalid_option" }));
    }
  });
});
