/**
 * Secondary indexes through the engine, on every backend (memory, disk, three partitions): entries follow creates,
 * updates and drops (of nodes and edges) and survive a reopen; lookups see the transaction's own writes; UNIQUE
 * INDEX refuses duplicates (create, update, a same-transaction pair, across partitions, and in bulk imports, of nodes
 * and of edges) and leaves the data as it was; `"explain": true` says which access path each source step took.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { BACKENDS, TestDatabase, expectCode, ids, pluck, removeTempDirs, snapshot, sorted } from "../helpers/engine.js";
import {
  addE,
  addN,
  and,
  between,
  drop,
  edgesWhere,
  entry,
  eq,
  gt,
  gte,
  isIn,
  lt,
  nodesById,
  nodesWhere,
  param,
  prop,
  read,
  readOne,
  ref,
  update,
  write,
  writeOne,
  type TreeNode,
} from "../helpers/tree.js";

afterAll(removeTempDirs);

export const INDEX_SCHEMA = `
N::User { UNIQUE INDEX handle: String, INDEX age: I64, INDEX score: F64, INDEX born: Date, INDEX active: Boolean, name: String }
N::Post { title: String }
E::Rated { From: User, To: Post, Properties: { INDEX stars: I64 } }
`;

/** IDs in ID order, the order a label scan (and so an index lookup) answers in; on three partitions it is not creation order. */
const inIdOrder = (...list: string[]): string[] => [...list].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));

const users = (...predicates: TreeNode[]): TreeNode => nodesWhere(and(eq(prop("$label"), "User"), ...predicates));

describe.each(BACKENDS)("secondary indexes ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: INDEX_SCHEMA });
  });
  afterEach(async () => t.destroy());

  async function seed(): Promise<string[]> {
    const people = [
      { handle: "ann", age: 30, score: 1.5, born: new Date("1990-01-01"), active: true, name: "Ann" },
      { handle: "bob", age: 20, score: -2.25, born: new Date("2000-06-01"), active: false, name: "Bob" },
      { handle: "cyd", age: 30, score: 9, born: new Date("1985-03-03"), active: true, name: "Cyd" },
      { handle: "dee", age: 45, name: "Dee" },
    ];
    const result = await t.run(write(people.map((p, i) => entry(`u${i}`, addN("User", p))), people.map((_, i) => `u${i}`)));
    return people.map((_, i) => (result[`u${i}`] as { $id: string }[])[0].$id);
  }

  async function explained(root: TreeNode, parameters: Record<string, unknown> = {}): Promise<{ r: unknown; $explain: unknown[] }> {
    return (await t.run({ ...readOne(root, parameters), explain: true })) as { r: unknown; $explain: unknown[] };
  }

  it("answers equality, range, between and is_in lookups through the index", async () => {
    const [ann, bob, cyd, dee] = await seed();
    const byAge = await explained(users(eq(prop("age"), 30)));
    expect(ids(byAge.r)).toEqual(inIdOrder(ann, cyd));
    expect(byAge.$explain).toEqual([{ entry: "r", step: "nodes_where", access: "index", index: "User.age", candidates: 2 }]);
    expect(ids((await t.run(readOne(users(gt(prop("age"), 25))))).r)).toEqual(inIdOrder(ann, cyd, dee));
    expect(ids((await t.run(readOne(users(lt(prop("score"), 1.5))))).r)).toEqual([bob]);
    expect(ids((await t.run(readOne(users(between(prop("age"), 20, 30))))).r)).toEqual(inIdOrder(ann, bob, cyd));
    expect(ids((await t.run(readOne(users(isIn(prop("handle"), param("hs"))), { hs: ["dee", "bob", "zed"] }))).r)).toEqual(inIdOrder(bob, dee));
    expect(ids((await t.run(readOne(users(gte(prop("born"), "1990-01-01T00:00:00Z"))))).r)).toEqual(inIdOrder(ann, bob));
    expect(ids((await t.run(readOne(users(eq(prop("active"), true))))).r)).toEqual(inIdOrder(ann, cyd));
    // The whole predicate still applies to the index's candidates.
    expect(pluck((await t.run(readOne(users(eq(prop("age"), 30), eq(prop("name"), "Cyd"))))).r, "handle")).toEqual(["cyd"]);
  });

  it("says which access path each source step took", async () => {
    await seed();
    const request = read(
      [entry("all", nodesWhere(gt(prop("age"), 1))), entry("label", users(eq(prop("name"), "Ann"))), entry("index", users(eq(prop("handle"), param("h"))))],
      ["index"],
      { h: "ann" },
    );
    const result = (await t.run({ ...request, explain: true })) as { $explain: unknown[] };
    expect(result.$explain).toEqual([
      { entry: "all", step: "nodes_where", access: "full_scan", candidates: 4 },
      { entry: "label", step: "nodes_where", access: "label_scan", candidates: 4 },
      { entry: "index", step: "nodes_where", access: "index", index: "User.handle", candidates: 1 },
    ]);
    // A comparison of a string field with a number is left to the scan, where no record matches (HelixDB v3's rule).
    const mismatch = (await t.run({ ...readOne(users(gt(prop("handle"), 1))), explain: true })) as { r: unknown[]; $explain: { access: string }[] };
    expect([mismatch.r, mismatch.$explain.map((step) => step.access)]).toEqual([[], ["label_scan"]]);
    expect((await t.run(readOne(users(eq(prop("age"), 30))))).$explain).toBeUndefined();
  });

  it("follows updates and drops, sees the transaction's own writes, and survives a reopen", async () => {
    const [ann, bob, cyd] = await seed();
    await t.run(writeOne(update(nodesById(ann), { age: 31 })));
    await t.run(writeOne(drop(nodesById(cyd))));
    expect(ids((await t.run(readOne(users(eq(prop("age"), 30))))).r)).toEqual([]);
    expect(ids((await t.run(readOne(users(eq(prop("age"), 31))))).r)).toEqual([ann]);
    const inTransaction = await t.run(
      write(
        [
          entry(undefined, update(nodesById(bob), { age: 31 })),
          entry("eve", addN("User", { handle: "eve", age: 31, name: "Eve" })),
          entry(undefined, update(nodesById(ann), { age: 99 })),
          entry("found", users(eq(prop("age"), 31))),
        ],
        ["eve", "found"],
      ),
    );
    const eve = ids(inTransaction.eve)[0];
    expect(ids(inTransaction.found)).toEqual([bob, eve]) // committed records first, then the ones this transaction created;
    if (backend.storage === "disk") await t.reopen();
    expect(ids((await t.run(readOne(users(eq(prop("age"), 31))))).r)).toEqual(inIdOrder(bob, eve));
    expect(ids((await t.run(readOne(users(eq(prop("age"), 99))))).r)).toEqual([ann]);
  });

  it("indexes edge properties", async () => {
    const [ann, bob] = await seed();
    const post = ids((await t.run(writeOne(addN("Post", { title: "Hi" })))).r)[0];
    const rated = await t.run(
      write([entry("a", addE(nodesById(ann), "Rated", ref.ids(post), { stars: 5 })), entry("b", addE(nodesById(bob), "Rated", ref.ids(post), { stars: 2 }))], ["a", "b"]),
    );
    const [a, b] = [ids(rated.a)[0], ids(rated.b)[0]];
    const good = edgesWhere(and(eq(prop("$label"), "Rated"), gte(prop("stars"), 4)));
    const result = (await t.run({ ...readOne(good), explain: true })) as { r: unknown; $explain: { access: string }[] };
    expect(ids(result.r)).toEqual([a]);
    expect(result.$explain[0].access).toBe("index");
    await t.run(writeOne(update(edgesWhere(and(eq(prop("$label"), "Rated"), eq(prop("stars"), 2))), { stars: 4 })));
    expect(sorted(ids((await t.run(readOne(good))).r))).toEqual(sorted([a, b]));
    await t.run(writeOne(drop(nodesById(ann))));
    expect(ids((await t.run(readOne(good))).r)).toEqual([b]);
  });

  it("refuses a UNIQUE INDEX duplicate on create, update and within one transaction, writing nothing", async () => {
    const [ann, bob] = await seed();
    const before = await snapshot(t.db);
    const error = await expectCode(t.run(writeOne(addN("User", { handle: "ann", name: "Other" }))), "unique_violation");
    expect(error.message).toContain("User.handle");
    await expectCode(t.run(writeOne(update(nodesById(bob), { handle: "ann" }))), "unique_violation");
    await expectCode(
      t.run(write([entry(undefined, addN("User", { handle: "new", name: "X" })), entry(undefined, addN("User", { handle: "new", name: "Y" }))], [])),
      "unique_violation",
    );
    await expectCode(
      t.run(write([entry(undefined, addN("Post", { title: "kept?" })), entry(undefined, update(nodesById(ann), { handle: "cyd" }))], [])),
      "unique_violation",
    );
    expect(await snapshot(t.db)).toEqual(before);
    // Swapping two values in one transaction is fine, and so is a record without the field.
    await t.run(write([entry(undefined, update(nodesById(ann), { handle: "bob" })), entry(undefined, update(nodesById(bob), { handle: "ann" }))], []));
    await t.run(write([entry(undefined, addN("User", { name: "no handle" })), entry(undefined, addN("User", { name: "none either" }))], []));
    expect(pluck((await t.run(readOne(users(eq(prop("handle"), "bob"))))).r, "$id")).toEqual([ann]);
    // A value freed by an update or a drop can be taken.
    await t.run(writeOne(drop(nodesById(bob))));
    await t.run(writeOne(addN("User", { handle: "ann", name: "Ann 2" })));
  });

  it("refuses a UNIQUE INDEX duplicate in a bulk import, within the batch or against stored records, writing nothing", async () => {
    await seed();
    const before = await snapshot(t.db);
    // Enough rows that, on three partitions, the two holders of a value land on different partitions.
    const rows = Array.from({ length: 7 }, (_, i) => ({ label: "User", props: { handle: `h${i}`, name: `N${i}` } }));
    const error = await expectCode(t.db.importBatch({ nodes: [...rows, { label: "User", props: { handle: "h0", name: "again" } }], edges: [] }), "unique_violation");
    expect(error.message).toContain("User.handle");
    await expectCode(t.db.importBatch({ nodes: [...rows, { label: "User", props: { handle: "ann", name: "Ann 2" } }], edges: [] }), "unique_violation");
    expect(await snapshot(t.db)).toEqual(before);
    await t.db.importBatch({ nodes: rows, edges: [] });
    expect(pluck((await t.run(readOne(users(eq(prop("handle"), "h6"))))).r, "name")).toEqual(["N6"]);
  });
});

describe("UNIQUE INDEX on edges in a bulk import (disk, 3 partitions)", () => {
  const backend = BACKENDS.find((candidate) => candidate.partitions === 3)!;
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: "N::Box { n: I64 }\nE::Link { From: Box, To: Box, Properties: { UNIQUE INDEX tag: String } }" });
  });
  afterEach(async () => t.destroy());

  it("refuses two edges of one tag, whichever partitions their sources are on, writing nothing", async () => {
    const boxes = (await t.db.importBatch({ nodes: Array.from({ length: 6 }, (_, n) => ({ label: "Box", props: { n } })), edges: [] })).nodeIds;
    const link = (from: number, to: number, tag: string) => ({ label: "Link", from: { id: boxes[from] }, to: { id: boxes[to] }, props: { tag } });
    await t.db.importBatch({ nodes: [], edges: [link(0, 1, "a")] });
    const before = await snapshot(t.db);
    await expectCode(t.db.importBatch({ nodes: [], edges: [link(1, 2, "b"), link(2, 3, "c"), link(3, 4, "d"), link(4, 5, "b")] }), "unique_violation");
    await expectCode(t.db.importBatch({ nodes: [], edges: [link(5, 0, "e"), link(4, 3, "a")] }), "unique_violation");
    expect(await snapshot(t.db)).toEqual(before);
    await t.db.importBatch({ nodes: [], edges: [link(1, 2, "b"), link(4, 5, "c")] });
  });
});
