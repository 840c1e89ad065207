/**
 * A lease's term counts acquisitions across crashes (issue 16: "a leader elected after a crash still shows term 1").
 * The lease bucket's entries expire, so a replica that takes the lease after its holder crashed found no entry and
 * started again at 1; the terms bucket keeps the last term. Real nats-server, real KV, short TTLs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { PartitionLease } from "../../cluster/nats/lease.js";
import { startTestNats, stopTestNats, type TestNats } from "../helpers/cluster.js";

const logger = pino({ level: "silent" });
const TTL_MS = 600;
let nats: TestNats;
let nc: NatsConnection;

beforeAll(async () => {
  nats = await startTestNats(1);
  nc = await connect({ servers: nats.urls });
}, 30_000);

afterAll(async () => {
  await nc?.close();
  if (nats !== undefined) await stopTestNats(nats);
});

function lease(cluster: string, replica: string): Promise<PartitionLease> {
  return PartitionLease.open({ nc, cluster, partition: 0, replica, replicas: 1, ttlMs: TTL_MS, logger, onLost: () => undefined });
}

/** Tries to acquire until it succeeds (the previous holder's entry must expire first). */
async function acquire(candidate: PartitionLease): Promise<void> {
  const deadline = Date.now() + 10 * TTL_MS;
  while (!(await candidate.tryAcquire())) {
    if (Date.now() > deadline) throw new Error("the lease was never acquired");
    await sleep(TTL_MS / 10);
  }
}

describe("lease terms", () => {
  it("counts on after a holder crashed and its entry expired, after a release, and in a new process", async () => {
    const cluster = `terms-${Date.now().toString(36)}`;
    const r0 = await lease(cluster, "r0");
    const r1 = await lease(cluster, "r1");
    await acquire(r0);
    expect(r0.currentTerm).toBe(1);
    expect(await r1.holder()).toEqual({ replica: "r0", term: 1 });

    // r0 crashes: it stops renewing, and its entry expires before r1 can take the lease.
    r0.forget();
    expect(await r1.tryAcquire()).toBe(false);
    await acquire(r1);
    expect(r1.currentTerm).toBe(2);
    expect(await r0.holder()).toEqual({ replica: "r1", term: 2 });

    // A release deletes the entry: the next holder still counts on.
    await r1.release();
    const r2 = await lease(cluster, "r2");
    await acquire(r2);
    expect(r2.currentTerm).toBe(3);

    // A replica process that starts afresh (term 0 in memory) after r2 crashed.
    r2.forget();
    const restarted = await lease(cluster, "r0");
    await acquire(restarted);
    expect(restarted.currentTerm).toBe(4);
    await restarted.release();
  }, 30_000);
});
