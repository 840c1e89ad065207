/**
 * The mutation and search steps of HelixDB's own v3 TypeScript SDK that the other suites leave out (issue 14;
 * builder-coverage.test.ts guards that every builder method is called): `removeProperty`, `drop`, `dropEdge`,
 * `dropEdgeLabeled`, `dropEdgeById`, the edge index DDL (`createVectorIndexEdges`, `createTextIndexEdges`) and every
 * search form not used elsewhere (`vectorSearchNodesWith`, `textSearchNodesWith`, `vectorSearchEdges`,
 * `vectorSearchEdgesWith`, `textSearchEdges`, `textSearchEdgesWith`, and the stream-scoped `vectorSearch`,
 * `vectorSearchWith`, `textSearch`). Every case runs on one graph per target, embedded (schemaless and with a schema)
 * and over HTTP (a schemaless silk serve and silk gateway, through the SDK's client): harness.ts describeOnGraph.
 * The SDK is imported by relative URL from /work/shared/clients (its README); nothing of it is copied here.
 *
 * The searches read the graph the block's seed writes, its IDs 1 to 6 (below). Each mutation case first writes its
 * own Knows triangle, Ann (age 30) -Knows(weight 2)-> Bob (age 25) -Knows(weight 0.5)-> Cy (no age) -Knows(weight 1)->
 * Ann, every node and edge marked with the case's own `case` property, takes the IDs from the write's answer, and
 * reads back only what carries its mark: the cases share the graph and see nothing of each other's writes.
 */
import { describe, expect, it } from "vitest";
import { describeOnGraph, type KnowsGraph } from "./harness.js";

/** A mutation case's triangle, as the write that made it answered: its nodes' and edges' IDs. */
interface Triangle {
  readonly ann: number | bigint;
  readonly bob: number | bigint;
  readonly cy: number | bigint;
  readonly ab: number | bigint;
  readonly bc: number | bigint;
  readonly ca: number | bigint;
}

/** The `$id` of the one record a variable of the triangle's write answered. */
function onlyId(answer: Record<string, unknown>, name: keyof Triangle): number | bigint {
  const records = answer[name];
  expect(records, `the write answers one ${name}`).toEqual([expect.objectContaining({ $id: expect.anything() })]);
  const id = (records as [{ $id: unknown }])[0].$id;
  if (typeof id !== "number" && typeof id !== "bigint") throw new Error(`${name} answered $id ${String(id)}, not an ID`);
  return id;
}

/** Writes a triangle whose every node and edge carries `case: mark`, checks the records the write answered, and answers their IDs. */
async function writeTriangle(graph: KnowsGraph, mark: string): Promise<Triangle> {
  const { g, writeBatch, NodeRef } = graph.sdk;
  const names = ["ann", "bob", "cy", "ab", "bc", "ca"] as const;
  const answer = await graph.run(
    writeBatch()
      .varAs("ann", g().addN("User", { name: "Ann", age: 30, case: mark }))
      .varAs("bob", g().addN("User", { name: "Bob", age: 25, case: mark }))
      .varAs("cy", g().addN("User", { name: "Cy", case: mark }))
      .varAs("ab", g().n(NodeRef.var("ann")).addE("Knows", NodeRef.var("bob"), { weight: 2, case: mark }))
      .varAs("bc", g().n(NodeRef.var("bob")).addE("Knows", NodeRef.var("cy"), { weight: 0.5, case: mark }))
      .varAs("ca", g().n(NodeRef.var("cy")).addE("Knows", NodeRef.var("ann"), { weight: 1, case: mark }))
      .returning([...names]),
  );
  const [ann, bob, cy, ab, bc, ca] = names.map((name) => onlyId(answer, name));
  expect(answer).toEqual({
    ann: [{ $id: ann, $label: "User", name: "Ann", age: 30, case: mark }],
    bob: [{ $id: bob, $label: "User", name: "Bob", age: 25, case: mark }],
    cy: [{ $id: cy, $label: "User", name: "Cy", case: mark }],
    ab: [{ $id: ab, $label: "Knows", $from: ann, $to: bob, weight: 2, case: mark }],
    bc: [{ $id: bc, $label: "Knows", $from: bob, $to: cy, weight: 0.5, case: mark }],
    ca: [{ $id: ca, $label: "Knows", $from: cy, $to: ann, weight: 1, case: mark }],
  });
  return { ann, bob, cy, ab, bc, ca };
}

/** The nodes and edges of the triangle marked `mark` that remain, by ID. */
function remaining(graph: KnowsGraph, mark: string): Promise<Record<string, unknown>> {
  const { g, readBatch, Predicate } = graph.sdk;
  return graph.run(
    readBatch()
      .varAs("nodes", g().nWhere(Predicate.eq("case", mark)).id())
      .varAs("edges", g().eWhere(Predicate.eq("case", mark)).id())
      .returning(["nodes", "edges"]),
  );
}

/**
 * The graph's schema "with a schema": the Knows graph's labels with the searches' text and vector fields (no indexes:
 * the seed creates them), the mutation cases' `age` and `weight`, and the `case` mark.
 */
const WRITES_SCHEMA =
  "N::User { name: String, age: I64, case: String, bio: String, emb: [F32] }\n" +
  "E::Knows { From: User, To: User, Properties: { weight: F64, case: String, note: String, vec: [F32] } }\n";

// The seed creates the indexes and writes the searches' graph, IDs 1 to 6: Ann (1) -Knows(4)-> Bob (2) -Knows(5)-> Cy
// (3) -Knows(6)-> Ann. The mutation cases' triangles carry no text or vector, so no search ranks them.
describeOnGraph(
  WRITES_SCHEMA,
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
    describe("mutations built by the v3 SDK, each on its own marked triangle", () => {
      it("removeProperty takes a property off nodes and edges", async () => {
        const mark = "removeProperty";
        const { ann, bob, cy, ab, bc, ca } = await writeTriangle(graph, mark);
        const { g, writeBatch, readBatch, Predicate } = graph.sdk;
        const written = await graph.run(
          writeBatch()
            .varAs("ann", g().n(ann).removeProperty("age").valueMap())
            .varAs("edge", g().e(ab).removeProperty("weight").valueMap())
            .varAs("absent", g().n(cy).removeProperty("age").valueMap(["name", "age"]))
            .returning(["ann", "edge", "absent"]),
        );
        expect(written).toEqual({
          ann: [{ $id: ann, $label: "User", name: "Ann", case: mark }],
          edge: [{ $id: ab, $label: "Knows", $from: ann, $to: bob, case: mark }],
          absent: [{ name: "Cy" }],
        });
        const marked = Predicate.eq("case", mark);
        const kept = await graph.run(
          readBatch().varAs("aged", g().nWhere(marked).hasKey("age").id()).varAs("weighted", g().eWhere(marked).hasKey("weight").id()).returning(["aged", "weighted"]),
        );
        expect(kept).toEqual({ aged: [bob], weighted: [bc, ca] });
      });

      it("drop removes nodes with their edges, and edges alone", async () => {
        const mark = "drop";
        const { ann, bob, cy, ab } = await writeTriangle(graph, mark);
        const { g, writeBatch } = graph.sdk;
        expect(await graph.run(writeBatch().varAs("gone", g().n(cy).drop()).returning([]))).toEqual({});
        expect(await remaining(graph, mark)).toEqual({ nodes: [ann, bob], edges: [ab] });
        expect(await graph.run(writeBatch().varAs("gone", g().e(ab).drop()).returning([]))).toEqual({});
        expect(await remaining(graph, mark)).toEqual({ nodes: [ann, bob], edges: [] });
      });

      it("dropEdge drops the edges from the input to a node, and yields the input", async () => {
        const mark = "dropEdge";
        const { ann, bob, cy, bc, ca } = await writeTriangle(graph, mark);
        const { g, writeBatch } = graph.sdk;
        const written = await graph.run(writeBatch().varAs("from", g().n(ann).dropEdge(bob).id()).varAs("none", g().n(ann).dropEdge(cy).id()).returning(["from", "none"]));
        // Ann has no edge to Cy (Cy's edge goes the other way): nothing to drop there, and no error.
        expect(written).toEqual({ from: [ann], none: [ann] });
        expect(await remaining(graph, mark)).toEqual({ nodes: [ann, bob, cy], edges: [bc, ca] });
      });

      it("dropEdgeLabeled drops only the edges of its label", async () => {
        const mark = "dropEdgeLabeled";
        const { ann, bob, cy, ab, bc, ca } = await writeTriangle(graph, mark);
        const { g, writeBatch } = graph.sdk;
        await graph.run(writeBatch().varAs("other_label", g().n(bob).dropEdgeLabeled(cy, "Likes")).returning([]));
        expect(await remaining(graph, mark)).toEqual({ nodes: [ann, bob, cy], edges: [ab, bc, ca] });
        await graph.run(writeBatch().varAs("knows", g().n(bob).dropEdgeLabeled(cy, "Knows")).returning([]));
        expect(await remaining(graph, mark)).toEqual({ nodes: [ann, bob, cy], edges: [ab, ca] });
      });

      it("dropEdgeById drops the edges named, with or without an input", async () => {
        const mark = "dropEdgeById";
        const { ann, bob, cy, ab, bc, ca } = await writeTriangle(graph, mark);
        const { g, writeBatch } = graph.sdk;
        const written = await graph.run(writeBatch().varAs("alone", g().dropEdgeById(ca)).varAs("after", g().n(ann).dropEdgeById([ab]).id()).returning(["after"]));
        expect(written).toEqual({ after: [ann] });
        expect(await remaining(graph, mark)).toEqual({ nodes: [ann, bob, cy], edges: [bc] });
      });
    });

    describe("searches built by the v3 SDK, on the seeded graph", () => {
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
    });
  },
);
