/**
 * The benchmark's results and their printed form: one table per dataset (bulk load, then each query workload,
 * Silk against the raw ceiling, with targets and pass/fail), and the machine it ran on.
 */
import { cpus, platform, release, totalmem } from "node:os";
import { readFileSync } from "node:fs";
import type { Timing } from "./measure.js";
import type { WorkloadName } from "./oracle.js";

/** The targets: traversals at least half the raw ceiling, bulk load at least 200,000 edges/s. */
export const BULK_LOAD_EDGES_PER_SECOND_MIN = 200_000;
export const RATIO_MIN: Readonly<Record<WorkloadName, number | undefined>> = {
  point_get: undefined,
  one_hop: 0.5,
  two_hop_distinct: 0.5,
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
  readonly raw: Timing;
  readonly ratio: number;
  readonly ratioMin: number | undefined;
  readonly pass: boolean | undefined;
  readonly mismatches: number;
}

export interface LoadResult {
  readonly edges: number;
  readonly nodes: number;
  readonly silkEdgesPerSecond: number;
  readonly rawEdgesPerSecond: number;
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

export function formatDataset(result: DatasetResult): string {
  const { load } = result;
  const header = ["workload", "Silk ops/s", "raw ops/s", "Silk/raw", "Silk p50/p99 us", "raw p50/p99 us", "target", "answers", "result"];
  const rows: string[][] = [header];
  rows.push([
    "bulk load (edges/s)",
    integer.format(load.silkEdgesPerSecond),
    integer.format(load.rawEdgesPerSecond),
    (load.silkEdgesPerSecond / load.rawEdgesPerSecond).toFixed(2),
    "-",
    "-",
    `>= ${integer.format(BULK_LOAD_EDGES_PER_SECOND_MIN)} edges/s`,
    "-",
    verdict(load.pass),
  ]);
  for (const workload of result.workloads) {
    rows.push([
      WORKLOAD_TITLES[workload.workload],
      integer.format(workload.silk.opsPerSecond),
      integer.format(workload.raw.opsPerSecond),
      workload.ratio.toFixed(2),
      `${micros(workload.silk.p50Micros)} / ${micros(workload.silk.p99Micros)}`,
      `${micros(workload.raw.p50Micros)} / ${micros(workload.raw.p99Micros)}`,
      workload.ratioMin === undefined ? "-" : `>= ${workload.ratioMin.toFixed(2)} of raw`,
      workload.mismatches === 0 ? `${workload.silk.count} ok` : `${workload.mismatches} WRONG`,
      verdict(workload.pass),
    ]);
  }
  const title =
    `${result.dataset} (${result.file}): ${integer.format(load.nodes)} nodes, ${integer.format(load.edges)} edges; ` +
    `queries start at ${integer.format(result.sampleSize)} sampled nodes`;
  return `${title}\n${table(rows)}`;
}
