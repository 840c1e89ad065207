/**
 * Bulk import's edge endpoints named by ID take the forms IDs take everywhere: a bigint, a safe integer or a decimal
 * string. A JS number used to reach the partition map as it was and fail as `internal`; anything that is not an ID
 * is `invalid_id` naming the row and field, with nothing of the batch written.
 */
import { afterEach, describe, expect, it } from "vitest";
import { open, type Database } from "../../runtime/embedded.js";
import { ImportRowError } from "../../cluster/bulk-import.js";
import { expectCode } from "../helpers/engine.js";

const SCHEMA = `
N::User { name: String }
E::Follows { From: User, To: User }
QUERY Follows() => pairs <- E<Follows>::{from: _::FromN::ID, to: _::ToN::ID} RETURN pairs
QUERY Count() => users <- N<User>::COUNT edges <- E<Follows>::COUNT RETURN users, edges
`;

const opened: Database[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()));
});

async function withTwoUsers(): Promise<Database> {
  const db = await open({ storage: "memory", schema: SCHEMA });
  opened.push(db);
  await db.importBatch({ nodes: [{ label: "User", props: { name: "a" } }, { label: "User", props: { name: "b" } }], edges: [] });
  return db;
}

describe("importBatch endpoints by ID", () => {
  it("takes a safe integer, a decimal string and a bigint", async () => {
    const db = await withTwoUsers();
    const edges = [
      { label: "Follows", from: { id: 1 }, to: { id: "2" }, props: {} },
      { label: "Follows", from: { id: 2n }, to: { id: 1 }, props: {} },
    ];
    expect((await db.importBatch({ nodes: [], edges })).edgeIds).toHaveLength(2);
    expect(await db.query("Follows", {})).toEqual({ pairs: [{ from: "1", to: "2" }, { from: "2", to: "1" }] });
  });

  it("refuses anything else as invalid_id naming the row and field, and writes nothing", async () => {
    const db = await withTwoUsers();
    for (const bad of [-1, 1.5, 2 ** 60, "x", "-3"]) {
      const edges = [
        { label: "Follows", from: { id: 1 }, to: { id: 2 }, props: {} },
        { label: "Follows", from: { id: 1 }, to: { id: bad }, props: {} },
      ];
      const error = await expectCode(db.importBatch({ nodes: [{ label: "User", props: { name: "c" } }], edges }), "invalid_id");
      expect(error).toBeInstanceOf(ImportRowError);
      expect(error).toMatchObject({ section: "edges", index: 1 });
      expect(error.message).toContain("edges[1].to.id");
    }
    expect(await db.query("Count", {})).toEqual({ users: 2, edges: 0 });
  });
});
