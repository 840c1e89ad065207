/**
 * The network a chaos run puts between its cluster's processes and the NATS servers (docs/CHAOS.md, "partition"):
 * for each Silk process (`p<i>-r<r>`, `serve`), one FaultProxy (chaos/proxy.ts) per NATS server, whose URLs the
 * process is started with (SILK_NATS_SERVERS). Isolating a process partitions all of its proxies: it reaches no NATS
 * server, and the rest of the cluster (which reaches NATS through its own proxies) goes on without it.
 *
 * Between the NATS servers, one proxy per ordered pair of servers: server A's route to B dials the proxy `A>B`,
 * which forwards to B's cluster port (cluster/nats/servers.ts `routeVia`). Isolating server A partitions every route
 * proxy it is an end of: A reaches no peer, its clients (the Silk processes connected to it) still reach it.
 *
 * The proxies live in the run's own process, so a cluster started this way reaches NATS only while the run lasts:
 * `silk chaos run` refuses `--keep` and attaching with `partition` (bin/chaos.ts).
 */
import { SilkError } from "../protocol/errors.js";
import { FaultProxy } from "./proxy.js";

export class ProxiedNetwork {
  private readonly proxies = new Map<string, FaultProxy[]>();
  private readonly isolated = new Set<string>();

  /** The URLs `process` is to use for `servers` (its proxies, started on first ask; the same ones after a restart). */
  async serversFor(process: string, servers: readonly string[]): Promise<readonly string[]> {
    let proxies = this.proxies.get(process);
    if (proxies === undefined) {
      proxies = await Promise.all(servers.map((url) => FaultProxy.start(targetOf(url))));
      this.proxies.set(process, proxies);
    }
    return proxies.map((proxy) => proxy.url);
  }

  /** The port server `from`'s route to server `to` dials: their proxy (started on first ask). */
  async routeVia(from: string, to: string, clusterPort: number): Promise<number> {
    const name = routeName(from, to);
    let proxies = this.proxies.get(name);
    if (proxies === undefined) {
      proxies = [await FaultProxy.start({ host: "127.0.0.1", port: clusterPort })];
      this.proxies.set(name, proxies);
    }
    return proxies[0].port;
  }

  /** The NATS servers with proxied routes (by name, sorted). */
  routedServers(): string[] {
    return [...new Set([...this.proxies.keys()].filter((name) => name.includes(">")).flatMap((name) => name.split(">")))].sort();
  }

  /** Cuts NATS server `server` off from every peer: each route proxy it is an end of becomes a black hole. */
  isolateServer(server: string): void {
    const routes = [...this.proxies.keys()].filter((name) => name.split(">").includes(server));
    if (routes.length === 0) throw new SilkError("internal", `no route proxies for NATS server ${server}`);
    for (const name of routes) this.isolate(name);
  }

  /** Ends `server`'s isolation from its peers. */
  healServer(server: string): void {
    for (const name of [...this.isolated].filter((name) => name.split(">").includes(server))) this.heal(name);
  }

  /** The URLs a process was given, undefined if it has no proxies. */
  urlsOf(process: string): readonly string[] | undefined {
    return this.proxies.get(process)?.map((proxy) => proxy.url);
  }

  /** Cuts `process` off from every NATS server (a black hole: chaos/proxy.ts `partition`). */
  isolate(process: string): void {
    const proxies = this.proxies.get(process);
    if (proxies === undefined) throw new SilkError("internal", `no proxies for ${process}`);
    for (const proxy of proxies) proxy.partition();
    this.isolated.add(process);
  }

  /** Ends `process`'s isolation (what was held is delivered). */
  heal(process: string): void {
    for (const proxy of this.proxies.get(process) ?? []) proxy.heal();
    this.isolated.delete(process);
  }

  /** Ends every isolation. */
  healAll(): void {
    for (const process of [...this.isolated]) this.heal(process);
  }

  async close(): Promise<void> {
    await Promise.all([...this.proxies.values()].flat().map((proxy) => proxy.close()));
    this.proxies.clear();
  }
}

/** The network name of server `from`'s route to server `to`. */
function routeName(from: string, to: string): string {
  return `${from}>${to}`;
}

function targetOf(url: string): { host: string; port: number } {
  const parsed = new URL(url.replace(/^nats:/, "http:"));
  return { host: parsed.hostname, port: Number(parsed.port) };
}
