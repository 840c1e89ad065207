/**
 * Vector index memory (`make bench-vector-memory`, issue 22 "one copy of each vector in memory"): how much a
 * process grows while it builds the euclidean MNIST index (../shared/datasets/mnist-test-vectors, 9,000 base × 784;
 * M = 16, efConstruction = 200), each side in a child process of its own so that one side's garbage and allocator
 * state cannot count against the other:
 *
 * - raw: hnswlib-node's HierarchicalNSW, each row added as a number[] (what hnswlib-node takes);
 * - family: Silk's VectorIndexes (bench/vectors-family.ts), the rows already stored as records in LMDB before the
 *   first reading, so the growth is the index's: hnswlib's graph and Silk's ID ↔ label maps;
 * - database: a whole disk database (`open`, `V::Digit` with an INDEX on `digit`), the rows loaded by `importBatch`
 *   in batches of 500 and the graph file written: the growth includes LMDB's own pages and buffers, as an
 *   application would see it.
 *
 * A child loads the dataset, collects garbage (node --expose-gc) and reads `process.memoryUsage()`, builds, waits a
 * second (a writer writes its graph file at the next turn of the event loop), collects again and reads again; it
 * prints the growth of RSS and of the heap plus external memory as JSON. The sides run in turns, `--rounds` times
 * (default 2), so the machine's other load falls on all alike; `--sides raw,database` runs only those. Target: the
 * family's RSS growth at most 1.5× raw's.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import hnswlib from "hnswlib-node";
import { HNSW_EF_CONSTRUCTION_DEFAULT, HNSW_M_DEFAULT } from "../node/indexes/hnsw.js";
import { loadSilkModules } from "./silk-modules.js";
import { openFamily } from "./vectors-family.js";
import { MNIST_DIMENSION, MNIST_FOLDER, missingMnistFiles, readMnist } from "./vectors-mnist.js";

const SIDES = ["raw", "family", "database"] as const;
type SideName = (typeof SIDES)[number];
const FAMILY_RSS_RATIO_MAX = 1.5;
const IMPORT_BATCH_ROWS = 500;
const SETTLE_MS = 1_000;
const MB = 1024 * 1024;

interface Growth {
  readonly side: SideName;
  readonly rssMb: number;
  /** RSS split as /proc/self/status tells: anonymous memory (heaps, hnswlib's graph) and file pages (LMDB's map). */
  readonly anonymousMb: number;
  readonly fileMb: number;
  readonly heapAndExternalMb: number;
  readonly seconds: number;
}

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

/** RssAnon and RssFile of /proc/self/status in bytes (0 where the system has no such file). */
function rssParts(): { anonymous: number; file: number } {
  let status = "";
  try {
    status = readFileSync("/proc/self/status", "utf8");
  } catch {
    return { anonymous: 0, file: 0 };
  }
  const kilobytes = (name: string) => 1024 * Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  return { anonymous: kilobytes("RssAnon"), file: kilobytes("RssFile") };
}

function reading(): { rss: number; js: number; anonymous: number; file: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run the side with node --expose-gc");
  gc();
  gc();
  const usage = process.memoryUsage();
  return { rss: usage.rss, js: usage.heapUsed + usage.external, ...rssParts() };
}

/** One side, in this (child) process. */
async function child(side: SideName): Promise<Growth> {
  const data = readMnist();
  const folder = mkdtempSync(join(tmpdir(), "silk-bench-vmem-"));
  try {
    let build: () => Promise<void>;
    let close = async () => {};
    if (side === "raw") {
      build = async () => {
        const index = new hnswlib.HierarchicalNSW("l2", MNIST_DIMENSION);
        index.initIndex({ maxElements: data.base.length, m: HNSW_M_DEFAULT, efConstruction: HNSW_EF_CONSTRUCTION_DEFAULT, randomSeed: 100 });
        data.base.forEach((pixels, row) => index.addPoint(Array.from(pixels), row));
        (globalThis as { keep?: unknown }).keep = index;
      };
    } else if (side === "family") {
      const family = openFamily(join(folder, "family"), data.base);
      build = async () => family.build("euclidean");
    } else {
      const silk = await loadSilkModules(true, () => {});
      const db = await silk.index.open({ storage: { disk: join(folder, "database") }, schema: `V::Digit(dimension: ${MNIST_DIMENSION}, metric: euclidean) { row: I64, INDEX digit: I64 }` });
      build = async () => {
        for (let first = 0; first < data.base.length; first += IMPORT_BATCH_ROWS) {
          const vectors = data.base.slice(first, first + IMPORT_BATCH_ROWS).map((pixels, i) => ({ label: "Digit", vector: pixels, props: { row: first + i, digit: data.baseDigits[first + i] } }));
          await db.importBatch({ nodes: [], edges: [], vectors });
        }
      };
      close = () => db.close();
    }
    const before = reading();
    const started = performance.now();
    await build();
    const seconds = (performance.now() - started) / 1000;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const after = reading();
    await close();
    return {
      side,
      rssMb: (after.rss - before.rss) / MB,
      anonymousMb: (after.anonymous - before.anonymous) / MB,
      fileMb: (after.file - before.file) / MB,
      heapAndExternalMb: (after.js - before.js) / MB,
      seconds,
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const side = argument("--side");
  if (side !== undefined) {
    if (!SIDES.includes(side as SideName)) throw new Error(`--side is one of ${SIDES.join(", ")}`);
    console.log(JSON.stringify(await child(side as SideName)));
    return;
  }
  const missing = missingMnistFiles();
  if (missing.length > 0) {
    console.error(`bench-vector-memory: the MNIST dataset is missing from ${MNIST_FOLDER}: ${missing.join(", ")} (see its PROVENANCE.md)`);
    process.exit(2);
  }
  const rounds = Number(argument("--rounds") ?? 2);
  console.log(`machine: ${cpus()[0]?.model.trim()}, ${cpus().length} cores; Node ${process.version}; load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  console.log(`dataset: MNIST base ${MNIST_FOLDER}, 9,000 × ${MNIST_DIMENSION}, euclidean, M = ${HNSW_M_DEFAULT}, efConstruction = ${HNSW_EF_CONSTRUCTION_DEFAULT}; ${rounds} rounds, each side in its own process`);
  const script = fileURLToPath(import.meta.url);
  const sides = (argument("--sides")?.split(",") ?? SIDES) as SideName[];
  const results: Growth[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const name of sides) {
      const output = execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", script, "--side", name], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
      const growth = JSON.parse(output.trim().split("\n").at(-1)!) as Growth;
      results.push(growth);
      const parts = `anonymous +${growth.anonymousMb.toFixed(1)}, file pages +${growth.fileMb.toFixed(1)}`;
      console.log(`round ${round + 1} ${name.padEnd(8)} RSS +${growth.rssMb.toFixed(1)} MB (${parts}), heap + external +${growth.heapAndExternalMb.toFixed(1)} MB, built in ${growth.seconds.toFixed(1)} s`);
    }
  }
  const median = (name: SideName, of: (growth: Growth) => number = (growth) => growth.rssMb) => {
    const values = results.filter((result) => result.side === name).map(of).sort((a, b) => a - b);
    return values[Math.floor((values.length - 1) / 2)];
  };
  const raw = median("raw");
  for (const name of sides) {
    const anonymous = median(name, (growth) => growth.anonymousMb);
    console.log(`median RSS growth, ${name}: ${median(name).toFixed(1)} MB (${(median(name) / raw).toFixed(2)}× raw); anonymous ${anonymous.toFixed(1)} MB, file pages ${median(name, (growth) => growth.fileMb).toFixed(1)} MB`);
  }
  console.log(`load average after: ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  if (!sides.includes("family")) return;
  const pass = median("family") / raw <= FAMILY_RSS_RATIO_MAX;
  console.log(pass ? `vector memory: family ≤ ${FAMILY_RSS_RATIO_MAX}× raw: PASS` : `vector memory: family over ${FAMILY_RSS_RATIO_MAX}× raw: FAIL`);
  if (!pass) process.exitCode = 1;
}

await main();
