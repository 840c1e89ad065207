/**
 * Our own HNSW (node/indexes/hnsw.ts) against exact search, and the vector arithmetic it is checked with (node/indexes/vector-math.ts):
 * recall@10 against brute force for L1 and L2 on random data, deletes and replacements, filters, determinism, and
 * the value rules of `indexVector` (bad values refused with stable codes).
 */
import { describe, expect, it } from "vitest";
import { Hnsw } from "../../node/indexes/hnsw.js";
import { cosineDistance, distance, indexVector, manhattanDistance, squaredEuclidean } from "../../node/indexes/vector-math.js";
import { SilkError } from "../../protocol/errors.js";
import type { Value } from "../../protocol/values.js";
import { seededRandom as seeded } from "../../protocol/random.js";

function randomVectors(count: number, dimension: number, seed: number): Float32Array[] {
  const random = seeded(seed);
  return Array.from({ length: count }, () => Float32Array.from({ length: dimension }, () => random() * 2 - 1));
}

function exactTop(vectors: readonly (Float32Array | undefined)[], query: Float32Array, k: number, measure: (a: Float32Array, b: Float32Array) => number, accept: (label: number) => boolean = () => true): number[] {
  const scored: { label: number; d: number }[] = [];
  vectors.forEach((vector, label) => {
    if (vector !== undefined && accept(label)) scored.push({ label, d: measure(query, vector) });
  });
  return scored.sort((a, b) => a.d - b.d).slice(0, k).map((s) => s.label);
}

function recall(found: readonly number[], truth: readonly number[]): number {
  const wanted = new Set(truth);
  return found.filter((label) => wanted.has(label)).length / truth.length;
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof SilkError ? error.code : `not a SilkError: ${String(error)}`;
  }
  return undefined;
}

const euclidean = (a: Float32Array, b: Float32Array) => Math.sqrt(squaredEuclidean(a, b));

describe("own HNSW", () => {
  const base = randomVectors(2_000, 32, 7);
  const queries = randomVectors(50, 32, 8);

  for (const [name, measure] of [["manhattan", manhattanDistance], ["euclidean", euclidean]] as const) {
    it(`recall@10 ≥ 0.95 against exact ${name} search (2,000 × 32 random)`, () => {
      const graph = new Hnsw({ dimension: 32, distance: measure, seed: 3 });
      base.forEach((vector, label) => graph.insert(label, vector));
      expect(graph.size).toBe(2_000);
      let total = 0;
      for (const query of queries) {
        const found = graph.search(query, 10, 64);
        expect(found).toHaveLength(10);
        for (let i = 1; i < found.length; i++) expect(found[i].distance).toBeGreaterThanOrEqual(found[i - 1].distance);
        for (const hit of found) expect(hit.distance).toBeCloseTo(measure(query, base[hit.label]), 9);
        total += recall(found.map((hit) => hit.label), exactTop(base, query, 10, measure));
      }
      expect(total / queries.length).toBeGreaterThanOrEqual(0.95);
    });
  }

  it("never returns deleted labels, returns a replaced label at its new place, and keeps its recall", () => {
    const graph = new Hnsw({ dimension: 32, distance: manhattanDistance, seed: 5 });
    const live: (Float32Array | undefined)[] = [...base.slice(0, 1_000)];
    live.forEach((vector, label) => graph.insert(label, vector!));
    for (let label = 0; label < 1_000; label += 3) {
      expect(graph.delete(label)).toBe(true);
      live[label] = undefined;
    }
    expect(graph.delete(0)).toBe(false);
    const moved = queries[0];
    graph.insert(1, moved);
    live[1] = moved;
    expect(graph.search(moved, 1, 64)).toEqual([{ label: 1, distance: 0 }]);
    let total = 0;
    for (const query of queries) {
      const found = graph.search(query, 10, 64).map((hit) => hit.label);
      for (const label of found) expect(live[label]).toBeDefined();
      total += recall(found, exactTop(live, query, 10, manhattanDistance));
    }
    expect(total / queries.length).toBeGreaterThanOrEqual(0.95);
    expect(graph.size).toBe(live.filter((vector) => vector !== undefined).length);
  });

  it("a filter decides membership only: every result passes it and recall holds among the accepted", () => {
    const graph = new Hnsw({ dimension: 32, distance: manhattanDistance, seed: 5 });
    base.forEach((vector, label) => graph.insert(label, vector));
    const even = (label: number) => label % 2 === 0;
    let total = 0;
    for (const query of queries) {
      const found = graph.search(query, 10, 128, even).map((hit) => hit.label);
      expect(found.every(even)).toBe(true);
      total += recall(found, exactTop(base, query, 10, manhattanDistance, even));
    }
    expect(total / queries.length).toBeGreaterThanOrEqual(0.95);
    expect(graph.search(queries[0], 10, 64, () => false)).toEqual([]);
  });

  it("is deterministic for a seed, and answers an empty graph or k = 0 with nothing", () => {
    const build = () => {
      const graph = new Hnsw({ dimension: 32, distance: manhattanDistance, seed: 11 });
      base.slice(0, 500).forEach((vector, label) => graph.insert(label, vector));
      return graph.search(queries[1], 10, 16);
    };
    expect(build()).toEqual(build());
    const empty = new Hnsw({ dimension: 4, distance: manhattanDistance });
    expect(empty.search(new Float32Array(4), 5, 64)).toEqual([]);
    const one = new Hnsw({ dimension: 4, distance: manhattanDistance });
    one.insert(9, Float32Array.of(1, 2, 3, 4));
    expect(one.search(new Float32Array(4), 0, 64)).toEqual([]);
    expect(one.search(new Float32Array(4), 5, 64)).toEqual([{ label: 9, distance: 10 }]);
    expect(() => one.insert(1, new Float32Array(3))).toThrow(RangeError);
    expect(one.size).toBe(1);
  });

  it("encodes compactly and decodes to a graph that answers and grows exactly as the original", () => {
    const original = new Hnsw({ dimension: 32, distance: manhattanDistance, seed: 3 });
    base.slice(0, 600).forEach((vector, label) => original.insert(label, vector));
    for (let label = 0; label < 600; label += 7) original.delete(label);
    for (let label = 1; label < 600; label += 11) original.insert(label, base[label + 600]);
    const bytes = original.encode();
    // Links as u32 and vectors as float32: about the vectors' own size plus 2M links a node, not a JSON blow-up.
    expect(bytes.byteLength).toBeLessThan(655 * (32 * 4 + 4 * 48));
    const decoded = Hnsw.decode(bytes, manhattanDistance);
    expect(decoded.size).toBe(original.size);
    for (const query of queries.slice(0, 20)) expect(decoded.search(query, 10, 32)).toEqual(original.search(query, 10, 32));
    for (const graph of [original, decoded]) base.slice(1_300, 1_400).forEach((vector, i) => graph.insert(10_000 + i, vector));
    for (const query of queries.slice(0, 20)) expect(decoded.search(query, 10, 32)).toEqual(original.search(query, 10, 32));
    expect(Hnsw.decode(new Hnsw({ dimension: 3, distance: manhattanDistance }).encode(), manhattanDistance).search(new Float32Array(3), 1, 8)).toEqual([]);
  });

  it("refuses bytes that are not an encoded graph with a RangeError", () => {
    const graph = new Hnsw({ dimension: 4, distance: manhattanDistance });
    for (let label = 0; label < 50; label++) graph.insert(label, Float32Array.of(label, 1, 2, 3));
    const bytes = graph.encode();
    expect(() => Hnsw.decode(bytes.subarray(0, bytes.byteLength - 5), manhattanDistance)).toThrow(RangeError);
    expect(() => Hnsw.decode(bytes.subarray(0, 40), manhattanDistance)).toThrow(RangeError);
    const otherFormat = Uint8Array.from(bytes);
    otherFormat[0] = 9;
    expect(() => Hnsw.decode(otherFormat, manhattanDistance)).toThrow(RangeError);
  });
});

describe("vector math", () => {
  it("normalises every stored vector form to float32", () => {
    const expected = Float32Array.of(1, -2.5, 3);
    expect(indexVector(Float32Array.of(1, -2.5, 3))).toEqual(expected);
    expect(indexVector(Float64Array.of(1, -2.5, 3))).toEqual(expected);
    expect(indexVector(BigInt64Array.of(1n, -2n, 3n))).toEqual(Float32Array.of(1, -2, 3));
    expect(indexVector(Int32Array.of(1, -2, 3))).toEqual(Float32Array.of(1, -2, 3));
    expect(indexVector([1, -2.5, 3])).toEqual(expected);
    expect(indexVector([1n, -2.5, 3])).toEqual(Float32Array.of(1, -2.5, 3));
    expect(indexVector([0.1])![0]).toBe(Math.fround(0.1));
    expect(indexVector(undefined)).toBeUndefined();
    expect(indexVector(null)).toBeUndefined();
    expect(indexVector([])).toEqual(new Float32Array(0));
  });

  it("refuses anything else with invalid_type, and non-finite components with invalid_value", () => {
    const notVectors: Value[] = ["1,2,3", { x: 1 }, [1, "2"], [1, null], [[1]], true, 3, new Uint8Array([1, 2]), new Date(0)];
    for (const value of notVectors) expect(codeOf(() => indexVector(value))).toBe("invalid_type");
    for (const value of [[1, Number.NaN], Float64Array.of(Infinity), [1e39], [2n ** 200n]] as Value[]) expect(codeOf(() => indexVector(value))).toBe("invalid_value");
  });

  it("computes each metric exactly, a zero vector at cosine distance 1", () => {
    const a = Float32Array.of(1, 0, 0);
    const b = Float32Array.of(0, 2, 0);
    const c = Float32Array.of(3, 4, 0);
    expect(distance("cosine", a, b)).toBeCloseTo(1, 12);
    expect(distance("cosine", a, Float32Array.of(-2, 0, 0))).toBeCloseTo(2, 12);
    expect(distance("cosine", c, Float32Array.of(6, 8, 0))).toBeCloseTo(0, 12);
    expect(distance("cosine", a, c)).toBeCloseTo(1 - 3 / 5, 12);
    expect(distance("cosine", new Float32Array(3), c)).toBe(1);
    expect(cosineDistance(new Float32Array(3), new Float32Array(3))).toBe(1);
    expect(distance("euclidean", new Float32Array(3), c)).toBe(5);
    expect(distance("manhattan", new Float32Array(3), c)).toBe(7);
    const long = Float32Array.from({ length: 7 }, (_, i) => i - 3);
    expect(distance("manhattan", long, new Float32Array(7))).toBe(12);
    expect(distance("euclidean", long, long)).toBe(0);
  });
});
