/**
 * UNIQUE edge types (`E::Likes UNIQUE {..}`) through the engine on every backend (memory, disk, three partitions):
 * the operation tree's `add_e` and bulk import refuse a second edge of one (from, to) pair, within the request or
 * against stored edges, and leave the data as it was; and the partition store's own guard refuses such a list
 * whatever path it came by (apply, and the rehearsal of a two-phase prepare), judging the list's final state.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { ImportRowError } from "../../cluster/bulk-import.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { EdgeRecord, Mutation } from "../../protocol/records.js";
import { BACKENDS, TestDatabase, expectCode, expectRefused, partitionOf, removeTempDirs, snapshot, tempDir } from "../helpers/engine.js";
import { addE, addN, drop, edgesById, entry, nodesById, ref, write, writeOne } from "../helpers/tree.js";

afterAll(removeTempDirs);

const SCHEMA = `
N::User { name: String }
E::Likes UNIQUE { From: User, To: User, Properties: { weight: F64 } }
E::Follows { From: User, To: User }
`;

describe.each(BACKENDS)("UNIQUE edge types ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: SCHEMA });
  });
  afterEach(async () => t.destroy());

  /** Users enough that, on three partitions, some pairs join users of different partitions. */
  async function users(count: number): Promise<bigint[]> {
    const { nodeIds } = await t.db.importBatch({ nodes: Array.from({ length: count }, (_, i) => ({ label: "User", props: { name: `u${i}` } })), edges: [] });
    return nodeIds;
  }

  it("refuses a tree add_e of a pair that has its edge, alone or twice in one request, and writes nothing", async () => {
    const [a, b, c] = await users(3);
    await t.run(writeOne(addE(nodesById(a), "Likes", ref.ids(b), { weight: 1 })));
    const error = await expectRefused(t, writeOne(addE(nodesById(a), "Likes", ref.ids(b), { weight: 2 })), "unique_violation");
    expect(error.message).toContain(`already joins ${a} to ${b}`);
    await expectRefused(
      t,
      write([entry("x", addN("User", { name: "x" })), entry("p", addE(nodesById(c), "Likes", ref.ids(a))), entry("q", addE(nodesById(c), "Likes", ref.ids(a)))], []),
      "unique_violation",
    );
    // The reverse pair is another pair; a type not declared UNIQUE takes any number.
    await t.run(writeOne(addE(nodesById(b), "Likes", ref.ids(a))));
    await t.run(write([entry("p", addE(nodesById(a), "Follows", ref.ids(b))), entry("q", addE(nodesById(a), "Follows", ref.ids(b)))], []));
  });

  it("lets one of several concurrent creates of a pair win, and refuses the others", async () => {
    const [a, b] = await users(2);
    const outcomes = await Promise.allSettled(Array.from({ length: 4 }, (_, i) => t.run(writeOne(addE(nodesById(a), "Likes", ref.ids(b), { weight: i })))));
    expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(1);
    for (const outcome of outcomes) if (outcome.status === "rejected") expect((outcome.reason as { code: string }).code).toBe("unique_violation");
    expect((await snapshot(t.db)).edges).toHaveLength(1);
  });

  it("lets a pair have a new edge once its edge is dropped", async () => {
    const [a, b] = await users(2);
    const first = (await t.run(writeOne(addE(nodesById(a), "Likes", ref.ids(b))))).r as { $id: string }[];
    await t.run(writeOne(drop(edgesById(first[0].$id))));
    await t.run(writeOne(addE(nodesById(a), "Likes", ref.ids(b), { weight: 3 })));
    const contents = await snapshot(t.db);
    expect(contents.edges).toHaveLength(1);
  });

  it("refuses a bulk import that gives a pair two edges, within the batch or against a stored one, naming the row", async () => {
    const people = await users(7);
    // On three partitions, people[0] and people[6] are on different partitions.
    if (backend.partitions === 3) expect(partitionOf(people[0], 3)).not.toBe(partitionOf(people[6], 3));
    await t.db.importBatch({ nodes: [], edges: [{ label: "Likes", from: { id: people[0] }, to: { id: people[6] }, props: {} }] });
    const before = await snapshot(t.db);
    const inBatch = await expectCode(
      t.db.importBatch({
        nodes: [{ label: "User", props: { name: "n" } }],
        edges: [
          { label: "Likes", from: { batch: 0 }, to: { id: people[1] }, props: {} },
          { label: "Likes", from: { id: people[2] }, to: { id: people[3] }, props: {} },
          { label: "Likes", from: { batch: 0 }, to: { id: people[1] }, props: {} },
        ],
      }),
      "unique_violation",
    );
    expect(inBatch).toBeInstanceOf(ImportRowError);
    expect((inBatch as ImportRowError).index).toBe(2);
    const stored = await expectCode(
      t.db.importBatch({ nodes: [], edges: [{ label: "Likes", from: { id: people[2] }, to: { id: people[3] }, props: {} }, { label: "Likes", from: { id: people[0] }, to: { id: people[6] }, props: {} }] }),
      "unique_violation",
    );
    expect((stored as ImportRowError).section).toBe("edges");
    expect((stored as ImportRowError).index).toBe(1);
    expect(await snapshot(t.db)).toEqual(before);
    await t.db.importBatch({ nodes: [], edges: [{ label: "Likes", from: { id: people[6] }, to: { id: people[0] }, props: {} }] });
  });
});

describe("the partition store's guard of UNIQUE edge types", () => {
  const user = (id: bigint): Mutation => ({ op: "put_record", record: { kind: "node", id, label: "User", props: {} } });
  const likes = (id: bigint, from: bigint, to: bigint): EdgeRecord => ({ kind: "edge", id, label: "Likes", from, to, fromKind: "node", toKind: "node", props: {} });
  const put = (edge: EdgeRecord): Mutation => ({ op: "put_record", record: edge });
  const remove = (edge: EdgeRecord): Mutation => ({ op: "delete_record", record: edge });

  function openStore(uniqueEdgeLabels: readonly string[], path = tempDir("silk-unique-edges-")): PartitionStore {
    return PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: 1n, idLast: 2n ** 64n - 1n, uniqueEdgeLabels });
  }

  it("refuses a list that leaves two edges of a UNIQUE type from one source to one target, in apply and in prepare", async () => {
    const store = openStore(["Likes"]);
    try {
      store.apply(encodeMutations([user(1n), user(2n), user(3n), put(likes(10n, 1n, 2n))]));
      await expectCode(async () => store.apply(encodeMutations([put(likes(11n, 1n, 2n))])), "unique_violation");
      await expectCode(async () => store.apply(encodeMutations([put(likes(12n, 1n, 3n)), put(likes(13n, 1n, 3n))])), "unique_violation");
      await expectCode(async () => store.prepare("t1", encodeMutations([put(likes(14n, 1n, 2n))])), "unique_violation");
      expect(store.pendingIntents()).toEqual([]);
      // The list's final state counts: the pair's old edge dropped after the new one is created is no violation.
      store.apply(encodeMutations([put(likes(15n, 1n, 2n)), remove(likes(10n, 1n, 2n))]));
      store.apply(encodeMutations([put(likes(16n, 2n, 1n)), put(likes(17n, 1n, 3n))]));
    } finally {
      await store.close();
    }
  });

  it("takes any number of edges of a type it was not told is UNIQUE, and keeps them once told, adding none", async () => {
    const path = tempDir("silk-unique-edges-");
    const before = openStore([], path);
    before.apply(encodeMutations([user(1n), user(2n), put(likes(10n, 1n, 2n)), put(likes(11n, 1n, 2n))]));
    await before.close();
    const store = openStore(["Likes"], path);
    try {
      // An update of one of them puts its adjacency entry again: the pair keeps its two edges, and that is no violation.
      store.apply(encodeMutations([put({ ...likes(10n, 1n, 2n), props: { weight: 2 } })]));
      await expectCode(async () => store.apply(encodeMutations([put(likes(12n, 1n, 2n))])), "unique_violation");
      store.apply(encodeMutations([remove(likes(11n, 1n, 2n))]));
      await expectCode(async () => store.apply(encodeMutations([put(likes(12n, 1n, 2n))])), "unique_violation");
    } finally {
      await store.close();
    }
  });
});
