/**
 * The `silk cluster` command's declaration: its subcommands and options, which `silk --help` lists. Each action
 * loads bin/cluster.ts (NATS, the supervisor, LMDB) when it runs, so declaring the command at every start of `silk`
 * costs no more than commander.
 */
import { Command, InvalidArgumentError } from "commander";
import type { ClusterUpOptions, ReplaceReplicaOptions } from "./cluster.js";
import { SERVE_PORT_DEFAULT } from "./defaults.js";
import { SilkError } from "../protocol/errors.js";

const cluster = () => import("./cluster.js");

function clusterName(text: string): string {
  if (!/^[a-z0-9-]{1,32}$/.test(text)) throw new InvalidArgumentError("1 to 32 lowercase letters, digits or -");
  return text;
}

/** The `silk cluster` command; `fail` and `positiveInteger` are bin/silk.ts's. */
export function clusterCommand(fail: (command: string, cause: unknown) => void, positiveInteger: (text: string) => number): Command {
  const run = (work: () => Promise<void>) => async () => {
    try {
      await work();
    } catch (cause) {
      fail("cluster", cause);
    }
    // The NATS servers started by `up` are children of this process: exit without waiting for them.
    process.exit(process.exitCode ?? 0);
  };
  const partitionNumber = (text: string): number => {
    if (!/^[0-9]{1,3}$/.test(text)) throw new InvalidArgumentError("expected a partition number");
    return Number(text);
  };
  const replicaNumber = (text: string): number => {
    if (!/^[0-9]$/.test(text)) throw new InvalidArgumentError("expected a replica number (0, 1, ...)");
    return Number(text);
  };
  const portOption = (text: string): number => {
    if (!/^[0-9]+$/.test(text) || Number(text) > 65_535) throw new InvalidArgumentError("expected a port from 0 to 65535");
    return Number(text);
  };
  return new Command("cluster")
    .description("a development cluster on this machine: NATS JetStream, partition replicas and a server (docs/CLUSTER.md)")
    .addCommand(
      new Command("up")
        .description("start three NATS servers, every partition replica and one server; waits until all serve")
        .requiredOption("--dir <dir>", "the cluster directory (cluster.json, data, logs)")
        .option("--project <dir>", "the project directory (schema and queries)", "examples")
        .option("--partitions <n>", "partitions", positiveInteger, 3)
        .option("--replicas <n>", "replicas per partition", positiveInteger, 3)
        .option("--port <n>", "the server's HTTP port (0 picks a free one)", portOption, SERVE_PORT_DEFAULT)
        .option("--name <name>", "the cluster's name in NATS", clusterName, "dev")
        .option("--no-supervise", "start no supervisor: a process that dies stays down")
        .action((flags: ClusterUpOptions) => run(async () => (await cluster()).runClusterUp(flags, process.stdout))()),
    )
    .addCommand(
      new Command("down")
        .description("stop every process `cluster up` started (SIGTERM, then SIGKILL; NATS last)")
        .requiredOption("--dir <dir>", "the cluster directory")
        .action((flags: { dir: string }) => run(async () => (await cluster()).runClusterDown(flags.dir, process.stdout))()),
    )
    .addCommand(
      new Command("add-partition")
        .description("add a partition (carved from the one with the most free IDs), start its replicas, make it serve")
        .requiredOption("--dir <dir>", "the cluster directory")
        .option("--existing", "its replicas run already (e.g. a Kubernetes StatefulSet): only carve, wait for its leader and make it serve; needs --partition")
        .option("--partition <p>", "with --existing: the partition being added (the next one)", partitionNumber)
        .action((flags: { dir: string; existing?: boolean; partition?: number }) =>
          run(async () => {
            if ((flags.existing === true) !== (flags.partition !== undefined)) throw new SilkError("invalid_option", "--existing and --partition go together");
            const commands = await cluster();
            if (flags.partition === undefined) await commands.runClusterAddPartition(flags.dir, process.stdout);
            else await commands.runClusterAddExistingPartition({ dir: flags.dir, partition: flags.partition }, process.stdout);
          })(),
        ),
    )
    .addCommand(
      new Command("move")
        .description("move the upper IDs of one partition's used IDs to another, online, chunk by chunk")
        .requiredOption("--dir <dir>", "the cluster directory")
        .requiredOption("--from <p>", "the partition giving IDs", partitionNumber)
        .requiredOption("--to <q>", "the partition taking them", partitionNumber)
        .option("--ids <n>", "how many IDs (default: half of the used ones)", positiveInteger)
        .action((flags: { dir: string; from: number; to: number; ids?: number }) => run(async () => (await cluster()).runClusterMove(flags, process.stdout))()),
    )
    .addCommand(
      new Command("replace-replica")
        .description("replace a replica by a new one on another store directory (it bootstraps from the latest snapshot and the log)")
        .requiredOption("--dir <dir>", "the cluster directory")
        .requiredOption("--partition <p>", "the partition", partitionNumber)
        .requiredOption("--replica <r>", "the replica (0, 1, ...)", replicaNumber)
        .requiredOption("--store <dir>", "the new replica's store directory: new or empty")
        .action((flags: ReplaceReplicaOptions) => run(async () => (await cluster()).runClusterReplaceReplica(flags, process.stdout))()),
    )
    .addCommand(
      new Command("supervise")
        .description("restart the cluster's processes that die (started by `cluster up`)")
        .requiredOption("--dir <dir>", "the cluster directory")
        .action((flags: { dir: string }) => run(async () => (await cluster()).runClusterSupervise(flags.dir))()),
      { hidden: true },
    )
    .addCommand(
      new Command("status")
        .description("each partition's leader, its log's last sequence and every replica's applied sequence")
        .requiredOption("--dir <dir>", "the cluster directory")
        .action((flags: { dir: string }) => run(async () => (await cluster()).runClusterStatus(flags.dir, process.stdout))()),
    );
}
