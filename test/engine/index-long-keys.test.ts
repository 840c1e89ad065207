/**
 * Strings longer than an LMDB key in a UNIQUE INDEX or an INDEX, on every backend. They used to fail the write with
 * `internal` (LMDB's 1,978-byte key limit, and "offset is out of bounds" at 100 KB); now an index keeps their first
 * bytes and a SHA-256 (node/indexes/index-encoding.ts), so they are written, found by equality and by range through the
 * index, and UNIQUE stays exact: two long strings that differ only in their last byte are both accepted, the same
 * one twice is `unique_violation` and nothing is written.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { BACKENDS, TestDatabase, expectRefused, ids, removeTempDirs } from "../helpers/engine.js";
import { addN, and, drop, eq, gte, nodesById, nodesWhere, param, prop, readOne, update, writeOne, type TreeNode } from "../helpers/tree.js";

afterAll(removeTempDirs);

const SCHEMA = "N::Doc { UNIQUE INDEX key: String, INDEX tag: String }";

/** Just under, at and over LMDB's key limit once the prefix and ID are added, and 100 KB. */
const LENGTHS = [1_950, 1_978, 2_000, 100_000];
const text = (length: number, last: string): string => "k".repeat(length - 1) + last;

describe.each(BACKENDS)("long strings in secondary indexes ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: SCHEMA });
  });
  afterEach(async () => t.destroy());

  const docs = (...predicates: TreeNode[]): TreeNode => nodesWhere(and(eq(prop("$label"), "Doc"), ...predicates));

  async function add(props: Record<string, unknown>): Promise<string> {
    return ids((await t.run(writeOne(addN("Doc", props)))).r)[0];
  }

  async function found(predicate: TreeNode, parameters: Record<string, unknown> = {}): Promise<{ ids: string[]; access: unknown }> {
    const result = (await t.run({ ...readOne(docs(predicate), parameters), explain: true })) as { r: unknown; $explain: { access: unknown }[] };
    return { ids: ids(result.r), access: result.$explain[0].access };
  }

  it("writes them, finds them through the index, and keeps UNIQUE exact", async () => {
    for (const length of LENGTHS) {
      const a = await add({ key: text(length, "a"), tag: text(length, "a") });
      const b = await add({ key: text(length, "b"), tag: text(length, "b") });
      expect(await found(eq(prop("key"), param("v")), { v: text(length, "b") })).toEqual({ ids: [b], access: "index" });
      expect(await found(eq(prop("tag"), text(length, "a")))).toEqual({ ids: [a], access: "index" });
      const refused = await expectRefused(t, writeOne(addN("Doc", { key: text(length, "a") })), "unique_violation");
      expect(refused.message).toContain(`record ${a} already holds`);
    }
    expect((await found(gte(prop("tag"), text(100_000, "a")))).ids).toHaveLength(2);
  });

  it("follows updates and drops of long values, and survives a reopen", async () => {
    const id = await add({ key: text(3_000, "a") });
    await t.run(writeOne(update(nodesById(id), { key: text(3_000, "b") })));
    expect((await found(eq(prop("key"), text(3_000, "a")))).ids).toEqual([]);
    await add({ key: text(3_000, "a") }); // the old value is free again
    if (backend.storage === "disk") await t.reopen();
    expect((await found(eq(prop("key"), text(3_000, "b")))).ids).toEqual([id]);
    await t.run(writeOne(drop(nodesById(id))));
    await add({ key: text(3_000, "b") });
  });
});
