/**
 * Index DDL without a schema (cluster/index-operations.ts `schemalessDefinition`, node/exec/planner.ts's untyped rule),
 * through embedded `open()` without `schema`, on every backend: `create_index` of every family on any label and
 * property with the request's type and options; an untyped secondary index answers exactly what a label scan
 * answers, a value of another kind included (matching nothing, as HelixDB v3 compares, or a date compared after
 * alignment); UNIQUE
 * holds on one partition and across three; and what cannot be indexed is refused with a stable code, changing nothing.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { BACKENDS, TestDatabase, expectCode, expectRefused, removeTempDirs } from "../helpers/engine.js";
import { addN, and, between, entry, eq, gt, isIn, lit, lt, nodesWhere, prop, readOne, valueMap, write, writeOne, type TreeNode } from "../helpers/tree.js";

afterAll(removeTempDirs);

type Answer = { index: string; kind: string; state: string };
/** Polls of a build before a test gives up on it. */
const POLLS_MAX = 10_000;

const createIndex = (body: Record<string, unknown>) => writeOne({ create_index: body } as TreeNode);
const users = (predicate: TreeNode): TreeNode => nodesWhere(and(eq(prop("$label"), "User"), predicate));

describe.each(BACKENDS)("index DDL without a schema ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend);
  });
  afterEach(async () => t.destroy());

  async function create(body: Record<string, unknown>): Promise<Answer> {
    return (await t.run(createIndex(body))).r as Answer;
  }

  /** Waits until the index's build is over (it builds in the background over existing records). */
  async function settled(label: string, property: string): Promise<Answer> {
    for (let poll = 0; poll < POLLS_MAX; poll += 1) {
      const status = (await t.run(writeOne({ get_index_operation: { label, property } } as TreeNode))).r as Answer;
      if (status.state !== "constructing" && status.state !== "validating") return status;
      await new Promise((resume) => setTimeout(resume, 1));
    }
    throw new Error(`${label}.${property} is still being built`);
  }

  /** The handles of the users a predicate selects, and how the source step found its candidates. */
  async function handles(predicate: TreeNode): Promise<{ handles: unknown[]; access: string }> {
    const result = (await t.run({ ...readOne(valueMap(users(predicate), ["handle"])), explain: true })) as { r: { handle: unknown }[]; $explain: { access: string }[] };
    return { handles: result.r.map((row) => row.handle).sort(), access: result.$explain[0].access };
  }

  async function seed(ages: readonly unknown[]): Promise<void> {
    await t.run(write(ages.map((age, i) => entry(undefined, addN("User", { handle: `h${i}`, age }))), []));
  }

  it("creates an index of every family from the request alone, and lists each with its options", async () => {
    expect(await create({ label: "User", property: "age", type: "range" })).toMatchObject({ index: "User.age", kind: "node", state: "active" });
    expect(await create({ label: "User", property: "handle", type: "unique" })).toMatchObject({ index: "User.handle", state: "active" });
    expect(await create({ label: "Follows", property: "since", type: "equality", kind: "edge" })).toMatchObject({ index: "Follows.since", kind: "edge" });
    await create({ label: "Doc", property: "embedding", type: "vector", metric: "euclidean", dimension: 3, tenant_property: "org" });
    await create({ label: "Doc", property: "body", type: "text", analyzer: "standard_stem_en", positions: true, tenant_property: "tenant_id" });
    await create({ label: "Chunk", property: "$vector", type: "vector", kind: "vector" });
    const listed = t.db.indexes().map(({ entities: _e, bytes: _b, operations: _o, ...definition }) => definition);
    expect(listed).toEqual(
      expect.arrayContaining([
        { family: "secondary", kind: "node", label: "User", field: "age", name: "User.age", unique: false, state: "active", origin: "runtime" },
        { family: "secondary", kind: "node", label: "User", field: "handle", name: "User.handle", unique: true, state: "active", origin: "runtime" },
        { family: "secondary", kind: "edge", label: "Follows", field: "since", name: "Follows.since", unique: false, state: "active", origin: "runtime" },
        { family: "vector", kind: "node", label: "Doc", field: "embedding", name: "Doc.embedding", metric: "euclidean", dimension: 3, tenant: "org", state: "active", origin: "runtime" },
        { family: "text", kind: "node", label: "Doc", field: "body", name: "Doc.body", analyzer: "standard_stem_en", positions: true, tenant: "tenant_id", state: "active", origin: "runtime" },
        { family: "vector", kind: "vector", label: "Chunk", field: "$vector", name: "Chunk.$vector", metric: "cosine", state: "active", origin: "runtime" },
      ]),
    );
    expect(listed).toHaveLength(6);
    // The same definition again answers the index as it is; another one is refused until it is dropped.
    expect(await create({ label: "User", property: "age", type: "equality" })).toMatchObject({ index: "User.age", state: "active" });
    await expectCode(t.run(createIndex({ label: "User", property: "age", type: "unique" })), "index_definition_conflict");
  });

  it("answers lookups from an untyped index exactly as the label scan does", async () => {
    await seed([30, 31, 31n, 32.5, 40]);
    const asked: [string, TreeNode, unknown[]][] = [
      ["eq", eq(prop("age"), 31), ["h1", "h2"]],
      ["gt", gt(prop("age"), 31), ["h3", "h4"]],
      ["lt", lt(prop("age"), 31), ["h0"]],
      ["between", between(prop("age"), 31, 33), ["h1", "h2", "h3"]],
      ["is_in", isIn(prop("age"), [30, 40]), ["h0", "h4"]],
    ];
    const scanned = await Promise.all(asked.map(([, predicate]) => handles(predicate)));
    expect(scanned.map((answer) => answer.access)).toEqual(asked.map(() => "label_scan"));
    await create({ label: "User", property: "age", type: "range" });
    expect(await settled("User", "age")).toMatchObject({ state: "active" });
    for (const [[name, predicate, expected], scan] of asked.map((item, i) => [item, scanned[i]] as const)) {
      const indexed = await handles(predicate);
      expect({ name, ...indexed }).toEqual({ name, handles: expected, access: "index" });
      expect(indexed.handles).toEqual(scan.handles);
    }
  });

  it("meets every value of another kind, so the answer stays the scan's", async () => {
    await create({ label: "User", property: "age", type: "equality" });
    await seed([30, 31]);
    expect(await handles(eq(prop("age"), 31))).toEqual({ handles: ["h1"], access: "index" });
    // Strings among the numbers: compared with a number they match nothing, by the indexed lookup as by a scan.
    await t.run(write([entry(undefined, addN("User", { handle: "s", age: "thirty" })), entry(undefined, addN("User", { handle: "t", age: "31" }))], []));
    expect(await handles(eq(prop("age"), 31))).toEqual({ handles: ["h1"], access: "index" });
    expect(await handles(gt(prop("age"), 30))).toEqual({ handles: ["h1"], access: "index" });
    expect(await handles(eq(prop("age"), "31"))).toEqual({ handles: ["t"], access: "index" });
    expect(await handles(and(eq(prop("age"), 31), eq(prop("age"), "31")))).toEqual({ handles: [], access: "index" });
    // A date and an ISO string of the same instant are equal once aligned: the index keeps the date a candidate.
    await create({ label: "User", property: "born", type: "equality" });
    await settled("User", "born");
    await t.run(writeOne(addN("User", { handle: "d", born: lit.date("2001-02-03T00:00:00.000Z") })));
    expect(await handles(eq(prop("born"), "2001-02-03T00:00:00.000Z"))).toEqual({ handles: ["d"], access: "index" });
  });

  it("enforces a unique index without a schema, within a write and against committed records", async () => {
    await create({ label: "User", property: "handle", type: "unique" });
    await t.run(writeOne(addN("User", { handle: "ann" })));
    await expectRefused(t, writeOne(addN("User", { handle: "ann" })), "unique_violation");
    await expectRefused(t, write([entry("a", addN("User", { handle: "bob" })), entry("b", addN("User", { handle: "bob" }))], []), "unique_violation");
    // Records without the field hold nothing, and other labels are not covered.
    await t.run(write([entry("a", addN("User", { name: "x" })), entry("b", addN("User", { name: "y" })), entry("c", addN("Team", { handle: "ann" }))], []));
    expect((await t.run(readOne({ count: { input: users(eq(prop("handle"), "ann")) } } as TreeNode))).r).toBe(1);
  });

  it("refuses a property that is not a top-level identifier, and changes nothing", async () => {
    for (const property of ["addr.city", "$id", "$label", "", "two words"]) {
      await expectRefused(t, createIndex({ label: "User", property, type: "equality" }), "invalid_field");
    }
    await expectRefused(t, createIndex({ label: "Doc", property: "$vector", type: "vector" }), "invalid_field");
    await expectRefused(t, createIndex({ label: "Doc", property: "embedding", type: "vector", tenant_property: "org.id" }), "invalid_field");
    await expectRefused(t, createIndex({ label: "Not A Label", property: "age" }), "malformed_tree");
    expect(t.db.indexes()).toEqual([]);
  });
});
