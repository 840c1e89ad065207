/**
 * `Database.statistics()`, what the servers' `/metrics` reads (docs/SERVER.md#metrics): write transactions by outcome,
 * counted once each by the coordinator however many partitions they touch (two-phase commits and import batches
 * included; reads and refused writes alike), and the LMDB figures of every in-process partition, also for a memory
 * database, whose files are gone once it is open.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { addE, addN, allNodes, count, entry, nodes, readOne, write, writeOne } from "../helpers/tree.js";

describe("Database.statistics", () => {
  let db: Database;
  /** Two-phase commits decided: proof that a counted transaction spanned partitions. */
  let decided = 0;

  beforeAll(async () => {
    db = await Database.open({ storage: "memory", partitions: 3 }, { onCommitPhase: (phase) => (decided += phase === "decided" ? 1 : 0) });
  });

  afterAll(async () => {
    await db?.close();
  });

  it("counts each write transaction once by outcome, across partitions, and no read", async () => {
    expect((await db.statistics()).transactions).toEqual({ committed: 0, aborted: 0, commitAnomalies: 0 });
    // Enough nodes in one transaction to touch several partitions: one two-phase commit, counted once.
    await db.run(write(Array.from({ length: 30 }, (_, i) => entry(`n${i}`, addN("Doc", { i }))), []));
    expect(decided).toBe(1);
    await db.importBatch({ nodes: [{ label: "Doc", props: {} }, { label: "Doc", props: {} }], edges: [{ label: "Next", from: { batch: 0 }, to: { batch: 1 }, props: {} }] });
    await db.run(readOne(count(allNodes())));
    await expect(db.run(writeOne(addE(nodes({ ids: ["999999"] }), "Next", { ids: ["999998"] })))).rejects.toMatchObject({ code: "node_not_found" });
    await expect(db.importBatch({ nodes: [], edges: [{ label: "Next", from: { id: "999999" }, to: { id: "999998" }, props: {} }] })).rejects.toThrow();
    expect((await db.statistics()).transactions).toEqual({ committed: 2, aborted: 2, commitAnomalies: 0 });
  });

  it("reports every partition's map, pages and readers", async () => {
    const { partitions } = await db.statistics();
    expect(partitions.map((storage) => storage.partition)).toEqual([0, 1, 2]);
    for (const storage of partitions) {
      expect(storage.mapSizeBytes).toBeGreaterThan(0);
      expect(storage.usedBytes).toBeGreaterThan(0);
      expect(storage.usedBytes).toBeLessThanOrEqual(storage.mapSizeBytes);
      expect(storage.freePages).toBeGreaterThanOrEqual(0);
      expect(storage.readers).toBeGreaterThanOrEqual(0);
    }
  });

  it("is refused once the handle is closed", async () => {
    const closed = await Database.open({ storage: "memory" });
    await closed.close();
    await expect(closed.statistics()).rejects.toMatchObject({ code: "closed" });
  });
});
