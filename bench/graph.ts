/**
 * Silk's graph benchmark (`make bench`, `npm run bench`): bulk load and four query workloads on two SNAP graphs,
 * through the embedded API, side by side with raw lmdb-js loops over the two leanest adjacency layouts the stack
 * allows (one key per edge; one packed value per node), every answer checked against a plain in-memory oracle. See
 * docs/BENCHMARKS.md.
 *
 * Options: `--json` prints the results as one JSON object on stdout (progress still goes to stderr);
 * `--dataset <name>` runs one dataset only; `--strict` also exits 2 when a performance target is missed; `--source`
 * measures the TypeScript sources through tsx instead of the compiled dist/ (see silk-modules.ts).
 * Exit status: 1 when a dataset file is missing or any answer differs from the oracle.
 */
import { parseArgs } from "node:util";
import { DATASETS, missingDatasetFiles, readEdgeList, type DatasetSpec, type EdgeList } from "./datasets.js";
import type { QueryResult } from "../index.js";
import { LatencyRecorder, sampleWithoutReplacement } from "./measure.js";
import { Oracle, WORKLOAD_NAMES, type WorkloadName } from "./oracle.js";
import { RAW_LAYOUTS, RawSide, type RawLayout } from "./raw-side.js";
import {
  BULK_LOAD_TARGET,
  formatDataset,
  formatMachine,
  machineInfo,
  RATIO_MIN,
  WORKLOAD_TITLES,
  type DatasetResult,
  type LoadResult,
  type WorkloadResult,
} from "./report.js";
import { loadSilkModules, type SilkModules } from "./silk-modules.js";
import { SilkSide } from "./silk-side.js";

/** Edges per importBatch call (and per raw write transaction). */
const BATCH_EDGES = 50_000;
/** Each side loads every dataset this many times into fresh stores; the median rate is reported. */
const LOAD_RUNS = 3;
const SAMPLE_NODES = 2_000;
const SAMPLE_SEED = 20_240_601;
/** Queries run per workload and side; the sample is cycled through. Sized to keep a 2-core run under two minutes. */
const QUERY_COUNTS: Readonly<Record<WorkloadName, number>> = {
  point_get: 40_000,
  one_hop: 40_000,
  two_hop_distinct: 6_000,
  one_hop_filter: 20_000,
};
/** Untimed queries per workload and side before the clock starts, so both are measured after JIT warm-up. */
const WARMUP_QUERIES = 1_000;
/** Silk and raw run each workload in this many alternating chunks (see LatencyRecorder). */
const INTERLEAVED_ROUNDS = 20;
const MISMATCHES_SHOWN_MAX = 5;

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

interface Sides {
  readonly silk: SilkSide;
  readonly raws: Readonly<Record<RawLayout, RawSide>>;
  readonly oracle: Oracle;
  readonly sample: readonly number[];
}

async function runWorkload(workload: WorkloadName, sides: Sides, dataset: string): Promise<WorkloadResult> {
  const { silk, raws, oracle, sample } = sides;
  const trees = sample.map((snapId) => silk.workloadTree(workload, snapId));
  const count = QUERY_COUNTS[workload];
  const silkQuery = (i: number): Promise<QueryResult> => silk.run(trees[i % trees.length]);
  const rawQueriesAt = mapLayouts((layout) => {
    const raw = raws[layout];
    const rawIds = sample.map((snapId) => raw.rawIdOf(snapId));
    const rawQuery = raw.query(workload);
    return (i: number): unknown => rawQuery(rawIds[i % rawIds.length]);
  });
  const warmup = Math.min(WARMUP_QUERIES, count);
  await new LatencyRecorder<QueryResult>(warmup).runAsync(0, warmup, silkQuery);
  for (const layout of RAW_LAYOUTS) new LatencyRecorder<unknown>(warmup).runSync(0, warmup, rawQueriesAt[layout]);
  const silkTimed = new LatencyRecorder<QueryResult>(count);
  const rawTimed = mapLayouts(() => new LatencyRecorder<unknown>(count));
  for (let round = 0; round < INTERLEAVED_ROUNDS; round += 1) {
    const from = Math.floor((round * count) / INTERLEAVED_ROUNDS);
    const to = Math.floor(((round + 1) * count) / INTERLEAVED_ROUNDS);
    await silkTimed.runAsync(from, to, silkQuery);
    for (const layout of RAW_LAYOUTS) rawTimed[layout].runSync(from, to, rawQueriesAt[layout]);
  }
  const expected = sample.map((snapId) => oracle.answer(workload, snapId));
  let mismatches = 0;
  for (let i = 0; i < count; i += 1) {
    const want = expected[i % sample.length];
    const answers: Record<string, string> = { Silk: silk.normalize(workload, silkTimed.answers[i]) };
    for (const layout of RAW_LAYOUTS) answers[`raw ${layout}`] = raws[layout].normalize(workload, rawTimed[layout].answers[i]);
    for (const [side, got] of Object.entries(answers)) {
      if (got === want) continue;
      mismatches += 1;
      if (mismatches <= MISMATCHES_SHOWN_MAX) {
        progress(`MISMATCH ${dataset} ${workload} ${side} from SNAP node ${sample[i % sample.length]}: got ${got.slice(0, 200)}, oracle ${want.slice(0, 200)}`);
      }
    }
  }
  const silkTiming = silkTimed.timing();
  const rawTiming = mapLayouts((layout) => rawTimed[layout].timing());
  const ratio = mapLayouts((layout) => silkTiming.opsPerSecond / rawTiming[layout].opsPerSecond);
  const target = RATIO_MIN[workload];
  const rawText = RAW_LAYOUTS.map((layout) => `raw ${layout} ${Math.round(rawTiming[layout].opsPerSecond)}/s`).join(", ");
  progress(`  ${WORKLOAD_TITLES[workload]}: Silk ${Math.round(silkTiming.opsPerSecond)}/s, ${rawText}`);
  return {
    workload,
    silk: silkTiming,
    raw: rawTiming,
    ratio,
    target,
    pass: target === undefined ? undefined : ratio[target.layout] >= target.min,
    mismatches,
  };
}

function mapLayouts<T>(of: (layout: RawLayout) => T): Record<RawLayout, T> {
  return { per_edge: of("per_edge"), packed: of("packed") };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)];
}

interface Loaded {
  readonly silk: SilkSide;
  readonly raws: Readonly<Record<RawLayout, RawSide>>;
  readonly load: LoadResult;
}

async function closeAll(silk: SilkSide, raws: Readonly<Record<RawLayout, RawSide>>): Promise<void> {
  await Promise.all([silk.close(), ...RAW_LAYOUTS.map((layout) => raws[layout].close())]);
}

/**
 * Loads the graph LOAD_RUNS times into fresh stores, Silk and the raw layouts alternating, and reports the median
 * rate of each; the stores of the last run are kept for the queries.
 */
async function loadAll(edges: EdgeList, modules: SilkModules): Promise<Loaded> {
  const silkRates: number[] = [];
  const rawRates = mapLayouts((): number[] => []);
  for (let run = 0; ; run += 1) {
    const silk = await SilkSide.open(modules);
    const raws = mapLayouts((layout) => RawSide.open(modules, layout));
    try {
      silkRates.push(edges.sources.length / (await silk.load(edges, BATCH_EDGES)));
      for (const layout of RAW_LAYOUTS) rawRates[layout].push(edges.sources.length / raws[layout].load(edges, BATCH_EDGES));
      const silkNodes = await silk.nodeCount();
      if (silkNodes !== edges.nodes.length) throw new Error(`Silk holds ${silkNodes} nodes after the load, the file has ${edges.nodes.length}`);
    } catch (cause) {
      await closeAll(silk, raws);
      throw cause;
    }
    if (run + 1 < LOAD_RUNS) {
      await closeAll(silk, raws);
      continue;
    }
    const silkEdgesPerSecond = median(silkRates);
    const rawEdgesPerSecond = mapLayouts((layout) => median(rawRates[layout]));
    const rawText = RAW_LAYOUTS.map((layout) => `raw ${layout} ${Math.round(rawEdgesPerSecond[layout])}`).join(", ");
    progress(`  bulk load: Silk ${Math.round(silkEdgesPerSecond)} edges/s, ${rawText} (median of ${LOAD_RUNS})`);
    await silk.prepareWorkloads(WORKLOAD_NAMES);
    const load = {
      edges: edges.sources.length,
      nodes: edges.nodes.length,
      silkEdgesPerSecond,
      rawEdgesPerSecond,
      pass: silkEdgesPerSecond >= BULK_LOAD_TARGET.min * rawEdgesPerSecond[BULK_LOAD_TARGET.layout],
    };
    return { silk, raws, load };
  }
}

async function runDataset(spec: DatasetSpec, modules: SilkModules): Promise<DatasetResult> {
  progress(`${spec.name}: reading ${spec.path}`);
  const edges = readEdgeList(spec);
  const oracle = new Oracle(edges);
  const { silk, raws, load } = await loadAll(edges, modules);
  try {
    const sample = sampleWithoutReplacement(edges.nodes, SAMPLE_NODES, SAMPLE_SEED);
    const workloads: WorkloadResult[] = [];
    for (const workload of WORKLOAD_NAMES) workloads.push(await runWorkload(workload, { silk, raws, oracle, sample }, spec.name));
    return { dataset: spec.name, file: spec.fileName, sampleSize: sample.length, load, workloads };
  } finally {
    await closeAll(silk, raws);
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      json: { type: "boolean", default: false },
      strict: { type: "boolean", default: false },
      source: { type: "boolean", default: false },
      dataset: { type: "string" },
    },
  });
  const specs = values.dataset === undefined ? DATASETS : DATASETS.filter((spec) => spec.name === values.dataset);
  if (specs.length === 0) {
    progress(`unknown dataset ${JSON.stringify(values.dataset)}; known: ${DATASETS.map((spec) => spec.name).join(", ")}`);
    return 1;
  }
  const missing = missingDatasetFiles(specs);
  if (missing.length > 0) {
    for (const path of missing) progress(`missing dataset file: ${path}`);
    return 1;
  }
  const modules = await loadSilkModules(values.source, progress);
  const machine = machineInfo(modules.origin);
  if (!values.json) console.log(`${formatMachine(machine)}\ndatasets: ${specs.map((spec) => spec.name).join(", ")}\n`);
  const results: DatasetResult[] = [];
  for (const spec of specs) {
    const result = await runDataset(spec, modules);
    results.push(result);
    if (!values.json) console.log(`${formatDataset(result)}\n`);
  }
  if (values.json) console.log(JSON.stringify({ machine, results }, null, 2));
  const wrong = results.flatMap((result) => result.workloads).reduce((sum, workload) => sum + workload.mismatches, 0);
  const missed = results.some((result) => !result.load.pass || result.workloads.some((workload) => workload.pass === false));
  if (wrong > 0) {
    progress(`${wrong} answers differ from the oracle`);
    return 1;
  }
  if (missed) progress("some performance targets were missed (see the result column)");
  return missed && values.strict ? 2 : 0;
}

process.exitCode = await main();
