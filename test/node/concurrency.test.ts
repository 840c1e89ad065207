/**
 * A partition leader's concurrency control for several coordinators (node/actor/concurrency.ts; docs/ISOLATION.md,
 * "Several coordinators"): read validation against key versions and the floor, no-wait locks of prepared intents,
 * and what a new leader rebuilds from the intents it finds.
 */
import { describe, expect, it } from "vitest";
import { ConcurrencyControl, writtenKeys } from "../../node/actor/concurrency.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { ReadSet } from "../../protocol/messages.js";
import type { Mutation } from "../../protocol/records.js";
import { expectCode } from "../helpers/engine.js";

const put = (id: bigint, balance = 1): Mutation => ({ op: "put_record", record: { kind: "node", id, label: "Account", props: { balance } } });
const batch = (...mutations: Mutation[]): Uint8Array => encodeMutations(mutations);
const reads = (sequence: number, keys: string[], whole = false): ReadSet => ({ sequence, keys, whole });
const NONE = new Set<string>();

function conflict(run: () => void): Promise<Error> {
  return expectCode(
    new Promise<void>((resolve) => {
      run();
      resolve();
    }),
    "transaction_conflict",
  );
}

describe("writtenKeys", () => {
  it("names a record's key, and both endpoints' adjacency for an edge and its adjacency mutations", () => {
    const edge: Mutation = { op: "put_record", record: { kind: "edge", id: 9n, label: "Follows", from: 1n, to: 2n, fromKind: "node", toKind: "node", props: {} } };
    const out: Mutation = { op: "delete_out", source: 3n, label: "Follows", edge: 10n };
    const into: Mutation = { op: "put_in", target: 4n, label: "Follows", edge: 11n, source: 5n, sourceKind: "node" };
    expect([...writtenKeys(batch(put(7n), edge, out, into))].sort()).toEqual(["a1", "a2", "a3", "a4", "r7", "r9"]);
  });
});

describe("ConcurrencyControl", () => {
  it("validates reads of keys unchanged since their snapshot and refuses one changed after it", async () => {
    const control = new ConcurrencyControl(10, []);
    control.changed(11, ["r1"]);
    expect(control.sequence).toBe(11);
    control.check(undefined, NONE, reads(11, ["r1", "r2"]));
    control.check(undefined, NONE, reads(10, ["r2"])); // r2 never changed here: at most the floor, 10
    const error = await conflict(() => control.check(undefined, NONE, reads(10, ["r1"])));
    expect(error.message).toContain("r1 changed at sequence 11, after it was read at 10");
  });

  it("refuses reads older than what the leader can validate (its floor)", async () => {
    const control = new ConcurrencyControl(10, []);
    const error = await conflict(() => control.check(undefined, NONE, reads(9, [])));
    expect(error.message).toContain("older than what this leader can validate (10)");
  });

  it("refuses a read of the whole partition after any change there, and not before", async () => {
    const control = new ConcurrencyControl(10, []);
    control.check(undefined, NONE, reads(10, [], true));
    control.changed(11, ["r5"]);
    control.changed(12, []); // an entry that changed no record (a prepare, an ID reservation)
    control.check(undefined, NONE, reads(11, [], true));
    await conflict(() => control.check(undefined, NONE, reads(10, [], true)));
  });

  it("lets a prepared intent's written keys be neither read, written nor wholly read by others, until its decision", async () => {
    const control = new ConcurrencyControl(10, []);
    control.lock("t1", new Set(["r1"]), reads(10, []));
    expect(control.holds("t1")).toBe(true);
    expect((await conflict(() => control.check(undefined, NONE, reads(10, ["r1"])))).message).toContain("r1 is written by transaction t1, prepared");
    await conflict(() => control.check("t2", new Set(["r1"]), reads(10, [])));
    await conflict(() => control.check(undefined, NONE, reads(10, [], true)));
    control.check("t1", new Set(["r1"]), reads(10, ["r1"])); // its own locks are no conflict
    control.check("t2", new Set(["r2"]), reads(10, ["r2"]));
    control.committed(13, "t1");
    expect(control.holds("t1")).toBe(false);
    // Committed: readable again at a snapshot holding the commit, not at an older one.
    control.check(undefined, NONE, reads(13, ["r1"]));
    await conflict(() => control.check(undefined, NONE, reads(12, ["r1"])));
  });

  it("lets a prepared intent's read keys be read by others but not written, and an abort frees them", async () => {
    const control = new ConcurrencyControl(10, []);
    control.lock("t1", NONE, reads(10, ["r1"]));
    control.check(undefined, NONE, reads(10, ["r1"]));
    expect((await conflict(() => control.check("t2", new Set(["r1"]), reads(10, [])))).message).toContain("r1 was read by transaction t1, prepared");
    control.release("t1");
    control.check("t2", new Set(["r1"]), reads(10, []));
  });

  it("refuses every other write while an intent that read the whole partition is prepared", async () => {
    const control = new ConcurrencyControl(10, []);
    control.lock("t1", NONE, reads(10, [], true));
    await conflict(() => control.check("t2", new Set(["r77"]), undefined));
    control.check("t2", NONE, reads(10, ["r77"])); // reading is fine
    control.release("t1");
    control.check("t2", new Set(["r77"]), undefined);
  });

  it("gives intents a new leader finds their written keys and the whole partition (their reads are unknown)", async () => {
    const control = new ConcurrencyControl(20, [{ txid: "old", batch: batch(put(3n)) }]);
    expect(control.holds("old")).toBe(true);
    await conflict(() => control.check(undefined, NONE, reads(20, ["r3"])));
    await conflict(() => control.check("t2", new Set(["r4"]), reads(20, [])));
    control.committed(21, "old");
    control.check("t2", new Set(["r4"]), reads(21, ["r3"]));
  });

  it("raises the floor as old versions are evicted, so nothing it forgot validates", async () => {
    const control = new ConcurrencyControl(0, [], 2);
    control.changed(1, ["r1"]);
    control.changed(2, ["r2"]);
    control.changed(3, ["r3"]); // r1's version is forgotten: the floor becomes 1
    control.check(undefined, NONE, reads(1, ["r1"]));
    await conflict(() => control.check(undefined, NONE, reads(0, ["r9"])));
  });

  it("forgets every version after a change of anything (a range moved, an index changed)", async () => {
    const control = new ConcurrencyControl(0, []);
    control.changedAll(5);
    await conflict(() => control.check(undefined, NONE, reads(4, ["r1"])));
    control.check(undefined, NONE, reads(5, ["r1"]));
  });

  it("remembers applied request IDs", () => {
    const control = new ConcurrencyControl(0, []);
    control.rememberApplied("a");
    expect(control.applied("a")).toBe(true);
    expect(control.applied("b")).toBe(false);
  });
});
