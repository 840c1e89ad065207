/**
 * The `silk chaos` command's declaration and its option parsers, which `silk --help` lists. `chaos run` loads
 * bin/chaos.ts (the harness, NATS, the cluster's processes) when it runs, so declaring the command at every start
 * of `silk` costs no more than commander and the workload names.
 */
import { Command, InvalidArgumentError } from "commander";
import { parseFaults, type FaultKind } from "../chaos/schedule.js";
import { WORKLOADS, type WorkloadName } from "../chaos/workloads.js";
import type { ChaosFlags } from "./chaos.js";

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

/** The `silk chaos` command; `fail`, `positiveInteger` and `nonNegativeInteger` are bin/silk.ts's. */
export function chaosCommand(fail: (command: string, cause: unknown) => void, positiveInteger: (text: string) => number, nonNegativeInteger: (text: string) => number): Command {
  return new Command("chaos")
    .description("Jepsen-style fault runs against a local cluster, with checked histories (docs/CHAOS.md)")
    .addCommand(
      new Command("run")
        .description("run a workload under seeded faults, record its history, check it; exit 2 on an anomaly")
        .requiredOption("--cluster <dir>", "a running cluster's directory (attach), or where to start one (stopped afterwards unless --keep)")
        .requiredOption("--workload <name>", `${WORKLOADS.join(" | ")}`, workloadName)
        .option("--faults <list>", "comma-separated: kill-leader, kill-follower, kill-nats, kill-coordinator, pause, partition, partition-nats (none: no faults)", faultList, [])
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
            const { runChaosCommand } = await import("./chaos.js");
            process.exitCode = await runChaosCommand(flags, process.stdout);
          } catch (cause) {
            fail("chaos", cause);
          }
          // NATS servers a started cluster spawned are children of this process: exit without waiting for them.
          process.exit(process.exitCode ?? 0);
        }),
    );
}
