/**
 * Persisted vector graphs (`make bench-vector-graphs`, issue 22 item 7): a disk database holding 100,000 generated
 * 128-dimensional vectors under one euclidean vector index (`V::Item`), built through the engine, then, in one run:
 *
 * - open: a read-only open followed by its first search, with the graph files (node/indexes/vector-graph-files.ts: the graph
 *   is read) and with them moved aside (the graph is rebuilt from every record, which every open did before); the
 *   rebuild side is a read-only handle so that it measures the rebuild alone (a writer would also write the file it
 *   lacked). A writer's open with the files is shown too. Target: with files ≤ 0.1 × the rebuild.
 * - follow: a writer and a read-only handle open on the same directory; the writer commits a batch of new vectors
 *   and the reader's first search after it (which replays the commit from the change log; before, it rebuilt the
 *   whole graph) is timed, and checked to find a vector of that batch.
 *
 * `--count N` and `--dimension D` change the size (`--count 10000` for a quick run). The vectors are uniform in
 * [-1, 1): the open's cost depends on their number and size, not their distribution. `--mnist` runs the same on the
 * MNIST base rows instead (bench/vectors-mnist.ts: 9,000 × 784, the index whose open took ~6 s before).
 */
import { mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Database } from "../runtime/embedded.js";
import { seededRandom } from "../protocol/random.js";
import { missingMnistFiles, readMnist } from "./vectors-mnist.js";

const COUNT_DEFAULT = 100_000;
const DIMENSION_DEFAULT = 128;
/** Vectors per write transaction while the database is filled. */
const FILL_BATCH_ROWS = 1_000;
/** The fill prints its progress every this many vectors (it takes minutes). */
const FILL_PROGRESS_ROWS = 10_000;
/** Opens timed per side with graph files (the rebuild side is timed once: it takes long). */
const OPENS_WITH_FILES = 3;
/** Commits the follower is timed after, and the vectors each adds. */
const FOLLOW_COMMITS = 5;
const FOLLOW_BATCH_ROWS = 100;
const K = 10;
const TARGET_RATIO_MAX = 0.1;

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
}

function schema(dimension: number): string {
  return `
V::Item(dimension: ${dimension}, metric: euclidean) { n: I64 }

QUERY AddItems(rows: [{v: [F64], n: I64}]) =>
    FOR {v, n} IN rows {
        AddV<Item>(v, {n: n})
    }
    RETURN "added"
QUERY Near(v: [F64], k: I64) =>
    items <- SearchV<Item>(v, k)
    RETURN items::{n}
`;
}

function vectors(count: number, dimension: number, seed: number): number[][] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => Array.from({ length: dimension }, () => random() * 2 - 1));
}

async function near(db: Database, v: readonly number[]): Promise<number[]> {
  return ((await db.query("Near", { v, k: K })) as { items: { n: number }[] }).items.map((item) => Number(item.n));
}

async function add(db: Database, rows: readonly number[][], first: number): Promise<void> {
  await db.query("AddItems", { rows: rows.map((v, i) => ({ v, n: first + i })) });
}

/** Opens the directory, runs one search, and closes it; the seconds to the search's answer and the answer. */
async function openAndSearch(directory: string, source: string, mode: "writer" | "readonly", query: readonly number[]) {
  const started = performance.now();
  const db = await Database.open({ storage: { disk: directory }, schema: source, mode });
  const opened = performance.now();
  const answer = await near(db, query);
  const answered = performance.now();
  await db.close();
  return { openSeconds: (opened - started) / 1000, totalSeconds: (answered - started) / 1000, answer };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function graphFolders(directory: string): string[] {
  const partitions = join(directory, "partitions");
  return readdirSync(partitions).map((name) => join(partitions, name, "vector-graphs"));
}

function bytesIn(folder: string): number {
  return readdirSync(folder).reduce((sum, name) => sum + statSync(join(folder, name)).size, 0);
}

const seconds = (value: number) => `${value.toFixed(value < 1 ? 3 : 1)} s`;

/** The base vectors and one query: generated, or MNIST's base rows and first query row with `--mnist`. */
function dataset(): { base: number[][]; query: number[]; name: string } {
  if (!process.argv.includes("--mnist")) {
    const count = option("--count", COUNT_DEFAULT);
    const dimension = option("--dimension", DIMENSION_DEFAULT);
    return { base: vectors(count, dimension, 1), query: vectors(1, dimension, 2)[0], name: "generated uniform" };
  }
  const missing = missingMnistFiles();
  if (missing.length > 0) throw new Error(`the MNIST files are missing: ${missing.join(", ")}`);
  const mnist = readMnist();
  return { base: mnist.base.map((row) => Array.from(row)), query: Array.from(mnist.queries[0]), name: "MNIST" };
}

async function main(): Promise<void> {
  const { base, query, name } = dataset();
  const count = base.length;
  const dimension = query.length;
  const source = schema(dimension);
  const directory = mkdtempSync(join(tmpdir(), "silk-bench-graphs-"));
  console.log(`persisted vector graphs: ${name} ${count.toLocaleString("en-US")} × ${dimension} euclidean, ${cpus().length} × ${cpus()[0]?.model ?? "?"}`);
  try {
    let started = performance.now();
    const writer = await Database.open({ storage: { disk: directory }, schema: source });
    for (let first = 0; first < count; first += FILL_BATCH_ROWS) {
      await add(writer, base.slice(first, first + FILL_BATCH_ROWS), first);
      if ((first + FILL_BATCH_ROWS) % FILL_PROGRESS_ROWS === 0) console.log(`  ${(first + FILL_BATCH_ROWS).toLocaleString("en-US")} added, ${seconds((performance.now() - started) / 1000)}`);
    }
    console.log(`fill: ${seconds((performance.now() - started) / 1000)}`);
    started = performance.now();
    await writer.close();
    const folders = graphFolders(directory);
    const fileBytes = folders.reduce((sum, folder) => sum + bytesIn(folder), 0);
    console.log(`writer close (writes what changed since its last graph file): ${seconds((performance.now() - started) / 1000)}; graph files ${(fileBytes / 1e6).toFixed(1)} MB`);

    const withFiles: number[] = [];
    let answer: number[] = [];
    for (let i = 0; i < OPENS_WITH_FILES; i++) {
      const run = await openAndSearch(directory, source, "readonly", query);
      withFiles.push(run.totalSeconds);
      answer = run.answer;
    }
    const writerOpens: number[] = [];
    for (let i = 0; i < OPENS_WITH_FILES; i++) writerOpens.push((await openAndSearch(directory, source, "writer", query)).totalSeconds);
    for (const folder of folders) renameSync(folder, `${folder}.aside`);
    const rebuild = await openAndSearch(directory, source, "readonly", query);
    for (const folder of folders) renameSync(`${folder}.aside`, folder);
    const ratio = median(withFiles) / rebuild.totalSeconds;
    console.log(`open + first search, read-only, graph files: ${seconds(median(withFiles))} (median of ${OPENS_WITH_FILES}; ${withFiles.map(seconds).join(", ")})`);
    console.log(`open + first search, writer, graph files:    ${seconds(median(writerOpens))} (median of ${OPENS_WITH_FILES})`);
    console.log(`open + first search, read-only, rebuild:     ${seconds(rebuild.totalSeconds)} (open ${seconds(rebuild.openSeconds)})`);
    console.log(`ratio files / rebuild: ${ratio.toFixed(3)} (target ≤ ${TARGET_RATIO_MAX}) ${ratio <= TARGET_RATIO_MAX ? "met" : "MISSED"}; same answer: ${JSON.stringify(answer) === JSON.stringify(rebuild.answer)}`);

    const leader = await Database.open({ storage: { disk: directory }, schema: source });
    const follower = await Database.open({ storage: { disk: directory }, schema: source, mode: "readonly" });
    await near(follower, query);
    const follows: number[] = [];
    for (let commit = 0; commit < FOLLOW_COMMITS; commit++) {
      const added = vectors(FOLLOW_BATCH_ROWS, dimension, 100 + commit);
      const first = count + commit * FOLLOW_BATCH_ROWS;
      await add(leader, added, first);
      // A read-only handle in the same process sees a commit one event-loop turn late (docs/ISOLATION.md).
      await new Promise((resolve) => setTimeout(resolve, 1));
      const searchStarted = performance.now();
      const found = await near(follower, added[7]);
      follows.push((performance.now() - searchStarted) / 1000);
      if (found[0] !== first + 7) throw new Error(`the follower did not find the vector committed just before: ${JSON.stringify(found)}`);
    }
    const steadyStarted = performance.now();
    await near(follower, query);
    const steady = (performance.now() - steadyStarted) / 1000;
    console.log(`follower's first search after a commit of ${FOLLOW_BATCH_ROWS} vectors: ${(median(follows) * 1000).toFixed(1)} ms (median of ${FOLLOW_COMMITS}; a search with nothing new ${(steady * 1000).toFixed(1)} ms; a rebuild ${seconds(rebuild.totalSeconds)})`);
    await follower.close();
    await leader.close();
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

await main();
