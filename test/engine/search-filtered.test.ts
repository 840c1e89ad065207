/**
 * Filtered vector search, `V<T>::WHERE(...)::SearchV<T>(v, k)` (node/exec/search-candidates.ts): when the indexes
 * answer the whole WHERE exactly (IS_IN, EQ, ranges and their AND on indexed numeric fields, EQ on a short string),
 * the candidates come from the index entries and no record is read per candidate (`recordsRead: false` in the
 * explanation); otherwise the records are read and the predicate evaluated as before. Either way the answer is the
 * exact filtered scan's, on random data; the invocation's own writes are seen in their current form.
 */
import { afterAll, describe, expect, it } from "vitest";
import { distance } from "../../node/indexes/vector-math.js";
import { seededRandom } from "../../protocol/random.js";
import { BACKENDS, removeTempDirs, TestDatabase } from "../helpers/engine.js";

const DIMENSION = 4;
const ITEMS = 400;
const K = 10;

const SCHEMA = `
V::Item(dimension: ${DIMENSION}, metric: euclidean) { INDEX grp: I64, INDEX tag: String, score: F64, row: I64 }
QUERY Among(v: [F64], k: I64, groups: [I64]) =>
    hits <- V<Item>::WHERE(_::{grp}::IS_IN(groups))::SearchV<Item>(v, k)
    RETURN hits::{row}
QUERY Tagged(v: [F64], k: I64, tag: String) =>
    hits <- V<Item>::WHERE(_::{tag}::EQ(tag))::SearchV<Item>(v, k)
    RETURN hits::{row}
QUERY From(v: [F64], k: I64, low: I64) =>
    hits <- V<Item>::WHERE(_::{grp}::GTE(low))::SearchV<Item>(v, k)
    RETURN hits::{row}
QUERY AmongTagged(v: [F64], k: I64, groups: [I64], tag: String) =>
    hits <- V<Item>::WHERE(AND(_::{grp}::IS_IN(groups), _::{tag}::EQ(tag)))::SearchV<Item>(v, k)
    RETURN hits::{row}
QUERY AmongAbove(v: [F64], k: I64, groups: [I64], s: F64) =>
    hits <- V<Item>::WHERE(AND(_::{grp}::IS_IN(groups), _::{score}::GT(s)))::SearchV<Item>(v, k)
    RETURN hits::{row}
QUERY MoveAndAmong(item: ID, to: I64, v: [F64], k: I64, groups: [I64]) =>
    moved <- V<Item>(item)::UPDATE({grp: to})
    hits <- V<Item>::WHERE(_::{grp}::IS_IN(groups))::SearchV<Item>(v, k)
    RETURN hits::{row}
`;

interface Item {
  readonly vector: Float32Array;
  readonly grp: number;
  readonly tag: string;
  readonly score: number;
}

const random = seededRandom(22);
const items: Item[] = Array.from({ length: ITEMS }, () => ({
  vector: Float32Array.from({ length: DIMENSION }, () => random() * 2 - 1),
  grp: Math.floor(random() * 10),
  tag: ["red", "green", "blue"][Math.floor(random() * 3)],
  score: random(),
}));
const queries = Array.from({ length: 12 }, () => Float32Array.from({ length: DIMENSION }, () => random() * 2 - 1));

/** The exact filtered scan: the k nearest rows among those `accept` takes (ties: lower row, as lower ID). */
function exact(query: Float32Array, accept: (item: Item) => boolean): number[] {
  return items
    .map((item, row) => ({ row, item, d: distance("euclidean", query, item.vector) }))
    .filter(({ item }) => accept(item))
    .sort((a, b) => a.d - b.d || a.row - b.row)
    .slice(0, K)
    .map(({ row }) => row);
}

const cases: { name: string; query: string; parameters: Record<string, unknown>; accept: (item: Item) => boolean; indexed: boolean }[] = [
  { name: "IS_IN", query: "Among", parameters: { groups: [0, 2, 4, 6, 8] }, accept: (item) => item.grp % 2 === 0, indexed: true },
  { name: "IS_IN of one", query: "Among", parameters: { groups: [3] }, accept: (item) => item.grp === 3, indexed: true },
  { name: "IS_IN of none", query: "Among", parameters: { groups: [] }, accept: () => false, indexed: true },
  { name: "EQ on a string", query: "Tagged", parameters: { tag: "green" }, accept: (item) => item.tag === "green", indexed: true },
  { name: "a range", query: "From", parameters: { low: 7 }, accept: (item) => item.grp >= 7, indexed: true },
  { name: "AND of two indexes", query: "AmongTagged", parameters: { groups: [1, 5], tag: "blue" }, accept: (item) => (item.grp === 1 || item.grp === 5) && item.tag === "blue", indexed: true },
  { name: "a field without an index", query: "AmongAbove", parameters: { groups: [1, 5, 9], s: 0.4 }, accept: (item) => [1, 5, 9].includes(item.grp) && item.score > 0.4, indexed: false },
];

describe.each(BACKENDS)("filtered vector search ($name)", (backend) => {
  let db: TestDatabase | undefined;
  let ids: bigint[] = [];

  async function opened(): Promise<TestDatabase> {
    if (db !== undefined) return db;
    db = await TestDatabase.open(backend, { schema: SCHEMA });
    const vectors = items.map((item, row) => ({ label: "Item", vector: item.vector, props: { grp: item.grp, tag: item.tag, score: item.score, row } }));
    ids = (await db.db.importBatch({ nodes: [], edges: [], vectors })).vectorIds;
    return db;
  }

  afterAll(async () => {
    await db?.close();
    db = undefined;
    removeTempDirs();
  });

  it.each(cases)("answers $name exactly as the filtered scan, reading records only when the indexes cannot tell", async ({ query, parameters, accept, indexed }) => {
    const { db: database } = await opened();
    for (const v of queries) {
      const answer = (await database.query(query, { v: Array.from(v), k: K, ...parameters })) as { hits: { row: number }[] };
      expect(answer.hits.map((hit) => Number(hit.row))).toEqual(exact(v, accept));
    }
    const [step] = await database.explainQuery(query, { v: Array.from(queries[0]), k: K, ...parameters });
    expect(step).toMatchObject({ step: "vectors_where", access: "index" });
    if (indexed) expect(step).toMatchObject({ recordsRead: false, candidates: items.filter(accept).length });
    else expect(step).not.toHaveProperty("recordsRead");
  });

  it("sees the invocation's own update: a record moved out of the groups leaves the results, one moved in joins", async () => {
    const { db: database } = await opened();
    const v = queries[0];
    const inOne = (item: Item) => item.grp === 1;
    const nearest = exact(v, inOne)[0];
    const out = (await database.query("MoveAndAmong", { item: String(ids[nearest]), to: 2, v: Array.from(v), k: K, groups: [1] })) as { hits: { row: number }[] };
    items[nearest] = { ...items[nearest], grp: 2 };
    expect(out.hits.map((hit) => Number(hit.row))).toEqual(exact(v, inOne));
    expect(out.hits.map((hit) => Number(hit.row))).not.toContain(nearest);
    const outsider = exact(v, (item) => item.grp === 4)[0];
    const joined = (await database.query("MoveAndAmong", { item: String(ids[outsider]), to: 1, v: Array.from(v), k: K, groups: [1] })) as { hits: { row: number }[] };
    items[outsider] = { ...items[outsider], grp: 1 };
    expect(joined.hits.map((hit) => Number(hit.row))).toEqual(exact(v, inOne));
    expect(joined.hits.map((hit) => Number(hit.row))).toContain(outsider);
  });
});
