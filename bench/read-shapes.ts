/**
 * Read shapes beside the whole-record reads (`npx tsx bench/read-shapes.ts [--dataset name] [--source]`): one-field
 * projections, filters, ordering and paging, dedup and aggregates, each next to the whole-record read of the same
 * records, on the graph benchmark's Silk side (bench/silk-side.ts, its schema and load). Issue 22 asks that filtered
 * 1-hop and one-field projections run at 0.8x or more of the whole-record read: every plan runs on the executor
 * synchronously where nothing must wait (node/exec/ops.ts), so a projection or a filter pays for its own work only.
 * Shapes run in interleaved rounds, so the machine's other load falls on all alike; the ratio column is what to read.
 */
import { parseArgs } from "node:util";
import { DATASETS, readEdgeList } from "./datasets.js";
import { LatencyRecorder, sampleWithoutReplacement } from "./measure.js";
import { SCORE_THRESHOLD } from "./oracle.js";
import { EDGE_LABEL, SilkSide } from "./silk-side.js";
import { loadSilkModules } from "./silk-modules.js";
import type { PreparedQuery } from "../index.js";

const SAMPLE_NODES = 2_000;
const SAMPLE_SEED = 20_240_601;
const QUERIES = 20_000;
const WARMUP = 2_000;
const ROUNDS = 20;

const start = { nodes: { reference: { param: "start" } } };
const out = { out: { input: start, label: EDGE_LABEL } };
const aboveThreshold = { gt: { left: { property: "score" }, right: { constant: { i64: SCORE_THRESHOLD } } } };

/** [name, tree, the name of the whole-record shape it is compared with]. */
const SHAPES: readonly (readonly [string, unknown, string | undefined])[] = [
  ["point get: whole record", { value_map: { input: start } }, undefined],
  ["point get: one field (values)", { values: { input: start, properties: ["score"] } }, "point get: whole record"],
  ["point get: one field (value_map)", { value_map: { input: start, properties: ["score"] } }, "point get: whole record"],
  ["1-hop: whole records", { value_map: { input: out } }, undefined],
  ["1-hop: one field (values)", { values: { input: out, properties: ["score"] } }, "1-hop: whole records"],
  ["1-hop: ids", { id: { input: out } }, "1-hop: whole records"],
  ["1-hop + filter: ids", { id: { input: { where: { input: out, predicate: aboveThreshold } } } }, "1-hop: whole records"],
  ["1-hop + filter: whole records", { value_map: { input: { where: { input: out, predicate: aboveThreshold } } } }, "1-hop: whole records"],
  ["1-hop: order, range(0, 10), ids", { id: { input: { range: { input: { order_by: { input: out, property: "score", order: "desc" } }, start: { literal: 0 }, end: { literal: 10 } } } } }, "1-hop: whole records"],
  ["1-hop: dedup of one field", { dedup: { input: { values: { input: out, properties: ["score"] } } } }, "1-hop: whole records"],
  ["1-hop: sum of one field", { aggregate: { input: out, fn: "sum", property: "score" } }, "1-hop: whole records"],
];

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { dataset: { type: "string", default: "snap-ego-facebook" }, source: { type: "boolean", default: false } } });
  const spec = DATASETS.find((candidate) => candidate.name === values.dataset);
  if (spec === undefined) throw new Error(`unknown dataset ${values.dataset}`);
  const modules = await loadSilkModules(values.source, (message) => process.stderr.write(`${message}\n`));
  const edges = readEdgeList(spec);
  const silk = await SilkSide.open(modules);
  try {
    await silk.load(edges, 50_000);
    const sample = sampleWithoutReplacement(edges.nodes, SAMPLE_NODES, SAMPLE_SEED).map((snapId) => ({ start: silk.silkIdOf(snapId).toString() }));
    const prepared: PreparedQuery[] = [];
    for (const [, tree] of SHAPES) prepared.push(await silk.prepareRead(tree));
    const recorders = SHAPES.map(() => new LatencyRecorder<unknown>(QUERIES));
    for (const query of prepared) await new LatencyRecorder<unknown>(WARMUP).runAsync(0, WARMUP, (i) => query.run(sample[i % sample.length]));
    for (let round = 0; round < ROUNDS; round += 1) {
      const from = Math.floor((round * QUERIES) / ROUNDS);
      const to = Math.floor(((round + 1) * QUERIES) / ROUNDS);
      for (const [i, query] of prepared.entries()) await recorders[i].runAsync(from, to, (j) => query.run(sample[j % sample.length]));
    }
    const timings = new Map(SHAPES.map(([name], i) => [name, recorders[i].timing()]));
    process.stdout.write(`${spec.name}: ${modules.origin}; ${QUERIES} queries per shape from ${SAMPLE_NODES} sampled nodes\n`);
    process.stdout.write(`${"shape".padEnd(36)}${"ops/s".padStart(10)}${"p50 us".padStart(9)}${"p99 us".padStart(9)}  vs whole records\n`);
    for (const [name, , base] of SHAPES) {
      const timing = timings.get(name)!;
      const ratio = base === undefined ? "" : (timing.opsPerSecond / timings.get(base)!.opsPerSecond).toFixed(2);
      process.stdout.write(`${name.padEnd(36)}${Math.round(timing.opsPerSecond).toLocaleString("en-US").padStart(10)}${timing.p50Micros.toFixed(1).padStart(9)}${timing.p99Micros.toFixed(1).padStart(9)}  ${ratio}\n`);
    }
  } finally {
    await silk.close();
  }
}

await main();
