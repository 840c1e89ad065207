/**
 * One writer coordinator per cluster (issue 16: a second `silk serve --cluster` started silently, and bank transfers
 * through the two created money). The writer holds the cluster's coordinator lease: a second writer is refused with
 * writer_locked naming the first, read-only coordinators connect beside it, the next writer starts at once after the
 * first closes, and a writer that lost its lease holds writes until it has it again: a write sent during a brief loss
 * waits and commits, one sent while another holder keeps the lease is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect as connectNats, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { subjects } from "../../cluster/nats/subjects.js";
import { connectCluster } from "../../runtime/remote.js";
import { startTestCluster, startTestNats, stopTestNats, type TestCluster, type TestNats } from "../helpers/cluster.js";
import { expectCode } from "../helpers/engine.js";

/** Past a renewal period of the test clusters' lease (1.5 s / 3) and the lease's check interval. */
const LOSS_NOTICED_MS = 800;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
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

  it("refuses writes while another holder keeps its lease, and writes again after taking it back", async () => {
    const leases = await new Kvm(nc).open(subjects.leaseBucket(cluster.name));
    // Another holder writes the key and keeps it alive: the writer's next renewal is refused, the lease is lost, and
    // it cannot be taken back while that entry lives, so a write waits out the regain wait and is refused.
    const foreign = JSON.stringify({ replica: "someone else", term: 99 });
    await leases.put(subjects.coordinatorLeaseKey, foreign);
    const keepAlive = setInterval(() => void leases.put(subjects.coordinatorLeaseKey, foreign).catch(() => undefined), 300);
    let refused: unknown;
    try {
      // The writer notices at its next renewal (every third of the test clusters' 1.5 s lease lifetime).
      await sleep(LOSS_NOTICED_MS);
      for (let attempt = 0; refused === undefined && attempt < 5; attempt++) {
        refused = await cluster.database.query("Add", { name: "during" }).then(() => undefined, (cause: unknown) => cause);
      }
    } finally {
      clearInterval(keepAlive);
    }
    expect(refused).toMatchObject({ code: "partition_unavailable" });
    expect(String((refused as Error).message)).toContain("lost the cluster's writer lease");
    // Once that entry expires the writer takes the lease back (after its recovery) and writes commit again.
    expect(await cluster.database.query("Add", { name: "after" })).toBeDefined();
    expect((await leases.get(subjects.coordinatorLeaseKey))?.operation).toBe("PUT");
  }, 90_000);

  it("holds a write sent during a brief loss of its lease until it has it again, then commits it", async () => {
    const leases = await new Kvm(nc).open(subjects.leaseBucket(cluster.name));
    const before = (await cluster.database.query("Count", {})) as { n: number };
    const termOf = async (): Promise<number> => JSON.parse(new TextDecoder().decode((await leases.get(subjects.coordinatorLeaseKey))!.value)).term as number;
    const heldTerm = await termOf();
    // One foreign entry, not renewed: the writer loses its lease at its next renewal and takes it back once the
    // entry expires. Writes sent meanwhile wait instead of failing (a long synchronous job in the coordinator's
    // process, or a NATS hiccup, loses the lease the same way).
    await leases.put(subjects.coordinatorLeaseKey, JSON.stringify({ replica: "someone else", term: 100 }));
    await sleep(LOSS_NOTICED_MS);
    const writes = await Promise.all(Array.from({ length: 5 }, (_, i) => cluster.database.query("Add", { name: `brief-${i}` })));
    expect(writes).toHaveLength(5);
    expect(((await cluster.database.query("Count", {})) as { n: number }).n).toBe(before.n + 5);
    // The writes waited for the writer to take the lease back (a new term) once the foreign entry expired.
    expect(await termOf()).toBeGreaterThan(heldTerm);
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
