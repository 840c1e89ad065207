/**
 * A schemaless database's UNIQUE index (made by `create_index`, no schema) holds in a bulk import as it does in a
 * query, on one partition and across three: a duplicate within the batch or against stored records is
 * `unique_violation` and the import writes nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BACKENDS, expectCode, TestDatabase } from "../helpers/engine.js";
import { addN, entry, write, writeOne, type TreeNode } from "../helpers/tree.js";

describe.each(BACKENDS)("UNIQUE in a schemaless bulk import ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend);
  });
  afterEach(async () => t.destroy());

  it("refuses a duplicate within the batch or against stored records, writing nothing", async () => {
    await t.run(write([entry(undefined, addN("User", { handle: "ann" }))], []));
    const created = (await t.run(writeOne({ create_index: { label: "User", property: "handle", unique: true, kind: "node" } } as TreeNode))).r as { state: string };
    expect(["active", "constructing", "validating"]).toContain(created.state);
    // On three partitions the build ends validating, then the coordinator's check makes it active.
    for (let poll = 0; ; poll++) {
      const status = (await t.run(writeOne({ get_index_operation: { label: "User", property: "handle", kind: "node" } } as TreeNode))).r as { state: string };
      if (status.state === "active") break;
      if (poll === 1_000) throw new Error(`User.handle is still ${status.state}`);
      await new Promise((resume) => setTimeout(resume, 5));
    }
    // Enough rows that, on three partitions, the two holders of a value land on different partitions.
    const rows = Array.from({ length: 7 }, (_, i) => ({ label: "User", props: { handle: `h${i}` } }));
    await expectCode(t.db.importBatch({ nodes: [...rows, { label: "User", props: { handle: "h0" } }], edges: [] }), "unique_violation");
    await expectCode(t.db.importBatch({ nodes: [...rows, { label: "User", props: { handle: "ann" } }], edges: [] }), "unique_violation");
    const counted = await t.run({ request_type: "read", query: { read: { entries: [entry("n", { count: { input: { nodes: { reference: "all" } } } } as TreeNode)], returns: ["n"] } } });
    expect(counted.n).toBe(1);
    await t.db.importBatch({ nodes: rows, edges: [] });
  });
});
