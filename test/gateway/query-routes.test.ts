/**
 * `POST /<QueryName>` over a real on-disk database and a real HTTP client: each query of the project answers its
 * HelixQL response, `GET /introspect` lists the queries, and every refusal (unknown query, bad JSON, missing,
 * undeclared or mistyped parameters, wrong media type) has its status and `{"error", "msg"}` body and writes
 * nothing. The other routes keep their own answers.
 */
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { countRequest, nodesLabeled, removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";
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

interface UserRecord {
  id: string;
  label: string;
  name: string;
  age: number;
}

function call(name: string, body: string | undefined, contentType: string | undefined = "application/json"): Promise<Response> {
  return fetch(`${base}/${name}`, { method: "POST", body, headers: contentType === undefined ? {} : { "content-type": contentType } });
}

async function callJson(name: string, parameters: unknown): Promise<unknown> {
  const response = await call(name, JSON.stringify(parameters));
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return response.json();
}

async function expectError(response: Response, status: number, code: string): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await response.json()) as { error: string; msg: string };
  expect(Object.keys(body).sort()).toEqual(["error", "msg"]);
  expect(body.error).toBe(code);
  expect(typeof body.msg).toBe("string");
  return body.msg;
}

async function userCount(): Promise<number> {
  const response = await fetch(`${base}/v2/query`, { method: "POST", body: JSON.stringify(countRequest({ users: nodesLabeled("User") })), headers: { "content-type": "application/json" } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { users: number }).users;
}

describe("POST /<QueryName>", () => {
  it("creates, reads, links and traverses", async () => {
    const ann = ((await callJson("CreateUser", { name: "Ann", age: 30 })) as { user: UserRecord }).user;
    expect(ann).toEqual({ id: expect.stringMatching(/^[0-9]+$/), label: "User", name: "Ann", age: 30 });
    const bob = ((await callJson("CreateUser", { name: "Bob", age: 41 })) as { user: UserRecord }).user;
    expect(await callJson("GetUser", { id: ann.id })).toEqual({ user: ann });
    expect(await callJson("GetUser", { id: "987654321" })).toEqual({ user: null });
    const followed = await call("Follow", JSON.stringify({ a: bob.id, b: ann.id }));
    expect(followed.status).toBe(200);
    expect(await followed.text()).toBe('"ok"');
    expect(await callJson("Followers", { id: ann.id })).toEqual({ users: [bob] });
  });

  it("a query without parameters takes {}, an empty body, or no body and no Content-Type", async () => {
    const count = await userCount();
    for (const response of [await call("AllUsers", "{}"), await call("AllUsers", ""), await call("AllUsers", undefined, undefined)]) {
      expect(response.status).toBe(200);
      expect(((await response.json()) as { users: unknown[] }).users).toHaveLength(count);
    }
  });

  it("an unknown query is 404 query_not_found, for any single-segment path", async () => {
    const message = await expectError(await call("Nope", "{}"), 404, "query_not_found");
    expect(message).toContain("Nope");
    await expectError(await call("health", "{}"), 404, "query_not_found");
    await expectError(await call("createuser", "{}"), 404, "query_not_found");
    await expectError(await call("", "{}"), 404, "query_not_found");
  });

  it("refuses bad bodies and parameters with 400 and writes nothing", async () => {
    const before = await userCount();
    await expectError(await call("CreateUser", '{"name": "Cy",'), 400, "invalid_query_json");
    await expectError(await call("CreateUser", '{"__proto__": {"name": "Cy"}}'), 400, "invalid_query_json");
    expect(await expectError(await call("CreateUser", JSON.stringify({ name: "Cy" })), 400, "missing_parameter")).toContain("age");
    expect(await expectError(await call("CreateUser", JSON.stringify({ name: "Cy", age: 3, mail: "x" })), 400, "unknown_parameter")).toContain("mail");
    await expectError(await call("CreateUser", JSON.stringify({ name: "Cy", age: false })), 400, "invalid_type");
    await expectError(await call("CreateUser", JSON.stringify({ name: "Cy", age: 256 })), 400, "invalid_value");
    await expectError(await call("CreateUser", JSON.stringify([{ name: "Cy", age: 3 }])), 400, "invalid_type");
    await expectError(await call("CreateUser", "null"), 400, "invalid_type");
    await expectError(await call("CreateUser", '"Cy"'), 400, "invalid_type");
    await expectError(await call("GetUser", JSON.stringify({ id: "-1" })), 400, "invalid_id");
    await expectError(await call("CreateUser", '{"name": "Cy", "age": 3}', "text/plain"), 415, "unsupported_media_type");
    expect(await userCount()).toBe(before);
  });

  it("a write that fails while running answers its error and leaves the data as it was", async () => {
    const before = await userCount();
    const ann = ((await callJson("CreateUser", { name: "Dee", age: 9 })) as { user: UserRecord }).user;
    await expectError(await call("Follow", JSON.stringify({ a: ann.id, b: "987654321" })), 404, "node_not_found");
    expect(await callJson("Followers", { id: "987654321" })).toEqual({ users: [] });
    expect(await userCount()).toBe(before + 1);
  });

  it("only POST runs a query: other methods are 404 route_not_found, as are deeper paths", async () => {
    await expectError(await fetch(`${base}/AllUsers`), 404, "route_not_found");
    await expectError(await fetch(`${base}/AllUsers`, { method: "PUT", body: "{}", headers: { "content-type": "application/json" } }), 404, "route_not_found");
    await expectError(await call("AllUsers/more", "{}"), 404, "route_not_found");
  });
});

describe("the other routes beside the query routes", () => {
  it("GET /introspect lists the queries next to the schema", async () => {
    const body = (await (await fetch(`${base}/introspect`)).json()) as {
      schema: { nodes: { name: string }[] };
      queries: { name: string; parameters: unknown[]; returns: string[]; request_type: string }[];
    };
    expect(body.schema.nodes.map((type) => type.name)).toEqual(["User"]);
    expect(body.queries.map((query) => query.name)).toEqual(SOCIAL_QUERY_NAMES);
    expect(body.queries.find((query) => query.name === "CreateUser")).toEqual({
      name: "CreateUser",
      parameters: [
        { name: "name", type: "String", optional: false },
        { name: "age", type: "U8", optional: false },
      ],
      returns: ["user"],
      request_type: "write",
    });
    expect(body.queries.find((query) => query.name === "Follow")).toMatchObject({ returns: [], request_type: "write" });
  });

  it("/health and /v2/query answer as before", async () => {
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ status: "ok" });
    expect(typeof (await userCount())).toBe("number");
    await expectError(await fetch(`${base}/v2/query`), 404, "route_not_found");
    await expectError(await fetch(`${base}/v2/query`, { method: "POST", body: "", headers: { "content-type": "application/json" } }), 400, "invalid_query_json");
  });
});
