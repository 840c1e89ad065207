/**
 * A participant in doubt asks the decision log (cluster/nats/intent-resolver.ts). First the resolver on its own, over a
 * real PartitionStore and an LMDB decision log: an intent younger than the timeout is left alone, an older one is
 * aborted when no decision exists (and a coordinator's late commit then gets abort back), committed when a commit
 * decision exists, and a decision log that cannot be reached leaves the intent for the next sweep. Then partition
 * replicas on a real three-server NATS cluster: the leader resolves intents a coordinator left prepared (no
 * coordinator runs at all), on every replica, also after the leader that first saw them stopped.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import pino from "pino";
import { LmdbDecisionLog } from "../../cluster/decision-log.js";
import { IntentResolver } from "../../cluster/nats/intent-resolver.js";
import { KvDecisionLog } from "../../cluster/nats/kv-decision-log.js";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import { askLeader, createUser, leaderOf, logger, openStore, startReplica, users, waitFor, type TestReplica } from "./replica-helpers.js";

afterAll(removeTempDirs);

describe("IntentResolver", () => {
  it("leaves young intents alone, aborts old ones without a decision, commits those decided commit", async () => {
    const store = openStore(tempDir("silk-resolver-"));
    const decisions = new LmdbDecisionLog(join(tempDir("silk-decisions-"), "decisions"), { readOnly: false, noSync: true });
    let clock = 0;
    const applied: string[] = [];
    let reachable = false;
    const resolver = new IntentResolver({
      partition: 0,
      pending: () => store.pendingIntents(),
      decisions: async () => {
        if (!reachable) throw new Error("the decision log is unreachable");
        return decisions;
      },
      apply: async (outcome, txid) => {
        applied.push(`${outcome}:${txid}`);
        if (outcome === "commit") store.commitPrepared(txid);
        else store.abortPrepared(txid);
      },
      timeoutMs: 1_000,
      clockMs: () => clock,
      logger: pino({ level: "silent" }),
    });
    try {
      expect(resolver.intervalMs).toBe(250);
      store.prepare("t-undecided", createUser(1n, "ann"));
      store.prepare("t-committed", createUser(2n, "bob"));
      await decisions.decide("t-committed", "commit", [0, 1]);
      expect(await resolver.sweep()).toEqual([]); // first seen now
      clock = 999;
      expect(await resolver.sweep()).toEqual([]); // younger than the timeout
      clock = 1_000;
      // Due, but the decision log cannot be reached: nothing changes, the intents stay for the next sweep.
      expect(await resolver.sweep()).toEqual([]);
      expect(store.pendingIntents().sort()).toEqual(["t-committed", "t-undecided"]);
      reachable = true;
      clock = 1_500;
      const resolved = await resolver.sweep();
      expect(resolved.map((r) => `${r.outcome}:${r.txid}`).sort()).toEqual(["abort:t-undecided", "commit:t-committed"]);
      expect(resolved.every((r) => r.waitedMs === 1_500)).toBe(true);
      expect(store.pendingIntents()).toEqual([]);
      expect(users(store)).toEqual(["2:bob"]);
      // Presumed abort is durable: a coordinator that now tries to commit gets abort back.
      expect(await decisions.decide("t-undecided", "commit", [0, 1])).toBe("abort");
      // A new intent starts its own clock.
      store.prepare("t-later", createUser(3n, "cy"));
      expect(await resolver.sweep()).toEqual([]);
      clock = 2_400;
      expect(await resolver.sweep()).toEqual([]);
      expect(applied.sort()).toEqual(["abort:t-undecided", "commit:t-committed"]);
      expect(() => new IntentResolver({ partition: 0, pending: () => [], decisions: async () => decisions, apply: async () => undefined, timeoutMs: -1, logger })).toThrow(RangeError);
    } finally {
      await decisions.close();
      await store.close();
    }
  });
});

let nats: LocalNatsCluster;

beforeAll(async () => {
  nats = await LocalNatsCluster.start(tempDir("silk-nats-"));
}, 30_000);

afterAll(async () => {
  await nats?.stop();
});

const INTENT_TIMEOUT_MS = 2_000;

function startResolvingReplica(cluster: string, name: string): Promise<TestReplica> {
  return startReplica(nats.urls, cluster, name, undefined, [], { intentTimeoutMs: INTENT_TIMEOUT_MS });
}

describe("a partition leader resolving intents left in doubt", () => {
  it("aborts an undecided intent and commits a decided one on every replica, with no coordinator, across a leader change", async () => {
    const cluster = "resolver";
    const replicas: TestReplica[] = [];
    const client = await connect({ servers: nats.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const decisions = await KvDecisionLog.open({ nc: client, cluster, replicas: 3 });
    try {
      for (const name of ["a", "b", "c"]) replicas.push(await startResolvingReplica(cluster, name));
      await waitFor("a leader", () => leaderOf(replicas), 20_000);
      // A coordinator prepared three transactions here, then crashed: one before deciding, one after deciding commit.
      const started = Date.now();
      await askLeader(client, cluster, { type: "prepare", txid: "tx-undecided", batch: createUser(11n, "undecided") }, randomUUID());
      await askLeader(client, cluster, { type: "prepare", txid: "tx-committed", batch: createUser(12n, "committed") }, randomUUID());
      expect(await decisions.decide("tx-committed", "commit", [0, 1])).toBe("commit");
      const pending = await askLeader(client, cluster, { type: "pending_intents" });
      expect(pending.body).toEqual({ type: "intents", txids: ["tx-committed", "tx-undecided"] });

      await waitFor("the intents resolved on every replica", () => replicas.every((r) => r.store.pendingIntents().length === 0), 20_000);
      const resolvedMs = Date.now() - started;
      expect(resolvedMs).toBeGreaterThanOrEqual(INTENT_TIMEOUT_MS);
      for (const r of replicas) expect(users(r.store)).toEqual(["12:committed"]);
      expect(await decisions.decision("tx-undecided")).toBe("abort");
      // A coordinator coming back late cannot commit what was aborted.
      expect(await decisions.decide("tx-undecided", "commit", [0, 1])).toBe("abort");
      process.stdout.write(`resolver: undecided and decided intents resolved ${resolvedMs} ms after prepare (timeout ${INTENT_TIMEOUT_MS} ms)\n`);

      // An intent prepared under one leader, which then stops: the next leader resolves it by its own clock.
      await askLeader(client, cluster, { type: "prepare", txid: "tx-failover", batch: createUser(13n, "failover") }, randomUUID());
      const first = leaderOf(replicas)!;
      await first.replica.stop();
      const rest = replicas.filter((r) => r !== first);
      const second = await waitFor("another leader", () => leaderOf(rest), 20_000);
      expect(second).not.toBe(first);
      await waitFor("the intent resolved after the failover", () => rest.every((r) => r.store.pendingIntents().length === 0), 20_000);
      expect(await decisions.decision("tx-failover")).toBe("abort");
      for (const r of rest) expect(users(r.store)).toEqual(["12:committed"]);
      // The leader still takes ordinary writes after resolving.
      await askLeader(client, cluster, { type: "apply", batch: createUser(14n, "after") }, randomUUID());
      await waitFor("the write on every running replica", () => rest.every((r) => users(r.store).includes("14:after")));
    } finally {
      for (const r of replicas) {
        await r.replica.stop();
        await r.nc.close();
        await r.store.close();
      }
      await client.close();
    }
  }, 60_000);
});
