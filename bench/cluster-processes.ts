/**
 * The cluster side's processes for bench/cluster.ts: a three-server NATS JetStream cluster on loopback
 * (LocalNatsCluster) and one real `silk partition` process per replica, started from the repository root with the
 * same build the bench measures (dist/bin/silk.js, or bin/silk.ts through tsx with `--source`). The project
 * directory (the bench's .hx schema and queries) and DIR/cluster.json are written here, as `silk cluster up` would.
 *
 * Invariants: every process started here is recorded at once and `stop()` ends all of them (SIGTERM, SIGKILL after a
 * grace period, NATS last), also after a start that failed half-way; replicas log only warnings.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, openSync, closeSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type * as NatsServers from "../cluster/nats/servers.js";
import type * as Manifest from "../cluster/nats/manifest.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const STOP_GRACE_MS = 5_000;

export interface ClusterModules {
  readonly nats: typeof NatsServers;
  readonly manifest: typeof Manifest;
}

export interface ClusterLayout {
  readonly directory: string;
  readonly name: string;
  readonly partitions: number;
  readonly replicas: number;
  /** The project's .hx text (one file). */
  readonly schema: string;
  /** true: run bin/silk.ts through tsx; false: dist/bin/silk.js. */
  readonly source: boolean;
}

export class BenchCluster {
  private readonly replicas = new Map<string, ChildProcess>();
  private nats: NatsServers.LocalNatsCluster | undefined;

  private constructor(readonly layout: ClusterLayout) {}

  /** NATS first, then the manifest and project, then every replica; stops what it started when a step fails. */
  static async start(layout: ClusterLayout, modules: ClusterModules): Promise<BenchCluster> {
    const cluster = new BenchCluster(layout);
    try {
      cluster.nats = await modules.nats.LocalNatsCluster.start(join(layout.directory, "nats"));
      const project = join(layout.directory, "project");
      mkdirSync(project, { recursive: true });
      writeFileSync(join(project, "bench.hx"), layout.schema);
      modules.manifest.writeClusterManifest(layout.directory, {
        format: modules.manifest.CLUSTER_FORMAT,
        name: layout.name,
        nats: cluster.nats.urls,
        partitions: layout.partitions,
        replicas: layout.replicas,
        project,
        port: 0,
      });
      for (let partition = 0; partition < layout.partitions; partition++) {
        for (let replica = 0; replica < layout.replicas; replica++) cluster.startReplica(partition, `r${replica}`);
      }
    } catch (cause) {
      await cluster.stop();
      throw cause;
    }
    return cluster;
  }

  get urls(): string[] {
    return this.nats?.urls ?? [];
  }

  /** Starts (or starts again, on its old store) one replica process. */
  startReplica(partition: number, replica: string): void {
    const key = `p${partition}-${replica}`;
    const entry = this.layout.source ? ["--import", "tsx", join(REPO_ROOT, "bin", "silk.ts")] : [join(REPO_ROOT, "dist", "bin", "silk.js")];
    const args = [...entry, "partition", "--dir", this.layout.directory, "--partition", String(partition), "--replica", replica.slice(1)];
    mkdirSync(join(this.layout.directory, "logs"), { recursive: true });
    const out = openSync(join(this.layout.directory, "logs", `${key}.out`), "a");
    try {
      const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ["ignore", out, out], env: { ...process.env, SILK_LOG_LEVEL: "warn" } });
      this.replicas.set(key, child);
    } finally {
      closeSync(out);
    }
  }

  /** SIGKILLs one replica process (a crash); resolves once it is gone. */
  async killReplica(partition: number, replica: string): Promise<void> {
    const child = this.replicas.get(`p${partition}-${replica}`);
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) throw new Error(`replica p${partition}-${replica} is not running`);
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGKILL");
    await exited;
  }

  /** Replica processes that exited although nobody killed them (named, for an error message). */
  deadReplicas(): string[] {
    return [...this.replicas].filter(([, child]) => child.exitCode !== null).map(([key, child]) => `${key} (exit ${child.exitCode})`);
  }

  /** Every replica (SIGTERM, SIGKILL after the grace period), then the NATS servers. */
  async stop(): Promise<void> {
    const running = [...this.replicas.values()].filter((child) => child.exitCode === null && child.signalCode === null);
    this.replicas.clear();
    await Promise.all(
      running.map(
        (child) =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
            child.once("exit", () => {
              clearTimeout(timer);
              done();
            });
            child.kill("SIGTERM");
          }),
      ),
    );
    await this.nats?.stop();
    this.nats = undefined;
  }
}

/** Polls until `probe` answers a value, failing after `timeoutMs`; an error thrown by `probe` ends the wait. */
export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
