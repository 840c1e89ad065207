/**
 * `silk serve --workers N` (N > 1): reads on every core. The process model (docs/ARCHITECTURE.md, docs/SERVER.md):
 *
 * - The **primary** (the process started, the one that prints the start line and takes the signals) opens the
 *   database as its one writer and serves no HTTP. It forks N read workers with node:cluster, which share the
 *   listening socket (the primary accepts connections and hands each to a worker in turn), runs every write they
 *   send it, and answers `GET /metrics` for all of them.
 * - Each **read worker** opens the same LMDB environment read-only and runs the whole gateway (bin/serve.ts's routes,
 *   gateway/server.ts): it parses its own HTTP, and runs every read on its own handle. A write is refused by that
 *   handle before anything of it runs, and goes to the primary over the cluster's IPC channel
 *   (gateway/worker-database.ts).
 *
 * Read-your-writes: the primary answers a write only after its commit returned and every other live worker has
 * renewed its reads (Database.refresh: lmdb-js's shared read transaction is reset), and the worker that sent it
 * renews its own before it answers the client. So a read that starts after a write's answer sees it, on any
 * connection and any worker, as it does on a single server. Index builds in the background are no acknowledged
 * writes: a worker sees their progress at its next read transaction, as any read-only handle does.
 *
 * Failures: a worker that exits before it listens (its open or its listen failed) stops the server loudly (exit
 * code 1, with the worker's error); a worker that exits after it served is logged and replaced, and the metric
 * `silk_worker_restarts_total` counts it. The workers ignore SIGINT and SIGTERM (a terminal's Ctrl-C reaches the whole
 * process group): the primary closes them, each finishing its requests in flight (whose writes the primary still
 * runs), then closes the writer. A worker whose primary is gone exits at once.
 *
 * Only a one-partition database is served this way: several partitions' reads take the coordinator's readers/writer
 * lock so that none sees part of a two-phase commit (docs/ISOLATION.md), and that lock lives in the writer's process.
 */
import cluster, { type Worker } from "node:cluster";
import type { AddressInfo } from "node:net";
import { availableParallelism } from "node:os";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { Counter, Gauge, Registry } from "prom-client";
import { stringifyJson } from "../gateway/json.js";
import { aggregateMetrics, ServerMetrics, type MetricsJson } from "../gateway/metrics.js";
import { buildGateway } from "../gateway/server.js";
import { WorkerDatabase, type WriterLink } from "../gateway/worker-database.js";
import { asSilkError, SilkError, type ErrorCode } from "../protocol/errors.js";
import type { IndexStatus } from "../protocol/indexes.js";
import { Database } from "../runtime/embedded.js";
import { loadSchemaSources } from "./schema-files.js";
import type { ServeOptions, ServeSettings } from "./serve-settings.js";

/** The most read workers `--workers` takes. */
export const SERVE_WORKERS_MAX = 256;

/**
 * `--workers`: how many processes serve HTTP. 1 (the default) is the single process of today; `auto` is the number
 * of cores Node reports (os.availableParallelism), a whole number from 1 to SERVE_WORKERS_MAX otherwise.
 */
export function serveWorkers(option: string | undefined, cores: () => number = availableParallelism): number {
  if (option === undefined) return 1;
  if (option === "auto") return Math.min(cores(), SERVE_WORKERS_MAX);
  const workers = Number(option);
  if (!/^[0-9]+$/.test(option) || workers < 1 || workers > SERVE_WORKERS_MAX) {
    throw new SilkError("invalid_option", `--workers must be a whole number from 1 to ${SERVE_WORKERS_MAX}, or auto, got ${JSON.stringify(option)}`);
  }
  return workers;
}

/** Whether this process is a read worker that `runServeWorkers` forked (it runs the same command line). */
export function isReadWorker(): boolean {
  return cluster.isWorker;
}

/** A failure as it crosses the IPC channel: the code and message of the error table's error. */
interface WireError {
  readonly code: ErrorCode;
  readonly message: string;
}

/** What a worker sends the primary. Requests carry an `id` the answer repeats. */
type WorkerMessage =
  | { readonly type: "listening"; readonly address: AddressInfo }
  | { readonly type: "failed"; readonly error: WireError }
  | { readonly type: "write_v2"; readonly id: number; readonly tree: unknown }
  | { readonly type: "write_query"; readonly id: number; readonly name: string; readonly parameters: Readonly<Record<string, unknown>> }
  | { readonly type: "index_statuses"; readonly id: number }
  | { readonly type: "scrape"; readonly id: number }
  | { readonly type: "metrics"; readonly id: number; readonly metrics: MetricsJson }
  | { readonly type: "refreshed"; readonly id: number };

/** What the primary sends a worker. */
type PrimaryMessage =
  | { readonly type: "answer"; readonly id: number; readonly value: unknown }
  | { readonly type: "error"; readonly id: number; readonly error: WireError }
  | { readonly type: "refresh"; readonly id: number }
  | { readonly type: "metrics"; readonly id: number }
  | { readonly type: "close" };

function wireError(cause: unknown): WireError {
  const error = asSilkError(cause);
  return { code: error.code, message: error.message };
}

// ---------------------------------------------------------------------------------------------------------------
// The read worker.

/** The primary, as a worker reaches it over the IPC channel: the writer's operations and the aggregated scrape. */
class PrimaryLink implements WriterLink {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: SilkError) => void }>();

  /** `renewReads`: Database.refresh of the worker's handle, once it has one and until it closes. */
  constructor(private readonly renewReads: () => void) {}

  runV2(tree: unknown): Promise<string> {
    return this.write((id) => ({ type: "write_v2", id, tree })) as Promise<string>;
  }

  queryJson(name: string, parameters: Readonly<Record<string, unknown>>): Promise<string> {
    return this.write((id) => ({ type: "write_query", id, name, parameters })) as Promise<string>;
  }

  indexStatuses(): Promise<IndexStatus[]> {
    return this.request((id) => ({ type: "index_statuses", id })) as Promise<IndexStatus[]>;
  }

  /** Every worker's metrics and the writer's, as one text (the primary adds them up). */
  scrape(): Promise<string> {
    return this.request((id) => ({ type: "scrape", id })) as Promise<string>;
  }

  /** The primary's answer to one of this worker's requests. */
  answered(message: Extract<PrimaryMessage, { type: "answer" | "error" }>): void {
    const waiter = this.waiting.get(message.id);
    if (waiter === undefined) return;
    this.waiting.delete(message.id);
    if (message.type === "answer") waiter.resolve(message.value);
    else waiter.reject(new SilkError(message.error.code, message.error.message));
  }

  /** A write: answered, failed or not, only after this worker's reads were renewed (the writer may have committed). */
  private write(message: (id: number) => WorkerMessage): Promise<unknown> {
    return this.request(message).then(
      (value) => {
        this.renewReads();
        return value;
      },
      (cause: unknown) => {
        this.renewReads();
        throw cause;
      },
    );
  }

  private request(message: (id: number) => WorkerMessage): Promise<unknown> {
    const id = (this.nextId += 1);
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      sendToPrimary(message(id));
    });
  }
}

function sendToPrimary(message: WorkerMessage): void {
  // A worker has its IPC channel as long as it lives (cluster.fork); without it the primary is gone and the worker
  // exits on `disconnect`.
  process.send?.(message);
}

/**
 * A read worker: opens the database read-only, serves the gateway on the primary's shared socket, reports that it
 * listens (or why it could not), and closes when the primary says so.
 */
export async function runReadWorker(options: ServeOptions, settings: ServeSettings): Promise<void> {
  // The primary decides when its workers close: a terminal's Ctrl-C (and systemd's stop) signals the whole group.
  const ignore = (): void => undefined;
  process.on("SIGINT", ignore);
  process.on("SIGTERM", ignore);
  let local: Database | undefined;
  /** Set once the handle starts closing: nothing renews its reads from then on. */
  let localClosing = false;
  let app: FastifyInstance | undefined;
  let metrics: ServerMetrics | undefined;
  const renewReads = (): void => {
    if (!localClosing) local?.refresh();
  };
  const link = new PrimaryLink(renewReads);
  // The primary is gone, and with it the writer: nothing this worker answers could be kept, and a write in flight
  // (even while closing) would wait for its answer forever.
  process.on("disconnect", () => process.exit(1));
  process.on("message", (message: PrimaryMessage) => {
    switch (message.type) {
      case "answer":
      case "error":
        link.answered(message);
        return;
      case "refresh":
        // Before this worker's open finished there is nothing to renew: it renews once open (below).
        renewReads();
        sendToPrimary({ type: "refreshed", id: message.id });
        return;
      case "metrics":
        void metrics?.json().then((json) => sendToPrimary({ type: "metrics", id: message.id, metrics: json }));
        return;
      case "close":
        void (async () => {
          // Requests in flight finish first, their writes answered (and renewed) by the primary meanwhile.
          await app?.close();
          localClosing = true;
          await local?.close();
          process.exit(0);
        })();
        return;
    }
  });
  try {
    const schema = options.project === undefined ? undefined : loadSchemaSources(options.project);
    local = await Database.open({ storage: { disk: settings.data }, mode: "readonly", schema, embedder: settings.embedder }, { defaultTimeoutMs: settings.timeoutMs });
    // A commit acknowledged while this open ran may have been read past: renew once, now that there is a handle.
    local.refresh();
    const database = new WorkerDatabase(local, link);
    metrics = new ServerMetrics(database);
    app = await buildGateway({ database, logger: settings.logger, localAccess: settings.localAccess, metrics, scrapeMetrics: () => link.scrape() });
    try {
      await app.listen({ port: settings.port, host: settings.host });
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new SilkError("invalid_option", `cannot listen on ${settings.host}:${settings.port}: ${reason}`);
    }
    sendToPrimary({ type: "listening", address: app.server.address() as AddressInfo });
  } catch (cause) {
    // Sent before the exit below: the primary reports this error rather than a bare exit code.
    await new Promise<void>((resolve) => process.send?.({ type: "failed", error: wireError(cause) } satisfies WorkerMessage, undefined, undefined, () => resolve()));
    await app?.close();
    await local?.close();
    process.exit(1);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The primary.

/** One forked worker, as the primary tracks it. */
interface Slot {
  readonly worker: Worker;
  /** Whether it listens (and so serves); a worker that exits before is a failed start. */
  listening: boolean;
  /** Answers the primary awaits from it (refreshes, metrics): each settles when it answers or exits. */
  readonly waiting: Map<number, (value: MetricsJson | undefined) => void>;
}

/** The primary's own figures: how many workers listen, and how many it replaced. */
class PoolMetrics {
  readonly registry = new Registry();
  readonly workers = new Gauge({ name: "silk_workers", help: "read workers of silk serve --workers that listen", registers: [this.registry] });
  readonly restarts = new Counter({ name: "silk_worker_restarts_total", help: "read workers that exited after they served and were replaced", registers: [this.registry] });
}

/** The read workers of one `silk serve --workers N`, and the writer they send their writes to. */
class WorkerPool {
  private readonly slots = new Map<number, Slot>();
  private nextId = 0;
  private closing = false;
  private readonly started: Promise<AddressInfo>;
  private startedSettle!: { resolve: (address: AddressInfo) => void; reject: (error: Error) => void };
  private allExited: (() => void) | undefined;
  private readonly failures = new Map<number, WireError>();
  private readonly poolMetrics = new PoolMetrics();
  private readonly writerMetrics: ServerMetrics;

  constructor(
    private readonly writer: Database,
    private readonly count: number,
    private readonly logger: Logger,
    /** Called when a worker fails after the pool started (a replacement that could not start): the server stops. */
    private readonly onFatal: (error: SilkError) => void,
  ) {
    this.started = new Promise((resolve, reject) => (this.startedSettle = { resolve, reject }));
    // Its request metrics stay empty (the writer serves no HTTP): it contributes the transactions, the LMDB gauges
    // and the primary's process metrics to the aggregate.
    this.writerMetrics = new ServerMetrics(writer);
  }

  /** Forks every worker; resolves with the address once all of them listen, rejects if one fails first. */
  start(): Promise<AddressInfo> {
    // Structured clone, not JSON, on the IPC channel: trees may hold bigints (integers beyond 2^53).
    cluster.setupPrimary({ serialization: "advanced" });
    for (let i = 0; i < this.count; i += 1) this.fork();
    return this.started;
  }

  private fork(): void {
    const worker = cluster.fork();
    const slot: Slot = { worker, listening: false, waiting: new Map() };
    this.slots.set(worker.id, slot);
    this.logger.info({ worker: worker.id, workerPid: worker.process.pid }, `read worker ${worker.id} started (pid ${worker.process.pid})`);
    worker.on("message", (message: WorkerMessage) => this.received(slot, message));
    // A send to a worker that is exiting fails here rather than as an unhandled 'error'; its exit is handled below.
    worker.on("error", (cause: Error) => this.logger.warn({ worker: worker.id, err: cause }, `read worker ${worker.id}: ${cause.message}`));
    worker.on("exit", (code: number | null, signal: string | null) => this.exited(slot, code, signal));
  }

  private received(slot: Slot, message: WorkerMessage): void {
    switch (message.type) {
      case "listening":
        slot.listening = true;
        if ([...this.slots.values()].every((other) => other.listening)) this.startedSettle.resolve(message.address);
        return;
      case "failed":
        this.failures.set(slot.worker.id, message.error);
        return;
      case "write_v2":
        this.write(slot, message.id, () => this.writer.runV2(message.tree).then(stringifyJson));
        return;
      case "write_query":
        this.write(slot, message.id, () => this.writer.queryJson(message.name, message.parameters));
        return;
      case "index_statuses":
        this.answer(slot, message.id, this.writer.indexStatuses());
        return;
      case "scrape":
        this.answer(slot, message.id, this.scrape());
        return;
      case "metrics":
      case "refreshed":
        slot.waiting.get(message.id)?.(message.type === "metrics" ? message.metrics : undefined);
        slot.waiting.delete(message.id);
        return;
    }
  }

  /** Runs a write; once it ended (committed or not), every other worker renews its reads, then the sender is answered. */
  private write(slot: Slot, id: number, run: () => Promise<string>): void {
    const outcome = run();
    const renewed = outcome.then(
      () => this.renewOthers(slot),
      () => this.renewOthers(slot),
    );
    this.answer(slot, id, renewed.then(() => outcome));
  }

  private renewOthers(sender: Slot): Promise<unknown> {
    const others = [...this.slots.values()].filter((slot) => slot !== sender);
    return Promise.all(others.map((slot) => this.ask(slot, (id) => ({ type: "refresh", id }))));
  }

  /** Sends a request to a worker; settles with its answer, or undefined when it exits first. */
  private ask(slot: Slot, message: (id: number) => PrimaryMessage): Promise<MetricsJson | undefined> {
    const id = (this.nextId += 1);
    return new Promise((resolve) => {
      slot.waiting.set(id, resolve);
      if (!slot.worker.isConnected()) {
        slot.waiting.delete(id);
        resolve(undefined);
        return;
      }
      slot.worker.send(message(id));
    });
  }

  private answer(slot: Slot, id: number, value: Promise<unknown>): void {
    value.then(
      (result) => this.send(slot, { type: "answer", id, value: result }),
      (cause: unknown) => this.send(slot, { type: "error", id, error: wireError(cause) }),
    );
  }

  private send(slot: Slot, message: PrimaryMessage): void {
    // A worker that died meanwhile took its connection (and the client waiting on this answer) with it.
    if (slot.worker.isConnected()) slot.worker.send(message);
  }

  /** Every listening worker's metrics, the writer's and the primary's own, added up (gateway/metrics.ts). */
  private async scrape(): Promise<string> {
    const listening = [...this.slots.values()].filter((slot) => slot.listening);
    this.poolMetrics.workers.set(listening.length);
    const workers = await Promise.all(listening.map((slot) => this.ask(slot, (id) => ({ type: "metrics", id }))));
    const sets = workers.filter((set): set is MetricsJson => set !== undefined);
    return aggregateMetrics([...sets, await this.writerMetrics.json(), await this.poolMetrics.registry.getMetricsAsJSON()]);
  }

  private exited(slot: Slot, code: number | null, signal: string | null): void {
    this.slots.delete(slot.worker.id);
    for (const settle of slot.waiting.values()) settle(undefined);
    slot.waiting.clear();
    const how = signal === null ? `with code ${code}` : `on ${signal}`;
    if (this.closing) {
      if (this.slots.size === 0) this.allExited?.();
      return;
    }
    if (!slot.listening) {
      // It never served: its open or its listen failed, and a replacement would fail the same way.
      const failure = this.failures.get(slot.worker.id);
      const error = failure === undefined
        ? new SilkError("internal", `internal error (a bug in Silk): read worker ${slot.worker.id} exited ${how} before it listened`)
        : new SilkError(failure.code, failure.message);
      this.failures.delete(slot.worker.id);
      this.startedSettle.reject(error);
      this.onFatal(error);
      return;
    }
    this.logger.error({ worker: slot.worker.id, workerPid: slot.worker.process.pid, code, signal }, `read worker ${slot.worker.id} (pid ${slot.worker.process.pid}) exited ${how}; starting another`);
    this.poolMetrics.restarts.inc();
    this.fork();
  }

  /** Tells every worker to close (each finishes its requests in flight) and resolves once all have exited. */
  close(): Promise<void> {
    this.closing = true;
    if (this.slots.size === 0) return Promise.resolve();
    const exited = new Promise<void>((resolve) => (this.allExited = resolve));
    for (const slot of this.slots.values()) this.send(slot, { type: "close" });
    return exited;
  }
}

/**
 * The primary of `silk serve --workers N`: opens the writer (which recovers and migrates before any worker opens),
 * forks the workers, and prints the start line once every one of them listens. Resolves then; the process lives
 * until a signal closes it (bin/serve.ts closeOnSignals).
 */
export async function runServeWorkers(
  options: ServeOptions,
  settings: ServeSettings,
  count: number,
): Promise<{ readonly pool: { close(): Promise<void> }; readonly writer: Database }> {
  const schema = options.project === undefined ? undefined : loadSchemaSources(options.project);
  const writer = await Database.open({ storage: { disk: settings.data }, schema, embedder: settings.embedder }, { defaultTimeoutMs: settings.timeoutMs });
  const partitions = (await writer.statistics()).partitions.length;
  if (partitions > 1) {
    await writer.close();
    throw new SilkError(
      "invalid_option",
      `--workers ${count} serves a one-partition database, and ${settings.data} has ${partitions} partitions: their reads take the coordinator's readers/writer lock, which only the writer's process holds (serve it with --workers 1)`,
    );
  }
  let stopping: Promise<void> | undefined;
  let started = false;
  const pool: WorkerPool = new WorkerPool(writer, count, settings.logger, (error) => {
    // A worker failed to start: stop everything, loudly. Before the pool started, runServe reports the error.
    if (stopping !== undefined) return;
    stopping = pool.close().then(() => writer.close());
    void stopping.then(() => {
      if (started) {
        settings.logger.error({ err: error }, `stopping: ${error.code}: ${error.message}`);
        process.exitCode = 1;
      }
    });
  });
  let address: AddressInfo;
  try {
    address = await pool.start();
  } catch (cause) {
    await stopping;
    throw cause;
  }
  started = true;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  process.stdout.write(`silk: serving ${options.project ?? "a schemaless database"} on http://${shown}:${address.port} (data in ${settings.data}, ${count} read workers)\n`);
  return { pool, writer };
}
