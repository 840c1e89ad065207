/**
 * The benchmark's results and their printed form: one table per dataset (bulk load, then each query workload,
 * Silk against the raw ceiling, with targets and pass/fail), and the machine it ran on.
 */
import { cpus, platform, release, totalmem } from "node:os";
import { readFileSync } from "node:fs";
import type { Timing } from "./measure.js";
import type { WorkloadName } from "./oracle.js";
import { RAW_LAYOUTS, type RawLayout } from "./raw-side.js";

/** A target: Silk's throughput at least `min` times one raw layout's. */
export interface RatioTarget {
  readonly layout: RawLayout;
  readonly min: number;
}

/**
 * Issue 22's targets: traversals at least half the packed raw layout; a point get at least half a raw get and unpack
 * (the same in both layouts); bulk load at least half the one-key-per-edge raw load (durable commits on both sides).
 */
export const BULK_LOAD_TARGET: RatioTarget = { layout: "per_edge", min: 0.5 };
export const RATIO_MIN: Readonly<Record<WorkloadName, RatioTarget | undefined>> = {
  point_get: { layout: "per_edge", min: 0.5 },
  one_hop: { layout: "packed", min: 0.5 },
  two_hop_distinct: { layout: "packed", min: 0.5 },
  one_hop_filter: undefined,
};

export const WORKLOAD_TITLES: Readonly<Record<WorkloadName, string>> = {
  point_get: "point get",
  one_hop: "1-hop",
  two_hop_distinct: "2-hop distinct count",
  one_hop_filter: "1-hop + filter",
};

export interface WorkloadResult {
  readonly workload: WorkloadName;
  readonly silk: Timing;
  readonly raw: Readonly<Record<RawLayout, Timing>>;
  /** Silk's throughput over each raw layout's. */
  readonly ratio: Readonly<Record<RawLayout, number>>;
  readonly target: RatioTarget | undefined;
  readonly pass: boolean | undefined;
  readonly mismatches: number;
}

export interface LoadResult {
  readonly edges: number;
  readonly nodes: number;
  readonly silkEdgesPerSecond: number;
  readonly rawEdgesPerSecond: Readonly<Record<RawLayout, number>>;
  readonly pass: boolean;
}

export interface DatasetResult {
  readonly dataset: string;
  readonly file: string;
  readonly sampleSize: number;
  readonly load: LoadResult;
  readonly workloads: WorkloadResult[];
}

export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  readonly lmdb: string;
  /** Which build of Silk was measured: dist/ or the TypeScript sources. */
  readonly silkBuild: string;
  readonly date: string;
}

function lmdbVersion(): string {
  try {
    const text = readFileSync(new URL("../node_modules/lmdb/package.json", import.meta.url), "utf8");
    return (JSON.parse(text) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

export function machineInfo(silkBuild: string): MachineInfo {
  const cpuList = cpus();
  return {
    cpu: cpuList[0]?.model.trim() ?? "unknown",
    cores: cpuList.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${platform()} ${release()}`,
    node: process.version,
    lmdb: lmdbVersion(),
    silkBuild,
    date: new Date().toISOString(),
  };
}

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const micros = (value: number): string => (value < 100 ? value.toFixed(1) : integer.format(value));

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row: readonly string[]): string =>
    row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join("  ");
  return [line(rows[0]), widths.map((width) => "-".repeat(width)).join("  "), ...rows.slice(1).map(line)].join("\n");
}

function verdict(pass: boolean | undefined): string {
  return pass === undefined ? "-" : pass ? "PASS" : "FAIL";
}

export function formatMachine(machine: MachineInfo): string {
  return [
    `machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB RAM, ${machine.os}`,
    `runtime: Node ${machine.node}, lmdb-js ${machine.lmdb}; Silk from ${machine.silkBuild}; run at ${machine.date}`,
  ].join("\n");
}

const LAYOUT_SHORT: Readonly<Record<RawLayout, string>> = { per_edge: "per-edge", packed: "packed" };

function targetText(target: RatioTarget | undefined): string {
  return target === undefined ? "-" : `>= ${target.min.toFixed(2)} of ${LAYOUT_SHORT[target.layout]}`;
}

export function formatDataset(result: DatasetResult): string {
  const { load } = result;
  const header = [
    "workload",
    "Silk ops/s",
    ...RAW_LAYOUTS.map((layout) => `${LAYOUT_SHORT[layout]} ops/s`),
    ...RAW_LAYOUTS.map((layout) => `Silk/${LAYOUT_SHORT[layout]}`),
    "Silk p50/p99 us",
    ...RAW_LAYOUTS.map((layout) => `${LAYOUT_SHORT[layout]} p50/p99 us`),
    "target",
    "answers",
    "result",
  ];
  const rows: string[][] = [header];
  rows.push([
    "bulk load (edges/s)",
    integer.format(load.silkEdgesPerSecond),
    ...RAW_LAYOUTS.map((layout) => integer.format(load.rawEdgesPerSecond[layout])),
    ...RAW_LAYOUTS.map((layout) => (load.silkEdgesPerSecond / load.rawEdgesPerSecond[layout]).toFixed(2)),
    "-",
    ...RAW_LAYOUTS.map(() => "-"),
    targetText(BULK_LOAD_TARGET),
    "-",
    verdict(load.pass),
  ]);
  for (const workload of result.workloads) {
    rows.push([
      WORKLOAD_TITLES[workload.workload],
      integer.format(workload.silk.opsPerSecond),
      ...RAW_LAYOUTS.map((layout) => integer.format(workload.raw[layout].opsPerSecond)),
      ...RAW_LAYOUTS.map((layout) => workload.ratio[layout].toFixed(2)),
      `${micros(workload.silk.p50Micros)} / ${micros(workload.silk.p99Micros)}`,
      ...RAW_LAYOUTS.map((layout) => `${micros(workload.raw[layout].p50Micros)} / ${micros(workload.raw[layout].p99Micros)}`),
      targetText(workload.target),
      workload.mismatches === 0 ? `${workload.silk.count} ok` : `${workload.mismatches} WRONG`,
      verdict(workload.pass),
    ]);
  }
  const title =
    `${result.dataset} (${result.file}): ${integer.format(load.nodes)} nodes, ${integer.format(load.edges)} edges; ` +
    `queries start at ${integer.format(result.sampleSize)} sampled nodes`;
  return `${title}\n${table(rows)}`;
}
