/**
 * Snapshots against full replay (docs/CLUSTER.md, "Snapshots and log truncation"; docs/BENCHMARKS.md): how long a
 * partition's leader takes to snapshot its store, and how long a replica on an empty directory takes to be current,
 * replaying the whole log or bootstrapping from the snapshot plus the log's tail, in one run on the same data.
 *
 * `npx tsx bench/cluster-snapshots.ts [--servers 1|3] [--entries N] [--users-per-entry M] [--tail T]`: N log entries
 * (default 2,000) of M users each (default 50) written through the leader of a 3-replica partition (in-process
 * replicas, their own NATS connections and LMDB directories, without fsync as `silk partition` runs them); then
 *
 * 1. full replay: a fourth replica on an empty directory (no snapshot exists yet) until it applied the log's last entry;
 * 2. snapshot: the leader's `snapshotNow()` (the copy, then the pack and upload);
 * 3. T more entries (default 200), then bootstrap: the fourth replica's directory deleted, a start that downloads the
 *    snapshot, opens it and follows the tail, until it applied the log's last entry.
 *
 * Every replica's records are compared with the leader's at the end (exit status 1 if they differ).
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import pino from "pino";
import { LocalNatsCluster } from "../cluster/nats/servers.js";
import { PartitionReplica } from "../cluster/nats/replica.js";
import { bootstrapReplica, type BootstrapOutcome } from "../cluster/nats/snapshots.js";
import { decodeReply, encodeRequest } from "../cluster/nats/wire.js";
import { subjects } from "../cluster/nats/subjects.js";
import { PartitionStore } from "../node/store/partition-store.js";
import { encodeMutations } from "../protocol/mutation-codec.js";
import type { PartitionRequest } from "../protocol/messages.js";
import { formatMachine, machineInfo } from "./report.js";

const CLUSTER = "bench-snapshots";
const WRITERS = 16;
const logger = pino({ level: "silent" });
const progress = (message: string): void => void process.stderr.write(`${message}\n`);

interface Replica {
  readonly name: string;
  readonly path: string;
  readonly nc: NatsConnection;
  readonly store: PartitionStore;
  readonly replica: PartitionReplica;
  readonly bootstrap: BootstrapOutcome;
}

async function startReplica(urls: string[], replicas: number, name: string, path: string): Promise<Replica> {
  const nc = await connect({ servers: urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const bootstrap = await bootstrapReplica({ nc, cluster: CLUSTER, partition: 0, path, logger });
  const store = PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: 1n, idLast: 1n << 40n });
  const replica = await PartitionReplica.start({
    nc, cluster: CLUSTER, partition: 0, replica: name, replicas, store, schema: undefined, now: () => new Date(), logger, snapshots: "off",
    onFatal: (cause) => progress(`replica ${name} stopped: ${cause.message}`),
  });
  return { name, path, nc, store, replica, bootstrap };
}

async function stopReplica(r: Replica): Promise<void> {
  await r.replica.stop();
  await r.nc.close();
  await r.store.close();
}

async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 600_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Sends a request to the leader, again while no leader answers. */
async function askLeader(nc: NatsConnection, request: PartitionRequest): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      const reply = decodeReply((await nc.request(subjects.leader(CLUSTER, 0), encodeRequest(request), { timeout: 10_000 })).data);
      if (reply.ok) return;
      if (reply.code !== "not_leader" || attempt > 200) throw new Error(`${reply.code}: ${reply.message}`);
    } catch (cause) {
      if (attempt > 200 || (cause instanceof Error && /^[a-z_]+: /.test(cause.message))) throw cause;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function writeEntries(nc: NatsConnection, first: number, count: number, usersPerEntry: number): Promise<void> {
  let next = first;
  const end = first + count;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < end) {
        const entry = next++;
        const mutations = Array.from({ length: usersPerEntry }, (_, i) => {
          const id = BigInt(entry * usersPerEntry + i + 1);
          return { op: "put_record" as const, record: { kind: "node" as const, id, label: "User", props: { name: `user ${id}`, email: `user${id}@example.com`, age: Number(id % 90n), bio: "x".repeat(64) } } };
        });
        await askLeader(nc, { type: "apply", batch: encodeMutations(mutations) });
      }
    }),
  );
}

function userCount(store: PartitionStore): number {
  const snapshot = store.snapshot();
  try {
    return snapshot.countIds("node", "User") ?? 0;
  } finally {
    snapshot.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { servers: { type: "string", default: "3" }, entries: { type: "string", default: "2000" }, "users-per-entry": { type: "string", default: "50" }, tail: { type: "string", default: "200" } } });
  const servers = Number(values.servers);
  const entries = Number(values.entries);
  const usersPerEntry = Number(values["users-per-entry"]);
  const tail = Number(values.tail);
  if (![1, 3].includes(servers) || ![entries, usersPerEntry, tail].every((n) => Number.isInteger(n) && n > 0)) throw new Error("--servers 1|3, --entries, --users-per-entry and --tail positive integers");
  const root = mkdtempSync(join(tmpdir(), "silk-bench-snapshots-"));
  const nats = await LocalNatsCluster.start(join(root, "nats"), { servers });
  const started: Replica[] = [];
  let failed = false;
  try {
    const replicas = Math.min(3, servers);
    for (const name of ["r0", "r1", "r2"]) started.push(await startReplica(nats.urls, replicas, name, join(root, name)));
    const leader = await waitFor("a leader", () => started.find((r) => r.replica.role === "leader"));
    progress(`writing ${entries} entries of ${usersPerEntry} users...`);
    const writeStart = performance.now();
    await writeEntries(leader.nc, 0, entries, usersPerEntry);
    const writeMs = performance.now() - writeStart;
    const last = leader.replica.appliedSequence();

    progress("full replay...");
    const replayStart = performance.now();
    const replayed = await startReplica(nats.urls, replicas, "r3", join(root, "r3"));
    started.push(replayed);
    await waitFor("the full replay", () => replayed.replica.appliedSequence() >= last);
    const replayMs = performance.now() - replayStart;
    if (replayed.bootstrap.kind !== "kept") throw new Error("the full replay found a snapshot");

    progress("snapshot...");
    const snapshotStart = performance.now();
    const taken = await leader.replica.snapshotNow();
    const snapshotMs = performance.now() - snapshotStart;
    if (taken === undefined) throw new Error("no snapshot was taken");
    await writeEntries(leader.nc, entries, tail, usersPerEntry);
    const lastAfterTail = leader.replica.appliedSequence();

    progress("bootstrap...");
    await stopReplica(replayed);
    started.splice(started.indexOf(replayed), 1);
    rmSync(replayed.path, { recursive: true, force: true });
    const bootstrapStart = performance.now();
    const reborn = await startReplica(nats.urls, replicas, "r3", replayed.path);
    started.push(reborn);
    const openedMs = performance.now() - bootstrapStart;
    await waitFor("the bootstrap", () => reborn.replica.appliedSequence() >= lastAfterTail);
    const bootstrapMs = performance.now() - bootstrapStart;
    if (reborn.bootstrap.kind !== "restored") throw new Error("the bootstrap found no snapshot");

    const expected = userCount(leader.store);
    for (const r of started) {
      await waitFor(`${r.name} current`, () => r.replica.appliedSequence() >= lastAfterTail);
      if (userCount(r.store) !== expected) {
        failed = true;
        progress(`replica ${r.name} holds ${userCount(r.store)} users, the leader ${expected}`);
      }
    }
    const storeBytes = statSync(join(leader.path, "data.mdb")).size;
    const fmt = (ms: number): string => ms.toFixed(0);
    process.stdout.write(
      [
        `Snapshots against full replay (bench/cluster-snapshots.ts), ${servers} NATS server(s), 3 replicas + 1 joining`,
        formatMachine(machineInfo("source")),
        "",
        `log: ${last} entries of ${usersPerEntry} users (${entries * usersPerEntry} users) written in ${fmt(writeMs)} ms; leader's data.mdb ${storeBytes} bytes`,
        "",
        "| step | ms | notes |",
        "|---|---|---|",
        `| snapshot (leader) | ${fmt(snapshotMs)} | copy ${fmt(taken.copyMs)} ms, pack + upload ${fmt(taken.uploadMs)} ms, ${taken.bytes} bytes (compacted), ${taken.purged} log entries purged |`,
        `| full replay of ${last} entries (empty directory, no snapshot) | ${fmt(replayMs)} | |`,
        `| bootstrap: snapshot + ${lastAfterTail - taken.sequence} entries of tail | ${fmt(bootstrapMs)} | download + checks ${fmt(reborn.bootstrap.kind === "restored" ? reborn.bootstrap.downloadMs : 0)} ms, started (store open) after ${fmt(openedMs)} ms |`,
        `| full replay ÷ bootstrap | ${(replayMs / bootstrapMs).toFixed(1)}× | |`,
        "",
      ].join("\n"),
    );
  } finally {
    await Promise.allSettled(started.map(stopReplica));
    await nats.stop();
    rmSync(root, { recursive: true, force: true });
  }
  if (failed) process.exitCode = 1;
}

await main();
