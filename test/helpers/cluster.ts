/**
 * A reusable harness for suites that run against a cluster (issue 6): real `nats-server` processes
 * (cluster/nats/servers.ts: one server, whose streams have one replica, or three), in-process PartitionReplica
 * instances for N partitions × R replicas, each with its own temporary LMDB directory and NATS connection, and
 * connectCluster as the coordinator: a Database like the embedded one, over NATS.
 *
 * Invariants:
 * - Every TestCluster gets a fresh cluster name, so its subjects, log streams and buckets are its own: cases that
 *   share long-lived NATS servers never see each other's data. close() deletes its streams and buckets again.
 * - Replicas open their stores exactly as `silk partition` does (bin/partition.ts): the partition's ID range from
 *   the same PartitionMap, the schema's index definitions, the project checked by checkProject.
 * - Everything started here is stopped by close() / stopTestNats(); `leftovers()` names any nats-server process
 *   this harness started that is still alive (a suite asserts it is empty in afterAll).
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import pino from "pino";
import type { Database, OpenOptions } from "../../runtime/embedded.js";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { connectCluster } from "../../runtime/remote.js";
import { PartitionReplica } from "../../cluster/nats/replica.js";
import { subjects } from "../../cluster/nats/subjects.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { checkProject } from "../../protocol/helixql/query-check.js";
import type { Schema, SchemaSource } from "../../protocol/schema.js";
import { schemaIndexDefinitions } from "../../protocol/schema-indexes.js";
import { uniqueEdgeLabels } from "../../node/exec/unique-edges.js";

const logger = pino({ level: process.env.SILK_LOG_LEVEL ?? "silent" });
/** Short leases: a replica that stops gives its lease up anyway; this bounds a failover in a crashed test. */
const LEASE_TTL_MS = 1_500;
/** Temporary directories on tmpfs when there is one: the cases create many small stores. */
const TEMP_ROOT = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();

/** Every nats-server process started through startTestNats, to check that none is left behind. */
const startedPids = new Set<number>();

export interface TestNats {
  readonly servers: LocalNatsCluster;
  readonly urls: string[];
  /** The num_replicas of streams and buckets: 1 on one server, 3 on three. */
  readonly streamReplicas: number;
  readonly directory: string;
}

/** Starts `count` nats-server processes (1 or 3) in a temporary directory; resolves when JetStream is ready. */
export async function startTestNats(count: 1 | 3): Promise<TestNats> {
  const directory = mkdtempSync(join(TEMP_ROOT, "silk-nats-"));
  const servers = await LocalNatsCluster.start(directory, { servers: count, clusterName: `t${randomBytes(3).toString("hex")}` });
  for (const pid of Object.values(servers.pids())) startedPids.add(pid);
  return { servers, urls: servers.urls, streamReplicas: Math.min(3, count), directory };
}

/** Stops the servers and removes their directory. */
export async function stopTestNats(nats: TestNats): Promise<void> {
  await nats.servers.stop();
  rmSync(nats.directory, { recursive: true, force: true });
}

/** The pids of nats-server processes this harness started that are still running. */
export function leftovers(): number[] {
  return [...startedPids].filter((pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  });
}

export interface ClusterReplicaHandle {
  readonly partition: number;
  readonly name: string;
  readonly path: string;
  readonly nc: NatsConnection;
  readonly store: PartitionStore;
  readonly replica: PartitionReplica;
}

export interface TestCluster {
  readonly name: string;
  readonly database: Database;
  readonly replicas: readonly ClusterReplicaHandle[];
  /** Closes the database, stops every replica, closes stores and connections, deletes the NATS streams and buckets. */
  close(): Promise<void>;
}

export interface TestClusterOptions {
  readonly partitions: number;
  readonly replicas: number;
  readonly schema?: OpenOptions["schema"];
  /** Default: a fresh random name. */
  readonly name?: string;
  /** The clock of the replicas and the coordinator (DEFAULT NOW, Date values); default: the real one. */
  readonly now?: () => Date;
  /** The coordinator's mode (connectCluster's `coordinators`); default "one". */
  readonly coordinators?: "one" | "many";
}

let clusterCounter = 0;

/** A fresh cluster name (lowercase, at most 32 characters). */
export function freshClusterName(): string {
  clusterCounter += 1;
  return `t${process.pid.toString(36)}-${clusterCounter.toString(36)}-${randomBytes(3).toString("hex")}`;
}

function sourcesOf(schema: OpenOptions["schema"]): SchemaSource[] {
  if (schema === undefined) return [];
  return typeof schema === "string" ? [{ file: "<schema>", text: schema }] : Array.isArray(schema) ? [...schema] : [schema as SchemaSource];
}

/** The schema the replicas load; undefined when the project does not check (connectCluster then refuses it). */
function replicaSchema(schema: OpenOptions["schema"]): { schema: Schema | undefined; checks: boolean } {
  if (schema === undefined) return { schema: undefined, checks: true };
  const checked = checkProject(sourcesOf(schema));
  return { schema: checked.schema, checks: checked.diagnostics.length === 0 };
}

async function startReplica(nats: TestNats, cluster: string, range: PartitionMap["ranges"][number], replicaIndex: number, schema: Schema | undefined, now: () => Date): Promise<ClusterReplicaHandle> {
  const path = mkdtempSync(join(TEMP_ROOT, "silk-replica-"));
  const name = `r${replicaIndex}`;
  const store = PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: range.first, idLast: range.last, indexes: schemaIndexDefinitions(schema), uniqueAcrossPartitions: true, uniqueEdgeLabels: uniqueEdgeLabels(schema) });
  let nc: NatsConnection | undefined;
  try {
    nc = await connect({ servers: nats.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100, name: `silk-${cluster}-p${range.index}-${name}` });
    const replica = await PartitionReplica.start({
      nc, cluster, partition: range.index, replica: name, replicas: nats.streamReplicas, store, schema, now, leaseTtlMs: LEASE_TTL_MS, logger,
      onFatal: (cause) => logger.error({ err: cause }, `replica p${range.index}-${name} stopped`),
    });
    return { partition: range.index, name, path, nc, store, replica };
  } catch (cause) {
    await nc?.close();
    await store.close();
    rmSync(path, { recursive: true, force: true });
    throw cause;
  }
}

async function stopReplica(handle: ClusterReplicaHandle): Promise<void> {
  await handle.replica.stop();
  await handle.nc.close();
  await handle.store.close();
  rmSync(handle.path, { recursive: true, force: true });
}

/**
 * Deletes the cluster's log streams, its lease, decision and map buckets (a KV bucket is the stream KV_<bucket>) and
 * its snapshot bucket (an object store bucket is the stream OBJ_<bucket>).
 */
async function deleteClusterStreams(nats: TestNats, cluster: string, partitions: number): Promise<void> {
  const nc = await connect({ servers: nats.urls });
  try {
    const jsm = await jetstreamManager(nc);
    const names = [
      ...Array.from({ length: partitions }, (_, partition) => subjects.logStream(cluster, partition)),
      `KV_${subjects.leaseBucket(cluster)}`,
      `KV_${subjects.termBucket(cluster)}`,
      `KV_${subjects.decisionBucket(cluster)}`,
      `KV_${subjects.mapBucket(cluster)}`,
      `OBJ_${subjects.snapshotBucket(cluster)}`,
    ];
    for (const name of names) await jsm.streams.delete(name).catch(() => false); // absent when nothing created it
  } finally {
    await nc.close();
  }
}

/**
 * Starts `partitions × replicas` in-process replicas under a fresh cluster name on `nats`, then connectCluster as
 * the coordinator. A project that does not check starts no replica: connectCluster refuses it (its error is thrown).
 */
export async function startTestCluster(nats: TestNats, options: TestClusterOptions): Promise<TestCluster> {
  const name = options.name ?? freshClusterName();
  const map = new PartitionMap(options.partitions);
  const { schema, checks } = replicaSchema(options.schema);
  const now = options.now ?? (() => new Date());
  const replicas: ClusterReplicaHandle[] = [];
  const close = async (database?: Database): Promise<void> => {
    await database?.close();
    await Promise.all(replicas.map(stopReplica));
    await deleteClusterStreams(nats, name, options.partitions);
  };
  try {
    if (checks) {
      const started = await Promise.allSettled(
        map.ranges.flatMap((range) => Array.from({ length: options.replicas }, (_, index) => startReplica(nats, name, range, index, schema, now))),
      );
      for (const outcome of started) if (outcome.status === "fulfilled") replicas.push(outcome.value);
      const failed = started.find((outcome) => outcome.status === "rejected");
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    }
    const database = await connectCluster({
      cluster: name,
      servers: nats.urls,
      partitions: options.partitions,
      decisionReplicas: nats.streamReplicas,
      schema: options.schema,
      now,
      coordinators: options.coordinators,
    });
    return { name, database, replicas, close: () => close(database) };
  } catch (cause) {
    await close();
    throw cause;
  }
}
