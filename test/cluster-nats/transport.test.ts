/**
 * The NATS transport (cluster/nats/transport.ts) against a real nats-server, with a tiny responder in the test: a
 * PartitionActor over a local PartitionStore (no log) subscribed on the partition's leader subject, whose behaviour
 * per message the test scripts (serve, stay silent, answer not_leader). Checks the retry rules: no responders and
 * not_leader are retried with the same request id, a write execute is never repeated after a timeout, safe
 * requests are, and the deadline ends in partition_unavailable.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { LEADER_PROBE_INTERVAL_MS, NatsTransport } from "../../cluster/nats/transport.js";
import { decodeRequest, encodeReply } from "../../cluster/nats/wire.js";
import { subjects } from "../../cluster/nats/subjects.js";
import { PartitionActor } from "../../node/actor/partition-actor.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import type { PartitionReply, PartitionRequest } from "../../protocol/messages.js";
import { decodeRequest as decodePlan, type Plan } from "../../protocol/tree.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";
import { addN, allNodes, count, readOne, writeOne } from "../helpers/tree.js";

const CLUSTER = "transport-test";
let nats: LocalNatsCluster;
let nc: NatsConnection;

beforeAll(async () => {
  nats = await LocalNatsCluster.start(tempDir("silk-transport-nats-"), { servers: 1 });
  nc = await connect({ servers: nats.urls });
}, 30_000);

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
  removeTempDirs();
});

type Behaviour = "serve" | "silent" | "not_leader";

/** A partition on subjects.leader(CLUSTER, partition): what it saw, and a script of behaviours (then "serve"). */
class Responder {
  readonly seen: { requestId: string | undefined; type: PartitionRequest["type"] }[] = [];
  private readonly store: PartitionStore;
  private readonly actor: PartitionActor;
  private subscription: Subscription | undefined;

  constructor(readonly script: Behaviour[] = [], partition = 0, subject = subjects.leader(CLUSTER, partition)) {
    this.store = PartitionStore.open({ path: tempDir("silk-transport-store-"), readOnly: false, noSync: true, idFirst: 0n, idLast: 2n ** 64n - 1n });
    this.actor = new PartitionActor({ store: this.store, schema: undefined, writable: true, now: () => new Date() });
    this.subscription = nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error !== null) return;
        const { requestId, request } = decodeRequest(msg.data);
        this.seen.push({ requestId, type: request.type });
        const behaviour = this.script.shift() ?? "serve";
        if (behaviour === "silent") return;
        if (behaviour === "not_leader") {
          const reply: PartitionReply = { ok: false, code: "not_leader", message: "the lease moved" };
          msg.respond(encodeReply(reply));
          return;
        }
        void this.actor.handle(request, requestId).then((reply) => msg.respond(encodeReply(reply)));
      },
    });
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    await nc.flush();
    await this.actor.stop();
    await this.store.close();
  }
}

const plan = (tree: unknown): Plan => decodePlan(tree);
const countAll = (): PartitionRequest => ({ type: "execute", plan: plan(readOne(count(allNodes()))) });
const addOne = (): PartitionRequest => ({ type: "execute", plan: plan(writeOne(addN("Thing", { n: 1 }))) });
const countOf = (body: unknown): unknown => (body as { result: { r: unknown } }).result.r;

describe("NatsTransport", () => {
  it("answers through the leader subject, and passes a partition's error reply on with its code", async () => {
    const responder = new Responder();
    try {
      const transport = new NatsTransport({ nc, cluster: CLUSTER });
      expect((await transport.request(0, addOne())).type).toBe("result");
      expect(countOf(await transport.request(0, countAll()))).toBe(1);
      await expectCode(transport.request(0, { type: "index_drop", kind: "node", name: "Thing.missing" }), "index_not_found");
      expect(countOf(await transport.request(0, countAll()))).toBe(1);
    } finally {
      await responder.stop();
    }
  });

  it("retries while no leader responds, until one subscribes, with one request id throughout", async () => {
    const transport = new NatsTransport({ nc, cluster: CLUSTER, deadlineMs: 10_000 });
    const pending = transport.request(1, countAll());
    await new Promise((resolve) => setTimeout(resolve, 400));
    const responder = new Responder([], 1);
    try {
      expect(countOf(await pending)).toBe(0);
      expect(responder.seen).toHaveLength(1);
    } finally {
      await responder.stop();
    }
  });

  it("retries a not_leader reply (a write too: nothing was appended), with the same request id", async () => {
    const responder = new Responder(["not_leader", "not_leader"]);
    try {
      const transport = new NatsTransport({ nc, cluster: CLUSTER });
      const before = countOf(await transport.request(0, countAll())) as number;
      responder.seen.length = 0;
      responder.script.push("not_leader", "not_leader");
      await transport.request(0, addOne());
      expect(responder.seen.map((seen) => seen.type)).toEqual(["execute", "execute", "execute"]);
      expect(new Set(responder.seen.map((seen) => seen.requestId)).size).toBe(1);
      expect(responder.seen[0].requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(countOf(await transport.request(0, countAll()))).toBe(before + 1);
    } finally {
      await responder.stop();
    }
  });

  it("never repeats a write execute after a timeout: partition_unavailable, sent once, nothing written", async () => {
    const responder = new Responder(["silent"]);
    try {
      const transport = new NatsTransport({ nc, cluster: CLUSTER, timeoutMs: 300, deadlineMs: 5_000 });
      const error = await expectCode(transport.request(0, addOne()), "partition_unavailable");
      expect(error.message).toMatch(/partition 0 of cluster transport-test/);
      expect(error.message).toMatch(/not repeated/);
      expect(responder.seen.map((seen) => seen.type)).toEqual(["execute"]);
      expect(countOf(await transport.request(0, countAll()))).toBe(0);
    } finally {
      await responder.stop();
    }
  });

  it("repeats a safe request as soon as its leader dies with it in flight, not after the attempt timeout", async () => {
    // The leader takes the request and dies (its subscription goes); a new leader subscribes a moment later.
    const dying = new Responder(["silent"]);
    const transport = new NatsTransport({ nc, cluster: CLUSTER, timeoutMs: 60_000, deadlineMs: 60_000 });
    const started = performance.now();
    const pending = transport.request(0, { type: "read_label", kind: "node", label: "Thing" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(dying.seen).toHaveLength(1);
    await dying.stop();
    await new Promise((resolve) => setTimeout(resolve, LEADER_PROBE_INTERVAL_MS * 2));
    const next = new Responder();
    try {
      expect((await pending).type).not.toBe("error");
      // Answered by the new leader, long before the 60 s attempt would have timed out, with the same request id.
      expect(performance.now() - started).toBeLessThan(15_000);
      expect(next.seen.filter((seen) => seen.type === "read_label").map((seen) => seen.requestId)).toEqual([dying.seen[0].requestId]);
    } finally {
      await next.stop();
    }
  }, 30_000);

  it("keeps waiting for a write execute's reply while its leader is alive, and probes nothing for it", async () => {
    const responder = new Responder(["silent"]);
    try {
      const transport = new NatsTransport({ nc, cluster: CLUSTER, timeoutMs: LEADER_PROBE_INTERVAL_MS * 4, deadlineMs: 5_000 });
      await expectCode(transport.request(0, addOne()), "partition_unavailable");
      expect(responder.seen.map((seen) => seen.type)).toEqual(["execute"]);
    } finally {
      await responder.stop();
    }
  });

  it("repeats a read and a pending_intents after a timeout, with the same request id", async () => {
    const responder = new Responder(["silent", "silent"]);
    try {
      const transport = new NatsTransport({ nc, cluster: CLUSTER, timeoutMs: 300 });
      expect(countOf(await transport.request(0, countAll()))).toBe(0);
      expect(responder.seen.map((seen) => seen.type)).toEqual(["execute", "execute", "execute"]);
      expect(new Set(responder.seen.map((seen) => seen.requestId)).size).toBe(1);
      responder.seen.length = 0;
      responder.script.push("silent");
      expect((await transport.request(0, { type: "pending_intents" })).type).toBe("intents");
      expect(responder.seen.map((seen) => seen.type)).toEqual(["pending_intents", "pending_intents"]);
    } finally {
      await responder.stop();
    }
  });

  it("gives up after the deadline with partition_unavailable naming the partition and what happened", async () => {
    const transport = new NatsTransport({ nc, cluster: CLUSTER, timeoutMs: 200, deadlineMs: 700 });
    const error = await expectCode(transport.request(7, countAll()), "partition_unavailable");
    expect(error.message).toMatch(/partition 7 of cluster transport-test did not answer within \d+ ms: no leader is serving it \(no responders\)/);
    const silent = new Responder(["silent", "silent", "silent", "silent", "silent", "silent", "silent", "silent"], 8);
    try {
      const timedOut = await expectCode(transport.request(8, countAll()), "partition_unavailable");
      expect(timedOut.message).toMatch(/no reply within \d+ ms/);
      expect(silent.seen.length).toBeGreaterThanOrEqual(2);
    } finally {
      await silent.stop();
    }
  });

  it("keeps prepared plans itself, so a prepared query survives a change of leader", async () => {
    const first = new Responder();
    const transport = new NatsTransport({ nc, cluster: CLUSTER });
    const tree = writeOne(addN("Thing", { n: 1 }));
    await transport.request(0, { type: "register_plan", planId: 1, plan: plan(tree) });
    try {
      await transport.request(0, { type: "execute_prepared", planId: 1, parameters: {} });
      expect(first.seen.map((seen) => seen.type)).toEqual(["execute"]);
    } finally {
      await first.stop();
    }
    const second = new Responder();
    try {
      expect((await transport.request(0, { type: "execute_prepared", planId: 1, parameters: {} })).type).toBe("result");
      expect(countOf(await transport.request(0, countAll()))).toBe(1);
      await transport.request(0, { type: "release_plan", planId: 1 });
      await expectCode(transport.request(0, { type: "execute_prepared", planId: 1, parameters: {} }), "internal");
      expect(second.seen.map((seen) => seen.type)).toEqual(["execute", "execute"]);
    } finally {
      await second.stop();
    }
  });

  it("sends reads to the replicas' stale subject when stale reads are allowed, writes to the leader", async () => {
    const stale = new Responder([], 2, subjects.stale(CLUSTER, 2));
    const leader = new Responder([], 2);
    try {
      const transport = new NatsTransport({ nc, cluster: CLUSTER, staleReads: true });
      await transport.request(2, countAll());
      await transport.request(2, addOne());
      expect(stale.seen.map((seen) => seen.type)).toEqual(["execute"]);
      expect(leader.seen.map((seen) => seen.type)).toEqual(["execute"]);
    } finally {
      await stale.stop();
      await leader.stop();
    }
  });

  it("refuses bad options", () => {
    expect(() => new NatsTransport({ nc, cluster: CLUSTER, timeoutMs: 0 })).toThrow(/timeoutMs must be a positive integer/);
    expect(() => new NatsTransport({ nc, cluster: CLUSTER, deadlineMs: -5 })).toThrow(/deadlineMs/);
  });
});
