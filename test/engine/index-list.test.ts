/**
 * What `db.indexes()` lists (docs/INDEXES.md): one entry per index of every family, told apart by `family`. Only a
 * secondary entry has `unique` and `type` (its field's declared scalar type, as persisted); a vector or text entry
 * has its own family's options and no `type` key at all, so no caller reads `type: undefined` and takes it for an
 * answer. Over two partitions the merge keeps each family's keys.
 */
import { describe, expect, it } from "vitest";
import { open, type IndexInfo } from "../../index.js";

const SCHEMA = `
N::Doc {
    TEXT INDEX(positions: true) body: String,
    VECTOR INDEX(dimension: 2, metric: euclidean) embedding: [F32],
    UNIQUE INDEX handle: String,
    INDEX age: U8,
}
V::Chunk { text: String }
QUERY Add(body: String, embedding: [F32], handle: String, age: U8) =>
    d <- AddN<Doc>({body: body, embedding: embedding, handle: handle, age: age})
    RETURN d
`;

/** Built at open over an empty database, so active at once; writes after that are not build counters. */
const PROGRESS = { state: "active", origin: "schema", entities: 0, bytes: 0, operations: 0 };

/** The options an entry holds besides its name, kind, label, field, state, origin and counters. */
function options(entry: IndexInfo): Record<string, unknown> {
  switch (entry.family) {
    case "secondary":
      return { unique: entry.unique, type: entry.type };
    case "vector":
      return { metric: entry.metric, dimension: entry.dimension, tenant: entry.tenant };
    case "text":
      return { analyzer: entry.analyzer, positions: entry.positions, tenant: entry.tenant };
    default: {
      const unreachable: never = entry;
      throw new Error(`unknown index family ${JSON.stringify(unreachable)}`);
    }
  }
}

describe("db.indexes()", () => {
  it.each([1, 2])("lists each family with its own keys and no type outside secondary (%i partitions)", async (partitions) => {
    const db = await open({ storage: "memory", partitions, schema: SCHEMA });
    try {
      await db.query("Add", { body: "one", embedding: [1, 0], handle: "a", age: 3 });
      await db.query("Add", { body: "two", embedding: [0, 1], handle: "b", age: 4 });
      const byName = new Map(db.indexes().map((entry) => [entry.name, entry]));
      expect([...byName.keys()].sort()).toEqual(["Chunk.$vector", "Doc.age", "Doc.body", "Doc.embedding", "Doc.handle"]);
      expect(byName.get("Doc.age")).toStrictEqual({
        family: "secondary", kind: "node", label: "Doc", field: "age", name: "Doc.age", unique: false, type: "U8",
        ...PROGRESS,
      });
      expect(byName.get("Doc.handle")).toMatchObject({ family: "secondary", unique: true, type: "String" });
      expect(byName.get("Doc.embedding")).toStrictEqual({
        family: "vector", kind: "node", label: "Doc", field: "embedding", name: "Doc.embedding", metric: "euclidean", dimension: 2,
        ...PROGRESS,
      });
      expect(byName.get("Doc.body")).toStrictEqual({
        family: "text", kind: "node", label: "Doc", field: "body", name: "Doc.body", analyzer: "standard", positions: true,
        ...PROGRESS,
      });
      expect(byName.get("Chunk.$vector")).toMatchObject({ family: "vector", kind: "vector", metric: "cosine" });
      for (const entry of byName.values()) {
        expect("type" in entry, entry.name).toBe(entry.family === "secondary");
        expect("unique" in entry, entry.name).toBe(entry.family === "secondary");
        expect(Object.values(options(entry)).some((value) => value !== undefined), entry.name).toBe(true);
      }
      expect(await db.indexStatuses()).toStrictEqual(db.indexes());
    } finally {
      await db.close();
    }
  });
});
