/**
 * The nemesis of a chaos run (docs/CHAOS.md): applies a fault schedule (chaos/schedule.ts) to a cluster of local
 * processes that `silk cluster up` started, by signals: SIGKILL of a partition's leader or of a follower, of a NATS
 * server or of the coordinator (`silk serve --cluster`), each started again after the fault's length with the same
 * command, directory, store and NATS URLs; SIGSTOP, then SIGCONT after the fault's length; and, on a cluster started
 * behind the run's proxies (chaos/network.ts), a partition that cuts a leader, a follower or the coordinator off
 * from every NATS server for the fault's length.
 *
 * Invariants:
 * - Every process it starts is written to DIR/processes.json at once, so `silk cluster down` stops it.
 * - A process it kills is held down in processes.json until it starts it again, so the cluster's supervisor
 *   (cluster/nats/supervisor.ts) leaves it dead for the fault's length; it reads processes.json again before each
 *   fault, so it hits the processes the supervisor restarted.
 * - `heal()` continues every process it stopped and starts every one it killed and has not started again; a run
 *   calls it before its final reads, and also when it is aborted. It also ends every partition.
 * - Every fault is logged as a `FaultEvent` (what it hit, when it began and ended, or why it was skipped).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { readClusterManifest, readClusterProcesses, updateClusterProcesses, withProcess, type ClusterManifest, type ClusterProcesses } from "../cluster/nats/manifest.js";
import { startClusterProcess, withHold, type SpawnSilk } from "../cluster/nats/supervisor.js";
import { subjects } from "../cluster/nats/subjects.js";
import { decodeReply, encodeRequest } from "../cluster/nats/wire.js";
import { SilkError } from "../protocol/errors.js";
import type { PlannedFault } from "./schedule.js";
import type { ProxiedNetwork } from "./network.js";
import { processAlive } from "../platform/processes.js";

export type { SpawnSilk };

export interface FaultEvent {
  readonly kind: string;
  /** What it hit: `p0-r1` (a replica), `n2` (a NATS server), `coordinator`. */
  readonly target: string;
  readonly pid?: number;
  /** Milliseconds since the run's start. */
  readonly start: number;
  readonly end: number;
  /** Why the fault was not applied (no leader at that moment, the process already gone). */
  readonly skipped?: string;
}

/** A fault's target as processes.json names it: the coordinator is the `serve` process. */
function processName(target: string): string {
  return target === "coordinator" ? "serve" : target;
}

/** The processes of a local cluster, with the means to find its leaders and to kill, stop and start its members. */
export class LocalCluster {
  private readonly stopped = new Set<number>();
  /** Killed and not started again: a name of `processes` and how to start it. */
  private readonly down = new Map<string, () => void>();

  private constructor(
    readonly dir: string,
    readonly manifest: ClusterManifest,
    private processes: ClusterProcesses,
    readonly nc: NatsConnection,
    private readonly spawnSilk: SpawnSilk,
    private readonly network: ProxiedNetwork | undefined,
  ) {}

  /** `network`: the proxies the cluster's processes were started behind (needed for partition faults). */
  static async open(dir: string, spawnSilk: SpawnSilk, network?: ProxiedNetwork): Promise<LocalCluster> {
    const manifest = readClusterManifest(dir);
    const recorded = readClusterProcesses(dir);
    if (recorded === undefined || recorded.serve === undefined || !processAlive(recorded.serve)) {
      throw new SilkError("invalid_option", `no running cluster in ${dir}: its processes.json names no live silk serve (start one with silk cluster up --dir ${dir})`);
    }
    const nc = await connect({ servers: [...manifest.nats], maxReconnectAttempts: -1, reconnectTimeWait: 100, name: "silk-chaos" }).catch((cause: unknown) => {
      throw new SilkError("partition_unavailable", `cannot reach NATS at ${manifest.nats.join(", ")}: ${(cause as Error).message}`);
    });
    return new LocalCluster(dir, manifest, recorded, nc, spawnSilk, network);
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.manifest.port}`;
  }

  /** The lease holder (`r<i>`) of a partition, undefined while none holds it. */
  async leaderOf(partition: number): Promise<string | undefined> {
    const kv = await new Kvm(this.nc).open(subjects.leaseBucket(this.manifest.name));
    const entry = await kv.get(subjects.leaseKey(partition));
    return entry === null || entry.operation !== "PUT" ? undefined : (JSON.parse(new TextDecoder().decode(entry.value)) as { replica: string }).replica;
  }

  /** Resolves a planned fault to the process it hits now: its name in processes.json terms and its pid. */
  async resolve(fault: PlannedFault): Promise<{ target: string; pid: number } | string> {
    this.processes = readClusterProcesses(this.dir) ?? this.processes;
    const replica = async (role: "leader" | "follower"): Promise<{ target: string; pid: number } | string> => {
      const leader = await this.leaderOf(fault.partition).catch(() => undefined);
      if (leader === undefined) return `partition ${fault.partition} has no leader`;
      const names = Array.from({ length: this.manifest.replicas }, (_, index) => `r${index}`);
      const followers = names.filter((name) => name !== leader && this.processes.replicas[`p${fault.partition}-${name}`] !== undefined);
      if (role === "follower" && followers.length === 0) return `partition ${fault.partition} has no follower`;
      const name = role === "leader" ? leader : followers[fault.target % followers.length];
      const target = `p${fault.partition}-${name}`;
      return { target, pid: this.processes.replicas[target] };
    };
    const nats = (): { target: string; pid: number } => {
      const names = Object.keys(this.processes.nats).sort();
      const target = names[fault.target % names.length];
      return { target, pid: this.processes.nats[target] };
    };
    const coordinator = (): { target: string; pid: number } => ({ target: "coordinator", pid: this.processes.serve! });
    const what = fault.kind === "pause" ? fault.pause! : fault.kind === "partition" ? fault.isolate! : fault.kind === "partition-nats" ? "nats" : fault.kind;
    switch (what) {
      case "kill-leader":
      case "leader":
        return replica("leader");
      case "kill-follower":
      case "follower":
        return replica("follower");
      case "kill-nats":
      case "nats":
        return nats();
      default:
        return coordinator();
    }
  }

  /** SIGKILL; the process is remembered as down until `restart(target)`. */
  async kill(target: string, pid: number): Promise<void> {
    this.processes = updateClusterProcesses(this.dir, (current) => withHold(current, processName(target), true));
    process.kill(pid, "SIGKILL");
    const deadline = Date.now() + 10_000;
    while (processAlive(pid) && Date.now() < deadline) await sleep(20);
    this.down.set(target, () => this.start(target));
  }

  /** Starts a killed process again with its command, directory and store. */
  restart(target: string): void {
    const start = this.down.get(target);
    if (start === undefined) return;
    this.down.delete(target);
    start();
  }

  private start(target: string): void {
    const name = processName(target);
    const natsServers = this.network?.urlsOf(name);
    this.processes = updateClusterProcesses(this.dir, (current) => withHold(withProcess(current, name, startClusterProcess(this.dir, this.manifest, name, this.spawnSilk, natsServers)), name, false));
  }

  pause(pid: number): void {
    process.kill(pid, "SIGSTOP");
    this.stopped.add(pid);
  }

  resume(pid: number): void {
    if (!this.stopped.delete(pid)) return;
    if (processAlive(pid)) process.kill(pid, "SIGCONT");
  }

  /** Whether partition faults can be applied (the processes reach NATS through the run's proxies). */
  get partitionable(): boolean {
    return this.network !== undefined;
  }

  /** Cuts a process (`p<i>-r<r>` or `coordinator`) off from every NATS server until `rejoin(target)`. */
  isolate(target: string): void {
    if (this.network === undefined) throw new SilkError("invalid_option", "this cluster's processes reach NATS directly: a partition needs a cluster the run starts behind its proxies");
    this.network.isolate(networkName(target));
  }

  rejoin(target: string): void {
    this.network?.heal(networkName(target));
  }

  /** Cuts NATS server `server` (`n<i>`) off from its peers (its routes), until `rejoinServer(server)`. */
  isolateServer(server: string): void {
    if (this.network === undefined) throw new SilkError("invalid_option", "this cluster's NATS servers route to each other directly: a partition needs a cluster the run starts behind its proxies");
    this.network.isolateServer(server);
  }

  rejoinServer(server: string): void {
    this.network?.healServer(server);
  }

  /** Ends every partition, continues every stopped process and starts every killed one. */
  heal(): void {
    this.network?.healAll();
    for (const pid of [...this.stopped]) this.resume(pid);
    for (const target of [...this.down.keys()]) this.restart(target);
  }

  /** The two-phase-commit intents prepared and not yet resolved, on every partition (asked of its leader). */
  async pendingIntents(): Promise<string[]> {
    const lists = await Promise.all(
      Array.from({ length: this.manifest.partitions }, async (_, partition) => {
        const reply = decodeReply((await this.nc.request(subjects.leader(this.manifest.name, partition), encodeRequest({ type: "pending_intents" }), { timeout: 3_000 })).data);
        if (!reply.ok) throw new SilkError(reply.code, reply.message);
        return reply.body.type === "intents" ? reply.body.txids.map((txid) => `p${partition}:${txid}`) : [];
      }),
    );
    return lists.flat();
  }

  async close(): Promise<void> {
    await this.nc.close().catch(() => undefined);
  }
}

/** The name a process has in the run's network (chaos/network.ts): the coordinator is `serve`, as in processes.json. */
function networkName(target: string): string {
  return target === "coordinator" ? "serve" : target;
}

/** Applies the schedule from the run's start (`now()` in milliseconds); resolves when the last fault has ended. */
export async function runNemesis(cluster: LocalCluster, schedule: readonly PlannedFault[], now: () => number, log: (event: FaultEvent) => void): Promise<void> {
  for (const fault of schedule) {
    const wait = fault.at - now();
    if (wait > 0) await sleep(wait);
    const start = now();
    const resolved = await cluster.resolve(fault);
    if (typeof resolved === "string") {
      log({ kind: fault.kind, target: fault.pause ?? "", start, end: now(), skipped: resolved });
      continue;
    }
    const kind = fault.kind === "pause" ? `pause-${fault.pause}` : fault.kind === "partition" ? `partition-${fault.isolate}` : fault.kind;
    if (!processAlive(resolved.pid)) {
      log({ kind, target: resolved.target, pid: resolved.pid, start, end: now(), skipped: "the process is not running" });
      continue;
    }
    if (fault.kind === "pause") {
      cluster.pause(resolved.pid);
      await sleep(fault.durationMs);
      cluster.resume(resolved.pid);
    } else if (fault.kind === "partition") {
      cluster.isolate(resolved.target);
      await sleep(fault.durationMs);
      cluster.rejoin(resolved.target);
    } else if (fault.kind === "partition-nats") {
      cluster.isolateServer(resolved.target);
      await sleep(fault.durationMs);
      cluster.rejoinServer(resolved.target);
    } else {
      await cluster.kill(resolved.target, resolved.pid);
      await sleep(fault.durationMs);
      cluster.restart(resolved.target);
    }
    log({ kind, target: resolved.target, pid: resolved.pid, start, end: now() });
  }
}
