/**
 * Partition replication on a real three-server JetStream cluster (cluster/nats/replica.ts): one leader, writes reaching
 * every replica, retried writes applied once, stale reads, failover on stop(), a deposed leader's append refused,
 * IDs never handed out twice across a failover, and a restarted replica catching up.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { connect } from "@nats-io/transport-node";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { LeaderWriteLog, PartitionLog } from "../../cluster/nats/partition-log.js";
import { decodeReply } from "../../cluster/nats/wire.js";
import { subjects } from "../../cluster/nats/subjects.js";
import { ID_RESERVATION_BLOCK } from "../../node/actor/partition-actor.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import { LEASE_TTL_MS, ask, askLeader, createUser, leaderOf, startReplica, stopReplica, users, waitFor, type TestReplica } from "./replica-helpers.js";

/** One request id (a UUID, as the transport makes them) sent twice: the log holds it once. */
const SIX_REQUEST = "00000000-0000-4000-8000-000000000006";

let nats: LocalNatsCluster;

beforeAll(async () => {
  nats = await LocalNatsCluster.start(tempDir("silk-nats-"));
}, 30_000);

afterAll(async () => {
  await nats?.stop();
  removeTempDirs();
});

async function startThree(cluster: string): Promise<TestReplica[]> {
  return Promise.all(["a", "b", "c"].map((name) => startReplica(nats.urls, cluster, name)));
}

describe("partition replicas on JetStream", () => {
  it("elects one leader; writes reach every replica; a retried apply applies once; followers answer stale reads only", async () => {
    const replicas = await startThree("rep-one");
    try {
      const leader = await waitFor("a leader", () => leaderOf(replicas));
      const client = replicas[0]!.nc;
      for (let i = 1; i <= 5; i++) await askLeader(client, "rep-one", { type: "apply", batch: createUser(BigInt(i), `u${i}`) });
      // The same requestId twice: the second is a duplicate in the log, applied once.
      await askLeader(client, "rep-one", { type: "apply", batch: createUser(6n, "six") }, SIX_REQUEST);
      const sequence = leader.replica.appliedSequence();
      const again = await askLeader(client, "rep-one", { type: "apply", batch: createUser(6n, "six") }, SIX_REQUEST);
      expect(again.body).toEqual({ type: "done" });
      expect(leader.replica.appliedSequence()).toBe(sequence);
      const expected = ["1:u1", "2:u2", "3:u3", "4:u4", "5:u5", "6:six"];
      for (const r of replicas) {
        await waitFor(`${r.name} caught up`, () => r.replica.appliedSequence() === sequence);
        expect(users(r.store)).toEqual(expected);
      }
      expect(replicas.filter((r) => r.replica.role === "leader")).toHaveLength(1);
      const log = await PartitionLog.open({ nc: client, cluster: "rep-one", partition: 0, replicas: 3 });
      expect(await log.lastSequence()).toBe(sequence);

      // Stale reads from any replica; anything else is refused with not_leader and changes nothing.
      const read = await ask(client, subjects.stale("rep-one", 0), { type: "read_records", kind: "node", ids: [3n] });
      expect(read.ok && read.body.type === "records" && read.body.records[0]?.props.name).toBe("u3");
      const refused = await ask(client, subjects.stale("rep-one", 0), { type: "apply", batch: createUser(7n, "seven") });
      expect(refused).toMatchObject({ ok: false, code: "not_leader" });
      // A malformed envelope gets an error reply, not a crash.
      const garbage = await client.request(subjects.leader("rep-one", 0), new Uint8Array([0xc1]), { timeout: 3_000 });
      expect(decodeReply(garbage.data)).toMatchObject({ ok: false, code: "internal" });
      // A write the leader refuses (an ID outside the partition) is not logged.
      const before = await log.lastSequence();
      const bad = await ask(client, subjects.leader("rep-one", 0), { type: "apply", batch: createUser(1n << 41n, "far") });
      expect(bad.ok).toBe(false);
      expect(await log.lastSequence()).toBe(before);
      for (const r of replicas) expect(users(r.store)).toEqual(expected);
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
  }, 50_000);

  it("fails over on stop(): a follower leads within the lease TTL, the deposed leader cannot append, IDs are not reused", async () => {
    const replicas = await startThree("rep-two");
    let stopped: TestReplica | undefined;
    try {
      const old = await waitFor("a leader", () => leaderOf(replicas));
      const client = replicas.find((r) => r !== old)!.nc;
      const allocated = await askLeader(client, "rep-two", { type: "allocate_ids", count: 3 });
      const first = allocated.body.type === "id" ? allocated.body.id : -1n;
      expect(first).toBeGreaterThan(0n);
      await askLeader(client, "rep-two", { type: "apply", batch: createUser(first, "old-leader") });
      const oldSequence = old.replica.appliedSequence();

      const stoppedAt = Date.now();
      await old.replica.stop();
      stopped = old;
      const rest = replicas.filter((r) => r !== old);
      const next = await waitFor("a new leader", () => leaderOf(rest), LEASE_TTL_MS * 4);
      expect(Date.now() - stoppedAt).toBeLessThan(LEASE_TTL_MS * 4);
      expect(next).not.toBe(old);
      await askLeader(client, "rep-two", { type: "apply", batch: createUser(first + 1n, "new-leader") });

      // IDs: the new leader starts after the old leader's whole reserved block.
      const fresh = await askLeader(client, "rep-two", { type: "allocate_ids", count: 1 });
      const freshId = fresh.body.type === "id" ? fresh.body.id : -1n;
      expect(freshId).toBeGreaterThanOrEqual(first + BigInt(ID_RESERVATION_BLOCK));

      // The old leader, unaware it lost the lease, appends with its old guard: refused, nothing applied.
      const log = await PartitionLog.open({ nc: old.nc, cluster: "rep-two", partition: 0, replicas: 3 });
      const lastBefore = await log.lastSequence();
      const unsure: string[] = [];
      const stale = new LeaderWriteLog({ log, store: old.store, lastSequence: oldSequence, mayAppend: () => true, onUnsure: (reason) => unsure.push(reason), logger: pino({ level: "silent" }) });
      await expect(stale.append({ type: "apply", batch: createUser(first + 2n, "deposed") })).rejects.toMatchObject({ code: "not_leader" });
      expect(unsure).toHaveLength(1);
      expect(await log.lastSequence()).toBe(lastBefore);
      expect(old.replica.appliedSequence()).toBe(oldSequence);
      expect(users(old.store)).toEqual([`${first}:old-leader`]);

      for (const r of rest) {
        await waitFor(`${r.name} caught up`, () => r.replica.appliedSequence() === lastBefore);
        expect(users(r.store)).toEqual([`${first}:old-leader`, `${first + 1n}:new-leader`].sort());
      }
    } finally {
      await Promise.all(replicas.map((r) => (r === stopped ? Promise.all([r.nc.close(), r.store.close()]) : stopReplica(r))));
    }
  }, 50_000);

  it("a stopped replica restarted on its own store resumes from its applied sequence and catches up", async () => {
    const replicas = await startThree("rep-three");
    const fatal: Error[] = [];
    const client = await connect({ servers: nats.urls });
    try {
      await waitFor("a leader", () => leaderOf(replicas));
      for (let i = 1; i <= 3; i++) await askLeader(client, "rep-three", { type: "apply", batch: createUser(BigInt(i), `u${i}`) });
      const follower = replicas.find((r) => r.replica.role === "follower")!;
      await waitFor("the follower caught up", () => users(follower.store).length === 3);
      const resumedFrom = follower.replica.appliedSequence();
      await stopReplica(follower);
      const index = replicas.indexOf(follower);
      for (let i = 4; i <= 8; i++) await askLeader(client, "rep-three", { type: "apply", batch: createUser(BigInt(i), `u${i}`) });
      const restarted = await startReplica(nats.urls, "rep-three", follower.name, follower.path, fatal);
      replicas[index] = restarted;
      expect(restarted.replica.appliedSequence()).toBeGreaterThanOrEqual(resumedFrom);
      const leader = leaderOf(replicas)!;
      await waitFor("the restarted replica caught up", () => restarted.replica.appliedSequence() === leader.replica.appliedSequence());
      expect(users(restarted.store)).toEqual(users(leader.store));
      expect(users(restarted.store)).toHaveLength(8);
      expect(fatal).toEqual([]);
    } finally {
      await client.close();
      await Promise.all(replicas.map(stopReplica));
    }
  }, 50_000);
});
