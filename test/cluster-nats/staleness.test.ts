/**
 * Bounded staleness for follower reads (cluster/nats/replica.ts, cluster/nats/transport.ts) on a real nats-server with
 * in-process replicas: a follower held from following (the `holdFollowing` test hook) answers stale reads while
 * within the request's bound and refuses them (not_leader) after it; the transport then gets the leader's current
 * answer; a leader always answers; an idle follower proves itself current on demand for a tight bound; readYourWrites
 * sends reads after the transport's own write to the leader; bad bounds are refused with stable codes.
 *
 * The stale subject is a queue group (NATS picks the leader or the follower at random), so the cases ask many times
 * at once and check every answer is one the rules allow, and that the follower's kind of answer occurred.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { NatsTransport, staleReadsOption } from "../../cluster/nats/transport.js";
import { DEFAULT_MAX_STALENESS_MS, decodeReply, decodeRequest, encodeRequest } from "../../cluster/nats/wire.js";
import { connectCluster } from "../../runtime/remote.js";
import { subjects } from "../../cluster/nats/subjects.js";
import type { PartitionReply, PartitionReplyBody, PartitionRequest } from "../../protocol/messages.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";
import { askLeader, createUser, leaderOf, startReplica, stopReplica, users, waitFor, type TestReplica } from "./replica-helpers.js";

let nats: LocalNatsCluster;
let client: NatsConnection;

beforeAll(async () => {
  nats = await LocalNatsCluster.start(tempDir("silk-stale-nats-"), { servers: 1 });
  client = await connect({ servers: nats.urls });
}, 30_000);

afterAll(async () => {
  await client?.close();
  await nats?.stop();
  removeTempDirs();
});

const readUsers: PartitionRequest = { type: "read_records", kind: "node", ids: [1n, 2n] };

/** The names of the User records a read_records reply holds. */
function names(body: PartitionReplyBody): string[] {
  if (body.type !== "records") throw new Error(`not records: ${body.type}`);
  return body.records.flatMap((record) => (record === undefined || record === null ? [] : [String(record.props.name)]));
}

/** `count` raw stale reads at once, with the bound in the envelope. */
async function staleAsks(cluster: string, maxStalenessMs: number | undefined, count = 32): Promise<PartitionReply[]> {
  const subject = subjects.stale(cluster, 0);
  return Promise.all(Array.from({ length: count }, () => client.request(subject, encodeRequest(readUsers, undefined, maxStalenessMs), { timeout: 5_000 }).then((m) => decodeReply(m.data))));
}

/** A leader and a caught-up follower of partition 0, the leader holding u1. */
async function twoReplicas(cluster: string): Promise<{ replicas: TestReplica[]; leader: TestReplica; follower: TestReplica }> {
  const replicas = await Promise.all(["a", "b"].map((name) => startReplica(nats.urls, cluster, name)));
  const leader = await waitFor("a leader", () => leaderOf(replicas));
  const follower = replicas.find((r) => r !== leader)!;
  await askLeader(client, cluster, { type: "apply", batch: createUser(1n, "u1") });
  await waitFor("the follower caught up", () => follower.replica.appliedSequence() === leader.replica.appliedSequence());
  return { replicas, leader, follower };
}

describe("bounded staleness", () => {
  it("a held follower answers within the bound and refuses after it; the transport then gets the leader's answer; a leader always answers", async () => {
    const cluster = "stale-bound";
    const { replicas, leader, follower } = await twoReplicas(cluster);
    try {
      const BOUND = 3_000;
      await follower.replica.holdFollowing();
      await askLeader(client, cluster, { type: "apply", batch: createUser(2n, "u2") });
      expect(users(follower.store)).toEqual(["1:u1"]);
      expect(follower.replica.stalenessMs()).toBeLessThan(BOUND);

      // Within the bound: every answer is ok; the follower's (without u2) and the leader's (with u2) both occur.
      const within = await staleAsks(cluster, BOUND);
      const seen = new Set(within.map((reply) => (reply.ok ? names(reply.body).join(",") : reply.code)));
      expect(seen).toEqual(new Set(["u1", "u1,u2"]));

      // The transport with the same bound reads either state meanwhile, never anything else.
      const transport = new NatsTransport({ nc: client, cluster, staleReads: { maxStalenessMs: BOUND } });
      expect(["u1", "u1,u2"]).toContain(names(await transport.request(0, readUsers)).join(","));

      // Beyond the bound: the follower refuses (not_leader), the leader (staleness 0) answers its current state.
      await waitFor("the held follower beyond the bound", () => follower.replica.stalenessMs() > BOUND, BOUND * 3);
      expect(leader.replica.stalenessMs()).toBe(0);
      const beyond = await staleAsks(cluster, BOUND);
      for (const reply of beyond) {
        if (reply.ok) expect(names(reply.body)).toEqual(["u1", "u2"]);
        else expect(reply).toMatchObject({ code: "not_leader", message: expect.stringContaining(`bound of ${BOUND} ms`) });
      }
      expect(beyond.some((reply) => !reply.ok)).toBe(true);
      expect(beyond.some((reply) => reply.ok)).toBe(true);
      // A read asked of the leader (a read inside a write invocation) is current whatever the bound.
      const loose60 = new NatsTransport({ nc: client, cluster, staleReads: { maxStalenessMs: 60_000 } });
      for (let i = 0; i < 8; i++) expect(names(await loose60.request(0, readUsers, { leader: true }))).toEqual(["u1", "u2"]);
      // ... and every transport read is the current one (refused reads go on to the leader subject at once).
      for (let i = 0; i < 8; i++) expect(names(await transport.request(0, readUsers))).toEqual(["u1", "u2"]);
      // A looser bound is still met by the held follower.
      const loose = await staleAsks(cluster, 60_000);
      expect(loose.every((reply) => reply.ok)).toBe(true);
      expect(new Set(loose.map((reply) => (reply.ok ? names(reply.body).join(",") : "")))).toEqual(new Set(["u1", "u1,u2"]));

      // Following again, the follower catches up and answers the current state within the bound.
      await follower.replica.resumeFollowing();
      await waitFor("the follower caught up", () => follower.replica.appliedSequence() === leader.replica.appliedSequence());
      await waitFor("the follower current", () => follower.replica.stalenessMs() < BOUND);
      for (const reply of await staleAsks(cluster, BOUND)) expect(reply.ok && names(reply.body)).toEqual(["u1", "u2"]);
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
  }, 40_000);

  it("an idle follower proves itself current on demand for a tight bound; a request without a bound gets the default", async () => {
    const cluster = "stale-idle";
    const { replicas, leader, follower } = await twoReplicas(cluster);
    try {
      await askLeader(client, cluster, { type: "apply", batch: createUser(2n, "u2") });
      await waitFor("the follower caught up", () => follower.replica.appliedSequence() === leader.replica.appliedSequence());
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(follower.replica.stalenessMs()).toBeGreaterThan(20);
      // 20 ms: more than the follower's last mark, so it asks the log's last sequence and finds it applied.
      for (const reply of await staleAsks(cluster, 20)) expect(reply.ok && names(reply.body)).toEqual(["u1", "u2"]);
      const defaulted = await staleAsks(cluster, undefined, 8);
      for (const reply of defaulted) expect(reply.ok && names(reply.body)).toEqual(["u1", "u2"]);
      expect(DEFAULT_MAX_STALENESS_MS).toBe(5_000);
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
  }, 30_000);

  it("readYourWrites: after the transport's own write, its reads of that partition go to the leader", async () => {
    const cluster = "stale-ryw";
    const { replicas, follower } = await twoReplicas(cluster);
    try {
      await follower.replica.holdFollowing();
      const transport = new NatsTransport({ nc: client, cluster, staleReads: { maxStalenessMs: 60_000, readYourWrites: true } });
      expect(await transport.request(0, { type: "apply", batch: createUser(2n, "u2") })).toEqual({ type: "done" });
      for (let i = 0; i < 12; i++) expect(names(await transport.request(0, readUsers))).toEqual(["u1", "u2"]);
      expect(users(follower.store)).toEqual(["1:u1"]); // the held follower never saw it: the leader answered
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
  }, 30_000);

  it("refuses bad bounds with invalid_option, in options and on the wire, and leaves the data intact", async () => {
    for (const bad of [0, -1, 1.5, 3_600_001, Number.NaN, "5000", null]) {
      expect(() => staleReadsOption({ maxStalenessMs: bad as never })).toThrow(/maxStalenessMs must be a positive integer/);
      expect(() => new NatsTransport({ nc: client, cluster: "x", staleReads: { maxStalenessMs: bad as never } })).toThrow(/maxStalenessMs/);
    }
    expect(() => staleReadsOption({ maxStalenessMs: 10, readYourWrites: "yes" as never })).toThrow(/readYourWrites/);
    expect(() => staleReadsOption(7 as never)).toThrow(/staleReads is false, true or/);
    expect(staleReadsOption(true)).toEqual({ maxStalenessMs: 5_000, readYourWrites: false });
    expect(staleReadsOption(false)).toBeUndefined();
    expect(staleReadsOption({ maxStalenessMs: 3_600_000 })).toEqual({ maxStalenessMs: 3_600_000, readYourWrites: false });
    await expectCode(connectCluster({ cluster: "x", servers: ["nats://127.0.0.1:1"], partitions: 1, staleReads: { maxStalenessMs: 0 } }), "invalid_option");
    // The envelope carries the bound; a bad one is refused by the decoder and by a replica with a stable code.
    expect(decodeRequest(encodeRequest(readUsers, "r", 250))).toEqual({ requestId: "r", maxStalenessMs: 250, request: readUsers });
    expect(() => decodeRequest(encodeRequest(readUsers, "r", 0))).toThrow(/maxStalenessMs/);
    const cluster = "stale-bad";
    const { replicas } = await twoReplicas(cluster);
    try {
      for (const reply of await staleAsks(cluster, -5, 6)) expect(reply).toMatchObject({ ok: false, code: "invalid_option" });
      for (const r of replicas) expect(users(r.store)).toEqual(["1:u1"]);
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
  }, 30_000);
});
