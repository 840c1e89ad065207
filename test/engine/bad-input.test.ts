/**
 * Bad input gets a stable error code and leaves the data as it was (DESIGN.md, "What a change must keep true").
 * Every case snapshots the whole database (records and both sides of every adjacency) before and after the failed
 * request and requires the two to be equal. Runs on every backend, so the three-partition case shows that a failure
 * late in a batch also rolls back writes that would have gone to other partitions.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ErrorCode } from "../../protocol/errors.js";
import { BACKENDS, TestDatabase, expectCode, ids, removeTempDirs, snapshot, type Contents } from "../helpers/engine.js";
import {
  addE,
  addN,
  allNodes,
  context,
  count,
  drop,
  entry,
  eq,
  existsP,
  forEach,
  nodes,
  nodesById,
  nodesOf,
  nodesVar,
  out,
  param,
  prop,
  read,
  readOne,
  ref,
  removeProperty,
  setProperty,
  update,
  where,
  write,
  writeOne,
  type Request,
} from "../helpers/tree.js";

afterAll(removeTempDirs);

const SCHEMA = `
N::User { REQUIRED name: String, age: U32 DEFAULT 0, active: Boolean, born: Date }
N::Post { title: String }
E::Follows { From: User, To: User, Properties: { since: Date } }
E::Wrote { From: User, To: Post }
`;

/** Out-of-range or malformed IDs, as JSON would carry them. */
const BAD_IDS: readonly (string | number)[] = ["18446744073709551616", -1, 1.5, "abc", "-1", "1e3", " 7", "", 2 ** 64, 2 ** 53];

/** A valid write tree with `mutate` applied to one part of its JSON. */
function corrupt(mutate: (request: Record<string, any>) => void): unknown {
  const request = JSON.parse(JSON.stringify(writeOne(addN("User", { name: "Zed" })))) as Record<string, any>;
  mutate(request);
  return request;
}

describe.each(BACKENDS)("bad input on $name", (backend) => {
  let t: TestDatabase;
  let s: { alice: string; bob: string; post: string };
  let before: Contents;

  /** Asserts `request` fails with `code` and that nothing at all changed. */
  async function refused(request: Request | unknown, code: ErrorCode): Promise<void> {
    await expectCode(t.run(request), code);
    expect(await snapshot(t.db)).toEqual(before);
  }

  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: SCHEMA });
    const seeded = await t.run(
      write(
        [
          entry("alice", addN("User", { name: "Alice", age: 30 })),
          entry("bob", addN("User", { name: "Bob", active: true })),
          entry("post", addN("Post", { title: "Hello" })),
          entry(undefined, addE(nodesVar("alice"), "Follows", ref.var("bob"), { since: "2024-01-01" })),
          entry(undefined, addE(nodesVar("alice"), "Wrote", ref.var("post"))),
        ],
        ["alice", "bob", "post"],
      ),
    );
    s = { alice: ids(seeded.alice)[0], bob: ids(seeded.bob)[0], post: ids(seeded.post)[0] };
    before = await snapshot(t.db);
    expect(before.nodes).toHaveLength(3);
    expect(before.edges).toHaveLength(2);
  });

  afterEach(async () => {
    // Whatever was refused, the database still takes a valid write afterwards.
    const added = await t.run(writeOne(addN("User", { name: "After" })));
    expect(ids(added.r)).toHaveLength(1);
    await t.close();
  });

  describe("schema violations", () => {
    it("an unknown label is unknown_label", async () => {
      await refused(writeOne(addN("Ghost")), "unknown_label");
      await refused(writeOne(addN("Ghost", { name: "x" })), "unknown_label");
      await refused(writeOne(addE(nodesById(s.alice), "Haunts", ref.ids(s.bob))), "unknown_label");
    });

    it("a property of the wrong type is invalid_type", async () => {
      await refused(writeOne(addN("User", { name: 42 })), "invalid_type");
      await refused(writeOne(addN("User", { name: "X", active: "yes" })), "invalid_type");
      await refused(writeOne(addN("User", { name: "X", age: true })), "invalid_type");
      await refused(writeOne(addN("User", { name: "X", age: 1.5 })), "invalid_type");
      await refused(writeOne(addN("User", { name: "X", born: 12 })), "invalid_type");
      await refused(writeOne(addE(nodesById(s.alice), "Follows", ref.ids(s.bob), { since: false })), "invalid_type");
    });

    it("a malformed or out-of-range value is invalid_value", async () => {
      await refused(writeOne(addN("User", { name: "X", born: "yesterday" })), "invalid_value");
      await refused(writeOne(addN("User", { name: "X", born: "2023-02-29" })), "invalid_value");
      await refused(writeOne(addN("User", { name: "X", age: -1 })), "invalid_value");
      await refused(writeOne(addN("User", { name: "X", age: 2 ** 32 })), "invalid_value");
    });

    it("a missing REQUIRED property is missing_property", async () => {
      await refused(writeOne(addN("User")), "missing_property");
      await refused(writeOne(addN("User", { age: 3 })), "missing_property");
      await refused(writeOne(addN("User", { name: null })), "missing_property");
    });

    it("an unknown field in an update is invalid_field", async () => {
      await refused(writeOne(update(nodesById(s.alice), { shoe: 42 })), "invalid_field");
      await refused(writeOne(update(nodesById(s.alice), { age: 31, shoe: 42 })), "invalid_field");
      await refused(writeOne(setProperty(nodesById(s.alice), "shoe", 42)), "invalid_field");
      await refused(writeOne(update(nodesById(s.alice), { $label: "Post" })), "invalid_field");
      await refused(writeOne(addN("User", { name: "X", shoe: 42 })), "invalid_field");
      await refused(writeOne(update(nodesOf("User"), { title: "not a User field" })), "invalid_field");
    });

    it("a wrongly typed value in an update is invalid_type", async () => {
      await refused(writeOne(update(nodesById(s.alice), { age: "thirty" })), "invalid_value");
      await refused(writeOne(update(nodesById(s.alice), { age: false })), "invalid_type");
      await refused(writeOne(update(nodesById(s.alice), { name: 7 })), "invalid_type");
      await refused(writeOne(update(nodesOf("User"), { age: 40, active: "no" })), "invalid_type");
      await refused(writeOne(setProperty(nodesById(s.bob), "active", 1)), "invalid_type");
      await refused(writeOne(update(nodesById(s.alice), { age: param("a") })), "missing_parameter");
      await expectCode(t.run(writeOne(update(nodesById(s.alice), { age: param("a") }), { a: "x" })), "invalid_value");
      await expectCode(t.run(writeOne(update(nodesById(s.alice), { age: param("a") }), { a: [1] })), "invalid_type");
      expect(await snapshot(t.db)).toEqual(before);
    });

    it("removing a REQUIRED property is refused", async () => {
      await refused(writeOne(removeProperty(nodesById(s.alice), "name")), "invalid_value");
      await refused(writeOne(update(nodesById(s.alice), { name: null })), "invalid_value");
    });

    it("an edge whose endpoint has the wrong label is edge_endpoint_mismatch", async () => {
      await refused(writeOne(addE(nodesById(s.alice), "Wrote", ref.ids(s.bob))), "edge_endpoint_mismatch");
      await refused(writeOne(addE(nodesById(s.post), "Wrote", ref.ids(s.post))), "edge_endpoint_mismatch");
      await refused(writeOne(addE(nodesById(s.alice), "Follows", ref.ids(s.bob, s.post))), "edge_endpoint_mismatch");
    });
  });

  describe("ids and references", () => {
    it("an out-of-range or malformed id is invalid_id, wherever it appears", async () => {
      for (const bad of BAD_IDS) {
        await refused(readOne(nodesById(bad)), "invalid_id");
        await refused(readOne(nodes(ref.param("id")), { id: bad }), "invalid_id");
        await refused(readOne(nodes(ref.param("id")), { id: [s.alice, bad] }), "invalid_id");
        await refused(writeOne(drop(nodesById(bad))), "invalid_id");
        await refused(writeOne(addE(nodesById(s.alice), "Follows", ref.ids(bad))), "invalid_id");
        await refused(writeOne(addE(nodesById(s.alice), "Follows", ref.param("to")), { to: bad }), "invalid_id");
        // After a write earlier in the same batch.
        await refused(write([entry("n", addN("User", { name: "N" })), entry("m", nodes(ref.param("id")))], ["n", "m"], { id: bad }), "invalid_id");
      }
    });

    it("an edge to a missing node is node_not_found", async () => {
      await refused(writeOne(addE(nodesById(s.alice), "Follows", ref.ids("987654321"))), "node_not_found");
      await refused(writeOne(addE(nodesById(s.alice), "Follows", ref.ids("18446744073709551615"))), "node_not_found");
      await refused(writeOne(addE(nodesById(s.alice), "Follows", ref.param("to")), { to: "5" }), "node_not_found");
      // A node dropped earlier in the same batch no longer exists.
      await refused(write([entry(undefined, drop(nodesById(s.bob))), entry(undefined, addE(nodesById(s.alice), "Follows", ref.ids(s.bob)))], []), "node_not_found");
    });

    it("an unknown variable is unknown_variable", async () => {
      await refused(readOne(nodesVar("nope")), "unknown_variable");
      await refused(read([entry("a", allNodes())], ["a", "nope"]), "unknown_variable");
      await refused(writeOne(addE(nodesById(s.alice), "Follows", ref.var("nope"))), "unknown_variable");
      await refused(write([entry("a", addN("User", { name: "A" })), entry(undefined, drop(nodesVar("nope")))], []), "unknown_variable");
    });

    it("a missing parameter is missing_parameter", async () => {
      await refused(readOne(nodes(ref.param("p"))), "missing_parameter");
      await refused(readOne(where(nodesOf("User"), eq(prop("name"), param("who")))), "missing_parameter");
      await refused(writeOne(addN("User", { name: param("name") })), "missing_parameter");
      await refused(writeOne(addE(nodesById(s.alice), "Follows", ref.param("to"))), "missing_parameter");
      await refused(write([forEach("rows", [entry(undefined, addN("User", { name: param("name") }))])], []), "missing_parameter");
      await refused(write([forEach("rows", [entry(undefined, addN("User", { name: param("name") }))])], [], { rows: [{ name: "ok" }, {}] }), "missing_parameter");
    });
  });

  describe("malformed trees", () => {
    it("a request without request_type, or whose type does not match its batch, is malformed_tree", async () => {
      await refused(corrupt((r) => delete r.request_type), "malformed_tree");
      await refused(corrupt((r) => (r.request_type = "read_write")), "malformed_tree");
      await refused(corrupt((r) => (r.request_type = "Write")), "malformed_tree");
      await refused(corrupt((r) => (r.request_type = "read")), "malformed_tree");
      await refused({ ...readOne(allNodes()), request_type: "write" }, "malformed_tree");
      await refused(corrupt((r) => delete r.query), "malformed_tree");
      await refused(corrupt((r) => (r.query = { write: r.query.write, read: r.query.write })), "malformed_tree");
      await refused(corrupt((r) => (r.query.write.entries = [])), "malformed_tree");
      await refused(corrupt((r) => (r.extra = true)), "malformed_tree");
      await refused(null, "malformed_tree");
      await refused([], "malformed_tree");
      await refused("write", "malformed_tree");
    });

    it("an unknown step, or a step with an extra field, is malformed_tree", async () => {
      await refused(readOne({ frobnicate: { input: allNodes() } } as never), "malformed_tree");
      await refused(readOne({ out: { input: allNodes(), label: "Follows", hops: 2 } }), "malformed_tree");
      await refused(writeOne({ add_n: { label: "User", properties: [], id: "7" } }), "malformed_tree");
      await refused(readOne({ out: { input: allNodes() }, in: { input: allNodes() } }), "malformed_tree");
      await refused(readOne({ out: { label: "Follows" } }), "malformed_tree");
      await refused(writeOne(addN("Bad Label")), "malformed_tree");
      await refused(corrupt((r) => (r.query.write.entries[0] = { query: { name: "a", root: addN("User", { name: "Z" }), when: 1 } })), "malformed_tree");
      await refused(corrupt((r) => (r.query.write.entries[0] = { statement: {} })), "malformed_tree");
    });

    it("a bad literal is malformed_tree", async () => {
      const withValue = (value: unknown): unknown => corrupt((r) => (r.query.write.entries[0].query.root.add_n.properties[0][1] = value));
      await refused(withValue({ value: { i65: 3 } }), "malformed_tree");
      await refused(withValue({ value: { i64: 1.5 } }), "malformed_tree");
      await refused(withValue({ value: { i64: "18446744073709551616" } }), "malformed_tree");
      await refused(withValue({ value: { string: 5 } }), "malformed_tree");
      await refused(withValue({ value: { bool: "true" } }), "malformed_tree");
      await refused(withValue({ value: { date_time: "not a date" } }), "malformed_tree");
      await refused(withValue({ value: { string: "a", i64: 1 } }), "malformed_tree");
      await refused(withValue({ value: "Alice" }), "malformed_tree");
      await refused(withValue("Alice"), "malformed_tree");
      await refused(withValue({ literal: { string: "Alice" } }), "malformed_tree");
      await refused(readOne(where(nodesOf("User"), { eq: { left: { property: "name" }, right: { constant: { f64: "x" } } } })), "malformed_tree");
      await refused(readOne(where(nodesOf("User"), { eq: { left: { property: "name" } } })), "malformed_tree");
    });

    it("a name returned twice or a property assigned twice is malformed_tree", async () => {
      await refused(read([entry("a", allNodes())], ["a", "a"]), "malformed_tree");
      await refused(corrupt((r) => r.query.write.entries[0].query.root.add_n.properties.push(["name", { value: { string: "Twice" } }])), "malformed_tree");
    });

    it("a batch or tree beyond its limits is limit_exceeded", async () => {
      await refused(write(Array.from({ length: 1_001 }, () => entry(undefined, addN("User", { name: "Many" }))), []), "limit_exceeded");
      let deep = nodesById(s.alice);
      for (let i = 0; i < 300; i += 1) deep = out(deep, "Follows");
      await refused(readOne(deep), "limit_exceeded");
      await refused(writeOne(drop(deep)), "limit_exceeded");
    });

    it("a mutation in a read batch is write_in_read", async () => {
      await refused(read([entry("a", addN("User", { name: "Sneaky" }))], ["a"]), "write_in_read");
      await refused(read([entry("a", allNodes()), entry(undefined, drop(nodesVar("a")))], []), "write_in_read");
      await refused(readOne(count(update(nodesById(s.alice), { age: 1 }))), "write_in_read");
      // A mutation hidden in a sub-traversal is refused when it runs.
      await refused(readOne(where(nodesOf("User"), existsP(drop(out(context, "Follows"))))), "write_in_read");
    });
  });

  describe("one transaction per invocation", () => {
    it("a failure in the last entry rolls back every earlier entry of the batch", async () => {
      const earlier = [
        entry("c", addN("User", { name: "Carol" })),
        entry("d", addN("User", { name: "Dave" })),
        entry("p", addN("Post", { title: "Draft" })),
        entry(undefined, addE(nodesVar("c"), "Follows", ref.var("d"))),
        entry(undefined, addE(nodesVar("d"), "Follows", ref.ids(s.alice))),
        entry(undefined, addE(nodesById(s.bob), "Follows", ref.var("c"))),
        entry(undefined, update(nodesById(s.alice), { age: 99 })),
        entry(undefined, removeProperty(nodesById(s.bob), "active")),
        entry(undefined, drop(out(nodesById(s.alice), "Wrote"))),
      ];
      const lastEntries: [ReturnType<typeof entry>, ErrorCode][] = [
        [entry(undefined, addE(nodesVar("c"), "Follows", ref.ids("987654321"))), "node_not_found"],
        [entry(undefined, addN("Ghost")), "unknown_label"],
        [entry(undefined, update(nodesVar("d"), { shoe: 1 })), "invalid_field"],
        [entry(undefined, addE(nodesVar("c"), "Wrote", ref.var("d"))), "edge_endpoint_mismatch"],
        [entry(undefined, addN("User", { age: 1 })), "missing_property"],
        [entry(undefined, nodesVar("undefined_variable")), "unknown_variable"],
        [entry(undefined, drop(nodes(ref.param("missing")))), "missing_parameter"],
      ];
      for (const [last, code] of lastEntries) await refused(write([...earlier, last], []), code);
      // The same batch without the failing entry commits, so the rollback was not a no-op.
      await t.run(write(earlier, []));
      const after = await snapshot(t.db);
      expect(after.nodes).toHaveLength(before.nodes.length + 2); // +3 created, -1 post dropped
      expect(after.edges).toHaveLength(before.edges.length + 3 - 1);
    });

    it("a failure inside for_each rolls back the rows before it", async () => {
      const rows = [{ name: "r1" }, { name: "r2" }, { name: 3 }];
      await refused(write([forEach("rows", [entry(undefined, addN("User", { name: param("name") }))])], [], { rows }), "invalid_type");
    });
  });
});
