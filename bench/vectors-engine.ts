/**
 * The end-to-end side of bench/vectors.ts: the MNIST base rows in a whole Silk database (`Database.open` on memory
 * storage, the embedded API of runtime/embedded.ts) under a `V::Digit` type of dimension 784 and the metric measured,
 * loaded by `importBatch` in batches of rows (bulk import of `V::` records), then searched by a QUERY with SearchV. `db.query` prepares each QUERY's tree once, on its first call, and reuses it,
 * so a search pays what an application's call pays: parameter checks, the partition actor, the vector_search step at
 * the index's default ef (`Near`) or at the ef a query names (`SearchV<Digit>(v, k, ef: n)`, Silk's HelixQL
 * extension), the records' reads and the rendering of the result — not HTTP.
 */
import { performance } from "node:perf_hooks";
import type { VectorMetric } from "../protocol/indexes.js";
import type { SilkModules } from "./silk-modules.js";
import { MNIST_DIMENSION, type MnistSplit } from "./vectors-mnist.js";

/** Rows per import batch (one write transaction) while the database is filled. */
const ADD_BATCH_ROWS = 500;

/** The digit type of a metric: MNIST rows as vectors, each with its base row. */
export function digitType(metric: VectorMetric): string {
  return `V::Digit(dimension: ${MNIST_DIMENSION}, metric: ${metric}) { row: I64 }`;
}

/** Adding digits in batches and the k nearest digits' rows: the queries every vector benchmark runs. */
export const DIGIT_QUERIES = `
QUERY AddDigits(rows: [{v: [F64], row: I64}]) =>
    FOR {v, row} IN rows {
        AddV<Digit>(v, {row: row})
    }
    RETURN "added"
QUERY Near(v: [F64], k: I64) =>
    digits <- SearchV<Digit>(v, k)
    RETURN digits::{row}
`;

/** The name of the query searching at a given ef. */
function nearAt(ef: number): string {
  return `NearEf${ef}`;
}

/**
 * The filtered search (issue 22): the k nearest digits among those whose digit is one of `digits`, through the
 * secondary index on `digit` (node/exec/search-candidates.ts).
 */
const AMONG_QUERY = `
QUERY NearAmong(v: [F64], k: I64, digits: [I64]) =>
    hits <- V<Digit>::WHERE(_::{digit}::IS_IN(digits))::SearchV<Digit>(v, k)
    RETURN hits::{row}
`;

/** The digit type with its label indexed, the shared queries, and one `Near` query per ef that names its beam width. */
function schema(metric: VectorMetric, efs: readonly number[]): string {
  const searches = efs.map((ef) => `QUERY ${nearAt(ef)}(v: [F64], k: I64) =>\n    digits <- SearchV<Digit>(v, k, ef: ${ef})\n    RETURN digits::{row}`);
  const type = `V::Digit(dimension: ${MNIST_DIMENSION}, metric: ${metric}) { row: I64, INDEX digit: I64 }`;
  return [type, DIGIT_QUERIES, AMONG_QUERY, ...searches].join("\n");
}

export interface EngineSide {
  readonly seconds: number;
  /** The base rows of the k nearest, nearest first: at the index's default ef, or at `ef` (one of those built for). */
  search(query: readonly number[], k: number, ef?: number): Promise<number[]>;
  /** The base rows of the k nearest among the rows whose digit is one of `digits` (the filtered search). */
  searchAmong(query: readonly number[], k: number, digits: readonly number[]): Promise<number[]>;
  close(): Promise<void>;
}

/**
 * A memory database holding every base row as a Digit vector (properties `row`, its base row, and `digit`, its
 * label, under a secondary index), built in batches, from
 * the build `silk` names (dist/ unless it is stale or `--source` was given: bench/silk-modules.ts), with a search
 * query for each of `efs`.
 */
export async function buildEngine(silk: SilkModules, metric: VectorMetric, data: MnistSplit, efs: readonly number[] = []): Promise<EngineSide> {
  const db = await silk.index.open({ storage: "memory", schema: schema(metric, efs) });
  const started = performance.now();
  for (let first = 0; first < data.base.length; first += ADD_BATCH_ROWS) {
    const vectors = data.base.slice(first, first + ADD_BATCH_ROWS).map((pixels, i) => ({ label: "Digit", vector: pixels, props: { row: first + i, digit: data.baseDigits[first + i] } }));
    await db.importBatch({ nodes: [], edges: [], vectors });
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    seconds,
    search: async (v, k, ef) => ((await db.query(ef === undefined ? "Near" : nearAt(ef), { v, k })) as { digits: { row: number }[] }).digits.map((digit) => Number(digit.row)),
    searchAmong: async (v, k, digits) => ((await db.query("NearAmong", { v, k, digits })) as { hits: { row: number }[] }).hits.map((hit) => Number(hit.row)),
    close: () => db.close(),
  };
}
