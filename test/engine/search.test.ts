/**
 * Vector and text search through the whole engine, on every backend (memory, disk, three partitions): HelixQL
 * queries compile to the search steps, hits come best first with `$distance`/`$score`, exact membership of
 * restricted searches (SearchV after a traversal, WHERE after SearchV: HelixDB issues #195 and #199), a write's own
 * vectors visible to its searches, tenants, dimension and value errors that leave the data intact, indexes that
 * survive a reopen and builds over existing data, the rerankers, and Embed with and without a provider.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { FeatureHashingEmbedder } from "../../embedders/index.js";
import { distance } from "../../node/indexes/vector-math.js";
import { BACKENDS, TestDatabase, expectCode, removeTempDirs, snapshot } from "../helpers/engine.js";

afterAll(removeTempDirs);

const SCHEMA = `
N::Doc {
    TEXT INDEX(analyzer: standard_stem_en) body: String,
    VECTOR INDEX(dimension: 3, metric: euclidean) embedding: [F32],
    INDEX topic: String,
}
N::User { name: String }
E::Owns { From: User, To: Doc }
V::Chunk(dimension: 2, metric: cosine, tenant: org) { org: String, text: String }
V::Note { text: String }

QUERY AddDoc(body: String, embedding: [F32], topic: String) =>
    d <- AddN<Doc>({body: body, embedding: embedding, topic: topic})
    RETURN d
QUERY Near(v: [F32], k: I64) =>
    docs <- SearchV<Doc>(v, k)
    RETURN docs
QUERY NearOnTopic(v: [F32], k: I64, topic: String) =>
    docs <- SearchV<Doc>(v, k)::WHERE(_::{topic}::EQ(topic))
    RETURN docs
QUERY OwnedNear(user: ID, v: [F32], k: I64) =>
    docs <- N<User>(user)::Out<Owns>::SearchV<Doc>(v, k)
    RETURN docs
QUERY Text(q: String, k: I64) =>
    docs <- SearchBM25<Doc>(q, k)
    RETURN docs
QUERY AddUser(name: String) =>
    u <- AddN<User>({name: name})
    RETURN u
QUERY Own(user: ID, doc: ID) =>
    e <- AddE<Owns>::From(user)::To(doc)
    RETURN e
QUERY AddAndSearch(body: String, embedding: [F32], v: [F32]) =>
    d <- AddN<Doc>({body: body, embedding: embedding, topic: "new"})
    docs <- SearchV<Doc>(v, 1)
    RETURN docs
QUERY DropAndSearch(doc: ID, v: [F32]) =>
    DROP N<Doc>(doc)
    docs <- SearchV<Doc>(v, 10)
    RETURN docs
QUERY AddAndSearchText(body: String, q: String) =>
    d <- AddN<Doc>({body: body, embedding: [7, 7, 7], topic: "new"})
    docs <- SearchBM25<Doc>(q, 10)
    RETURN docs
QUERY AddTwoDocs(first: String, second: String, embedding: [F32]) =>
    a <- AddN<Doc>({body: first, embedding: [1, 1, 1], topic: "x"})
    b <- AddN<Doc>({body: second, embedding: embedding, topic: "x"})
    RETURN a
QUERY AddChunk(v: [F64], org: String, text: String) =>
    c <- AddV<Chunk>(v, {org: org, text: text})
    RETURN c
QUERY ChunksOf(v: [F64], org: String) =>
    c <- SearchV<Chunk>(v, 10, tenant: org)
    RETURN c
QUERY Hybrid(v: [F32], q: String) =>
    docs <- SearchV<Doc>(v, 10)::RerankRRF(k: 60)
    RETURN docs
QUERY Diverse(v: [F32]) =>
    docs <- SearchV<Doc>(v, 10)::RerankMMR(lambda: 0.5)
    RETURN docs
QUERY AddNote(text: String) =>
    n <- AddV<Note>(Embed(text), {text: text})
    RETURN n
QUERY SimilarNotes(text: String) =>
    n <- SearchV<Note>(Embed(text), 2)
    RETURN n
`;

type Row = Record<string, unknown> & { id: string };

const DOCS = [
  { body: "graph databases store nodes and edges", embedding: [0, 0, 0], topic: "graphs" },
  { body: "vector search finds nearest neighbours", embedding: [1, 0, 0], topic: "vectors" },
  { body: "full text search ranks documents with BM25", embedding: [0, 2, 0], topic: "text" },
  { body: "databases index their data for searching", embedding: [0, 0, 3], topic: "graphs" },
  { body: "nearest neighbour graphs for vectors", embedding: [5, 5, 5], topic: "vectors" },
];

describe.each(BACKENDS)("search ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: SCHEMA, embedder: new FeatureHashingEmbedder({ dimensions: 64 }) });
  });
  afterEach(async () => t.destroy());

  async function seed(): Promise<string[]> {
    const ids: string[] = [];
    for (const doc of DOCS) ids.push(((await t.db.query("AddDoc", doc)) as { d: Row }).d.id);
    return ids;
  }

  async function near(v: number[], k: number): Promise<Row[]> {
    return ((await t.db.query("Near", { v, k })) as { docs: Row[] }).docs;
  }

  it("finds the k nearest, best first, with their distances", async () => {
    const ids = await seed();
    const hits = await near([0.9, 0.1, 0], 3);
    expect(hits.map((hit) => hit.id)).toEqual([ids[1], ids[0], ids[2]]);
    const query = Float32Array.from([0.9, 0.1, 0]);
    for (const hit of hits) {
      const doc = DOCS[ids.indexOf(hit.id)];
      expect(hit.$distance as number).toBeCloseTo(distance("euclidean", query, Float32Array.from(doc.embedding)), 5);
      expect(hit.body).toBe(doc.body);
    }
  });

  it("filters hits with WHERE after SearchV, and searches only a traversal's records after ::", async () => {
    const ids = await seed();
    const onTopic = ((await t.db.query("NearOnTopic", { v: [0, 0, 0], k: 5, topic: "vectors" })) as { docs: Row[] }).docs;
    expect(onTopic.map((hit) => hit.id)).toEqual([ids[1], ids[4]]);
    const user = ((await t.db.query("AddUser", { name: "Ann" })) as { u: Row }).u.id;
    await t.db.query("Own", { user, doc: ids[3] });
    await t.db.query("Own", { user, doc: ids[4] });
    const owned = ((await t.db.query("OwnedNear", { user, v: [0, 0, 0], k: 10 })) as { docs: Row[] }).docs;
    expect(owned.map((hit) => hit.id)).toEqual([ids[3], ids[4]]);
  });

  it("sees a write's own inserts and drops in the same transaction", async () => {
    const ids = await seed();
    const added = ((await t.db.query("AddAndSearch", { body: "fresh", embedding: [9, 9, 9], v: [9, 9, 9.1] })) as { docs: Row[] }).docs;
    expect(added.map((hit) => hit.body)).toEqual(["fresh"]);
    const left = ((await t.db.query("DropAndSearch", { doc: ids[1], v: [1, 0, 0] })) as { docs: Row[] }).docs;
    expect(left.map((hit) => hit.id)).not.toContain(ids[1]);
    expect(left).toHaveLength(5);
    expect((await near([1, 0, 0], 10)).map((hit) => hit.id)).not.toContain(ids[1]);
  });

  it("refuses a vector of another dimension, writing nothing", async () => {
    await seed();
    const before = await snapshot(t.db);
    await expectCode(t.db.query("AddDoc", { body: "bad", embedding: [1, 2], topic: "x" }), "vector_dimension_mismatch");
    expect(await snapshot(t.db)).toEqual(before);
    await expectCode(t.db.query("Near", { v: [1, 2, 3, 4], k: 1 }), "vector_dimension_mismatch");
    await expectCode(t.db.query("Near", { v: [1, 2, 3], k: 0 }), "invalid_value");
  });

  it("ranks text with BM25 through the stemming analyzer", async () => {
    const ids = await seed();
    const hits = ((await t.db.query("Text", { q: "searching databases", k: 10 })) as { docs: Row[] }).docs;
    // "databases" and "searching" stem to "databas" and "search"; doc 3 holds both.
    expect(hits[0].id).toBe(ids[3]);
    expect(new Set(hits.map((hit) => hit.id))).toEqual(new Set([ids[0], ids[1], ids[2], ids[3]]));
    const scores = hits.map((hit) => hit.$score as number);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(((await t.db.query("Text", { q: "zebra", k: 3 })) as { docs: Row[] }).docs).toEqual([]);
  });

  it("searches the committed text index inside a write: the invocation's own new text is found by the next one", async () => {
    const ids = await seed();
    const during = ((await t.db.query("AddAndSearchText", { body: "zebra crossing databases", q: "zebra databases" })) as { docs: Row[] }).docs;
    expect(during.map((hit) => hit.id).sort()).toEqual([ids[0], ids[3]].sort());
    const after = ((await t.db.query("Text", { q: "zebra", k: 10 })) as { docs: Row[] }).docs;
    expect(after.map((hit) => hit.body)).toEqual(["zebra crossing databases"]);
  });

  it("keeps nothing of a failed write's texts: the next write's postings and statistics are its own", async () => {
    await expectCode(t.db.query("AddTwoDocs", { first: "zebra stripes", second: "zebra again", embedding: [1, 2] }), "vector_dimension_mismatch");
    await t.db.query("AddDoc", { body: "zebra herd", embedding: [0, 0, 1], topic: "x" });
    const hits = ((await t.db.query("Text", { q: "zebra", k: 10 })) as { docs: Row[] }).docs;
    expect(hits.map((hit) => hit.body)).toEqual(["zebra herd"]);
    // One document of two terms, df 1: BM25's score is idf = ln(1 + 0.5 / 1.5) (tf 1 at the average length).
    expect(hits[0].$score as number).toBeCloseTo(Math.log(1 + 0.5 / 1.5), 12);
  });

  it("partitions a V:: type by tenant: a search needs a tenant, an unknown tenant finds nothing", async () => {
    await t.db.query("AddChunk", { v: [1, 0], org: "acme", text: "a" });
    await t.db.query("AddChunk", { v: [0, 1], org: "acme", text: "b" });
    await t.db.query("AddChunk", { v: [1, 0.1], org: "globex", text: "c" });
    const acme = ((await t.db.query("ChunksOf", { v: [1, 0], org: "acme" })) as { c: Row[] }).c;
    expect(acme.map((hit) => hit.text)).toEqual(["a", "b"]);
    expect(((await t.db.query("ChunksOf", { v: [1, 0], org: "initech" })) as { c: Row[] }).c).toEqual([]);
  });

  it.runIf(backend.storage === "disk")("keeps its indexes over a reopen", async () => {
    const ids = await seed();
    await t.reopen();
    expect((await near([5, 5, 4], 1)).map((hit) => hit.id)).toEqual([ids[4]]);
    const hits = ((await t.db.query("Text", { q: "BM25", k: 1 })) as { docs: Row[] }).docs;
    expect(hits.map((hit) => hit.id)).toEqual([ids[2]]);
  });

  it("reranks: RRF over one ranking keeps its order, MMR keeps every hit", async () => {
    const ids = await seed();
    const fused = ((await t.db.query("Hybrid", { v: [0, 0, 0], q: "graph" })) as { docs: Row[] }).docs;
    expect(fused.map((hit) => hit.id)).toEqual((await near([0, 0, 0], 10)).map((hit) => hit.id));
    expect(fused[0].$score as number).toBeCloseTo(1 / 61, 10);
    const diverse = ((await t.db.query("Diverse", { v: [0, 0, 0] })) as { docs: Row[] }).docs;
    expect(new Set(diverse.map((hit) => hit.id))).toEqual(new Set(ids));
    expect(diverse[0].id).toBe(ids[0]);
  });

  it("embeds text with the configured provider", async () => {
    await t.db.query("AddNote", { text: "graph databases and traversals" });
    await t.db.query("AddNote", { text: "baking bread at home" });
    const similar = ((await t.db.query("SimilarNotes", { text: "graph traversals in databases" })) as { n: Row[] }).n;
    expect(similar[0].text).toBe("graph databases and traversals");
  });
});

describe("Embed without a provider", () => {
  it("fails with embedding_not_configured and writes nothing", async () => {
    const t = await TestDatabase.open(BACKENDS[0], { schema: SCHEMA });
    try {
      await t.db.query("AddUser", { name: "Ann" });
      const before = await snapshot(t.db);
      await expectCode(t.db.query("AddNote", { text: "x" }), "embedding_not_configured");
      expect(await snapshot(t.db)).toEqual(before);
    } finally {
      await t.destroy();
    }
  });
});
