/**
 * The index operations of the operation tree (cluster/index-operations.ts): `create_index` builds an index the schema
 * does not declare over existing data (constructing, then active, then used by the planner), a UNIQUE build over
 * duplicates ends blocked and `retry_index_operation` restarts it once they are gone, `abort_index_operation` ends a
 * constructing or blocked build (and answers an aborted one again by its operation ID), `create_index` in HelixDB's
 * form with `if_not_exists` false refuses an existing index, `drop_index` removes a runtime index, a restart keeps it, and every refusal changes nothing.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { BACKENDS, DISK_BACKENDS, TestDatabase, expectCode, expectRefused, removeTempDirs } from "../helpers/engine.js";
import { addE, addN, and, drop, entry, eq, forEach, nodesById, nodesWhere, edgesWhere, prop, read, readOne, ref, write, writeOne, type Entry, type TreeNode } from "../helpers/tree.js";

afterAll(removeTempDirs);

const SCHEMA = `
N::User { UNIQUE INDEX handle: String, age: I64, email: String, tags: [String] }
N::Movie { title: String }
E::Rated { From: User, To: Movie, Properties: { stars: I64 } }
`;
/** One record per build chunk, so a build over a few hundred records stays constructing long enough to watch. */
const CHUNK_ENTITIES = 1;
/** Polls of a build before a test gives up on it. */
const POLLS_MAX = 10_000;

type Answer = { index: string; kind: string; state: string; entities: number; bytes: number; operations: number; reason?: string; message?: string };

const op = (tag: string, body: Record<string, unknown>): TreeNode => ({ [tag]: body } as TreeNode);
const index = (tag: string, body: Record<string, unknown>) => writeOne(op(tag, body));
const users = (predicate: TreeNode): TreeNode => nodesWhere(and(eq(prop("$label"), "User"), predicate));

describe.each(BACKENDS)("index operations ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: SCHEMA }, { indexBuildChunkEntities: CHUNK_ENTITIES });
  });
  afterEach(async () => t.destroy());

  async function answer(tag: string, body: Record<string, unknown>): Promise<Answer> {
    return (await t.run(index(tag, body))).r as Answer;
  }

  async function settled(label: string, property: string, kind = "node"): Promise<Answer> {
    for (let poll = 0; poll < POLLS_MAX; poll += 1) {
      const status = await answer("get_index_operation", { label, property, kind });
      if (status.state !== "constructing" && status.state !== "validating") return status;
      await new Promise((resume) => setTimeout(resume, 1));
    }
    throw new Error(`${label}.${property} is still being built`);
  }

  async function seedUsers(count: number, props: (i: number) => Record<string, unknown>): Promise<void> {
    await t.run(write(Array.from({ length: count }, (_, i) => entry(undefined, addN("User", { handle: `h${i}`, ...props(i) }))), []));
  }

  async function explainedAccess(predicate: TreeNode): Promise<{ count: number; access: string; index?: string }> {
    const result = (await t.run({ ...readOne(users(predicate)), explain: true })) as { r: unknown[]; $explain: { access: string; index?: string }[] };
    return { count: result.r.length, access: result.$explain[0].access, index: result.$explain[0].index };
  }

  it("builds an index the schema does not declare over existing data: constructing, then active, then the planner uses it", async () => {
    await seedUsers(120, (i) => ({ age: i % 10, email: `u${i}@x` }));
    expect(await explainedAccess(eq(prop("age"), 3))).toEqual({ count: 12, access: "label_scan", index: undefined });
    const created = await answer("create_index", { label: "User", property: "age", unique: false, kind: "node" });
    expect(created).toMatchObject({ index: "User.age", kind: "node", state: "constructing" });
    const done = await settled("User", "age");
    expect(done).toMatchObject({ index: "User.age", state: "active", entities: 120, operations: 120 });
    expect(done.bytes).toBeGreaterThan(0);
    expect(done.entities).toBeGreaterThanOrEqual(created.entities);
    expect(await explainedAccess(eq(prop("age"), 3))).toEqual({ count: 12, access: "index", index: "User.age" });
    // Writes maintain it from now on.
    await t.run(writeOne(addN("User", { handle: "new", age: 3 })));
    expect(await explainedAccess(eq(prop("age"), 3))).toMatchObject({ count: 13, access: "index" });
    expect(t.db.indexes().find((status) => status.name === "User.age")).toMatchObject({ origin: "runtime", state: "active" });
    // Creating it again answers the same index; `kind` defaults to node.
    expect(await answer("create_index", { label: "User", property: "age" })).toMatchObject({ index: "User.age", state: "active", entities: 120 });
  });

  it("indexes an edge field with kind edge", async () => {
    const made = await t.run(write([entry("u", addN("User", { handle: "a" })), entry("m", addN("Movie", { title: "M" }))], ["u", "m"]));
    const movie = (made.m as { $id: string }[])[0].$id;
    const user = (made.u as { $id: string }[])[0].$id;
    await t.run(writeOne(addE(nodesById(user), "Rated", ref.ids(movie), { stars: 4 })));
    await answer("create_index", { label: "Rated", property: "stars", kind: "edge" });
    expect(await settled("Rated", "stars", "edge")).toMatchObject({ index: "Rated.stars", kind: "edge", state: "active", operations: 1 });
    const result = (await t.run({ ...readOne(edgesWhere(and(eq(prop("$label"), "Rated"), eq(prop("stars"), 4)))), explain: true })) as { r: unknown[]; $explain: { access: string }[] };
    expect(result.r).toHaveLength(1);
    expect(result.$explain[0].access).toBe("index");
    await expectCode(t.run(index("get_index_operation", { label: "Rated", property: "stars" })), "index_not_found");
  });

  it("blocks a UNIQUE build over duplicates, and retry builds it once the duplicate is gone", async () => {
    // The first record of each request goes to partition 0, so on three partitions the two holders share one.
    await seedUsers(30, (i) => ({ age: i, email: i === 0 ? "dup@x" : `u${i}@x` }));
    await t.run(writeOne(addN("User", { handle: "twin", age: 99, email: "dup@x" })));
    await answer("create_index", { label: "User", property: "email", unique: true });
    const blocked = await settled("User", "email");
    expect(blocked).toMatchObject({ state: "blocked", reason: "unique_violation" });
    expect(blocked.message).toContain("User.email must be unique");
    // Retrying without fixing anything blocks again; the counters go on growing.
    await answer("retry_index_operation", { label: "User", property: "email" });
    const again = await settled("User", "email");
    expect(again).toMatchObject({ state: "blocked", reason: "unique_violation" });
    expect(again.entities).toBeGreaterThan(blocked.entities);
    // Duplicates may still be written while it is blocked; remove them, then retry.
    await t.run(writeOne(drop(users(eq(prop("handle"), "twin")))));
    const retried = await answer("retry_index_operation", { label: "User", property: "email" });
    expect(retried.reason).toBeUndefined();
    expect(await settled("User", "email")).toMatchObject({ state: "active" });
    expect(await explainedAccess(eq(prop("email"), "u3@x"))).toMatchObject({ count: 1, access: "index", index: "User.email" });
    // Active, the runtime UNIQUE index is enforced like the schema's, across partitions too.
    await expectRefused(t, writeOne(addN("User", { handle: "late", email: "u3@x" })), "unique_violation");
    // Retry of an index that is not blocked answers it unchanged.
    expect(await answer("retry_index_operation", { label: "User", property: "email" })).toMatchObject({ state: "active" });
  });

  it("blocks a UNIQUE build whose duplicate holders are on different partitions", async () => {
    // One request's records spread over the partitions: on three, "dup@x" is held on two of them, and each partition
    // alone sees no duplicate; the coordinator's check across partitions does (cluster/unique-builds.ts).
    await seedUsers(6, (i) => ({ age: i, email: i === 0 || i === 4 ? "dup@x" : `u${i}@x` }));
    await answer("create_index", { label: "User", property: "email", unique: true });
    const blocked = await settled("User", "email");
    expect(blocked).toMatchObject({ state: "blocked", reason: "unique_violation" });
    expect(blocked.message).toMatch(/User\.email must be unique, but records \d+ and \d+ share a value/);
    // Blocked everywhere: the planner does not use it, and a duplicate is still accepted.
    expect(await explainedAccess(eq(prop("email"), "u3@x"))).toMatchObject({ count: 1, access: "label_scan" });
    await t.run(writeOne(drop(users(eq(prop("age"), 4)))));
    await answer("retry_index_operation", { label: "User", property: "email" });
    expect(await settled("User", "email")).toMatchObject({ state: "active" });
    await expectRefused(t, writeOne(addN("User", { handle: "late", email: "dup@x" })), "unique_violation");
  });

  it("aborts a constructing build: its entries go, and the index is gone", async () => {
    await seedUsers(300, (i) => ({ age: i, email: `u${i}@x` }));
    const created = await answer("create_index", { label: "User", property: "age" });
    expect(created.state).toBe("constructing");
    const aborted = await answer("abort_index_operation", { label: "User", property: "age" });
    expect(aborted).toMatchObject({ index: "User.age", state: "aborted" });
    await expectCode(t.run(index("get_index_operation", { label: "User", property: "age" })), "index_not_found");
    expect(t.db.indexes().map((status) => status.name)).not.toContain("User.age");
    expect(await explainedAccess(eq(prop("age"), 3))).toMatchObject({ count: 1, access: "label_scan" });
    // It can be created again from scratch.
    await answer("create_index", { label: "User", property: "age" });
    expect(await settled("User", "age")).toMatchObject({ state: "active", entities: 300 });
  });

  it("aborts a blocked build, as HelixDB aborts any build not yet finished", async () => {
    await seedUsers(5, (i) => ({ age: i, email: "dup@x" }));
    await answer("create_index", { label: "User", property: "email", unique: true });
    expect(await settled("User", "email")).toMatchObject({ state: "blocked", reason: "unique_violation" });
    expect(await answer("abort_index_operation", { label: "User", property: "email" })).toMatchObject({ index: "User.email", state: "aborted" });
    expect(t.db.indexes().map((status) => status.name)).not.toContain("User.email");
  });

  it("in HelixDB's form, refuses an existing index with if_not_exists false, building or built, and converges on an aborted build", async () => {
    await seedUsers(300, (i) => ({ age: i }));
    const spec = { node_equality: { label: "User", property: "age" } };
    const created = (await t.run(index("create_index", { spec, if_not_exists: false }))).r as { kind: string; operation_id: string; state: string };
    expect(created).toMatchObject({ kind: "accepted", state: "constructing" });
    await expectRefused(t, index("create_index", { spec, if_not_exists: false }), "index_already_exists");
    const byId = { operation_id: created.operation_id };
    const aborted = (await t.run(index("abort_index_operation", byId))).r;
    expect(aborted).toMatchObject({ status: "aborted", operation_kind: "build", stage: "aborting_finalize", state: "aborted", index: "User.age" });
    // HelixDB keeps an aborted build's operation: aborting, reading or retrying it again answers it as aborted.
    expect((await t.run(index("abort_index_operation", byId))).r).toEqual(aborted);
    expect((await t.run(index("get_index_operation", byId))).r).toEqual(aborted);
    expect((await t.run(index("retry_index_operation", byId))).r).toEqual(aborted);
    expect(t.db.indexes().map((status) => status.name)).not.toContain("User.age");
    // Created again, the same operation ID names the new build, which can finish and then not be aborted.
    await t.run(index("create_index", { spec, if_not_exists: false }));
    expect(await settled("User", "age")).toMatchObject({ state: "active", entities: 300 });
    expect((await t.run(index("get_index_operation", byId))).r).toMatchObject({ status: "succeeded", state: "active" });
    await expectRefused(t, index("abort_index_operation", byId), "index_operation_not_abortable");
    await expectRefused(t, index("create_index", { spec, if_not_exists: false }), "index_already_exists");
  });

  it("drops a runtime index; the planner goes back to the label scan", async () => {
    await seedUsers(20, (i) => ({ age: i % 4 }));
    await answer("create_index", { label: "User", property: "age" });
    const active = await settled("User", "age");
    expect(await answer("drop_index", { label: "User", property: "age" })).toEqual({ ...active, state: "dropped" });
    await expectCode(t.run(index("get_index_operation", { label: "User", property: "age" })), "index_not_found");
    expect(await explainedAccess(eq(prop("age"), 1))).toMatchObject({ count: 5, access: "label_scan" });
    await expectCode(t.run(index("drop_index", { label: "User", property: "age" })), "index_not_found");
  });

  it("refuses bad index operations with stable codes, and nothing changes", async () => {
    await seedUsers(10, (i) => ({ age: i }));
    await answer("create_index", { label: "User", property: "age" });
    await settled("User", "age");
    const refused: [unknown, string][] = [
      [index("create_index", { label: "Nobody", property: "age" }), "unknown_label"],
      [index("create_index", { label: "User", property: "age", kind: "edge" }), "unknown_label"],
      [index("create_index", { label: "User", property: "missing" }), "invalid_field"],
      [index("create_index", { label: "User", property: "tags" }), "invalid_field"],
      [index("create_index", { label: "User", property: "age", unique: true }), "index_definition_conflict"],
      [index("create_index", { label: "User", property: "handle", unique: false }), "index_definition_conflict"],
      [index("create_index", { label: "User" }), "malformed_tree"],
      [index("create_index", { label: "User", property: "age", kind: "relation" }), "malformed_tree"],
      [index("create_index", { label: "User", property: "age", unique: "yes" }), "malformed_tree"],
      [index("drop_index", { label: "User", property: "age", unique: true }), "malformed_tree"],
      [index("get_index_operation", { label: "User", property: "email" }), "index_not_found"],
      [index("retry_index_operation", { label: "User", property: "email" }), "index_not_found"],
      [index("drop_index", { label: "User", property: "handle" }), "unsupported_operation"],
      [index("abort_index_operation", { label: "User", property: "handle" }), "unsupported_operation"],
      [index("abort_index_operation", { label: "User", property: "age" }), "index_operation_not_abortable"],
      [index("create_index", { spec: { node_equality: { label: "User", property: "age" } }, if_not_exists: false }), "index_already_exists"],
      [read([entry("r", op("retry_index_operation", { label: "User", property: "age" }))], ["r"]), "write_in_read"],
      [write([entry("r", op("create_index", { label: "User", property: "email" })), entry("n", addN("User", { handle: "x" }))], ["r"]), "malformed_tree"],
      [write([forEach("rows", [entry(undefined, op("drop_index", { label: "User", property: "age" }))])], [], { rows: [{}] }), "malformed_tree"],
      [writeOne({ count: { input: op("get_index_operation", { label: "User", property: "age" }) } } as TreeNode), "malformed_tree"],
      [write([{ query: { name: "r", root: op("drop_index", { label: "User", property: "age" }), condition: "prev_not_empty" } } as Entry], ["r"]), "malformed_tree"],
      [write([entry("r", op("get_index_operation", { label: "User", property: "age" }))], ["nope"]), "unknown_variable"],
    ];
    for (const [request, code] of refused) {
      const before = t.db.indexes();
      await expectRefused(t, request, code as Parameters<typeof expectRefused>[2]);
      expect(t.db.indexes()).toEqual(before);
    }
    expect(await answer("get_index_operation", { label: "User", property: "age" })).toMatchObject({ state: "active", entities: 10 });
  });
});

describe.each(DISK_BACKENDS)("runtime indexes across a restart ($name)", (backend) => {
  it("keeps a runtime index (and resumes its build) where the schema reconcile drops undeclared ones", async () => {
    const t = await TestDatabase.open(backend, { schema: SCHEMA }, { indexBuildChunkEntities: CHUNK_ENTITIES });
    try {
      await t.run(write(Array.from({ length: 200 }, (_, i) => entry(undefined, addN("User", { handle: `h${i}`, age: i % 5 }))), []));
      expect(((await t.run(index("create_index", { label: "User", property: "age" }))).r as Answer).state).toBe("constructing");
      await t.reopen();
      let status = (await t.run(index("get_index_operation", { label: "User", property: "age" }))).r as Answer;
      for (let poll = 0; status.state === "constructing" && poll < POLLS_MAX; poll += 1) {
        await new Promise((resume) => setTimeout(resume, 1));
        status = (await t.run(index("get_index_operation", { label: "User", property: "age" }))).r as Answer;
      }
      expect(status).toMatchObject({ state: "active", entities: 200, operations: 200 });
      await t.reopen();
      expect(t.db.indexes().find((s) => s.name === "User.age")).toMatchObject({ origin: "runtime", state: "active" });
      const result = (await t.run({ ...readOne(users(eq(prop("age"), 2))), explain: true })) as { r: unknown[]; $explain: { access: string }[] };
      expect(result.r).toHaveLength(40);
      expect(result.$explain[0].access).toBe("index");
      // Once the schema declares it alike, it is the schema's: drop_index no longer applies.
      await t.reopen({ schema: SCHEMA.replace("age: I64", "INDEX age: I64") });
      expect(t.db.indexes().find((s) => s.name === "User.age")).toMatchObject({ origin: "schema", state: "active" });
      await expectCode(t.run(index("drop_index", { label: "User", property: "age" })), "unsupported_operation");
    } finally {
      await t.destroy();
    }
  });

  it("answers an aborted build by its operation ID after a reopen, until the index is created again", async () => {
    const t = await TestDatabase.open(backend, { schema: SCHEMA }, { indexBuildChunkEntities: CHUNK_ENTITIES });
    try {
      await t.run(write(Array.from({ length: 300 }, (_, i) => entry(undefined, addN("User", { handle: `h${i}`, age: i }))), []));
      const spec = { node_equality: { label: "User", property: "age" } };
      const created = (await t.run(index("create_index", { spec }))).r as { kind: string; operation_id: string };
      expect(created.kind).toBe("accepted");
      const byId = { operation_id: created.operation_id };
      const aborted = (await t.run(index("abort_index_operation", byId))).r;
      expect(aborted).toMatchObject({ status: "aborted", state: "aborted", index: "User.age" });
      // Kept in the partitions' LMDB with the index's drop: a new process answers it as the abort did.
      await t.reopen();
      expect((await t.run(index("get_index_operation", byId))).r).toEqual(aborted);
      expect((await t.run(index("retry_index_operation", byId))).r).toEqual(aborted);
      expect((await t.run(index("abort_index_operation", byId))).r).toEqual(aborted);
      expect(t.db.indexes().map((status) => status.name)).not.toContain("User.age");
      // Created again, the ID names the new build, across a reopen too; dropped, it names nothing.
      await t.run(index("create_index", { spec }));
      await t.reopen();
      expect((await t.run(index("get_index_operation", byId))).r).toMatchObject({ state: expect.not.stringMatching(/^aborted$/), index: "User.age" });
      await t.run(index("drop_index", { spec }));
      await t.reopen();
      await expectCode(t.run(index("get_index_operation", byId)), "index_operation_not_found");
    } finally {
      await t.destroy();
    }
  });
});
