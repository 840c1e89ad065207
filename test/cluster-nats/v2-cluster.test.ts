/**
 * The `/v2/query` suite against a cluster (issue 6): the requests of test/gateway/server.test.ts's "POST /v2/query"
 * block (the same bodies and content types, built the same way), the cross-partition requests of
 * cluster-cli.test.ts, and fuzz.test.ts's valid tree with random damage, each sent over real HTTP to two gateways
 * (gateway/server.ts buildGateway on loopback):
 *
 * - one whose database is a cluster: 2 partitions × 3 in-process replicas on three nats-servers, connectCluster as
 *   the coordinator (test/helpers/cluster.ts);
 * - one whose database is embedded, with 2 partitions too (new records alternate between partitions the same way,
 *   so both hand out the same IDs).
 *
 * Every request must get the same status, content type and body (byte for byte) from both, and the status the
 * original suite expects. Both databases share one fixed clock, so `DEFAULT NOW` values agree. The requests run in
 * order, each on the data the previous ones left, so a refused write that changed anything on one side shows up as
 * a different count afterwards. Everything stops in afterAll, which checks that no nats-server is left.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { REQUEST_BODY_BYTES_MAX } from "../../gateway/query-v2.js";
import { parseJsonExact } from "../../sdk/json.js";
import { addUser, allNodes, countRequest, nodesLabeled, REPO, str, write } from "../cli/helpers.js";
import { leftovers, startTestCluster, startTestNats, stopTestNats, type TestCluster, type TestNats } from "../helpers/cluster.js";
import { listeningGateway, type ListeningGateway } from "../helpers/gateway.js";
import { addE, addN, entry, in_, nodesById, read, ref, values, write as writeTree } from "../helpers/tree.js";

const NOW = new Date("2024-06-01T12:00:00.000Z");
const now = (): Date => NOW;

let nats: TestNats | undefined;
let cluster: TestCluster | undefined;
let embedded: Database | undefined;
let clusterGateway: ListeningGateway | undefined;
let embeddedGateway: ListeningGateway | undefined;

beforeAll(async () => {
  const schema = { file: "examples/schema.hx", text: readFileSync(join(REPO, "examples", "schema.hx"), "utf8") };
  nats = await startTestNats(3);
  cluster = await startTestCluster(nats, { partitions: 2, replicas: 3, schema, now });
  embedded = await Database.open({ storage: "memory", partitions: 2, schema }, { now });
  clusterGateway = await listeningGateway(cluster.database);
  embeddedGateway = await listeningGateway(embedded);
}, 60_000);

afterAll(async () => {
  await clusterGateway?.app.close();
  await embeddedGateway?.app.close();
  await cluster?.close();
  await embedded?.close();
  if (nats !== undefined) await stopTestNats(nats);
  expect(leftovers()).toEqual([]);
}, 30_000);


interface Reply {
  readonly status: number;
  readonly contentType: string | null;
  readonly text: string;
}

async function send(base: string, body: string | undefined, contentType: string | undefined, method = "POST"): Promise<Reply> {
  const response = await fetch(`${base}/v2/query`, { method, body, headers: contentType === undefined ? {} : { "content-type": contentType } });
  return { status: response.status, contentType: response.headers.get("content-type"), text: await response.text() };
}

/**
 * Sends one request to the cluster's gateway and then to the embedded one; both replies must be equal. Returns the
 * cluster's status and parsed body.
 */
async function post(body: string | undefined, contentType: string | undefined = "application/json", method = "POST"): Promise<{ status: number; json: Record<string, unknown> }> {
  const fromCluster = await send(clusterGateway!.base, body, contentType, method);
  const fromEmbedded = await send(embeddedGateway!.base, body, contentType, method);
  const shown = (body ?? "").slice(0, 300);
  expect(fromCluster, `the cluster's reply to ${shown}`).toStrictEqual(fromEmbedded);
  expect(fromCluster.contentType).toMatch(/^application\/json/);
  // IDs are JSON numbers on /v2/query, beyond 2^53 on the second partition: parsed as HelixDB's SDK parses them.
  const json = parseJsonExact(fromCluster.text) as Record<string, unknown>;
  if (fromCluster.status !== 200) expect(Object.keys(json).sort()).toEqual(["error", "msg"]);
  return { status: fromCluster.status, json };
}

async function expectError(reply: { status: number; json: Record<string, unknown> }, status: number, code: string): Promise<string> {
  expect(reply.status).toBe(status);
  expect(reply.json.error).toBe(code);
  expect(typeof reply.json.msg).toBe("string");
  return reply.json.msg as string;
}

async function userCount(): Promise<number> {
  const reply = await post(JSON.stringify(countRequest({ users: nodesLabeled("User") })));
  expect(reply.status).toBe(200);
  return reply.json.users as number;
}

describe("POST /v2/query on a cluster answers as the embedded database", () => {
  it("runs a write and a read; IDs come back as JSON numbers", async () => {
    const created = await post(JSON.stringify(write({ ann: addUser("Ann", "ann") })));
    expect(created.status).toBe(200);
    const ann = created.json.ann as { $id: number | bigint; $label: string; name: string }[];
    expect(ann).toHaveLength(1);
    expect(ann[0]).toMatchObject({ $label: "User", name: "Ann", handle: "ann", created_at: NOW.toISOString() });
    expect(["number", "bigint"]).toContain(typeof ann[0].$id);
    const counted = await post(JSON.stringify(countRequest({ users: nodesLabeled("User"), all: allNodes })), "application/json; charset=utf-8");
    expect(counted.status).toBe(200);
    expect(counted.json).toEqual({ users: 1, all: 1 });
  });

  it("a write that fails part-way leaves the data unchanged on both", async () => {
    const before = await userCount();
    const response = await post(JSON.stringify(write({
      first: addUser("Bea", "bea"),
      second: addUser("Cy", "cy", [["age", { value: { string: "not a number" } }]]),
    })));
    await expectError(response, 400, "invalid_value");
    expect(await userCount()).toBe(before);
  });

  it("refuses malformed bodies, unknown steps, writes in reads and other content types alike", async () => {
    await expectError(await post('{"request_type": "read",'), 400, "invalid_query_json");
    await expectError(await post(""), 400, "invalid_query_json");
    await expectError(await post(undefined, undefined), 400, "invalid_query_json");
    await expectError(await post('{"__proto__": {"polluted": true}}'), 400, "invalid_query_json");
    const unknownStep = countRequest({ x: { frobnicate: { input: allNodes } } });
    expect(await expectError(await post(JSON.stringify(unknownStep)), 400, "malformed_tree")).toContain("frobnicate");
    const writeInRead = { request_type: "read", query: { read: { entries: [{ query: { name: "a", root: addUser("Dee", "dee") } }] } } };
    await expectError(await post(JSON.stringify(writeInRead)), 400, "write_in_read");
    await expectError(await post("{}", "text/plain"), 415, "unsupported_media_type");
    await expectError(await post("{}", "application/x-www-form-urlencoded"), 415, "unsupported_media_type");
    await expectError(await post(undefined, undefined, "GET"), 404, "route_not_found");
  });

  it("judges a body just under the limit on its content, and refuses one over it with 413", async () => {
    await expectError(await post(`{"pad":"${"x".repeat(REQUEST_BODY_BYTES_MAX)}"}`), 413, "payload_too_large");
    const padding = REQUEST_BODY_BYTES_MAX - 1024;
    const body = JSON.stringify({ ...(countRequest({ users: nodesLabeled("User") }) as object), parameters: { pad: "x".repeat(padding) } });
    expect(body.length).toBeLessThan(REQUEST_BODY_BYTES_MAX);
    expect((await post(body)).status).toBe(200);
  }, 30_000);

  it("writes across partitions (two users in one transaction, an edge between them), traverses, refuses a duplicate", async () => {
    // cluster-cli.test.ts's requests: the two users land on different partitions, so the write is a 2PC.
    const created = await post(JSON.stringify(writeTree([entry("a", addN("User", { handle: "bob", name: "Bob", age: 31 })), entry("b", addN("User", { handle: "cat", name: "Cat", age: 32 }))], ["a", "b"])));
    expect(created.status).toBe(200);
    const bob = (created.json.a as { $id: number | bigint }[])[0].$id;
    const cat = (created.json.b as { $id: number | bigint }[])[0].$id;
    const partitionWidth = 2n ** 63n;
    expect(BigInt(bob) / partitionWidth).not.toBe(BigInt(cat) / partitionWidth);
    const followed = await post(JSON.stringify(writeTree([entry("e", addE(nodesById(bob), "Follows", ref.ids(cat), { since: "2024-05-01" }))], ["e"])));
    expect(followed.status).toBe(200);
    const followers = await post(JSON.stringify(read([entry("f", values(in_(nodesById(cat), "Follows"), "name"))], ["f"])));
    expect(followers.status).toBe(200);
    expect(JSON.stringify(followers.json)).toContain("Bob");
    await expectError(await post(JSON.stringify(write({ again: addUser("Other", "bob") }))), 409, "unique_violation");
    expect(await userCount()).toBe(3);
  });

  it("blocks a UNIQUE index built over a duplicate held on two partitions, on both", async () => {
    const created = await post(JSON.stringify(writeTree([entry("a", addN("User", { handle: "dup1", name: "Dup", age: 40 })), entry("b", addN("User", { handle: "dup2", name: "Dup", age: 41 }))], ["a", "b"])));
    expect(created.status).toBe(200);
    const operation = (tag: string): string => JSON.stringify(write({ op: { [tag]: { label: "User", property: "name", ...(tag === "create_index" ? { unique: true } : {}) } } }));
    // Each side builds in its own time (the answers' counters differ meanwhile): wait for both, then compare.
    for (const base of [clusterGateway!.base, embeddedGateway!.base]) {
      expect((await send(base, operation("create_index"), "application/json")).status).toBe(200);
      for (let poll = 0; ; poll += 1) {
        const state = (JSON.parse((await send(base, operation("get_index_operation"), "application/json")).text) as { op: { state: string } }).op.state;
        if (state !== "constructing" && state !== "validating") break;
        if (poll === 1_000) throw new Error(`User.name is still ${state} at ${base}`);
        await new Promise((resume) => setTimeout(resume, 20));
      }
    }
    const settled = await post(operation("get_index_operation"));
    expect(settled.json.op).toMatchObject({ state: "blocked", reason: "unique_violation" });
    expect((await post(operation("drop_index"))).status).toBe(200);
  });

  it("answers fuzz.test.ts's valid tree, damaged at random, the same (a fixed seed)", async () => {
    const valid = JSON.stringify({
      request_type: "read",
      query: { read: { entries: [{ query: { name: "u", root: { where: { input: { nodes: { reference: "all" } }, predicate: { gt: { left: { property: "age" }, right: { constant: { i64: 3 } } } } } } } }], returns: ["u"] } },
    });
    expect((await post(valid)).status).toBe(200);
    const damaged = fc.oneof(
      fc.nat({ max: valid.length }).map((end) => valid.slice(0, end)),
      fc.tuple(fc.nat({ max: valid.length - 1 }), fc.string({ maxLength: 3 })).map(([at, text]) => valid.slice(0, at) + text + valid.slice(at + 1)),
    );
    await fc.assert(
      fc.asyncProperty(damaged, async (body) => {
        expect((await post(body)).status).toBeLessThan(500);
      }),
      { numRuns: 60, seed: 6 },
    );
  }, 30_000);
});
