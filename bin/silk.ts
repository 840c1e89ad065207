#!/usr/bin/env node
/**
 * The `silk` command line: `silk import` (bulk loading, bin/import/), `silk serve` (the single-server mode,
 * bin/serve.ts), `silk dev` (serve and reload on every change, bin/dev.ts) and `silk check` (schema and query
 * diagnostics, bin/check.ts), `silk gateway` (the hosted form with API keys and the rate limit, bin/gateway.ts), and
 * `silk keys` / `silk admin` (its keys and account switch, bin/keys.ts), `silk index` (index operations and build
 * progress, bin/index-command.ts), `silk status` (a database's storage: readers, pages, sizes, bin/status.ts), `silk backup` / `silk restore` (a disk database to and from a bucket, bin/backup.ts), `silk cluster` / `silk partition` (a cluster over NATS on this machine,
 * bin/cluster.ts, bin/partition.ts), `silk chaos run` (fault runs with checked histories, bin/chaos.ts), and `silk codegen` (typed query functions for the SDK, sdk/codegen.ts). This file only declares the commands and their options with commander and turns
 * failures into `silk <command>: <code>: <message>` and an exit code. Each action loads its command's module with
 * `import()` when it runs: importing them all up front cost about a second of CPU at every start (the engine,
 * fastify, NATS, the S3 client), `silk --help` included. What a declaration needs (defaults, option lists) comes from
 * light modules (defaults.ts, index-options.ts, cluster-command.ts, chaos-command.ts); test/cli/startup.test.ts checks
 * that declaring the commands loads none of the heavy ones.
 */
import { packageVersion } from "../gateway/version.js";
import { Command, InvalidArgumentError } from "commander";
import { asSilkError, SilkError } from "../protocol/errors.js";
import type { GatewayCommandOptions } from "./gateway.js";
import type { IndexCommandOptions } from "./index-command.js";
import type { CommandIo } from "./keys.js";
import { addIndexOptions, type IndexAction } from "./index-options.js";
import { chaosCommand } from "./chaos-command.js";
import { clusterCommand } from "./cluster-command.js";
import { GATEWAY_REDIS_TIMEOUT_MS_DEFAULT, IMPORT_BATCH_RECORDS_DEFAULT, SERVE_DATA_DEFAULT, SERVE_HOST_DEFAULT, SERVE_PORT_DEFAULT, SERVE_TIMEOUT_MS_DEFAULT } from "./defaults.js";

// The AWS SDK prints a notice on stderr at every S3 client it makes under Node < 22 (its releases after January 2027
// will need Node 22): noise on every `--storage`, `backup` and `restore` run that an operator cannot act on. The SDK's
// own switch (aws/aws-sdk-js-v3#7983) turns off that notice only; an operator who sets the variable keeps their choice.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

function positiveInteger(text: string): number {
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < 1) throw new InvalidArgumentError("expected a positive integer");
  return value;
}

function nonNegativeInteger(text: string): number {
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(value)) throw new InvalidArgumentError("expected an integer from 0");
  return value;
}

function fail(command: string, cause: unknown): void {
  const error = asSilkError(cause);
  process.stderr.write(`silk ${command}: ${error.code}: ${error.message}\n`);
  process.exitCode = 1;
}

interface ImportFlags {
  data: string;
  schema?: string;
  partitions?: number;
  batchSize: number;
  label?: string;
  edgeList?: string;
  nodeLabel?: string;
  keyProperty?: string;
  progress: boolean;
}

function importCommand(): Command {
  return new Command("import")
    .description("bulk load nodes and edges from .jsonl/.ndjson, .csv and .txt/.tsv edge-list files (docs/IMPORT.md)")
    .argument("<files...>", "input files, read in this order (node files before the edges that refer to their keys)")
    .requiredOption("--data <dir>", "the database directory (created if absent)")
    .option("--schema <path>", "a .hx file, or a directory whose .hx files (recursively) are the schema")
    .option("--partitions <n>", "partitions of a new database (fixed at creation)", positiveInteger)
    .option("--batch-size <n>", "records (nodes + edges) per transaction", positiveInteger, IMPORT_BATCH_RECORDS_DEFAULT)
    .option("--label <label>", "label of CSV files without a label column (default: the file name up to its first dot)")
    .option("--edge-list <label>", "edge label of .txt/.tsv edge lists")
    .option("--node-label <label>", "label of the nodes an edge list creates on first sight")
    .option("--key-property <name>", "also store each node's key in this property")
    .option("--no-progress", "do not show progress on stderr")
    .action(async (files: string[], flags: ImportFlags) => {
      const { runImport } = await import("./import/command.js");
      const io = { stdout: process.stdout, stderr: process.stderr, now: () => performance.now() };
      process.exitCode = await runImport(files, flags, io);
    });
}

function serveCommand(): Command {
  return new Command("serve")
    .description("serve a database over HTTP: a project's schema and queries, or without --project a schemaless database (docs/SERVER.md)")
    .option("--project <dir>", "the project directory; every .hx file in it (recursively) is the schema and queries (without it: schemaless, /v2/query only)")
    .option("--port <n>", `port to listen on (default: $SILK_PORT, else ${SERVE_PORT_DEFAULT}; 0 picks a free one)`)
    .option("--host <host>", "address to listen on", SERVE_HOST_DEFAULT)
    .option("--allowed-hosts <names>", "host names beyond localhost, IP addresses and a --host name that requests may be addressed to and web pages may call from, separated by commas (.example.com: the domain and its subdomains; docs/SERVER.md#who-may-call)")
    .option("--data <dir>", "the database directory, relative to the current directory", SERVE_DATA_DEFAULT)
    .option("--cluster <dir>", "serve a cluster's partitions (its cluster.json, written by `silk cluster up`) instead of --data (docs/CLUSTER.md)")
    .option("--storage <uri>", "s3://bucket/prefix: the database lives in that bucket, --data is its local cache (docs/STORAGE.md; credentials from the AWS environment variables and config files)")
    .option("--s3-endpoint <url>", "the S3-compatible endpoint of --storage (default: AWS S3)")
    .option("--s3-request-deadline-ms <ms>", "how long one request to the object store may take, retries included, before storage_unavailable (default 10000)")
    .option("--s3-max-attempts <n>", "tries of one request to the object store on 500, 503, throttling or a dropped connection (default 5)")
    .option("--timeout-ms <n>", `the execution deadline of a request that sets no timeout_ms (default ${SERVE_TIMEOUT_MS_DEFAULT})`)
    .option("--workers <n>", "processes that serve HTTP, each with a read-only handle, writes going to the one writer; a number, or auto for one per core (default 1; docs/SERVER.md#read-workers)")
    .action(async (flags: { project?: string; port?: string; host: string; allowedHosts?: string; data: string; cluster?: string; storage?: string; s3Endpoint?: string; s3RequestDeadlineMs?: string; s3MaxAttempts?: string; timeoutMs?: string; workers?: string }) => {
      try {
        if (flags.cluster !== undefined && flags.storage !== undefined) throw new SilkError("invalid_option", "--cluster and --storage exclude each other: a cluster's partitions keep their own data");
        const { runServe, runServeCluster } = await import("./serve.js");
        if (flags.cluster !== undefined) await runServeCluster({ ...flags, cluster: flags.cluster });
        else await runServe(flags);
      } catch (cause) {
        fail("serve", cause);
      }
    });
}

function devCommand(): Command {
  return new Command("dev")
    .description("serve a project like `serve`, and reload its schema and queries whenever its .hx files change (docs/SERVER.md)")
    .argument("<dir>", "the project directory; every .hx file in it (recursively) is the schema and queries")
    .option("--port <n>", `port to listen on (default: $SILK_PORT, else ${SERVE_PORT_DEFAULT}; 0 picks a free one)`)
    .option("--host <host>", "address to listen on", SERVE_HOST_DEFAULT)
    .option("--allowed-hosts <names>", "host names beyond localhost, IP addresses and a --host name that requests may be addressed to and web pages may call from, separated by commas (.example.com: the domain and its subdomains; docs/SERVER.md#who-may-call)")
    .option("--data <dir>", "the database directory, relative to the current directory", SERVE_DATA_DEFAULT)
    .option("--timeout-ms <n>", `the execution deadline of a request that sets no timeout_ms (default ${SERVE_TIMEOUT_MS_DEFAULT})`)
    .action(async (project: string, flags: { port?: string; host: string; allowedHosts?: string; data: string; timeoutMs?: string }) => {
      try {
        const { runDev } = await import("./dev.js");
        await runDev({ project, ...flags });
      } catch (cause) {
        fail("dev", cause);
      }
    });
}

function checkCommand(): Command {
  return new Command("check")
    .description("check a project's .hx files (schema and queries) and print every diagnostic and warning; exit code 1 if there is any error")
    .argument("<path>", "a .hx file or a directory searched recursively")
    .option("--strict", "treat warnings (constructs HelixDB accepts that Silk loads its own way) as errors")
    .action(async (path: string, options: { strict?: boolean }) => {
      try {
        const { runCheck } = await import("./check.js");
        process.exitCode = runCheck(path, { stdout: process.stdout, stderr: process.stderr }, { strict: options.strict === true });
      } catch (cause) {
        fail("check", cause);
      }
    });
}

function gatewayCommand(): Command {
  return new Command("gateway")
    .description("serve a database in its hosted form: API keys, the account switch and the /v2/query rate limit (docs/GATEWAY.md)")
    .option("--project <dir>", "the project directory; every .hx file in it (recursively) is the schema and queries (without it: schemaless, /v2/query only)")
    .requiredOption("--data <dir>", "the database directory; its keys, limits and switch are in <dir>/gateway/")
    .option("--port <n>", `port to listen on (default: $SILK_PORT, else ${SERVE_PORT_DEFAULT}; 0 picks a free one)`)
    .option("--host <host>", "address to listen on", SERVE_HOST_DEFAULT)
    .option("--timeout-ms <n>", `the execution deadline of a request that sets no timeout_ms (default ${SERVE_TIMEOUT_MS_DEFAULT})`)
    .option("--redis <url>", "keep the bucket in this Redis (redis://host:port), shared by every gateway of the database")
    .option("--redis-timeout-ms <n>", `how long a rate-limit decision may wait for Redis before the request is refused 503 (default ${GATEWAY_REDIS_TIMEOUT_MS_DEFAULT})`)
    .option("--plan <plan>", "idea (5/s, burst 10), startup (10/s, 20) or growth (20/s, 40)")
    .option("--rate <n>", "this database's sustained rate in requests per second (overrides the plan and limits.json)")
    .option("--burst <n>", "this database's burst capacity in requests (overrides the plan and limits.json)")
    .option("--read-only", "open the database read-only: another gateway beside the writer on the same directory; with --storage, a follower of the bucket")
    .option("--storage <uri>", "s3://bucket/prefix: the database lives in that bucket, cached in <data>/s3-cache (docs/STORAGE.md; credentials from the AWS environment variables and config files)")
    .option("--s3-endpoint <url>", "the S3-compatible endpoint of --storage (default: AWS S3)")
    .option("--s3-request-deadline-ms <ms>", "how long one request to the object store may take, retries included, before storage_unavailable (default 10000)")
    .option("--s3-max-attempts <n>", "tries of one request to the object store on 500, 503, throttling or a dropped connection (default 5)")
    .action(async (flags: GatewayCommandOptions) => {
      try {
        const { runGateway } = await import("./gateway.js");
        await runGateway(flags);
      } catch (cause) {
        fail("gateway", cause);
      }
    });
}

const commandIo: CommandIo = { stdout: process.stdout, stderr: process.stderr, nowMs: () => Date.now() };

/** Runs an administration command on bin/keys.ts (loaded now), turning a failure into its message and exit code 1. */
async function administer(command: string, run: (keys: typeof import("./keys.js")) => void): Promise<void> {
  try {
    run(await import("./keys.js"));
  } catch (cause) {
    fail(command, cause);
  }
}

function keysCommand(): Command {
  const data = ["--data <dir>", "the database directory"] as const;
  return new Command("keys")
    .description("API keys of a hosted database: several per database, stored hashed (docs/GATEWAY.md)")
    .addCommand(
      new Command("create")
        .description("make a key and print it, once")
        .requiredOption(...data)
        .option("--name <name>", "a label to tell keys apart in `keys list`", "")
        .action((flags: { data: string; name: string }) => administer("keys", (keys) => keys.runKeysCreate(flags.data, flags.name, commandIo))),
    )
    .addCommand(
      new Command("list")
        .description("the keys' ids, names, creation and revocation times (never the keys)")
        .requiredOption(...data)
        .action((flags: { data: string }) => administer("keys", (keys) => keys.runKeysList(flags.data, commandIo))),
    )
    .addCommand(
      new Command("revoke")
        .description("refuse a key from now on, in every gateway of the database")
        .argument("<id>", "the key's id, as `keys list` shows it")
        .requiredOption(...data)
        .action((id: string, flags: { data: string }) => administer("keys", (keys) => keys.runKeysRevoke(flags.data, id, commandIo))),
    );
}

function adminCommand(): Command {
  const switchCommand = (name: "disable" | "enable", description: string): Command =>
    new Command(name)
      .description(description)
      .requiredOption("--data <dir>", "the database directory")
      .action((flags: { data: string }) => administer("admin", (keys) => keys.runAdminSwitch(flags.data, name === "disable", commandIo)));
  return new Command("admin")
    .description("the account-credit switch of a hosted database (docs/GATEWAY.md)")
    .addCommand(switchCommand("disable", "answer 402 tenant_disabled to every request until enabled"))
    .addCommand(switchCommand("enable", "serve requests again"));
}

function indexCommand(): Command {
  const action = (name: IndexAction, description: string): Command => {
    const command = new Command(name)
      .description(description)
      .requiredOption("--data <dir>", "the database directory (no server may hold it: the command opens it as writer)")
      .option("--schema <path>", "the project's .hx file or directory; required for a database with a schema, left out for a schemaless one");
    return addIndexOptions(command, name).action(async (flags: IndexCommandOptions) => {
      try {
        const { runIndexCommand } = await import("./index-command.js");
        await runIndexCommand(name, flags, { stdout: process.stdout, stderr: process.stderr });
      } catch (cause) {
        fail("index", cause);
      }
    });
  };
  return new Command("index")
    .description("index operations (secondary, vector, text) on a database no server holds (docs/INDEXES.md)")
    .addCommand(action("create", "create an index the schema does not declare (--type equality|range|unique|vector|text) and start its build; prints its state"))
    .addCommand(action("drop", "drop an index created with `index create`"))
    .addCommand(action("status", "print one index's state and counters, or every index's without --label"))
    .addCommand(action("retry", "restart a blocked build (after removing the duplicates of a UNIQUE index)"))
    .addCommand(action("abort", "abort a build (constructing or blocked) of an index created with `index create`; the index is gone"));
}

function statusCommand(): Command {
  return new Command("status")
    .description("a disk database's storage: file and map size, used and free pages, reader slots (docs/SERVER.md)")
    .requiredOption("--data <dir>", "the database directory (a server may hold it: the command opens it read-only)")
    .option("--json", "print one JSON object")
    .action(async (flags: { data: string; json?: boolean }) => {
      try {
        const { runStatus } = await import("./status.js");
        await runStatus(flags, { stdout: process.stdout });
      } catch (cause) {
        fail("status", cause);
      }
    });
}

function backupCommand(): Command {
  return new Command("backup")
    .description("copy a disk database (a server may be running on it) into an empty bucket prefix, as a database that --storage s3://... and open({ storage: { s3 } }) open (docs/STORAGE.md)")
    .requiredOption("--data <dir>", "the database directory")
    .requiredOption("--to <uri>", "s3://bucket/prefix, empty (credentials from the AWS environment variables and config files)")
    .option("--s3-endpoint <url>", "the S3-compatible endpoint (default: AWS S3)")
    .option("--s3-request-deadline-ms <ms>", "how long one request to the object store may take, retries included, before storage_unavailable (default 10000)")
    .option("--s3-max-attempts <n>", "tries of one request to the object store on 500, 503, throttling or a dropped connection (default 5)")
    .action(async (flags: { data: string; to: string; s3Endpoint?: string; s3RequestDeadlineMs?: string; s3MaxAttempts?: string }) => {
      try {
        const { runBackup } = await import("./backup.js");
        await runBackup(flags, { stdout: process.stdout });
      } catch (cause) {
        fail("backup", cause);
      }
    });
}

function restoreCommand(): Command {
  return new Command("restore")
    .description("copy a bucket database (its newest snapshot and the segments after it) into an empty directory, a disk database (docs/STORAGE.md)")
    .requiredOption("--from <uri>", "s3://bucket/prefix (credentials from the AWS environment variables and config files)")
    .requiredOption("--data <dir>", "the directory to create, or an empty one")
    .option("--s3-endpoint <url>", "the S3-compatible endpoint (default: AWS S3)")
    .option("--s3-request-deadline-ms <ms>", "how long one request to the object store may take, retries included, before storage_unavailable (default 10000)")
    .option("--s3-max-attempts <n>", "tries of one request to the object store on 500, 503, throttling or a dropped connection (default 5)")
    .action(async (flags: { from: string; data: string; s3Endpoint?: string; s3RequestDeadlineMs?: string; s3MaxAttempts?: string }) => {
      try {
        const { runRestore } = await import("./backup.js");
        await runRestore(flags, { stdout: process.stdout });
      } catch (cause) {
        fail("restore", cause);
      }
    });
}

function codegenCommand(): Command {
  return new Command("codegen")
    .description("write a TypeScript module with one typed function per QUERY of a project, for the SDK's SilkClient (docs/SDK.md)")
    .argument("<dir>", "the project directory; every .hx file in it (recursively) is the schema and queries")
    .requiredOption("--out <file>", "the .ts file to write")
    .option("--sdk-import <specifier>", "where the generated module imports the SilkClient type from (default: this installation's sdk/client.js, relative to --out)")
    .action(async (dir: string, flags: { out: string; sdkImport?: string }) => {
      try {
        const [{ runCodegen }, { loadSchemaSources }] = await Promise.all([import("../sdk/codegen.js"), import("./schema-files.js")]);
        process.exitCode = runCodegen(loadSchemaSources(dir), flags.out, flags.sdkImport, { stdout: process.stdout, stderr: process.stderr });
      } catch (cause) {
        fail("codegen", cause);
      }
    });
}

function partitionCommand(): Command {
  return new Command("partition")
    .description("run one replica of one partition of a cluster (started by `silk cluster up`; docs/CLUSTER.md)")
    .requiredOption("--dir <dir>", "the cluster directory (its cluster.json)")
    .requiredOption("--partition <i>", "the partition's index, from 0", nonNegativeInteger)
    .requiredOption("--replica <r>", "the replica's index, from 0", nonNegativeInteger)
    .option("--health-port <port>", "answer GET /health and GET /metrics on this port (0: any free one), for a supervisor's probes and Prometheus", nonNegativeInteger)
    .option("--health-host <host>", "the address the health port binds (default 127.0.0.1)")
    .option("--ready-within-ms <n>", "GET /ready answers 200 while the replica was caught up with its log at most this long ago (default 5000)", positiveInteger)
    .action(async (flags: { dir: string; partition: number; replica: number; healthPort?: number; healthHost?: string; readyWithinMs?: number }) => {
      try {
        const { runPartition } = await import("./partition.js");
        await runPartition(flags);
      } catch (cause) {
        fail("partition", cause);
        process.exit(1);
      }
    });
}

const program = new Command("silk")
  .description("Silk: a graph + vector + full-text database")
  .version(packageVersion())
  .addCommand(importCommand())
  .addCommand(serveCommand())
  .addCommand(devCommand())
  .addCommand(checkCommand())
  .addCommand(codegenCommand())
  .addCommand(gatewayCommand())
  .addCommand(keysCommand())
  .addCommand(adminCommand())
  .addCommand(indexCommand())
  .addCommand(statusCommand())
  .addCommand(backupCommand())
  .addCommand(restoreCommand())
  .addCommand(partitionCommand())
  .addCommand(clusterCommand(fail, positiveInteger))
  .addCommand(chaosCommand(fail, positiveInteger, nonNegativeInteger));

await program.parseAsync(process.argv);
