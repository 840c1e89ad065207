/**
 * Hybrid search through the operation tree (`db.run`), on memory and on three disk partitions: a `union` of a
 * `vector_search_nodes` and a `text_search_nodes` over the same docs fused by `rerank_rrf` (exact fused scores
 * 1/(60+r1) + 1/(60+r2), one element per doc), `rerank_mmr` at lambda 1 keeping relevance order, the `_within` forms
 * restricted exactly to a traversal's records (also beyond 2,000 candidates, where the graph is searched with a
 * membership filter), and the refusals: k out of 1..10,000 (`invalid_value`), `index_not_found`, `tenant_required`,
 * and `index_not_ready` while a vector index created at run time is still constructing (never a partial answer).
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { distance } from "../../node/indexes/vector-math.js";
import { analyze } from "../../node/indexes/text-analyzers.js";
import { BACKENDS, TestDatabase, expectCode, expectRefused, removeTempDirs } from "../helpers/engine.js";
import { addE, entry, forEach, nodesById, out, read, readOne, write, type Json, type TreeNode } from "../helpers/tree.js";

afterAll(removeTempDirs);

const SCHEMA = `
N::Doc {
    VECTOR INDEX(dimension: 2, metric: euclidean) v: [F32],
    TEXT INDEX(analyzer: standard) body: String,
}
N::Plain { v: [F32], body: String }
N::User { name: String }
E::Owns { From: User, To: Doc }
V::Chunk(dimension: 2, metric: euclidean, tenant: org) { org: String }
`;

const WORDS = ["red", "green", "blue", "cyan"];

interface Hit {
  readonly $id: string;
  readonly $distance?: number;
  readonly $score?: number;
  readonly v: number[];
  readonly body: string;
}

const value = (literal: Json): Json => ({ value: literal });
const vectorSearch = (q: number[], k: number | Json, extra: Record<string, Json> = {}): TreeNode => ({
  vector_search_nodes: { label: "Doc", property: "v", query: value({ f64_array: q }), k: typeof k === "number" ? value({ i64: k }) : k, ...extra },
});
const textSearch = (q: string, k: number): TreeNode => ({ text_search_nodes: { label: "Doc", query: value({ string: q }), k: value({ i64: k }) } });
const union = (input: TreeNode, ...roots: TreeNode[]): TreeNode => ({ union: { input: input as Json, traversals: roots.map((root) => ({ root: root as Json })) } });
const rrf = (input: TreeNode): TreeNode => ({ rerank_rrf: { input: input as Json } });
const mmr = (input: TreeNode, lambda: number): TreeNode => ({ rerank_mmr: { input: input as Json, lambda: value({ f64: lambda }), distance: "euclidean" } });

/** Docs on a grid of vectors (distinct distances from the queries used) with texts of 1-3 words. */
function docsOf(count: number): { v: number[]; body: string }[] {
  return Array.from({ length: count }, (_, i) => ({
    v: [(i % 7) * 1.5 + i * 0.01, Math.floor(i / 7) * 2.25],
    body: [WORDS[i % 4], ...(i % 3 === 0 ? [WORDS[(i + 1) % 4]] : []), ...(i % 5 === 0 ? ["cyan"] : [])].join(" "),
  }));
}

async function seed(t: TestDatabase, docs: readonly { v: number[]; body: string }[]): Promise<string[]> {
  const rows = docs.map((doc) => ({ v: doc.v, body: doc.body }));
  const body = [entry("d", { add_n: { label: "Doc", properties: [["v", { expr: { param: "v" } }], ["body", { expr: { param: "body" } }]] } })];
  const answer = await t.run(write([forEach("rows", body)], ["d"], { rows }));
  return (answer.d as { $id: string }[]).map((row) => row.$id);
}

async function one(t: TestDatabase, root: TreeNode): Promise<Hit[]> {
  return (await t.run(readOne(root))).r as Hit[];
}

describe.each([BACKENDS[0], BACKENDS[2]])("hybrid search ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: SCHEMA });
  });
  afterEach(async () => t.destroy());

  it("RRF over a union of a vector and a text search: exact fused scores, one element per doc", async () => {
    const ids = await seed(t, docsOf(30));
    const q = [3, 2];
    const vector = await one(t, vectorSearch(q, 8));
    const text = await one(t, textSearch("cyan red", 8));
    const both = vector.filter((hit) => text.some((other) => other.$id === hit.$id));
    expect(both.length).toBeGreaterThan(0); // the test means something only when the lists overlap

    const fused = await one(t, rrf(union(nodesById(ids[0]), vectorSearch(q, 8), textSearch("cyan red", 8))));
    const expected = new Map<string, number>();
    vector.forEach((hit, i) => expected.set(hit.$id, (expected.get(hit.$id) ?? 0) + 1 / (60 + i + 1)));
    text.forEach((hit, i) => expected.set(hit.$id, (expected.get(hit.$id) ?? 0) + 1 / (60 + i + 1)));
    expect(fused.map((hit) => hit.$id).sort()).toEqual([...expected.keys()].sort());
    for (const hit of fused) expect(hit.$score, `fused score of ${hit.$id}`).toBeCloseTo(expected.get(hit.$id)!, 12);
    for (let i = 1; i < fused.length; i += 1) expect(fused[i].$score!).toBeLessThanOrEqual(fused[i - 1].$score!);
    // A doc in both lists outranks every doc in one list at the same or a worse rank.
    const top = [...expected.entries()].sort((a, b) => b[1] - a[1])[0];
    expect(fused[0].$score).toBeCloseTo(top[1], 12);
  });

  it("MMR at lambda 1 keeps the relevance order; hits keep their records", async () => {
    await seed(t, docsOf(20));
    const hits = await one(t, vectorSearch([1, 1], 10));
    const reranked = await one(t, mmr(vectorSearch([1, 1], 10), 1));
    expect(reranked.map((hit) => hit.$id)).toEqual(hits.map((hit) => hit.$id));
    expect(reranked.map((hit) => hit.body)).toEqual(hits.map((hit) => hit.body));
    const textHits = await one(t, textSearch("blue green", 10));
    expect((await one(t, mmr(textSearch("blue green", 10), 1))).map((hit) => hit.$id)).toEqual(textHits.map((hit) => hit.$id));
  });

  it("the _within forms search exactly the traversal's records", async () => {
    const docs = docsOf(40);
    const ids = await seed(t, docs);
    const user = ((await t.run(write([entry("u", { add_n: { label: "User", properties: [["name", value({ string: "ann" })]] } })], ["u"]))).u as { $id: string }[])[0].$id;
    const owned = ids.filter((_, i) => i % 3 === 1);
    await t.run(write([forEach("rows", [entry(undefined, addE(nodesById(user), "Owns", { param: "doc" }))])], [], { rows: owned.map((doc) => ({ doc })) }));
    const input = out(nodesById(user), "Owns");
    const q = [4, 4];
    const within = await one(t, { vector_search_nodes_within: { input: input as Json, label: "Doc", property: "v", query: value({ f64_array: q }), k: value({ i64: 100 }) } });
    const byDistance = owned
      .map((id) => ({ id, d: distance("euclidean", Float32Array.from(q), Float32Array.from(docs[ids.indexOf(id)].v)) }))
      .sort((a, b) => a.d - b.d);
    expect(within.map((hit) => hit.$id)).toEqual(byDistance.map((e) => e.id));
    const few = await one(t, { vector_search_nodes_within: { input: input as Json, label: "Doc", property: "v", query: value({ f64_array: q }), k: value({ i64: 3 }) } });
    expect(few.map((hit) => hit.$id)).toEqual(byDistance.slice(0, 3).map((e) => e.id));
    const textWithin = await one(t, { text_search_nodes_within: { input: input as Json, label: "Doc", query: value({ string: "cyan" }), k: value({ i64: 100 }) } });
    const cyan = owned.filter((id) => analyze("standard", docs[ids.indexOf(id)].body).includes("cyan"));
    expect(textWithin.map((hit) => hit.$id).sort()).toEqual([...cyan].sort());
  });

  it("refuses k out of 1..10,000, an index that does not exist, and a tenant index without a tenant", async () => {
    await seed(t, docsOf(5));
    // As a parameter, k is checked when the search runs; as a literal, 0 and below are malformed trees already.
    for (const k of [0, 10_001, -1, 2.5]) {
      const parameters = { k };
      await expectRefused(t, readOne(vectorSearch([0, 0], { expr: { param: "k" } }), parameters), "invalid_value");
      await expectRefused(t, readOne({ text_search_nodes: { label: "Doc", query: value({ string: "red" }), k: { expr: { param: "k" } } } }, parameters), "invalid_value");
    }
    await expectRefused(t, readOne(vectorSearch([0, 0], 10_001)), "invalid_value");
    await expectRefused(t, readOne(vectorSearch([0, 0], 0)), "malformed_tree");
    await expectRefused(t, readOne(textSearch("red", 0)), "malformed_tree");
    expect(await one(t, vectorSearch([0, 0], 10_000))).toHaveLength(5);
    await expectRefused(t, readOne({ vector_search_nodes: { label: "Plain", property: "v", query: value({ f64_array: [0, 0] }), k: value({ i64: 1 }) } }), "index_not_found");
    await expectRefused(t, readOne({ text_search_nodes: { label: "Plain", query: value({ string: "red" }), k: value({ i64: 1 }) } }), "index_not_found");
    await expectRefused(t, readOne({ vector_search_nodes: { label: "Doc", property: "body", query: value({ f64_array: [0, 0] }), k: value({ i64: 1 }) } }), "index_not_found");
    await t.run(write([entry(undefined, { add_v: { label: "Chunk", vector: value({ f64_array: [1, 0] }), properties: [["org", value({ string: "acme" })]] } })], []));
    const chunks = (extra: Record<string, Json>): TreeNode => ({ vector_search_vectors: { label: "Chunk", query: value({ f64_array: [1, 0] }), k: value({ i64: 5 }), ...extra } });
    await expectRefused(t, readOne(chunks({})), "tenant_required");
    expect(await one(t, chunks({ tenant_value: value({ string: "acme" }) }))).toHaveLength(1);
    expect(await one(t, chunks({ tenant_value: value({ string: "globex" }) }))).toEqual([]);
  });
});

describe("restricted search beyond 2,000 candidates (memory)", () => {
  it("returns exactly the traversal's records when the graph is searched with a membership filter", async () => {
    const t = await TestDatabase.open(BACKENDS[0], { schema: SCHEMA });
    try {
      const docs = docsOf(2_600);
      const ids = await seed(t, docs);
      const user = ((await t.run(write([entry("u", { add_n: { label: "User", properties: [["name", value({ string: "ann" })]] } })], ["u"]))).u as { $id: string }[])[0].$id;
      const owned = ids.filter((_, i) => i % 5 !== 0); // 2,080 candidates, 80% of the graph
      await t.run(write([forEach("rows", [entry(undefined, addE(nodesById(user), "Owns", { param: "doc" }))])], [], { rows: owned.map((doc) => ({ doc })) }));
      const ownedSet = new Set(owned);
      const q = [0.2, 0.1];
      const within = await one(t, { vector_search_nodes_within: { input: out(nodesById(user), "Owns") as Json, label: "Doc", property: "v", query: value({ f64_array: q }), k: value({ i64: 50 }) } });
      expect(within).toHaveLength(50);
      for (const hit of within) expect(ownedSet.has(hit.$id), `hit ${hit.$id} is owned`).toBe(true);
      const exact = owned
        .map((id) => ({ id, d: distance("euclidean", Float32Array.from(q), Float32Array.from(docs[ids.indexOf(id)].v)) }))
        .sort((a, b) => a.d - b.d);
      // Membership is exact; the ranking is approximate here, so compare the nearest few (a wide beam finds them).
      expect(within.slice(0, 5).map((hit) => hit.$id)).toEqual(exact.slice(0, 5).map((e) => e.id));
      const all = await one(t, { vector_search_nodes_within: { input: out(nodesById(user), "Owns") as Json, label: "Doc", property: "v", query: value({ f64_array: q }), k: value({ i64: 10_000 }) } });
      for (const hit of all) expect(ownedSet.has(hit.$id)).toBe(true);
    } finally {
      await t.destroy();
    }
  }, 30_000);
});

describe("a vector index created at run time over existing data", () => {
  it("answers index_not_ready or the complete answer while it builds, never a partial one", async () => {
    const t = await TestDatabase.open(BACKENDS[1], { schema: SCHEMA }, { indexBuildChunkEntities: 2 });
    try {
      const rows = docsOf(60).map((doc) => ({ v: doc.v, body: doc.body }));
      await t.run(write([forEach("rows", [entry(undefined, { add_n: { label: "Plain", properties: [["v", { expr: { param: "v" } }], ["body", { expr: { param: "body" } }]] } })])], [], { rows }));
      const created = await t.run(write([entry("op", { create_index: { label: "Plain", property: "v", kind: "node", type: "vector", metric: "euclidean" } })], ["op"]));
      expect(created.op).toMatchObject({ index: "Plain.v", state: "constructing" });
      const search = readOne({ vector_search_nodes: { label: "Plain", property: "v", query: value({ f64_array: [0, 0] }), k: value({ i64: 100 }) } });
      let notReady = 0;
      let answers = 0;
      for (let round = 0; round < 2_000 && answers < 3; round += 1) {
        try {
          const hits = (await t.run(search)).r as Hit[];
          expect(hits).toHaveLength(60);
          answers += 1;
        } catch (error) {
          await expectCode(Promise.reject(error), "index_not_ready");
          notReady += 1;
          await new Promise((resume) => setTimeout(resume, 2));
        }
      }
      expect(answers).toBe(3);
      expect(notReady).toBeGreaterThan(0); // the build took some chunks, and searches during it were refused
    } finally {
      await t.destroy();
    }
  }, 30_000);
});

// Checks that the read helper and the search builders serialise as the wire expects (read of two searches).
describe("several searches in one read", () => {
  it("number their rankings apart, so RRF of each alone is its own order", async () => {
    const t = await TestDatabase.open(BACKENDS[0], { schema: SCHEMA });
    try {
      await seed(t, docsOf(12));
      const answer = await t.run(read([entry("a", rrf(vectorSearch([2, 2], 5))), entry("b", vectorSearch([2, 2], 5))], ["a", "b"]));
      expect((answer.a as Hit[]).map((hit) => hit.$id)).toEqual((answer.b as Hit[]).map((hit) => hit.$id));
      (answer.a as Hit[]).forEach((hit, i) => expect(hit.$score).toBeCloseTo(1 / (61 + i), 12));
    } finally {
      await t.destroy();
    }
  });
});
