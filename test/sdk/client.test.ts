/**
 * SilkClient against a real gateway over HTTP: query routes, `/v2/query` trees, every failure as a SilkClientError
 * with the server's status, code and message (and nothing written), bodies that are not the error JSON as
 * `bad_response`, an unreachable server as `network_error`, and the hosted form's API key and 429 with Retry-After.
 */
import type { FastifyInstance } from "fastify";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { buildGateway } from "../../gateway/server.js";
import type { KeyRecord } from "../../gateway/hosted/key-store.js";
import { addN, eq, gte, lit, nodes, param, prop, ptype, read, write } from "../../sdk/builder.js";
import { SilkClient, SilkClientError } from "../../sdk/client.js";
import { listeningGateway } from "../helpers/gateway.js";
import { SOCIAL_SOURCES } from "../gateway/social-project.js";

let database: Database;
let app: FastifyInstance;
let client: SilkClient;

beforeAll(async () => {
  database = await Database.open({ storage: "memory", schema: SOCIAL_SOURCES });
  const gateway = await listeningGateway(database);
  app = gateway.app;
  client = new SilkClient({ url: `${gateway.base}/` });
});

afterAll(async () => {
  await app?.close();
  await database?.close();
});

interface User {
  id: string;
  label: string;
  name: string;
  age: number;
}

/** The error a call fails with; fails the test when it resolves. */
async function failure(call: Promise<unknown>): Promise<SilkClientError> {
  try {
    await call;
  } catch (error) {
    expect(error).toBeInstanceOf(SilkClientError);
    return error as SilkClientError;
  }
  throw new Error("expected the call to fail");
}

async function userCount(): Promise<number> {
  const result = await client.v2<{ n: number }>(read().entry("n", nodes.where(eq(prop("$label"), lit.string("User"))).count()).returns("n").build());
  return result.n;
}

describe("SilkClient on query routes", () => {
  it("creates, reads and traverses; IDs are decimal strings", async () => {
    const { user: ann } = await client.query<{ user: User }>("CreateUser", { name: "Ann", age: 30 });
    expect(ann).toEqual({ id: expect.stringMatching(/^[0-9]+$/), label: "User", name: "Ann", age: 30 });
    const { user: bob } = await client.query<{ user: User }>("CreateUser", { name: "Bob", age: 41 });
    expect(await client.query("GetUser", { id: ann.id })).toEqual({ user: ann });
    expect(await client.query("Follow", { a: bob.id, b: ann.id })).toBe("ok");
    expect(await client.query("Followers", { id: ann.id })).toEqual({ users: [bob] });
    expect(await client.query("AllUsers")).toEqual({ users: [ann, bob] });
  });

  it("throws the server's status, code and message, and nothing is written", async () => {
    const before = await userCount();
    const missing = await failure(client.query("CreateUser", { name: "Cy" }));
    expect([missing.status, missing.code]).toEqual([400, "missing_parameter"]);
    expect(missing.message).toMatch(/age/);
    const mistyped = await failure(client.query("CreateUser", { name: "Cy", age: true }));
    expect([mistyped.status, mistyped.code]).toEqual([400, "invalid_type"]);
    const undeclared = await failure(client.query("CreateUser", { name: "Cy", age: 3, city: "Oslo" }));
    expect([undeclared.status, undeclared.code]).toEqual([400, "unknown_parameter"]);
    const unknown = await failure(client.query("NoSuchQuery", {}));
    expect([unknown.status, unknown.code]).toEqual([404, "query_not_found"]);
    expect(await userCount()).toBe(before);
    // The error exposes status, code and message, and no headers (SPEC Errors rule 2).
    expect(Object.keys(missing).sort()).toEqual(["code", "name", "retryAfterSeconds", "status"]);
    expect(missing.retryAfterSeconds).toBeUndefined();
  });

  it("refuses a name that is not a query name before sending anything", () => {
    expect(() => client.query("a/b", {})).toThrow(TypeError);
  });
});

describe("SilkClient on /v2/query", () => {
  it("runs built trees with typed parameters", async () => {
    const created = await client.v2<{ u: { $id: number; name: string }[] }>(
      write().entry("u", addN("User", { name: lit.string("Dee"), age: param("age") })).returns("u").parameter("age", 52, ptype.i64).build(),
    );
    // /v2/query answers IDs as JSON numbers, as HelixDB v3 does; one read back names the same record.
    expect(created.u[0]).toMatchObject({ $id: expect.any(Number), name: "Dee", age: 52 });
    const again = await client.v2<{ u: { name: string }[] }>(read().entry("u", nodes.byIds([created.u[0].$id])).returns("u").build());
    expect(again.u.map((row) => row.name)).toEqual(["Dee"]);
    // values answers one object per element, as HelixDB v3 does.
    const older = await client.v2<{ names: { name: string }[] }>(
      read().entry("names", nodes.where(gte(prop("age"), param("min"))).values(["name"])).returns("names").parameter("min", 41).build(),
    );
    expect(older.names.map((row) => row.name).sort()).toEqual(["Bob", "Dee"]);
  });

  it("turns a refused tree into its code", async () => {
    const error = await failure(client.v2(read().entry("u", addN("User", { name: lit.string("Eve") })).returns("u").build()));
    expect([error.status, error.code]).toEqual([400, "write_in_read"]);
    const malformed = await failure(client.v2({ request_type: "read", query: { read: { entries: [{ query: { root: { nodes: {} } } }] } } }));
    expect([malformed.status, malformed.code]).toEqual([400, "malformed_tree"]);
  });
});

describe("SilkClient on answers that are not Silk's", () => {
  let stub: FastifyInstance;
  let stubUrl: string;

  beforeAll(async () => {
    stub = Fastify();
    stub.post("/Html", async (_request, reply) => reply.code(502).type("text/html").send("<h1>Bad Gateway</h1>"));
    stub.post("/OtherJson", async (_request, reply) => reply.code(500).send({ message: "not ours" }));
    stub.post("/NotJson", async (_request, reply) => reply.code(200).type("text/plain").send("hello"));
    // Answers an ID of a cluster's second partition (beyond 2^53) as a bare number, and echoes the body it was sent.
    stub.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => done(null, body));
    stub.post("/v2/query", async (request, reply) =>
      reply.type("application/json").send(`{"u":[{"$id":9223372036854775809,"age":5,"score":0.25}],"sent":${JSON.stringify(request.body)}}`),
    );
    await stub.listen({ port: 0, host: "127.0.0.1" });
    const address = stub.server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    stubUrl = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await stub?.close();
  });

  it("gives bad_response with the status and an excerpt of the body", async () => {
    const stubClient = new SilkClient({ url: stubUrl });
    const html = await failure(stubClient.query("Html"));
    expect([html.status, html.code]).toEqual([502, "bad_response"]);
    expect(html.message).toContain("<h1>Bad Gateway</h1>");
    const other = await failure(stubClient.query("OtherJson"));
    expect([other.status, other.code]).toEqual([500, "bad_response"]);
    const text = await failure(stubClient.query("NotJson"));
    expect([text.status, text.code]).toEqual([200, "bad_response"]);
  });

  it("reads /v2/query IDs beyond 2^53 exactly, as bigints, and sends bigints back as bare JSON integers", async () => {
    const answer = await new SilkClient({ url: stubUrl }).v2<{ u: { $id: bigint; age: number; score: number }[]; sent: string }>({ id: 9223372036854775809n, n: 1 });
    expect(answer.u).toEqual([{ $id: 9223372036854775809n, age: 5, score: 0.25 }]);
    expect(answer.sent).toBe('{"id":9223372036854775809,"n":1}');
  });

  it("gives network_error with status 0 when nothing answers", async () => {
    const closed = Fastify();
    await closed.listen({ port: 0, host: "127.0.0.1" });
    const address = closed.server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    await closed.close();
    const error = await failure(new SilkClient({ url: `http://127.0.0.1:${address.port}` }).query("GetUser", { id: "1" }));
    expect([error.status, error.code]).toEqual([0, "network_error"]);
  });

  it("gives request_timeout when the answer takes longer than timeoutMs", async () => {
    const slow = Fastify();
    slow.post("/Slow", async () => new Promise((resolve) => setTimeout(() => resolve({ late: true }), 2_000)));
    await slow.listen({ port: 0, host: "127.0.0.1" });
    const address = slow.server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    const error = await failure(new SilkClient({ url: `http://127.0.0.1:${address.port}`, timeoutMs: 50 }).query("Slow"));
    expect([error.status, error.code]).toEqual([0, "request_timeout"]);
    await slow.close();
  });

  it("refuses a url that is not http(s)", () => {
    expect(() => new SilkClient({ url: "localhost:6969" })).toThrow(TypeError);
  });
});

describe("SilkClient on the hosted gateway", () => {
  let hosted: FastifyInstance;
  let hostedUrl: string;
  let tokens = 1;

  beforeAll(async () => {
    const key: KeyRecord = { id: "k1", name: "test", created: "2024-01-01T00:00:00.000Z", revoked: null, sha256: "" };
    hosted = await buildGateway({
      database,
      hosted: {
        databaseId: "client-test",
        keys: { verify: (presented: string) => (presented === "secret-key" ? key : undefined) },
        isDisabled: () => false,
        bucket: {
          admit: async () => (tokens-- > 0 ? { admitted: true } : { admitted: false, retryAfterSeconds: 7 }),
          close: async () => undefined,
        },
      },
    });
    await hosted.listen({ port: 0, host: "127.0.0.1" });
    const address = hosted.server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    hostedUrl = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await hosted?.close();
  });

  it("sends the API key as a Bearer token, and gets 401/403 without a good one", async () => {
    const tree = read().entry("n", nodes.all().count()).returns("n").build();
    expect(await new SilkClient({ url: hostedUrl, apiKey: "secret-key" }).v2(tree)).toEqual({ n: expect.any(Number) });
    const none = await failure(new SilkClient({ url: hostedUrl }).v2(tree));
    expect([none.status, none.code]).toEqual([401, "unauthorized"]);
    const wrong = await failure(new SilkClient({ url: hostedUrl, apiKey: "wrong" }).v2(tree));
    expect([wrong.status, wrong.code]).toEqual([403, "forbidden"]);
  });

  it("gives rate_limited with the Retry-After seconds when the bucket is empty", async () => {
    tokens = 0;
    const error = await failure(new SilkClient({ url: hostedUrl, apiKey: "secret-key" }).v2(read().entry("n", nodes.all().count()).returns("n").build()));
    expect([error.status, error.code, error.retryAfterSeconds]).toEqual([429, "rate_limited", 7]);
    expect(error.message).toBe("rate limit exceeded");
  });
});
