/**
 * The replicated decision log (cluster/nats/kv-decision-log.ts) on a real three-server JetStream cluster: a decision is
 * written once and never changes, two coordinators deciding the same transaction at once get the same answer, a
 * forgotten decision is gone (and never replaced by a late one, within the horizon after which its marker is purged), decisions survive a server's crash and new ones are
 * taken while it is down.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { jetstreamManager } from "@nats-io/jetstream";
import { KvDecisionLog } from "../../cluster/nats/kv-decision-log.js";
import { LocalNatsCluster } from "../../cluster/nats/servers.js";
import { subjects } from "../../cluster/nats/subjects.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";

const CLUSTER = "decisions-test";
let nats: LocalNatsCluster;
let first: NatsConnection;
let second: NatsConnection;

beforeAll(async () => {
  nats = await LocalNatsCluster.start(tempDir("silk-decisions-nats-"));
  first = await connect({ servers: nats.urls });
  second = await connect({ servers: [...nats.urls].reverse() });
}, 40_000);

afterAll(async () => {
  await first?.close();
  await second?.close();
  await nats?.stop();
  removeTempDirs();
});

describe("KvDecisionLog", () => {
  it("writes a decision once: a later decide answers the one that holds", async () => {
    const log = await KvDecisionLog.open({ nc: first, cluster: CLUSTER, replicas: 3 });
    const info = await (await new Kvm(first).open(subjects.decisionBucket(CLUSTER))).status();
    expect(info.replicas).toBe(3);
    expect(await log.decision("a1b2-1")).toBeUndefined();
    expect(await log.decide("a1b2-1", "commit", [0, 1])).toBe("commit");
    expect(await log.decide("a1b2-1", "abort", [0])).toBe("commit");
    expect(await log.decision("a1b2-1")).toBe("commit");
    expect(await log.decide("a1b2-2", "abort", [1])).toBe("abort");
    expect(await log.decide("a1b2-2", "commit", [0, 1])).toBe("abort");
    expect(await log.all()).toEqual(["a1b2-1", "a1b2-2"]);
    await log.forget("a1b2-1");
    expect(await log.decision("a1b2-1")).toBeUndefined();
    expect(await log.all()).toEqual(["a1b2-2"]);
    await log.forget("a1b2-2");
    expect(await log.all()).toEqual([]);
  });

  it("gives two coordinators deciding the same transactions at once the same answers", async () => {
    const mine = await KvDecisionLog.open({ nc: first, cluster: CLUSTER, replicas: 3 });
    const theirs = await KvDecisionLog.open({ nc: second, cluster: CLUSTER, replicas: 3 });
    const txids = Array.from({ length: 20 }, (_, i) => `race-${i}`);
    const answers = await Promise.all(
      txids.map((txid) => Promise.all([mine.decide(txid, "commit", [0, 1]), theirs.decide(txid, "abort", [0])])),
    );
    for (const [commitSide, abortSide] of answers) expect(commitSide).toBe(abortSide);
    for (const [i, txid] of txids.entries()) {
      expect(await mine.decision(txid)).toBe(answers[i][0]);
      expect(await theirs.decision(txid)).toBe(answers[i][0]);
    }
    for (const txid of txids) await mine.forget(txid);
  });

  it("never writes a new decision over a forgotten one: a late decide gets the forgotten outcome back", async () => {
    // The bank test's lost write: recovery decided abort, aborted the intents and forgot the decision, then the
    // coordinator's held decide(commit) arrived. KV create would have written commit over a delete marker.
    const log = await KvDecisionLog.open({ nc: first, cluster: CLUSTER, replicas: 3 });
    expect(await log.decide("late-1", "abort", [0])).toBe("abort");
    await log.forget("late-1");
    expect(await log.decision("late-1")).toBeUndefined();
    expect(await log.decide("late-1", "commit", [0, 1])).toBe("abort");
    expect(await log.decision("late-1")).toBeUndefined();
    expect(await log.decide("late-2", "commit", [0, 1])).toBe("commit");
    await log.forget("late-2");
    await log.forget("late-2");
    expect(await log.decide("late-2", "abort", [1])).toBe("commit");
    expect(await log.all()).not.toContain("late-1");
    expect(await log.all()).not.toContain("late-2");
    // A key an older Silk forgot with a delete marker: its outcome is gone, and abort is what a late decide gets.
    const kv = await new Kvm(first).open(subjects.decisionBucket(CLUSTER));
    await kv.put("late-3", new TextEncoder().encode(JSON.stringify({ outcome: "abort", participants: [0] })));
    await kv.delete("late-3");
    expect(await log.decide("late-3", "commit", [0, 1])).toBe("abort");
    expect(await log.decision("late-3")).toBeUndefined();
  });

  it("purges forgotten decisions older than its horizon, keeps the others, and still refuses a late decide within it", async () => {
    const cluster = "decisions-horizon";
    const HORIZON_MS = 1_500;
    const log = await KvDecisionLog.open({ nc: first, cluster, replicas: 3, deadlineMs: 1_000, forgottenHorizonMs: HORIZON_MS });
    const jsm = await jetstreamManager(first);
    const stream = `KV_${subjects.decisionBucket(cluster)}`;
    const messages = async (): Promise<number> => (await jsm.streams.info(stream)).state.messages;
    for (let i = 0; i < 20; i++) expect(await log.decide(`old-${i}`, i % 2 === 0 ? "commit" : "abort", [0, 1])).toBe(i % 2 === 0 ? "commit" : "abort");
    expect(await log.decide("kept-1", "commit", [0, 1])).toBe("commit");
    for (let i = 0; i < 20; i++) await log.forget(`old-${i}`);
    expect(await messages()).toBe(21);
    // Within the horizon a forgotten decision still answers a late decide.
    expect(await log.decide("old-1", "commit", [0, 1])).toBe("abort");
    await new Promise((resolve) => setTimeout(resolve, HORIZON_MS + 200));
    // A forget after the horizon starts the sweep by itself: the twenty old markers go, the new one and the decision
    // never forgotten stay.
    expect(await log.decide("new-1", "abort", [1])).toBe("abort");
    await log.forget("new-1");
    const deadline = Date.now() + 10_000;
    while ((await messages()) > 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await messages()).toBe(2);
    expect(await log.decision("kept-1")).toBe("commit");
    expect(await log.decide("new-1", "commit", [0, 1])).toBe("abort");
    expect(await log.all()).toEqual(["kept-1"]);
    // Nothing old left: a sweep now purges nothing.
    expect(await log.sweepForgotten()).toBe(0);
    await log.close();
    await expectCode(KvDecisionLog.open({ nc: first, cluster, replicas: 3, deadlineMs: 1_000, forgottenHorizonMs: 1_000 }), "invalid_option");
    await jsm.streams.delete(stream);
  }, 40_000);

  it("refuses a key that holds something other than a decision, and a txid that is no key", async () => {
    const log = await KvDecisionLog.open({ nc: first, cluster: CLUSTER, replicas: 3 });
    const kv = await new Kvm(first).open(subjects.decisionBucket(CLUSTER));
    await kv.put("garbage-1", new TextEncoder().encode(JSON.stringify({ outcome: "maybe" })));
    await expectCode(log.decision("garbage-1"), "internal");
    await expectCode(log.decide("garbage-1", "commit", [0]), "internal");
    await kv.delete("garbage-1");
    await expectCode(log.decide("not a key!", "commit", [0]), "internal");
    await expectCode(log.decision(""), "internal");
    expect(await log.decision("garbage-1")).toBeUndefined();
  });

  it("keeps its decisions through a server's crash and takes new ones while it is down", async () => {
    const log = await KvDecisionLog.open({ nc: first, cluster: CLUSTER, replicas: 3 });
    for (let i = 0; i < 5; i++) expect(await log.decide(`crash-${i}`, i % 2 === 0 ? "commit" : "abort", [0, 1])).toBe(i % 2 === 0 ? "commit" : "abort");
    nats.kill("n1");
    try {
      for (let i = 5; i < 10; i++) expect(await log.decide(`crash-${i}`, "commit", [0])).toBe("commit");
      for (let i = 0; i < 5; i++) expect(await log.decide(`crash-${i}`, "abort", [0])).toBe(i % 2 === 0 ? "commit" : "abort");
    } finally {
      await nats.restart("n1");
    }
    expect(await log.all()).toEqual(Array.from({ length: 10 }, (_, i) => `crash-${i}`).sort());
  }, 40_000);
});
