/**
 * The server never crashes and never answers a caller's mistake with a 500: random and truncated JSON, random
 * parameter objects and random operation trees sent to a real server over HTTP all get either a 200 or a 4xx
 * with the `{"error", "msg"}` body, and the server still answers afterwards.
 */
import { join } from "node:path";
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";
import { listeningGateway } from "../helpers/gateway.js";
import { SOCIAL_QUERY_NAMES, SOCIAL_SOURCES } from "./social-project.js";

let database: Database;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  database = await Database.open({ storage: { disk: join(temporaryDirectory(), "data") }, schema: SOCIAL_SOURCES });
  ({ app, base } = await listeningGateway(database));
});

afterAll(async () => {
  await app?.close();
  await database?.close();
  removeTemporaryDirectories();
});

async function post(path: string, body: string): Promise<void> {
  const response = await fetch(`${base}${path}`, { method: "POST", body, headers: { "content-type": "application/json" } });
  const text = await response.text();
  const context = `POST ${path} ${body.slice(0, 200)} -> ${response.status} ${text.slice(0, 200)}`;
  expect(response.status, context).toBeLessThan(500);
  if (response.status !== 200) {
    const error = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(error).sort(), context).toEqual(["error", "msg"]);
  }
}

/** Truncations and one-character edits of a valid body. */
function damaged(valid: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.nat({ max: valid.length }).map((end) => valid.slice(0, end)),
    fc.tuple(fc.nat({ max: valid.length - 1 }), fc.string({ maxLength: 3 })).map(([at, text]) => valid.slice(0, at) + text + valid.slice(at + 1)),
  );
}

const VALID_TREE = JSON.stringify({
  request_type: "read",
  query: { read: { entries: [{ query: { name: "u", root: { where: { input: { nodes: { reference: "all" } }, predicate: { gt: { left: { property: "age" }, right: { constant: { i64: 3 } } } } } } } }], returns: ["u"] } },
});

describe("the server under random input", () => {
  it("answers random parameters of every query with 200 or a 4xx error body", async () => {
    const parameters = fc.dictionary(fc.constantFrom("id", "a", "b", "name", "age", "x"), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...SOCIAL_QUERY_NAMES), parameters, async (name, body) => post(`/${name}`, JSON.stringify(body))),
      { numRuns: 150 },
    );
  });

  it("answers random and damaged JSON with 4xx error bodies", async () => {
    const bodies = fc.oneof(fc.string({ maxLength: 40 }), damaged('{"name": "Ann", "age": 31}'), damaged(VALID_TREE));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("/CreateUser", "/GetUser", "/v2/query"), bodies, async (path, body) => post(path, body)),
      { numRuns: 200 },
    );
  });

  it("answers random operation trees with 200 or a 4xx error body", async () => {
    await fc.assert(fc.asyncProperty(fc.jsonValue({ maxDepth: 5 }), async (tree) => post("/v2/query", JSON.stringify(tree))), { numRuns: 150 });
    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
  });
});
