/**
 * `silk chaos run`: a Jepsen-style run against a local cluster (docs/CHAOS.md). With `--cluster DIR` naming a running
 * cluster (`silk cluster up` wrote its processes.json and its server is alive) the run attaches to it; otherwise it
 * starts one in DIR with the harness's project (chaos/project) and stops it afterwards unless `--keep`. The run
 * itself is chaos/run.ts. With `partition` or `partition-nats` among the faults the run must start the cluster, behind
 * its own proxies (chaos/network.ts: between processes and NATS servers, and on the NATS servers' routes), and stop it
 * at the end. Exit codes: 0 valid, 2 an anomaly was found, 3 the checker could not decide, 1 the run
 * could not be made (`silk chaos: <code>: <message>`).
 */
import { existsSync, readdirSync } from "node:fs";
import { resolve } from "node:path";
import { readClusterProcesses } from "../cluster/nats/manifest.js";
import { SilkError } from "../protocol/errors.js";
import { LocalCluster } from "../chaos/nemesis.js";
import { ProxiedNetwork } from "../chaos/network.js";
import { runChaos, type ChaosOptions } from "../chaos/run.js";
import { formatSummary } from "../chaos/summary.js";
import { NETWORK_FAULT_KINDS, type FaultKind } from "../chaos/schedule.js";
import type { NatsServerSpec } from "../cluster/nats/servers.js";
import { chaosProjectDirectory, type WorkloadName } from "../chaos/workloads.js";
import { runClusterDown, runClusterUp, spawnSilk } from "./cluster.js";
import { processAlive } from "../platform/processes.js";

/** How long a run waits for the cluster it starts (leaders, then the server's /health): three times `cluster up`'s. */
export const CHAOS_CLUSTER_UP_TIMEOUT_MS = 180_000;

/** The options of `silk chaos run`, as bin/chaos-command.ts declares and parses them. */
export interface ChaosFlags {
  cluster: string;
  workload: WorkloadName;
  faults: FaultKind[];
  duration: number;
  rate: number;
  concurrency: number;
  seed: number;
  out: string;
  timeoutMs: number;
  partitions: number;
  replicas: number;
  keep?: boolean;
}

/** Runs one chaos run; resolves to the exit code. */
export async function runChaosCommand(flags: ChaosFlags, out: { write(text: string): unknown }): Promise<number> {
  const dir = resolve(flags.cluster);
  const recorded = existsSync(dir) ? readClusterProcesses(dir) : undefined;
  const attach = recorded?.serve !== undefined && processAlive(recorded.serve);
  const networked = flags.faults.filter((kind) => NETWORK_FAULT_KINDS.includes(kind));
  if (networked.length > 0 && (attach || flags.keep === true)) {
    throw new SilkError(
      "invalid_option",
      `${networked.join(" and ")} need${networked.length === 1 ? "s" : ""} a cluster the run starts and stops: its processes and NATS servers reach NATS through the run's proxies, which end with the run (no running cluster in --cluster, no --keep)`,
    );
  }
  const network = networked.length > 0 ? new ProxiedNetwork() : undefined;
  try {
    return await runWith(dir, attach, network, flags, out);
  } finally {
    await network?.close();
  }
}

async function runWith(dir: string, attach: boolean, network: ProxiedNetwork | undefined, flags: ChaosFlags, out: { write(text: string): unknown }): Promise<number> {
  if (!attach) {
    // A stopped cluster's replica stores would meet a fresh NATS log: a started cluster starts from nothing.
    if (existsSync(dir) && readdirSync(dir).length > 0) {
      throw new SilkError("invalid_option", `${flags.cluster} is not empty and holds no running cluster: name an empty or new directory, or a running cluster's`);
    }
    await runClusterUp(
      {
        dir,
        project: chaosProjectDirectory(),
        partitions: flags.partitions,
        replicas: flags.replicas,
        port: 0,
        name: "chaos",
        // Behind proxies the cluster runs unsupervised: the supervisor would start a process again without its proxies
        // (the harness starts what it killed itself, behind the same ones).
        ...(network === undefined
          ? {}
          : {
              natsServersFor: (process: string, servers: readonly string[]) => network.serversFor(process, servers),
              natsRouteVia: (from: string, to: NatsServerSpec) => network.routeVia(from, to.name, to.clusterPort),
              supervise: false,
            }),
      },
      out,
      CHAOS_CLUSTER_UP_TIMEOUT_MS,
    );
  }
  try {
    const cluster = await LocalCluster.open(dir, spawnSilk, network);
    // Interrupted, the run leaves no process of the cluster stopped or killed. A cluster behind the run's proxies
    // cannot outlive them (its processes would reach no NATS server): it is stopped first.
    const interrupted = (signal: NodeJS.Signals): void => {
      cluster.heal();
      const code = signal === "SIGINT" ? 130 : 143;
      if (network === undefined) process.exit(code);
      void runClusterDown(dir, out).finally(() => process.exit(code));
    };
    process.once("SIGINT", interrupted).once("SIGTERM", interrupted);
    try {
      const options: ChaosOptions = {
        workload: flags.workload,
        faults: flags.faults,
        durationMs: flags.duration,
        rate: flags.rate,
        concurrency: flags.concurrency,
        seed: flags.seed,
        out: resolve(flags.out),
        requestTimeoutMs: flags.timeoutMs,
      };
      const summary = await runChaos(cluster, options, (line) => out.write(`${line}\n`));
      out.write(formatSummary(summary));
      out.write(`silk chaos: history, faults, summary and report.html in ${options.out}\n`);
      return summary.verdict.valid === true ? 0 : summary.verdict.valid === false ? 2 : 3;
    } finally {
      process.off("SIGINT", interrupted).off("SIGTERM", interrupted);
      await cluster.close();
    }
  } finally {
    if (!attach && flags.keep !== true) await runClusterDown(dir, out);
  }
}
