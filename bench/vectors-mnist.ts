/**
 * The MNIST split of bench/vectors.ts, read from ../shared/datasets/mnist-test-vectors (PROVENANCE.md there): the
 * 10,000 × 784 uint8 test images as float32 vectors with their digit labels, base = rows 0..8999 and queries = rows
 * 9000..9999 (the split make_groundtruth.py used), the shipped exact squared-L2 top-100 of each query, and exact
 * top-k by brute force for the other metrics and for filtered searches (ties to the lower row, as the shipped file).
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { distance } from "../node/indexes/vector-math.js";
import type { VectorMetric } from "../protocol/indexes.js";

export const MNIST_FOLDER = fileURLToPath(new URL("../../shared/datasets/mnist-test-vectors/", import.meta.url));
const IMAGES_FILE = "t10k-images-idx3-ubyte.gz";
const LABELS_FILE = "t10k-labels-idx1-ubyte.gz";
const TRUTH_FILE = "groundtruth_q9000-9999_base0-8999_l2_top100.ivecs";
export const MNIST_ROWS = 10_000;
export const MNIST_DIMENSION = 784;
export const MNIST_BASE_ROWS = 9_000;
const TRUTH_DEPTH = 100;

export interface MnistSplit {
  readonly base: readonly Float32Array[];
  readonly baseDigits: Uint8Array;
  readonly queries: readonly Float32Array[];
  /** Per query, the exact squared-L2 top-100 base rows, nearest first. */
  readonly euclideanTruth: readonly Int32Array[];
}

export function missingMnistFiles(): string[] {
  return [IMAGES_FILE, LABELS_FILE, TRUTH_FILE].filter((name) => !existsSync(MNIST_FOLDER + name));
}

export function readMnist(): MnistSplit {
  const images = gunzipSync(readFileSync(MNIST_FOLDER + IMAGES_FILE));
  const labels = gunzipSync(readFileSync(MNIST_FOLDER + LABELS_FILE));
  if (images.readInt32BE(0) !== 2051 || images.readInt32BE(4) !== MNIST_ROWS || images.readInt32BE(8) * images.readInt32BE(12) !== MNIST_DIMENSION) {
    throw new Error(`${IMAGES_FILE} is not the 10,000 × 28 × 28 idx3 file PROVENANCE.md describes`);
  }
  if (labels.readInt32BE(0) !== 2049 || labels.readInt32BE(4) !== MNIST_ROWS) throw new Error(`${LABELS_FILE} is not the 10,000-label idx1 file`);
  const rows: Float32Array[] = [];
  for (let row = 0; row < MNIST_ROWS; row++) rows.push(Float32Array.from(images.subarray(16 + row * MNIST_DIMENSION, 16 + (row + 1) * MNIST_DIMENSION)));
  const truthBytes = readFileSync(MNIST_FOLDER + TRUTH_FILE);
  const euclideanTruth: Int32Array[] = [];
  const stride = 4 * (TRUTH_DEPTH + 1);
  for (let query = 0; query < MNIST_ROWS - MNIST_BASE_ROWS; query++) {
    if (truthBytes.readInt32LE(query * stride) !== TRUTH_DEPTH) throw new Error(`${TRUTH_FILE}: query ${query} does not list ${TRUTH_DEPTH} neighbours`);
    euclideanTruth.push(Int32Array.from({ length: TRUTH_DEPTH }, (_, i) => truthBytes.readInt32LE(query * stride + 4 * (i + 1))));
  }
  return {
    base: rows.slice(0, MNIST_BASE_ROWS),
    baseDigits: labels.subarray(8, 8 + MNIST_BASE_ROWS),
    queries: rows.slice(MNIST_BASE_ROWS),
    euclideanTruth,
  };
}

/** The exact k nearest base rows under a metric among those `accept` takes, nearest first (ties: lower row). */
export function exactTop(metric: VectorMetric, base: readonly Float32Array[], query: Float32Array, k: number, accept?: (row: number) => boolean): number[] {
  const rows: number[] = [];
  const distances: number[] = [];
  for (let row = 0; row < base.length; row++) {
    if (accept !== undefined && !accept(row)) continue;
    const d = distance(metric, query, base[row]);
    if (rows.length < k) {
      rows.push(row);
      distances.push(d);
    } else if (d < distances[k - 1]) {
      rows[k - 1] = row;
      distances[k - 1] = d;
    } else continue;
    for (let i = rows.length - 1; i > 0 && distances[i - 1] > distances[i]; i--) {
      [rows[i - 1], rows[i]] = [rows[i], rows[i - 1]];
      [distances[i - 1], distances[i]] = [distances[i], distances[i - 1]];
    }
  }
  return rows;
}

/** The fraction of the true top-k found. */
export function recallAt(found: readonly number[], truth: ArrayLike<number>, k: number): number {
  const wanted = new Set<number>();
  for (let i = 0; i < k; i++) wanted.add(truth[i]);
  let hits = 0;
  for (const row of found) if (wanted.has(row)) hits++;
  return hits / k;
}
