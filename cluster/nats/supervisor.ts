/**
 * The supervisor of a development cluster (`silk cluster supervise`, started by `silk cluster up`; docs/CLUSTER.md
 * "Supervision"): it watches every process DIR/processes.json records and starts one that died again, with the same
 * command, directory and store, after an exponential backoff (platform/backoff.ts), counting the restarts in
 * processes.json, where `silk cluster status` shows them.
 *
 * Also here: how each process of a local cluster is started (the supervisor, `replace-replica` and the chaos harness
 * start them the same way), and which processes of this machine belong to a cluster directory (what `down` stops).
 *
 * Invariants:
 * - A restart is decided and recorded under processes.json's lock (updateClusterProcesses), after checking that the
 *   record still names the dead process and does not hold it down, so a process another command started or held
 *   meanwhile (the chaos harness, `replace-replica`, `add-partition`) is never started twice.
 * - The backoff grows with each restart of the same process and starts over once it has run SUPERVISOR_STABLE_MS.
 * - The supervisor reads no clock and starts nothing itself: `now`, `alive` and `start` are given (a test drives it
 *   tick by tick).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { backoffMs, type Backoff } from "../../platform/backoff.js";
import { argumentPath, processAlive, processCommand, processIds, processTableReadable } from "../../platform/processes.js";
import { SilkError } from "../../protocol/errors.js";
import { clusterPaths, clusterProcessEntries, readClusterProcesses, updateClusterProcesses, withProcess, type ClusterManifest, type ClusterProcesses } from "./manifest.js";
import { NATS_SERVER_BINARY } from "./servers.js";

/**
 * Starts `silk <args>` detached with its output appended to `outFile`, given `natsServers` in place of cluster.json's
 * when defined (SILK_NATS_SERVERS); returns its pid (bin/cluster.ts's).
 */
export type SpawnSilk = (args: readonly string[], outFile: string, natsServers?: readonly string[]) => number;

/** The wait before restarting a process that died: 0.5 s doubling to 30 s, jittered so several do not restart in step. */
export const SUPERVISOR_BACKOFF: Backoff = { firstMs: 500, maxMs: 30_000, jitter: "equal" };
/** A process that ran this long before dying is restarted after the first wait again, not a longer one. */
export const SUPERVISOR_STABLE_MS = 30_000;
/** How often the supervisor looks at the processes. */
export const SUPERVISOR_POLL_MS = 250;

/**
 * Starts process `name` of the cluster in `dir` (`n1`.., `p0-r1`.., `serve`); returns its pid. `natsServers`: the
 * NATS URLs a replica or the server is given instead of cluster.json's (the chaos harness's proxies).
 */
export function startClusterProcess(dir: string, manifest: ClusterManifest, name: string, spawnSilk: SpawnSilk, natsServers?: readonly string[]): number {
  if (name === "serve") return spawnSilk(["serve", "--cluster", dir, "--port", String(manifest.port)], clusterPaths.serveLog(dir), natsServers);
  const replica = /^p(\d+)-r(\d+)$/.exec(name);
  if (replica !== null) {
    const [partition, index] = [Number(replica[1]), Number(replica[2])];
    return spawnSilk(["partition", "--dir", dir, "--partition", String(partition), "--replica", String(index)], `${clusterPaths.replicaLog(dir, partition, index)}.out`, natsServers);
  }
  if (/^n\d+$/.test(name)) {
    // Its config (written by `up`) names its ports, store and log file: the same server, with the same store.
    const child = spawn(NATS_SERVER_BINARY, ["-c", join(clusterPaths.nats(dir), name, "nats.conf")], { stdio: "ignore", detached: true });
    child.unref();
    if (child.pid === undefined) throw new SilkError("internal", `could not start nats-server ${name}`);
    return child.pid;
  }
  throw new SilkError("invalid_option", `the cluster has no process ${name}`);
}

/**
 * Whether `pid` is a live process of the cluster in `dir` (absolute): a `silk` process whose `--dir` or `--cluster`
 * is `dir`, or a `nats-server` whose config lies under DIR/nats. Where /proc cannot be read, any live process counts
 * (the recorded ID is all there is to go by).
 */
export function isClusterProcess(dir: string, pid: number): boolean {
  if (!processAlive(pid)) return false;
  if (!processTableReadable()) return true;
  const command = processCommand(pid);
  if (command === undefined) return false;
  const { argv } = command;
  for (let index = 0; index + 1 < argv.length; index++) {
    const value = argv[index + 1];
    if ((argv[index] === "--dir" || argv[index] === "--cluster") && argumentPath(command, value) === dir) return true;
    if (argv[index] === "-c" && argumentPath(command, value).startsWith(`${clusterPaths.nats(dir)}/`)) return true;
  }
  return false;
}

/** Live processes of the cluster in `dir` that `known` does not list (started by hand, or recorded nowhere). */
export function unrecordedClusterProcesses(dir: string, known: readonly number[]): number[] {
  const recorded = new Set([...known, process.pid]);
  return processIds().filter((pid) => !recorded.has(pid) && isClusterProcess(dir, pid));
}

/** What the supervisor did, for its log. */
export type SupervisorEvent =
  | { readonly event: "died"; readonly name: string; readonly pid: number; readonly restartInMs: number }
  | { readonly event: "restarted"; readonly name: string; readonly pid: number; readonly previous: number; readonly restarts: number }
  | { readonly event: "start_failed"; readonly name: string; readonly message: string };

export interface SupervisorOptions {
  readonly dir: string;
  readonly start: (name: string) => number;
  readonly alive: (pid: number) => boolean;
  readonly now: () => number;
  readonly log: (event: SupervisorEvent) => void;
  /** In [0, 1), for the backoff's jitter (default Math.random). */
  readonly random?: () => number;
}

interface Watch {
  pid: number;
  /** When this pid was first seen alive, or started. */
  since: number;
  /** Restarts since the process last ran SUPERVISOR_STABLE_MS: the backoff's attempt number. */
  attempt: number;
  /** When it was first seen dead, and how long the supervisor waits before starting it again. */
  dead?: { at: number; waitMs: number };
}

export class ClusterSupervisor {
  private readonly watches = new Map<string, Watch>();

  constructor(private readonly options: SupervisorOptions) {}

  /**
   * Looks at every recorded process once and restarts those whose wait is over. Returns false when the supervisor
   * should stop: processes.json is gone (`down` ran, or `up` failed) or names another supervisor.
   */
  tick(self: number): boolean {
    const { dir, now, alive, log } = this.options;
    const recorded = readClusterProcesses(dir);
    if (recorded === undefined || (recorded.supervisor !== undefined && recorded.supervisor !== self)) return false;
    const held = new Set(recorded.held ?? []);
    const names = new Set<string>();
    for (const [name, pid] of clusterProcessEntries(recorded)) {
      names.add(name);
      if (held.has(name)) {
        this.watches.delete(name);
        continue;
      }
      let watch = this.watches.get(name);
      if (watch === undefined || watch.pid !== pid) {
        // First seen, or started by another command: a new process, with the backoff it had.
        watch = { pid, since: now(), attempt: watch?.attempt ?? 0 };
        this.watches.set(name, watch);
      }
      if (alive(pid)) {
        if (now() - watch.since >= SUPERVISOR_STABLE_MS) watch.attempt = 0;
        continue;
      }
      if (watch.dead === undefined) {
        watch.dead = { at: now(), waitMs: backoffMs(SUPERVISOR_BACKOFF, watch.attempt, this.options.random) };
        log({ event: "died", name, pid, restartInMs: Math.round(watch.dead.waitMs) });
      }
      if (now() < watch.dead.at + watch.dead.waitMs) continue;
      this.restart(name, watch);
    }
    for (const name of [...this.watches.keys()]) if (!names.has(name)) this.watches.delete(name);
    return true;
  }

  private restart(name: string, watch: Watch): void {
    const { dir, log, now } = this.options;
    let started: { pid: number; restarts: number } | undefined;
    try {
      updateClusterProcesses(dir, (current) => {
        // Only if the record still names the dead process and nobody holds it down (checked under the lock).
        const still = clusterProcessEntries(current).find(([entry]) => entry === name)?.[1];
        if (still !== watch.pid || (current.held ?? []).includes(name)) return current;
        const pid = this.options.start(name);
        const restarts = (current.restarts?.[name] ?? 0) + 1;
        started = { pid, restarts };
        return { ...withProcess(current, name, pid), restarts: { ...current.restarts, [name]: restarts } };
      });
    } catch (cause) {
      // Could not start it (or not record it): wait longer and try again.
      log({ event: "start_failed", name, message: cause instanceof Error ? cause.message : String(cause) });
      watch.attempt += 1;
      watch.dead = { at: now(), waitMs: backoffMs(SUPERVISOR_BACKOFF, watch.attempt, this.options.random) };
      return;
    }
    if (started === undefined) return; // changed by another command: the next tick watches what it recorded
    log({ event: "restarted", name, pid: started.pid, previous: watch.pid, restarts: started.restarts });
    this.watches.set(name, { pid: started.pid, since: now(), attempt: watch.attempt + 1 });
  }
}

/** `processes` with `name` held down (`hold`) or no longer held; an empty hold list is left out. */
export function withHold(processes: ClusterProcesses, name: string, hold: boolean): ClusterProcesses {
  const held = (processes.held ?? []).filter((entry) => entry !== name);
  if (hold) held.push(name);
  const changed: { -readonly [K in keyof ClusterProcesses]: ClusterProcesses[K] } = { ...processes, held };
  if (held.length === 0) delete changed.held;
  return changed;
}
