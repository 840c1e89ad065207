/**
 * Moving an ID range between partition stores (node/store/partition-store.ts; rebalancing's storage side): the giving
 * store exports the range's records and in-adjacency as one `put` list from a snapshot, the receiving store owns the
 * range first and applies it, the giver then drops the range (records, labels, index entries, in-adjacency entries
 * of its targets and out-adjacency entries of its sources go in one transaction) and stops owning it. Out-adjacency
 * stays with its source wherever the edge record goes. Ownership is persisted, and neither store hands out an ID it
 * does not own.
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PartitionStore } from "../../node/store/partition-store.js";
import type { IndexDefinition } from "../../protocol/indexes.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { IdRange, Mutation, StoredRecord } from "../../protocol/records.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";

afterAll(removeTempDirs);

const AGE: IndexDefinition = { family: "secondary", kind: "node", label: "User", field: "age", unique: false, type: "I64", name: "User.age" };
const FIRST: IdRange = { first: 1n, last: 999n };
const SECOND: IdRange = { first: 1_000n, last: 1_999n };

function open(path: string, range: IdRange): PartitionStore {
  return PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: range.first, idLast: range.last, indexes: [AGE] });
}

const user = (id: bigint, age: number): StoredRecord => ({ kind: "node", id, label: "User", props: { age } });
const follows = (id: bigint, from: bigint, to: bigint): StoredRecord => ({ kind: "edge", id, label: "Follows", from, to, fromKind: "node", toKind: "node", props: {} });

/** The giver holds users 10..14 and edges 10→11 (edge 20), 12→13 (edge 21), 14→10 (edge 22); the receiver holds user 1,500 and edge 1,500→12. */
function seed(giver: PartitionStore, receiver: PartitionStore): void {
  const mutations: Mutation[] = [];
  for (let id = 10n; id <= 14n; id++) mutations.push({ op: "put_record", record: user(id, Number(id)) });
  for (const [edge, from, to] of [[20n, 10n, 11n], [21n, 12n, 13n], [22n, 14n, 10n]] as const) {
    mutations.push({ op: "put_record", record: follows(edge, from, to) });
    mutations.push({ op: "put_in", target: to, label: "Follows", edge, source: from, sourceKind: "node" });
  }
  mutations.push({ op: "put_in", target: 12n, label: "Follows", edge: 1_501n, source: 1_500n, sourceKind: "node" });
  giver.apply(encodeMutations(mutations));
  receiver.apply(encodeMutations([{ op: "put_record", record: user(1_500n, 40) }, { op: "put_record", record: follows(1_501n, 1_500n, 12n) }]));
}

function view(store: PartitionStore) {
  const snapshot = store.snapshot();
  try {
    return {
      users: snapshot.idsOfLabel("node", "User"),
      edges: snapshot.allIds("edge"),
      out: (id: bigint) => snapshot.adjacency(id, "out").map((entry) => entry.other),
      in: (id: bigint) => snapshot.adjacency(id, "in").map((entry) => entry.other).sort(),
      ages: snapshot.indexIds("node", "User", "age", [{ low: 0, lowInclusive: true, high: null, highInclusive: false }]),
    };
  } finally {
    snapshot.close();
  }
}

describe("moving an ID range between partition stores", () => {
  it("copies the range's records and in-adjacency, then drops them from the giver in one transaction", () => {
    const dir = tempDir("silk-range-");
    const giver = open(join(dir, "g"), FIRST);
    const receiver = open(join(dir, "r"), SECOND);
    seed(giver, receiver);
    const moved: IdRange = { first: 12n, last: 21n }; // users 12, 13, 14 and edges 20, 21
    const snapshot = giver.snapshot();
    const batch = snapshot.exportRange(moved);
    snapshot.close();

    expect(() => receiver.apply(batch)).toThrow(/does not own/);
    receiver.addOwnedRanges([moved]);
    receiver.apply(batch);
    giver.dropRange(moved);

    expect(giver.ownedRanges()).toEqual([{ first: 1n, last: 11n }, { first: 22n, last: 999n }]);
    expect(receiver.ownedRanges()).toEqual([{ first: 12n, last: 21n }, { first: 1_000n, last: 1_999n }]);
    const g = view(giver);
    const r = view(receiver);
    expect(g.users).toEqual([10n, 11n]);
    expect(r.users).toEqual([12n, 13n, 14n, 1_500n]);
    // Out-adjacency lives with the source, wherever the edge record is: edge 20 (10→11) moved but its source stayed;
    // edge 21 (12→13) moved with its source; edge 22 (14→10) stayed but its source moved.
    expect(g.out(10n)).toEqual([11n]);
    expect(r.out(12n)).toEqual([13n]);
    expect(g.out(14n)).toEqual([]);
    expect(r.out(14n)).toEqual([10n]);
    expect(g.edges).toEqual([22n]);
    expect(r.edges).toEqual([20n, 21n, 1_501n]);
    // In-adjacency moved with its target: 13 ← 12 (edge 21), 12 ← 1,500 (edge 1,501).
    expect(r.in(13n)).toEqual([12n]);
    expect(r.in(12n)).toEqual([1_500n]);
    expect(g.in(12n)).toEqual([]);
    expect(g.in(10n)).toEqual([14n]);
    // Index entries follow the records.
    expect(g.ages).toEqual([10n, 11n]);
    expect(r.ages).toEqual([12n, 13n, 14n, 1_500n]);
  });

  it("keeps ownership over a reopen and refuses writes and IDs outside it", async () => {
    const dir = tempDir("silk-range-");
    let giver = open(join(dir, "g"), FIRST);
    const receiver = open(join(dir, "r"), SECOND);
    seed(giver, receiver);
    giver.dropRange({ first: 500n, last: 999n });
    await giver.close();
    giver = open(join(dir, "g"), FIRST);
    expect(giver.ownedRanges()).toEqual([{ first: 1n, last: 499n }]);
    expect(() => giver.apply(encodeMutations([{ op: "put_record", record: user(600n, 1) }]))).toThrow(/does not own/);
    // IDs are handed out only inside an owned range: the giver's counter stops at 499.
    const first = giver.allocateIds(499 - 22);
    expect(first).toBe(23n);
    expect(() => giver.allocateIds(1)).toThrow(/exhausted/);
    await expectCode(Promise.resolve().then(() => giver.allocateIds(1)), "limit_exceeded");
    await giver.close();
    await receiver.close();
  });

  it("moves its ID counter only with IDs of its own allocation range, compared across both 32-bit words", async () => {
    const dir = tempDir("silk-range-");
    const high = 2n ** 32n;
    const range: IdRange = { first: high - 4n, last: 2n * high };
    let store = open(join(dir, "c"), range);
    expect(store.nextIdToAllocate()).toBe(high - 4n);
    store.apply(encodeMutations([{ op: "put_record", record: user(high + 3n, 1) }, { op: "put_record", record: user(high - 2n, 2) }]));
    expect(store.nextIdToAllocate()).toBe(high + 4n);
    // A record a rebalance brings from beyond the allocation range does not move the counter.
    const brought: IdRange = { first: 4n * high, last: 4n * high + 10n };
    store.addOwnedRanges([brought]);
    store.apply(encodeMutations([{ op: "put_record", record: follows(4n * high + 5n, high + 3n, high - 2n) }]));
    expect(store.nextIdToAllocate()).toBe(high + 4n);
    await store.close();
    store = open(join(dir, "c"), range);
    expect(store.nextIdToAllocate()).toBe(high + 4n);
    await store.close();
  });
});
