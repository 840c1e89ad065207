/**
 * The benchmark's datasets: SNAP edge lists from the shared dataset folder beside the repo, read into flat typed
 * arrays before any timing starts, so that file parsing never counts against a load or a query.
 *
 * Both files are read the same way: '#' lines are comments, every other non-empty line is "source target"
 * (space- or tab-separated, LF or CRLF), and each line becomes exactly one directed edge source → target. The
 * Facebook graph is undirected in SNAP's sense, but loading each line once as u → v is the workload the issue
 * asks for.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export interface DatasetSpec {
  /** The folder name under shared/datasets, used as the dataset's name in every table. */
  readonly name: string;
  readonly fileName: string;
  readonly path: string;
  /** Counts from the dataset's PROVENANCE.md, asserted after parsing so a damaged file is caught. */
  readonly nodesExpected: number;
  readonly edgesExpected: number;
}

export interface EdgeList {
  readonly spec: DatasetSpec;
  readonly sources: Int32Array;
  readonly targets: Int32Array;
  /** Distinct SNAP node IDs in ascending order. */
  readonly nodes: Int32Array;
}

function datasetPath(folder: string, fileName: string): string {
  return fileURLToPath(new URL(`../../shared/datasets/${folder}/${fileName}`, import.meta.url));
}

export const DATASETS: readonly DatasetSpec[] = [
  {
    name: "snap-ego-facebook",
    fileName: "facebook_combined.txt",
    path: datasetPath("snap-ego-facebook", "facebook_combined.txt"),
    nodesExpected: 4_039,
    edgesExpected: 88_234,
  },
  {
    name: "snap-wiki-vote",
    fileName: "Wiki-Vote.txt",
    path: datasetPath("snap-wiki-vote", "Wiki-Vote.txt"),
    nodesExpected: 7_115,
    edgesExpected: 103_689,
  },
];

/** The dataset files that do not exist, so the caller can name every one of them before exiting. */
export function missingDatasetFiles(specs: readonly DatasetSpec[]): string[] {
  return specs.filter((spec) => !existsSync(spec.path)).map((spec) => spec.path);
}

const SNAP_ID_MAX = 2 ** 31 - 1;

function parseSnapId(text: string | undefined, spec: DatasetSpec, line: number): number {
  const id = text === undefined || !/^\d+$/.test(text) ? Number.NaN : Number(text);
  if (!Number.isSafeInteger(id) || id > SNAP_ID_MAX) {
    throw new Error(`${spec.path}:${line}: expected two non-negative integer node IDs, found ${JSON.stringify(text)}`);
  }
  return id;
}

export function readEdgeList(spec: DatasetSpec): EdgeList {
  const lines = readFileSync(spec.path, "utf8").split("\n");
  const sources: number[] = [];
  const targets: number[] = [];
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const fields = line.split(/\s+/);
    if (fields.length !== 2) throw new Error(`${spec.path}:${index + 1}: expected "source target", found ${JSON.stringify(line)}`);
    sources.push(parseSnapId(fields[0], spec, index + 1));
    targets.push(parseSnapId(fields[1], spec, index + 1));
  });
  const distinct = new Set<number>([...sources, ...targets]);
  const nodes = Int32Array.from([...distinct].sort((a, b) => a - b));
  if (sources.length !== spec.edgesExpected || nodes.length !== spec.nodesExpected) {
    throw new Error(
      `${spec.path}: expected ${spec.edgesExpected} edges and ${spec.nodesExpected} nodes, parsed ${sources.length} and ${nodes.length}`,
    );
  }
  return { spec, sources: Int32Array.from(sources), targets: Int32Array.from(targets), nodes };
}
