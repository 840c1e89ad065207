/**
 * SPEC: a text index rejects null and non-string values. A null for a TEXT INDEX field used to pass as "not given"
 * (create) or "remove" (update), dropping the field and its postings with a 200; these tests hold every write path
 * of the operation tree and bulk import to `invalid_type` with nothing written, and keep remove_property, which
 * names a field to remove rather than giving it a value, working.
 */
import { afterEach, describe, expect, it } from "vitest";
import { open, type Database } from "../../runtime/embedded.js";
import { expectCode } from "../helpers/engine.js";
import { addN, nodesById, removeProperty, setProperty, update, writeOne } from "../helpers/tree.js";

const SCHEMA = `
N::Post { TEXT INDEX body: String, TEXT INDEX tags: [String], title: String }
QUERY Add(body: String) => post <- AddN<Post>({body: body, title: "t"}) RETURN post
QUERY Find(q: String) => hits <- SearchBM25<Post>(q, 5)::{title} RETURN hits
QUERY Count() => n <- N<Post>::COUNT RETURN n
`;

const opened: Database[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()));
});

async function seeded(): Promise<Database> {
  const db = await open({ storage: "memory", schema: SCHEMA });
  opened.push(db);
  await db.query("Add", { body: "graph databases" });
  return db;
}

async function expectUnchanged(db: Database): Promise<void> {
  expect(await db.query("Find", { q: "graph" })).toEqual({ hits: [{ title: "t" }] });
  expect(await db.query("Count", {})).toEqual({ n: 1 });
}

describe("a TEXT INDEX field refuses null", () => {
  it("in add_n, and creates nothing", async () => {
    const db = await seeded();
    const error = await expectCode(db.run(writeOne(addN("Post", { body: null, title: "u" }))), "invalid_type");
    expect(error.message).toContain("Post.body has a TEXT INDEX");
    await expectUnchanged(db);
  });

  it("in update and set_property, and keeps the field and its postings", async () => {
    const db = await seeded();
    await expectCode(db.run(writeOne(update(nodesById(1), { body: null }))), "invalid_type");
    await expectCode(db.run(writeOne(setProperty(nodesById(1), "body", null))), "invalid_type");
    await expectCode(db.run(writeOne(setProperty(nodesById(1), "tags", null))), "invalid_type");
    await expectUnchanged(db);
  });

  it("refuses a non-string value as well", async () => {
    const db = await seeded();
    await expectCode(db.run(writeOne(setProperty(nodesById(1), "body", 3))), "invalid_type");
    await expectCode(db.run(writeOne(setProperty(nodesById(1), "tags", ["a", 3]))), "invalid_type");
    await expectUnchanged(db);
  });

  it("in a bulk import, and imports nothing", async () => {
    const db = await seeded();
    const batch = { nodes: [{ label: "Post", props: { title: "u", body: "fine" } }, { label: "Post", props: { title: "v", body: null } }], edges: [] };
    await expectCode(db.importBatch(batch), "invalid_type");
    await expectUnchanged(db);
  });

  it("while remove_property still removes the field and unindexes the record", async () => {
    const db = await seeded();
    await db.run(writeOne(removeProperty(nodesById(1), "body")));
    expect(await db.query("Find", { q: "graph" })).toEqual({ hits: [] });
    expect(await db.query("Count", {})).toEqual({ n: 1 });
  });
});
