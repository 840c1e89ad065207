/**
 * The executor's label and whole-store scans let other requests run (issue 20: a scan of a large partition was one
 * uninterrupted read on the event loop). Through a held snapshot, TxnView reads the IDs as the keys come and awaits
 * the deadline's pause whenever its slice is spent; the answer is the unpaced scan's, in the same order.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Deadline } from "../../node/exec/deadline.js";
import { SnapshotReader } from "../../node/actor/partition-actor.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { TxnView } from "../../node/exec/txn-view.js";
import { runAsync, type Op } from "../../node/exec/ops.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";

/** Enough keys for the deadline to read its clock (once every DEADLINE_CHECK_INTERVAL_ELEMENTS) past a slice. */
const NODES = 30_000;
let directory: string;
let store: PartitionStore;

beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), "silk-paced-scans-"));
  store = PartitionStore.open({ path: directory, readOnly: false, noSync: true, idFirst: 1n, idLast: 2n ** 64n - 1n });
  const records = Array.from({ length: NODES }, (_, i) => ({ op: "put_record" as const, record: { kind: "node" as const, id: BigInt(i + 1), label: i % 2 === 0 ? "Even" : "Odd", props: { n: i } } }));
  store.apply(encodeMutations(records));
});

afterAll(async () => {
  await store.close();
  rmSync(directory, { recursive: true, force: true });
});

/** A clock that moves one millisecond per reading: a slice is spent after a few readings. */
function tickingClock(): () => number {
  let now = 0;
  return () => (now += 1);
}

/** Runs `scan` and says whether a callback queued before it ran before it ended. */
async function yields(scan: () => Op<bigint[]>): Promise<{ ids: bigint[]; ranWhileScanning: boolean }> {
  let finished = false;
  let ranWhileScanning = false;
  setImmediate(() => (ranWhileScanning = !finished));
  const ids = await runAsync(scan());
  finished = true;
  return { ids, ranWhileScanning };
}

describe("paced scans", () => {
  it("a label scan and a whole-store scan through a held snapshot let the event loop run, and answer the full scan's IDs", async () => {
    const snapshot = store.snapshot();
    try {
      const view = new TxnView(new SnapshotReader(snapshot), { allocate: () => 0n }, Deadline.none(tickingClock()));
      const odd = await yields(() => view.idsOfLabel("node", "Odd"));
      expect(odd.ranWhileScanning).toBe(true);
      expect(odd.ids).toEqual(snapshot.idsOfLabel("node", "Odd"));
      expect(odd.ids).toHaveLength(NODES / 2);
      const all = await yields(() => view.allIds("node"));
      expect(all.ranWhileScanning).toBe(true);
      expect(all.ids).toEqual(snapshot.allIds("node"));
      expect(all.ids).toHaveLength(NODES);
    } finally {
      snapshot.close();
    }
  });

  it("a snapshot that must not await is scanned whole, in one go", async () => {
    const snapshot = store.synchronousSnapshot();
    try {
      const view = new TxnView(new SnapshotReader(snapshot), { allocate: () => 0n }, Deadline.none(tickingClock()));
      const all = await yields(() => view.allIds("node"));
      expect(all.ranWhileScanning).toBe(false);
      expect(all.ids).toHaveLength(NODES);
    } finally {
      snapshot.close();
    }
  });

  it("a scan past its deadline stops with query_timeout", async () => {
    const snapshot = store.snapshot();
    try {
      const view = new TxnView(new SnapshotReader(snapshot), { allocate: () => 0n }, Deadline.after(5, tickingClock()));
      await expect(runAsync(view.allIds("node"))).rejects.toMatchObject({ code: "query_timeout" });
    } finally {
      snapshot.close();
    }
  });
});
