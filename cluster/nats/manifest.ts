/**
 * What a cluster is, on disk: DIR/cluster.json (written by `silk cluster up`, read by every process of the cluster)
 * and where each process keeps its files under DIR.
 *
 * - DIR/cluster.json: the cluster's name, its NATS client URLs, the partition count, replicas per partition, the
 *   project directory (its .hx files are the schema and queries), the HTTP port of the serve process, and optionally
 *   `snapshots` (everyEntries, everyBytes, keep: when partition leaders snapshot and truncate their logs), and
 *   optionally `stores` (replicas moved to another directory by `silk cluster replace-replica`).
 * - DIR/partitions/p<i>/r<r>/: replica r of partition i's LMDB environment (each replica its own copy), unless
 *   `stores` names another directory for it; <store>-scratch/ beside it: where that replica copies its store while
 *   it takes a snapshot.
 * - DIR/logs/<process>.log: pino logs (p<i>-r<r>.log, serve.log); DIR/nats/: the NATS servers' stores and logs.
 * - DIR/processes.json: the process IDs `silk cluster up` started and its supervisor restarted (what `silk cluster
 *   down` stops), the restarts counted, and the processes held down (left dead by the supervisor); every change to
 *   it is a read-modify-write under DIR/processes.lock (the supervisor, `down`, `add-partition`, `replace-replica`
 *   and the chaos harness all change it).
 *
 * Invariant: a manifest read back is checked field by field; the partition count and ranges come from the same
 * PartitionMap class as the embedded runtime, so every process agrees on which partition owns an ID.
 */
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { SilkError } from "../../protocol/errors.js";
import { withFileLock, writeFileAtomic } from "../../platform/durable-files.js";
import { PartitionMap } from "../partition-map.js";
import { checkClusterName } from "./subjects.js";
import { checkSnapshotPolicy, type SnapshotPolicy } from "./snapshots.js";

export const CLUSTER_MANIFEST_FILE = "cluster.json";
export const CLUSTER_PROCESSES_FILE = "processes.json";
/** How long a change to processes.json waits for another process's change (each is a few milliseconds). */
export const CLUSTER_PROCESSES_LOCK_WAIT_MS = 10_000;
export const CLUSTER_FORMAT = 1;
export const REPLICAS_MAX = 7;

export interface ClusterManifest {
  readonly format: number;
  readonly name: string;
  readonly nats: readonly string[];
  readonly partitions: number;
  readonly replicas: number;
  /** Absolute path of the project directory. */
  readonly project: string;
  readonly port: number;
  /** When leaders snapshot and truncate their logs (cluster/nats/snapshots.ts); absent: DEFAULT_SNAPSHOT_POLICY. */
  readonly snapshots?: SnapshotPolicy;
  /** Replicas whose store is not DIR/partitions/p<i>/r<r>: `p<i>-r<r>` → an absolute directory. */
  readonly stores?: Readonly<Record<string, string>>;
  /**
   * "one" (absent): one `silk serve --cluster` serves (a second is refused); "many": any number serve at once
   * (docs/ISOLATION.md, "Several coordinators"; runtime/remote.ts `coordinators`).
   */
  readonly coordinators?: "one" | "many";
}

/** The processes of a running development cluster, by role (names: `n1`.., `p0-r1`.., `serve`). */
export interface ClusterProcesses {
  readonly nats: Readonly<Record<string, number>>;
  readonly replicas: Readonly<Record<string, number>>;
  readonly serve?: number;
  /** The `silk cluster supervise` process that restarts the others (absent before `up` finished). */
  readonly supervisor?: number;
  /** How many times the supervisor restarted each process, by name (absent: never). */
  readonly restarts?: Readonly<Record<string, number>>;
  /** Processes the supervisor leaves alone while named here (a chaos fault holding one down, a replacement). */
  readonly held?: readonly string[];
}

/** Checks a manifest's fields (also one just built), so a bad one is refused before any process starts. */
export function checkClusterManifest(value: unknown, source: string): ClusterManifest {
  const bad = (why: string): never => {
    throw new SilkError("invalid_option", `${source}: ${why}`);
  };
  if (typeof value !== "object" || value === null) return bad("not a JSON object");
  const manifest = value as Partial<ClusterManifest>;
  if (manifest.format !== CLUSTER_FORMAT) bad(`format ${String(manifest.format)}; this Silk reads ${CLUSTER_FORMAT}`);
  if (typeof manifest.name !== "string") bad("name must be a string");
  checkClusterName(manifest.name!);
  if (!Array.isArray(manifest.nats) || manifest.nats.length === 0 || !manifest.nats.every((url) => typeof url === "string" && /^nats:\/\//.test(url))) {
    bad("nats must be a non-empty list of nats:// URLs");
  }
  if (typeof manifest.partitions !== "number") bad("partitions must be a number");
  new PartitionMap(manifest.partitions!); // 1 to PARTITIONS_MAX
  if (!Number.isInteger(manifest.replicas) || manifest.replicas! < 1 || manifest.replicas! > REPLICAS_MAX) bad(`replicas must be an integer from 1 to ${REPLICAS_MAX}`);
  if (typeof manifest.project !== "string" || !isAbsolute(manifest.project)) bad("project must be an absolute path");
  if (!Number.isInteger(manifest.port) || manifest.port! < 0 || manifest.port! > 65_535) bad("port must be an integer from 0 to 65535");
  if (manifest.stores !== undefined) {
    if (typeof manifest.stores !== "object" || manifest.stores === null || Array.isArray(manifest.stores)) bad("stores must be an object");
    for (const [name, path] of Object.entries(manifest.stores!)) {
      const match = /^p(\d+)-r(\d+)$/.exec(name);
      if (match === null || Number(match[2]) >= manifest.replicas!) bad(`stores: ${name} names no replica (p<partition>-r<replica>)`);
      if (typeof path !== "string" || !isAbsolute(path)) bad(`stores: ${name} must be an absolute path`);
    }
  }
  if (manifest.coordinators !== undefined && manifest.coordinators !== "one" && manifest.coordinators !== "many") bad('coordinators must be "one" or "many"');
  if (manifest.snapshots !== undefined) return { ...(manifest as ClusterManifest), snapshots: checkSnapshotPolicy(manifest.snapshots, source) };
  return manifest as ClusterManifest;
}

export function readClusterManifest(directory: string): ClusterManifest {
  const path = join(directory, CLUSTER_MANIFEST_FILE);
  if (!existsSync(path)) throw new SilkError("invalid_option", `${directory} holds no ${CLUSTER_MANIFEST_FILE} (start a cluster with silk cluster up --dir ${directory})`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (cause) {
    throw new SilkError("invalid_option", `${path} is not JSON: ${(cause as Error).message}`);
  }
  return checkClusterManifest(parsed, path);
}

export function writeClusterManifest(directory: string, manifest: ClusterManifest): void {
  checkClusterManifest(manifest, "the cluster manifest");
  writeFileAtomic(join(directory, CLUSTER_MANIFEST_FILE), JSON.stringify(manifest, null, 2) + "\n");
}

/**
 * The environment variable that gives one process of a cluster its own NATS client URLs (comma-separated), in place
 * of cluster.json's `nats`: the chaos harness starts each process behind its own fault-injecting proxies
 * (chaos/network.ts), which only works because the servers do not advertise their addresses (cluster/nats/servers.ts).
 */
export const NATS_SERVERS_ENV = "SILK_NATS_SERVERS";

/** The NATS URLs this process connects to: `SILK_NATS_SERVERS` when set (checked as cluster.json's are), else the manifest's. */
export function natsServersOf(manifest: ClusterManifest, env: NodeJS.ProcessEnv = process.env): readonly string[] {
  const override = env[NATS_SERVERS_ENV];
  if (override === undefined || override === "") return manifest.nats;
  const urls = override.split(",").map((url) => url.trim());
  if (!urls.every((url) => /^nats:\/\/[^,\s]+$/.test(url))) throw new SilkError("invalid_option", `${NATS_SERVERS_ENV} must be comma-separated nats:// URLs, not ${JSON.stringify(override)}`);
  return urls;
}

/** The replicas of every partition's log stream and of the KV buckets: 3 at most, no more than NATS servers. */
export function streamReplicas(manifest: ClusterManifest): number {
  return Math.min(3, manifest.nats.length);
}

export const clusterPaths = {
  replicaStore: (directory: string, partition: number, replica: number): string => join(directory, "partitions", `p${partition}`, `r${replica}`),
  replicaScratch: (directory: string, partition: number, replica: number): string => join(directory, "partitions", `p${partition}`, `r${replica}-scratch`),
  logs: (directory: string): string => join(directory, "logs"),
  replicaLog: (directory: string, partition: number, replica: number): string => join(directory, "logs", `p${partition}-r${replica}.log`),
  serveLog: (directory: string): string => join(directory, "logs", "serve.log"),
  nats: (directory: string): string => join(directory, "nats"),
  processes: (directory: string): string => join(directory, CLUSTER_PROCESSES_FILE),
  processesLock: (directory: string): string => join(directory, "processes.lock"),
  supervisorLog: (directory: string): string => join(directory, "logs", "supervisor.log"),
} as const;

/** The name of a replica's process and store entry: `p<partition>-r<replica>`. */
export function replicaName(partition: number, replica: number): string {
  return `p${partition}-r${replica}`;
}

/** Where a replica keeps its LMDB store and its snapshot scratch directory (moved ones: the manifest's `stores`). */
export function replicaDirectories(directory: string, manifest: ClusterManifest, partition: number, replica: number): { store: string; scratch: string } {
  const moved = manifest.stores?.[replicaName(partition, replica)];
  if (moved !== undefined) return { store: moved, scratch: `${moved}-scratch` };
  return { store: clusterPaths.replicaStore(directory, partition, replica), scratch: clusterPaths.replicaScratch(directory, partition, replica) };
}

export function readClusterProcesses(directory: string): ClusterProcesses | undefined {
  const path = clusterPaths.processes(directory);
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as ClusterProcesses) : undefined;
}

export function writeClusterProcesses(directory: string, processes: ClusterProcesses): void {
  updateClusterProcesses(directory, () => processes);
}

/**
 * Reads processes.json (an empty record when absent), applies `change` and writes the result, all under
 * DIR/processes.lock, so two processes changing it (the supervisor restarting one process, the chaos harness
 * another) never lose each other's change. Returns what was written.
 */
export function updateClusterProcesses(directory: string, change: (processes: ClusterProcesses) => ClusterProcesses): ClusterProcesses {
  return withFileLock(clusterPaths.processesLock(directory), CLUSTER_PROCESSES_LOCK_WAIT_MS, () => {
    const changed = change(readClusterProcesses(directory) ?? { nats: {}, replicas: {} });
    writeFileAtomic(clusterPaths.processes(directory), JSON.stringify(changed, null, 2) + "\n");
    return changed;
  });
}

/** Every process recorded, by name: NATS servers (`n1`..), replicas (`p0-r0`..), `serve` (not the supervisor). */
export function clusterProcessEntries(processes: ClusterProcesses): [string, number][] {
  return [...Object.entries(processes.nats), ...Object.entries(processes.replicas), ...(processes.serve === undefined ? [] : [["serve", processes.serve] as [string, number]])];
}

/** `processes` with process `name` recorded as `pid`. */
export function withProcess(processes: ClusterProcesses, name: string, pid: number): ClusterProcesses {
  if (name === "serve") return { ...processes, serve: pid };
  if (name in processes.nats) return { ...processes, nats: { ...processes.nats, [name]: pid } };
  return { ...processes, replicas: { ...processes.replicas, [name]: pid } };
}
