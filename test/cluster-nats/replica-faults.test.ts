/**
 * Partition replicas under faults on a real three-server JetStream cluster: the NATS server leading the log stream
 * is SIGKILLed while a client writes (every acknowledged write ends up on every replica, once), and a leader whose
 * lease entry is taken away stops serving and another replica leads.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { decodeLogEntry } from "../../cluster/nats/wire.js";
import { subjects } from "../../cluster/nats/subjects.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import { LEASE_TTL_MS, askLeader, createUser, leaderOf, startReplica, stopReplica, users, waitFor, type TestReplica } from "./replica-helpers.js";

let nats: LocalNatsCluster;

beforeAll(async () => {
  nats = await LocalNatsCluster.start(tempDir("silk-nats-"));
}, 30_000);

afterAll(async () => {
  await nats?.stop();
  removeTempDirs();
});

describe("partition replicas under faults", () => {
  it("keeps every acknowledged write, once, when the NATS server leading the log is killed mid-writes", async () => {
    const fatal: Error[] = [];
    const replicas: TestReplica[] = [];
    for (const name of ["a", "b", "c"]) replicas.push(await startReplica(nats.urls, "faults-kill", name, undefined, fatal));
    const client = await connect({ servers: nats.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    let killed: string | undefined;
    try {
      await waitFor("a leader", () => leaderOf(replicas));
      const jsm = await jetstreamManager(client);
      const expected: string[] = [];
      for (let i = 1; i <= 30; i++) {
        if (i === 11) {
          const info = await jsm.streams.info(subjects.logStream("faults-kill", 0));
          killed = info.cluster?.leader ?? "n1";
          nats.kill(killed);
        }
        // A fixed request id per write: the retries of one write are one entry in the log.
        const reply = await askLeader(client, "faults-kill", { type: "apply", batch: createUser(BigInt(i), `u${i}`) }, `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, 40_000);
        expect(reply.body).toEqual({ type: "done" });
        expected.push(`${i}:u${i}`);
      }
      expected.sort();
      const leader = await waitFor("a leader", () => leaderOf(replicas), 20_000);
      for (const r of replicas) {
        // A follower whose consumer was on the killed server recreates it first; on a loaded 2-core machine (the
        // whole suite running) that took over 20 s once, while the test alone catches up in a few.
        await waitFor(`${r.name} caught up`, () => r.replica.appliedSequence() === leader.replica.appliedSequence(), 60_000);
        expect(users(r.store)).toEqual(expected);
      }
      // Once each: the log holds 30 applies (and the leaders' reservations), no more.
      const state = (await jsm.streams.info(subjects.logStream("faults-kill", 0))).state;
      expect(state.last_seq).toBe(leader.replica.appliedSequence());
      let applies = 0;
      for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
        const message = await jsm.streams.getMessage(subjects.logStream("faults-kill", 0), { seq });
        if (message !== null && decodeLogEntry(message.data).type === "apply") applies++;
      }
      expect(applies).toBe(30);
      expect(fatal).toEqual([]);
    } finally {
      await client.close();
      await Promise.all(replicas.map(stopReplica));
      if (killed !== undefined) await nats.restart(killed);
    }
  }, 120_000);

  it("a leader whose lease entry is taken stops serving; another replica leads", async () => {
    const replicas: TestReplica[] = [];
    for (const name of ["a", "b", "c"]) replicas.push(await startReplica(nats.urls, "faults-lease", name));
    const client = await connect({ servers: nats.urls });
    try {
      const old = await waitFor("a leader", () => leaderOf(replicas));
      await askLeader(client, "faults-lease", { type: "apply", batch: createUser(1n, "one") });
      const kv = await new Kvm(client).open(subjects.leaseBucket("faults-lease"));
      const entry = await kv.get(subjects.leaseKey(0));
      expect(entry?.json<{ replica: string }>().replica).toBe(old.name);
      // Someone else's entry replaces the leader's: its next renewal is refused.
      await kv.put(subjects.leaseKey(0), JSON.stringify({ replica: "intruder", term: 999 }));
      await waitFor("the old leader to step down", () => old.replica.role === "follower", LEASE_TTL_MS * 2);
      // The intruder's entry expires (nobody renews it); a replica takes over and serves.
      const next = await waitFor("a new leader", () => leaderOf(replicas), LEASE_TTL_MS * 6);
      await askLeader(client, "faults-lease", { type: "apply", batch: createUser(2n, "two") });
      for (const r of replicas) {
        await waitFor(`${r.name} caught up`, () => r.replica.appliedSequence() === next.replica.appliedSequence());
        expect(users(r.store)).toEqual(["1:one", "2:two"]);
      }
    } finally {
      await client.close();
      await Promise.all(replicas.map(stopReplica));
    }
  }, 40_000);
});
