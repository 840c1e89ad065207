/**
 * The in-memory graphs of the vector family (node/vector-index.ts): one PartitionGraph per (index, tenant partition),
 * mapping u64 record IDs to the integer labels a graph library wants, and keeping each vector by label for exact
 * scans. Cosine and euclidean run on hnswlib-node (spaces `cosine`, 1 - cos, and `l2`, squared: we report its square
 * root); manhattan runs on our own HNSW (node/hnsw.ts), since hnswlib has no L1. Distances are those of
 * node/vector-math.ts.
 *
 * Invariants: a label is handed out once per ID and never reused while the graph lives (an hnswlib slot can outlive
 * its label until replaced); `idOf`, `labelOf` and `vectorOf` agree after every call. Every filter handed to a graph
 * is wrapped by `guardedFilter` to return a boolean and never throw: a throwing filter callback aborts the process
 * inside hnswlib (DESIGN, facts about the stack).
 */
import hnswlib from "hnswlib-node";
import type { VectorMetric } from "../protocol/indexes.js";
import { Hnsw, HNSW_EF_CONSTRUCTION_DEFAULT, HNSW_M_DEFAULT, type Neighbour } from "./hnsw.js";
import { manhattanDistance } from "./vector-math.js";

export type { Neighbour };

const GRAPH_CAPACITY_INITIAL = 1_024;
/** The random seed of every graph (bench/vectors.ts builds raw hnswlib with the same one). */
export const GRAPH_SEED = 100;

/** A filter that answers a boolean and never throws, whatever `test` does (hnswlib aborts on a throwing callback). */
export function guardedFilter(test: (label: number) => unknown): (label: number) => boolean {
  return (label: number) => {
    try {
      return test(label) === true;
    } catch {
      return false;
    }
  };
}

/** One tenant partition's graph, with the u64 ID <-> integer label maps and the vectors by label (for exact scans). */
export abstract class PartitionGraph {
  readonly labelOf = new Map<bigint, number>();
  readonly idOf: (bigint | undefined)[] = [];
  readonly vectorOf: (Float32Array | undefined)[] = [];
  /**
   * Labels are handed out once and never reused (an hnswlib slot can outlive its label until replaced), so these
   * arrays grow by one slot per new ID until the partition reopens and `load` rebuilds the graph compactly.
   */
  protected nextLabel = 0;

  get size(): number {
    return this.labelOf.size;
  }

  /** One more than the largest label handed out (the length of a membership mark array). */
  get labelBound(): number {
    return this.nextLabel;
  }

  add(id: bigint, vector: Float32Array): void {
    let label = this.labelOf.get(id);
    if (label !== undefined) this.replace(label, vector);
    else {
      label = this.nextLabel++;
      this.insert(label, vector);
      this.labelOf.set(id, label);
      this.idOf[label] = id;
    }
    this.vectorOf[label] = vector;
  }

  remove(id: bigint): void {
    const label = this.labelOf.get(id);
    if (label === undefined) return;
    this.erase(label);
    this.labelOf.delete(id);
    this.idOf[label] = undefined;
    this.vectorOf[label] = undefined;
  }

  protected abstract insert(label: number, vector: Float32Array): void;
  protected abstract replace(label: number, vector: Float32Array): void;
  protected abstract erase(label: number): void;
  /**
   * Up to k nearest labels accepted by the filter, nearest first, with metric distances. `components`, when given,
   * are the query's components as plain numbers that round to `query`'s (hnswlib-node takes those).
   */
  abstract nearest(query: Float32Array, k: number, ef: number, filter?: (label: number) => boolean, components?: readonly number[]): Neighbour[];
}

/** Cosine and euclidean: hnswlib-node, which takes number[] (each vector converted once, on the way in). */
class HnswlibGraph extends PartitionGraph {
  private readonly index: hnswlib.HierarchicalNSW;
  private readonly euclidean: boolean;
  private capacity = GRAPH_CAPACITY_INITIAL;
  /** Deleted slots hnswlib can reuse for a new label (addPoint with replaceDeleted). */
  private vacant = 0;

  constructor(metric: "cosine" | "euclidean", dimension: number) {
    super();
    this.euclidean = metric === "euclidean";
    this.index = new hnswlib.HierarchicalNSW(this.euclidean ? "l2" : "cosine", dimension);
    this.index.initIndex({ maxElements: this.capacity, m: HNSW_M_DEFAULT, efConstruction: HNSW_EF_CONSTRUCTION_DEFAULT, randomSeed: GRAPH_SEED, allowReplaceDeleted: true });
  }

  protected insert(label: number, vector: Float32Array): void {
    if (this.vacant > 0) this.vacant -= 1;
    else if (this.index.getCurrentCount() >= this.capacity) {
      this.capacity *= 2;
      this.index.resizeIndex(this.capacity);
    }
    this.index.addPoint(numbers(vector), label, true);
  }

  protected replace(label: number, vector: Float32Array): void {
    // Without replaceDeleted, addPoint on a live label updates its point in place (hnswlib's updatePoint).
    this.index.addPoint(numbers(vector), label, false);
  }

  protected erase(label: number): void {
    this.index.markDelete(label);
    this.vacant += 1;
  }

  nearest(query: Float32Array, k: number, ef: number, filter?: (label: number) => boolean, components?: readonly number[]): Neighbour[] {
    this.index.setEf(ef);
    // hnswlib rounds each number to float32 itself: the caller's numbers give the very query `query` holds.
    const found = this.index.searchKnn((components as number[] | undefined) ?? numbers(query), k, filter === undefined ? undefined : guardedFilter(filter));
    return found.neighbors.map((label, i) => {
      const raw = found.distances[i];
      return { label, distance: this.euclidean ? Math.sqrt(Math.max(0, raw)) : Math.max(0, raw) };
    });
  }
}

/** Manhattan: our own HNSW over the Float32Arrays themselves. */
class OwnGraph extends PartitionGraph {
  private readonly graph: Hnsw;

  constructor(dimension: number) {
    super();
    this.graph = new Hnsw({ dimension, distance: manhattanDistance, seed: GRAPH_SEED });
  }
  protected insert(label: number, vector: Float32Array): void {
    this.graph.insert(label, vector);
  }
  protected replace(label: number, vector: Float32Array): void {
    this.graph.insert(label, vector);
  }
  protected erase(label: number): void {
    this.graph.delete(label);
  }
  nearest(query: Float32Array, k: number, ef: number, filter?: (label: number) => boolean): Neighbour[] {
    return this.graph.search(query, k, ef, filter === undefined ? undefined : guardedFilter(filter));
  }
}

function numbers(vector: Float32Array): number[] {
  const array: number[] = new Array(vector.length);
  for (let i = 0; i < vector.length; i++) array[i] = vector[i];
  return array;
}

export function newGraph(metric: VectorMetric, dimension: number): PartitionGraph {
  return metric === "manhattan" ? new OwnGraph(dimension) : new HnswlibGraph(metric, dimension);
}
