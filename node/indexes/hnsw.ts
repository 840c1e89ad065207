/**
 * A small HNSW graph (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using Hierarchical
 * Navigable Small World graphs") over Float32Array with a pluggable distance. hnswlib-node serves cosine and
 * euclidean; it has no L1 space, so the manhattan metric of vector indexes runs on this one (node/indexes/vector-index.ts).
 * It follows hnswlib's algorithm: levels drawn with mL = 1/ln(M), greedy descent through the upper levels, a beam
 * search of width efConstruction per level on insert, the "heuristic" neighbour selection (keep a candidate only when
 * it is nearer to the new point than to every neighbour already kept), and M links per node (2M on level 0).
 *
 * Invariants: a label names at most one live node. Inserting a label again marks its old node deleted and adds a new
 * one; deleting marks the node. Deleted nodes stay in the graph as stepping stones (so it stays connected) and are
 * never returned by `search`. A search's filter only decides membership in the result: the walk still goes through
 * nodes the filter refuses, so a selective filter costs time, not recall. The graph is deterministic for a given seed
 * and insertion order (its only randomness is the level draw, one per insert). Deleted nodes are reclaimed only by a
 * rebuild (a vector index rebuilds its graphs when no persisted graph file serves).
 *
 * `encode`/`Hnsw.decode`: a compact binary form (node/indexes/vector-graph-files.ts stores it): the parameters, each node's
 * label, deletion mark and links per level as little-endian u32, then every node's vector as float32. A decoded
 * graph answers and grows exactly as the encoded one would: the level generator is advanced by the inserts made.
 */
import { seededRandom } from "../../protocol/random.js";

export interface HnswOptions {
  readonly dimension: number;
  readonly distance: (a: Float32Array, b: Float32Array) => number;
  /** Links per node on the upper levels (twice this on level 0). */
  readonly m?: number;
  /** Beam width while inserting. */
  readonly efConstruction?: number;
  readonly seed?: number;
}

export interface Neighbour {
  readonly label: number;
  readonly distance: number;
}

export const HNSW_M_DEFAULT = 16;
export const HNSW_EF_CONSTRUCTION_DEFAULT = 200;
/** Levels above this are never drawn (a draw beyond it has probability M^-16). */
const LEVEL_MAX = 16;
/** The version of `encode`'s layout, its first u32. */
const ENCODING_FORMAT = 1;
/** The encoding's header: format, dimension, m, efConstruction, seed, node count, entry node, top level. */
const ENCODING_HEADER_WORDS = 8;

/** A binary heap of (distance, node) pairs; `max` orders the largest distance first. */
class Heap {
  readonly distances: number[] = [];
  readonly nodes: number[] = [];
  constructor(private readonly max: boolean) {}

  get size(): number {
    return this.nodes.length;
  }
  topDistance(): number {
    return this.distances[0];
  }
  topNode(): number {
    return this.nodes[0];
  }
  private before(a: number, b: number): boolean {
    return this.max ? this.distances[a] > this.distances[b] : this.distances[a] < this.distances[b];
  }
  private swap(a: number, b: number): void {
    const d = this.distances[a];
    this.distances[a] = this.distances[b];
    this.distances[b] = d;
    const n = this.nodes[a];
    this.nodes[a] = this.nodes[b];
    this.nodes[b] = n;
  }
  push(distance: number, node: number): void {
    this.distances.push(distance);
    this.nodes.push(node);
    let i = this.nodes.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }
  pop(): void {
    const last = this.nodes.length - 1;
    this.swap(0, last);
    this.distances.pop();
    this.nodes.pop();
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let best = i;
      if (left < last && this.before(left, best)) best = left;
      if (right < last && this.before(right, best)) best = right;
      if (best === i) break;
      this.swap(i, best);
      i = best;
    }
  }
}

export class Hnsw {
  readonly dimension: number;
  private readonly distance: (a: Float32Array, b: Float32Array) => number;
  private readonly m: number;
  private readonly efConstruction: number;
  private readonly levelFactor: number;
  private readonly seed: number;
  private readonly random: () => number;
  /** By node: its vector, label, deletion mark and links per level. */
  private readonly vectors: Float32Array[] = [];
  private readonly labels: number[] = [];
  private readonly deleted: boolean[] = [];
  private readonly links: number[][][] = [];
  private readonly nodeOf = new Map<number, number>();
  private entry = -1;
  private topLevel = -1;
  private visited = new Uint32Array(1024);
  private visitTag = 0;

  constructor(options: HnswOptions) {
    this.dimension = options.dimension;
    this.distance = options.distance;
    this.m = options.m ?? HNSW_M_DEFAULT;
    this.efConstruction = Math.max(options.efConstruction ?? HNSW_EF_CONSTRUCTION_DEFAULT, this.m);
    this.levelFactor = 1 / Math.log(this.m);
    this.seed = options.seed ?? 1;
    this.random = seededRandom(this.seed);
  }

  /** The graph as bytes (the layout is in the module comment); `decode` with the same distance reads it back. */
  encode(): Uint8Array {
    const count = this.vectors.length;
    let words = ENCODING_HEADER_WORDS;
    for (const levels of this.links) {
      words += 2; // label, then the deletion mark and the level count in one word
      for (const links of levels) words += 1 + links.length;
    }
    const bytes = new Uint8Array(words * 4 + count * this.dimension * 4);
    const view = new DataView(bytes.buffer);
    let at = 0;
    const word = (value: number) => {
      view.setUint32(at, value >>> 0, true);
      at += 4;
    };
    for (const value of [ENCODING_FORMAT, this.dimension, this.m, this.efConstruction, this.seed, count, this.entry, this.topLevel]) word(value);
    for (let node = 0; node < count; node++) {
      word(this.labels[node]);
      word((this.deleted[node] ? 1 : 0) | (this.links[node].length << 1));
      for (const links of this.links[node]) {
        word(links.length);
        for (const other of links) word(other);
      }
    }
    for (const vector of this.vectors) {
      bytes.set(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength), at);
      at += vector.byteLength;
    }
    return bytes;
  }

  /**
   * Reads `encode`'s bytes. Throws a RangeError on bytes that are not such a graph (a bound or a link out of range, a
   * length that does not add up); the caller has checked the file's checksum, so that means a bug or a foreign file.
   */
  static decode(bytes: Uint8Array, distance: (a: Float32Array, b: Float32Array) => number): Hnsw {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let at = 0;
    const word = () => {
      const value = view.getUint32(at, true);
      at += 4;
      return value;
    };
    const [format, dimension, m, efConstruction, seed, count, entry, topLevel] = Array.from({ length: ENCODING_HEADER_WORDS }, word);
    if (format !== ENCODING_FORMAT) throw new RangeError(`HNSW encoding format ${format}; this Silk reads ${ENCODING_FORMAT}`);
    const graph = new Hnsw({ dimension, distance, m, efConstruction, seed });
    for (let node = 0; node < count; node++) {
      const label = word();
      const flags = word();
      const levels: number[][] = [];
      for (let level = 0; level < flags >>> 1; level++) {
        const links = Array.from({ length: word() }, word);
        if (links.some((other) => other >= count)) throw new RangeError(`HNSW node ${node} links to a node beyond ${count}`);
        levels.push(links);
      }
      graph.labels.push(label);
      graph.deleted.push((flags & 1) === 1);
      graph.links.push(levels);
      if ((flags & 1) === 0) graph.nodeOf.set(label, node);
      graph.random(); // the level draw this node's insert made
    }
    if (bytes.byteLength - at !== count * dimension * 4) throw new RangeError(`HNSW encoding of ${count} nodes × ${dimension} has ${bytes.byteLength - at} bytes of vectors`);
    const slab = new Float32Array(count * dimension);
    new Uint8Array(slab.buffer).set(bytes.subarray(at));
    for (let node = 0; node < count; node++) graph.vectors.push(slab.subarray(node * dimension, (node + 1) * dimension));
    graph.entry = count === 0 ? -1 : entry | 0;
    graph.topLevel = count === 0 ? -1 : topLevel | 0;
    if (graph.entry >= count || (count > 0 && graph.links[graph.entry].length !== graph.topLevel + 1)) throw new RangeError(`HNSW entry node ${graph.entry} does not fit the graph`);
    return graph;
  }

  /** The vector a live label holds (the graph's own copy after `decode`). */
  vectorOf(label: number): Float32Array | undefined {
    const node = this.nodeOf.get(label);
    return node === undefined ? undefined : this.vectors[node];
  }

  /** Live (not deleted) labels. */
  get size(): number {
    return this.nodeOf.size;
  }

  /** Nodes held, deleted ones included (they are reclaimed only by a rebuild). */
  get nodeCount(): number {
    return this.vectors.length;
  }

  has(label: number): boolean {
    return this.nodeOf.has(label);
  }

  /** Adds a vector under a label; a label already present is replaced (its old node marked deleted). */
  insert(label: number, vector: Float32Array): void {
    if (vector.length !== this.dimension) throw new RangeError(`vector of length ${vector.length} in an HNSW of dimension ${this.dimension}`);
    this.delete(label);
    const node = this.vectors.length;
    const level = Math.min(LEVEL_MAX, Math.floor(-Math.log(1 - this.random()) * this.levelFactor));
    this.vectors.push(vector);
    this.labels.push(label);
    this.deleted.push(false);
    this.links.push(Array.from({ length: level + 1 }, () => []));
    this.nodeOf.set(label, node);
    if (this.entry === -1) {
      this.entry = node;
      this.topLevel = level;
      return;
    }
    let nearest = this.entry;
    let nearestDistance = this.distance(vector, this.vectors[nearest]);
    for (let l = this.topLevel; l > level; l--) [nearest, nearestDistance] = this.greedy(vector, nearest, nearestDistance, l);
    for (let l = Math.min(level, this.topLevel); l >= 0; l--) {
      const found = this.searchLevel(vector, nearest, nearestDistance, this.efConstruction, l, undefined, false);
      const chosen = this.select(found.distances, found.nodes, this.m);
      this.links[node][l] = chosen;
      for (const neighbour of chosen) this.link(neighbour, node, l);
      nearest = found.nodes[0];
      nearestDistance = found.distances[0];
    }
    if (level > this.topLevel) {
      this.entry = node;
      this.topLevel = level;
    }
  }

  /** Marks a label's node deleted; whether the label was present. */
  delete(label: number): boolean {
    const node = this.nodeOf.get(label);
    if (node === undefined) return false;
    this.deleted[node] = true;
    this.nodeOf.delete(label);
    return true;
  }

  /**
   * The k nearest live labels, nearest first, among those `filter` accepts (all when absent). `ef` is the beam width
   * (at least k). The filter must not throw (vector-index.ts wraps every filter it passes).
   */
  search(query: Float32Array, k: number, ef: number, filter?: (label: number) => boolean): Neighbour[] {
    if (this.entry === -1 || k <= 0) return [];
    let nearest = this.entry;
    let nearestDistance = this.distance(query, this.vectors[nearest]);
    for (let l = this.topLevel; l > 0; l--) [nearest, nearestDistance] = this.greedy(query, nearest, nearestDistance, l);
    const found = this.searchLevel(query, nearest, nearestDistance, Math.max(ef, k), 0, filter, true);
    const result: Neighbour[] = [];
    for (let i = 0; i < found.nodes.length && result.length < k; i++) result.push({ label: this.labels[found.nodes[i]], distance: found.distances[i] });
    return result;
  }

  /** Greedy walk on one level towards the query; the nearest node met and its distance. */
  private greedy(query: Float32Array, start: number, startDistance: number, level: number): [number, number] {
    let current = start;
    let currentDistance = startDistance;
    for (let moved = true; moved; ) {
      moved = false;
      for (const neighbour of this.links[current][level]) {
        const d = this.distance(query, this.vectors[neighbour]);
        if (d < currentDistance) {
          current = neighbour;
          currentDistance = d;
          moved = true;
        }
      }
    }
    return [current, currentDistance];
  }

  /**
   * Beam search of width ef on one level from one entry node; the result (sorted nearest first) holds only nodes that
   * are live and pass the filter when `onlyLive` (searches), every node met otherwise (inserts link to deleted ones).
   */
  private searchLevel(query: Float32Array, start: number, startDistance: number, ef: number, level: number, filter: ((label: number) => boolean) | undefined, onlyLive: boolean): { distances: number[]; nodes: number[] } {
    const tag = this.nextVisitTag();
    const accepted = (node: number) => !onlyLive || (!this.deleted[node] && (filter === undefined || filter(this.labels[node])));
    const candidates = new Heap(false);
    const results = new Heap(true);
    this.visited[start] = tag;
    candidates.push(startDistance, start);
    if (accepted(start)) results.push(startDistance, start);
    while (candidates.size > 0) {
      const candidateDistance = candidates.topDistance();
      if (results.size >= ef && candidateDistance > results.topDistance()) break;
      const candidate = candidates.topNode();
      candidates.pop();
      for (const neighbour of this.links[candidate][level]) {
        if (this.visited[neighbour] === tag) continue;
        this.visited[neighbour] = tag;
        const d = this.distance(query, this.vectors[neighbour]);
        if (results.size < ef || d < results.topDistance()) {
          candidates.push(d, neighbour);
          if (accepted(neighbour)) {
            results.push(d, neighbour);
            if (results.size > ef) results.pop();
          }
        }
      }
    }
    const distances: number[] = new Array(results.size);
    const nodes: number[] = new Array(results.size);
    for (let i = results.size - 1; i >= 0; i--) {
      distances[i] = results.topDistance();
      nodes[i] = results.topNode();
      results.pop();
    }
    return { distances, nodes };
  }

  private nextVisitTag(): number {
    if (this.visited.length < this.vectors.length) this.visited = new Uint32Array(Math.max(this.vectors.length, this.visited.length * 2));
    this.visitTag = (this.visitTag + 1) >>> 0;
    if (this.visitTag === 0) {
      this.visited.fill(0);
      this.visitTag = 1;
    }
    return this.visitTag;
  }

  /**
   * hnswlib's heuristic: walk the candidates nearest first and keep one only when it is nearer to the base point than
   * to every one already kept (it covers a direction no kept neighbour covers), up to `limit`.
   */
  private select(distances: readonly number[], nodes: readonly number[], limit: number): number[] {
    if (nodes.length <= limit) return [...nodes];
    const kept: number[] = [];
    for (let i = 0; i < nodes.length && kept.length < limit; i++) {
      const candidate = this.vectors[nodes[i]];
      let diverse = true;
      for (const other of kept) {
        if (this.distance(candidate, this.vectors[other]) < distances[i]) {
          diverse = false;
          break;
        }
      }
      if (diverse) kept.push(nodes[i]);
    }
    return kept;
  }

  /** Adds a back link from `node` to `added` on a level, shrinking `node`'s links by the heuristic when full. */
  private link(node: number, added: number, level: number): void {
    const neighbours = this.links[node][level];
    const limit = level === 0 ? 2 * this.m : this.m;
    if (neighbours.length < limit) {
      neighbours.push(added);
      return;
    }
    const base = this.vectors[node];
    const candidates = [...neighbours, added].map((other) => ({ other, d: this.distance(base, this.vectors[other]) }));
    candidates.sort((a, b) => a.d - b.d);
    this.links[node][level] = this.select(candidates.map((c) => c.d), candidates.map((c) => c.other), limit);
  }
}
