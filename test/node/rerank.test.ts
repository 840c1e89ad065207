/**
 * The rerankers over hand-made elements, with expectations computed by hand: RRF's fused scores, order and ties,
 * MMR choosing a diverse result at λ = 0.5 and the relevance order at λ = 1, each similarity, and bad parameters.
 */
import { describe, expect, it } from "vitest";
import { MMR_ITEMS_MAX } from "../../protocol/limits.js";
import { RERANK_SEARCH_DEFAULT, rerankMmr, rerankRrf } from "../../node/exec/rerank.js";
import type { Element, SearchTag } from "../../node/exec/streams.js";
import { SilkError, type ErrorCode } from "../../protocol/errors.js";

function hit(id: number, search: number, rank: number, score: number, measure: SearchTag["measure"] = "distance", field?: string): Element {
  return { kind: "node", id: BigInt(id), hit: field === undefined ? { search, rank, score, measure } : { search, rank, score, measure, field } };
}

function plain(id: number, kind: Element["kind"] = "node"): Element {
  return { kind, id: BigInt(id) };
}

function summary(items: readonly Element[]): [string, number][] {
  return items.map((item) => [`${item.kind}:${item.id}`, item.hit!.score]);
}

function refused(work: () => unknown, code: ErrorCode): SilkError {
  try {
    work();
  } catch (cause) {
    expect(cause).toBeInstanceOf(SilkError);
    expect((cause as SilkError).code).toBe(code);
    return cause as SilkError;
  }
  throw new Error(`expected ${code}`);
}

describe("rerankRrf", () => {
  it("fuses two rankings by the sum of 1 / (k + rank)", () => {
    // Search 1 ranks A=1, B=2, C=3; search 2 ranks C=1, A=2, D=3.
    const items = [hit(1, 1, 1, 0.1), hit(2, 1, 2, 0.2), hit(3, 1, 3, 0.3), hit(3, 2, 1, 9, "relevance"), hit(1, 2, 2, 8, "relevance"), hit(4, 2, 3, 7, "relevance")];
    const fused = rerankRrf(items, 60, 7);
    expect(fused.map((item) => Number(item.id))).toEqual([1, 3, 2, 4]);
    const scores = fused.map((item) => item.hit!.score);
    expect(scores[0]).toBeCloseTo(1 / 61 + 1 / 62, 15);
    expect(scores[1]).toBeCloseTo(1 / 63 + 1 / 61, 15);
    expect(scores[2]).toBeCloseTo(1 / 62, 15);
    expect(scores[3]).toBeCloseTo(1 / 63, 15);
    expect(fused.map((item) => item.hit)).toEqual(
      scores.map((score, i) => ({ search: 7, rank: i + 1, score, measure: "relevance" })),
    );
  });

  it("ranks elements without a hit by their stream position, as one more ranking", () => {
    // The stream ranking is P=1, Q=2 (the repeated P does not count); search 5 ranks Q=1. k = 1.
    const fused = rerankRrf([plain(10), plain(11), plain(10), hit(11, 5, 1, 0.5)], 1);
    expect(summary(fused)).toEqual([
      ["node:11", 1 / 3 + 1 / 2],
      ["node:10", 1 / 2],
    ]);
    expect(fused[0].hit!.search).toBe(RERANK_SEARCH_DEFAULT);
  });

  it("breaks ties by first appearance and keeps records of different kinds apart", () => {
    const fused = rerankRrf([hit(2, 1, 1, 0), { kind: "vector", id: 2n, hit: { search: 2, rank: 1, score: 0, measure: "distance" } }], 1);
    expect(summary(fused)).toEqual([
      ["node:2", 0.5],
      ["vector:2", 0.5],
    ]);
  });

  it("counts a record twice in one ranking once, at its best rank, and keeps its vector field", () => {
    const fused = rerankRrf([hit(1, 1, 1, 0.1, "distance", "embedding"), hit(1, 1, 4, 0.4, "distance", "embedding")], 10);
    expect(fused).toHaveLength(1);
    expect(fused[0].hit).toEqual({ search: 0, rank: 1, score: 1 / 11, measure: "relevance", field: "embedding" });
  });

  it("gives nothing for nothing, and refuses k <= 0 or not finite without touching the input", () => {
    expect(rerankRrf([], 60)).toEqual([]);
    const items = [hit(1, 1, 1, 0.5)];
    for (const k of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) refused(() => rerankRrf(items, k), "invalid_value");
    expect(items[0].hit).toEqual({ search: 1, rank: 1, score: 0.5, measure: "distance" });
  });
});

describe("rerankMmr", () => {
  // A and A2 point almost the same way; B is at cosine 0.6 from A but a little less relevant.
  const vectors = new Map<bigint, Float32Array>([
    [1n, Float32Array.of(1, 0)],
    [2n, Float32Array.of(1, 0.125)],
    [3n, Float32Array.of(0.75, 1)],
  ]);
  const vectorOf = (item: Element): Float32Array | undefined => vectors.get(item.id);
  const items = [hit(1, 1, 1, 0, "distance", "v"), hit(2, 1, 2, 0.01, "distance", "v"), hit(3, 1, 3, 0.3, "distance", "v")];
  const cosA2 = 1 / Math.sqrt(1 + 0.125 ** 2);

  it("at λ = 1 keeps the relevance order, scored by relevance 1 / (1 + d)", () => {
    const reranked = rerankMmr(items, 1, "cosine", vectorOf, 4);
    expect(summary(reranked)).toEqual([
      ["node:1", 1],
      ["node:2", 1 / 1.01],
      ["node:3", 1 / 1.3],
    ]);
    expect(reranked[2].hit).toEqual({ search: 4, rank: 3, score: 1 / 1.3, measure: "relevance", field: "v" });
  });

  it("at λ = 0.5 picks the diverse B before the near-duplicate A2", () => {
    const reranked = rerankMmr(items, 0.5, "cosine", vectorOf);
    expect(reranked.map((item) => Number(item.id))).toEqual([1, 3, 2]);
    const scores = reranked.map((item) => item.hit!.score);
    expect(scores[0]).toBeCloseTo(0.5 * 1, 12);
    expect(scores[1]).toBeCloseTo(0.5 * (1 / 1.3) - 0.5 * 0.6, 6);
    expect(scores[2]).toBeCloseTo(0.5 * (1 / 1.01) - 0.5 * cosA2, 6);
  });

  it("measures similarity as euclidean 1 / (1 + distance) and as the dot product", () => {
    const euclidean = rerankMmr(items, 0.5, "euclidean", vectorOf);
    // After A: A2 is 0.125 away (similarity 1/1.125), B is ‖(-0.25, 1)‖ = √1.0625 away.
    expect(euclidean.map((item) => Number(item.id))).toEqual([1, 3, 2]);
    expect(euclidean[1].hit!.score).toBeCloseTo(0.5 / 1.3 - 0.5 / (1 + Math.sqrt(1.0625)), 6);
    const dot = rerankMmr(items, 0.5, "dotproduct", vectorOf);
    // After A: A2·A = 1, B·A = 0.75.
    expect(dot.map((item) => Number(item.id))).toEqual([1, 3, 2]);
    expect(dot[1].hit!.score).toBeCloseTo(0.5 / 1.3 - 0.5 * 0.75, 6);
  });

  it("counts an element without a vector as dissimilar to everything", () => {
    const reranked = rerankMmr(items, 0.5, "cosine", (item) => (item.id === 2n ? undefined : vectorOf(item)));
    expect(reranked.map((item) => Number(item.id))).toEqual([1, 2, 3]);
    expect(reranked[1].hit!.score).toBeCloseTo(0.5 / 1.01, 12);
  });

  it("normalises relevance scores by the best of their search, distances from a negative least, and positions", () => {
    const text = [hit(7, 2, 1, 4, "relevance"), hit(8, 2, 2, 2, "relevance"), hit(9, 2, 3, 1, "relevance")];
    expect(summary(rerankMmr(text, 1, "cosine", () => undefined))).toEqual([
      ["node:7", 1],
      ["node:8", 0.5],
      ["node:9", 0.25],
    ]);
    const inner = [hit(5, 3, 1, -0.5), hit(6, 3, 2, 0.5)];
    expect(summary(rerankMmr(inner, 1, "dotproduct", () => undefined))).toEqual([
      ["node:5", 1],
      ["node:6", 0.5],
    ]);
    expect(summary(rerankMmr([plain(1), plain(2), plain(3)], 1, "cosine", () => undefined))).toEqual([
      ["node:1", 1],
      ["node:2", 2 / 3],
      ["node:3", 1 / 3],
    ]);
    // λ = 0 with no vectors: every value is 0, and ties keep the input order.
    expect(rerankMmr(text, 0, "cosine", () => undefined).map((item) => Number(item.id))).toEqual([7, 8, 9]);
  });

  it("refuses a bad λ or distance, and too many elements, without touching the input", () => {
    for (const lambda of [-0.1, 1.1, Number.NaN]) refused(() => rerankMmr(items, lambda, "cosine", vectorOf), "invalid_value");
    refused(() => rerankMmr(items, 0.5, "manhattan" as "cosine", vectorOf), "invalid_value");
    const many = Array.from({ length: MMR_ITEMS_MAX + 1 }, (_, i) => plain(i));
    refused(() => rerankMmr(many, 0.5, "cosine", () => undefined), "limit_exceeded");
    expect(items[0].hit).toEqual({ search: 1, rank: 1, score: 0, measure: "distance", field: "v" });
    expect(rerankMmr([], 0.5, "cosine", vectorOf)).toEqual([]);
  });
});
