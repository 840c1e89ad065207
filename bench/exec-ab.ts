/**
 * Two builds of Silk side by side in one process (`npx tsx bench/exec-ab.ts [--base REV] [--dataset name]`): a
 * prepared HelixQL point get and 1-hop through `db.query` and `db.queryJson` on a disk database, this tree's dist/
 * against the build of commit REV (default 2df458e, main just before the one executor replaced
 * node/actor/fast-read.ts: issue 15's "no slower" compares with it). REV is exported with `git archive` into a folder
 * under the system's temp directory and compiled there once (`tsc`, the parser generated); later runs reuse it.
 * `--base-dist DIR --head-label TEXT` take a base build made elsewhere and name this tree, for a machine that has
 * the files but not the repository's history.
 *
 * Both builds load the same dataset (bench/datasets.ts) into a database of their own, with the same project, and run
 * the same start nodes. Each round runs every shape on both sides, in alternating order (base first in even rounds,
 * this tree first in odd ones), so the machine's other load and either side's garbage fall on both alike; the
 * ratio of the two sides within a round is what to read, and its median over the rounds. Each round is timed both in
 * elapsed time and in the process's CPU time: on a machine shared with other work, a run descheduled for a while
 * counts in the first and not in the second. Every answer is checked against the other build's answer for the same
 * start node before any clock starts.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtempSync } from "node:fs";
import { tmpdir, loadavg, cpus } from "node:os";
import { join } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { DATASETS, readEdgeList } from "./datasets.js";
import { nowMillis, sampleWithoutReplacement } from "./measure.js";
import { importSnapGraph, SILK_SCHEMA } from "./silk-side.js";
import { staleBuildFile } from "./silk-modules.js";
import type * as SilkIndex from "../index.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const SAMPLE_NODES = 2_000;
const SAMPLE_SEED = 20_240_601;
const RUNS_PER_ROUND = 20_000;
const WARMUP_RUNS = 20_000;

const PROJECT = `${SILK_SCHEMA}
QUERY Point(id: ID) =>
    user <- N<User>(id)
    RETURN user

QUERY Hop(id: ID) =>
    ids <- N<User>(id)::Out<Follows>::ID
    RETURN ids
`;

type Silk = typeof SilkIndex;
type Database = SilkIndex.Database;

interface Shape {
  readonly name: string;
  readonly run: (db: Database, parameters: { id: string }) => Promise<unknown>;
}

const SHAPES: readonly Shape[] = [
  { name: "point get, query", run: (db, parameters) => db.query("Point", parameters) },
  { name: "point get, queryJson", run: (db, parameters) => db.queryJson("Point", parameters) },
  { name: "1-hop ids, query", run: (db, parameters) => db.query("Hop", parameters) },
  { name: "1-hop ids, queryJson", run: (db, parameters) => db.queryJson("Hop", parameters) },
];

interface Side {
  readonly label: string;
  readonly db: Database;
  readonly directory: string;
  readonly sample: { id: string }[];
}

function run(command: string, args: readonly string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
}

/** The compiled build of `revision`, made once under the temp directory; answers its dist/ folder and its commit. */
function buildOf(revision: string): { dist: string; commit: string } {
  const commit = run("git", ["rev-parse", "--verify", `${revision}^{commit}`], REPO_ROOT).trim();
  const folder = join(tmpdir(), `silk-build-${commit.slice(0, 12)}`);
  const built = join(folder, "dist", ".built");
  if (!existsSync(built)) {
    process.stderr.write(`building ${commit.slice(0, 12)} into ${folder} (once)\n`);
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { recursive: true });
    const archive = execFileSync("git", ["archive", "--format=tar", commit], { cwd: REPO_ROOT, maxBuffer: 1 << 30 });
    execFileSync("tar", ["-x", "-C", folder], { input: archive });
    symlinkSync(realpathSync(join(REPO_ROOT, "node_modules")), join(folder, "node_modules"));
    run("node", ["scripts/build-parser.mjs"], folder);
    run(join(REPO_ROOT, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"], folder);
    writeFileSync(built, "");
  }
  return { dist: join(folder, "dist"), commit };
}

async function openSide(silk: Silk, label: string, edges: ReturnType<typeof readEdgeList>, snapSample: readonly number[]): Promise<Side> {
  const directory = mkdtempSync(join(tmpdir(), "silk-ab-"));
  const db = await silk.open({ storage: { disk: directory }, schema: PROJECT });
  const silkIdOfSnap = new Map<number, bigint>();
  await importSnapGraph(db, edges, 50_000, silkIdOfSnap);
  const sample = snapSample.map((snapId) => ({ id: String(silkIdOfSnap.get(snapId)) }));
  return { label, db, directory, sample };
}

interface Micros {
  /** Elapsed time per run. */
  readonly wall: number;
  /** The process's CPU time (user and system, every thread) per run: what the machine's other load disturbs least. */
  readonly cpu: number;
}

/** Microseconds per run of `shape` over `count` runs, each awaited before the next starts. */
async function timeRuns(side: Side, shape: Shape, first: number, count: number): Promise<Micros> {
  const { db, sample } = side;
  const started = nowMillis();
  const cpuBefore = process.cpuUsage();
  for (let i = first; i < first + count; i += 1) await shape.run(db, sample[i % sample.length]);
  const cpu = process.cpuUsage(cpuBefore);
  return { wall: ((nowMillis() - started) * 1_000) / count, cpu: (cpu.user + cpu.system) / count };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      base: { type: "string", default: "2df458e" },
      "base-dist": { type: "string" },
      "head-label": { type: "string" },
      dataset: { type: "string", default: "snap-ego-facebook" },
      rounds: { type: "string", default: "10" },
    },
  });
  const spec = DATASETS.find((candidate) => candidate.name === values.dataset);
  if (spec === undefined) throw new Error(`unknown dataset ${values.dataset}`);
  const stale = staleBuildFile();
  if (stale !== undefined) throw new Error(`dist/ is missing or older than ${stale}: run \`npm run build\` first`);
  const rounds = Number(values.rounds);
  // --base-dist and --head-label: a build of --base made elsewhere, on a machine without the repository's history.
  const base = values["base-dist"] === undefined ? buildOf(values.base) : { dist: values["base-dist"], commit: values.base };
  const head = values["head-label"] ?? run("git", ["rev-parse", "--short=12", "HEAD"], REPO_ROOT).trim();
  const dirty = values["head-label"] === undefined && run("git", ["status", "--porcelain", "--untracked-files=no"], REPO_ROOT).trim() !== "";
  const baseSilk = (await import(pathToFileURL(join(base.dist, "index.js")).href)) as Silk;
  const thisSilk = (await import(pathToFileURL(join(REPO_ROOT, "dist", "index.js")).href)) as Silk;
  const edges = readEdgeList(spec);
  const snapSample = sampleWithoutReplacement(edges.nodes, SAMPLE_NODES, SAMPLE_SEED);
  const sides = [await openSide(baseSilk, `base ${base.commit.slice(0, 12)}`, edges, snapSample), await openSide(thisSilk, `this ${head}${dirty ? "+changes" : ""}`, edges, snapSample)];
  try {
    for (const shape of SHAPES) {
      for (let i = 0; i < SAMPLE_NODES; i += 1) {
        const [a, b] = await Promise.all(sides.map((side) => shape.run(side.db, side.sample[i])));
        // The two databases hand out the same IDs (same load, same order), so the answers must match as text.
        if (JSON.stringify(a, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value)) !== JSON.stringify(b, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value))) {
          throw new Error(`${shape.name}: the builds answer differently for start ${sides[0].sample[i].id}`);
        }
      }
      for (const side of sides) await timeRuns(side, shape, 0, WARMUP_RUNS);
    }
    const micros = SHAPES.map(() => sides.map((): Micros[] => []));
    const loads: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      loads.push(loadavg()[0]);
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const [s, shape] of SHAPES.entries()) {
        for (const sideIndex of order) micros[s][sideIndex].push(await timeRuns(sides[sideIndex], shape, round * RUNS_PER_ROUND, RUNS_PER_ROUND));
      }
    }
    process.stdout.write(`${spec.name}; ${cpus()[0]?.model ?? "unknown CPU"}, ${cpus().length} cores, Node ${process.version}; load average (1 min) ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}\n`);
    process.stdout.write(`${sides[0].label} vs ${sides[1].label}; ${rounds} rounds of ${RUNS_PER_ROUND} runs per shape and side (alternating order)\n`);
    for (const measure of ["cpu", "wall"] as const) {
      process.stdout.write(`\n${measure === "cpu" ? "CPU" : "elapsed"} µs per run\n`);
      process.stdout.write(`${"shape".padEnd(24)}${"base median".padStart(12)}${"this median".padStart(12)}${"base best".padStart(10)}${"this best".padStart(10)}  this/base: median of the rounds' ratios (min-max)\n`);
      for (const [s, shape] of SHAPES.entries()) {
        const [baseTimes, thisTimes] = micros[s].map((times) => times.map((time) => time[measure]));
        const ratios = baseTimes.map((baseTime, round) => thisTimes[round] / baseTime);
        process.stdout.write(
          `${shape.name.padEnd(24)}${median(baseTimes).toFixed(2).padStart(12)}${median(thisTimes).toFixed(2).padStart(12)}${Math.min(...baseTimes).toFixed(2).padStart(10)}${Math.min(...thisTimes).toFixed(2).padStart(10)}  ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})\n`,
        );
      }
    }
  } finally {
    for (const side of sides) {
      await side.db.close();
      rmSync(side.directory, { recursive: true, force: true });
    }
  }
}

await main();
