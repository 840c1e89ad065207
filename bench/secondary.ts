/**
 * Secondary-index benchmark (`make bench-secondary`): MovieLens ml-latest-small's ratings.csv (100,836 ratings)
 * loaded as `N::Rating` nodes through `db.importBatch`, then in one run the same lookups through the indexes and on a
 * database without them (a label scan plus filter), answers checked equal:
 *
 * - equality: `movieId = x` for movies drawn from the data;
 * - range: `timestamp` within a 30-day window drawn from the data;
 * - range with a limit: `rating >= 4.5`, first 20;
 * - the equality as a HelixQL QUERY, `N<Rating>::WHERE(_::{movieId}::EQ(m))`, through `db.query`.
 *
 * Also the bulk-load rate with and without index maintenance, and the build rate of the three indexes over the
 * loaded data (a disk database loaded without the indexes, reopened with them). `--source` measures the TypeScript
 * sources instead of dist/.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import type { Database } from "../index.js";
import { seededRandom } from "./measure.js";
import { formatMachine, machineInfo } from "./report.js";
import { loadSilkModules } from "./silk-modules.js";

const RATINGS_PATH = fileURLToPath(new URL("../../shared/datasets/movielens-ml-latest-small/ratings.csv", import.meta.url));
const RATINGS_EXPECTED = 100_836;
const IMPORT_BATCH_NODES = 10_000;
const INDEXED_QUERIES = 2_000;
const SCAN_QUERIES = 20;
/** A workload stops after this long even if it has not run all its queries (a scan takes about half a second). */
const WORKLOAD_SECONDS_MAX = 5;
const WINDOW_SECONDS = 30 * 24 * 3600;
const TOP_RATING_LIMIT = 20;
const SEED = 4;

/** The same lookup as a HelixQL QUERY: its WHERE reads the index when the field has one (docs/INDEXES.md). */
const QUERIES = "\nQUERY RatingsOfMovie(m: I64) => r <- N<Rating>::WHERE(_::{movieId}::EQ(m))::ID RETURN r";
const INDEXED_SCHEMA = `N::Rating { INDEX movieId: I64, INDEX rating: F64, INDEX timestamp: I64, userId: I64 }${QUERIES}`;
const PLAIN_SCHEMA = `N::Rating { movieId: I64, rating: F64, timestamp: I64, userId: I64 }${QUERIES}`;

interface Rating {
  readonly userId: number;
  readonly movieId: number;
  readonly rating: number;
  readonly timestamp: number;
}

function readRatings(): Rating[] {
  const lines = readFileSync(RATINGS_PATH, "utf8").split(/\r?\n/).slice(1).filter((line) => line !== "");
  const ratings = lines.map((line) => {
    const [userId, movieId, rating, timestamp] = line.split(",").map(Number);
    return { userId, movieId, rating, timestamp };
  });
  if (ratings.length !== RATINGS_EXPECTED) throw new Error(`ratings.csv has ${ratings.length} rows, expected ${RATINGS_EXPECTED}`);
  return ratings;
}

async function load(db: Database, ratings: readonly Rating[]): Promise<number> {
  const started = performance.now();
  for (let at = 0; at < ratings.length; at += IMPORT_BATCH_NODES) {
    const nodes = ratings.slice(at, at + IMPORT_BATCH_NODES).map((props) => ({ label: "Rating", props: { ...props } }));
    await db.importBatch({ nodes, edges: [] });
  }
  return ratings.length / ((performance.now() - started) / 1_000);
}

const label = { eq: { left: { property: "$label" }, right: { constant: { string: "Rating" } } } };
const tree = (predicate: unknown, limit?: number): unknown => {
  const source = { nodes_where: { predicate: { and: { predicates: [label, predicate] } } } };
  const limited = limit === undefined ? source : { limit: { input: source, count: { literal: limit } } };
  return { request_type: "read", query: { read: { entries: [{ query: { name: "r", root: { id: { input: limited } } } }], returns: ["r"] } } };
};

interface Workload {
  readonly name: string;
  /** An operation tree, prepared once; or `query`, the name of a HelixQL QUERY run through db.query. */
  readonly tree?: unknown;
  readonly query?: string;
  readonly parameters: (i: number) => Record<string, unknown>;
}

function workloads(ratings: readonly Rating[]): Workload[] {
  const random = seededRandom(SEED);
  const movies = Array.from({ length: INDEXED_QUERIES }, () => ratings[Math.floor(random() * ratings.length)].movieId);
  const starts = Array.from({ length: INDEXED_QUERIES }, () => ratings[Math.floor(random() * ratings.length)].timestamp);
  return [
    { name: "movieId = x", tree: tree({ eq: { left: { property: "movieId" }, right: { param: "m" } } }), parameters: (i) => ({ m: movies[i] }) },
    {
      name: "timestamp in a 30-day window",
      tree: tree({ between: { value: { property: "timestamp" }, min: { param: "from" }, max: { param: "to" } } }),
      parameters: (i) => ({ from: starts[i], to: starts[i] + WINDOW_SECONDS }),
    },
    { name: `rating >= 4.5, first ${TOP_RATING_LIMIT}`, tree: tree({ gte: { left: { property: "rating" }, right: { constant: { f64: 4.5 } } } }, TOP_RATING_LIMIT), parameters: () => ({}) },
    { name: "HelixQL WHERE movieId = x", query: "RatingsOfMovie", parameters: (i) => ({ m: movies[i] }) },
  ];
}

async function measure(db: Database, workload: Workload, count: number): Promise<{ perSecond: number; answers: unknown[] }> {
  const query = workload.query;
  const prepared = query === undefined ? await db.prepare(workload.tree) : undefined;
  const run = async (i: number): Promise<unknown> => (query !== undefined ? ((await db.query(query, workload.parameters(i))) as { r: unknown }).r : (await prepared!.run(workload.parameters(i))).r);
  const answers: unknown[] = [];
  const started = performance.now();
  const deadline = started + WORKLOAD_SECONDS_MAX * 1_000;
  for (let i = 0; i < count && (i < SCAN_QUERIES || performance.now() < deadline); i += 1) answers.push(await run(i));
  const perSecond = answers.length / ((performance.now() - started) / 1_000);
  await prepared?.release();
  return { perSecond, answers };
}

async function buildRate(silk: typeof import("../index.js"), ratings: readonly Rating[]): Promise<number> {
  const directory = mkdtempSync(join(tmpdir(), "silk-bench-secondary-"));
  try {
    const plain = await silk.open({ storage: { disk: directory }, schema: PLAIN_SCHEMA });
    await load(plain, ratings);
    await plain.close();
    const started = performance.now();
    const indexed = await silk.open({ storage: { disk: directory }, schema: INDEXED_SCHEMA });
    while (indexed.indexes().some((index) => index.state === "constructing" || index.state === "validating")) await new Promise((resume) => setTimeout(resume, 1));
    const seconds = (performance.now() - started) / 1_000;
    const entities = indexed.indexes().reduce((sum, index) => sum + index.entities, 0);
    await indexed.close();
    return entities / seconds;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

const format = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

async function main(): Promise<void> {
  const modules = await loadSilkModules(process.argv.includes("--source"), (message) => console.log(`notice: ${message}`));
  const silk = modules.index;
  const ratings = readRatings();
  console.log(`dataset: movielens-ml-latest-small ratings.csv, ${format.format(ratings.length)} ratings as N::Rating nodes`);
  console.log(formatMachine(machineInfo(modules.origin)));
  const indexed = await silk.open({ storage: "memory", schema: INDEXED_SCHEMA });
  const plain = await silk.open({ storage: "memory", schema: PLAIN_SCHEMA });
  const loadIndexed = await load(indexed, ratings);
  const loadPlain = await load(plain, ratings);
  console.log(`\nbulk load (memory): ${format.format(loadIndexed)} nodes/s with 3 indexes, ${format.format(loadPlain)} nodes/s without\n`);
  console.log("lookup                          indexed q/s   scan q/s     ratio   answers");
  for (const workload of workloads(ratings)) {
    const viaIndex = await measure(indexed, workload, INDEXED_QUERIES);
    const viaScan = await measure(plain, workload, SCAN_QUERIES);
    const equal = JSON.stringify(viaIndex.answers.slice(0, SCAN_QUERIES)) === JSON.stringify(viaScan.answers);
    const ratio = viaIndex.perSecond / viaScan.perSecond;
    console.log(
      `${workload.name.padEnd(30)}  ${format.format(viaIndex.perSecond).padStart(11)}  ${format.format(viaScan.perSecond).padStart(9)}  ${ratio.toFixed(0).padStart(7)}x   ${equal ? "equal" : "DIFFER"}`,
    );
    if (!equal) process.exitCode = 1;
  }
  await indexed.close();
  await plain.close();
  console.log(`\nindex build over the loaded data (disk, 3 indexes): ${format.format(await buildRate(silk, ratings))} entities/s`);
}

await main();
