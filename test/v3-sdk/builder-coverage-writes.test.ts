/**
 * The mutation and search steps of HelixDB's own v3 TypeScript SDK that the other suites leave out (issue 14;
 * builder-coverage.test.ts guards that every builder method is called): `removeProperty`, `drop`, `dropEdge`,
 * `dropEdgeLabeled`, `dropEdgeById`, the edge index DDL (`createVectorIndexEdges`, `createTextIndexEdges`) and every
 * search form not used elsewhere (`vectorSearchNodesWith`, `textSearchNodesWith`, `vectorSearchEdges`,
 * `vectorSearchEdgesWith`, `textSearchEdges`, `textSearchEdgesWith`, and the stream-scoped `vectorSearch`,
 * `vectorSearchWith`, `textSearch`). Each write runs on a fresh seeded embedded database, so the others see the graph
 * whole; the searches run on one graph per target, embedded and over HTTP (harness.ts describeOnGraph).
 * The SDK is imported by relative URL from /work/shared/clients (its README); nothing of it is copied here.
 *
 * The graph (harness.ts): Ann (1, age 30) -Knows(4, weight 2)-> Bob (2, age 25) -Knows(5, weight 0.5)-> Cy (3, no age)
 * -Knows(6, weight 1)-> Ann.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATABASE_VARIANTS, describeOnGraph, openSeededKnowsGraph, type SdkEmbedded } from "./harness.js";

// Each suite runs against a schemaless database and against one with a schema (harness.ts KNOWS_SCHEMA).
describe.each(DATABASE_VARIANTS)("%s", (variant) => {
  describe("mutations built by the v3 SDK, each on a fresh database", () => {
    let embedded: SdkEmbedded | undefined;
    afterAll(() => embedded?.db.close());

    /** A freshly seeded graph for one test (the previous one closed). */
    async function fresh(): Promise<SdkEmbedded> {
      await embedded?.db.close();
      const graph = await openSeededKnowsGraph(variant);
      embedded = graph;
      return graph;
    }

    /** The graph's remaining nodes and edges, by ID. */
    async function remaining(graph: SdkEmbedded): Promise<Record<string, unknown>> {
      const { g, readBatch, Predicate } = graph.sdk;
      return graph.run(readBatch().varAs("nodes", g().nWhere(Predicate.hasKey("name")).id()).varAs("edges", g().eWithLabel("Knows").id()).returning(["nodes", "edges"]));
    }

    it("removeProperty takes a property off nodes and edges", async () => {
      const graph = await fresh();
      const { g, writeBatch, readBatch, Predicate } = graph.sdk;
      const written = await graph.run(
        writeBatch()
          .varAs("ann", g().n(1).removeProperty("age").valueMap())
          .varAs("edge", g().e(4).removeProperty("weight").valueMap())
          .varAs("absent", g().n(3).removeProperty("age").valueMap(["name", "age"]))
          .returning(["ann", "edge", "absent"]),
      );
      expect(written).toEqual({
        ann: [{ $id: "1", $label: "User", name: "Ann" }],
        edge: [{ $id: "4", $label: "Knows", $from: "1", $to: "2" }],
        absent: [{ name: "Cy" }],
      });
      const aged = await graph.run(readBatch().varAs("aged", g().nWhere(Predicate.hasKey("age")).id()).varAs("weighted", g().eWhere(Predicate.hasKey("weight")).id()).returning(["aged", "weighted"]));
      expect(aged).toEqual({ aged: ["2"], weighted: ["5", "6"] });
    });

    it("drop removes nodes with their edges, and edges alone", async () => {
      const graph = await fresh();
      const { g, writeBatch } = graph.sdk;
      await graph.run(writeBatch().varAs("gone", g().n(3).drop()).returning([]));
      expect(await remaining(graph)).toEqual({ nodes: ["1", "2"], edges: ["4"] });
      await graph.run(writeBatch().varAs("gone", g().e(4).drop()).returning([]));
      expect(await remaining(graph)).toEqual({ nodes: ["1", "2"], edges: [] });
    });

    it("dropEdge drops the edges from the input to a node, and yields the input", async () => {
      const graph = await fresh();
      const { g, writeBatch } = graph.sdk;
      const written = await graph.run(writeBatch().varAs("from", g().n(1).dropEdge(2).id()).varAs("none", g().n(1).dropEdge(3).id()).returning(["from", "none"]));
      // Ann has no edge to Cy (Cy's edge goes the other way): nothing to drop there, and no error.
      expect(written).toEqual({ from: ["1"], none: ["1"] });
      expect(await remaining(graph)).toEqual({ nodes: ["1", "2", "3"], edges: ["5", "6"] });
    });

    it("dropEdgeLabeled drops only the edges of its label", async () => {
      const graph = await fresh();
      const { g, writeBatch } = graph.sdk;
      await graph.run(writeBatch().varAs("other_label", g().n(2).dropEdgeLabeled(3, "Likes")).returning([]));
      expect(await remaining(graph)).toEqual({ nodes: ["1", "2", "3"], edges: ["4", "5", "6"] });
      await graph.run(writeBatch().varAs("knows", g().n(2).dropEdgeLabeled(3, "Knows")).returning([]));
      expect(await remaining(graph)).toEqual({ nodes: ["1", "2", "3"], edges: ["4", "6"] });
    });

    it("dropEdgeById drops the edges named, with or without an input", async () => {
      const graph = await fresh();
      const { g, writeBatch } = graph.sdk;
      const written = await graph.run(writeBatch().varAs("alone", g().dropEdgeById(6)).varAs("after", g().n(1).dropEdgeById([4]).id()).returning(["after"]));
      expect(written).toEqual({ after: ["1"] });
      expect(await remaining(graph)).toEqual({ nodes: ["1", "2", "3"], edges: ["5"] });
    });
  });
});

/** The search graph's schema "with a schema": the Knows graph's labels with text and vector fields, no indexes. */
const SEARCH_SCHEMA =
  "N::User { name: String, bio: String, emb: [F32] }\nE::Knows { From: User, To: User, Properties: { note: String, vec: [F32] } }\n";

// The searches run on one graph whose indexes the SDK creates, embedded (schemaless and with a schema) and over HTTP
// (a schemaless silk serve and silk gateway, through the SDK's client): harness.ts describeOnGraph.
describeOnGraph(
  SEARCH_SCHEMA,
  async ({ sdk, run }) => {
    const { g, writeBatch, NodeRef, PropertyValue, VectorDistanceMetric } = sdk;
    const created = await run(
      writeBatch()
        .varAs("node_vector", g().createVectorIndexNodes("User", "emb", 2, VectorDistanceMetric.Cosine))
        .varAs("node_text", g().createTextIndexNodes("User", "bio"))
        .varAs("edge_vector", g().createVectorIndexEdges("Knows", "vec", 2, VectorDistanceMetric.Cosine))
        .varAs("edge_text", g().createTextIndexEdges("Knows", "note"))
        .returning(["edge_vector", "edge_text"]),
    );
    expect(sdk.parseIndexDdlReceipt(created.edge_vector)).toMatchObject({ kind: "accepted", index: "Knows.vec", element_kind: "edge" });
    expect(sdk.parseIndexDdlReceipt(created.edge_text)).toMatchObject({ kind: "accepted", index: "Knows.note", element_kind: "edge" });
    const vector = (values: number[]) => PropertyValue.f32Array(values);
    await run(
      writeBatch()
        .varAs("ann", g().addN("User", { name: "Ann", bio: "graph databases", emb: vector([1, 0]) }))
        .varAs("bob", g().addN("User", { name: "Bob", bio: "cooking pasta", emb: vector([0, 1]) }))
        .varAs("cy", g().addN("User", { name: "Cy", bio: "graph theory", emb: vector([0.6, 0.8]) }))
        .varAs("ab", g().n(NodeRef.var("ann")).addE("Knows", NodeRef.var("bob"), { note: "met at a graph meetup", vec: vector([1, 0]) }))
        .varAs("bc", g().n(NodeRef.var("bob")).addE("Knows", NodeRef.var("cy"), { note: "cooking class", vec: vector([0, 1]) }))
        .varAs("ca", g().n(NodeRef.var("cy")).addE("Knows", NodeRef.var("ann"), { note: "graph reading group", vec: vector([0.7, 0.7]) }))
        .returning([]),
    );
  },
  (graph) => {
    it("searches nodes with runtime inputs: vectorSearchNodesWith and textSearchNodesWith", async () => {
      const { g, readBatch, Expr, StreamBound, defineParams, param } = graph.sdk;
      const params = defineParams({ near: param.array(param.f32()), k: param.i64(), words: param.string() });
      const request = readBatch()
        // Cosine distances from [1, 0]: Ann 0, Cy 0.4, Bob 1.
        .varAs("nearest", g().vectorSearchNodesWith("User", "emb", Expr.param("near"), Expr.param("k")).id())
        // Cy's bio holds both words, Ann's one; Bob's neither.
        .varAs("text", g().textSearchNodesWith("User", "bio", Expr.param("words"), StreamBound.literal(5)).id())
        .returning(["nearest", "text"]);
      const answer = await graph.send(request.toQueryRequest(params, { near: [1, 0], k: 2, words: "graph theory" }));
      expect(answer).toEqual({ nearest: [1, 3], text: [3, 1] });
    });

    it("searches edges: vectorSearchEdges, vectorSearchEdgesWith, textSearchEdges and textSearchEdgesWith", async () => {
      const { g, readBatch, PropertyInput, PropertyValue } = graph.sdk;
      const answer = await graph.run(
        readBatch()
          .varAs("nearest", g().vectorSearchEdges("Knows", "vec", [1, 0], 1).id())
          // Cosine distances from [0, 1]: Bob → Cy 0, Cy → Ann about 0.29, Ann → Bob 1.
          .varAs("nearest_two", g().vectorSearchEdgesWith("Knows", "vec", PropertyInput.value(PropertyValue.f32Array([0, 1])), 2).id())
          .varAs("cooking", g().textSearchEdges("Knows", "note", "cooking", 5).values(["note"]))
          .varAs("graph_group", g().textSearchEdgesWith("Knows", "note", "graph group", 5).id())
          .returning(["nearest", "nearest_two", "cooking", "graph_group"]),
      );
      expect(answer).toEqual({ nearest: [4], nearest_two: [5, 6], cooking: [{ note: "cooking class" }], graph_group: [6, 4] });
    });

    it("ranks only the stream's own records: vectorSearch, vectorSearchWith and textSearch", async () => {
      const { g, readBatch, PropertyInput, PropertyValue } = graph.sdk;
      const answer = await graph.run(
        readBatch()
          // Of Bob and Cy, Cy is nearer [1, 0]; Ann, nearer still, is not in the stream.
          .varAs("nodes", g().n([2, 3]).vectorSearch("User", "emb", [1, 0], 1).id())
          // Bob's edges: Bob → Cy (out) and Ann → Bob (in); the latter lies on [1, 0].
          .varAs("edges", g().n(2).bothE("Knows").vectorSearchWith("Knows", "vec", PropertyInput.value(PropertyValue.f32Array([1, 0])), 1).id())
          .varAs("text", g().n([1, 2]).textSearch("User", "bio", "graph", 5).id())
          .returning(["nodes", "edges", "text"]),
      );
      expect(answer).toEqual({ nodes: [3], edges: [4], text: [1] });
    });
  },
);
