/**
 * The request shapes of issue 14, built with HelixDB's own v3 TypeScript SDK (imported by relative URL from
 * /work/shared/clients; nothing of it is copied here) and run as it sends them: search with `query_vector` /
 * `query_text` and `k` as `{"literal": n}`, `groupCount(property)` and `group(property)` (rows ordered by value, as
 * HelixDB answers them), `aggregateBy(function, property)`,
 * `shortestPath(source, target, maxDepth)`, `createIndexIfNotExists(IndexSpec)` / `dropIndex(IndexSpec)` and the
 * operations by operation ID (answered with HelixDB's receipts and statuses, checked by the SDK's own
 * `parseIndexDdlReceipt` / `parseIndexOperationStatus`) run embedded, schemaless and with a schema, (`db.run` of the SDK's JSON text, parsed as the gateway parses it); i64
 * values beyond 2^53, which the SDK writes as bare JSON integers, go over HTTP to a real schemaless `silk serve`.
 *
 * The embedded graph: Doc 1 (rank 1, active, "graph databases", [1, 0]) -Knows(4)-> Doc 2 (rank 2, inactive,
 * "graph theory and graph drawing", [0, 1]) -Knows(5)-> Doc 3 (rank 3, active, "running", [0.6, 0.8]). Index
 * operations take no IDs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../runtime/embedded.js";
import { mayHoldUnsafeInteger, parseLossless } from "../../gateway/request-json.js";
import { removeTemporaryDirectories } from "../cli/helpers.js";
import { DATABASE_VARIANTS, loadSdk, remoteError, startSchemalessServe, type Sdk, type SdkServer } from "./harness.js";
import type * as HelixSdk from "../../../shared/clients/helix-v3-sdk-ts/dist/index.js";

type Batch = HelixSdk.ReadBatch | HelixSdk.WriteBatch;

/** How often, and how many times, the index test reads a build's state while it finishes (2 s at most). */
const BUILD_POLL_MS = 20;
const BUILD_POLLS_MAX = 100;

/** The database "with a schema": every label and property the embedded suite writes, declared, its two searched indexes too. */
const SCHEMA = "N::Doc { VECTOR INDEX(dimension: 2) embedding: [F32], TEXT INDEX body: String, rank: I64, active: Boolean }\nE::Knows { From: Doc, To: Doc }\n";

let sdk: Sdk;

// The embedded suite runs against a schemaless database and against one with a schema; the SDK's index DDL runs on
// both (on the schema's database it finds the declared indexes already active).
describe.each(DATABASE_VARIANTS)("%s", (variant) => {
  let db: Database;

  /** Runs what the SDK built, from its JSON text, read as the gateway reads a body. */
  async function run(batch: Batch): Promise<Record<string, unknown>> {
    const text = batch.toQueryJson();
    return (await db.run(mayHoldUnsafeInteger(text) ? parseLossless(text) : JSON.parse(text))) as Record<string, unknown>;
  }

  /** The SDK's JSON text of one entry's root step (what a check of the wire shape looks at). */
  function rootOf(batch: Batch): Record<string, unknown> {
    const request = JSON.parse(batch.toQueryJson()) as { query: Record<string, { entries: { query: { root: Record<string, unknown> } }[] }> };
    return Object.values(request.query)[0].entries[0].query.root;
  }

  beforeAll(async () => {
    sdk = await loadSdk();
    db = await open({ storage: "memory", ...(variant === "schemaless" ? {} : { schema: [{ file: "schema.hx", text: SCHEMA }] }) });
    const { g, writeBatch, IndexSpec, VectorDistanceMetric } = sdk;
    await run(
      writeBatch()
        .varAs("vectors", g().createIndexIfNotExists(IndexSpec.nodeVector("Doc", "embedding", 2, VectorDistanceMetric.Cosine)))
        .varAs("texts", g().createIndexIfNotExists(IndexSpec.nodeText("Doc", "body")))
        .returning([]),
    );
    const docs = await run(
      writeBatch()
        .varAs("a", g().addN("Doc", { rank: 1, active: true, body: "graph databases", embedding: sdk.PropertyValue.f32Array([1, 0]) }))
        .varAs("b", g().addN("Doc", { rank: 2, active: false, body: "graph theory and graph drawing", embedding: sdk.PropertyValue.f32Array([0, 1]) }))
        .varAs("c", g().addN("Doc", { rank: 3, active: true, body: "running", embedding: sdk.PropertyValue.f32Array([0.6, 0.8]) }))
        .varAs("ab", g().n("a").addE("Knows", "b"))
        .varAs("bc", g().n("b").addE("Knows", "c"))
        .returning(["a", "b", "c"]),
    );
    expect(docs).toMatchObject({ a: [{ $id: "1" }], b: [{ $id: "2" }], c: [{ $id: "3" }] });
  });

  afterAll(async () => {
    await db.close();
  });

  describe("HelixDB's SDK requests, run embedded", () => {
    it("searches with query_vector, query_text and k as a stream bound", async () => {
      const { g, readBatch, Expr, PropertyInput } = sdk;
      const nearest = readBatch().varAs("nearest", g().vectorSearchNodes("Doc", "embedding", [1, 0], 2).id());
      expect(rootOf(nearest)).toMatchObject({ id: { input: { vector_search_nodes: { query_vector: { value: { f32_array: [1, 0] } }, k: { literal: 2 } } } } });
      const texts = readBatch()
        .varAs("graph", g().textSearchNodes("Doc", "body", "graph", 5).id())
        .varAs("within", g().n([1, 3]).textSearchWith("Doc", "body", PropertyInput.value("graph"), Expr.val(5)).id());
      expect(rootOf(texts)).toMatchObject({ id: { input: { text_search_nodes: { query_text: { value: { string: "graph" } }, k: { literal: 5 } } } } });
      expect(await run(nearest.returning(["nearest"]))).toEqual({ nearest: ["1", "3"] });
      // BM25 ranks the short "graph databases" above the longer text that says graph twice.
      expect(await run(texts.returning(["graph", "within"]))).toEqual({ graph: ["1", "2"], within: ["1"] });
    });

    it("counts groups by one property (rows ordered by value), groups records, and aggregates a property with each function", async () => {
      const { g, readBatch, AggregateFunction } = sdk;
      const batch = readBatch()
        .varAs("groups", g().nWithLabel("Doc").groupCount("active"))
        .varAs("grouped", g().nWithLabel("Doc").group("active"))
        .varAs("count", g().nWithLabel("Doc").aggregateBy(AggregateFunction.Count, "rank"))
        .varAs("sum", g().nWithLabel("Doc").aggregateBy(AggregateFunction.Sum, "rank"))
        .varAs("min", g().nWithLabel("Doc").aggregateBy(AggregateFunction.Min, "rank"))
        .varAs("max", g().nWithLabel("Doc").aggregateBy(AggregateFunction.Max, "rank"))
        .varAs("mean", g().nWithLabel("Doc").aggregateBy(AggregateFunction.Mean, "rank"));
      expect(rootOf(batch)).toMatchObject({ group_count: { property: "active" } });
      expect(await run(batch.returning(["groups", "grouped", "count", "sum", "min", "max", "mean"]))).toEqual({
        groups: [{ active: false, count: 1 }, { active: true, count: 2 }],
        grouped: [{ active: false, count: 1, ids: ["2"] }, { active: true, count: 2, ids: ["1", "3"] }],
        count: [{ rank_Count: 3 }],
        sum: [{ rank_Sum: 6 }],
        min: [{ rank_Min: 1 }],
        max: [{ rank_Max: 3 }],
        mean: [{ rank_Mean: 2 }],
      });
    });

    it("finds the shortest path from one node to another within max_depth hops", async () => {
      const { g, readBatch, ShortestPathDirection } = sdk;
      const batch = readBatch()
        .varAs("path", g().shortestPath(1, 3, 3))
        .varAs("back", g().shortestPath(3, 1, 3, { label: "Knows", direction: ShortestPathDirection.In }))
        .varAs("cut", g().shortestPath(1, 3, 1))
        .varAs("self", g().shortestPath(1, 1, 0));
      expect(rootOf(batch)).toEqual({ shortest_path: { source: { ids: [1] }, target: { ids: [3] }, direction: "out", max_depth: 3 } });
      expect(await run(batch.returning(["path", "back", "cut", "self"]))).toEqual({ path: ["1", "2", "3"], back: ["3", "2", "1"], cut: [], self: ["1"] });
    });

    it("creates, reads, retries, refuses to abort and drops an index by spec and operation ID", async () => {
      const { g, readBatch, writeBatch, IndexSpec } = sdk;
      const spec = IndexSpec.nodeEquality("Doc", "rank");
      const create = writeBatch().varAs("op", g().createIndexIfNotExists(spec));
      expect(rootOf(create)).toEqual({ create_index: { spec: { node_equality: { label: "Doc", property: "rank", unique: false } }, if_not_exists: true } });
      // Every answer passes the SDK's own checks of HelixDB's receipts and statuses (which ignore Silk's extra fields).
      const { parseIndexDdlReceipt, parseIndexOperationStatus } = sdk;
      const created = parseIndexDdlReceipt((await run(create.returning(["op"]))).op);
      expect(created).toMatchObject({ kind: "accepted", index_id: expect.stringMatching(/^[1-9][0-9]*$/), generation: "1", index: "Doc.rank", element_kind: "node" });
      const id = (created as { operation_id: string }).operation_id;
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      // The build over the three Docs runs in the background: read the operation by its ID until it has succeeded.
      const get = readBatch().varAs("got", g().getIndexOperation(id)).returning(["got"]);
      const status = async (): Promise<Record<string, unknown>> => parseIndexOperationStatus((await run(get)).got) as Record<string, unknown>;
      let got = await status();
      for (let attempt = 0; got.status !== "succeeded" && attempt < BUILD_POLLS_MAX; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, BUILD_POLL_MS));
        got = await status();
      }
      expect(got).toMatchObject({
        status: "succeeded", operation_id: id, index_id: created.index_id, generation: "1", operation_kind: "build", family: "secondary", stage: "activate",
        progress: { entities: "3", output_operations: "3" }, index: "Doc.rank", element_kind: "node", state: "active", entities: 3, operations: 3,
      });
      const again = await run(writeBatch().varAs("again", g().createIndexIfNotExists(IndexSpec.nodeRange("Doc", "rank"))).varAs("retried", g().retryIndexOperation(id)).returning(["again", "retried"]));
      expect(parseIndexDdlReceipt(again.again)).toMatchObject({ kind: "already_active", index_id: created.index_id, state: "active" });
      expect(parseIndexOperationStatus(again.retried)).toMatchObject({ status: "succeeded", operation_id: id, state: "active" });
      // A finished build cannot be aborted (HelixDB's code), and if_not_exists false refuses the index that exists.
      await expect(run(writeBatch().varAs("aborted", g().abortIndexOperation(id)).returning(["aborted"]))).rejects.toMatchObject({ code: "index_operation_not_abortable", status: 409 });
      const strict = sdk.Traversal.fromSteps([sdk.Step.createIndex(spec, false)], "terminal", "write");
      expect(rootOf(writeBatch().varAs("strict", strict))).toEqual({ create_index: { spec: { node_equality: { label: "Doc", property: "rank", unique: false } }, if_not_exists: false } });
      await expect(run(writeBatch().varAs("strict", strict).returning(["strict"]))).rejects.toMatchObject({ code: "index_already_exists", status: 409 });
      expect(parseIndexDdlReceipt((await run(writeBatch().varAs("dropped", g().dropIndex(spec)).returning(["dropped"]))).dropped)).toMatchObject({ kind: "accepted", operation_id: id, state: "dropped" });
      await expect(run(readBatch().varAs("gone", g().getIndexOperation(id)).returning(["gone"]))).rejects.toMatchObject({ code: "index_operation_not_found" });
    });

    it("answers a blocked build with HelixDB's blocked status and blocker code, and Silk's form with Silk's answer", async () => {
      const { g, readBatch, writeBatch, IndexSpec, parseIndexOperationStatus } = sdk;
      // Docs 1 and 3 are both active: a unique index over active cannot be built.
      const spec = IndexSpec.nodeUniqueEquality("Doc", "active");
      const id = ((await run(writeBatch().varAs("op", g().createIndexIfNotExists(spec)).returning(["op"]))).op as { operation_id: string }).operation_id;
      const get = readBatch().varAs("got", g().getIndexOperation(id)).returning(["got"]);
      let got = parseIndexOperationStatus((await run(get)).got) as Record<string, unknown>;
      for (let attempt = 0; got.status !== "blocked" && attempt < BUILD_POLLS_MAX; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, BUILD_POLL_MS));
        got = parseIndexOperationStatus((await run(get)).got) as Record<string, unknown>;
      }
      expect(got).toMatchObject({ status: "blocked", blocker_code: "uniqueness_violation", family: "secondary", stage: "validate", reason: "unique_violation", message: expect.stringContaining("must be unique") });
      const silk = { query: { read: { entries: [{ query: { name: "silk", root: { get_index_operation: { label: "Doc", property: "active" } } } }], returns: ["silk"] } }, request_type: "read" };
      expect((await db.run(silk)).silk).toEqual({ index: "Doc.active", kind: "node", state: "blocked", entities: 3, bytes: expect.any(Number), operations: expect.any(Number), reason: "unique_violation", message: expect.any(String), operation_id: id });
      await run(writeBatch().varAs("dropped", g().dropIndex(spec)).returning(["dropped"]));
    });
  });
});

describe("i64 values beyond 2^53 over HTTP, as the SDK writes them: bare JSON integers", () => {
  const BIG = 9_223_372_036_854_775_000n;
  let server: SdkServer;

  beforeAll(async () => {
    server = await startSchemalessServe();
  });

  afterAll(async () => {
    expect(await server.stop()).toBe(0);
    removeTemporaryDirectories();
  });

  it("stores, matches and returns them exactly, and reads IDs and i64 parameters beyond 2^53", async () => {
    const { g, readBatch, writeBatch, defineParams, param, PropertyValue } = server.sdk;
    const write = writeBatch().varAs("n", g().addN("Big", { n: PropertyValue.i64(BIG), small: 1 })).returning(["n"]);
    expect(write.toQueryJson()).toContain(`{"i64":${BIG}}`);
    expect(await server.client.query(write.toQueryRequest()).send()).toMatchObject({ n: [{ n: String(BIG) }] });
    const params = defineParams({ big: param.i64() });
    const read = readBatch()
      .varAs("exact", g().nWithLabel("Big").has("n", PropertyValue.i64(BIG)).valueMap(["n"]))
      .varAs("rounded", g().nWithLabel("Big").has("n", PropertyValue.i64(BIG + 1n)).count())
      .varAs("byParam", g().nWithLabel("Big").where(sdk.Predicate.eq("n", params.big)).count())
      .varAs("byId", g().n(18_446_744_073_709_551_615n).count())
      .returning(["exact", "rounded", "byParam", "byId"]);
    expect(read.toQueryJson(params, { big: BIG })).toContain(`"big":${BIG}`);
    expect(await server.client.query(read.toQueryRequest(params, { big: BIG })).send()).toEqual({ exact: [{ n: String(BIG) }], rounded: 0, byParam: 1, byId: 0 });
  });

  it("refuses an integer beyond 64 bits with the path at fault", async () => {
    const { g, readBatch, PropertyValue } = server.sdk;
    const failure = await remoteError(server.sdk, server.client.query(readBatch().varAs("x", g().nWithLabel("Big").has("n", PropertyValue.i64(2n ** 64n)).count()).returning(["x"]).toQueryRequest()).send());
    expect(failure).toMatchObject({ status: 400, code: "malformed_tree", message: expect.stringContaining(".has.value.i64") });
  });
});
