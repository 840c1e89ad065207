/**
 * Index builds over existing data (node/indexes/secondary-index.ts): an index the partition has not built starts
 * `constructing`, is built in chunks interleaved with writes (which maintain it, so it catches up by itself), and
 * activates in its last chunk; the result equals an index maintained from the start. A UNIQUE index over duplicates
 * ends `blocked`. States persist, so a reopened partition resumes its build; an undeclared index is dropped. Also
 * the storage-side UNIQUE guard, on apply and on a two-phase prepare.
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import type { IndexDefinition } from "../../protocol/indexes.js";
import { SilkError } from "../../protocol/errors.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { Mutation, StoredRecord } from "../../protocol/records.js";
import { DISK_BACKENDS, ids, removeTempDirs, tempDir } from "../helpers/engine.js";
import { addN, and, drop, entry, eq, gte, nodesById, nodesWhere, prop, readOne, update, where, write, writeOne } from "../helpers/tree.js";

afterAll(removeTempDirs);

const AGE: IndexDefinition = { family: "secondary", kind: "node", label: "User", field: "age", unique: false, type: "I64", name: "User.age" };
const HANDLE: IndexDefinition = { family: "secondary", kind: "node", label: "User", field: "handle", unique: true, type: "String", name: "User.handle" };

function openStore(path: string, indexes: IndexDefinition[]): PartitionStore {
  return PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: 0n, idLast: 2n ** 64n - 1n, indexes });
}

const user = (id: bigint, props: Record<string, unknown>): StoredRecord => ({ kind: "node", id, label: "User", props: props as StoredRecord["props"] });
const put = (record: StoredRecord): Mutation => ({ op: "put_record", record });

/** Every User record of a store, as puts (to rebuild the same data elsewhere). */
function everyUser(store: PartitionStore): Mutation[] {
  const snapshot = store.snapshot();
  try {
    return snapshot.idsOfLabel("node", "User").map((id) => put(snapshot.record("node", id)!));
  } finally {
    snapshot.close();
  }
}

describe("index builds in a partition store", () => {
  it("builds in chunks between writes, activates in its last chunk, and equals an index maintained from the start", async () => {
    const path = join(tempDir(), "p");
    let store = openStore(path, []);
    store.apply(encodeMutations(Array.from({ length: 100 }, (_, i) => put(user(BigInt(i + 1), { age: i % 7, handle: `h${i}` })))));
    await store.close();
    store = openStore(path, [AGE]);
    const [key] = store.constructingIndexes();
    expect(store.indexStatuses()).toMatchObject([{ name: "User.age", state: "constructing", entities: 0 }]);
    let previous = { entities: 0, bytes: 0, operations: 0 };
    for (let round = 0; store.constructingIndexes().length > 0; round += 1) {
      store.buildIndexChunk(key, 7);
      // Writes between chunks: ahead of the build, behind it, creates, updates and deletes.
      const id = BigInt(((round * 13) % 100) + 1);
      store.apply(encodeMutations([put(user(id, { age: round })), put(user(BigInt(1000 + round), { age: round % 3 }))]));
      if (round % 4 === 0) store.apply(encodeMutations([{ op: "delete_record", record: user(BigInt(((round * 29) % 100) + 1), {}) }]));
      const [status] = store.indexStatuses();
      expect(status.entities).toBeGreaterThanOrEqual(previous.entities);
      expect(status.bytes).toBeGreaterThanOrEqual(previous.bytes);
      expect(status.operations).toBeGreaterThanOrEqual(previous.operations);
      previous = status;
      if (round === 3) {
        await store.close(); // a restart resumes where the build was
        store = openStore(path, [AGE]);
        expect(store.indexStatuses()[0]).toMatchObject({ state: "constructing", entities: previous.entities });
      }
    }
    expect(store.indexStatuses()[0]).toMatchObject({ state: "active" });
    const rebuilt = openStore(join(tempDir(), "p"), [AGE]);
    rebuilt.apply(encodeMutations(everyUser(store)));
    expect(store.indexEntryKeys("node", "User.age")).toEqual(rebuilt.indexEntryKeys("node", "User.age"));
    expect(store.indexEntryKeys("node", "User.age").length).toBeGreaterThan(50);
    await rebuilt.close();
    // An index the schema no longer declares is dropped at open.
    await store.close();
    store = openStore(path, []);
    expect(store.indexStatuses()).toEqual([]);
    await store.close();
    store = openStore(path, [AGE]);
    expect(store.indexEntryKeys("node", "User.age")).toEqual([]);
    expect(store.indexStatuses()[0].state).toBe("constructing");
    await store.close();
  });

  it("blocks a UNIQUE index over duplicate values, with reason unique_violation and no entries", async () => {
    const path = join(tempDir(), "p");
    let store = openStore(path, []);
    store.apply(encodeMutations([put(user(1n, { handle: "a" })), put(user(2n, { handle: "b" })), put(user(3n, { handle: "a" }))]));
    await store.close();
    store = openStore(path, [HANDLE]);
    while (store.constructingIndexes().length > 0) store.buildIndexChunk(store.constructingIndexes()[0], 2);
    expect(store.indexStatuses()[0]).toMatchObject({ state: "blocked", reason: "unique_violation" });
    expect(store.indexEntryKeys("node", "User.handle")).toEqual([]);
    await store.close();
  });

  it("guards an active UNIQUE index in storage: apply and prepare refuse a duplicate, writing nothing", async () => {
    const store = openStore(join(tempDir(), "p"), [HANDLE]);
    store.apply(encodeMutations([put(user(1n, { handle: "a" }))]));
    const refused = (work: () => void): void => {
      expect(work).toThrow(SilkError);
      try {
        work();
      } catch (error) {
        expect((error as SilkError).code).toBe("unique_violation");
      }
    };
    refused(() => store.apply(encodeMutations([put(user(2n, { handle: "b" })), put(user(3n, { handle: "a" }))])));
    refused(() => store.prepare("tx1", encodeMutations([put(user(4n, { handle: "a" }))])));
    expect(store.pendingIntents()).toEqual([]);
    const snapshot = store.snapshot();
    expect(snapshot.record("node", 2n)).toBeUndefined();
    expect(snapshot.indexIds("node", "User", "handle", [{ low: "a", lowInclusive: true, high: "b", highInclusive: true }])).toEqual([1n]);
    snapshot.close();
    await store.close();
  });
});

describe.each(DISK_BACKENDS)("index builds through the database ($name)", (backend) => {
  const PLAIN = "N::User { handle: String, age: I64 }";
  const INDEXED = "N::User { UNIQUE INDEX handle: String, INDEX age: I64 }";
  const adults = nodesWhere(and(eq(prop("$label"), "User"), gte(prop("age"), 18)));

  async function untilBuilt(db: Database): Promise<void> {
    // A UNIQUE build on several partitions passes through `validating` until the coordinator's check across them.
    while (db.indexes().some((index) => index.state === "constructing" || index.state === "validating")) await new Promise((resume) => setTimeout(resume, 5));
  }

  it("builds over existing data while writes go on, then the planner uses it with unchanged results", async () => {
    const path = join(tempDir(), "db");
    let db = await Database.open({ storage: { disk: path }, partitions: backend.partitions, schema: PLAIN });
    for (let i = 0; i < 300; i += 30) {
      await db.run(write(Array.from({ length: 30 }, (_, j) => entry(undefined, addN("User", { handle: `u${i + j}`, age: (i + j) % 40 }))), []));
    }
    const expected = ids((await db.run(readOne(adults))).r);
    await db.close();
    db = await Database.open({ storage: { disk: path }, partitions: backend.partitions, schema: INDEXED }, { indexBuildChunkEntities: 3 });
    expect(db.indexes().map((index) => index.state)).toContain("constructing");
    const before = (await db.run({ ...readOne(adults), explain: true })) as { r: unknown; $explain: { access: string }[] };
    expect(ids(before.r)).toEqual(expected);
    expect(before.$explain[0].access).toBe("label_scan"); // not used until active (chunks of 3 records: the build has barely started)
    // Writes during the build: a new adult, a child grown up, an adult dropped.
    const added = ids((await db.run(writeOne(addN("User", { handle: "late", age: 50 })))).r)[0];
    const grown = ids((await db.run(readOne(nodesWhere(and(eq(prop("$label"), "User"), eq(prop("handle"), "u1")))))).r)[0];
    await db.run(writeOne(update(nodesById(grown), { age: 18 })));
    await db.run(writeOne(drop(nodesById(expected[0]))));
    await untilBuilt(db);
    expect(db.indexes()).toMatchObject([
      { name: "User.handle", state: "active", unique: true },
      { name: "User.age", state: "active", entities: 300 },
    ]);
    const after = (await db.run({ ...readOne(adults), explain: true })) as { r: unknown; $explain: { access: string }[] };
    expect(after.$explain[0].access).toBe("index");
    const scanned = ids((await db.run(readOne(where(nodesWhere(eq(prop("$label"), "User")), gte(prop("age"), 18))))).r);
    expect(ids(after.r)).toEqual(scanned);
    expect(ids(after.r)).toEqual(expect.arrayContaining([added, grown]));
    expect(ids(after.r)).not.toContain(expected[0]);
    await db.close();
  });
});
