/**
 * Test helpers for partition replicas on a real local NATS cluster: replicas with their own LMDB directories and
 * NATS connections, a tiny client speaking the cluster/nats/wire.ts envelope (retrying what the transport retries),
 * and each replica's records read straight from its store.
 */
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import pino from "pino";
import { PartitionReplica, type ReplicaOptions } from "../../cluster/nats/replica.js";
import { bootstrapReplica, type BootstrapOutcome } from "../../cluster/nats/snapshots.js";
import { decodeReply, encodeRequest } from "../../cluster/nats/wire.js";
import { subjects } from "../../cluster/nats/subjects.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { PartitionReply, PartitionRequest } from "../../protocol/messages.js";
import { tempDir } from "../helpers/engine.js";

export const LEASE_TTL_MS = 1_500;
export const logger = pino({ level: process.env.SILK_LOG_LEVEL ?? "silent" });

export interface TestReplica {
  readonly name: string;
  readonly path: string;
  nc: NatsConnection;
  store: PartitionStore;
  replica: PartitionReplica;
  /** What the start's bootstrap did with the directory (cluster/nats/snapshots.ts). */
  bootstrap: BootstrapOutcome;
}

export function openStore(path: string, noSync = false): PartitionStore {
  return PartitionStore.open({ path, readOnly: false, noSync, idFirst: 1n, idLast: 1n << 40n });
}

/**
 * What a test may set beyond the defaults: the snapshot policy, the intent timeout and the clock of ReplicaOptions,
 * and whether the store commits without fsync (as `silk partition` does: the log is what survives a crash).
 */
export type ReplicaExtras = Partial<Pick<ReplicaOptions, "snapshots" | "intentTimeoutMs" | "clock">> & { readonly noSync?: boolean };

export async function startReplica(urls: string[], cluster: string, name: string, path = tempDir("silk-replica-"), fatal: Error[] = [], extras: ReplicaExtras = {}): Promise<TestReplica> {
  const nc = await connect({ servers: urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  // As `silk partition` does: a directory without a store, or with one the log no longer reaches, gets a snapshot.
  const bootstrap = await bootstrapReplica({ nc, cluster, partition: 0, path, logger });
  const { noSync, ...options } = extras;
  const store = openStore(path, noSync);
  const replica = await PartitionReplica.start({
    nc, cluster, partition: 0, replica: name, replicas: urls.length, store, schema: undefined, now: () => new Date(), leaseTtlMs: LEASE_TTL_MS, logger,
    onFatal: (cause) => fatal.push(cause),
    ...options,
  });
  return { name, path, nc, store, replica, bootstrap };
}

/** Stops the replica, then closes its connection and store. */
export async function stopReplica(r: TestReplica): Promise<void> {
  await r.replica.stop();
  await r.nc.close();
  await r.store.close();
}

export async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export const leaderOf = (replicas: readonly TestReplica[]): TestReplica | undefined => {
  const leaders = replicas.filter((r) => r.replica.role === "leader");
  if (leaders.length > 1) throw new Error(`two leaders: ${leaders.map((r) => r.name).join(", ")}`);
  return leaders[0];
};

/** One raw request of the envelope (no retry). */
export async function ask(nc: NatsConnection, subject: string, request: PartitionRequest, requestId?: string, timeoutMs = 3_000): Promise<PartitionReply> {
  const reply = await nc.request(subject, encodeRequest(request, requestId), { timeout: timeoutMs });
  return decodeReply(reply.data);
}

/**
 * Sends a request to the partition's leader the way the transport does: retries (with a fixed requestId) while no
 * leader answers or the answer is not_leader / partition_unavailable, until `timeoutMs`.
 */
export async function askLeader(nc: NatsConnection, cluster: string, request: PartitionRequest, requestId = randomUUID(), timeoutMs = 30_000): Promise<PartitionReply & { ok: true }> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const reply = await ask(nc, subjects.leader(cluster, 0), request, requestId, 3_000);
      if (reply.ok) return reply;
      if (reply.code !== "not_leader" && reply.code !== "partition_unavailable") throw new Error(`${reply.code}: ${reply.message}`);
      last = reply.code;
    } catch (cause) {
      if (cause instanceof Error && /^[a-z_]+: /.test(cause.message)) throw cause;
      last = String(cause);
    }
    await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
  }
  throw new Error(`no leader answered in time (last: ${last})`);
}

/** An encoded mutation list creating one User node. */
export function createUser(id: bigint, name: string): Uint8Array {
  return encodeMutations([{ op: "put_record", record: { kind: "node", id, label: "User", props: { name } } }]);
}

/** The User nodes of a replica's store, as `id:name`, sorted. */
export function users(store: PartitionStore): string[] {
  const snapshot = store.snapshot();
  try {
    return snapshot
      .idsOfLabel("node", "User")
      .map((id) => `${id}:${String(snapshot.record("node", id)?.props.name)}`)
      .sort();
  } finally {
    snapshot.close();
  }
}
