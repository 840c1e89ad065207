/**
 * Local NATS servers for development and tests: a JetStream cluster of `nats-server` processes (the OS package,
 * DESIGN.md) on loopback ports of their own, each with its store directory, config file and log file under one
 * directory. `silk cluster up` starts three; the cluster test suites start their own and kill or restart single
 * servers for fault tests.
 *
 * Invariant: every server listens on 127.0.0.1 only, and a start waits until every server accepts clients and the
 * JetStream meta group has a leader (so a stream can be created at once). No server advertises its address to
 * clients (`no_advertise`): a client uses only the URLs it was given (cluster.json's, or a process's own through
 * SILK_NATS_SERVERS), so a proxy put between a process and the servers (the chaos harness's) cannot be bypassed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { SilkError } from "../../protocol/errors.js";

/** Where the OS package installs the server; `NATS_SERVER` overrides it. */
export const NATS_SERVER_BINARY = process.env.NATS_SERVER ?? "/usr/sbin/nats-server";

export interface NatsServerSpec {
  readonly name: string;
  readonly clientPort: number;
  readonly clusterPort: number;
  readonly storeDir: string;
  readonly configFile: string;
  readonly logFile: string;
}

/** A free TCP port on loopback (the kernel's choice; free when returned). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** The specs of an n-server cluster under `directory` (ports chosen now, free at this moment). */
export async function natsClusterSpecs(directory: string, count: number): Promise<NatsServerSpec[]> {
  const specs: NatsServerSpec[] = [];
  for (let i = 1; i <= count; i++) {
    const name = `n${i}`;
    specs.push({
      name,
      clientPort: await freePort(),
      clusterPort: await freePort(),
      storeDir: join(directory, name, "jetstream"),
      configFile: join(directory, name, "nats.conf"),
      logFile: join(directory, name, "nats.log"),
    });
  }
  return specs;
}

/**
 * Where server `from` dials server `to`'s route (cluster) port: a loopback port of its own, which forwards to
 * `to.clusterPort` (the chaos harness's fault proxies between NATS servers, chaos/network.ts).
 */
export type RouteVia = (from: string, to: NatsServerSpec) => Promise<number>;

/**
 * Where nothing listens (port 1, tcpmux, unused on these machines): a server whose routes go through proxies
 * advertises it as its route address, so the route URLs the servers gossip to one another lead nowhere and every
 * route is one a server's config names, through its proxy.
 */
const UNREACHABLE_ROUTE_ADDRESS = "127.0.0.1:1";

function configOf(spec: NatsServerSpec, all: readonly NatsServerSpec[], clusterName: string, routePorts?: ReadonlyMap<string, number>): string {
  const routes = all.filter((other) => other !== spec).map((other) => `nats-route://127.0.0.1:${routePorts?.get(other.name) ?? other.clusterPort}`);
  const advertise = routePorts === undefined ? "" : `, advertise: ${JSON.stringify(UNREACHABLE_ROUTE_ADDRESS)}`;
  const lines = [
    `server_name: ${spec.name}`,
    `listen: 127.0.0.1:${spec.clientPort}`,
    `jetstream { store_dir: ${JSON.stringify(spec.storeDir)} }`,
    `log_file: ${JSON.stringify(spec.logFile)}`,
  ];
  if (all.length > 1) lines.push(`cluster { name: ${clusterName}, listen: 127.0.0.1:${spec.clusterPort}, no_advertise: true${advertise}, routes: [${routes.join(", ")}] }`);
  return `${lines.join("\n")}\n`;
}

/** A running local cluster: its client URLs, and single servers to stop, kill and start again. */
export class LocalNatsCluster {
  private readonly processes = new Map<string, ChildProcess>();
  /** Servers whose process exited by itself (not stopped or killed through this object), with how. */
  private readonly exits = new Map<string, { readonly code: number | null; readonly signal: NodeJS.Signals | null }>();

  private constructor(
    readonly specs: readonly NatsServerSpec[],
    private readonly clusterName: string,
  ) {}

  /** Writes the config files and starts every server; resolves once all accept clients and JetStream is ready. */
  /** `routeVia`: each server's routes to the others go to the ports it gives (proxies), not to their cluster ports. */
  static async start(directory: string, options: { servers?: number; clusterName?: string; routeVia?: RouteVia } = {}): Promise<LocalNatsCluster> {
    if (!existsSync(NATS_SERVER_BINARY)) {
      throw new SilkError("invalid_option", `${NATS_SERVER_BINARY} is missing: install the nats-server package (apt-get install nats-server) or set NATS_SERVER`);
    }
    for (let attempt = 1; ; attempt += 1) {
      const specs = await natsClusterSpecs(directory, options.servers ?? 3);
      const cluster = new LocalNatsCluster(specs, options.clusterName ?? "silk");
      for (const spec of specs) {
        mkdirSync(spec.storeDir, { recursive: true });
        const routeVia = options.routeVia;
        const routePorts = routeVia === undefined ? undefined : new Map(await Promise.all(specs.filter((other) => other !== spec).map(async (other) => [other.name, await routeVia(spec.name, other)] as const)));
        writeFileSync(spec.configFile, configOf(spec, specs, cluster.clusterName, routePorts));
      }
      for (const spec of specs) cluster.spawn(spec);
      try {
        await cluster.ready();
        return cluster;
      } catch (cause) {
        await cluster.stop();
        // A port that was free when chosen can be taken before the server binds it (another process on this machine
        // picked it meanwhile): that server exits at once. Start afresh on new ports, with empty stores.
        if (!(cause instanceof ServerExited) || attempt >= START_ATTEMPTS_MAX) throw cause;
        for (const spec of specs) rmSync(spec.storeDir, { recursive: true, force: true });
      }
    }
  }

  /** Client URLs of every server, for a connection that fails over between them. */
  get urls(): string[] {
    return this.specs.map((spec) => `nats://127.0.0.1:${spec.clientPort}`);
  }

  /** The process IDs of the running servers, by name (what `silk cluster down` stops). */
  pids(): Record<string, number> {
    const pids: Record<string, number> = {};
    for (const [name, child] of this.processes) if (child.pid !== undefined) pids[name] = child.pid;
    return pids;
  }

  private spawn(spec: NatsServerSpec): void {
    const child = spawn(NATS_SERVER_BINARY, ["-c", spec.configFile], { stdio: "ignore", detached: false });
    this.exits.delete(spec.name);
    child.on("exit", (code, signal) => {
      if (this.processes.get(spec.name) !== child) return;
      this.processes.delete(spec.name);
      this.exits.set(spec.name, { code, signal });
    });
    this.processes.set(spec.name, child);
  }

  /** A server whose process exited by itself since it was started (`silk cluster up` fails on one), if any. */
  exited(): { readonly spec: NatsServerSpec; readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined {
    for (const spec of this.specs) {
      const exit = this.exits.get(spec.name);
      if (exit !== undefined) return { spec, ...exit };
    }
    return undefined;
  }

  /** Kills one server at once (SIGKILL: a crash, not a shutdown). */
  kill(name: string): void {
    this.processes.get(name)?.kill("SIGKILL");
    this.processes.delete(name);
  }

  /** Starts a stopped or killed server again with its old store; resolves when it accepts clients. */
  async restart(name: string): Promise<void> {
    const spec = this.specs.find((candidate) => candidate.name === name);
    if (spec === undefined) throw new Error(`no server ${name}`);
    if (!this.processes.has(name)) this.spawn(spec);
    await waitForClients(`nats://127.0.0.1:${spec.clientPort}`);
  }

  /** Every server accepts clients and the JetStream API answers (a meta leader is elected). */
  async ready(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const spec of this.specs) {
      await waitForClients(`nats://127.0.0.1:${spec.clientPort}`, deadline, () => {
        if (!this.processes.has(spec.name)) throw new ServerExited(`nats-server ${spec.name} exited while starting (see ${spec.logFile})`);
      });
    }
    const nc = await connect({ servers: this.urls });
    try {
      for (;;) {
        try {
          await nc.request("$JS.API.INFO", undefined, { timeout: 1_000 });
          return;
        } catch (cause) {
          if (Date.now() > deadline) throw new SilkError("partition_unavailable", `JetStream did not become ready: ${String(cause)}`);
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
    } finally {
      await nc.close();
    }
  }

  /** Stops every server (SIGTERM, then SIGKILL after a grace period). */
  async stop(): Promise<void> {
    const children = [...this.processes.values()];
    this.processes.clear();
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
            child.once("exit", () => {
              clearTimeout(timer);
              resolve();
            });
            child.kill("SIGTERM");
          }),
      ),
    );
  }
}

/** A server of a starting cluster exited before it accepted clients (most often: its port was taken meanwhile). */
class ServerExited extends SilkError {
  constructor(message: string) {
    super("partition_unavailable", message);
  }
}

/** How many times `LocalNatsCluster.start` picks new ports when a server exits while starting. */
const START_ATTEMPTS_MAX = 3;

/** Waits until `url` accepts a client; `stillRunning` throws when the server's process is gone (no use waiting). */
async function waitForClients(url: string, deadline = Date.now() + 20_000, stillRunning: () => void = () => {}): Promise<void> {
  for (;;) {
    stillRunning();
    try {
      const nc = await connect({ servers: url, reconnect: false, timeout: 500 });
      await nc.close();
      return;
    } catch (cause) {
      if (Date.now() > deadline) throw new SilkError("partition_unavailable", `nats-server at ${url} did not start: ${String(cause)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
