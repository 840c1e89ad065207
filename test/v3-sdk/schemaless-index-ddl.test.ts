/**
 * Index DDL without a schema, driven by HelixDB's own v3 TypeScript SDK against a schemaless `silk serve`: an
 * equality, a range and a unique index, then lookups answered from them and a duplicate refused; a vector and a text
 * index, then searches; `/introspect` lists them; a property that cannot be indexed keeps its stable code; HelixDB's
 * lifecycle refusals (`index_already_exists`, `index_operation_not_abortable`) come back with their codes and 409.
 *
 * Both forms are driven: Silk's `create_index` with its `type` (sent through the SDK's client as a plain tree), and the
 * SDK's own DDL (`createIndexIfNotExists(IndexSpec...)`, `createVectorIndexNodes`, `createTextIndexNodes`: the
 * `spec` form, whose answers carry an `operation_id`).
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

/** A write batch of index operations (`create_index` with Silk's `type`), one entry per index, each answer under its name. */
function createIndexes(indexes: Record<string, Record<string, unknown>>): unknown {
  return {
    request_type: "write",
    query: { write: { entries: Object.entries(indexes).map(([name, body]) => ({ query: { name, root: { create_index: body } } })), returns: Object.keys(indexes) } },
  };
}

describe("index DDL on a schemaless silk serve, driven by HelixDB's v3 SDK", () => {
  it("creates equality, range and unique indexes without a schema, and answers from them", async () => {
    const { g, readBatch, writeBatch, Predicate } = server.sdk;
    await server.client
      .query(
        writeBatch()
          .varAs("items", g().addN("Item", { sku: "a-1", price: 10 }))
          .varAs("more", g().addN("Item", { sku: "a-2", price: 25 }))
          .varAs("ann", g().addN("Person", { name: "Ann", age: 31 }))
          .returning([]).toQueryRequest(),
      )
      .send();
    const created = (await server.client
      .query(
        treeRequest(
          createIndexes({
            sku: { label: "Item", property: "sku", type: "unique" },
            price: { label: "Item", property: "price", type: "range" },
            name: { label: "Person", property: "name", type: "equality" },
          }),
        ),
      )
      .send()) as Record<string, { index: string; state: string }>;
    expect(Object.values(created).map((answer) => answer.index)).toEqual(["Item.sku", "Item.price", "Person.name"]);
    const found = (await server.client
      .query(
        readBatch()
          .varAs("cheap", g().nWithLabel("Item").where(Predicate.lt("price", 20)).valueMap(["sku"]))
          .varAs("exact", g().nWithLabel("Item").where(Predicate.eq("sku", "a-2")).valueMap(["price"]))
          .varAs("ann", g().nWithLabel("Person").where(Predicate.eq("name", "Ann")).valueMap(["age"]))
          .returning(["cheap", "exact", "ann"]).toQueryRequest(),
      )
      .send()) as Record<string, unknown>;
    expect(found).toEqual({ cheap: [{ sku: "a-1" }], exact: [{ price: 25 }], ann: [{ age: 31 }] });
    // The unique index refuses a second a-1 with its stable code, and nothing of the batch is written.
    const duplicate = await remoteError(
      server.sdk,
      server.client.query(writeBatch().varAs("ok", g().addN("Item", { sku: "b-1" })).varAs("dup", g().addN("Item", { sku: "a-1" })).returning([]).toQueryRequest()).send(),
    );
    expect(duplicate).toMatchObject({ status: 409, code: "unique_violation" });
    const count = (await server.client.query(readBatch().varAs("n", g().nWithLabel("Item").count()).returning(["n"]).toQueryRequest()).send()) as { n: number };
    expect(count.n).toBe(2);
  });

  it("answers HelixDB's lifecycle refusals over HTTP: if_not_exists false on an existing index, abort of a finished build", async () => {
    const { g, readBatch, writeBatch, IndexSpec, Step, Traversal, parseIndexDdlReceipt } = server.sdk;
    await server.client.query(writeBatch().varAs("t", g().addN("Ticket", { code: "t-1" })).returning([]).toQueryRequest()).send();
    const spec = IndexSpec.nodeEquality("Ticket", "code");
    const strict = () => writeBatch().varAs("op", Traversal.fromSteps([Step.createIndex(spec, false)], "terminal", "write")).returning(["op"]).toQueryRequest();
    const created = parseIndexDdlReceipt(((await server.client.query(strict()).send()) as { op: unknown }).op) as { kind: string; operation_id: string };
    expect(created.kind).toBe("accepted");
    expect(await remoteError(server.sdk, server.client.query(strict()).send())).toMatchObject({ status: 409, code: "index_already_exists" });
    const get = readBatch().varAs("got", g().getIndexOperation(created.operation_id)).returning(["got"]).toQueryRequest();
    let state = "";
    for (let poll = 0; state !== "active" && poll < 100; poll += 1) {
      if (poll > 0) await new Promise((resolve) => setTimeout(resolve, 20));
      state = ((await server.client.query(get).send()) as { got: { state: string } }).got.state;
    }
    expect(state).toBe("active");
    const abort = writeBatch().varAs("aborted", g().abortIndexOperation(created.operation_id)).returning(["aborted"]).toQueryRequest();
    expect(await remoteError(server.sdk, server.client.query(abort).send())).toMatchObject({ status: 409, code: "index_operation_not_abortable" });
    // With if_not_exists true (the SDK's createIndexIfNotExists) the existing index is answered.
    const again = (await server.client.query(writeBatch().varAs("op", g().createIndexIfNotExists(spec)).returning(["op"]).toQueryRequest()).send()) as { op: unknown };
    expect(parseIndexDdlReceipt(again.op)).toMatchObject({ kind: "already_active", operation_id: created.operation_id });
  });

  it("creates a vector and a text index without a schema, and searches them", async () => {
    const { g, readBatch, writeBatch } = server.sdk;
    await server.client
      .query(
        treeRequest(
          createIndexes({
            embedding: { label: "Doc", property: "embedding", type: "vector", metric: "euclidean", dimension: 3 },
            body: { label: "Doc", property: "body", type: "text", analyzer: "standard_stem_en" },
          }),
        ),
      )
      .send();
    await server.client
      .query(
        writeBatch()
          .varAs("a", g().addN("Doc", { title: "graphs", body: "Graph databases store edges", embedding: [1, 0, 0] }))
          .varAs("b", g().addN("Doc", { title: "vectors", body: "Vector search finds neighbours", embedding: [0, 1, 0] }))
          .varAs("c", g().addN("Doc", { title: "both", body: "Graphs with vectors", embedding: [0.9, 0.1, 0] }))
          .returning([]).toQueryRequest(),
      )
      .send();
    const hits = (await server.client
      .query(
        readBatch()
          .varAs("near", g().vectorSearchNodes("Doc", "embedding", [1, 0, 0], 2).valueMap(["title"]))
          .varAs("text", g().textSearchNodes("Doc", "body", "graph", 5).valueMap(["title"]))
          .returning(["near", "text"]).toQueryRequest(),
      )
      .send()) as Record<string, unknown>;
    expect(hits).toEqual({ near: [{ title: "graphs" }, { title: "both" }], text: expect.arrayContaining([{ title: "graphs" }, { title: "both" }]) });
    expect((hits.text as unknown[]).length).toBe(2);
    const introspection = (await (await fetch(`${server.url}/introspect`)).json()) as { indexes: { name: string; family: string; state: string }[] };
    expect(introspection.indexes.map(({ name, family, state }) => ({ name, family, state }))).toEqual(
      expect.arrayContaining([
        { name: "Doc.embedding", family: "vector", state: "active" },
        { name: "Doc.body", family: "text", state: "active" },
        { name: "Item.sku", family: "secondary", state: "active" },
      ]),
    );
  });

  it("takes the SDK's own index DDL (IndexSpec) without a schema, and answers lookups and searches from it", async () => {
    const { g, readBatch, writeBatch, IndexSpec, Predicate, VectorDistanceMetric } = server.sdk;
    const created = (await server.client
      .query(
        writeBatch()
          .varAs("code", g().createIndexIfNotExists(IndexSpec.nodeUniqueEquality("Product", "code")))
          .varAs("weight", g().createIndexIfNotExists(IndexSpec.nodeRange("Product", "weight")))
          .varAs("colour", g().createIndexIfNotExists(IndexSpec.nodeEquality("Product", "colour")))
          .varAs("vector", g().createVectorIndexNodes("Note", "vec", 2, VectorDistanceMetric.Cosine))
          .varAs("text", g().createTextIndexNodes("Note", "text"))
          .returning(["code", "weight", "colour", "vector", "text"])
          .toQueryRequest(),
      )
      .send()) as Record<string, { index: string; state: string; operation_id: string }>;
    expect(Object.values(created).map(({ index, state }) => ({ index, state }))).toEqual([
      { index: "Product.code", state: "active" },
      { index: "Product.weight", state: "active" },
      { index: "Product.colour", state: "active" },
      { index: "Note.vec", state: "active" },
      { index: "Note.text", state: "active" },
    ]);
    expect(new Set(Object.values(created).map((answer) => answer.operation_id)).size).toBe(5);
    await server.client
      .query(
        writeBatch()
          .varAs("p1", g().addN("Product", { code: "p-1", weight: 1.5, colour: "red" }))
          .varAs("p2", g().addN("Product", { code: "p-2", weight: 7, colour: "blue" }))
          .varAs("n1", g().addN("Note", { text: "apples and pears", vec: [1, 0] }))
          .varAs("n2", g().addN("Note", { text: "pears only", vec: [0, 1] }))
          .returning([])
          .toQueryRequest(),
      )
      .send();
    const found = (await server.client
      .query(
        readBatch()
          .varAs("heavy", g().nWithLabel("Product").where(Predicate.gte("weight", 2)).valueMap(["code"]))
          .varAs("red", g().nWithLabel("Product").where(Predicate.eq("colour", "red")).valueMap(["code"]))
          .varAs("near", g().vectorSearchNodes("Note", "vec", [0.1, 1], 1).valueMap(["text"]))
          .varAs("apples", g().textSearchNodes("Note", "text", "apples", 5).valueMap(["text"]))
          .returning(["heavy", "red", "near", "apples"])
          .toQueryRequest(),
      )
      .send()) as Record<string, unknown>;
    expect(found).toEqual({ heavy: [{ code: "p-2" }], red: [{ code: "p-1" }], near: [{ text: "pears only" }], apples: [{ text: "apples and pears" }] });
    const duplicate = await remoteError(server.sdk, server.client.query(writeBatch().varAs("p", g().addN("Product", { code: "p-1" })).returning([]).toQueryRequest()).send());
    expect(duplicate).toMatchObject({ status: 409, code: "unique_violation" });
  });

  it("refuses a property that is not a top-level name with its stable code", async () => {
    const badField = await remoteError(server.sdk, server.client.query(treeRequest(createIndexes({ i: { label: "Doc", property: "meta.author", type: "equality" } }))).send());
    expect(badField).toMatchObject({ status: 400, code: "invalid_field" });
  });
});
