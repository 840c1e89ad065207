/**
 * `silk partition --dir DIR --partition I --replica R`: one replica process of one partition of the cluster that
 * DIR/cluster.json describes (cluster/nats/manifest.ts). It opens its own LMDB at DIR/partitions/p<I>/r<R> with
 * the partition's allocation range from the cluster's map in NATS KV (cluster/nats/map-store.ts; created from the
 * manifest's partition count if absent; a partition being added has one before it serves, and a replica of the next
 * partition started before it is carved waits for it: `silk cluster add-partition --existing`) and the schema's index
 * definitions; the ranges it owns come from its log (add_ranges, drop_range). It runs
 * cluster/nats/replica.ts's PartitionReplica (leader or follower of the partition's JetStream log), and logs with pino to
 * DIR/logs/p<I>-r<R>.log. Before its store opens, a directory without a store, or with one the log no longer reaches
 * (truncated below a snapshot while this replica was down), gets the partition's latest snapshot
 * (cluster/nats/snapshots.ts `bootstrapReplica`); as leader it snapshots by cluster.json's `snapshots` policy.
 *
 * With `--health-port`, it answers `GET /health` on that port (`--health-host`, default 127.0.0.1; a Kubernetes pod
 * gives 0.0.0.0): 200 `{"status": "ok", "partition", "replica", "role": "leader" | "follower", "applied"}` while the
 * replica runs, 503 `{"error": "partition_unavailable", ..}` once it is stopping, for a supervisor's liveness probe;
 * `GET /ready`, the readiness probe: 200 only while the replica is caught up with its log, that is a leader holding
 * its lease, or a follower that applied every entry the log held at most `--ready-within-ms` ago (default
 * DEFAULT_MAX_STALENESS_MS, the bound stale reads get: a ready replica can answer them), else 503 with how far behind
 * it is; and `GET /metrics` in Prometheus text (docs/CLUSTER.md, "Replica metrics"): its role, the log's last and
 * its applied sequence (so its lag), the lease's term, leadership changes, lease renewals, the transaction steps it
 * answered as leader and the intents in doubt on its store, LMDB map, pages and readers, and Node's process metrics.
 *
 * SIGINT / SIGTERM: the replica stops (a leader gives its lease up, so another takes over at once), then the store
 * and the NATS connection close. A fatal replica failure (the store cannot follow the log) exits with code 1.
 */
import { mkdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { createServer, type Server } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { clusterPaths, natsServersOf, readClusterManifest, replicaDirectories, streamReplicas } from "../cluster/nats/manifest.js";
import { embedderFromEnvironment } from "../embedders/index.js";
import { MapStore } from "../cluster/nats/map-store.js";
import { PartitionReplica } from "../cluster/nats/replica.js";
import { bootstrapReplica } from "../cluster/nats/snapshots.js";
import { DEFAULT_MAX_STALENESS_MS } from "../cluster/nats/wire.js";
import { acquireWriterLock } from "../runtime/writer-lock.js";
import { PartitionStore } from "../node/store/partition-store.js";
import { storageStatistics } from "../runtime/embedded.js";
import { checkProject } from "../protocol/helixql/query-check.js";
import { SilkError } from "../protocol/errors.js";
import type { IdRange } from "../protocol/records.js";
import { schemaIndexDefinitions } from "../protocol/schema-indexes.js";
import { uniqueEdgeLabels } from "../node/exec/unique-edges.js";
import { formatDiagnostics } from "../protocol/schema.js";
import { loadSchemaSources } from "./schema-files.js";

export interface PartitionCommandOptions {
  readonly dir: string;
  readonly partition: number;
  readonly replica: number;
  /** Serve `GET /health` and `GET /metrics` on this port (0: any free one, printed at start); absent: no HTTP at all. */
  readonly healthPort?: number;
  /** The address the health port binds (default 127.0.0.1). */
  readonly healthHost?: string;
  /** `GET /ready` answers 200 while the replica was caught up with its log at most this long ago (default DEFAULT_MAX_STALENESS_MS). */
  readonly readyWithinMs?: number;
}

interface ReplicaState {
  readonly stopping: boolean;
  readonly partition: number;
  readonly replica: string;
  readonly role: "leader" | "follower";
  readonly applied: number;
  /** How far behind its log the replica may be (cluster/nats/replica.ts `stalenessMs`: 0 for a leader, Infinity before it was first current). */
  readonly stalenessMs: number;
}

/** The replica's metrics: what `GET /metrics` reports, set from the replica and its store once per scrape. */
interface ReplicaMetrics {
  readonly registry: Registry;
  refresh(state: ReplicaState): Promise<void>;
}

/** How long a scrape waits for JetStream (the log's last sequence, the lease's holder) before it leaves those series out. */
const SCRAPE_NATS_TIMEOUT_MS = 1_000;

/**
 * Role, log and applied sequences, lag, the lease's term, leadership changes, lease renewals, transaction steps and
 * intents in doubt, and the LMDB gauges of `silk serve` (names and meanings as docs/SERVER.md gives them), each
 * labelled partition and replica, plus Node's process metrics (docs/CLUSTER.md, "Replica metrics").
 */
function replicaMetrics(store: PartitionStore, replica: PartitionReplica): ReplicaMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const gauge = (name: string, help: string): Gauge => new Gauge({ name, help, labelNames: ["partition", "replica"], registers: [registry] });
  const counter = <T extends string>(name: string, help: string, label: T): Counter<"partition" | "replica" | T> =>
    new Counter({ name, help, labelNames: ["partition", "replica", label], registers: [registry] });
  const leader = gauge("silk_replica_leader", "1 while this replica leads its partition (holds the lease), else 0");
  const applied = gauge("silk_replica_applied_sequence", "the last log sequence this replica applied to its LMDB");
  const logSequence = gauge("silk_replica_log_sequence", "the last sequence of the partition's log, as JetStream answered the scrape");
  const lag = gauge("silk_replica_lag_entries", "log entries this replica has not applied yet (log sequence minus applied sequence)");
  const term = gauge("silk_replica_lease_term", "the term of the partition's lease as its key holds it (0 while no replica leads)");
  const inDoubt = gauge("silk_partition_transactions_in_doubt", "two-phase-commit intents prepared on this replica's store and not yet committed or aborted");
  const leaderChanges = counter("silk_replica_leader_changes_total", "times this replica became its partition's leader (taken) or stopped leading (ended)", "change");
  const renewals = counter("silk_replica_lease_renewals_total", "lease renewals this replica sent as leader, by outcome (renewed, failed)", "outcome");
  const transactions = counter("silk_partition_transactions_total", "transaction steps this replica answered as leader (prepared, committed, aborted; applied: a one-partition write)", "outcome");
  const mapSize = gauge("silk_lmdb_map_size_bytes", "this replica's LMDB map size");
  const usedBytes = gauge("silk_lmdb_used_bytes", "bytes of this replica's map in use (its pages up to the highest used)");
  const freePages = gauge("silk_lmdb_free_pages", "pages on this replica's LMDB free list");
  const readers = gauge("silk_lmdb_readers", "live LMDB reader slots of this replica's environment, of every process");
  const counts = <T extends string>(metric: Counter<"partition" | "replica" | T>, labels: { partition: string; replica: string }, label: T, values: Readonly<Record<string, number>>): void => {
    metric.reset();
    for (const [value, count] of Object.entries(values)) metric.inc({ ...labels, [label]: value } as Record<"partition" | "replica" | T, string>, count);
  };
  return {
    registry,
    async refresh(state) {
      const labels = { partition: String(state.partition), replica: state.replica };
      // Both JetStream reads at once, each bounded: a scrape while NATS is out of reach answers the rest.
      const [last, holder] = await Promise.all([
        within(replica.logSequence(), SCRAPE_NATS_TIMEOUT_MS),
        within(replica.leaseHolder().then((value) => ({ value })), SCRAPE_NATS_TIMEOUT_MS),
      ]);
      const storage = storageStatistics(state.partition, store);
      leader.set(labels, state.role === "leader" ? 1 : 0);
      applied.set(labels, state.applied);
      for (const metric of [logSequence, lag, term]) metric.reset();
      if (last !== undefined) {
        logSequence.set(labels, last);
        lag.set(labels, Math.max(0, last - state.applied));
      }
      if (holder !== undefined) term.set(labels, holder.value?.term ?? 0);
      inDoubt.set(labels, store.pendingIntents().length);
      const counters = replica.counters();
      counts(leaderChanges, labels, "change", counters.leaderships);
      counts(renewals, labels, "outcome", counters.leaseRenewals);
      counts(transactions, labels, "outcome", counters.transactions);
      mapSize.set(labels, storage.mapSizeBytes);
      usedBytes.set(labels, storage.usedBytes);
      freePages.set(labels, storage.freePages);
      readers.set(labels, storage.readers);
    },
  };
}

/** `work`'s value, or undefined when it fails or takes longer than `ms`. */
async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([work, late]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** The replica's health answer (what a probe needs to tell a running replica from one that is going away) and metrics. */
function healthServer(state: () => ReplicaState, metrics: ReplicaMetrics, readyWithinMs: number): Server {
  return createServer((request, response) => {
    const url = request.url?.split("?")[0];
    if (request.method === "GET" && url === "/metrics") {
      // In the promise, so that a store closing under a scrape answers 500 instead of throwing out of the handler.
      void Promise.resolve()
        .then(async () => {
          await metrics.refresh(state());
          return metrics.registry.metrics();
        })
        .then(
        (text) => response.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
        (cause: unknown) => response.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: "internal", msg: String(cause) })),
      );
      return;
    }
    if (request.method !== "GET" || (url !== "/health" && url !== "/ready")) {
      response.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "not_found", msg: "a partition replica answers GET /health, GET /ready and GET /metrics only" }));
      return;
    }
    const { stopping, stalenessMs, ...replica } = state();
    const json = (status: number, body: object): void => void response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (stopping) return json(503, { error: "partition_unavailable", msg: "the replica is stopping", ...replica });
    if (url === "/health") return json(200, { status: "ok", ...replica });
    // JSON has no Infinity: a replica never yet current reports null.
    const behind = { ...replica, stalenessMs: Number.isFinite(stalenessMs) ? Math.round(stalenessMs) : null, readyWithinMs };
    if (stalenessMs > readyWithinMs) {
      const why = Number.isFinite(stalenessMs) ? `was last caught up with its log ${Math.round(stalenessMs)} ms ago` : "has not yet caught up with its log";
      return json(503, { error: "partition_unavailable", msg: `the replica ${why}, beyond the readiness bound of ${readyWithinMs} ms`, ...behind });
    }
    json(200, { status: "ok", ...behind });
  });
}

/** How often a replica of a partition not carved yet reads the map again. */
const CARVE_POLL_MS = 1_000;

/**
 * Waits until the map gives `partition`, the next one (`count`), an allocation range: carved, it is pending, then
 * serving. Only the next partition is ever carved (PartitionMap.withPending), so none can take its place.
 */
async function allocationCarved(maps: MapStore, partition: number): Promise<IdRange> {
  for (;;) {
    await sleep(CARVE_POLL_MS);
    const range = (await maps.read().catch(() => undefined))?.value.allocationOf(partition);
    if (range !== undefined) return range;
  }
}

/** Starts the replica; resolves once it runs. The process then lives until a signal stops it. */
export async function runPartition(options: PartitionCommandOptions): Promise<void> {
  const manifest = readClusterManifest(options.dir);
  if (!Number.isInteger(options.partition) || options.partition < 0 || options.partition >= manifest.partitions) {
    throw new SilkError("invalid_option", `--partition must be from 0 to ${manifest.partitions - 1}, not ${options.partition}`);
  }
  if (!Number.isInteger(options.replica) || options.replica < 0 || options.replica >= manifest.replicas) {
    throw new SilkError("invalid_option", `--replica must be from 0 to ${manifest.replicas - 1}, not ${options.replica}`);
  }
  // One process per replica directory: a second would write the same LMDB environment as a second replica of the log.
  // Its own directory under DIR, or the one `silk cluster replace-replica` gave it (cluster.json's `stores`).
  const { store: storePath, scratch: scratchDirectory } = replicaDirectories(options.dir, manifest, options.partition, options.replica);
  mkdirSync(storePath, { recursive: true });
  const lock = acquireWriterLock(storePath);
  const sources = loadSchemaSources(manifest.project);
  const checked = checkProject(sources);
  if (checked.diagnostics.length > 0) throw new SilkError(checked.diagnostics[0].code, formatDiagnostics(checked.diagnostics, sources));
  const schema = checked.schema;
  mkdirSync(clusterPaths.logs(options.dir), { recursive: true });
  const replicaName = `r${options.replica}`;
  const logger = pino(
    { name: `silk-p${options.partition}-${replicaName}`, level: process.env.SILK_LOG_LEVEL ?? "info" },
    pino.destination({ dest: clusterPaths.replicaLog(options.dir, options.partition, options.replica), mkdir: true, sync: true }),
  );
  const servers = natsServersOf(manifest);
  const nc = await connect({ servers: [...servers], maxReconnectAttempts: -1, name: `silk-p${options.partition}-${replicaName}` }).catch((cause: unknown) => {
    throw new SilkError("partition_unavailable", `cannot reach NATS at ${servers.join(", ")}: ${(cause as Error).message}`);
  });
  let range;
  try {
    const maps = await MapStore.open({ nc, cluster: manifest.name, replicas: streamReplicas(manifest) });
    const { value: map } = await maps.load(manifest.partitions);
    range = map.allocationOf(options.partition);
    // The next partition, not carved yet: its replicas were started first (a StatefulSet's pods) and wait for
    // `silk cluster add-partition --existing` to carve its range (deploy/README.md, "Adding a partition").
    if (range === undefined && options.partition === map.count) {
      process.stdout.write(`silk: partition ${options.partition} is not in the cluster's map yet: waiting for silk cluster add-partition --existing --partition ${options.partition}\n`);
      logger.info({ partition: options.partition }, "waiting for the partition to be carved");
      range = await allocationCarved(maps, options.partition);
    }
    if (range === undefined) throw new SilkError("invalid_option", `--partition must be from 0 to ${map.count - 1} (the cluster's map), not ${options.partition}`);
    // An empty directory, or a store the log no longer reaches, starts from the partition's latest snapshot.
    const bootstrap = await bootstrapReplica({ nc, cluster: manifest.name, partition: options.partition, path: storePath, logger });
    if (bootstrap.kind === "restored") process.stdout.write(`silk: partition ${options.partition} replica ${options.replica} bootstrapped from the snapshot at log sequence ${bootstrap.sequence} (${bootstrap.bytes} bytes)\n`);
  } catch (cause) {
    await nc.close();
    throw cause;
  }
  const store = PartitionStore.open({
    path: storePath,
    readOnly: false,
    // The replicated log is what survives a crash (docs/REPLICATION.md, Restarts): a replica's LMDB commits without
    // fsync, and one that lost its last commits to a machine crash re-applies them from the log.
    noSync: true,
    idFirst: range.first,
    idLast: range.last,
    indexes: schemaIndexDefinitions(schema),
    // The coordinator checks UNIQUE builds across partitions (cluster/unique-builds.ts), also of a one-partition map,
    // which rebalancing may split later.
    uniqueAcrossPartitions: true,
    uniqueEdgeLabels: uniqueEdgeLabels(schema),
  });
  mkdirSync(scratchDirectory, { recursive: true });
  let stopping = false;
  let health: Server | undefined;
  const shutdown = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    try {
      await replica?.stop();
      await new Promise<void>((done) => (health === undefined ? done() : health.close(() => done())));
      await nc.close();
      await store.close();
      lock.release();
      logger.info("stopped");
    } finally {
      process.exit(code);
    }
  };
  let replica: PartitionReplica | undefined;
  replica = await PartitionReplica.start({
    nc,
    cluster: manifest.name,
    partition: options.partition,
    replica: replicaName,
    replicas: streamReplicas(manifest),
    store,
    schema,
    now: () => new Date(),
    embedder: embedderFromEnvironment(process.env),
    logger,
    snapshots: manifest.snapshots,
    scratchDirectory,
    onFatal: (cause) => {
      logger.fatal({ err: cause }, `replica stopped: ${cause.message}`);
      void shutdown(1);
    },
  });
  logger.info({ applied: replica.appliedSequence(), role: replica.role }, "replica started");
  let healthNote = "";
  if (options.healthPort !== undefined) {
    const running = replica;
    const state = (): ReplicaState => ({ stopping, partition: options.partition, replica: replicaName, role: running.role, applied: running.appliedSequence(), stalenessMs: running.stalenessMs() });
    health = healthServer(state, replicaMetrics(store, running), options.readyWithinMs ?? DEFAULT_MAX_STALENESS_MS);
    const server = health;
    await new Promise<void>((listening, failed) => {
      server.once("error", failed);
      server.listen(options.healthPort, options.healthHost ?? "127.0.0.1", () => listening());
    }).catch(async (cause: unknown) => {
      // shutdown() ends the process: the reason goes out first, as the CLI writes any other failure.
      process.stderr.write(`silk partition: invalid_option: --health-port ${options.healthPort}: ${(cause as Error).message}\n`);
      await shutdown(1);
    });
    const address = server.address();
    healthNote = typeof address === "object" && address !== null ? `, health on http://${address.address}:${address.port}/health` : "";
  }
  process.stdout.write(`silk: partition ${options.partition} replica ${options.replica} of cluster ${manifest.name} running${healthNote}\n`);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      logger.info(`${signal}: stopping`);
      void shutdown(0);
    });
  }
}
