/**
 * The rerankers, pure functions over stream elements (streams.ts): Reciprocal Rank Fusion, which fuses the rankings
 * of several searches into one, and Maximal Marginal Relevance, which reorders one ranking so that each next result
 * is relevant but unlike the ones before it. The executor runs them for the `rerank_rrf` and `rerank_mmr` steps;
 * loading vectors is its business (`vectorOf`), so this module touches no storage.
 *
 * Invariants:
 * - Every output element carries a new hit tag {search: the number the caller passes (RERANK_SEARCH_DEFAULT, 0,
 *   when it passes none; search steps number themselves from 1), rank: its 1-based output position, score: the
 *   fused score or the MMR value at selection, measure: "relevance"}, and keeps the `field` of its record's first
 *   vector hit, so that RerankMMR after RerankRRF still finds vectors.
 * - RRF gives one element per record (kind and id); MMR keeps every element, only reordered.
 * - Ties keep the input order (first appearance), so the output is deterministic.
 * - Bad parameters are `invalid_value` and change nothing; MMR over more than MMR_ITEMS_MAX elements is
 *   `limit_exceeded` (its cost grows with the square of the count).
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { MMR_ITEMS_MAX } from "../../protocol/limits.js";
import type { MmrDistance } from "../../protocol/tree.js";
import type { Element, SearchTag } from "./streams.js";

/** The `search` number of the rerankers' hit tags when the caller gives none. */
export const RERANK_SEARCH_DEFAULT = 0;
/** RRF's constant k when a query gives none (Cormack, Clarke and Büttcher, 2009). */
export const RRF_K_DEFAULT = 60;

const MMR_DISTANCES: readonly MmrDistance[] = ["cosine", "euclidean", "dotproduct"];

function recordKey(item: Element): string {
  return `${item.kind}:${item.id}`;
}

function retagged(item: Element, search: number, rank: number, score: number, field: string | undefined): Element {
  const hit: SearchTag = field === undefined ? { search, rank, score, measure: "relevance" } : { search, rank, score, measure: "relevance", field };
  return { ...item, hit };
}

/**
 * Reciprocal Rank Fusion: the rankings are the elements grouped by `hit.search` (each at its `hit.rank`), plus one
 * ranking of the elements without a hit by their order in the stream (1-based, counting distinct records). A
 * record's score is the sum over the rankings that hold it of 1 / (k + rank) (its best rank when a ranking holds it
 * twice). One element per record, by descending score; ties by first appearance.
 */
export function rerankRrf(items: readonly Element[], k: number, search: number = RERANK_SEARCH_DEFAULT): Element[] {
  if (typeof k !== "number" || !Number.isFinite(k) || k <= 0) {
    throw new SilkError("invalid_value", `RerankRRF's k must be a number greater than 0, got ${String(k)}`);
  }
  const records = new Map<string, { readonly first: Element; field: string | undefined; readonly ranks: Map<string, number> }>();
  let streamRank = 0;
  for (const item of items) {
    const key = recordKey(item);
    let entry = records.get(key);
    if (entry === undefined) {
      entry = { first: item, field: undefined, ranks: new Map() };
      records.set(key, entry);
    }
    entry.field ??= item.hit?.field;
    let ranking: string;
    let rank: number;
    if (item.hit === undefined) {
      ranking = "stream";
      if (entry.ranks.has(ranking)) continue;
      streamRank += 1;
      rank = streamRank;
    } else {
      ranking = `search ${item.hit.search}`;
      rank = item.hit.rank;
    }
    const before = entry.ranks.get(ranking);
    if (before === undefined || rank < before) entry.ranks.set(ranking, rank);
  }
  const fused = [...records.values()].map((entry, order) => {
    let score = 0;
    for (const rank of entry.ranks.values()) score += 1 / (k + rank);
    return { entry, order, score };
  });
  fused.sort((a, b) => b.score - a.score || a.order - b.order);
  return fused.map(({ entry, score }, i) => retagged(entry.first, search, i + 1, score, entry.field));
}

/**
 * Maximal Marginal Relevance (Carbonell and Goldstein, 1998): repeatedly picks the element with the highest
 * λ·relevance − (1−λ)·(its greatest similarity to an element already picked; 0 before the first pick).
 *
 * Relevance, in (0, 1]: a vector hit's distance d becomes 1 / (1 + d − m), m the least of 0 and the smallest
 * distance of its search (so negative distances, as inner products give, keep their order); a relevance score
 * becomes score / (the greatest score of its search), or 1 / rank when that is not positive; an element without a
 * hit gets (n − p) / n, p its position among the n elements without a hit.
 * Similarity between two vectors by `distance`: cosine (0 for a zero vector), euclidean as 1 / (1 + ‖a − b‖), or
 * the dot product. An element without a vector (or with one of another length) counts as dissimilar to every other:
 * similarity 0, no redundancy penalty.
 */
export function rerankMmr(
  items: readonly Element[],
  lambda: number,
  distance: MmrDistance,
  vectorOf: (item: Element) => Float32Array | undefined,
  search: number = RERANK_SEARCH_DEFAULT,
): Element[] {
  if (typeof lambda !== "number" || !Number.isFinite(lambda) || lambda < 0 || lambda > 1) {
    throw new SilkError("invalid_value", `RerankMMR's lambda must be a number from 0 to 1, got ${String(lambda)}`);
  }
  if (!MMR_DISTANCES.includes(distance)) {
    throw new SilkError("invalid_value", `RerankMMR's distance must be one of ${MMR_DISTANCES.join(", ")}, got ${JSON.stringify(distance)}`);
  }
  if (items.length > MMR_ITEMS_MAX) {
    throw new SilkError("limit_exceeded", `RerankMMR reorders at most ${MMR_ITEMS_MAX} results, got ${items.length}; search with a smaller k`);
  }
  const relevance = relevancesOf(items);
  const vectors = items.map((item) => vectorOf(item));
  const similarity = similarityFunction(distance);
  const count = items.length;
  const picked = new Uint8Array(count);
  // The greatest similarity of each element to the picked ones; meaningful once something is picked.
  const closest = new Float64Array(count).fill(-Infinity);
  const output: Element[] = [];
  for (let round = 0; round < count; round += 1) {
    let best = -1;
    let bestValue = -Infinity;
    for (let i = 0; i < count; i += 1) {
      if (picked[i] === 1) continue;
      const penalty = round === 0 ? 0 : closest[i];
      const value = lambda * relevance[i] - (1 - lambda) * penalty;
      if (best === -1 || value > bestValue) {
        best = i;
        bestValue = value;
      }
    }
    picked[best] = 1;
    output.push(retagged(items[best], search, round + 1, bestValue, items[best].hit?.field));
    const chosen = vectors[best];
    for (let i = 0; i < count; i += 1) {
      if (picked[i] === 1) continue;
      const vector = vectors[i];
      const value = chosen === undefined || vector === undefined || vector.length !== chosen.length ? 0 : similarity(vector, chosen);
      if (value > closest[i]) closest[i] = value;
    }
  }
  return output;
}

/** Each element's relevance in (0, 1], as rerankMmr documents. */
function relevancesOf(items: readonly Element[]): Float64Array {
  const least = new Map<number, number>();
  const greatest = new Map<number, number>();
  let withoutHit = 0;
  for (const item of items) {
    const hit = item.hit;
    if (hit === undefined) withoutHit += 1;
    else if (hit.measure === "distance") least.set(hit.search, Math.min(least.get(hit.search) ?? 0, hit.score));
    else greatest.set(hit.search, Math.max(greatest.get(hit.search) ?? -Infinity, hit.score));
  }
  const relevance = new Float64Array(items.length);
  let position = 0;
  items.forEach((item, i) => {
    const hit = item.hit;
    if (hit === undefined) {
      relevance[i] = (withoutHit - position) / withoutHit;
      position += 1;
    } else if (hit.measure === "distance") {
      relevance[i] = 1 / (1 + hit.score - least.get(hit.search)!);
    } else {
      const top = greatest.get(hit.search)!;
      relevance[i] = top > 0 ? Math.max(hit.score, 0) / top : 1 / Math.max(hit.rank, 1);
    }
  });
  return relevance;
}

function similarityFunction(distance: MmrDistance): (a: Float32Array, b: Float32Array) => number {
  switch (distance) {
    case "cosine":
      return (a, b) => {
        let dot = 0;
        let normA = 0;
        let normB = 0;
        for (let i = 0; i < a.length; i += 1) {
          dot += a[i] * b[i];
          normA += a[i] * a[i];
          normB += b[i] * b[i];
        }
        return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB);
      };
    case "euclidean":
      return (a, b) => {
        let sum = 0;
        for (let i = 0; i < a.length; i += 1) sum += (a[i] - b[i]) ** 2;
        return 1 / (1 + Math.sqrt(sum));
      };
    case "dotproduct":
      return (a, b) => {
        let dot = 0;
        for (let i = 0; i < a.length; i += 1) dot += a[i] * b[i];
        return dot;
      };
    default:
      return unreachable(distance, "MMR distance");
  }
}
