/**
 * `Coordinator.recover()` while one of the coordinator's own two-phase commits is in flight: what a cluster's writer
 * does when it takes its writer lease back after losing it (runtime/remote.ts `onRegained`), since a transaction that
 * passed the writer gate before the loss goes on. The bank test once lost an acknowledged transfer this way: its
 * `decide(commit)` was held (the decision log's server had no JetStream for a few seconds), recovery decided abort for
 * both prepared intents, aborted them and forgot the decision, then the held `decide(commit)` created a new commit
 * decision, the participants answered the commits of intents they no longer held, and the write was acknowledged
 * with nothing of it written. Recovery leaves the transactions this coordinator has in flight to it.
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Coordinator } from "../../cluster/coordinator.js";
import { LmdbDecisionLog, type DecisionStore, type Outcome } from "../../cluster/decision-log.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { InProcessTransport, type Transport } from "../../cluster/transport.js";
import { PartitionActor } from "../../node/actor/partition-actor.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import type { PartitionReplyBody, PartitionRequest } from "../../protocol/messages.js";
import { decodeRequest } from "../../protocol/tree.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import { addN, count, entry, forEach, nodesOf, param, readOne, write, type Request } from "../helpers/tree.js";

afterAll(removeTempDirs);

/** A promise and the function that settles it. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire = (): void => undefined;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

/** A decision store whose first `decide(…, "commit", …)` waits until released (a decision log out of reach). */
class HeldCommitDecisions implements DecisionStore {
  readonly reached = signal();
  readonly release = signal();
  private held = false;

  constructor(private readonly inner: DecisionStore) {}

  async decide(txid: string, outcome: Outcome, participants: readonly number[]): Promise<Outcome> {
    if (outcome === "commit" && !this.held) {
      this.held = true;
      this.reached.fire();
      await this.release.promise;
    }
    return this.inner.decide(txid, outcome, participants);
  }
  decision(txid: string): Promise<Outcome | undefined> {
    return this.inner.decision(txid);
  }
  forget(txid: string): Promise<void> {
    return this.inner.forget(txid);
  }
  all(): Promise<string[]> {
    return this.inner.all();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Records which partitions each message type went to. */
class PartitionsSeen implements Transport {
  readonly prepared = new Set<number>();
  constructor(private readonly inner: Transport) {}
  request(partition: number, message: PartitionRequest): Promise<PartitionReplyBody> {
    if (message.type === "prepare") this.prepared.add(partition);
    return this.inner.request(partition, message);
  }
}

const USERS = Array.from({ length: 12 }, (_, i) => ({ name: `user${i}` }));
const load: Request = write([forEach("users", [entry(undefined, addN("User", { name: param("name") }))])], [], { users: USERS });

describe("recovery beside an in-flight two-phase commit", () => {
  it("leaves the coordinator's own transaction to it: the acknowledged write is there on every partition", async () => {
    const directory = tempDir("silk-recover-in-flight-");
    const map = new PartitionMap(2);
    const stores = map.ranges.map((range) =>
      PartitionStore.open({ path: join(directory, `p${range.index}`), readOnly: false, noSync: true, idFirst: range.first, idLast: range.last, uniqueAcrossPartitions: true }),
    );
    const now = (): Date => new Date();
    const actors = stores.map((store) => new PartitionActor({ store, schema: undefined, writable: true, now }));
    const log = new LmdbDecisionLog(join(directory, "coordinator"), { readOnly: false, noSync: true });
    const decisions = new HeldCommitDecisions(log);
    const transport = new PartitionsSeen(new InProcessTransport(actors));
    const coordinator = new Coordinator({ transport, map, decisions, schema: undefined, writable: true, now });
    try {
      const writing = coordinator.run(decodeRequest(load as never));
      await decisions.reached.promise;
      // Both participants prepared; the commit decision is on its way: the lease comes back and recovery runs.
      expect([...transport.prepared].sort()).toEqual([0, 1]);
      expect(stores.map((store) => store.pendingIntents().length)).toEqual([1, 1]);
      expect(await coordinator.recover()).toEqual({ committed: 0, aborted: 0 });
      expect(stores.map((store) => store.pendingIntents().length)).toEqual([1, 1]);
      decisions.release.fire();
      await writing;
      expect(await coordinator.run(decodeRequest(readOne(count(nodesOf("User"))) as never))).toEqual({ r: USERS.length });
      expect(stores.map((store) => store.pendingIntents().length)).toEqual([0, 0]);
    } finally {
      await coordinator.settle();
      await log.close();
      await Promise.all(stores.map((store) => store.close()));
    }
  });
});
