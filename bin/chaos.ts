/**
 * `silk chaos run`: a Jepsen-style run against a local cluster (docs/CHAOS.md). With `--cluster DIR` naming a running
 * cluster (`silk cluster up` wrote its processes.json and its server is alive) the run attaches to it; otherwise it
 * starts one in DIR with the harness's project (chaos/project) and stops it afterwards unless `--keep`. The run
 * itself is chaos/run.ts. With `partition` among the faults the run must start the cluster, behind its own proxies
 * (chaos/network.ts), and stop it at the end. Exit codes: 0 valid, 2 an anomaly was found, 3 the checker could not decide, 1 the run
 * could not be made (`silk chaos: <code>: <message>`).
 */
import { existsSync, readdirSync } from "node:fs";
import { resolve } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { readClusterProcesses } from "../cluster/nats/manifest.js";
import { SilkError } from "../protocol/errors.js";
import { LocalCluster } from "../chaos/nemesis.js";
import { ProxiedNetwork } from "../chaos/network.js";
import { runChaos, type ChaosOptions } from "../chaos/run.js";
import { formatSummary } from "../chaos/summary.js";
import { parseFaults, type FaultKind } from "../chaos/schedule.js";
import { chaosProjectDirectory, WORKLOADS, type WorkloadName } from "../chaos/workloads.js";
import { runClusterDown, runClusterUp, spawnSilk } from "./cluster.js";
import { processAlive } from "../platform/processes.js";

/** How long a run waits for the cluster it starts (leaders, then the server's /health): three times `cluster up`'s. */
export const CHAOS_CLUSTER_UP_TIMEOUT_MS = 180_000;

/** `60s`, `90000ms`, `2m`, or a number of seconds. */
export function parseDuration(text: string): number {
  const match = /^([0-9]+)(ms|s|m)?$/.exec(text.trim());
  if (match === null) throw new InvalidArgumentError("expected a duration such as 60s, 1500ms or 2m");
  const value = Number(match[1]) * (match[2] === "ms" ? 1 : match[2] === "m" ? 60_000 : 1_000);
  if (value < 1_000) throw new InvalidArgumentError("a run lasts at least 1s");
  return value;
}

function workloadName(text: string): WorkloadName {
  if (!(WORKLOADS as readonly string[]).includes(text)) throw new InvalidArgumentError(`expected one of ${WORKLOADS.join(", ")}`);
  return text as WorkloadName;
}

function faultList(text: string): FaultKind[] {
  try {
    return parseFaults(text);
  } catch (cause) {
    throw new InvalidArgumentError((cause as Error).message);
  }
}

interface ChaosFlags {
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
  if (flags.faults.includes("partition") && (attach || flags.keep === true)) {
    throw new SilkError(
      "invalid_option",
      "partition needs a cluster the run starts and stops: its processes reach NATS through the run's proxies, which end with the run (no running cluster in --cluster, no --keep)",
    );
  }
  const network = flags.faults.includes("partition") ? new ProxiedNetwork() : undefined;
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
        ...(network === undefined ? {} : { natsServersFor: (process: string, servers: readonly string[]) => network.serversFor(process, servers), supervise: false }),
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

/** The `silk chaos` command; `fail`, `positiveInteger` and `nonNegativeInteger` are bin/silk.ts's. */
export function chaosCommand(fail: (command: string, cause: unknown) => void, positiveInteger: (text: string) => number, nonNegativeInteger: (text: string) => number): Command {
  return new Command("chaos")
    .description("Jepsen-style fault runs against a local cluster, with checked histories (docs/CHAOS.md)")
    .addCommand(
      new Command("run")
        .description("run a workload under seeded faults, record its history, check it; exit 2 on an anomaly")
        .requiredOption("--cluster <dir>", "a running cluster's directory (attach), or where to start one (stopped afterwards unless --keep)")
        .requiredOption("--workload <name>", `${WORKLOADS.join(" | ")}`, workloadName)
        .option("--faults <list>", "comma-separated: kill-leader, kill-follower, kill-nats, kill-coordinator, pause, partition (none: no faults)", faultList, [])
        .option("--duration <time>", "how long the clients run (60s, 1500ms, 2m)", parseDuration, 60_000)
        .option("--rate <n>", "operations per second, all clients together", positiveInteger, 20)
        .option("--concurrency <n>", "concurrent clients", positiveInteger, 5)
        .option("--seed <n>", "the seed of the fault schedule and of the clients' choices", nonNegativeInteger, 1)
        .option("--out <dir>", "where history.jsonl, faults.jsonl, summary.json, summary.txt and report.html go", "chaos-out")
        .option("--timeout-ms <n>", "each request's deadline (a write past it is unknown)", positiveInteger, 5_000)
        .option("--partitions <n>", "partitions of a cluster the run starts", positiveInteger, 2)
        .option("--replicas <n>", "replicas per partition of a cluster the run starts", positiveInteger, 3)
        .option("--keep", "leave a cluster the run started running")
        .action(async (flags: ChaosFlags) => {
          try {
            process.exitCode = await runChaosCommand(flags, process.stdout);
          } catch (cause) {
            fail("chaos", cause);
          }
          // NATS servers a started cluster spawned are children of this process: exit without waiting for them.
          process.exit(process.exitCode ?? 0);
        }),
    );
}
