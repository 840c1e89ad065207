/**
 * The search beam width `ef` of vector indexes (protocol/indexes.ts VECTOR_EF_MAX), through the whole engine: set per
 * index by `create_index` (listed by `db.indexes()`) and per search by the `vector_search` step's `ef`, which wins
 * over the index's. A beam of 1 (so k) finds fewer of the exact top 10 than a beam of 500 on the same graph, which
 * finds them all; bad values are malformed_tree and change nothing. A schema's `ef` (`V::T(ef: n)`) changed between
 * opens keeps the index (active at once, its records not rebuilt into a new one) and takes the new value. HelixQL's
 * `SearchV<T>(v, k, ef: n)` (Silk's extension) reaches the search and wins over the index's `ef`.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { distance } from "../../node/indexes/vector-math.js";
import { seededRandom } from "../../protocol/random.js";
import { BACKENDS, DISK_BACKENDS, TestDatabase, expectCode, removeTempDirs } from "../helpers/engine.js";
import { entry, forEach, readOne, write, writeOne, type Json, type TreeNode } from "../helpers/tree.js";

afterAll(removeTempDirs);

const DIMENSION = 24;
const COUNT = 1_500;
const K = 10;

const value = (literal: Json): Json => ({ value: literal });
const search = (q: number[], extra: Record<string, Json> = {}): TreeNode => ({
  vector_search_nodes: { label: "Doc", property: "v", query: value({ f64_array: q }), k: value({ i64: K }), ...extra },
});

function vectors(count: number, seed: number): number[][] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => Array.from({ length: DIMENSION }, () => random() * 2 - 1));
}

describe("vector search ef", () => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(BACKENDS[0]);
  });
  afterEach(async () => t.destroy());

  async function ids(root: TreeNode): Promise<string[]> {
    return ((await t.run(readOne(root))).r as { $id: string }[]).map((hit) => hit.$id);
  }

  it("an index's ef sets its searches' beam, a search's ef wins over it; bad values are malformed_tree", async () => {
    await expectCode(t.run(writeOne({ create_index: { label: "Doc", property: "v", type: "vector", metric: "euclidean", ef: 10_001 } } as TreeNode)), "malformed_tree");
    expect(t.db.indexes()).toEqual([]);
    await t.run(writeOne({ create_index: { label: "Doc", property: "v", type: "vector", metric: "euclidean", dimension: DIMENSION, ef: 1 } } as TreeNode));
    expect(t.db.indexes()).toMatchObject([{ name: "Doc.v", family: "vector", ef: 1 }]);
    const rows = vectors(COUNT, 1).map((v) => ({ v }));
    const answer = await t.run(write([forEach("rows", [entry("d", { add_n: { label: "Doc", properties: [["v", { expr: { param: "v" } }]] } })])], ["d"], { rows }));
    const idOf = (answer.d as { $id: string }[]).map((row) => row.$id);
    let narrow = 0;
    let wide = 0;
    for (const q of vectors(20, 2)) {
      const truth = new Set(
        rows
          .map((row, i) => ({ id: idOf[i], d: distance("euclidean", Float32Array.from(q), Float32Array.from(row.v)) }))
          .sort((a, b) => a.d - b.d)
          .slice(0, K)
          .map((hit) => hit.id),
      );
      narrow += (await ids(search(q))).filter((id) => truth.has(id)).length;
      wide += (await ids(search(q, { ef: 500 }))).filter((id) => truth.has(id)).length;
    }
    expect(wide).toBe(20 * K);
    expect(narrow).toBeLessThan(wide);
    await expectCode(t.run(readOne(search(vectors(1, 3)[0], { ef: 0 }))), "malformed_tree");
    await expectCode(t.run(readOne(search(vectors(1, 3)[0], { ef: 64.5 }))), "malformed_tree");
  });
});

describe("a schema's vector index ef", () => {
  const schema = (ef: number) => `
V::Item(dimension: 4, metric: euclidean, ef: ${ef}) { n: I64 }
QUERY AddItems(rows: [{v: [F64], n: I64}]) =>
    FOR {v, n} IN rows {
        AddV<Item>(v, {n: n})
    }
    RETURN "added"
QUERY Near(v: [F64], k: I64) =>
    items <- SearchV<Item>(v, k)
    RETURN items::{n}
`;

  it("changed between opens, keeps the index and takes the new value", async () => {
    const t = await TestDatabase.open(DISK_BACKENDS[0], { schema: schema(2) });
    try {
      const rows = vectors(40, 5).map((v, n) => ({ v: v.slice(0, 4), n }));
      await t.db.query("AddItems", { rows });
      expect(t.db.indexes()).toMatchObject([{ name: "Item.$vector", state: "active", ef: 2 }]);
      await t.reopen({ schema: schema(300) });
      expect(t.db.indexes()).toMatchObject([{ name: "Item.$vector", state: "active", ef: 300, entities: expect.any(Number) }]);
      const near = (await t.db.query("Near", { v: rows[7].v, k: 1 })) as { items: { n: number }[] };
      expect(near.items.map((item) => Number(item.n))).toEqual([7]);
      await t.reopen({ schema: schema(0) }).then(
        () => expect.unreachable("ef: 0 was accepted"),
        (error: { code?: string }) => expect(error.code).toBe("schema_invalid"),
      );
    } finally {
      await t.destroy().catch(() => undefined);
    }
  });
});

describe("HelixQL SearchV's ef", () => {
  const schema = `
V::Item(dimension: ${DIMENSION}, metric: euclidean, ef: 1) { n: I64 }
QUERY AddItems(rows: [{v: [F64], n: I64}]) =>
    FOR {v, n} IN rows {
        AddV<Item>(v, {n: n})
    }
    RETURN "added"
QUERY Near(v: [F64]) =>
    items <- SearchV<Item>(v, ${K})
    RETURN items::{n}
QUERY NearWide(v: [F64]) =>
    items <- SearchV<Item>(v, ${K}, ef: 500)
    RETURN items::{n}
`;

  it("wins over the index's ef: a beam of 500 finds the exact top 10 that the index's beam of 1 misses", async () => {
    const t = await TestDatabase.open(BACKENDS[0], { schema });
    try {
      const rows = vectors(COUNT, 1).map((v, n) => ({ v, n }));
      await t.db.query("AddItems", { rows });
      let narrow = 0;
      let wide = 0;
      for (const q of vectors(20, 2)) {
        const query = Float32Array.from(q);
        const truth = new Set(
          rows
            .map((row) => ({ n: row.n, d: distance("euclidean", query, Float32Array.from(row.v)) }))
            .sort((a, b) => a.d - b.d)
            .slice(0, K)
            .map((hit) => hit.n),
        );
        const found = async (name: string) => ((await t.db.query(name, { v: q })) as { items: { n: number }[] }).items.map((item) => Number(item.n));
        narrow += (await found("Near")).filter((n) => truth.has(n)).length;
        wide += (await found("NearWide")).filter((n) => truth.has(n)).length;
      }
      expect(wide).toBe(20 * K);
      expect(narrow).toBeLessThan(wide);
    } finally {
      await t.destroy().catch(() => undefined);
    }
  });
});
