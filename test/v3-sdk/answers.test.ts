/**
 * Answer shapes of `/v2/query` for requests built by HelixDB's own v3 TypeScript SDK (../shared/clients/
 * helix-v3-sdk-ts, imported by relative URL, never copied), run embedded with `db.run(json)` and decoded with the
 * SDK's own `parseJson` (its client's decoding). The shapes are HelixDB v3's serialisation (crates/db/src/execution/
 * interpreter/stream/projection/rows.rs and stream/aggregate.rs): a search hit's `$distance`/`$score` project like
 * properties and filter and order like them (stream/eval/property.rs, stream/order.rs: a missing key ranks below every
 * value, ties go by element ID), a property the element lacks
 * is left out of its row, `values` answers one object per element, and `aggregateBy(fn, property)` one row
 * `{"<property>_<Function>": number}`. Every answer is checked on a schemaless database (its indexes created through
 * the SDK) and on one with a schema.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../runtime/embedded.js";
import { stringifyJson } from "../../gateway/json.js";
import { DATABASE_VARIANTS } from "./harness.js";
import type * as HelixSdk from "../../../shared/clients/helix-v3-sdk-ts/dist/index.js";

const SDK_MODULE_URL = new URL("../../../shared/clients/helix-v3-sdk-ts/dist/index.js", import.meta.url).href;

const SCHEMA = "N::Doc { TEXT INDEX title: String, VECTOR INDEX(dimension: 2) embedding: [F32], rank: I64, note: String }\n";

let sdk: typeof HelixSdk;

// Each suite runs against a database with a schema and against a schemaless one whose indexes the SDK creates.
describe.each(DATABASE_VARIANTS)("%s", (variant) => {
  let db: Database;

  /** Runs an SDK request embedded and decodes the answer as the SDK's client decodes a response body. */
  async function run(request: { toQueryJson(): string }): Promise<Record<string, unknown>> {
    const answer = await db.run(JSON.parse(request.toQueryJson()));
    return sdk.parseJson(stringifyJson(answer) ?? "null") as Record<string, unknown>;
  }

  beforeAll(async () => {
    sdk = (await import(SDK_MODULE_URL)) as typeof HelixSdk;
    const { g, writeBatch, VectorDistanceMetric } = sdk;
    if (variant === "schemaless") {
      db = await open({ storage: "memory" });
      await run(
        writeBatch()
          .varAs("vector", g().createVectorIndexNodes("Doc", "embedding", 2, VectorDistanceMetric.Cosine))
          .varAs("text", g().createTextIndexNodes("Doc", "title"))
          .returning([]),
      );
    } else {
      db = await open({ storage: "memory", schema: [{ file: "schema.hx", text: SCHEMA }] });
    }
    await run(
      writeBatch()
        .varAs("a", g().addN("Doc", { title: "graph databases", embedding: sdk.PropertyValue.f32Array([1, 0]), rank: 1n }))
        .varAs("b", g().addN("Doc", { title: "graph theory", embedding: sdk.PropertyValue.f32Array([0, 1]), rank: 4n, note: "draft" }))
        .varAs("c", g().addN("Doc", { title: "sports" }))
        .returning([]),
    );
  });

  afterAll(() => db.close());

  describe("answers to SDK-built requests", () => {
    it("projects a vector hit's $distance with project, valueMap and values", async () => {
      const { g, readBatch, PropertyProjection } = sdk;
      const search = () => g().vectorSearchNodes("Doc", "embedding", [1, 0], 2);
      const answer = await run(
        readBatch()
          .varAs("projected", search().project([PropertyProjection.renamed("$id", "id"), PropertyProjection.renamed("$distance", "distance")]))
          .varAs("mapped", search().valueMap(["title", "$distance"]))
          .varAs("distances", search().values(["$distance"]))
          .returning(["projected", "mapped", "distances"]),
      );
      expect(answer).toEqual({
        projected: [
          { id: "1", distance: 0 },
          { id: "2", distance: 1 },
        ],
        mapped: [
          { title: "graph databases", $distance: 0 },
          { title: "graph theory", $distance: 1 },
        ],
        distances: [{ $distance: 0 }, { $distance: 1 }],
      });
    });

    it("projects a text hit's $score, the same as the hit record's", async () => {
      const { g, readBatch, PropertyProjection } = sdk;
      const search = () => g().textSearchNodes("Doc", "title", "databases", 1);
      const answer = (await run(
        readBatch()
          .varAs("hits", search())
          .varAs("scores", search().project([PropertyProjection.renamed("$score", "score"), PropertyProjection.renamed("$distance", "distance")]))
          .returning(["hits", "scores"]),
      )) as { hits: { $id: string; $score: number }[]; scores: Record<string, unknown>[] };
      expect(answer.hits).toHaveLength(1);
      expect(answer.hits[0].$id).toBe("1");
      expect(answer.hits[0].$score).toBeGreaterThan(0);
      // A text hit has no $distance: the item is left out, not null.
      expect(answer.scores).toEqual([{ score: answer.hits[0].$score }]);
    });

    it("filters and orders hits by $distance and $score with where, orderBy and orderByMultiple", async () => {
      const { g, readBatch, Predicate, Order } = sdk;
      const near = () => g().vectorSearchNodes("Doc", "embedding", [1, 0], 3);
      const text = () => g().textSearchNodes("Doc", "title", "graph", 3);
      const answer = await run(
        readBatch()
          .varAs("close", near().where(Predicate.lt("$distance", 0.5)).values(["title"]))
          .varAs("farthest_first", near().orderBy("$distance", Order.Desc).values(["title"]))
          .varAs("farthest_first_multiple", near().orderByMultiple([["$distance", Order.Desc]]).values(["title"]))
          .varAs("scored", text().where(Predicate.and([Predicate.hasKey("$score"), Predicate.gt("$score", 0)])).count())
          .varAs("unscored", near().where(Predicate.hasKey("$score")).count())
          .returning(["close", "farthest_first", "farthest_first_multiple", "scored", "unscored"]),
      );
      expect(answer).toEqual({
        close: [{ title: "graph databases" }],
        farthest_first: [{ title: "graph theory" }, { title: "graph databases" }],
        farthest_first_multiple: [{ title: "graph theory" }, { title: "graph databases" }],
        scored: 2,
        // A vector hit has a $distance and no $score.
        unscored: 0,
      });
    });

    it("orders by HelixDB v3's rule: a missing key first ascending and last descending, ties by element ID", async () => {
      const { g, readBatch, NodeRef, Order } = sdk;
      // The stream 3, 2, 1: sports (no rank, no note), graph theory (rank 4, note), graph databases (rank 1, no note).
      const reversed = () => g().n(NodeRef.ids([3, 2, 1]));
      const answer = await run(
        readBatch()
          .varAs("rank_asc", reversed().orderBy("rank", Order.Asc).values(["title"]))
          .varAs("rank_desc", reversed().orderBy("rank", Order.Desc).values(["title"]))
          .varAs("note_asc", reversed().orderBy("note", Order.Asc).values(["title"]))
          .varAs("note_then_rank", reversed().orderByMultiple([["note", Order.Desc], ["rank", Order.Desc]]).values(["title"]))
          .returning(["rank_asc", "rank_desc", "note_asc", "note_then_rank"]),
      );
      expect(answer).toEqual({
        rank_asc: [{ title: "sports" }, { title: "graph databases" }, { title: "graph theory" }],
        rank_desc: [{ title: "graph theory" }, { title: "graph databases" }, { title: "sports" }],
        // The two without a note tie: element ID breaks it (1 before 3), not the stream's order.
        note_asc: [{ title: "graph databases" }, { title: "sports" }, { title: "graph theory" }],
        note_then_rank: [{ title: "graph theory" }, { title: "graph databases" }, { title: "sports" }],
      });
    });

    it("leaves a property the element lacks out of project, valueMap and values rows", async () => {
      const { g, readBatch, PropertyProjection, Expr, ExprProjection } = sdk;
      const answer = await run(
        readBatch()
          .varAs("projected", g().nWithLabel("Doc").project([PropertyProjection.new("title"), PropertyProjection.new("note"), ExprProjection.new("computed", Expr.prop("note"))]))
          .varAs("mapped", g().nWithLabel("Doc").valueMap(["rank", "note"]))
          .varAs("values", g().nWithLabel("Doc").values(["note"]))
          .returning(["projected", "mapped", "values"]),
      );
      expect(answer).toEqual({
        projected: [
          { title: "graph databases", computed: null },
          { title: "graph theory", note: "draft", computed: "draft" },
          { title: "sports", computed: null },
        ],
        mapped: [{ rank: 1 }, { rank: 4, note: "draft" }, {}],
        // One object per element that has one of the properties; none for the others.
        values: [{ note: "draft" }],
      });
    });

    it("answers values with one object per element, every listed property it has", async () => {
      const { g, readBatch } = sdk;
      const answer = await run(readBatch().varAs("rows", g().nWithLabel("Doc").values(["title", "rank"])).returning(["rows"]));
      expect(answer).toEqual({
        rows: [{ title: "graph databases", rank: 1 }, { title: "graph theory", rank: 4 }, { title: "sports" }],
      });
    });

    it("answers aggregateBy as one row named <property>_<Function>, over the numeric values", async () => {
      const { g, readBatch, AggregateFunction } = sdk;
      const docs = () => g().nWithLabel("Doc");
      const answer = await run(
        readBatch()
          .varAs("mean", docs().aggregateBy(AggregateFunction.Mean, "rank"))
          .varAs("count", docs().aggregateBy(AggregateFunction.Count, "rank"))
          .varAs("sum", docs().aggregateBy(AggregateFunction.Sum, "rank"))
          .varAs("min", docs().aggregateBy(AggregateFunction.Min, "rank"))
          .varAs("max", docs().aggregateBy(AggregateFunction.Max, "rank"))
          .varAs("none", docs().aggregateBy(AggregateFunction.Max, "title"))
          .returning(["mean", "count", "sum", "min", "max", "none"]),
      );
      expect(answer).toEqual({
        mean: [{ rank_Mean: 2.5 }],
        count: [{ rank_Count: 2 }],
        sum: [{ rank_Sum: 5 }],
        min: [{ rank_Min: 1 }],
        max: [{ rank_Max: 4 }],
        // Strings that do not read as numbers are skipped; the max of nothing is 0, as HelixDB's.
        none: [{ title_Max: 0 }],
      });
    });

    it("answers records with $id, $label and their properties, and a hit's $distance", async () => {
      const { g, readBatch } = sdk;
      const answer = await run(
        readBatch()
          .varAs("doc", g().n(1n))
          .varAs("hit", g().vectorSearchNodes("Doc", "embedding", [0, 1], 1))
          .returning(["doc", "hit"]),
      );
      expect(answer).toEqual({
        doc: [{ $id: "1", $label: "Doc", title: "graph databases", embedding: [1, 0], rank: 1 }],
        hit: [{ $id: "2", $label: "Doc", title: "graph theory", embedding: [0, 1], rank: 4, note: "draft", $distance: 0 }],
      });
    });
  });
});
