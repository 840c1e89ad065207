/**
 * One writer coordinator per cluster (issue 16: a second `silk serve --cluster` started silently, and bank transfers
 * through the two created money). The writer holds the cluster's coordinator lease: a second writer is refused with
 * writer_locked naming the first, read-only coordinators connect beside it, the next writer starts at once after the
 * first closes, and a writer that lost its lease refuses writes until it holds it again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect as connectNats, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { subjects } from "../../cluster/nats/subjects.js";
import { connectCluster } from "../../runtime/remote.js";
import { startTestCluster, startTestNats, stopTestNats, type TestCluster, type TestNats } from "../helpers/cluster.js";
import { expectCode } from "../helpers/engine.js";

const SCHEMA = "N::User { name: String }\nQUERY Add(name: String) => u <- AddN<User>({name: name}) RETURN u::ID\nQUERY Count() => n <- N<User>::COUNT RETURN n";

let nats: TestNats;
let cluster: TestCluster;
let nc: NatsConnection;

beforeAll(async () => {
  nats = await startTestNats(1);
  nc = await connectNats({ servers: nats.urls });
  cluster = await startTestCluster(nats, { partitions: 1, replicas: 1, schema: SCHEMA });
}, 60_000);

afterAll(async () => {
  await nc?.close();
  await cluster?.close();
  if (nats !== undefined) await stopTestNats(nats);
});

const connect = (mode: "writer" | "readonly") =>
  connectCluster({ cluster: cluster.name, servers: nats.urls, partitions: 1, decisionReplicas: nats.streamReplicas, schema: SCHEMA, mode });

describe("the writer coordinator's lease", () => {
  it("refuses a second writer coordinator with writer_locked, and lets read-only ones connect", async () => {
    await cluster.database.query("Add", { name: "a" });
    const error = await expectCode(connect("writer"), "writer_locked");
    expect(error.message).toContain(`cluster ${cluster.name} already has a writer coordinator (coordinator `);
    const reader = await connect("readonly");
    try {
      expect(await reader.query("Count", {})).toEqual({ n: 1 });
      await expectCode(reader.query("Add", { name: "b" }), "read_only");
    } finally {
      await reader.close();
    }
    // The first writer still writes.
    await cluster.database.query("Add", { name: "c" });
    expect(await cluster.database.query("Count", {})).toEqual({ n: 2 });
  }, 60_000);

  it("refuses writes once it lost its lease, and writes again after taking it back", async () => {
    const leases = await new Kvm(nc).open(subjects.leaseBucket(cluster.name));
    // Another holder writes the key (kept alive until a write was refused): the writer's next renewal is refused,
    // the lease is lost, and it cannot be taken back while that entry lives.
    const foreign = JSON.stringify({ replica: "someone else", term: 99 });
    const until = async (done: () => Promise<boolean>): Promise<void> => {
      const deadline = Date.now() + 20_000;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`timed out: ${String(refused)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    let refused: unknown;
    await until(async () => {
      await leases.put(subjects.coordinatorLeaseKey, foreign);
      refused = await cluster.database.query("Add", { name: "during" }).then(() => undefined, (cause: unknown) => cause);
      return refused !== undefined;
    });
    expect(refused).toMatchObject({ code: "partition_unavailable" });
    expect(String((refused as Error).message)).toContain("lost the cluster's writer lease");
    await until(async () => cluster.database.query("Add", { name: "after" }).then(() => true, () => false));
    expect((await leases.get(subjects.coordinatorLeaseKey))?.operation).toBe("PUT");
  }, 60_000);

  it("gives the cluster to the next writer at once when the writer closes", async () => {
    const second = await startTestCluster(nats, { partitions: 1, replicas: 1, schema: SCHEMA });
    try {
      const leases = await new Kvm(nc).open(subjects.leaseBucket(second.name));
      expect((await leases.get(subjects.coordinatorLeaseKey))?.operation).toBe("PUT");
      await second.database.close();
      // Released, not left to expire: the next writer need not wait.
      expect((await leases.get(subjects.coordinatorLeaseKey))?.operation).not.toBe("PUT");
      const next = await connectCluster({ cluster: second.name, servers: nats.urls, partitions: 1, decisionReplicas: nats.streamReplicas, schema: SCHEMA });
      try {
        await next.query("Add", { name: "z" });
        expect(await next.query("Count", {})).toEqual({ n: 1 });
      } finally {
        await next.close();
      }
    } finally {
      await second.close();
    }
  }, 60_000);
});
