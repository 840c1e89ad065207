/**
 * One dimension per vector index across partitions (cluster/vector-dimensions.ts): each partition fixes an undeclared
 * index's dimension from the first vector it indexes, so the coordinator checks every write against what any
 * partition fixed. A vector of another length is `vector_dimension_mismatch` whichever partition its ID lands on —
 * one with vectors, one with none yet — from AddV and from importBatch, also in one transaction spanning partitions
 * and after a reopen, and nothing of it is written. On three partitions, on disk (LMDB files) and in memory.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ImportRowError } from "../../cluster/bulk-import.js";
import { expectCode, partitionOf, removeTempDirs, TestDatabase, type Backend } from "../helpers/engine.js";

const PARTITIONS = 3;
const BACKENDS: readonly Backend[] = [
  { name: "disk, 3 partitions", storage: "disk", partitions: PARTITIONS },
  { name: "memory, 3 partitions", storage: "memory", partitions: PARTITIONS },
];

const SCHEMA = `
V::Loose(metric: euclidean) { n: I64 }
V::Fixed(dimension: 3, metric: euclidean) { n: I64 }
V::Other(metric: euclidean) { n: I64 }
N::Note { n: I64, VECTOR INDEX(metric: euclidean) v: [F32] }
QUERY AddLoose(v: [F64], n: I64) =>
    x <- AddV<Loose>(v, {n: n})
    RETURN x
QUERY AddTwoLoose(a: [F64], b: [F64]) =>
    x <- AddV<Loose>(a, {n: 1})
    y <- AddV<Loose>(b, {n: 2})
    RETURN x
QUERY AddFixed(v: [F64], n: I64) =>
    x <- AddV<Fixed>(v, {n: n})
    RETURN x
QUERY AddOther(v: [F64]) =>
    x <- AddV<Other>(v, {n: 0})
    RETURN x
QUERY AddNote(v: [F32], n: I64) =>
    x <- AddN<Note>({n: n, v: v})
    RETURN x
QUERY NearLoose(v: [F64]) =>
    hits <- SearchV<Loose>(v, 10)
    RETURN hits::{n}
QUERY NearFixed(v: [F64]) =>
    hits <- SearchV<Fixed>(v, 10)
    RETURN hits::{n}
QUERY NearNotes(v: [F32]) =>
    hits <- SearchV<Note>(v, 10)
    RETURN hits::{n}
QUERY Counts() =>
    loose <- V<Loose>::COUNT
    fixed <- V<Fixed>::COUNT
    notes <- N<Note>::COUNT
    RETURN loose, fixed, notes
`;

const opened: TestDatabase[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()));
  removeTempDirs();
});

async function openDatabase(backend: Backend): Promise<TestDatabase> {
  const db = await TestDatabase.open(backend, { schema: SCHEMA });
  opened.push(db);
  return db;
}

/** The partition an added record's ID landed on. */
function partitionOfAdded(result: unknown): number {
  return partitionOf(String((result as { x: { id: unknown } }).x.id), PARTITIONS);
}

const NEAR_ORIGIN_4D = { v: [0, 0, 0, 0] };

describe.each(BACKENDS)("one vector dimension across partitions ($name)", (backend) => {
  it("refuses AddV of another length on every partition, those without vectors too, writing nothing", async () => {
    const db = await openDatabase(backend);
    const first = await db.db.query("AddLoose", { v: [1, 1, 1, 1], n: 1 });
    const holder = partitionOfAdded(first);
    // New records' IDs take the partitions in turn: three tries land on each partition once, two of them empty.
    for (let attempt = 0; attempt < PARTITIONS; attempt += 1) {
      await expectCode(db.db.query("AddLoose", { v: [2, 2], n: 9 }), "vector_dimension_mismatch");
    }
    const landed = new Set<number>([holder]);
    for (let n = 2; n <= PARTITIONS; n += 1) landed.add(partitionOfAdded(await db.db.query("AddLoose", { v: [n, n, n, n], n })));
    expect(landed.size).toBe(PARTITIONS); // the 4-d vectors reached every partition: the refusals covered them all
    expect(await db.db.query("Counts", {})).toEqual({ loose: 3, fixed: 0, notes: 0 });
    expect(await db.db.query("NearLoose", NEAR_ORIGIN_4D)).toEqual({ hits: [{ n: 1 }, { n: 2 }, { n: 3 }] });
  });

  it("refuses one transaction whose vectors disagree across partitions that have no dimension yet", async () => {
    const db = await openDatabase(backend);
    await expectCode(db.db.query("AddTwoLoose", { a: [1, 1, 1, 1], b: [2, 2] }), "vector_dimension_mismatch");
    expect(await db.db.query("Counts", {})).toEqual({ loose: 0, fixed: 0, notes: 0 });
    // The transaction fixed nothing: the first vector committed does.
    await db.db.query("AddTwoLoose", { a: [1, 1], b: [2, 2] });
    await expectCode(db.db.query("AddLoose", { v: [1, 1, 1, 1], n: 3 }), "vector_dimension_mismatch");
    expect(await db.db.query("NearLoose", { v: [0, 0] })).toEqual({ hits: [{ n: 1 }, { n: 2 }] });
  });

  it("refuses a node's vector property of another length on a partition without vectors", async () => {
    const db = await openDatabase(backend);
    await db.db.query("AddNote", { v: [1, 0, 0, 0], n: 1 });
    for (let attempt = 0; attempt < PARTITIONS; attempt += 1) {
      await expectCode(db.db.query("AddNote", { v: [1, 0], n: 9 }), "vector_dimension_mismatch");
    }
    expect(await db.db.query("NearNotes", NEAR_ORIGIN_4D)).toEqual({ hits: [{ n: 1 }] });
  });

  it("refuses an import batch whose vector lands on a partition without vectors, naming the row", async () => {
    const db = await openDatabase(backend);
    // An import's records start at the first partition; the 4-d vector goes to the second (AddV takes them in turn).
    await db.db.query("AddOther", { v: [1] });
    const holder = partitionOfAdded(await db.db.query("AddLoose", { v: [1, 1, 1, 1], n: 1 }));
    const error = await expectCode(
      db.db.importBatch({ nodes: [], vectors: [{ label: "Loose", vector: [2, 2], props: { n: 2 } }], edges: [] }),
      "vector_dimension_mismatch",
    );
    expect(error).toBeInstanceOf(ImportRowError);
    expect(error).toMatchObject({ section: "vectors", index: 0 });
    // The refused row's partition held no Loose vector: only the check across partitions could refuse it.
    const accepted = await db.db.importBatch({ nodes: [], vectors: [{ label: "Loose", vector: [2, 2, 2, 2], props: { n: 2 } }], edges: [] });
    expect(partitionOf(accepted.vectorIds[0], PARTITIONS)).not.toBe(holder);
    expect(await db.db.query("Counts", {})).toEqual({ loose: 2, fixed: 0, notes: 0 });
    expect(await db.db.query("NearLoose", NEAR_ORIGIN_4D)).toEqual({ hits: [{ n: 1 }, { n: 2 }] });
  });

  it("refuses an import batch spanning partitions that disagrees with a dimension fixed elsewhere", async () => {
    const db = await openDatabase(backend);
    await db.db.query("AddNote", { v: [1, 0, 0, 0], n: 1 });
    // Three Note rows, one per partition: the first, on the Note's partition, agrees; the others land where no Note is.
    const nodes = [[2, 0, 0, 0], [3, 0], [4, 0]].map((v, i) => ({ label: "Note", props: { n: i + 2, v } }));
    const error = await expectCode(db.db.importBatch({ nodes, edges: [] }), "vector_dimension_mismatch");
    expect(error).toMatchObject({ section: "nodes", index: 1 });
    expect(await db.db.query("Counts", {})).toEqual({ loose: 0, fixed: 0, notes: 1 });
  });

  it("keeps a declared dimension: its length is accepted on every partition and another refused", async () => {
    const db = await openDatabase(backend);
    for (let n = 1; n <= PARTITIONS; n += 1) await db.db.query("AddFixed", { v: [n, 0, 0], n });
    await expectCode(db.db.query("AddFixed", { v: [1, 1], n: 9 }), "vector_dimension_mismatch");
    await expectCode(db.db.importBatch({ nodes: [], vectors: [{ label: "Fixed", vector: [1, 1, 1, 1], props: { n: 9 } }], edges: [] }), "vector_dimension_mismatch");
    expect(await db.db.query("NearFixed", { v: [0, 0, 0] })).toEqual({ hits: [{ n: 1 }, { n: 2 }, { n: 3 }] });
  });
});

describe("one vector dimension across partitions, after a reopen (disk, 3 partitions)", () => {
  it("still refuses another length on partitions without vectors, from AddV and from importBatch", async () => {
    const db = await openDatabase(BACKENDS[0]);
    await db.db.query("AddOther", { v: [1] });
    const holder = partitionOfAdded(await db.db.query("AddLoose", { v: [1, 1, 1, 1], n: 1 }));
    await db.reopen();
    for (let attempt = 0; attempt < PARTITIONS; attempt += 1) {
      await expectCode(db.db.query("AddLoose", { v: [2, 2], n: 9 }), "vector_dimension_mismatch");
    }
    const error = await expectCode(db.db.importBatch({ nodes: [], vectors: [{ label: "Loose", vector: [2, 2], props: { n: 9 } }], edges: [] }), "vector_dimension_mismatch");
    expect(error).toMatchObject({ section: "vectors", index: 0 });
    const accepted = await db.db.importBatch({ nodes: [], vectors: [{ label: "Loose", vector: [2, 2, 2, 2], props: { n: 2 } }], edges: [] });
    expect(partitionOf(accepted.vectorIds[0], PARTITIONS)).not.toBe(holder);
    expect(await db.db.query("Counts", {})).toEqual({ loose: 2, fixed: 0, notes: 0 });
    expect(await db.db.query("NearLoose", NEAR_ORIGIN_4D)).toEqual({ hits: [{ n: 1 }, { n: 2 }] });
  });
});
