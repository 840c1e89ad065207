/**
 * The vector index family (node/indexes/vector-index.ts) on a real LMDB `meta` database, with a small IndexRecordSource over
 * an in-memory map of committed records: recall against exact search for every metric, updates and deletes, commit
 * against discard, tenant partitions, dimension rules (persisted across a reopen), the rebuild on load, restricted
 * searches (exact membership), guarded filters, bad values refused with stable codes and the data left intact, and
 * the per-index change counter a second family (a read-only handle, another process) follows.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import hnswlib from "hnswlib-node";
import { open, type Database, type RootDatabase, type Transaction } from "lmdb";
import { afterEach, describe, expect, it } from "vitest";
import type { IndexedRecord, IndexRecordSource, ScannedRecord } from "../../node/index-family.js";
import { mapVectorInto } from "../helpers/vector-source.js";
import { readId } from "../../node/keys.js";
import { distance } from "../../node/indexes/vector-math.js";
import { EXACT_CANDIDATES_MAX, guardedFilter, VectorIndexes } from "../../node/indexes/vector-index.js";
import { SilkError } from "../../protocol/errors.js";
import { VECTOR_FIELD, type VectorIndexDefinition, type VectorMetric } from "../../protocol/indexes.js";
import type { SearchHit } from "../../protocol/records.js";
import type { Properties, Value } from "../../protocol/values.js";

function randomVectors(count: number, dimension: number, seed: number): Float32Array[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: count }, () => Float32Array.from({ length: dimension }, () => random() * 2 - 1));
}

function definition(metric: VectorMetric, extra: Partial<VectorIndexDefinition> = {}): VectorIndexDefinition {
  return { family: "vector", kind: "node", label: "Doc", field: "embedding", name: "Doc.embedding", metric, ...extra };
}

/** A partition's committed records (the map) and its `meta` (LMDB), with write transactions the way the store runs them. */
class Fixture {
  readonly records = new Map<bigint, IndexedRecord>();
  env!: RootDatabase;
  meta!: Database;
  indexes!: VectorIndexes;

  constructor(readonly path: string) {
    this.reopen();
  }

  reopen(): void {
    this.env?.close();
    this.env = open({ path: this.path });
    this.meta = this.env.openDB({ name: "meta" });
    this.indexes = new VectorIndexes(this.meta, this.source());
  }

  source(): IndexRecordSource {
    const records = this.records;
    return {
      record: (_kind, key) => records.get(readId(key)),
      scan(_kind, _label, after, limit) {
        const ids = [...records.keys()].filter((id) => after === undefined || id > after).sort((a, b) => (a < b ? -1 : 1));
        const taken: ScannedRecord[] = ids.slice(0, limit).map((id) => ({ ...records.get(id)!, bytes: 1 }));
        return { records: taken, last: taken.at(-1)?.id, done: ids.length <= limit };
      },
      hasLabel: () => records.size > 0,
      vectorInto: mapVectorInto(records),
    };
  }

  /** One write transaction: each change is put (or deleted when `props` is null) in every index, then flush. */
  write(definitions: readonly VectorIndexDefinition[], changes: readonly { id: bigint; props: Properties | null; vector?: Float64Array }[]): void {
    try {
      this.env.transactionSync(() => {
        for (const { id, props, vector } of changes) {
          const old = this.records.get(id);
          for (const index of definitions) {
            if (props === null) this.indexes.delete(index, old!);
            else this.indexes.put(index, { id, props, vector }, old);
          }
        }
        this.indexes.flush();
      });
    } catch (error) {
      this.indexes.discard();
      throw error;
    }
    for (const { id, props, vector } of changes) {
      if (props === null) this.records.delete(id);
      else this.records.set(id, { id, props, vector });
    }
    this.indexes.commit();
  }

  /** A build over every record in one chunk transaction; the entries it reports. */
  build(index: VectorIndexDefinition): number {
    let entries = 0;
    try {
      this.env.transactionSync(() => {
        for (const record of this.records.values()) entries += this.indexes.build(index, record);
        expect(this.indexes.finish(index)).toBeUndefined();
      });
    } catch (error) {
      this.indexes.discard();
      throw error;
    }
    this.indexes.commit();
    return entries;
  }
}

const fixtures: Fixture[] = [];
function fixture(): Fixture {
  const made = new Fixture(mkdtempSync(join(tmpdir(), "silk-vector-")));
  fixtures.push(made);
  return made;
}
afterEach(() => {
  for (const made of fixtures.splice(0)) {
    made.env.close();
    rmSync(made.path, { recursive: true, force: true });
  }
});

function refusal(run: () => unknown): SilkError {
  try {
    run();
  } catch (error) {
    if (error instanceof SilkError) return error;
    throw error;
  }
  throw new Error("expected a SilkError");
}

function vectorsOf(count: number, dimension: number, seed: number, first = 1n) {
  return randomVectors(count, dimension, seed).map((value, i) => ({ id: first + BigInt(i), props: { embedding: Array.from(value) } as Properties, value }));
}

function exact(metric: VectorMetric, items: readonly { id: bigint; value: Float32Array }[], query: Float32Array, k: number): SearchHit[] {
  return items
    .map(({ id, value }) => ({ id, score: distance(metric, query, value) }))
    .sort((a, b) => a.score - b.score || (a.id < b.id ? -1 : 1))
    .slice(0, k);
}

function recall(found: readonly SearchHit[], truth: readonly SearchHit[]): number {
  const wanted = new Set(truth.map((hit) => hit.id));
  return found.filter((hit) => wanted.has(hit.id)).length / truth.length;
}

const ids = (hits: readonly SearchHit[]) => hits.map((hit) => hit.id);

describe("vector indexes", () => {
  for (const metric of ["cosine", "euclidean", "manhattan"] as const) {
    it(`${metric}: recall@10 ≥ 0.95 against exact search (2,000 × 32), scores are the metric's distances`, () => {
      const at = fixture();
      const index = definition(metric);
      at.indexes.load(index, "active");
      const items = vectorsOf(2_000, 32, 21);
      at.write([index], items);
      let total = 0;
      for (const query of randomVectors(40, 32, 22)) {
        const found = at.indexes.search(index, query, 10, {});
        const truth = exact(metric, items, query, 10);
        expect(found).toHaveLength(10);
        for (let i = 1; i < found.length; i++) expect(found[i].score).toBeGreaterThanOrEqual(found[i - 1].score);
        for (const hit of found) expect(hit.score).toBeCloseTo(distance(metric, query, items[Number(hit.id) - 1].value), 4);
        total += recall(found, truth);
      }
      expect(total / 40).toBeGreaterThanOrEqual(0.95);
      // The query as the caller's doubles (which round to the Float32Array's components) finds the very same hits.
      for (const query of randomVectors(5, 32, 23)) {
        const doubles = Array.from(query, (component, i) => component + (i % 2 === 0 ? 1e-12 : -1e-12));
        expect(Float32Array.from(doubles)).toEqual(query);
        expect(at.indexes.search(index, query, 10, { components: doubles })).toEqual(at.indexes.search(index, query, 10, {}));
      }
      expect(at.indexes.search(index, randomVectors(1, 32, 1)[0], 5_000, {})).toHaveLength(2_000);
      expect(at.indexes.search(index, randomVectors(1, 32, 1)[0], 0, {})).toEqual([]);
    });
  }

  it("an update replaces a record's vector; a deleted record or a vanished property leaves the graph", () => {
    for (const metric of ["cosine", "euclidean", "manhattan"] as const) {
      const at = fixture();
      const index = definition(metric);
      at.indexes.load(index, "active");
      const items = vectorsOf(300, 8, 31);
      at.write([index], items);
      const target = Float32Array.from([5, 5, 5, 5, 5, 5, 5, -5]);
      at.write([index], [{ id: 7n, props: { embedding: Array.from(target), title: "moved" } }]);
      expect(at.indexes.search(index, target, 1, {})).toEqual([{ id: 7n, score: expect.closeTo(0, 6) }]);
      expect(ids(at.indexes.search(index, items[6].value, 300, {}))).toContain(7n);
      expect(at.indexes.search(index, items[6].value, 1, {})[0].id).not.toBe(7n);
      at.write([index], [{ id: 7n, props: null }, { id: 8n, props: { title: "no vector any more" } }, { id: 9n, props: { embedding: null } }]);
      const left = ids(at.indexes.search(index, target, 300, {}));
      expect(left).toHaveLength(297);
      for (const gone of [7n, 8n, 9n]) expect(left).not.toContain(gone);
      at.write([index], [{ id: 8n, props: { embedding: Array.from(target) } }]);
      expect(at.indexes.search(index, target, 1, {})).toEqual([{ id: 8n, score: expect.closeTo(0, 6) }]);
    }
  });

  it("a discarded transaction leaves no trace: no vectors, no dimension; a committed one is visible", () => {
    const at = fixture();
    const index = definition("euclidean");
    at.indexes.load(index, "active");
    const items = vectorsOf(20, 4, 41);
    expect(() => at.write([index], [...items, { id: 100n, props: { embedding: [1, 2, 3] } }])).toThrow(SilkError);
    expect(at.indexes.search(index, items[0].value, 5, {})).toEqual([]);
    expect(at.indexes.dimensionOf(index)).toBeUndefined();
    expect(at.meta.get("vindex:node:Doc.embedding")).toBeUndefined();
    // The same records with another dimension now fix it: nothing of the failed attempt constrains them.
    at.write([index], [{ id: 100n, props: { embedding: [1, 2, 3] } }]);
    expect(at.indexes.dimensionOf(index)).toBe(3);
    expect(at.indexes.search(index, Float32Array.of(1, 2, 3), 5, {})).toEqual([{ id: 100n, score: 0 }]);
  });

  it("dimension: fixed by the first vector, persisted in meta, read back after a reopen; mismatches refused", () => {
    const at = fixture();
    const index = definition("cosine");
    at.indexes.load(index, "active");
    const items = vectorsOf(50, 6, 51);
    at.write([index], items);
    expect(at.indexes.dimensionOf(index)).toBe(6);
    const error = refusal(() => at.write([index], [{ id: 77n, props: { embedding: [1, 2, 3, 4, 5, 6, 7] } }]));
    expect(error.code).toBe("vector_dimension_mismatch");
    expect(error.message).toContain("record 77");
    expect(error.message).toContain("length 7");
    expect(error.message).toContain("dimension 6");
    expect(refusal(() => at.indexes.search(index, new Float32Array(5), 3, {})).code).toBe("vector_dimension_mismatch");
    expect(refusal(() => at.write([index], [{ id: 78n, props: { embedding: [] } }])).code).toBe("vector_dimension_mismatch");
    at.reopen();
    expect(at.indexes.dimensionOf(index)).toBeUndefined(); // not loaded yet
    at.indexes.load(index, "constructing");
    expect(at.indexes.dimensionOf(index)).toBe(6);
    expect(refusal(() => at.write([index], [{ id: 79n, props: { embedding: [1] } }])).code).toBe("vector_dimension_mismatch");
    const declared = definition("cosine", { field: "other", name: "Doc.other", dimension: 3 });
    at.indexes.load(declared, "active");
    expect(at.indexes.dimensionOf(declared)).toBe(3);
    expect(refusal(() => at.write([declared], [{ id: 80n, props: { other: [1, 2, 3, 4, 5, 6] } }])).code).toBe("vector_dimension_mismatch");
    expect(at.indexes.search(declared, Float32Array.of(1, 0, 0), 3, {})).toEqual([]);
  });

  it("load rebuilds an active index's graphs from the committed records; constructing and blocked start empty", () => {
    const at = fixture();
    const euclidean = definition("euclidean");
    const manhattan = definition("manhattan", { name: "Doc.l1" });
    at.indexes.load(euclidean, "active");
    at.indexes.load(manhattan, "active");
    const items = vectorsOf(1_500, 12, 61);
    at.write([euclidean, manhattan], items);
    at.write([euclidean, manhattan], [{ id: 3n, props: null }]);
    const queries = randomVectors(10, 12, 62);
    const before = queries.map((query) => [at.indexes.search(euclidean, query, 10, {}), at.indexes.search(manhattan, query, 10, {})]);
    at.reopen();
    at.indexes.load(euclidean, "active");
    at.indexes.load(manhattan, "active");
    const after = queries.map((query) => [at.indexes.search(euclidean, query, 10, {}), at.indexes.search(manhattan, query, 10, {})]);
    const live = items.filter((item) => item.id !== 3n);
    queries.forEach((query, i) => {
      expect(recall(after[i][0], exact("euclidean", live, query, 10))).toBeGreaterThanOrEqual(0.8);
      expect(recall(after[i][1], exact("manhattan", live, query, 10))).toBeGreaterThanOrEqual(0.8);
      expect(ids(after[i][0])).not.toContain(3n);
      expect(recall(after[i][0], before[i][0])).toBeGreaterThanOrEqual(0.8);
    });
    at.indexes.load(euclidean, "constructing");
    expect(at.indexes.search(euclidean, queries[0], 10, {})).toEqual([]);
    at.indexes.load(manhattan, "blocked");
    expect(at.indexes.search(manhattan, queries[0], 10, {})).toEqual([]);
  });

  it("build queues like put (1 per vector indexed, 0 otherwise); remove forgets the graphs and the meta key", () => {
    const at = fixture();
    const items = vectorsOf(100, 5, 71);
    at.records.set(1_000n, { id: 1_000n, props: { title: "no vector" } });
    for (const item of items) at.records.set(item.id, item);
    const index = definition("cosine");
    at.indexes.load(index, "constructing");
    expect(at.build(index)).toBe(100);
    expect(at.meta.get("vindex:node:Doc.embedding")).toBe(5);
    expect(at.indexes.search(index, items[4].value, 1, {})).toEqual([{ id: 5n, score: expect.closeTo(0, 6) }]);
    at.records.set(2_000n, { id: 2_000n, props: { embedding: [1, 2] } });
    const blocked = refusal(() => at.build(index));
    expect(blocked.code).toBe("vector_dimension_mismatch");
    expect(blocked.message).toContain("record 2000");
    at.records.set(2_000n, { id: 2_000n, props: { embedding: "1,2" } });
    expect(refusal(() => at.build(index)).code).toBe("invalid_type");
    at.env.transactionSync(() => at.indexes.remove(index));
    expect(at.meta.get("vindex:node:Doc.embedding")).toBeUndefined();
    expect(at.indexes.search(index, items[4].value, 1, {})).toHaveLength(1); // still there until commit
    at.indexes.commit();
    expect(at.indexes.search(index, items[4].value, 1, {})).toEqual([]);
    expect(at.indexes.dimensionOf(index)).toBeUndefined();
  });

  it("V records: the index covers the record's own vector", () => {
    const at = fixture();
    const index: VectorIndexDefinition = { family: "vector", kind: "vector", label: "Chunk", field: VECTOR_FIELD, name: "Chunk.$vector", metric: "euclidean" };
    at.indexes.load(index, "active");
    at.write([index], [
      { id: 1n, props: {}, vector: Float64Array.of(0, 0) },
      { id: 2n, props: {}, vector: Float64Array.of(3, 4) },
      { id: 3n, props: { embedding: [9, 9] } },
    ]);
    expect(at.indexes.search(index, Float32Array.of(3, 3), 5, {})).toEqual([
      { id: 2n, score: 1 },
      { id: 1n, score: expect.closeTo(Math.sqrt(18), 5) },
    ]);
  });

  it("tenants: one graph per tenant value, a tenant is required, an unknown one gives nothing", () => {
    const at = fixture();
    const index = definition("euclidean", { tenant: "tenant_id" });
    at.indexes.load(index, "active");
    at.write([index], [
      { id: 1n, props: { embedding: [0, 0], tenant_id: "a" } },
      { id: 2n, props: { embedding: [1, 0], tenant_id: "b" } },
      { id: 3n, props: { embedding: [2, 0], tenant_id: 7 } },
      { id: 4n, props: { embedding: [0, 0] } },
      { id: 5n, props: { embedding: [0, 1], tenant_id: "a" } },
    ]);
    const origin = Float32Array.of(0, 0);
    expect(ids(at.indexes.search(index, origin, 10, { tenant: "a" }))).toEqual([1n, 5n]);
    expect(ids(at.indexes.search(index, origin, 10, { tenant: "b" }))).toEqual([2n]);
    expect(ids(at.indexes.search(index, origin, 10, { tenant: "7" }))).toEqual([3n]);
    expect(at.indexes.search(index, origin, 10, { tenant: "nobody" })).toEqual([]);
    expect(refusal(() => at.indexes.search(index, origin, 10, {})).code).toBe("tenant_required");
    expect(refusal(() => at.indexes.search(index, origin, 10, { candidates: [1n] })).code).toBe("tenant_required");
    // A record moves with its tenant value; a tenant with no records left is unknown again.
    at.write([index], [{ id: 2n, props: { embedding: [1, 0], tenant_id: "a" } }]);
    expect(ids(at.indexes.search(index, origin, 10, { tenant: "a" }))).toEqual([1n, 2n, 5n]); // 2 and 5 tie: ascending ID
    expect(at.indexes.search(index, origin, 10, { tenant: "b" })).toEqual([]);
    expect(ids(at.indexes.search(index, origin, 10, { tenant: "a", candidates: [2n, 3n, 4n] }))).toEqual([2n]);
    const plain = definition("euclidean", { name: "Doc.plain" });
    at.indexes.load(plain, "active");
    at.write([plain], [{ id: 9n, props: { embedding: [0, 0] } }]);
    // Loaded active, it holds every record with a vector (the tenant property plays no part), and ignores a tenant.
    expect(ids(at.indexes.search(plain, origin, 10, { tenant: "ignored" }))).toEqual([1n, 4n, 9n, 2n, 5n, 3n]);
  });

  it("restricted search: results only among the candidates that have vectors; few candidates give the exact top-k", () => {
    for (const metric of ["cosine", "euclidean", "manhattan"] as const) {
      const at = fixture();
      const index = definition(metric);
      at.indexes.load(index, "active");
      const items = vectorsOf(3_000, 8, 81);
      at.write([index], items);
      const query = randomVectors(1, 8, 82)[0];
      const few = items.filter((item) => item.id % 97n === 0n);
      const candidates = [...few.map((item) => item.id), 999_999n, few[0].id];
      const found = at.indexes.search(index, query, 10, { candidates });
      expect(found).toEqual(exact(metric, few, query, 10).map((hit) => ({ id: hit.id, score: expect.closeTo(hit.score, 5) })));
      expect(at.indexes.search(index, query, 10, { candidates: [] })).toEqual([]);
      expect(at.indexes.search(index, query, 10, { candidates: [424_242n] })).toEqual([]);
      // Many candidates (over EXACT_CANDIDATES_MAX and over 10% of the graph): a filtered graph search.
      const many = items.filter((item) => item.id % 4n !== 0n);
      expect(many.length).toBeGreaterThan(EXACT_CANDIDATES_MAX);
      const members = new Set(many.map((item) => item.id));
      let total = 0;
      for (const each of randomVectors(20, 8, 83)) {
        const hits = at.indexes.search(index, each, 10, { candidates: [...members] });
        expect(hits).toHaveLength(10);
        for (const hit of hits) expect(members.has(hit.id)).toBe(true);
        total += recall(hits, exact(metric, many, each, 10));
      }
      expect(total / 20).toBeGreaterThanOrEqual(0.95);
    }
  });

  it("a filter that throws or answers a non-boolean never reaches hnswlib as such: the process lives on", () => {
    const index = new hnswlib.HierarchicalNSW("l2", 2);
    index.initIndex({ maxElements: 8 });
    index.addPoint([0, 0], 0);
    index.addPoint([1, 1], 1);
    const throwing = guardedFilter(() => {
      throw new Error("boom");
    });
    expect(index.searchKnn([0, 0], 2, throwing).neighbors).toEqual([]);
    expect(index.searchKnn([0, 0], 2, guardedFilter(() => 1)).neighbors).toEqual([]);
    expect(index.searchKnn([0, 0], 2, guardedFilter((label) => label === 1)).neighbors).toEqual([1]);
  });

  it("bad values and bad queries are refused with stable codes; the data stays intact", () => {
    const at = fixture();
    const index = definition("euclidean");
    at.indexes.load(index, "active");
    at.write([index], [{ id: 1n, props: { embedding: [1, 2] } }]);
    for (const bad of ["1,2", { x: 1 }, [1, "2"], true] as Value[]) {
      const error = refusal(() => at.write([index], [{ id: 2n, props: { embedding: bad } }, { id: 1n, props: null }]));
      expect(error.code).toBe("invalid_type");
      expect(error.message).toContain("record 2");
    }
    expect(refusal(() => at.write([index], [{ id: 2n, props: { embedding: [1, Number.NaN] } }])).code).toBe("invalid_value");
    expect(refusal(() => at.indexes.search(index, Float32Array.of(1, Number.NaN), 1, {})).code).toBe("invalid_value");
    expect(refusal(() => at.indexes.search(index, Float32Array.of(1, 2), -1, {})).code).toBe("invalid_value");
    expect(refusal(() => at.indexes.search(index, Float32Array.of(1, 2), 1.5, {})).code).toBe("invalid_value");
    expect(refusal(() => at.indexes.search(definition("euclidean", { name: "Doc.unknown" }), Float32Array.of(1, 2), 1, {})).code).toBe("index_not_ready");
    expect(at.indexes.search(index, Float32Array.of(1, 2), 5, {})).toEqual([{ id: 1n, score: 0 }]);
    expect([...at.records.keys()]).toEqual([1n]);
  });
});

describe("the change counter (read-only handles and other processes)", () => {
  const version = (at: Fixture) => at.meta.get("vindex-version:node:Doc.embedding");

  function counted(source: IndexRecordSource, seen: { scans: number }): IndexRecordSource["scan"] {
    return (kind, label, after, limit) => {
      seen.scans += 1;
      return source.scan(kind, label, after, limit);
    };
  }

  /** A second family over the same `meta` and records, as a read-only handle has, counting its label scans. */
  function reader(at: Fixture) {
    const source = at.source();
    const seen = { scans: 0 };
    const indexes = new VectorIndexes(at.meta, { ...source, scan: counted(source, seen) });
    return { indexes, seen };
  }

  function inSnapshot<T>(at: Fixture, read: (transaction: Transaction) => T): T {
    const transaction = at.env.useReadTransaction();
    try {
      return read(transaction);
    } finally {
      transaction.done();
    }
  }

  it("put, delete, build and remove count once per committed transaction; a discarded one leaves no count", () => {
    const at = fixture();
    const index = definition("euclidean");
    at.indexes.load(index, "active");
    expect(version(at)).toBeUndefined();
    at.write([index], vectorsOf(3, 2, 81));
    expect(version(at)).toBe(1);
    at.write([index], [{ id: 1n, props: null }, { id: 2n, props: { embedding: [1, 1] } }]);
    expect(version(at)).toBe(2);
    expect(refusal(() => at.write([index], [{ id: 9n, props: { embedding: [1, 2, 3] } }])).code).toBe("vector_dimension_mismatch");
    expect(version(at)).toBe(2);
    at.build(index);
    expect(version(at)).toBe(3);
    at.env.transactionSync(() => at.indexes.remove(index));
    at.indexes.commit();
    expect(version(at)).toBe(4); // a drop counts too: counters never go back
    expect(at.indexes.search(index, Float32Array.of(0, 0), 5, {})).toEqual([]);
  });

  it("a second family replays the logged changes when the snapshot's counter is newer (no rebuild); the writer never does", () => {
    const at = fixture();
    const index = definition("cosine");
    const writerScans = { scans: 0 };
    const source = at.source();
    at.indexes = new VectorIndexes(at.meta, { ...source, scan: counted(source, writerScans) });
    at.indexes.load(index, "active");
    const items = vectorsOf(200, 8, 91);
    at.write([index], items.slice(0, 100));
    const other = reader(at);
    other.indexes.load(index, "active");
    expect(other.seen.scans).toBe(1);
    const old = at.env.useReadTransaction(); // a snapshot from before the next writes
    at.write([index], items.slice(100));
    at.write([index], [{ id: 1n, props: null }]);
    writerScans.scans = 0;
    const query = items[150].value;
    try {
      // The old snapshot's counter is the one the second family's graphs were built at: no rebuild, its view.
      expect(other.indexes.search(index, query, 1, { transaction: old })[0].id).not.toBe(151n);
      expect(other.seen.scans).toBe(1);
    } finally {
      old.done();
    }
    inSnapshot(at, (transaction) => {
      expect(other.indexes.search(index, query, 1, { transaction })).toEqual([{ id: 151n, score: expect.closeTo(0, 6) }]);
      expect(ids(other.indexes.search(index, items[0].value, 200, { transaction }))).not.toContain(1n);
      expect(ids(at.indexes.search(index, query, 1, { transaction }))).toEqual([151n]);
    });
    expect(other.seen.scans).toBe(1); // the changes were replayed from the log, not rebuilt from every record
    expect(writerScans.scans).toBe(0);
    const scans = other.seen.scans;
    inSnapshot(at, (transaction) => other.indexes.search(index, query, 1, { transaction }));
    expect(other.seen.scans).toBe(scans); // up to date: searched as it is
  });

  it("an index loaded constructing (or never loaded) is built by the first search given a snapshot", () => {
    const at = fixture();
    const index = definition("euclidean");
    const items = vectorsOf(50, 4, 101);
    const other = reader(at);
    other.indexes.load(index, "constructing");
    for (const item of items) at.records.set(item.id, item);
    at.indexes.load(index, "constructing");
    at.build(index); // the writer's build, activated by the catalog in a later chunk that changes nothing here
    const later = reader(at); // never loaded: the index became active after it opened
    expect(other.indexes.search(index, items[7].value, 1, {})).toEqual([]); // no snapshot: answered as it is
    expect(refusal(() => later.indexes.search(index, items[7].value, 1, {})).code).toBe("index_not_ready");
    for (const family of [other.indexes, later.indexes]) {
      inSnapshot(at, (transaction) => expect(ids(family.search(index, items[7].value, 1, { transaction }))).toEqual([8n]));
      expect(family.dimensionOf(index)).toBe(4);
    }
  });
});
