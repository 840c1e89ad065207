/**
 * Snapshots and log truncation (cluster/nats/snapshots.ts) on real NATS servers: under many writes the leader
 * snapshots its store into the cluster's object store and purges its log, which stays under the policy's bound; a
 * replica whose directory is deleted bootstraps from the latest snapshot plus the log's tail and holds the same
 * records (and a prepared intent the snapshot caught, which the log's tail then commits); a follower that the
 * truncation left behind stops with `log_truncated` and, started again on its directory, replaces its store.
 *
 * `SILK_SNAPSHOT_WRITES` (default 4,000) writes, a snapshot every `SILK_SNAPSHOT_EVERY` (default 1,000) entries, on
 * `SILK_SNAPSHOT_NATS_SERVERS` (default 1) NATS servers; `make test-snapshots-100k` runs 100,000 writes, a snapshot
 * every 10,000 entries.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { subjects } from "../../cluster/nats/subjects.js";
import { ObjectBucket } from "../../cluster/nats/object-store.js";
import { PartitionSnapshots, checkSnapshotPolicy, type SnapshotPolicy } from "../../cluster/nats/snapshots.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import { realClock, type Clock } from "../../platform/clock.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import { askLeader, createUser, leaderOf, startReplica, stopReplica, users, waitFor, type ReplicaExtras, type TestReplica } from "./replica-helpers.js";

const WRITES = Number(process.env.SILK_SNAPSHOT_WRITES ?? 4_000);
const EVERY = Number(process.env.SILK_SNAPSHOT_EVERY ?? 1_000);
const SERVERS = Number(process.env.SILK_SNAPSHOT_NATS_SERVERS ?? 1);
/** Writes in flight at once (each one request to the leader). */
const WRITERS = 16;
const POLICY: SnapshotPolicy = { everyEntries: EVERY, everyBytes: 1 << 30, keep: 2 };
/**
 * What the log may hold: the entries since the oldest snapshot kept (keep × everyEntries), plus what is written while
 * a snapshot is due but not yet taken and purged (at most one more interval here).
 */
const BOUND = (POLICY.keep + 1) * POLICY.everyEntries;
const EXTRAS: ReplicaExtras = { snapshots: POLICY, intentTimeoutMs: 600_000, noSync: true };

let nats: LocalNatsCluster;

beforeAll(async () => {
  nats = await LocalNatsCluster.start(tempDir("silk-nats-"), { servers: SERVERS });
}, 30_000);

afterAll(async () => {
  await nats?.stop();
  removeTempDirs();
});

/** Writes users `from`..`to` through the leader, WRITERS at a time; calls `sample` after every write. */
async function writeUsers(client: TestReplica, cluster: string, from: number, to: number, sample: () => void): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next <= to) {
        const id = next++;
        await askLeader(client.nc, cluster, { type: "apply", batch: createUser(BigInt(id), `u${id}`) });
        sample();
      }
    }),
  );
}

describe("snapshots and log truncation", () => {
  it(`keeps the log under ${BOUND} entries through ${WRITES} writes; a wiped replica bootstraps and holds the same records`, async () => {
    const cluster = "snap-bound";
    const fatal: Error[] = [];
    const replicas: TestReplica[] = [];
    for (const name of ["a", "b", "c"]) replicas.push(await startReplica(nats.urls, cluster, name, undefined, fatal, EXTRAS));
    const jsm = await jetstreamManager(replicas[0]!.nc);
    const stream = subjects.logStream(cluster, 0);
    try {
      await waitFor("a leader", () => leaderOf(replicas));
      let most = 0;
      let sampling: Promise<void> | undefined;
      const sample = (): void => {
        sampling ??= jsm.streams.info(stream).then(
          (info) => {
            most = Math.max(most, info.state.messages);
            sampling = undefined;
          },
          () => (sampling = undefined),
        );
      };
      await writeUsers(replicas[0]!, cluster, 1, WRITES, sample).catch((cause: unknown) => {
        throw new Error(`${String(cause)}; replicas stopped: ${fatal.map(String).join("; ") || "none"}`);
      });
      await sampling;
      const leader = await waitFor("a leader", () => leaderOf(replicas));
      const snapshots = await PartitionSnapshots.open({ nc: leader.nc, cluster, partition: 0, replicas: SERVERS });
      const kept = await snapshots.list();
      const info = (await jsm.streams.info(stream)).state;
      process.stdout.write(
        `snapshots: ${WRITES} writes, log last ${info.last_seq}, first ${info.first_seq}, ${info.messages} entries now, at most ${most} sampled (bound ${BOUND}); ` +
          `snapshots kept ${kept.map((s) => `${s.sequence} (${s.bytes} B)`).join(", ")}\n`,
      );
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(BOUND);
      expect(info.messages).toBeLessThanOrEqual(BOUND);
      expect(info.first_seq).toBeGreaterThan(1);
      expect(kept.length).toBeGreaterThan(0);
      expect(kept.length).toBeLessThanOrEqual(POLICY.keep);
      // The log holds every entry after the newest snapshot.
      expect(info.first_seq).toBeLessThanOrEqual(kept.at(-1)!.sequence + 1);

      // Wipe a follower's directory; it starts again from the latest snapshot and the log's tail.
      const follower = replicas.find((r) => r !== leader)!;
      await stopReplica(follower);
      rmSync(follower.path, { recursive: true, force: true });
      await askLeader(leader.nc, cluster, { type: "apply", batch: createUser(BigInt(WRITES + 1), "after") });
      const reborn = await startReplica(nats.urls, cluster, follower.name, follower.path, fatal, EXTRAS);
      replicas[replicas.indexOf(follower)] = reborn;
      expect(reborn.bootstrap.kind).toBe("restored");
      if (reborn.bootstrap.kind === "restored") expect(reborn.bootstrap.sequence).toBeGreaterThanOrEqual(kept.at(-1)!.sequence);
      await waitFor("the reborn replica caught up", () => reborn.replica.appliedSequence() === leader.replica.appliedSequence(), 60_000);
      const expected = users(leader.store);
      expect(expected).toHaveLength(WRITES + 1);
      expect(users(reborn.store)).toEqual(expected);
      expect(fatal).toEqual([]);
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
  }, 1_800_000);

  it("a prepared intent caught by a snapshot survives a bootstrap, and the log's tail commits it", async () => {
    const cluster = "snap-intent";
    const fatal: Error[] = [];
    const replicas: TestReplica[] = [];
    const extras: ReplicaExtras = { snapshots: "off", intentTimeoutMs: 600_000 };
    for (const name of ["a", "b"]) replicas.push(await startReplica(nats.urls, cluster, name, undefined, fatal, extras));
    try {
      const leader = await waitFor("a leader", () => leaderOf(replicas));
      await askLeader(leader.nc, cluster, { type: "apply", batch: createUser(1n, "one") });
      const batch = encodeMutations([{ op: "put_record", record: { kind: "node", id: 2n, label: "User", props: { name: "prepared" } } }]);
      await askLeader(leader.nc, cluster, { type: "prepare", txid: "tx-snapshot", batch });
      const taken = await leader.replica.snapshotNow();
      expect(taken?.sequence).toBe(leader.replica.appliedSequence());
      expect(await leader.replica.snapshotNow()).toBeUndefined(); // nothing applied since: no second snapshot
      const follower = replicas.find((r) => r !== leader)!;
      await stopReplica(follower);
      rmSync(follower.path, { recursive: true, force: true });
      const reborn = await startReplica(nats.urls, cluster, follower.name, follower.path, fatal, extras);
      replicas[replicas.indexOf(follower)] = reborn;
      expect(reborn.bootstrap).toMatchObject({ kind: "restored", sequence: taken!.sequence, replaced: false });
      expect(reborn.store.pendingIntents()).toEqual(["tx-snapshot"]);
      expect(users(reborn.store)).toEqual(["1:one"]);
      await askLeader(leader.nc, cluster, { type: "commit", txid: "tx-snapshot" });
      await waitFor("the commit on the reborn replica", () => reborn.replica.appliedSequence() === leader.replica.appliedSequence());
      expect(reborn.store.pendingIntents()).toEqual([]);
      expect(users(reborn.store)).toEqual(["1:one", "2:prepared"]);
      expect(fatal).toEqual([]);
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
  }, 120_000);

  it("a follower the truncation left behind stops with log_truncated; started again, it replaces its store", async () => {
    const cluster = "snap-behind";
    const fatal: Error[] = [];
    const replicas: TestReplica[] = [];
    const extras: ReplicaExtras = { snapshots: { everyEntries: 1_000_000, everyBytes: 1 << 30, keep: 1 } };
    for (const name of ["a", "b"]) replicas.push(await startReplica(nats.urls, cluster, name, undefined, fatal, extras));
    try {
      const leader = await waitFor("a leader", () => leaderOf(replicas));
      await askLeader(leader.nc, cluster, { type: "apply", batch: createUser(1n, "one") });
      const behind = replicas.find((r) => r !== leader)!;
      await waitFor("the follower applied the first write", () => behind.replica.appliedSequence() === leader.replica.appliedSequence());
      await behind.replica.holdFollowing();
      const applied = behind.replica.appliedSequence();
      for (let id = 2n; id <= 5n; id++) await askLeader(leader.nc, cluster, { type: "apply", batch: createUser(id, `u${id}`) });
      const taken = await leader.replica.snapshotNow();
      expect(taken?.purged).toBeGreaterThan(0);
      await askLeader(leader.nc, cluster, { type: "apply", batch: createUser(6n, "u6") });
      await behind.replica.resumeFollowing();
      await waitFor("the follower stopped", () => fatal.length > 0);
      expect(fatal[0]).toMatchObject({ code: "log_truncated" });
      expect(behind.replica.appliedSequence()).toBe(applied);
      await stopReplica(behind);
      const restarted = await startReplica(nats.urls, cluster, behind.name, behind.path, [], extras);
      replicas[replicas.indexOf(behind)] = restarted;
      expect(restarted.bootstrap).toMatchObject({ kind: "restored", sequence: taken!.sequence, replaced: true });
      await waitFor("the restarted follower caught up", () => restarted.replica.appliedSequence() === leader.replica.appliedSequence());
      expect(users(restarted.store)).toEqual(users(leader.store));
      expect(users(restarted.store)).toHaveLength(6);
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
  }, 120_000);

  it("snapshotNow while the leader's periodic check runs takes a snapshot, not the check's answer", async () => {
    // The real clock, but the leader's periodic snapshot check (every 100 ms) fires only when the test says so.
    const checks: (() => void)[] = [];
    const clock: Clock = { ...realClock, every: (ms, fn) => (ms === 100 ? (checks.push(fn), () => undefined) : realClock.every(ms, fn)) };
    const cluster = "snap-now-during-check";
    const replicas: TestReplica[] = [await startReplica(nats.urls, cluster, "a", undefined, [], { snapshots: { everyEntries: 1_000_000, everyBytes: 1 << 30, keep: 2 }, clock })];
    try {
      const leader = await waitFor("a leader", () => leaderOf(replicas));
      await askLeader(leader.nc, cluster, { type: "apply", batch: createUser(1n, "one") });
      const tick = await waitFor("the leader's snapshot check", () => checks.at(-1));
      // The first check reads the latest snapshot and the stream's size over NATS, and takes none (nothing is due):
      // it is under way while snapshotNow is called.
      tick();
      const taken = await leader.replica.snapshotNow();
      expect(taken?.sequence).toBe(leader.replica.appliedSequence());
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
  }, 60_000);

  it("refuses a snapshot that does not match its digest or whose chunks are gone, and policies out of range", async () => {
    const cluster = "snap-corrupt";
    const replicas: TestReplica[] = [await startReplica(nats.urls, cluster, "a", undefined, [], { snapshots: "off" })];
    try {
      const leader = await waitFor("a leader", () => leaderOf(replicas));
      await askLeader(leader.nc, cluster, { type: "apply", batch: createUser(1n, "one") });
      const taken = (await leader.replica.snapshotNow())!;
      // Replace one chunk's bytes under the same info: the digest no longer matches.
      const bucket = (await ObjectBucket.bind(leader.nc, subjects.snapshotBucket(cluster)))!;
      const info = (await bucket.info(taken.name))!;
      const jsm = await jetstreamManager(leader.nc);
      await jsm.streams.purge(bucket.stream, { filter: `$O.${bucket.bucket}.C.${info.nuid}` });
      await jetstream(leader.nc).publish(`$O.${bucket.bucket}.C.${info.nuid}`, new Uint8Array(info.size));
      await expect(bucket.read(taken.name, async () => undefined)).rejects.toMatchObject({ code: "snapshot_invalid", message: expect.stringMatching(/digests do not match/) });
      // Chunks purged under the info (an object replaced or deleted while it is read): the read ends short.
      await jsm.streams.purge(bucket.stream, { filter: `$O.${bucket.bucket}.C.${info.nuid}` });
      await expect(bucket.read(taken.name, async () => undefined)).rejects.toMatchObject({ code: "snapshot_invalid", message: expect.stringMatching(/0 of [0-9]+ bytes, then no chunk/) });
    } finally {
      await Promise.all(replicas.map(stopReplica));
    }
    expect(() => checkSnapshotPolicy({ everyEntries: 0 }, "cluster.json")).toThrow(/everyEntries must be a positive integer/);
    expect(() => checkSnapshotPolicy({ keep: 17 }, "cluster.json")).toThrow(/keep must be an integer from 1 to 16/);
    expect(() => checkSnapshotPolicy({ every: 5 }, "cluster.json")).toThrow(/no option "every"/);
    expect(checkSnapshotPolicy({ everyEntries: 10 }, "cluster.json")).toEqual({ everyEntries: 10, everyBytes: 256 * 1024 * 1024, keep: 2 });
  }, 60_000);
});
