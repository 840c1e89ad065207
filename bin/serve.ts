/**
 * `silk serve`: the single-server mode. Loads every `.hx` file of the project (schema and queries), opens the
 * database on local disk, and serves the HTTP gateway (gateway/server.ts) on 127.0.0.1:6969 unless told otherwise.
 * Without `--project` the database is schemaless (HelixDB v3's model: labels and properties come into being when
 * written, index DDL names its own types) and served on `/v2/query`, `/introspect` and `/health` only.
 * SIGINT and SIGTERM stop accepting requests, let the ones in flight finish, and close the database cleanly
 * (its writer lock is released, so the next start does not have to take over a stale one). `silk dev`
 * (bin/dev.ts) serves the same way through `listenGateway` and `closeOnSignals`. `silk serve --cluster DIR` serves
 * the same gateway over a cluster's partitions (runtime/remote.ts; docs/CLUSTER.md) instead of a local database.
 *
 * Test hook (an environment variable, not a CLI flag): `SILK_TEST_CRASH_AT=<phase>` makes `silk serve --cluster`
 * SIGKILL itself the first time a two-phase commit reaches that phase (one of the coordinator's CommitPhase values:
 * prepared_first, prepared_all, decided, committed_first, committed_all), for the fault tests of a coordinator crash.
 */
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { Database } from "../runtime/embedded.js";
import { natsServersOf, readClusterManifest } from "../cluster/nats/manifest.js";
import { readClusterStatus, type ClusterStatus } from "../cluster/nats/cluster-status.js";
import type { CommitPhase } from "../cluster/coordinator.js";
import { connectClusterDirectory } from "../runtime/remote.js";
import { embedderStartMessage } from "../embedders/index.js";
import { buildGateway, type GatewayDatabase, type GatewayOptions } from "../gateway/server.js";
import { asSilkError, SilkError } from "../protocol/errors.js";
import { formatDiagnostic, type Warning } from "../protocol/schema.js";
import { loadSchemaSources } from "./schema-files.js";
import { serveSettings, storageName, storageOf, type ServeOptions, type ServeSettings } from "./serve-settings.js";
import { isReadWorker, runReadWorker, runServeWorkers, serveWorkers } from "./serve-workers.js";

/** Logs which embedding provider serves Embed, or warns that none does (Embed then answers embedding_not_configured). */
export function announceEmbedder(settings: ServeSettings): void {
  const { level, message } = embedderStartMessage(settings.embedder);
  if (level === "warn") settings.logger.warn(message);
  else settings.logger.info(message);
}

/**
 * Logs each warning of the project's check (protocol/warnings.ts), one pino `warn` line each with its code and place,
 * so that what Silk does differently from HelixDB is in the server's log from its start.
 */
export function announceWarnings(warnings: readonly Warning[], logger: Logger): void {
  for (const warning of warnings) {
    const { code, file, line, column } = warning;
    logger.warn({ warning: code, file, line, column }, formatDiagnostic(warning));
  }
}

/** What the start line says is served: the project's directory, or that the database has no schema. */
export function servedName(project: string | undefined): string {
  return project ?? "a schemaless database";
}

/**
 * Builds the gateway over `database` and listens, then prints the line that says where (`served`: servedName).
 * On failure it runs `closeDatabase` before throwing, so that a port in use does not leave the writer lock behind.
 */
export async function listenGateway(
  database: GatewayDatabase,
  settings: ServeSettings,
  served: string,
  closeDatabase: () => Promise<void>,
  gateway: Pick<GatewayOptions, "clusterStatus"> = {},
): Promise<FastifyInstance> {
  const { port, host, data, logger, localAccess } = settings;
  let app: FastifyInstance | undefined;
  try {
    app = await buildGateway({ ...gateway, database, logger, localAccess });
    await app.listen({ port, host });
  } catch (cause) {
    await app?.close();
    await closeDatabase();
    if (app === undefined) throw cause;
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new SilkError("invalid_option", `cannot listen on ${host}:${port}: ${reason}`);
  }
  const address = app.server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  process.stdout.write(`silk: serving ${served} on http://${shown}:${address.port} (data in ${data})\n`);
  return app;
}

/**
 * On SIGINT or SIGTERM: stop accepting connections, let requests in flight finish, then `closeRest` (the
 * database, and for `silk dev` its watcher). A second signal exits at once.
 */
export function closeOnSignals(server: { close(): PromiseLike<unknown> }, closeRest: () => Promise<void>, logger: Logger): void {
  let closing = false;
  const close = (signal: NodeJS.Signals): void => {
    if (closing) {
      // A second signal while closing means the operator does not want to wait.
      process.exit(1);
    }
    closing = true;
    logger.info(`${signal}: closing the server and the database`);
    Promise.resolve(server.close())
      .then(closeRest)
      .then(() => logger.info("closed"))
      .catch((cause: unknown) => {
        const error = asSilkError(cause);
        logger.error({ err: cause }, `closing failed: ${error.code}: ${error.message}`);
        process.exitCode = 1;
      })
      .finally(() => {
        process.removeListener("SIGINT", close);
        process.removeListener("SIGTERM", close);
      });
  };
  process.on("SIGINT", close);
  process.on("SIGTERM", close);
}

/** Starts the server; resolves once it listens. The process then lives until a signal closes it. */
export async function runServe(options: ServeOptions): Promise<void> {
  const workers = serveWorkers(options.workers);
  const settings = serveSettings(options);
  if (isReadWorker()) return runReadWorker(options, settings);
  if (workers > 1 && options.storage !== undefined) {
    throw new SilkError("invalid_option", "--workers serves a database on local disk; a bucket database (--storage) serves from one process");
  }
  if (workers > 1) {
    const { pool, writer } = await runServeWorkers(options, settings, workers);
    closeOnSignals(pool, () => writer.close(), settings.logger);
    announceEmbedder(settings);
    announceWarnings(writer.warnings, settings.logger);
    return;
  }
  const schema = options.project === undefined ? undefined : loadSchemaSources(options.project);
  const storage = storageOf(options, settings.data, settings.data);
  const database = await Database.open({ storage, schema, embedder: settings.embedder }, { defaultTimeoutMs: settings.timeoutMs });
  const server = await listenGateway(database, { ...settings, data: storageName(storage) }, servedName(options.project), () => database.close());
  closeOnSignals(server, () => database.close(), settings.logger);
  announceEmbedder(settings);
  announceWarnings(database.warnings, settings.logger);
}

export interface ServeClusterOptions {
  /** The cluster directory (its cluster.json names the NATS servers, partitions and project). */
  readonly cluster: string;
  /** Overrides the manifest's project directory. */
  readonly project?: string;
  readonly port?: string;
  readonly host?: string;
  readonly allowedHosts?: string;
  readonly timeoutMs?: string;
  /** Refused: `--workers` serves a local database (its reads are LMDB read-only handles beside the writer). */
  readonly workers?: string;
}

const COMMIT_PHASES: readonly CommitPhase[] = ["prepared_first", "prepared_all", "decided", "committed_first", "committed_all"];

/** The SILK_TEST_CRASH_AT test hook: a commit-phase callback that SIGKILLs this process at that phase, or undefined. */
export function crashHook(setting: string | undefined): ((phase: CommitPhase) => void) | undefined {
  if (setting === undefined || setting === "") return undefined;
  if (!(COMMIT_PHASES as readonly string[]).includes(setting)) {
    throw new SilkError("invalid_option", `SILK_TEST_CRASH_AT must be one of ${COMMIT_PHASES.join(", ")}, got ${JSON.stringify(setting)}`);
  }
  return (phase) => {
    if (phase === setting) process.kill(process.pid, "SIGKILL");
  };
}

/** `silk serve --cluster DIR`: the gateway over a cluster's partitions; resolves once it listens. */
export async function runServeCluster(options: ServeClusterOptions): Promise<void> {
  if (options.workers !== undefined) {
    throw new SilkError("invalid_option", "--workers serves a local database (--data); a cluster's partitions are processes of their own, with replicas that serve reads (docs/CLUSTER.md)");
  }
  const manifest = readClusterManifest(options.cluster);
  const project = options.project ?? manifest.project;
  const settings = serveSettings({ project, port: options.port ?? String(manifest.port), host: options.host, allowedHosts: options.allowedHosts, data: options.cluster, timeoutMs: options.timeoutMs });
  const onCommitPhase = crashHook(process.env.SILK_TEST_CRASH_AT);
  if (onCommitPhase !== undefined) settings.logger.warn(`SILK_TEST_CRASH_AT=${process.env.SILK_TEST_CRASH_AT}: this process kills itself at that two-phase-commit phase (a test hook)`);
  const database = await connectClusterDirectory(options.cluster, {
    onCommitPhase,
    schema: loadSchemaSources(project),
    embedder: settings.embedder,
    defaultTimeoutMs: settings.timeoutMs,
  });
  // The console's partition page reads the cluster's status over a connection of its own (the coordinator's is
  // runtime/remote.ts's), from the manifest as it is at each read: replace-replica and add-partition change it.
  let statusConnection: NatsConnection;
  try {
    statusConnection = await connect({ servers: [...natsServersOf(manifest)], maxReconnectAttempts: -1, name: `silk-status-${manifest.name}` });
  } catch (cause) {
    await database.close();
    throw new SilkError("partition_unavailable", `cannot reach NATS at ${natsServersOf(manifest).join(", ")}: ${(cause as Error).message}`);
  }
  const closeAll = async (): Promise<void> => {
    await database.close();
    await statusConnection.close();
  };
  const clusterStatus = (): Promise<ClusterStatus> => readClusterStatus(statusConnection, resolve(options.cluster), readClusterManifest(options.cluster));
  const server = await listenGateway(database, settings, project, closeAll, { clusterStatus });
  closeOnSignals(server, closeAll, settings.logger);
  announceEmbedder(settings);
  announceWarnings(database.warnings, settings.logger);
}
