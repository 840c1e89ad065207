/**
 * HelixDB's own v3 TypeScript SDK against a schemaless `silk serve` (no `--project`), as a HelixDB user's
 * application drives it: labels and properties come into being when written (addN, addE), traversals, filters and
 * ordering read them back with their types, a read of a label nothing has answers empty, bad input keeps its stable
 * codes, and the server has `/v2/query`, `/introspect` and `/health` but no per-query routes. Index DDL without a
 * schema is schemaless-index-ddl.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeTemporaryDirectories } from "../cli/helpers.js";
import { remoteError, startSchemalessServe, treeRequest, type SdkServer } from "./harness.js";

let server: SdkServer;

beforeAll(async () => {
  server = await startSchemalessServe();
});

afterAll(async () => {
  expect(await server.stop()).toBe(0);
  removeTemporaryDirectories();
});

describe("a schemaless silk serve, driven by HelixDB's v3 SDK", () => {
  it("serves /health, /introspect and /v2/query, and no per-query routes", async () => {
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: "ok" });
    expect(await (await fetch(`${server.url}/introspect`)).json()).toEqual({ schema: null, queries: [], indexes: [] });
    const perQuery = await fetch(`${server.url}/GetUser`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect({ status: perQuery.status, body: await perQuery.json() }).toMatchObject({ status: 404, body: { error: "route_not_found" } });
    expect(server.process.stdout()).toMatch(/^silk: serving a schemaless database on http:\/\/127\.0\.0\.1:\d+ \(data in .*\)$/m);
  });

  it("creates labels and properties by writing them, and keeps each value's type", async () => {
    const { g, writeBatch, readBatch, Predicate } = server.sdk;
    const written = await server.client
      .query(
        writeBatch()
          .varAs("ann", g().addN("Person", { name: "Ann", age: 31, score: 2.5, admin: true, tags: ["a", "b"] }))
          .varAs("bob", g().addN("Person", { name: "Bob", age: 40, score: 1, admin: false }))
          .varAs("cy", g().addN("Person", { name: "Cy", age: 25 }))
          .varAs("knows", g().n("ann").addE("Knows", "bob", { since: 2020 }))
          .varAs("knows2", g().n("ann").addE("Knows", "cy", { since: 2023 }))
          .returning(["ann"]).toQueryRequest(),
      )
      .send();
    expect(written).toBeDefined();
    const read = (await server.client
      .query(
        readBatch()
          .varAs("ann", g().nWithLabel("Person").where(Predicate.eq("name", "Ann")).valueMap(["name", "age", "score", "admin", "tags"]))
          .returning(["ann"]).toQueryRequest(),
      )
      .send()) as { ann: Record<string, unknown>[] };
    expect(read.ann).toEqual([{ name: "Ann", age: 31, score: 2.5, admin: true, tags: ["a", "b"] }]);
  });

  it("traverses, filters and orders what was written; an absent label reads empty", async () => {
    const { g, readBatch, Predicate, Order } = server.sdk;
    const answer = (await server.client
      .query(
        readBatch()
          .varAs("known", g().nWithLabel("Person").where(Predicate.eq("name", "Ann")).out("Knows").orderBy("age", Order.Desc).valueMap(["name"]))
          .varAs("knownBy", g().nWithLabel("Person").where(Predicate.eq("name", "Cy")).in("Knows").valueMap(["name"]))
          .varAs("older", g().nWithLabel("Person").where(Predicate.gt("age", 30)).orderBy("age", Order.Asc).valueMap(["name"]))
          .varAs("since", g().nWithLabel("Person").where(Predicate.eq("name", "Ann")).outE("Knows").orderBy("since", Order.Asc).valueMap(["since"]))
          .varAs("nobody", g().nWithLabel("Ghost").valueMap(["name"]))
          .varAs("nobodyCount", g().nWithLabel("Ghost").count())
          .returning(["known", "knownBy", "older", "since", "nobody", "nobodyCount"]).toQueryRequest(),
      )
      .send()) as Record<string, unknown>;
    expect(answer).toEqual({
      known: [{ name: "Bob" }, { name: "Cy" }],
      knownBy: [{ name: "Ann" }],
      older: [{ name: "Ann" }, { name: "Bob" }],
      since: [{ since: 2020 }, { since: 2023 }],
      nobody: [],
      nobodyCount: 0,
    });
  });

  it("keeps the stable codes of bad input", async () => {
    const { g, readBatch, writeBatch } = server.sdk;
    const readInWrite = await remoteError(server.sdk, server.client.query(treeRequest({ request_type: "read", query: { read: { entries: [{ query: { name: "d", root: { add_n: { label: "Doc", properties: [] } } } }], returns: ["d"] } } })).send());
    expect(readInWrite).toMatchObject({ status: 400, code: "write_in_read" });
    const badLabel = await remoteError(server.sdk, server.client.query(writeBatch().varAs("d", g().addN("not a label", {})).returning([]).toQueryRequest()).send());
    expect(badLabel).toMatchObject({ status: 400, code: "malformed_tree" });
    const noIndex = await remoteError(server.sdk, server.client.query(readBatch().varAs("x", g().vectorSearchNodes("Ghost", "v", [1], 1)).returning(["x"]).toQueryRequest()).send());
    expect(noIndex).toMatchObject({ status: 404, code: "index_not_found" });
    const badId = await remoteError(server.sdk, server.client.query(treeRequest({ request_type: "read", query: { read: { entries: [{ query: { name: "n", root: { nodes: { reference: { ids: ["x"] } } } } }], returns: ["n"] } } })).send());
    expect(badId).toMatchObject({ status: 400, code: "invalid_id" });
    const notJson = await fetch(`${server.url}/v2/query`, { method: "POST", body: "{", headers: { "content-type": "application/json" } });
    expect({ status: notJson.status, body: await notJson.json() }).toMatchObject({ status: 400, body: { error: "invalid_query_json" } });
  });

  // HelixDB v3 answers IDs as JSON numbers (its `$id` is an i64) and the SDK types them `NodeId = number | bigint`:
  // an ID read from an answer goes straight back into NodeRef.id and g().n().
  it("answers IDs as JSON numbers, which the SDK takes back as they are", async () => {
    const { g, readBatch, writeBatch, NodeRef } = server.sdk;
    type Answer = Record<string, { $id: number; $from?: number; $to?: number }[]>;
    const created = (await server.client.query(writeBatch().varAs("dee", g().addN("Person", { name: "Dee" })).varAs("eve", g().addN("Person", { name: "Eve" })).returning(["dee", "eve"]).toQueryRequest()).send()) as Answer;
    const [dee, eve] = [created.dee[0].$id, created.eve[0].$id];
    expect([typeof dee, typeof eve]).toEqual(["number", "number"]);
    const linked = (await server.client.query(writeBatch().varAs("e", g().n(NodeRef.id(dee)).addE("Knows", NodeRef.id(eve), { since: 2024 })).returning(["e"]).toQueryRequest()).send()) as Answer;
    expect(linked.e[0]).toMatchObject({ $from: dee, $to: eve, since: 2024 });
    const read = await server.client.query(readBatch().varAs("dee", g().n(dee).valueMap(["name"])).varAs("knows", g().n(dee).out("Knows").id()).returning(["dee", "knows"]).toQueryRequest()).send();
    expect(read).toEqual({ dee: [{ name: "Dee" }], knows: [eve] });
  });
});
