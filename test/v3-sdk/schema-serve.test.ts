/**
 * HelixDB's own v3 TypeScript SDK against a real `silk serve` whose project declares a schema, over HTTP: the shapes
 * issue 14 made HelixDB's (searches filtered and ordered by `$distance`/`$score`, `groupCount` and `group` in value
 * order, index receipts and statuses, `Expr.datetime()`, edge endpoint projections) answer as they do on a
 * schemaless server, and a write the schema does not declare keeps its stable code. The schemaless servers are
 * schemaless-serve.test.ts, schemaless-index-ddl.test.ts and schemaless-gateway.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeTemporaryDirectories } from "../cli/helpers.js";
import { remoteError, startServeWithSchema, type SdkServer } from "./harness.js";

const SCHEMA = `N::Doc { VECTOR INDEX(dimension: 2) embedding: [F32], TEXT INDEX title: String, rank: I64, active: Boolean, seen: Date }
E::Cites { From: Doc, To: Doc, Properties: { weight: F64 } }
`;

let server: SdkServer;

beforeAll(async () => {
  server = await startServeWithSchema(SCHEMA);
  const { g, writeBatch, PropertyValue } = server.sdk;
  await server.client
    .query(
      writeBatch()
        .varAs("a", g().addN("Doc", { title: "graph databases", embedding: PropertyValue.f32Array([1, 0]), rank: 1, active: true }))
        .varAs("b", g().addN("Doc", { title: "graph theory graph", embedding: PropertyValue.f32Array([0, 1]), rank: 2, active: false }))
        .varAs("c", g().addN("Doc", { title: "sports", embedding: PropertyValue.f32Array([0.6, 0.8]), rank: 3, active: true }))
        .varAs("ab", g().n("a").addE("Cites", "b", { weight: 2 }))
        .returning([])
        .toQueryRequest(),
    )
    .send();
});

afterAll(async () => {
  expect(await server.stop()).toBe(0);
  removeTemporaryDirectories();
});

describe("silk serve with a schema, driven by HelixDB's v3 SDK over HTTP", () => {
  it("filters and orders search hits by $distance and $score", async () => {
    const { g, readBatch, Predicate, Order } = server.sdk;
    const near = () => g().vectorSearchNodes("Doc", "embedding", [1, 0], 3);
    const answer = await server.client
      .query(
        readBatch()
          .varAs("close", near().where(Predicate.lt("$distance", 0.5)).values(["title"]))
          .varAs("far_first", near().orderBy("$distance", Order.Desc).values(["title"]))
          .varAs("relevant", g().textSearchNodes("Doc", "title", "graph", 3).where(Predicate.gt("$score", 0.5)).values(["title"]))
          .returning(["close", "far_first", "relevant"])
          .toQueryRequest(),
      )
      .send();
    expect(answer).toEqual({
      close: [{ title: "graph databases" }, { title: "sports" }],
      far_first: [{ title: "graph theory graph" }, { title: "sports" }, { title: "graph databases" }],
      relevant: [{ title: "graph theory graph" }],
    });
  });

  it("answers groupCount and group in value order, and edge endpoint projections", async () => {
    const { g, readBatch, Projection } = server.sdk;
    const answer = await server.client
      .query(
        readBatch()
          .varAs("counts", g().nWithLabel("Doc").groupCount("active"))
          .varAs("groups", g().nWithLabel("Doc").group("active"))
          .varAs("ends", g().eWithLabel("Cites").project([Projection.fromEndpoint("title", "from"), Projection.toEndpoint("rank", "to_rank")]))
          .returning(["counts", "groups", "ends"])
          .toQueryRequest(),
      )
      .send();
    expect(answer).toEqual({
      counts: [{ active: false, count: 1 }, { active: true, count: 2 }],
      groups: [{ active: false, count: 1, ids: [2] }, { active: true, count: 2, ids: [1, 3] }],
      ends: [{ from: "graph databases", to_rank: 2 }],
    });
  });

  it("answers index DDL with HelixDB's receipts, which the SDK's parsers accept", async () => {
    const { g, writeBatch, readBatch, IndexSpec, parseIndexDdlReceipt, parseIndexOperationStatus } = server.sdk;
    const created = parseIndexDdlReceipt(
      ((await server.client.query(writeBatch().varAs("op", g().createIndexIfNotExists(IndexSpec.nodeRange("Doc", "rank"))).returning(["op"]).toQueryRequest()).send()) as { op: unknown }).op,
    ) as { kind: string; operation_id: string };
    expect(created).toMatchObject({ index: "Doc.rank", element_kind: "node" });
    expect(["accepted", "already_active"]).toContain(created.kind);
    const status = ((await server.client.query(readBatch().varAs("got", g().getIndexOperation(created.operation_id)).returning(["got"]).toQueryRequest()).send()) as { got: unknown }).got;
    expect(parseIndexOperationStatus(status)).toMatchObject({ operation_id: created.operation_id, family: "secondary", index: "Doc.rank" });
    // The schema's own vector index is already there and active.
    const declared = parseIndexDdlReceipt(
      ((await server.client.query(writeBatch().varAs("op", g().createVectorIndexNodes("Doc", "embedding", 2, server.sdk.VectorDistanceMetric.Cosine)).returning(["op"]).toQueryRequest()).send()) as { op: unknown }).op,
    );
    expect(declared).toMatchObject({ kind: "already_active", index: "Doc.embedding" });
  });

  it("stores Expr.datetime() in a Date field, and refuses a property the schema does not declare", async () => {
    const { g, writeBatch, Expr, PropertyInput } = server.sdk;
    const before = Date.now();
    const written = (await server.client
      .query(writeBatch().varAs("seen", g().n(1).setProperty("seen", PropertyInput.expr(Expr.datetime())).values(["seen"])).returning(["seen"]).toQueryRequest())
      .send()) as { seen: { seen: string }[] };
    expect(Date.parse(written.seen[0].seen)).toBeGreaterThanOrEqual(before);
    const refused = await remoteError(server.sdk, server.client.query(writeBatch().varAs("x", g().addN("Doc", { colour: "red" })).returning(["x"]).toQueryRequest()).send());
    expect(refused).toMatchObject({ status: 400, code: "invalid_field" });
  });
});
