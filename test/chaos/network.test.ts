/**
 * The chaos harness's proxies on the NATS cluster routes (chaos/network.ts, cluster/nats/servers.ts `routeVia`):
 * three real nats-server processes whose routes to each other go through one proxy per ordered pair. Messages cross
 * between servers through them; isolating a server cuts it off from its peers (a request from a client of that
 * server to a responder on another gets no answer, while its own clients still reach it), and healing joins it again.
 * The servers advertise no reachable route address, so no route bypasses the proxies.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ProxiedNetwork } from "../../chaos/network.js";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";

let network: ProxiedNetwork;
let cluster: LocalNatsCluster;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  network = new ProxiedNetwork();
  cluster = await LocalNatsCluster.start(temporaryDirectory(), { routeVia: (from, to) => network.routeVia(from, to.name, to.clusterPort) });
}, 60_000);

afterAll(async () => {
  for (const nc of connections) await nc.close().catch(() => undefined);
  await cluster?.stop();
  await network?.close();
  removeTemporaryDirectories();
});

/** A client of one server only (its URL alone: it cannot fail over to another). */
async function clientOf(server: number): Promise<NatsConnection> {
  const nc = await connect({ servers: [cluster.urls[server]], maxReconnectAttempts: -1 });
  connections.push(nc);
  return nc;
}

/** Whether a request from `from` to the responder on `subject` answers within `timeoutMs`. */
async function answers(from: NatsConnection, subject: string, timeoutMs: number): Promise<boolean> {
  return from.request(subject, "ping", { timeout: timeoutMs }).then(
    () => true,
    () => false,
  );
}

/** Retries until a request answers (routes and their interest take a moment to form or re-form). */
async function eventuallyAnswers(from: NatsConnection, subject: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await answers(from, subject, 1_000))) if (Date.now() > deadline) throw new Error(`no answer on ${subject} within 30 s`);
}

describe("NATS routes through the chaos proxies", () => {
  it("routes every server to its peers through one proxy per pair, advertising no route address of its own", () => {
    expect(network.routedServers()).toEqual(["n1", "n2", "n3"]);
    for (const spec of cluster.specs) {
      const config = readFileSync(spec.configFile, "utf8");
      const routed = [...config.matchAll(/nats-route:\/\/127\.0\.0\.1:(\d+)/g)].map((match) => Number(match[1]));
      expect(routed).toHaveLength(2);
      for (const port of routed) expect(cluster.specs.map((other) => other.clusterPort)).not.toContain(port);
      expect(config).toContain('advertise: "127.0.0.1:1"');
    }
  });

  it("cuts a server off from its peers and joins it again", async () => {
    const [onN1, onN2, onN3] = [await clientOf(0), await clientOf(1), await clientOf(2)];
    onN2.subscribe("chaos.test.n2", { callback: (_, message) => void message.respond("pong") });
    onN1.subscribe("chaos.test.n1", { callback: (_, message) => void message.respond("pong") });
    await onN2.flush();
    await onN1.flush();
    await eventuallyAnswers(onN1, "chaos.test.n2");
    await eventuallyAnswers(onN3, "chaos.test.n2");

    network.isolateServer("n1");
    // n1's clients reach n2's responder no more, nor n3's clients n1's; n1 still serves its own clients, and n2 and n3
    // still reach each other.
    expect(await answers(onN1, "chaos.test.n2", 1_500)).toBe(false);
    expect(await answers(onN3, "chaos.test.n1", 1_500)).toBe(false);
    expect(await answers(onN1, "chaos.test.n1", 1_500)).toBe(true);
    expect(await answers(onN3, "chaos.test.n2", 1_500)).toBe(true);

    network.healServer("n1");
    await eventuallyAnswers(onN1, "chaos.test.n2");
    await eventuallyAnswers(onN3, "chaos.test.n1");
  }, 90_000);
});
