/**
 * `silk cluster up|down|status --dir DIR`: a development cluster on this machine (docs/CLUSTER.md).
 *
 * - up: writes DIR/cluster.json (cluster/nats/manifest.ts), starts a three-server NATS JetStream cluster
 *   (cluster/nats/servers.ts, under DIR/nats), one `silk partition` process per replica of every partition, waits
 *   until every partition has a leader, then starts one `silk serve --cluster DIR` and waits until it answers
 *   /health, then starts its supervisor (`silk cluster supervise --dir DIR`, cluster/nats/supervisor.ts), which
 *   restarts any of them that dies. Every process is detached and outlives the command; their IDs go to
 *   DIR/processes.json at once, so `down` stops what `up` started even when `up` failed half-way (up then stops
 *   them itself).
 * - down: stops the supervisor first (so nothing is restarted under it), then SIGTERM to the serve and replica
 *   processes, SIGKILL after a grace period, NATS servers last: those processes.json records now (restarted ones
 *   included) and any other process of this cluster directory found on the machine (started by hand).
 * - status: every recorded process (pid, alive or dead, restarts), each partition's leader (from its lease), the
 *   log's last sequence and each replica's applied sequence
 *   (read from its LMDB, read-only, as a second reader does), the partition map's version and ranges, the entries
 *   the log holds (first..last, count, bytes: truncation moves the first) and its latest snapshot's sequence and size.
 * - add-partition: asks the coordinator (admin subject, cluster/nats/rebalance.ts) to carve partition N's allocation
 *   range, records N in cluster.json, starts N's replica processes, waits for N's leader, then asks the coordinator
 *   to make N serve. Run again after a failure, it reuses the partition already carved.
 * - add-partition --existing --partition P: the same without starting or recording anything, for replicas started
 *   by someone else (Kubernetes: deploy/kubernetes/jobs/add-partition.yaml): carve, wait for P's leader, activate.
 * - move --from P --to Q [--ids N]: asks the coordinator to move the upper N (default half) of P's used IDs to Q,
 *   chunk by chunk, and waits for it to finish.
 * - replace-replica --partition P --replica R --store NEW: stops replica R of P if it still runs, records NEW as its
 *   store in cluster.json, starts it there (it bootstraps from the latest snapshot and the log's tail) and waits
 *   until it has applied the log as far as it reached when the command began.
 * - supervise: the supervisor `up` starts (not for operators to run).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { pino } from "pino";
import {
  CLUSTER_FORMAT,
  checkClusterManifest,
  clusterPaths,
  NATS_SERVERS_ENV,
  clusterProcessEntries,
  readClusterManifest,
  replicaDirectories,
  replicaName,
  streamReplicas,
  readClusterProcesses,
  updateClusterProcesses,
  withProcess,
  writeClusterManifest,
  writeClusterProcesses,
  type ClusterManifest,
  type ClusterProcesses,
} from "../cluster/nats/manifest.js";
import { ClusterSupervisor, isClusterProcess, startClusterProcess, SUPERVISOR_POLL_MS, unrecordedClusterProcesses, withHold } from "../cluster/nats/supervisor.js";
import { freePort, LocalNatsCluster, type RouteVia } from "../cluster/nats/servers.js";
import { MapStore } from "../cluster/nats/map-store.js";
import { subjects } from "../cluster/nats/subjects.js";
import { leaseHolders, readClusterStatus } from "../cluster/nats/cluster-status.js";
import type { LeaseValue } from "../cluster/nats/lease.js";
import { PartitionStore } from "../node/store/partition-store.js";
import { SilkError } from "../protocol/errors.js";
import { SERVE_PORT_DEFAULT } from "./defaults.js";
import { processAlive, processCommand } from "../platform/processes.js";

/** How long `up` waits for leaders and for the server's /health. */
export const CLUSTER_UP_TIMEOUT_MS = 60_000;
/** How long `down` waits after SIGTERM before SIGKILL. */
export const CLUSTER_STOP_GRACE_MS = 5_000;

export interface ClusterUpOptions {
  readonly dir: string;
  readonly project: string;
  readonly partitions: number;
  readonly replicas: number;
  readonly port: number;
  readonly name: string;
  /**
   * The NATS URLs a replica (`p<i>-r<r>`) or the server (`serve`) is given instead of the servers' own, through
   * SILK_NATS_SERVERS (the chaos harness's proxies); default: the servers' URLs from cluster.json.
   */
  readonly natsServersFor?: (process: string, servers: readonly string[]) => Promise<readonly string[]>;
  /** Where each NATS server's route to another goes instead of its cluster port (the chaos harness's route proxies). */
  readonly natsRouteVia?: RouteVia;
  /** false: start no supervisor (a test or an operator that restarts processes itself); default true. */
  readonly supervise?: boolean;
}

export interface CommandOutput {
  write(text: string): unknown;
}

/**
 * Starts `silk <args>` detached, with its stdout and stderr appended to `outFile`; returns its pid. `onExit` is called
 * if it exits while this process still runs (`up` fails on a process that exits during start-up).
 */
export function spawnSilk(args: readonly string[], outFile: string, natsServers?: readonly string[], onExit?: (code: number | null, signal: NodeJS.Signals | null) => void): number {
  const out = openSync(outFile, "a");
  try {
    const env = natsServers === undefined ? process.env : { ...process.env, [NATS_SERVERS_ENV]: natsServers.join(",") };
    // The same Node flags (tsx's loader when run from source) and the same entry script as this command.
    const child = spawn(process.execPath, [...process.execArgv, process.argv[1], ...args], { detached: true, stdio: ["ignore", out, out], env });
    if (onExit !== undefined) child.once("exit", onExit);
    child.unref();
    if (child.pid === undefined) throw new SilkError("internal", `could not start silk ${args.join(" ")}`);
    return child.pid;
  } finally {
    closeSync(out);
  }
}

/** A process `up` started exited before the cluster was up: no use waiting on. */
class StartFailed extends SilkError {
  constructor(message: string) {
    super("partition_unavailable", message);
  }
}

/** How much of a failed process's log `up` shows. */
const LOG_TAIL_LINES = 20;
const LOG_TAIL_BYTES = 4_096;

/** The last lines of a log file ("" when it is missing or empty). */
export function logTail(path: string): string {
  let text: string;
  try {
    const size = statSync(path).size;
    const fd = openSync(path, "r");
    try {
      const length = Math.min(size, LOG_TAIL_BYTES);
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, size - length);
      text = buffer.toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return "";
  }
  return text.trimEnd().split("\n").slice(-LOG_TAIL_LINES).join("\n");
}

/** The processes `up` started, and those of them that exited (a replica, the server) while it waited. */
class StartWatch {
  private readonly exits: { name: string; code: number | null; signal: NodeJS.Signals | null; logs: readonly string[] }[] = [];

  constructor(private readonly nats: LocalNatsCluster) {}

  /** What spawnSilk calls when the process `name` (logging to `logs`, most telling first) exits. */
  onExit(name: string, logs: readonly string[]): (code: number | null, signal: NodeJS.Signals | null) => void {
    return (code, signal) => this.exits.push({ name, code, signal, logs });
  }

  /** Throws StartFailed naming the first started process that exited, how, and the end of its log. */
  check(): void {
    const server = this.nats.exited();
    const exit = this.exits[0] ?? (server === undefined ? undefined : { name: `nats-server ${server.spec.name}`, code: server.code, signal: server.signal, logs: [server.spec.logFile] });
    if (exit === undefined) return;
    const how = exit.signal === null ? `with code ${exit.code}` : `on signal ${exit.signal}`;
    const log = exit.logs.find((path) => logTail(path) !== "");
    const tail = log === undefined ? `its log (${exit.logs.join(", ")}) is empty` : `the end of ${log}:\n${logTail(log).replace(/^/gm, "  | ")}`;
    throw new StartFailed(`${exit.name} exited ${how} while the cluster was starting; ${tail}`);
  }
}

async function waitFor<T>(what: string, deadline: number, probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await probe().catch((cause: unknown) => {
      // A process that exited is not coming up: fail now, not at the deadline.
      if (cause instanceof StartFailed) throw cause;
      return undefined;
    });
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new SilkError("partition_unavailable", `timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** Each partition's lease holder, undefined where none holds it (or the bucket does not exist yet). */
function leaders(nc: NatsConnection, manifest: ClusterManifest): Promise<(LeaseValue | undefined)[]> {
  return leaseHolders(nc, manifest.name, manifest.partitions);
}

/** `timeoutMs` bounds the wait for leaders and for /health (`silk chaos run` waits longer: it starts clusters on
 *  machines it is about to load). */
export async function runClusterUp(options: ClusterUpOptions, out: CommandOutput, timeoutMs = CLUSTER_UP_TIMEOUT_MS): Promise<void> {
  const dir = resolve(options.dir);
  const previous = readClusterProcesses(dir);
  if (previous !== undefined && everyPid(previous).some((pid) => isClusterProcess(dir, pid))) {
    throw new SilkError("invalid_option", `a cluster is already running in ${dir} (silk cluster down --dir ${options.dir} stops it)`);
  }
  const port = options.port === 0 ? await freePort() : options.port;
  // Checked before anything starts (NATS URLs are filled in once the servers run).
  checkClusterManifest({ format: CLUSTER_FORMAT, name: options.name, nats: ["nats://127.0.0.1:4222"], partitions: options.partitions, replicas: options.replicas, project: resolve(options.project), port }, "the options");
  if (!existsSync(options.project)) throw new SilkError("invalid_option", `the project directory ${options.project} does not exist`);
  mkdirSync(clusterPaths.logs(dir), { recursive: true });
  rmSync(clusterPaths.nats(dir), { recursive: true, force: true }); // a fresh NATS cluster: its ports are new
  const nats = await LocalNatsCluster.start(clusterPaths.nats(dir), { routeVia: options.natsRouteVia });
  const processes: { nats: Record<string, number>; replicas: Record<string, number>; serve?: number; supervisor?: number } = { nats: nats.pids(), replicas: {} };
  writeClusterProcesses(dir, processes);
  const watch = new StartWatch(nats);
  const manifest: ClusterManifest = { format: CLUSTER_FORMAT, name: options.name, nats: nats.urls, partitions: options.partitions, replicas: options.replicas, project: resolve(options.project), port };
  try {
    writeClusterManifest(dir, manifest);
    const mapConnection = await connect({ servers: nats.urls });
    try {
      await (await MapStore.open({ nc: mapConnection, cluster: manifest.name, replicas: streamReplicas(manifest) })).load(manifest.partitions);
    } finally {
      await mapConnection.close();
    }
    for (let partition = 0; partition < manifest.partitions; partition++) {
      for (let replica = 0; replica < manifest.replicas; replica++) {
        const args = ["partition", "--dir", dir, "--partition", String(partition), "--replica", String(replica)];
        const name = `p${partition}-r${replica}`;
        const log = clusterPaths.replicaLog(dir, partition, replica);
        processes.replicas[name] = spawnSilk(args, `${log}.out`, await options.natsServersFor?.(name, nats.urls), watch.onExit(`replica ${name}`, [`${log}.out`, log]));
        writeClusterProcesses(dir, processes);
      }
    }
    const deadline = Date.now() + timeoutMs;
    const nc = await connect({ servers: nats.urls });
    try {
      await waitFor("a leader of every partition", deadline, async () => {
        watch.check();
        return (await leaders(nc, manifest)).every((leader) => leader !== undefined) ? true : undefined;
      }).catch((cause: unknown) => {
        throw cause instanceof SilkError ? cause : new SilkError("partition_unavailable", String(cause));
      });
    } finally {
      await nc.close();
    }
    processes.serve = spawnSilk(["serve", "--cluster", dir, "--port", String(port)], `${clusterPaths.serveLog(dir)}`, await options.natsServersFor?.("serve", nats.urls), watch.onExit("serve", [clusterPaths.serveLog(dir)]));
    writeClusterProcesses(dir, processes);
    await waitFor(`the server's /health on port ${port}`, deadline, async () => {
      watch.check();
      const response = await fetch(`http://127.0.0.1:${port}/health`);
      return response.ok ? true : undefined;
    });
    watch.check();
    if (options.supervise !== false) {
      // Last: a supervisor started earlier would restart a process that failed to start, and `up` would not fail.
      const supervisor = spawnSilk(["cluster", "supervise", "--dir", dir], `${clusterPaths.supervisorLog(dir)}.out`);
      processes.supervisor = supervisor;
      // Only this field: the supervisor may have recorded a restart already.
      updateClusterProcesses(dir, (current) => ({ ...current, supervisor }));
    }
  } catch (cause) {
    await stopProcesses(dir, processes);
    rmSync(clusterPaths.processes(dir), { force: true });
    throw cause;
  }
  out.write(
    [
      `silk: cluster ${manifest.name} is up in ${dir}`,
      `  nats: ${manifest.nats.join(" ")} (pids ${Object.values(processes.nats).join(" ")})`,
      `  partitions: ${manifest.partitions} x ${manifest.replicas} replicas (pids ${Object.values(processes.replicas).join(" ")})`,
      `  serving ${manifest.project} on http://127.0.0.1:${port} (pid ${processes.serve})`,
      processes.supervisor === undefined ? "  not supervised (--no-supervise): a process that dies stays down" : `  supervised (a process that dies is started again) by pid ${processes.supervisor}`,
      `  logs: ${clusterPaths.logs(dir)}; stop it with: silk cluster down --dir ${options.dir}`,
      "",
    ].join("\n"),
  );
}

function everyPid(processes: ClusterProcesses): number[] {
  return [...clusterProcessEntries(processes).map(([, pid]) => pid), ...(processes.supervisor === undefined ? [] : [processes.supervisor])];
}

/** SIGTERM, then SIGKILL after the grace period; resolves when none is alive. */
async function stopAll(pids: readonly number[]): Promise<void> {
  const running = pids.filter(processAlive);
  for (const pid of running) signal(pid, "SIGTERM");
  const deadline = Date.now() + CLUSTER_STOP_GRACE_MS;
  while (running.some(processAlive) && Date.now() < deadline) await sleep(100);
  for (const pid of running.filter(processAlive)) signal(pid, "SIGKILL");
  while (running.some(processAlive)) await sleep(50);
}

/** A signal to a process that may have exited since it was found alive. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== "ESRCH") throw cause;
  }
}

/**
 * Stops the cluster's processes: its supervisor first (nothing is restarted after that), then, as processes.json
 * records them once the supervisor is gone, the serve process, the replicas (a leader gives its lease up) and the
 * NATS servers last, each group with the processes of this directory that nothing recorded (started by hand). Only
 * live processes of this cluster are signalled (a recorded pid may name another program by now). Resolves to how
 * many were stopped and how many recorded ones were not running.
 */
async function stopProcesses(dir: string, processes: ClusterProcesses): Promise<{ stopped: number; notRunning: number }> {
  const ours = (pid: number): boolean => isClusterProcess(dir, pid);
  const supervisor = processes.supervisor === undefined ? [] : [processes.supervisor].filter(ours);
  await stopAll(supervisor);
  const current = readClusterProcesses(dir) ?? processes;
  const recorded = clusterProcessEntries(current);
  const strays = unrecordedClusterProcesses(dir, [...everyPid(current), ...everyPid(processes)]);
  const live = recorded.filter(([, pid]) => ours(pid));
  const isNats = (pid: number): boolean => Object.values(current.nats).includes(pid) || /nats-server/.test(processCommandText(pid));
  const groups = [
    current.serve === undefined ? [] : [current.serve].filter(ours),
    live.filter(([name]) => /^p\d+-r\d+$/.test(name)).map(([, pid]) => pid),
    strays.filter((pid) => !isNats(pid)),
    live.filter(([name]) => name in current.nats).map(([, pid]) => pid),
    strays.filter(isNats),
  ];
  for (const group of groups) await stopAll(group);
  return { stopped: supervisor.length + live.length + strays.length, notRunning: recorded.length - live.length };
}

function processCommandText(pid: number): string {
  return processCommand(pid)?.argv.join(" ") ?? "";
}

export async function runClusterDown(dir: string, out: CommandOutput): Promise<void> {
  const directory = resolve(dir);
  const processes = readClusterProcesses(directory);
  if (processes === undefined) {
    out.write(`silk: no cluster processes recorded in ${dir}\n`);
    return;
  }
  const { stopped, notRunning } = await stopProcesses(directory, processes);
  rmSync(clusterPaths.processes(directory), { force: true });
  out.write(`silk: stopped ${stopped} processes of the cluster in ${dir}${notRunning === 0 ? "" : ` (${notRunning} recorded were not running)`}\n`);
}

/** One line per recorded process: its name, pid, whether it runs, and how often the supervisor restarted it. */
function processLines(dir: string, processes: ClusterProcesses): string[] {
  const restarts = processes.restarts ?? {};
  const held = new Set(processes.held ?? []);
  const line = (name: string, pid: number): string => {
    const count = restarts[name] ?? 0;
    const notes = [count === 0 ? "" : `${count} restart${count === 1 ? "" : "s"}`, held.has(name) ? "held down" : ""].filter((note) => note !== "");
    return `  ${name}: pid ${pid} ${isClusterProcess(dir, pid) ? "alive" : "dead"}${notes.length === 0 ? "" : `, ${notes.join(", ")}`}`;
  };
  return [
    processes.supervisor === undefined ? "supervisor: none" : `supervisor: pid ${processes.supervisor} ${isClusterProcess(dir, processes.supervisor) ? "alive" : "dead"}`,
    ...clusterProcessEntries(processes).map(([name, pid]) => line(name, pid)),
  ];
}

export async function runClusterStatus(dir: string, out: CommandOutput): Promise<void> {
  const directory = resolve(dir);
  const manifest = readClusterManifest(directory);
  out.write(`cluster ${manifest.name}: ${manifest.partitions} partitions x ${manifest.replicas} replicas, nats ${manifest.nats.join(" ")}\n`);
  // The processes first: they need no NATS, and tell why NATS might not answer.
  const processes = readClusterProcesses(directory);
  out.write(`${(processes === undefined ? ["processes: none recorded"] : processLines(directory, processes)).join("\n")}\n`);
  const nc = await connect({ servers: [...manifest.nats], timeout: 2_000 }).catch((cause: unknown) => {
    throw new SilkError("partition_unavailable", `cannot reach NATS at ${manifest.nats.join(", ")}: ${(cause as Error).message}`);
  });
  try {
    const status = await readClusterStatus(nc, directory, manifest);
    out.write(`map version ${status.mapVersion}${status.pending === null ? "" : `, partition ${status.pending} being added`}\n`);
    for (const partition of status.partitions) {
      const leader = partition.leader === null ? "none" : `${partition.leader} (term ${partition.term})`;
      const applied = partition.replicas.map((replica) => `${replica.replica}=${replica.applied ?? "none"}`);
      out.write(`p${partition.partition}: leader ${leader}, log last sequence ${partition.log?.last ?? "none"}, applied ${applied.join(" ")}\n`);
      out.write(`  owns ${partition.ranges.map((range) => `${range.first}..${range.last}`).join(" ")}\n`);
      const { log, snapshot } = partition;
      const entries = log === null ? "no log" : `log holds ${log.first}..${log.last} (${log.entries} entries, ${log.bytes} bytes)`;
      out.write(`  ${entries}, ${snapshot === null ? "no snapshot" : `latest snapshot at ${snapshot.sequence} (${snapshot.bytes} bytes)`}\n`);
    }
  } finally {
    await nc.close();
  }
}

/** How long `replace-replica` waits for the new replica to apply the log (a bootstrap downloads a whole store). */
export const CLUSTER_REPLACE_TIMEOUT_MS = 600_000;

export interface ReplaceReplicaOptions {
  readonly dir: string;
  readonly partition: number;
  readonly replica: number;
  readonly store: string;
}

/**
 * Replaces replica R of partition P by a new one whose store is NEW: holds R down (the supervisor leaves it alone),
 * stops it if it still runs, records NEW in cluster.json's `stores`, starts `silk partition` for R (an empty store
 * bootstraps from the partition's latest snapshot and the log's tail, or replays the log), lets the supervisor watch
 * it again, and waits until it has applied the log as far as the log reached when the command began.
 */
export async function runClusterReplaceReplica(options: ReplaceReplicaOptions, out: CommandOutput): Promise<void> {
  const directory = resolve(options.dir);
  const manifest = readClusterManifest(directory);
  if (options.partition >= manifest.partitions) throw new SilkError("invalid_option", `--partition must be from 0 to ${manifest.partitions - 1}, not ${options.partition}`);
  if (options.replica >= manifest.replicas) throw new SilkError("invalid_option", `--replica must be from 0 to ${manifest.replicas - 1}, not ${options.replica}`);
  const name = replicaName(options.partition, options.replica);
  const store = resolve(options.store);
  if (store === replicaDirectories(directory, manifest, options.partition, options.replica).store) throw new SilkError("invalid_option", `${store} is already the store of replica ${name}`);
  // A store found there would be taken for this replica's: only a new or empty directory.
  if (existsSync(store) && readdirSync(store).length > 0) throw new SilkError("invalid_option", `${store} is not empty: name a new or empty directory for replica ${name}'s store`);
  const processes = readClusterProcesses(directory);
  if (processes === undefined) throw new SilkError("invalid_option", `no cluster is running in ${directory} (silk cluster up --dir ${options.dir})`);
  await withNats(manifest, async (nc) => {
    const target = await (await jetstreamManager(nc, { checkAPI: false })).streams.info(subjects.logStream(manifest.name, options.partition)).then(
      (info) => info.state.last_seq,
      (cause: unknown) => {
        throw new SilkError("partition_unavailable", `cannot read partition ${options.partition}'s log: ${(cause as Error).message}`);
      },
    );
    const held = updateClusterProcesses(directory, (current) => withHold(current, name, true));
    const old = held.replicas[name];
    const stopped = old !== undefined && isClusterProcess(directory, old);
    if (stopped) await stopAll([old]);
    const current = readClusterManifest(directory);
    writeClusterManifest(directory, { ...current, stores: { ...current.stores, [name]: store } });
    let pid = 0;
    updateClusterProcesses(directory, (recorded) => {
      pid = startClusterProcess(directory, current, name, spawnSilk);
      const { [name]: _restarts, ...restarts } = recorded.restarts ?? {};
      return { ...withHold(withProcess(recorded, name, pid), name, false), restarts };
    });
    const deadline = Date.now() + CLUSTER_REPLACE_TIMEOUT_MS;
    for (;;) {
      const applied = appliedSequenceAt(store);
      if (applied !== undefined && applied >= target) {
        out.write(
          `silk: replica ${name} of partition ${options.partition} runs on ${store} (pid ${pid})${stopped ? `, the old one (pid ${old}) stopped` : ""}; ` +
            `it applied the log through sequence ${applied} (the log's last was ${target})\n`,
        );
        return;
      }
      if (Date.now() > deadline) throw new SilkError("partition_unavailable", `replica ${name} did not apply the log up to ${target} within ${CLUSTER_REPLACE_TIMEOUT_MS} ms (see ${clusterPaths.replicaLog(directory, options.partition, options.replica)})`);
      await sleep(200);
    }
  });
}

/** A store's applied log sequence, undefined while it has none (or is being moved in by a bootstrap). */
function appliedSequenceAt(path: string): number | undefined {
  try {
    return PartitionStore.appliedLogSequenceAt(path);
  } catch {
    return undefined;
  }
}

/**
 * Runs the supervisor until SIGTERM, or until processes.json is removed or names another supervisor. It first records
 * itself as the cluster's supervisor, unless a live one is recorded (refused: `invalid_option`), so one started by
 * hand takes over from a supervisor that died.
 */
export async function runClusterSupervise(dir: string): Promise<void> {
  const directory = resolve(dir);
  readClusterManifest(directory); // a cluster directory, or a refusal now
  if (readClusterProcesses(directory) === undefined) throw new SilkError("invalid_option", `no cluster processes recorded in ${directory} (silk cluster up --dir ${dir})`);
  const claimed = updateClusterProcesses(directory, (current) =>
    current.supervisor !== undefined && current.supervisor !== process.pid && isClusterProcess(directory, current.supervisor) ? current : { ...current, supervisor: process.pid },
  );
  if (claimed.supervisor !== process.pid) throw new SilkError("invalid_option", `the cluster in ${directory} is supervised already, by pid ${claimed.supervisor}`);
  const logger = pino({ name: "silk-supervisor", level: process.env.SILK_LOG_LEVEL ?? "info" }, pino.destination({ dest: clusterPaths.supervisorLog(directory), mkdir: true, sync: true }));
  const supervisor = new ClusterSupervisor({
    dir: directory,
    // The manifest read again at each start: add-partition and replace-replica change it.
    start: (name) => startClusterProcess(directory, readClusterManifest(directory), name, spawnSilk),
    alive: (pid) => isClusterProcess(directory, pid),
    now: () => Date.now(),
    log: (event) => logger.info(event, event.event),
  });
  let stopping = false;
  const stop = (): void => {
    stopping = true;
  };
  process.once("SIGTERM", stop).once("SIGINT", stop);
  logger.info({ pid: process.pid }, "supervisor started");
  while (!stopping && supervisor.tick(process.pid)) await sleep(SUPERVISOR_POLL_MS);
  logger.info("supervisor stopped");
}

/** Sends one admin request to the cluster's coordinator and returns its answer; its refusal is thrown as it was. */
async function adminRequest(nc: NatsConnection, cluster: string, request: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>> {
  let reply;
  try {
    reply = await nc.request(subjects.admin(cluster), new TextEncoder().encode(JSON.stringify(request)), { timeout: timeoutMs });
  } catch (cause) {
    throw new SilkError("partition_unavailable", `the cluster's coordinator (silk serve --cluster) did not answer ${String(request.action)}: ${(cause as Error).message}`);
  }
  const answer = JSON.parse(new TextDecoder().decode(reply.data)) as Record<string, unknown>;
  if (answer.ok !== true) throw new SilkError(answer.code as ConstructorParameters<typeof SilkError>[0], String(answer.message));
  return answer;
}

async function withNats<T>(manifest: ClusterManifest, work: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connect({ servers: [...manifest.nats], timeout: 2_000 }).catch((cause: unknown) => {
    throw new SilkError("partition_unavailable", `cannot reach NATS at ${manifest.nats.join(", ")}: ${(cause as Error).message}`);
  });
  try {
    return await work(nc);
  } finally {
    await nc.close();
  }
}

/** How long `move` waits for the coordinator to finish (a move of millions of IDs takes a while). */
export const CLUSTER_MOVE_TIMEOUT_MS = 3_600_000;

export async function runClusterAddPartition(dir: string, out: CommandOutput): Promise<void> {
  const directory = resolve(dir);
  const manifest = readClusterManifest(directory);
  await withNats(manifest, async (nc) => {
    const carved = await adminRequest(nc, manifest.name, { action: "carve" }, 60_000);
    const partition = carved.partition as number;
    const grown: ClusterManifest = { ...manifest, partitions: Math.max(manifest.partitions, partition + 1) };
    writeClusterManifest(directory, grown);
    for (let replica = 0; replica < manifest.replicas; replica++) {
      const name = replicaName(partition, replica);
      updateClusterProcesses(directory, (processes) => {
        const running = processes.replicas[name];
        if (running !== undefined && isClusterProcess(directory, running)) return processes;
        return withProcess(processes, name, startClusterProcess(directory, grown, name, spawnSilk));
      });
    }
    const deadline = Date.now() + CLUSTER_UP_TIMEOUT_MS;
    await waitFor(`a leader of partition ${partition}`, deadline, async () => ((await leaders(nc, grown))[partition] !== undefined ? true : undefined));
    const served = await adminRequest(nc, manifest.name, { action: "activate" }, 60_000);
    out.write(`silk: partition ${partition} (IDs ${String(carved.first)}..${String(carved.last)}) serves; map version ${String(served.version)}\n`);
  });
}

/** How long `add-partition --existing` waits for the new partition's leader (its pods may still be scheduled). */
export const CLUSTER_ADD_EXISTING_TIMEOUT_MS = 600_000;

/**
 * `add-partition --existing --partition P`: the partition's replicas were started by someone else (a Kubernetes
 * StatefulSet, with cluster.json's `partitions` raised to include P); they wait for P's range (bin/partition.ts).
 * Asks the coordinator to carve it, waits for P's leader and asks the coordinator to make P serve. It writes nothing
 * and starts nothing. Run again after a failure it goes on from where it stopped; once P serves it only says so.
 */
export async function runClusterAddExistingPartition(options: { dir: string; partition: number }, out: CommandOutput, timeoutMs = CLUSTER_ADD_EXISTING_TIMEOUT_MS): Promise<void> {
  const manifest = readClusterManifest(resolve(options.dir));
  const { partition } = options;
  if (partition >= manifest.partitions) {
    throw new SilkError("invalid_option", `cluster.json names ${manifest.partitions} partitions: raise its partitions to ${partition + 1} and start partition ${partition}'s replicas first`);
  }
  await withNats(manifest, async (nc) => {
    const stored = await (await MapStore.open({ nc, cluster: manifest.name, replicas: streamReplicas(manifest) })).read();
    if (stored === undefined) throw new SilkError("invalid_option", `cluster ${manifest.name} has no partition map yet: start its partitions and coordinator first`);
    const map = stored.value;
    if (map.pending === undefined && partition < map.count) {
      out.write(`silk: partition ${partition} serves already; map version ${map.version}\n`);
      return;
    }
    const next = map.pending ?? map.count;
    if (partition !== next) throw new SilkError("invalid_option", `the partition to add next is ${next}, not ${partition}`);
    const carved = await adminRequest(nc, manifest.name, { action: "carve" }, 60_000);
    if (carved.partition !== partition) throw new SilkError("internal", `the coordinator carved partition ${String(carved.partition)}, not ${partition}`);
    await waitFor(`a leader of partition ${partition} (are its replicas running?)`, Date.now() + timeoutMs, async () => ((await leaders(nc, manifest))[partition] !== undefined ? true : undefined));
    const served = await adminRequest(nc, manifest.name, { action: "activate" }, 60_000);
    out.write(`silk: partition ${partition} (IDs ${String(carved.first)}..${String(carved.last)}) serves; map version ${String(served.version)}\n`);
  });
}

export async function runClusterMove(options: { dir: string; from: number; to: number; ids?: number }, out: CommandOutput): Promise<void> {
  const manifest = readClusterManifest(resolve(options.dir));
  await withNats(manifest, async (nc) => {
    const moved = await adminRequest(nc, manifest.name, { action: "move", from: options.from, to: options.to, ids: options.ids }, CLUSTER_MOVE_TIMEOUT_MS);
    out.write(`silk: moved ${String(moved.ids)} IDs from partition ${options.from} to ${options.to} in ${String(moved.chunks)} chunks; map version ${String(moved.version)}\n`);
  });
}
