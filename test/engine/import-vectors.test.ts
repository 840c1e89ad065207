/**
 * Bulk import of `V::` records (cluster/bulk-import.ts): vectors land with their properties, are indexed when the
 * batch commits (searchable at once and after a reopen), edges reach them by their place in the batch, and node
 * properties under a VECTOR INDEX are indexed the same way. A vector of the wrong length is refused with a stable code
 * and nothing of its batch is written: before the commit, naming the row, when the schema or the batch tells; at the
 * commit, by the index, when only the index's fixed dimension does. On disk, one partition and three (two-phase).
 */
import { afterEach, describe, expect, it } from "vitest";
import { ImportRowError } from "../../cluster/bulk-import.js";
import { DISK_BACKENDS, expectCode, removeTempDirs, TestDatabase } from "../helpers/engine.js";

const SCHEMA = `
N::Author { name: String }
N::Note { side: String, VECTOR INDEX(dimension: 2, metric: euclidean) v: [F32] }
V::Doc(dimension: 3, metric: euclidean) { title: String }
V::Loose(metric: euclidean) { n: I64 }
E::Wrote { From: Author, To: Doc }
QUERY NearDocs(v: [F64], k: I64) =>
    hits <- SearchV<Doc>(v, k)
    RETURN hits::{title}
QUERY NearNotes(v: [F32]) =>
    hits <- SearchV<Note>(v, 1)
    RETURN hits::{side}
QUERY NearLoose(v: [F64]) =>
    hits <- SearchV<Loose>(v, 10)
    RETURN hits::{n}
QUERY Written() =>
    docs <- N<Author>::Out<Wrote>::{title}
    RETURN docs
QUERY Counts() =>
    authors <- N<Author>::COUNT
    docs <- V<Doc>::COUNT
    loose <- V<Loose>::COUNT
    RETURN authors, docs, loose
`;

const opened: TestDatabase[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()));
  removeTempDirs();
});

async function openDatabase(backend: (typeof DISK_BACKENDS)[number]): Promise<TestDatabase> {
  const db = await TestDatabase.open(backend, { schema: SCHEMA });
  opened.push(db);
  return db;
}

const docs = [
  { label: "Doc", vector: [0, 0, 0], props: { title: "origin" } },
  { label: "Doc", vector: new Float32Array([1, 0, 0]), props: { title: "x" } },
  { label: "Doc", vector: new Float64Array([0, 5, 0]), props: { title: "far" } },
];

describe.each(DISK_BACKENDS)("importBatch of vectors ($name)", (backend) => {
  it("writes V:: records with their properties, indexed at commit, and edges to them by place in the batch", async () => {
    const db = await openDatabase(backend);
    const result = await db.db.importBatch({
      nodes: [{ label: "Author", props: { name: "ada" } }],
      vectors: docs,
      edges: [
        { label: "Wrote", from: { batch: 0 }, to: { vector: 0 }, props: {} },
        { label: "Wrote", from: { batch: 0 }, to: { vector: 2 }, props: {} },
      ],
    });
    expect(result.vectorIds).toHaveLength(3);
    expect(new Set([...result.nodeIds, ...result.vectorIds, ...result.edgeIds].map(String)).size).toBe(6);
    const near = { v: [0.9, 0, 0], k: 2 };
    expect(await db.db.query("NearDocs", near)).toEqual({ hits: [{ title: "x" }, { title: "origin" }] });
    expect(((await db.db.query("Written", {})) as { docs: { title: string }[] }).docs.map((doc) => doc.title).sort()).toEqual(["far", "origin"]);
    await db.reopen();
    expect(await db.db.query("NearDocs", near)).toEqual({ hits: [{ title: "x" }, { title: "origin" }] });
  });

  it("indexes node properties under a VECTOR INDEX", async () => {
    const db = await openDatabase(backend);
    await db.db.importBatch({
      nodes: [
        { label: "Note", props: { side: "left", v: [-1, 0] } },
        { label: "Note", props: { side: "right", v: [1, 0] } },
      ],
      edges: [],
    });
    expect(await db.db.query("NearNotes", { v: [0.8, 0.1] })).toEqual({ hits: [{ side: "right" }] });
  });

  it("refuses a vector against its declared dimension as vector_dimension_mismatch naming the row, writing nothing", async () => {
    const db = await openDatabase(backend);
    const vectors = [docs[0], { label: "Doc", vector: [1, 2], props: { title: "short" } }];
    const error = await expectCode(db.db.importBatch({ nodes: [{ label: "Author", props: { name: "bob" } }], vectors, edges: [] }), "vector_dimension_mismatch");
    expect(error).toBeInstanceOf(ImportRowError);
    expect(error).toMatchObject({ section: "vectors", index: 1 });
    expect(await db.db.query("Counts", {})).toEqual({ authors: 0, docs: 0, loose: 0 });
  });

  it("refuses vectors of one undeclared dimension that disagree within the batch, naming the row", async () => {
    const db = await openDatabase(backend);
    const vectors = [
      { label: "Loose", vector: [1, 2, 3, 4], props: { n: 1 } },
      { label: "Loose", vector: [1, 2, 3], props: { n: 2 } },
    ];
    const error = await expectCode(db.db.importBatch({ nodes: [], vectors, edges: [] }), "vector_dimension_mismatch");
    expect(error).toMatchObject({ section: "vectors", index: 1 });
    expect(await db.db.query("Counts", {})).toEqual({ authors: 0, docs: 0, loose: 0 });
  });

  it("aborts the whole batch at commit when a vector contradicts the dimension its index fixed", async () => {
    const db = await openDatabase(backend);
    // One vector per partition (a batch's records are spread over them in slices): each partition's index fixes its
    // dimension from the vectors it holds.
    const fixing = [1, 2, 3].map((n) => ({ label: "Loose", vector: [n, n, n, n], props: { n } }));
    await db.db.importBatch({ nodes: [], vectors: fixing, edges: [] });
    const batch = {
      nodes: [{ label: "Author", props: { name: "cy" } }],
      vectors: [docs[0], { label: "Loose", vector: [2, 2], props: { n: 2 } }],
      edges: [{ label: "Wrote", from: { batch: 0 }, to: { vector: 0 }, props: {} }],
    };
    await expectCode(db.db.importBatch(batch), "vector_dimension_mismatch");
    expect(await db.db.query("Counts", {})).toEqual({ authors: 0, docs: 0, loose: 3 });
    expect(await db.db.query("NearLoose", { v: [1, 1, 1, 1] })).toEqual({ hits: [{ n: 1 }, { n: 2 }, { n: 3 }] });
  });

  it("refuses what AddV refuses: a vector that is not finite numbers, an undeclared label, a bad property", async () => {
    const db = await openDatabase(backend);
    const cases: [unknown, string][] = [
      [{ label: "Doc", vector: [1, Number.NaN, 3], props: { title: "nan" } }, "invalid_type"],
      [{ label: "Doc", vector: [], props: { title: "empty" } }, "invalid_value"],
      [{ label: "Nope", vector: [1, 2, 3], props: {} }, "unknown_label"],
      [{ label: "Doc", vector: [1, 2, 3], props: { title: 7 } }, "invalid_type"],
    ];
    for (const [row, code] of cases) {
      const error = await expectCode(db.db.importBatch({ nodes: [], vectors: [docs[0], row as (typeof docs)[number]], edges: [] }), code as never);
      expect(error).toMatchObject({ section: "vectors", index: 1 });
    }
    await expectCode(db.db.importBatch({ nodes: [], vectors: [docs[0]], edges: [{ label: "Wrote", from: { batch: 0 }, to: { vector: 5 }, props: {} }] }), "node_not_found");
    expect(await db.db.query("Counts", {})).toEqual({ authors: 0, docs: 0, loose: 0 });
  });
});
