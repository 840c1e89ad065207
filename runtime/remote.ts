/**
 * A Database (runtime/embedded.ts's class: run, query, prepare, indexStatuses, close) whose partitions are remote:
 * partition replica processes (bin/partition.ts, cluster/nats/replica.ts) reached over NATS. The coordinator is the same
 * code as the embedded runtime's, with NatsTransport (cluster/nats/transport.ts) instead of the in-process transport
 * and the replicated KvDecisionLog (cluster/nats/kv-decision-log.ts) instead of a local LMDB one.
 *
 * Invariants:
 * - The PartitionMap comes from the cluster's map bucket (cluster/nats/map-store.ts; created there from the manifest's
 *   partition count if absent), the same map the partitions read their allocation ranges from, so coordinator and
 *   partitions agree on every ID's owner. Rebalancing (cluster/nats/rebalance.ts) changes it under the coordinator's
 *   write lock; a writer resumes a move a crash interrupted before it serves, and answers the admin subject.
 * - A writer recovers transactions left in doubt (coordinator.recover()) before it serves anything, and again when it
 *   takes a lost writer lease back; that recovery runs beside the commits already in flight and leaves them alone.
 * - Isolation: with `coordinators: "one"` (the default) one writer coordinator per cluster (it holds the coordinator
 *   lease); its readers/writer lock keeps docs/ISOLATION.md's guarantee among the invocations it runs. With "many",
 *   any number serve at once: reads are validated and intents lock at the partition leaders (docs/ISOLATION.md,
 *   "Several coordinators"); such a coordinator takes no lease, runs no recovery at start (the partitions' intent
 *   resolvers resolve what a dead coordinator left in doubt) and no rebalancing, and refuses to start beside a
 *   single writer coordinator (writer_locked).
 * - `indexes()` (synchronous) is refused with unsupported_operation; `indexStatuses()` asks the partitions.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { pino, type Logger } from "pino";
import type { Embedder } from "../protocol/embedding.js";
import { SilkError } from "../protocol/errors.js";
import { mergeIndexStatuses } from "../protocol/indexes.js";
import { Coordinator, type CommitPhase } from "../cluster/coordinator.js";
import { natsServersOf, readClusterManifest, streamReplicas, type ClusterManifest } from "../cluster/nats/manifest.js";
import { Database, type DatabaseEngine, type OpenOptions } from "./embedded.js";
import { partitionIndexStatuses } from "../cluster/index-operations.js";
import { KvDecisionLog } from "../cluster/nats/kv-decision-log.js";
import { MapStore } from "../cluster/nats/map-store.js";
import { Rebalancer, type RebalancerOptions } from "../cluster/nats/rebalance.js";
import { NatsTransport, staleReadsOption, type StaleReads } from "../cluster/nats/transport.js";
import { checkClusterName } from "../cluster/nats/subjects.js";
import { CoordinatorLease } from "../cluster/nats/coordinator-lease.js";

export interface ConnectClusterOptions {
  /** The cluster's name (its NATS subjects, streams and buckets derive from it). */
  readonly cluster: string;
  /** NATS client URLs (several: the connection fails over between them). */
  readonly servers: readonly string[];
  readonly partitions: number;
  /** Replicas of the decision bucket: 3 on a three-server NATS cluster (default: min(3, servers)). */
  readonly decisionReplicas?: number;
  /** The project's HelixQL text or files, as open() takes them. */
  readonly schema?: OpenOptions["schema"];
  /** Default "writer". */
  readonly mode?: "writer" | "readonly";
  /**
   * "one" (default): this is the cluster's one writer coordinator (it holds the coordinator lease, serializes its
   * invocations with its own lock). "many": any number of coordinators serve at once; isolation comes from
   * validation and locks at the partition leaders (docs/ISOLATION.md, "Several coordinators").
   */
  readonly coordinators?: "one" | "many";
  readonly embedder?: Embedder;
  /**
   * Reads may be answered by any replica that is at most `maxStalenessMs` behind the log (positive integer ≤ 1 hour)
   * instead of the leader; `true` = 5,000 ms; `readYourWrites` sends a partition's reads to its leader for
   * maxStalenessMs after a write through this connection. Default false (cluster/nats/transport.ts StaleReads).
   */
  readonly staleReads?: StaleReads;
  /** The deadline of a request that sets no timeout_ms. */
  readonly defaultTimeoutMs?: number;
  /** Per attempt and overall transport deadlines (cluster/nats/transport.ts defaults). */
  readonly attemptTimeoutMs?: number;
  readonly deadlineMs?: number;
  readonly now?: () => Date;
  /** Where a writer logs its lease's changes (cluster/nats/coordinator-lease.ts); default warnings to stderr. */
  readonly logger?: Logger;
  /** Internal, for fault tests: called as a two-phase commit reaches each phase (see Coordinator). */
  readonly onCommitPhase?: (phase: CommitPhase, txid: string) => void;
  /** Internal, for fault tests: rebalancing's chunk size and step hook (cluster/nats/rebalance.ts). */
  readonly rebalance?: Pick<RebalancerOptions, "chunkIds" | "onMoveStep">;
}

/** A cluster's Database and (writer only) the Rebalancer that moves its ranges. */
export interface OpenedCluster {
  readonly database: Database;
  readonly rebalancer: Rebalancer | undefined;
}

/** Connects to a running cluster and returns its Database; close() closes the NATS connection. */
export async function connectCluster(options: ConnectClusterOptions): Promise<Database> {
  return (await openCluster(options)).database;
}

/** connectCluster, also returning the writer's Rebalancer. */
export async function openCluster(options: ConnectClusterOptions): Promise<OpenedCluster> {
  const cluster = checkClusterName(options.cluster);
  if (options.servers.length === 0) throw new SilkError("invalid_option", "connectCluster needs at least one NATS server URL");
  const mode = options.mode ?? "writer";
  const coordinators = options.coordinators ?? "one";
  if (coordinators !== "one" && coordinators !== "many") throw new SilkError("invalid_option", 'coordinators must be "one" or "many"');
  if (mode !== "writer" && mode !== "readonly") throw new SilkError("invalid_option", 'mode must be "writer" or "readonly"');
  staleReadsOption(options.staleReads); // refused before connecting
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: [...options.servers], maxReconnectAttempts: -1, name: `silk-coordinator-${cluster}` });
  } catch (cause) {
    throw new SilkError("partition_unavailable", `cannot reach NATS at ${options.servers.join(", ")}: ${(cause as Error).message}`);
  }
  let rebalancer: Rebalancer | undefined;
  let writerLease: CoordinatorLease | undefined;
  try {
    const database = await Database.fromEngine(options.schema, mode, async (schema) => {
      const replicas = options.decisionReplicas ?? Math.min(3, options.servers.length);
      const maps = await MapStore.open({ nc, cluster, replicas });
      const { value: map, revision } = await maps.load(options.partitions);
      const transport = new NatsTransport({ nc, cluster, staleReads: options.staleReads, timeoutMs: options.attemptTimeoutMs, deadlineMs: options.deadlineMs });
      const decisions = await KvDecisionLog.open({ nc, cluster, replicas });
      // One writer coordinator per cluster: its lease is taken before anything is recovered or written.
      let recover: () => Promise<unknown> = async () => undefined;
      const logger = (): Logger => options.logger ?? pino({ level: "warn" }, pino.destination(2));
      if (mode === "writer" && coordinators === "many") {
        const single = await CoordinatorLease.currentHolder({ nc, cluster, replicas, logger: logger() });
        if (single !== undefined) {
          throw new SilkError("writer_locked", `cluster ${cluster} has a single writer coordinator (${single}); coordinators "many" serve only beside coordinators of that mode: stop it first`);
        }
      }
      writerLease =
        mode === "writer" && coordinators === "one"
          ? await CoordinatorLease.acquire({ nc, cluster, replicas, logger: logger(), onRegained: () => recover() })
          : undefined;
      const coordinator = new Coordinator({
        transport,
        map,
        decisions,
        schema,
        writable: mode === "writer",
        now: options.now ?? (() => new Date()),
        defaultTimeoutMs: options.defaultTimeoutMs,
        embedder: options.embedder,
        onCommitPhase: options.onCommitPhase,
        writerGate: writerLease === undefined ? undefined : (waitMs) => writerLease?.gate(waitMs) ?? Promise.resolve(),
        validate: coordinators === "many",
      });
      recover = () => coordinator.recover();
      if (mode === "writer" && coordinators === "one") {
        await coordinator.recover();
        rebalancer = new Rebalancer({ coordinator, transport, maps, revision, ...options.rebalance });
        await rebalancer.resume();
      }
      await coordinator.loadIndexCatalog();
      const admin = rebalancer?.serveAdmin(nc, cluster);
      // A read-only coordinator follows the writer's map changes (a partition added, a range moved); the writer makes
      // them itself. Each map is set with no invocation in flight, as the writer's rebalancer sets it.
      let followed = revision;
      const mapWatch =
        mode === "readonly"
          ? maps.watch(revision, (changed) =>
              coordinator.exclusive(async ({ setMap }) => {
                if (changed.revision <= followed) return;
                followed = changed.revision;
                setMap(changed.value);
              }),
            )
          : undefined;
      const engine: DatabaseEngine = {
        coordinator,
        indexes: () => {
          throw new SilkError("unsupported_operation", "a cluster's index statuses are asked of its partitions: use indexStatuses()");
        },
        indexStatuses: async () => mergeIndexStatuses(await partitionIndexStatuses({ transport, map: coordinator.currentMap(), schema })),
        // The partitions are processes of their own: their storage is not in this process to read.
        partitionStorage: () => [],
        // Every read is a request to a partition's process, which reads from its own newest commit.
        renewReads: () => undefined,
        status: () => ({ storage: "cluster", mode }),
        close: async () => {
          admin?.unsubscribe();
          await mapWatch?.stop();
          await coordinator.settle();
          await writerLease?.release();
          await decisions.close();
          await nc.close();
        },
      };
      return engine;
    });
    return { database, rebalancer };
  } catch (cause) {
    await writerLease?.release().catch(() => undefined);
    await nc.close();
    throw cause;
  }
}

/** connectCluster with what DIR/cluster.json says (the serve process of `silk cluster up`). */
export function connectClusterDirectory(
  directory: string,
  options: Omit<ConnectClusterOptions, "cluster" | "servers" | "partitions" | "decisionReplicas"> = {},
): Promise<Database> {
  const manifest: ClusterManifest = readClusterManifest(directory);
  return connectCluster({
    coordinators: manifest.coordinators,
    ...options,
    cluster: manifest.name,
    servers: natsServersOf(manifest),
    partitions: manifest.partitions,
    decisionReplicas: streamReplicas(manifest),
  });
}
