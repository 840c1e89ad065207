/**
 * The web console's API (gateway/console.ts) over a real on-disk database served by a real gateway: the editor's
 * check route (diagnostics with positions, whatever the text holds), the run route (a read query's answer as
 * `POST /<name>` gives it, write queries and texts that do not check refused with their codes), the index list, and
 * that a schemaless server refuses HelixQL. The page itself is driven in a browser by test/console/console.test.ts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { REPO, removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";
import { listeningGateway } from "../helpers/gateway.js";

const PROJECT = ["schema.hx", "queries.hx"].map((file) => ({ file: `examples/${file}`, text: readFileSync(join(REPO, "examples", file), "utf8") }));

let database: Database;
let app: FastifyInstance;
let base: string;
let ann: string;

beforeAll(async () => {
  database = await Database.open({ storage: { disk: join(temporaryDirectory(), "data") }, schema: PROJECT });
  ({ app, base } = await listeningGateway(database));
  ann = ((await database.query("CreateUser", { handle: "ann", name: "Ann", age: 31 })) as { user: { id: string } }).user.id;
  const bob = ((await database.query("CreateUser", { handle: "bob", name: "Bob", age: 42 })) as { user: { id: string } }).user.id;
  await database.query("Follow", { follower: bob, followed: ann, since: "2024-05-01" });
});

afterAll(async () => {
  await app?.close();
  await database?.close();
  removeTemporaryDirectories();
});

function post(path: string, body: unknown, at = base): Promise<Response> {
  return fetch(`${at}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
}

async function expectError(response: Response, status: number, code: string): Promise<string> {
  expect(response.status).toBe(status);
  const body = (await response.json()) as { error: string; msg: string };
  expect(body.error).toBe(code);
  return body.msg;
}

describe("POST /console/api/check", () => {
  it("answers the queries of a text that checks", async () => {
    const response = await post("/console/api/check", { text: "QUERY Find(h: String) =>\n  u <- N<User>({handle: h})\n  RETURN u" });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ diagnostics: [], queries: [{ name: "Find", request_type: "read", parameters: [{ name: "h", optional: false }] }] });
  });

  it("answers every diagnostic with its line and column, as 200", async () => {
    const response = await post("/console/api/check", { text: "QUERY Find() =>\n  u <- N<Usr>\n  RETURN v" });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { diagnostics: { severity: string; code: string; line: number; column: number; message: string }[]; queries: unknown[] };
    expect(body.queries).toEqual([]);
    expect(body.diagnostics.map((d) => `${d.severity} ${d.code} ${d.line}:${d.column}`)).toEqual(["error unknown_label 2:10", "error unknown_variable 3:10"]);
    expect(body.diagnostics[0].message).toMatch(/Usr/);
  });

  it("answers a syntax error at its place", async () => {
    const body = (await (await post("/console/api/check", { text: "QUERY Find( =>" })).json()) as { diagnostics: { code: string; line: number; column: number }[] };
    expect(body.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(["schema_syntax 1:13"]);
  });

  it("refuses a body without text", async () => {
    await expectError(await post("/console/api/check", { query: "x" }), 400, "bad_request");
    await expectError(await post("/console/api/check", ["text"]), 400, "bad_request");
  });
});

describe("POST /console/api/run", () => {
  it("runs a read query of the text with its parameters and answers as POST /<name> would, IDs as strings", async () => {
    const text = "QUERY Find(h: String) =>\n  u <- N<User>({handle: h})\n  RETURN u\nQUERY Followers(id: ID) =>\n  f <- N<User>(id)::In<Follows>\n  RETURN f";
    const found = await post("/console/api/run", { text, parameters: { h: "ann" } });
    expect(found.status).toBe(200);
    const user = ((await found.json()) as { u: Record<string, unknown> }).u;
    expect(user).toMatchObject({ id: ann, label: "User", handle: "ann", name: "Ann", age: 31 });
    const followers = await post("/console/api/run", { text, query: "Followers", parameters: { id: ann } });
    const body = (await followers.json()) as { f: { id: unknown; handle: string }[] };
    expect(body.f.map((record) => record.handle)).toEqual(["bob"]);
    expect(typeof body.f[0].id).toBe("string");
  });

  it("answers a text that does not check with its first diagnostic's code and every diagnostic in the message", async () => {
    const message = await expectError(await post("/console/api/run", { text: "QUERY Find() =>\n  u <- N<Usr>\n  RETURN u" }), 400, "unknown_label");
    expect(message).toMatch(/console\.hx:2:10/);
    await expectError(await post("/console/api/run", { text: "QUERY Find( =>" }), 400, "schema_syntax");
  });

  it("refuses write queries, unknown query names and bad parameters", async () => {
    const write = "QUERY Add(h: String) =>\n  u <- AddN<User>({handle: h, name: h, age: 1})\n  RETURN u";
    expect(await expectError(await post("/console/api/run", { text: write, parameters: { h: "eve" } }), 400, "unsupported_operation")).toMatch(/read queries only/);
    expect(await database.query("GetUser", { id: ann })).toBeDefined();
    await expectError(await post("/console/api/run", { text: "QUERY A() => u <- N<User> RETURN u", query: "B" }), 404, "query_not_found");
    await expectError(await post("/console/api/run", { text: "" }), 404, "query_not_found");
    await expectError(await post("/console/api/run", { text: "QUERY A(id: ID) => u <- N<User>(id) RETURN u", parameters: {} }), 400, "missing_parameter");
    await expectError(await post("/console/api/run", { text: "QUERY A(id: ID) => u <- N<User>(id) RETURN u", parameters: { id: "x" } }), 400, "invalid_id");
  });

  it("answers a query without statements", async () => {
    const response = await post("/console/api/run", { text: 'QUERY Hello() => RETURN "hello"' });
    expect(await response.json()).toBe("hello");
  });
});

describe("the console's other routes", () => {
  it("GET /console/api/indexes lists every index with its state", async () => {
    const body = (await (await fetch(`${base}/console/api/indexes`)).json()) as { indexes: { label: string; field: string; state: string }[] };
    expect(body.indexes).toContainEqual(expect.objectContaining({ label: "User", field: "handle", state: "active" }));
  });

  it("GET /console/api/partitions is unsupported_operation on a server whose database is not a cluster's", async () => {
    const message = await expectError(await fetch(`${base}/console/api/partitions`), 400, "unsupported_operation");
    expect(message).toMatch(/silk serve --cluster/);
  });

  it("serves no file outside its assets", async () => {
    await expectError(await fetch(`${base}/console/assets/..%2F..%2Fpackage.json`), 404, "route_not_found");
    await expectError(await fetch(`${base}/console/assets/nothing.js`), 404, "route_not_found");
  });

  it("refuses HelixQL on a schemaless server, which has no schema to check it against", async () => {
    const schemaless = await Database.open({ storage: "memory" });
    const served = await listeningGateway(schemaless);
    try {
      const message = await expectError(await post("/console/api/check", { text: "QUERY A() => u <- N<User> RETURN u" }, served.base), 400, "unsupported_operation");
      expect(message).toMatch(/--project/);
      await expectError(await post("/console/api/run", { text: "QUERY A() => u <- N<User> RETURN u" }, served.base), 400, "unsupported_operation");
    } finally {
      await served.app.close();
      await schemaless.close();
    }
  });
});
