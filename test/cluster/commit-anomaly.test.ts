/**
 * A participant asked to commit an intent it no longer holds answers `intent_not_prepared`, and the coordinator
 * reports it as such: counted (`commitAnomalies`, `silk_commit_anomalies_total`) and never acknowledged as success.
 * Before, the partition answered "done" (it could not tell a retry of an applied commit from the commit of an intent
 * it had aborted), and the bank test once acknowledged a transfer with nothing of it written. Here a transport stands
 * in for that bug: it aborts partition 1's intent just before the commit reaches it.
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Coordinator } from "../../cluster/coordinator.js";
import { LmdbDecisionLog } from "../../cluster/decision-log.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { InProcessTransport, type Transport } from "../../cluster/transport.js";
import { PartitionActor } from "../../node/actor/partition-actor.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { PartitionReplyBody, PartitionRequest } from "../../protocol/messages.js";
import { decodeRequest } from "../../protocol/tree.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";
import { addN, count, entry, forEach, nodesOf, param, readOne, write, type Request } from "../helpers/tree.js";

afterAll(removeTempDirs);

/** Aborts partition 1's intent right before the first commit sent to it (a lost intent, as a bug would cause). */
class AbortsBeforeCommit implements Transport {
  private done = false;
  constructor(private readonly inner: Transport) {}
  async request(partition: number, message: PartitionRequest): Promise<PartitionReplyBody> {
    if (message.type === "commit" && partition === 1 && !this.done) {
      this.done = true;
      await this.inner.request(1, { type: "abort", txid: message.txid });
    }
    return this.inner.request(partition, message);
  }
}

const USERS = Array.from({ length: 12 }, (_, i) => ({ name: `user${i}` }));
const load: Request = write([forEach("users", [entry(undefined, addN("User", { name: param("name") }))])], [], { users: USERS });

function userCount(store: PartitionStore): number {
  const snapshot = store.snapshot();
  try {
    return snapshot.idsOfLabel("node", "User").length;
  } finally {
    snapshot.close();
  }
}

describe("a commit of an intent a participant no longer holds", () => {
  it("is refused as intent_not_prepared and counted, not acknowledged; retried commits stay idempotent", async () => {
    const directory = tempDir("silk-commit-anomaly-");
    const map = new PartitionMap(2);
    const stores = map.ranges.map((range) =>
      PartitionStore.open({ path: join(directory, `p${range.index}`), readOnly: false, noSync: true, idFirst: range.first, idLast: range.last, uniqueAcrossPartitions: true }),
    );
    const now = (): Date => new Date();
    const actors = stores.map((store) => new PartitionActor({ store, schema: undefined, writable: true, now }));
    const decisions = new LmdbDecisionLog(join(directory, "coordinator"), { readOnly: false, noSync: true });
    const inProcess = new InProcessTransport(actors);
    const coordinator = new Coordinator({ transport: new AbortsBeforeCommit(inProcess), map, decisions, schema: undefined, writable: true, now });
    try {
      await expectCode(coordinator.run(decodeRequest(load as never)), "intent_not_prepared");
      expect(coordinator.transactionCounts()).toEqual({ committed: 0, aborted: 1, commitAnomalies: 1 });
      // A torn write, reported as the bug it is: partition 0 applied its part, partition 1 aborted its own.
      const torn = userCount(stores[0]);
      expect(torn).toBeGreaterThan(0);
      expect(userCount(stores[1])).toBe(0);
      // The next write commits on both partitions.
      await coordinator.run(decodeRequest(load as never));
      expect(coordinator.transactionCounts()).toEqual({ committed: 1, aborted: 1, commitAnomalies: 1 });
      expect(await coordinator.run(decodeRequest(readOne(count(nodesOf("User"))) as never))).toEqual({ r: USERS.length + torn });

      // On a partition: a commit retried after it was applied, and aborts of what it never held, answer done; a commit
      // of an aborted or unknown intent, and an abort of a committed one, are refused and change nothing.
      const before = userCount(stores[0]);
      const batch = encodeMutations([{ op: "put_record", record: { kind: "node", id: map.ranges[0].first + 900n, label: "User", props: { name: "late" } } }]);
      for (const txid of ["t-commit", "t-abort"]) expect(await inProcess.request(0, { type: "prepare", txid, batch })).toEqual({ type: "done" });
      expect(stores[0].intentState("t-commit")).toBe("prepared");
      for (let i = 0; i < 2; i++) expect(await inProcess.request(0, { type: "commit", txid: "t-commit" })).toEqual({ type: "done" });
      for (let i = 0; i < 2; i++) expect(await inProcess.request(0, { type: "abort", txid: "t-abort" })).toEqual({ type: "done" });
      expect(await inProcess.request(0, { type: "abort", txid: "t-never" })).toEqual({ type: "done" });
      expect([stores[0].intentState("t-commit"), stores[0].intentState("t-abort"), stores[0].intentState("t-never")]).toEqual(["committed", "aborted", "unknown"]);
      await expectCode(inProcess.request(0, { type: "commit", txid: "t-abort" }), "intent_not_prepared");
      await expectCode(inProcess.request(0, { type: "commit", txid: "t-never" }), "intent_not_prepared");
      await expectCode(inProcess.request(0, { type: "abort", txid: "t-commit" }), "intent_not_prepared");
      expect(userCount(stores[0])).toBe(before + 1);
    } finally {
      await coordinator.settle();
      await decisions.close();
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it("remembers the last outcomes only, dropping the oldest first, and keeps them across a reopen", async () => {
    const path = join(tempDir("silk-decided-"), "p0");
    const open = (): PartitionStore => PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: 1n, idLast: 1n << 40n, decidedRemembered: 3 });
    let store = open();
    try {
      for (let i = 1; i <= 5; i++) {
        store.prepare(`t${i}`, encodeMutations([{ op: "put_record", record: { kind: "node", id: BigInt(i), label: "User", props: { name: `u${i}` } } }]));
        if (i % 2 === 0) store.abortPrepared(`t${i}`);
        else store.commitPrepared(`t${i}`);
      }
      const states = (): string[] => [1, 2, 3, 4, 5].map((i) => store.intentState(`t${i}`));
      expect(states()).toEqual(["unknown", "unknown", "committed", "aborted", "committed"]);
      await store.close();
      store = open();
      expect(states()).toEqual(["unknown", "unknown", "committed", "aborted", "committed"]);
    } finally {
      await store.close();
    }
  });
});
