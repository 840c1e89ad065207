/**
 * The in-memory graphs of the vector family (node/indexes/vector-index.ts): one PartitionGraph per (index, tenant partition),
 * mapping u64 record IDs to the integer labels a graph library wants. Cosine and euclidean run on hnswlib-node (spaces `cosine`, 1 - cos, and `l2`, squared: we report its square
 * root); manhattan runs on our own HNSW (node/indexes/hnsw.ts), since hnswlib has no L1. Distances are those of
 * node/indexes/vector-math.ts.
 *
 * Invariants: a label is handed out once per ID and never reused while the graph lives (an hnswlib slot can outlive
 * its label until replaced); `idOf` and `labelOf` agree after every call. Each vector is held once in memory, by the
 * graph itself: hnswlib keeps its own copy, which hnswlib-node can hand back only as a number[] at hundreds of µs a
 * point, so exact scans over hnswlib graphs read vectors from the records (vector-index.ts); our HNSW's Float32Arrays
 * are `heldVector`. Every filter handed to a graph
 * is wrapped by `guardedFilter` to return a boolean and never throw: a throwing filter callback aborts the process
 * inside hnswlib (DESIGN, facts about the stack).
 *
 * `encodeGraph`/`decodeGraph`: a graph as bytes for node/indexes/vector-graph-files.ts: the label maps (the next label, then
 * each live label with its ID), then the graph itself: hnswlib's own file (written and read through a scratch file,
 * its only interface), or our HNSW's encoding; both hold the vectors.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import hnswlib from "hnswlib-node";
import type { VectorMetric } from "../../protocol/indexes.js";
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

/** One tenant partition's graph, with the u64 ID <-> integer label maps. */
export abstract class PartitionGraph {
  readonly labelOf = new Map<bigint, number>();
  readonly idOf: (bigint | undefined)[] = [];
  /**
   * Labels are handed out once and never reused (an hnswlib slot can outlive its label until replaced), so these
   * arrays grow by one slot per new ID until a rebuild makes the graph compact (a graph file keeps them: a writer's
   * open rebuilds once they outnumber the live records, vector-index.ts).
   */
  protected nextLabel = 0;

  get size(): number {
    return this.labelOf.size;
  }

  /** One more than the largest label handed out (the length of a membership mark array). */
  get labelBound(): number {
    return this.nextLabel;
  }

  /**
   * Slots held for records no longer here: labels never reused and, in our HNSW, deleted nodes kept as stepping
   * stones. A rebuild drops them; a graph file keeps them (vector-index.ts rebuilds when they outnumber the live).
   */
  get deadSlots(): number {
    return this.nextLabel - this.size;
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
  }

  remove(id: bigint): void {
    const label = this.labelOf.get(id);
    if (label === undefined) return;
    this.erase(label);
    this.labelOf.delete(id);
    this.idOf[label] = undefined;
  }

  /** A live label's vector when this graph keeps it as a Float32Array (our HNSW); undefined for hnswlib's graphs. */
  abstract heldVector(label: number): Float32Array | undefined;

  protected abstract insert(label: number, vector: Float32Array): void;
  protected abstract replace(label: number, vector: Float32Array): void;
  protected abstract erase(label: number): void;
  /**
   * Up to k nearest labels accepted by the filter, nearest first, with metric distances. `components`, when given,
   * are the query's components as plain numbers that round to `query`'s (hnswlib-node takes those).
   */
  abstract nearest(query: Float32Array, k: number, ef: number, filter?: (label: number) => boolean, components?: readonly number[]): Neighbour[];

  /** The label maps and the graph as byte chunks, written one after the other; `scratch` is a private directory. */
  encode(scratch: string): Uint8Array[] {
    const labels = new Uint8Array(8 + this.size * 12);
    const view = new DataView(labels.buffer);
    view.setUint32(0, this.nextLabel, true);
    view.setUint32(4, this.size, true);
    let at = 8;
    for (const [id, label] of this.labelOf) {
      view.setUint32(at, label, true);
      view.setBigUint64(at + 4, id, true);
      at += 12;
    }
    return [labels, ...this.encodeGraph(scratch)];
  }

  protected abstract encodeGraph(scratch: string): Uint8Array[];

  /** Takes `decodeLabels`' maps into this empty graph; `has` tells whether the graph holds a label's point. */
  protected adoptLabels(labels: DecodedLabels, has: (label: number) => boolean): void {
    this.nextLabel = labels.nextLabel;
    for (const [id, label] of labels.labelOf) {
      if (!has(label)) throw new RangeError(`graph labels: live label ${label} of ID ${id} has no point in the graph`);
      this.labelOf.set(id, label);
      this.idOf[label] = id;
    }
  }
}

/** The label maps `encode` wrote, and the offset where the graph's own bytes start. */
interface DecodedLabels {
  readonly nextLabel: number;
  readonly labelOf: Map<bigint, number>;
  readonly end: number;
}

function decodeLabels(bytes: Uint8Array): DecodedLabels {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const nextLabel = view.getUint32(0, true);
  const live = view.getUint32(4, true);
  const labelOf = new Map<bigint, number>();
  const seen = new Set<number>();
  let at = 8;
  for (let i = 0; i < live; i++) {
    const label = view.getUint32(at, true);
    const id = view.getBigUint64(at + 4, true);
    if (label >= nextLabel || seen.has(label) || labelOf.has(id)) throw new RangeError(`graph labels: label ${label} of ID ${id} repeats or is beyond ${nextLabel}`);
    seen.add(label);
    labelOf.set(id, label);
    at += 12;
  }
  return { nextLabel, labelOf, end: at };
}

/** Cosine and euclidean: hnswlib-node, which takes number[] (each vector converted once, on the way in). */
class HnswlibGraph extends PartitionGraph {
  private readonly index: hnswlib.HierarchicalNSW;
  private readonly euclidean: boolean;
  private capacity = GRAPH_CAPACITY_INITIAL;
  /** Deleted slots hnswlib can reuse for a new label (addPoint with replaceDeleted). */
  private vacant = 0;

  /** A new empty graph, or with `file`, hnswlib's graph read from that file (`decodeGraph`). */
  constructor(
    metric: "cosine" | "euclidean",
    private readonly dimension: number,
    file?: string,
  ) {
    super();
    this.euclidean = metric === "euclidean";
    this.index = new hnswlib.HierarchicalNSW(this.euclidean ? "l2" : "cosine", dimension);
    if (file === undefined) {
      this.index.initIndex({ maxElements: this.capacity, m: HNSW_M_DEFAULT, efConstruction: HNSW_EF_CONSTRUCTION_DEFAULT, randomSeed: GRAPH_SEED, allowReplaceDeleted: true });
    } else {
      this.index.readIndexSync(file, true);
      this.capacity = this.index.getMaxElements();
    }
  }

  /** The vacant-slot count, then hnswlib's file (which holds the vectors). */
  protected encodeGraph(scratch: string): Uint8Array[] {
    const file = join(scratch, "hnswlib.bin");
    this.index.writeIndexSync(file);
    const header = new Uint8Array(8);
    new DataView(header.buffer).setUint32(0, this.vacant, true);
    return [header, readFileSync(file)];
  }

  static decode(metric: "cosine" | "euclidean", dimension: number, bytes: Uint8Array, scratch: string): HnswlibGraph {
    const labels = decodeLabels(bytes);
    let at = labels.end;
    if (bytes.byteLength < at + 8) throw new RangeError(`graph of ${labels.labelOf.size} × ${dimension}: cut short`);
    const vacant = new DataView(bytes.buffer, bytes.byteOffset + at, 8).getUint32(0, true);
    at += 8;
    const file = join(scratch, "hnswlib.bin");
    writeFileSync(file, bytes.subarray(at));
    const graph = new HnswlibGraph(metric, dimension, file);
    const labelsInGraph = new Set(graph.index.getIdsList());
    graph.adoptLabels(labels, (label) => labelsInGraph.has(label));
    graph.vacant = vacant;
    if (graph.index.getCurrentCount() !== graph.size + vacant) {
      throw new RangeError(`hnswlib's graph holds ${graph.index.getCurrentCount()} points; the labels say ${graph.size} live and ${vacant} vacant`);
    }
    return graph;
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

  heldVector(): undefined {
    return undefined;
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
  constructor(
    dimension: number,
    private readonly graph = new Hnsw({ dimension, distance: manhattanDistance, seed: GRAPH_SEED }),
  ) {
    super();
  }

  override get deadSlots(): number {
    return Math.max(this.labelBound - this.size, this.graph.nodeCount - this.size);
  }

  protected encodeGraph(): Uint8Array[] {
    return [this.graph.encode()];
  }

  static decode(dimension: number, bytes: Uint8Array): OwnGraph {
    const labels = decodeLabels(bytes);
    const hnsw = Hnsw.decode(bytes.subarray(labels.end), manhattanDistance);
    if (hnsw.dimension !== dimension || hnsw.size !== labels.labelOf.size) throw new RangeError(`HNSW of ${hnsw.size} × ${hnsw.dimension} under ${labels.labelOf.size} labels of dimension ${dimension}`);
    const graph = new OwnGraph(dimension, hnsw);
    graph.adoptLabels(labels, (label) => hnsw.vectorOf(label) !== undefined);
    return graph;
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
  heldVector(label: number): Float32Array | undefined {
    return this.graph.vectorOf(label);
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

/** Reads `PartitionGraph.encode`'s bytes back; throws a RangeError on bytes that are not such a graph. */
export function decodeGraph(metric: VectorMetric, dimension: number, bytes: Uint8Array, scratch: string): PartitionGraph {
  return metric === "manhattan" ? OwnGraph.decode(dimension, bytes) : HnswlibGraph.decode(metric, dimension, bytes, scratch);
}
