/**
 * The local NATS cluster launcher (cluster/nats/servers.ts): three real nats-server processes form a JetStream
 * cluster on loopback that advertises no server's address to clients; a replicated stream survives one server's
 * crash and takes writes again after a restart.
 */
import { afterAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager, jetstream } from "@nats-io/jetstream";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";

afterAll(removeTempDirs);

describe("a local three-server JetStream cluster", () => {
  it("replicates a stream over three servers and keeps it through one server's crash", async () => {
    const cluster = await LocalNatsCluster.start(tempDir("silk-nats-"));
    try {
      expect(cluster.urls).toHaveLength(3);
      const nc = await connect({ servers: cluster.urls });
      try {
        // No server advertises its address (no_advertise): a client given one URL, a proxy's say, learns no other.
        const single = await connect({ servers: cluster.urls[0] });
        expect(single.info?.connect_urls ?? []).toEqual([]);
        await single.close();
        const jsm = await jetstreamManager(nc);
        await jsm.streams.add({ name: "T", subjects: ["t.>"], num_replicas: 3 });
        const js = jetstream(nc);
        for (let i = 0; i < 5; i++) await js.publish("t.a", new TextEncoder().encode(String(i)));
        cluster.kill("n1");
        let acked = false;
        for (let attempt = 0; attempt < 50 && !acked; attempt++) {
          try {
            await js.publish("t.a", new TextEncoder().encode("after"), { timeout: 1_000 });
            acked = true;
          } catch {
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        }
        expect(acked).toBe(true);
        await cluster.restart("n1");
        const info = await jsm.streams.info("T");
        expect(info.state.messages).toBe(6);
      } finally {
        await nc.close();
      }
    } finally {
      await cluster.stop();
    }
  }, 60_000);
});
