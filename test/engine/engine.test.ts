/**
 * The engine suite: one set of behaviours, run against every storage backend (memory, disk, and disk over three
 * partitions, where reads scatter/gather and multi-partition writes go through two-phase commit). Queries are
 * operation trees built with test/helpers/tree.ts, so each test reads like the query it sends.
 */
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { Database, open } from "../../runtime/embedded.js";
import { ImportRowError } from "../../cluster/bulk-import.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import { BACKENDS, TestDatabase, expectCode, expectConsistent, ids, pluck, removeTempDirs, snapshot, sorted, partitionOf } from "../helpers/engine.js";
import {
  addE,
  addN,
  allEdges,
  allNodes,
  and,
  both,
  context,
  count,
  countOf,
  dedup,
  drop,
  edgesById,
  edgesOf,
  entry,
  eq,
  exists,
  existsP,
  forEach,
  gt,
  gte,
  id,
  in_,
  inE,
  inN,
  label,
  limit,
  lit,
  lt,
  lte,
  neq,
  nodes,
  nodesById,
  nodesOf,
  nodesVar,
  not,
  or,
  orderBy,
  out,
  outE,
  outN,
  param,
  project,
  prop,
  range,
  read,
  readOne,
  ref,
  removeProperty,
  setProperty,
  skip,
  update,
  valueMap,
  values,
  where,
  write,
  writeOne,
  type Json,
  type TreeNode,
} from "../helpers/tree.js";

afterAll(removeTempDirs);

const ID_MAX = "18446744073709551615";

/** A schema with Date fields (and the other scalar kinds) for schema-mode tests. */
const SCHEMA = `
N::User {
    REQUIRED name: String,
    age: U32 DEFAULT 0,
    active: Boolean,
    born: Date,
    score: F64,
    address: { city: String, zip: U32 }
}
N::Post { title: String, published: Date }
E::Follows { From: User, To: User, Properties: { since: Date, weight: F64 DEFAULT 1.0 } }
E::Wrote { From: User, To: Post }
`;

/** The social graph most tests start from. Follows: a→b, a→c, b→c, c→a, d→c; Likes: a→c; Wrote: a→p1. */
type Ids = Record<"alice" | "bob" | "carol" | "dave" | "p1", string>;

async function seedSocial(t: TestDatabase): Promise<Ids> {
  const people = {
    alice: { name: "Alice", age: 30, active: true, score: 1.5, address: { city: "Paris", zip: 75001 } },
    bob: { name: "Bob", age: 25, active: false, score: 2.5, address: { city: "Lyon", zip: 69001 } },
    carol: { name: "Carol", age: 35, active: true, score: 0.5, address: { city: "Paris", zip: 75002 } },
    dave: { name: "Dave", age: 40 },
  };
  const link = (from: string, edgeLabel: string, to: string, props: Record<string, unknown> = {}) =>
    entry(undefined, addE(nodesVar(from), edgeLabel, ref.var(to), props));
  const result = await t.run(
    write(
      [
        ...Object.entries(people).map(([name, props]) => entry(name, addN("User", props))),
        entry("p1", addN("Post", { title: "Hello" })),
        link("alice", "Follows", "bob", { since: 2020 }),
        link("alice", "Follows", "carol", { since: 2021 }),
        link("bob", "Follows", "carol", { since: 2022 }),
        link("carol", "Follows", "alice", { since: 2023 }),
        link("dave", "Follows", "carol", { since: 2024 }),
        link("alice", "Likes", "carol"),
        link("alice", "Wrote", "p1"),
      ],
      ["alice", "bob", "carol", "dave", "p1"],
    ),
  );
  const only = (name: keyof Ids): string => {
    const rows = result[name] as { $id: string }[];
    expect(rows).toHaveLength(1);
    return rows[0].$id;
  };
  return { alice: only("alice"), bob: only("bob"), carol: only("carol"), dave: only("dave"), p1: only("p1") };
}

/** The sorted `name`s of result rows. */
function names(rows: unknown): unknown[] {
  return sorted(pluck(rows, "name"));
}

describe.each(BACKENDS)("engine on $name", (backend) => {
  let t: TestDatabase;

  /** Runs one read traversal and returns its rows. */
  const get = async (root: TreeNode, parameters: Record<string, unknown> = {}): Promise<unknown> => (await t.run(readOne(root, parameters))).r;
  const put = async (root: TreeNode, parameters: Record<string, unknown> = {}): Promise<unknown> => (await t.run(writeOne(root, parameters))).r;

  beforeEach(async () => {
    t = await TestDatabase.open(backend);
  });

  afterEach(async () => {
    await t.close();
  });

  describe("add and select", () => {
    it("add_n returns the new record with its id, label and properties, and stores every value type", async () => {
      const created = (await put(
        addN("Thing", {
          text: "hé ✓",
          int: -7,
          big: BigInt(ID_MAX),
          float: 2.25,
          flag: false,
          when: lit.date("2024-02-29T10:20:30Z"),
          nested: { a: { b: 1 } },
          list: [1, "two", true],
        }),
      )) as Record<string, unknown>[];
      expect(created).toHaveLength(1);
      const expected = {
        $label: "Thing",
        text: "hé ✓",
        int: -7,
        big: ID_MAX,
        float: 2.25,
        flag: false,
        when: "2024-02-29T10:20:30.000Z",
        nested: { a: { b: 1 } },
        list: [1, "two", true],
      };
      expect(created[0]).toEqual({ $id: expect.stringMatching(/^\d+$/), ...expected });
      expect(await get(nodesById(created[0].$id as string))).toEqual(created);
    });

    it("selects all nodes of a label with nodes_where $label, and nothing of an unused label", async () => {
      const s = await seedSocial(t);
      expect(names(await get(nodesOf("User")))).toEqual(["Alice", "Bob", "Carol", "Dave"]);
      expect(ids(await get(nodesOf("Post")))).toEqual([s.p1]);
      expect(await get(nodesOf("Ghost"))).toEqual([]);
      expect(sorted(ids(await get(allNodes())))).toEqual(sorted(Object.values(s)));
    });

    it("selects by ids, skipping ids that name nothing", async () => {
      const s = await seedSocial(t);
      expect(names(await get(nodesById(s.alice, s.carol)))).toEqual(["Alice", "Carol"]);
      expect(await get(nodesById("987654321"))).toEqual([]);
      // An edge id is not a node.
      const edgeIds = ids(await get(allEdges()));
      expect(await get(nodesById(edgeIds[0]))).toEqual([]);
    });

    it("selects by an id parameter, single or array", async () => {
      const s = await seedSocial(t);
      expect(names(await get(nodes(ref.param("who")), { who: s.bob }))).toEqual(["Bob"]);
      expect(names(await get(nodes(ref.param("who")), { who: [s.bob, s.dave] }))).toEqual(["Bob", "Dave"]);
    });

    it("selects edges of a label and reads their endpoints", async () => {
      const s = await seedSocial(t);
      const follows = (await get(edgesOf("Follows"))) as Record<string, unknown>[];
      expect(follows).toHaveLength(5);
      expect(sorted(follows.map((edge) => `${edge.$from}->${edge.$to}`))).toEqual(
        sorted([`${s.alice}->${s.bob}`, `${s.alice}->${s.carol}`, `${s.bob}->${s.carol}`, `${s.carol}->${s.alice}`, `${s.dave}->${s.carol}`]),
      );
      expect(follows.every((edge) => edge.$label === "Follows")).toBe(true);
    });
  });

  describe("update", () => {
    it("set_property changes one property and keeps the others", async () => {
      const s = await seedSocial(t);
      const changed = (await put(setProperty(nodesById(s.alice), "age", 31))) as Record<string, unknown>[];
      expect(changed).toEqual([{ $id: s.alice, $label: "User", name: "Alice", age: 31, active: true, score: 1.5, address: { city: "Paris", zip: 75001 } }]);
      expect(await get(nodesById(s.alice))).toEqual(changed);
      expect(pluck(await get(nodesById(s.bob)), "age")).toEqual([25]);
    });

    it("update changes only the listed properties, adds new ones, and applies to every element", async () => {
      const s = await seedSocial(t);
      await put(update(where(nodesOf("User"), eq(prop("address.city"), "Paris")), { age: 50, nickname: "P" }));
      expect(await get(nodesById(s.carol))).toEqual([
        { $id: s.carol, $label: "User", name: "Carol", age: 50, active: true, score: 0.5, address: { city: "Paris", zip: 75002 }, nickname: "P" },
      ]);
      expect(pluck(await get(orderBy(nodesOf("User"), "name")), "age")).toEqual([50, 25, 50, 40]);
    });

    it("update changes edge properties and keeps endpoints and adjacency", async () => {
      const s = await seedSocial(t);
      await put(update(outE(nodesById(s.alice), "Likes"), { strength: 9 }));
      expect(await get(outE(nodesById(s.alice), "Likes"))).toEqual([
        { $id: expect.any(String), $label: "Likes", $from: s.alice, $to: s.carol, strength: 9 },
      ]);
      expect(ids(await get(out(nodesById(s.alice), "Likes")))).toEqual([s.carol]);
      expect(ids(await get(in_(nodesById(s.carol), "Likes")))).toEqual([s.alice]);
    });

    it("update with a parameter value", async () => {
      const s = await seedSocial(t);
      await put(update(nodesById(s.bob), { age: param("newAge") }), { newAge: 26 });
      expect(pluck(await get(nodesById(s.bob)), "age")).toEqual([26]);
    });
  });

  it("remove_property removes one property and keeps the others", async () => {
    const s = await seedSocial(t);
    await put(removeProperty(nodesById(s.alice), "score"));
    expect(await get(nodesById(s.alice))).toEqual([
      { $id: s.alice, $label: "User", name: "Alice", age: 30, active: true, address: { city: "Paris", zip: 75001 } },
    ]);
    // Removing a property a record does not have changes nothing.
    await put(removeProperty(nodesById(s.dave), "score"));
    expect(await get(nodesById(s.dave))).toEqual([{ $id: s.dave, $label: "User", name: "Dave", age: 40 }]);
  });

  describe("drop", () => {
    it("dropping a node drops its edges on both sides and of every label", async () => {
      const s = await seedSocial(t);
      await put(drop(nodesById(s.carol)));
      expect(names(await get(nodesOf("User")))).toEqual(["Alice", "Bob", "Dave"]);
      const remaining = (await get(allEdges())) as Record<string, unknown>[];
      expect(sorted(remaining.map((edge) => `${edge.$label}:${edge.$from}->${edge.$to}`))).toEqual(
        sorted([`Follows:${s.alice}->${s.bob}`, `Wrote:${s.alice}->${s.p1}`]),
      );
      // No adjacency anywhere still names a dropped edge or the dropped node.
      const contents = await snapshot(t.db);
      expect(sorted(ids(contents.outEdges))).toEqual(sorted(ids(remaining)));
      expect(sorted(ids(contents.inEdges))).toEqual(sorted(ids(remaining)));
      expect(names(await get(out(nodesById(s.alice))))).toEqual(["Bob", undefined]);
      expect(await get(in_(nodesById(s.alice)))).toEqual([]);
      expect(await get(out(nodesById(s.dave)))).toEqual([]);
      expect(await get(nodesById(s.carol))).toEqual([]);
    });

    it("dropping an edge leaves both nodes and the other edges", async () => {
      const s = await seedSocial(t);
      const before = await snapshot(t.db);
      await put(drop(outE(nodesById(s.alice), "Likes")));
      const after = await snapshot(t.db);
      expect(after.nodes).toEqual(before.nodes);
      expect(after.edges).toHaveLength(before.edges.length - 1);
      expect(await get(out(nodesById(s.alice), "Likes"))).toEqual([]);
      expect(await get(in_(nodesById(s.carol), "Likes"))).toEqual([]);
      expect(names(await get(out(nodesById(s.alice), "Follows")))).toEqual(["Bob", "Carol"]);
    });

    it("drop on an empty traversal drops nothing", async () => {
      await seedSocial(t);
      const before = await snapshot(t.db);
      expect(await put(drop(nodesOf("Ghost")))).toEqual([]);
      await put(drop(where(nodesOf("User"), gt(prop("age"), 1000))));
      await put(drop(nodesById("424242")));
      expect(await snapshot(t.db)).toEqual(before);
    });

    it("drop of Out drops the neighbour nodes; drop of OutE drops only the edges", async () => {
      const s = await seedSocial(t);
      await put(drop(outE(nodesById(s.dave), "Follows")));
      expect(names(await get(nodesOf("User")))).toEqual(["Alice", "Bob", "Carol", "Dave"]);
      await put(drop(out(nodesById(s.alice), "Follows")));
      expect(names(await get(nodesOf("User")))).toEqual(["Alice", "Dave"]);
      expect(ids(await get(out(nodesById(s.alice))))).toEqual([s.p1]);
    });
  });

  describe("traversals", () => {
    let s: Ids;
    beforeEach(async () => {
      s = await seedSocial(t);
    });

    it("out and in, with and without a label", async () => {
      expect(names(await get(out(nodesById(s.alice), "Follows")))).toEqual(["Bob", "Carol"]);
      expect(sorted(ids(await get(out(nodesById(s.alice)))))).toEqual(sorted([s.bob, s.carol, s.carol, s.p1]));
      expect(names(await get(in_(nodesById(s.carol), "Follows")))).toEqual(["Alice", "Bob", "Dave"]);
      expect(names(await get(in_(nodesById(s.carol))))).toEqual(["Alice", "Alice", "Bob", "Dave"]);
      expect(names(await get(in_(nodesById(s.carol), "Wrote")))).toEqual([]);
      expect(ids(await get(in_(nodesById(s.p1))))).toEqual([s.alice]);
      // Two hops, over several sources at once.
      expect(names(await get(out(out(nodesById(s.bob), "Follows"), "Follows")))).toEqual(["Alice"]);
      expect(names(await get(out(nodesOf("User"), "Follows")))).toEqual(["Alice", "Bob", "Carol", "Carol", "Carol"]);
    });

    it("out_e and in_e yield edges, with and without a label", async () => {
      const outgoing = (await get(outE(nodesById(s.alice), "Follows"))) as Record<string, unknown>[];
      expect(sorted(pluck(outgoing, "$to"))).toEqual(sorted([s.bob, s.carol]));
      expect(outgoing.every((edge) => edge.$from === s.alice && edge.$label === "Follows")).toBe(true);
      expect(sorted(pluck(outgoing, "since"))).toEqual([2020, 2021]);
      expect(sorted(pluck(await get(outE(nodesById(s.alice))), "$label"))).toEqual(["Follows", "Follows", "Likes", "Wrote"]);
      const incoming = (await get(inE(nodesById(s.carol), "Follows"))) as Record<string, unknown>[];
      expect(sorted(pluck(incoming, "$from"))).toEqual(sorted([s.alice, s.bob, s.dave]));
      expect(sorted(pluck(await get(inE(nodesById(s.carol))), "$label"))).toEqual(["Follows", "Follows", "Follows", "Likes"]);
    });

    it("both follows edges in either direction", async () => {
      expect(names(await get(both(nodesById(s.carol), "Follows")))).toEqual(["Alice", "Alice", "Bob", "Dave"]);
      expect(names(await get(both(nodesById(s.bob))))).toEqual(["Alice", "Carol"]);
    });

    it("out_n and in_n go from edges to their endpoints", async () => {
      expect(names(await get(outN(outE(nodesById(s.alice), "Follows"))))).toEqual(["Bob", "Carol"]);
      expect(names(await get(inN(inE(nodesById(s.carol), "Follows"))))).toEqual(["Alice", "Bob", "Dave"]);
      expect(names(await get(inN(edgesOf("Follows"))))).toEqual(["Alice", "Alice", "Bob", "Carol", "Dave"]);
      expect(ids(await get(outN(edgesOf("Wrote"))))).toEqual([s.p1]);
    });
  });

  describe("where", () => {
    beforeEach(async () => {
      await seedSocial(t);
    });

    const usersWhere = async (predicate: TreeNode): Promise<unknown[]> => names(await get(where(nodesOf("User"), predicate)));

    it("compares numbers with eq neq gt lt gte lte", async () => {
      expect(await usersWhere(eq(prop("age"), 30))).toEqual(["Alice"]);
      expect(await usersWhere(neq(prop("age"), 30))).toEqual(["Bob", "Carol", "Dave"]);
      expect(await usersWhere(gt(prop("age"), 30))).toEqual(["Carol", "Dave"]);
      expect(await usersWhere(lt(prop("age"), 30))).toEqual(["Bob"]);
      expect(await usersWhere(gte(prop("age"), 30))).toEqual(["Alice", "Carol", "Dave"]);
      expect(await usersWhere(lte(prop("age"), 30))).toEqual(["Alice", "Bob"]);
      // Floats, and an integer against a float.
      expect(await usersWhere(gt(prop("score"), 1.5))).toEqual(["Bob"]);
      expect(await usersWhere(lte(prop("score"), 1.5))).toEqual(["Alice", "Carol"]);
      expect(await usersWhere(gt(prop("age"), 29.5))).toEqual(["Alice", "Carol", "Dave"]);
      // The constant on the left.
      expect(await usersWhere(gt(40, prop("age")))).toEqual(["Alice", "Bob", "Carol"]);
    });

    it("compares strings with eq and neq, and orders them (test/engine/string-range.test.ts has more)", async () => {
      expect(await usersWhere(eq(prop("name"), "Bob"))).toEqual(["Bob"]);
      expect(await usersWhere(neq(prop("name"), "Bob"))).toEqual(["Alice", "Carol", "Dave"]);
      expect(await usersWhere(eq(prop("name"), "bob"))).toEqual([]);
      expect(await usersWhere(gt(prop("name"), "Bob"))).toEqual(["Carol", "Dave"]);
    });

    it("compares booleans; a missing property matches NEQ but not EQ", async () => {
      expect(await usersWhere(eq(prop("active"), true))).toEqual(["Alice", "Carol"]);
      expect(await usersWhere(eq(prop("active"), false))).toEqual(["Bob"]);
      expect(await usersWhere(neq(prop("active"), true))).toEqual(["Bob", "Dave"]);
    });

    it("compares against a parameter", async () => {
      expect(names(await get(where(nodesOf("User"), gte(prop("age"), param("min"))), { min: 35 }))).toEqual(["Carol", "Dave"]);
    });

    it("nests and, or and not", async () => {
      expect(await usersWhere(and(gt(prop("age"), 26), eq(prop("active"), true)))).toEqual(["Alice", "Carol"]);
      expect(await usersWhere(or(eq(prop("name"), "Bob"), gt(prop("age"), 36)))).toEqual(["Bob", "Dave"]);
      expect(await usersWhere(not(eq(prop("active"), true)))).toEqual(["Bob", "Dave"]);
      expect(await usersWhere(and(or(lt(prop("age"), 26), gt(prop("age"), 34)), not(eq(prop("name"), "Dave"))))).toEqual(["Bob", "Carol"]);
      expect(await usersWhere(or(and(eq(prop("active"), true), not(gt(prop("age"), 31))), eq(prop("name"), "Dave")))).toEqual(["Alice", "Dave"]);
      expect(await usersWhere(and())).toEqual(["Alice", "Bob", "Carol", "Dave"]);
      expect(await usersWhere(or())).toEqual([]);
    });

    it("exists on a sub-traversal", async () => {
      expect(await usersWhere(existsP(in_(context, "Follows")))).toEqual(["Alice", "Bob", "Carol"]);
      expect(await usersWhere(not(existsP(in_(context, "Follows"))))).toEqual(["Dave"]);
      expect(await usersWhere(existsP(out(context, "Wrote")))).toEqual(["Alice"]);
      expect(await usersWhere(existsP(where(out(context, "Follows"), eq(prop("name"), "Carol"))))).toEqual(["Alice", "Bob", "Dave"]);
    });

    it("count of a sub-traversal with a comparison", async () => {
      expect(await usersWhere(gt(countOf(in_(context, "Follows")), 1))).toEqual(["Carol"]);
      expect(await usersWhere(eq(countOf(out(context, "Follows")), 1))).toEqual(["Bob", "Carol", "Dave"]);
      expect(await usersWhere(gte(countOf(out(context)), 4))).toEqual(["Alice"]);
      expect(await usersWhere(lt(countOf(in_(context, "Follows")), 1))).toEqual(["Dave"]);
    });

    it("filters on nested object properties by dotted path", async () => {
      expect(await usersWhere(eq(prop("address.city"), "Paris"))).toEqual(["Alice", "Carol"]);
      expect(await usersWhere(gt(prop("address.zip"), 70000))).toEqual(["Alice", "Carol"]);
      expect(await usersWhere(neq(prop("address.city"), "Paris"))).toEqual(["Bob", "Dave"]);
      expect(await usersWhere(eq(prop("address.nowhere"), "x"))).toEqual([]);
      expect(await usersWhere(eq(prop("address.city.deeper"), "x"))).toEqual([]);
      expect(pluck(await get(orderBy(where(nodesOf("User"), eq(prop("address.city"), "Paris")), "address.zip", "desc")), "name")).toEqual([
        "Carol",
        "Alice",
      ]);
      // values answers one object per element keyed by the path as written, none for Dave who has no city (HelixDB
      // v3's serialisation, docs/OPERATION_TREE.md "Response"; it was a flat array with null).
      expect(await get(values(orderBy(nodesOf("User"), "name"), "address.city"))).toEqual([{ "address.city": "Paris" }, { "address.city": "Lyon" }, { "address.city": "Paris" }]);
      // Arrays are opaque: no index path reaches into them.
      await put(addN("User", { name: "Tagged", tags: ["x"], nested: { list: [{ k: 1 }] } }));
      expect(await usersWhere(eq(prop("tags.0"), "x"))).toEqual([]);
      expect(await usersWhere(eq(prop("nested.list.0.k"), 1))).toEqual([]);
    });

    it("filters edges by their properties", async () => {
      const late = (await get(where(edgesOf("Follows"), gte(prop("since"), 2022)))) as Record<string, unknown>[];
      expect(sorted(pluck(late, "since"))).toEqual([2022, 2023, 2024]);
    });
  });

  describe("terminals", () => {
    let s: Ids;
    beforeEach(async () => {
      s = await seedSocial(t);
    });

    it("values, value_map and project", async () => {
      const byName = orderBy(nodesOf("User"), "name");
      // One object per element, as HelixDB v3 answers values (it was one flat array of every value).
      expect(await get(values(byName, "name", "age"))).toEqual([
        { name: "Alice", age: 30 },
        { name: "Bob", age: 25 },
        { name: "Carol", age: 35 },
        { name: "Dave", age: 40 },
      ]);
      expect(await get(valueMap(nodesById(s.dave)))).toEqual([{ $id: s.dave, $label: "User", name: "Dave", age: 40 }]);
      expect(await get(valueMap(limit(byName, 2), ["name", "score", "$id"]))).toEqual([
        { name: "Alice", score: 1.5, $id: s.alice },
        { name: "Bob", score: 2.5, $id: s.bob },
      ]);
      expect(await get(project(limit(byName, 2), "name", ["city", "address.city"], ["followers", countOf(in_(context, "Follows"))]))).toEqual([
        { name: "Alice", city: "Paris", followers: 1 },
        { name: "Bob", city: "Lyon", followers: 1 },
      ]);
    });

    it("id, label, count and exists", async () => {
      expect(await get(id(nodesById(s.bob)))).toEqual([s.bob]);
      expect(sorted((await get(label(out(nodesById(s.alice))))) as string[])).toEqual(["Post", "User", "User", "User"]);
      expect(await get(count(nodesOf("User")))).toBe(4);
      expect(await get(count(out(nodesById(s.alice), "Follows")))).toBe(2);
      expect(await get(count(nodesOf("Ghost")))).toBe(0);
      expect(await get(exists(in_(nodesById(s.dave), "Follows")))).toBe(false);
      expect(await get(exists(in_(nodesById(s.carol), "Follows")))).toBe(true);
    });

    it("limit, skip, range, order_by and dedup", async () => {
      const byAge = orderBy(nodesOf("User"), "age");
      expect(pluck(await get(byAge), "name")).toEqual(["Bob", "Alice", "Carol", "Dave"]);
      expect(pluck(await get(orderBy(nodesOf("User"), "age", "desc")), "name")).toEqual(["Dave", "Carol", "Alice", "Bob"]);
      expect(pluck(await get(limit(byAge, 2)), "name")).toEqual(["Bob", "Alice"]);
      expect(pluck(await get(skip(byAge, 3)), "name")).toEqual(["Dave"]);
      expect(pluck(await get(range(byAge, 1, 3)), "name")).toEqual(["Alice", "Carol"]);
      expect(await get(limit(byAge, 0))).toEqual([]);
      expect(await get(skip(byAge, 10))).toEqual([]);
      // A missing property ranks below every value (HelixDB v3's rule): first ascending, last descending.
      expect(pluck(await get(orderBy(nodesOf("User"), "score")), "name")).toEqual(["Dave", "Carol", "Alice", "Bob"]);
      expect(pluck(await get(orderBy(nodesOf("User"), "score", "desc")), "name")).toEqual(["Bob", "Alice", "Carol", "Dave"]);
      // HelixQL's rule, which its ORDER compiles to, puts it last in either direction.
      const helixql = (order: "asc" | "desc"): TreeNode => ({ order_by: { input: nodesOf("User") as Json, property: "score", order, rule: "helixql" } });
      expect(pluck(await get(helixql("asc")), "name")).toEqual(["Carol", "Alice", "Bob", "Dave"]);
      expect(pluck(await get(helixql("desc")), "name")).toEqual(["Bob", "Alice", "Carol", "Dave"]);
      // Alice reaches Carol by Follows and by Likes.
      expect(await get(count(in_(nodesById(s.carol))))).toBe(4);
      expect(names(await get(dedup(in_(nodesById(s.carol)))))).toEqual(["Alice", "Bob", "Dave"]);
      expect(await get(dedup(values(nodesOf("User"), "address.city")))).toEqual(expect.arrayContaining(["Paris", "Lyon", null]));
      expect(await get(dedup(values(nodesOf("User"), "address.city")))).toHaveLength(3);
    });
  });

  describe("batches", () => {
    it("later entries see earlier writes of the same batch", async () => {
      const result = await t.run(
        write(
          [
            entry("a", addN("Person", { name: "A" })),
            entry("b", addN("Person", { name: "B" })),
            entry("e", addE(nodesVar("a"), "Knows", ref.var("b"))),
            entry("seen", count(nodesOf("Person"))),
            entry("friends", values(out(nodesVar("a"), "Knows"), "name")),
            entry(undefined, setProperty(nodesVar("b"), "name", "B2")),
            entry("renamed", values(nodesOf("Person"), "name")),
            entry(undefined, drop(nodesVar("a"))),
            entry("left", values(nodesOf("Person"), "name")),
            entry("edgesLeft", count(in_(nodesVar("b"), "Knows"))),
          ],
          ["seen", "friends", "renamed", "left", "edgesLeft"],
        ),
      );
      expect(result.seen).toBe(2);
      // values answers one object per element (HelixDB v3's serialisation).
      expect(result.friends).toEqual([{ name: "B" }]);
      expect(sorted((result.renamed as { name: string }[]).map((row) => row.name))).toEqual(["A", "B2"]);
      expect(result.left).toEqual([{ name: "B2" }]);
      expect(result.edgesLeft).toBe(0);
      expect(await get(values(allNodes(), "name"))).toEqual([{ name: "B2" }]);
      expect(await get(allEdges())).toEqual([]);
    });

    it("for_each runs its body once per row of an array parameter", async () => {
      const rows = [
        { name: "r1", size: 1 },
        { name: "r2", size: 2 },
        { name: "r3", size: 3 },
      ];
      const result = await t.run(
        write([forEach("rows", [entry("created", addN("Row", { name: param("name"), size: param("size") }))])], ["created"], { rows }),
      );
      expect(pluck(result.created, "name")).toEqual(["r1", "r2", "r3"]);
      expect(pluck(await get(orderBy(nodesOf("Row"), "size")), "name")).toEqual(["r1", "r2", "r3"]);
      // Rows can link to records created earlier in the batch.
      await t.run(
        write(
          [
            entry("hub", addN("Hub")),
            forEach("rows", [entry("spoke", addE(nodesVar("hub"), "Has", ref.param("target")))]),
          ],
          ["spoke"],
          { rows: ids(result.created).map((target) => ({ target })) },
        ),
      );
      expect(sorted(ids(await get(out(nodesOf("Hub"), "Has"))))).toEqual(sorted(ids(result.created)));
    });

    it("for_each collects a named count or exists of its body, one value per iteration", async () => {
      await t.run(write([forEach("rows", [entry(undefined, addN("Row", { name: param("name") }))])], [], { rows: [{ name: "a" }, { name: "b" }] }));
      const result = await t.run(
        write(
          [forEach("rows", [entry("n", count(nodesOf("Row"))), entry("e", exists(nodesOf("Gone"))), entry(undefined, addN("Row", { name: param("name") }))])],
          ["n", "e"],
          { rows: [{ name: "c" }, { name: "d" }] },
        ),
      );
      expect(result).toEqual({ n: [2, 3], e: [false, false] });
    });

    it("for_each needs an array parameter of objects", async () => {
      const body = [entry(undefined, addN("Row", { name: param("name") }))];
      await expectCode(t.run(write([forEach("rows", body)], [])), "missing_parameter");
      await expectCode(t.run(write([forEach("rows", body)], [], { rows: "r1" })), "invalid_type");
      await expectCode(t.run(write([forEach("rows", body)], [], { rows: { name: "r1" } })), "invalid_type");
      await expectCode(t.run(write([forEach("rows", body)], [], { rows: ["r1"] })), "invalid_type");
      expect(await t.run(write([forEach("rows", body)], [], { rows: [] }))).toEqual({});
      expect(await get(allNodes())).toEqual([]);
    });
  });

  describe("concurrent invocations", () => {
    it("each write is all-or-nothing to concurrent readers", async () => {
      const [hub] = ids(await put(addN("Hub")));
      const writes = Array.from({ length: 20 }, (_, i) =>
        t.run(write([entry("leaf", addN("Leaf", { i })), entry(undefined, addE(nodesById(hub), "Has", ref.var("leaf")))], [])),
      );
      const reads = Array.from({ length: 20 }, () =>
        t.run(
          read(
            [entry("leaves", count(nodesOf("Leaf"))), entry("spokes", count(out(nodesById(hub), "Has"))), entry("back", count(in_(nodesOf("Leaf"), "Has")))],
            ["leaves", "spokes", "back"],
          ),
        ),
      );
      const interleaved = writes.flatMap((work, i) => [work, reads[i]]);
      const results = await Promise.all(interleaved);
      for (const result of results.filter((_, i) => i % 2 === 1)) {
        expect(result.spokes).toBe(result.leaves);
        expect(result.back).toBe(result.leaves);
      }
      expect(await get(count(out(nodesById(hub), "Has")))).toBe(20);
      expect(sorted(((await get(values(nodesOf("Leaf"), "i"))) as { i: number }[]).map((row) => row.i))).toEqual(sorted(Array.from({ length: 20 }, (_, i) => i)));
      expectConsistent(await snapshot(t.db));
    });

    it("an import and a concurrent drop of its endpoint never leave a dangling edge", async () => {
      for (const importFirst of [true, false]) {
        const [target] = ids(await put(addN("Target")));
        const importing = t.db.importBatch({ nodes: [{ label: "Source", props: {} }], edges: [{ label: "To", from: { batch: 0 }, to: { id: BigInt(target) }, props: {} }] });
        const dropping = t.run(writeOne(drop(nodesById(target))));
        const outcomes = await Promise.allSettled(importFirst ? [importing, dropping] : [dropping, importing]);
        // The import either ran first (and the drop took its edge) or failed because its endpoint was gone.
        for (const outcome of outcomes) if (outcome.status === "rejected") expect(outcome.reason).toMatchObject({ code: "node_not_found" });
        expect(await get(nodesById(target))).toEqual([]);
        expectConsistent(await snapshot(t.db));
      }
    });
  });

  describe("u64 ids", () => {
    it("accepts 2^64-1 as an id (which names nothing) and rejects 2^64", async () => {
      await seedSocial(t);
      expect(await get(nodesById(ID_MAX))).toEqual([]);
      expect(await get(nodes(ref.param("id")), { id: ID_MAX })).toEqual([]);
      expect(await get(nodesById("0"))).toEqual([]);
      await expectCode(get(nodesById("18446744073709551616")), "invalid_id");
      await expectCode(get(nodes(ref.param("id")), { id: "18446744073709551616" }), "invalid_id");
      await expectCode(put(addE(nodesOf("User"), "Follows", ref.ids(ID_MAX))), "node_not_found");
    });

    it("stores u64 property values near 2^64-1 exactly and filters on them", async () => {
      await put(addN("Counter", { value: lit.i64(ID_MAX) }));
      await put(addN("Counter", { value: lit.i64("18446744073709551614") }));
      expect(await get(values(orderBy(nodesOf("Counter"), "value"), "value"))).toEqual([{ value: "18446744073709551614" }, { value: ID_MAX }]);
      expect(await get(count(where(nodesOf("Counter"), eq(prop("value"), lit.i64(ID_MAX)))))).toBe(1);
      expect(await get(count(where(nodesOf("Counter"), gt(prop("value"), lit.i64("18446744073709551614")))))).toBe(1);
    });

    it("new ids are decimal strings inside the partition that made them", async () => {
      const s = await seedSocial(t);
      for (const value of Object.values(s)) {
        expect(value).toMatch(/^[1-9]\d*$/);
        expect(BigInt(value) <= BigInt(ID_MAX)).toBe(true);
      }
      if (backend.partitions > 1) {
        // Round-robin allocation within one invocation spreads the seed's nodes over the partitions.
        const owners = new Set(Object.values(s).map((value) => partitionOf(value, backend.partitions)));
        expect(owners.size).toBe(backend.partitions);
      }
    });
  });

  describe("schema mode", () => {
    beforeEach(async () => {
      await t.close();
      t = await TestDatabase.open(backend, { schema: SCHEMA });
    });

    it("applies DEFAULTs, keeps declared types and returns dates as ISO strings", async () => {
      const created = await put(addN("User", { name: "Ann", born: "1990-05-01", score: 3 }));
      expect(created).toEqual([{ $id: expect.any(String), $label: "User", name: "Ann", age: 0, born: "1990-05-01T00:00:00.000Z", score: 3 }]);
      const result = await t.run(
        write(
          [
            entry("a", nodesOf("User")),
            entry("b", addN("User", { name: "Ben" })),
            entry("f", addE(nodesVar("a"), "Follows", ref.var("b"), { since: "2024-01-02T03:04:05Z" })),
          ],
          ["f"],
        ),
      );
      expect(result.f).toEqual([{ $id: expect.any(String), $label: "Follows", $from: expect.any(String), $to: expect.any(String), since: "2024-01-02T03:04:05.000Z", weight: 1 }]);
    });

    it("where compares Date fields with eq neq gt lt gte lte, against ISO strings and date literals", async () => {
      await t.run(
        write(
          [
            entry(undefined, addN("User", { name: "Old", born: "1980-01-01" })),
            entry(undefined, addN("User", { name: "Mid", born: "1990-06-15T12:00:00Z" })),
            entry(undefined, addN("User", { name: "New", born: "2000-12-31T23:59:59.500+01:00" })),
            entry(undefined, addN("User", { name: "Unborn" })),
          ],
          [],
        ),
      );
      const bornWhere = async (predicate: TreeNode): Promise<unknown[]> => names(await get(where(nodesOf("User"), predicate)));
      expect(await bornWhere(eq(prop("born"), "1990-06-15T12:00:00Z"))).toEqual(["Mid"]);
      expect(await bornWhere(eq(prop("born"), lit.date("1990-06-15T14:00:00+02:00")))).toEqual(["Mid"]);
      expect(await bornWhere(neq(prop("born"), "1990-06-15T12:00:00Z"))).toEqual(["New", "Old", "Unborn"]);
      expect(await bornWhere(gt(prop("born"), "1990-06-15T12:00:00Z"))).toEqual(["New"]);
      expect(await bornWhere(gte(prop("born"), lit.date("1990-06-15T12:00:00Z")))).toEqual(["Mid", "New"]);
      expect(await bornWhere(lt(prop("born"), "1990-06-15"))).toEqual(["Old"]);
      expect(await bornWhere(lte(prop("born"), "1990-06-15T12:00:00Z"))).toEqual(["Mid", "Old"]);
      expect(await bornWhere(and(gt(prop("born"), "1985-01-01"), lt(prop("born"), "2000-12-31T22:59:59.501Z")))).toEqual(["Mid", "New"]);
      expect(pluck(await get(orderBy(nodesOf("User"), "born", "desc")), "name")).toEqual(["New", "Mid", "Old", "Unborn"]);
    });

    it("refuses undeclared labels and fields, which schemaless mode accepts", async () => {
      await expectCode(put(addN("Ghost")), "unknown_label");
      await expectCode(put(addN("User", { name: "X", shoe: 42 })), "invalid_field");
      const schemaless = await TestDatabase.open(backend);
      try {
        expect(await schemaless.run(writeOne(addN("Ghost", { shoe: 42 })))).toEqual({ r: [{ $id: expect.any(String), $label: "Ghost", shoe: 42 }] });
      } finally {
        await schemaless.close();
      }
    });

    it("checks edge endpoint labels", async () => {
      await t.run(write([entry("u", addN("User", { name: "U" })), entry("p", addN("Post", { title: "T" }))], []));
      await expectCode(put(addE(nodesOf("Post"), "Wrote", ref.all)), "edge_endpoint_mismatch");
      const wrote = await t.run(
        write([entry("u", nodesOf("User")), entry("p", nodesOf("Post")), entry("w", addE(nodesVar("u"), "Wrote", ref.var("p")))], ["w"]),
      );
      expect(wrote.w).toHaveLength(1);
    });
  });

  describe("embedded runtime options", () => {
    it("refuses gateway headers and routing options in open() and run()", async () => {
      await expectCode(open({ storage: "memory", headers: {} } as never), "invalid_option");
      await expectCode(open({ storage: "memory", apiKey: "k" } as never), "invalid_option");
      await expectCode(open({ storage: "memory", routing: "replica" } as never), "invalid_option");
      await expectCode(open({ storage: "memory", color: "blue" } as never), "invalid_option");
      await expectCode(t.db.run(readOne(allNodes()), { headers: {} }), "invalid_option");
      await expectCode(t.db.run(readOne(allNodes()), { replica: "eu" }), "invalid_option");
      await expectCode(t.db.run(writeOne(addN("X")), { headers: { authorization: "x" } }), "invalid_option");
      expect(await get(allNodes())).toEqual([]);
      expect(await t.db.run(readOne(allNodes()), {})).toEqual({ r: [] });
    });

    it("a closed handle refuses work with closed", async () => {
      await t.close();
      await expectCode(t.db.run(readOne(allNodes())), "closed");
      t = await TestDatabase.open(backend);
    });
  });

  describe("importBatch", () => {
    it("imports nodes and edges (batch and existing endpoints) as one transaction", async () => {
      const s = await seedSocial(t);
      const result = await t.db.importBatch({
        nodes: [
          { label: "City", props: { name: "Rome" } },
          { label: "City", props: { name: "Oslo" } },
          { label: "City", props: { name: "Lima" } },
          { label: "City", props: { name: "Kyiv" } },
        ],
        edges: [
          { label: "Road", from: { batch: 0 }, to: { batch: 1 }, props: { km: 2000 } },
          { label: "Road", from: { batch: 2 }, to: { batch: 3 }, props: { km: 12000 } },
          { label: "LivesIn", from: { id: BigInt(s.alice) }, to: { batch: 0 }, props: {} },
        ],
      });
      expect(result.nodeIds).toHaveLength(4);
      expect(result.edgeIds).toHaveLength(3);
      const [rome, oslo, lima, kyiv] = result.nodeIds.map(String);
      expect(pluck(await get(orderBy(nodesOf("City"), "name")), "name")).toEqual(["Kyiv", "Lima", "Oslo", "Rome"]);
      expect(ids(await get(out(nodesById(rome), "Road")))).toEqual([oslo]);
      expect(ids(await get(in_(nodesById(kyiv), "Road")))).toEqual([lima]);
      expect(ids(await get(out(nodesById(s.alice), "LivesIn")))).toEqual([rome]);
      expect(ids(await get(in_(nodesById(rome), "LivesIn")))).toEqual([s.alice]);
      expect(pluck(await get(outE(nodesById(lima))), "km")).toEqual([12000]);
      // Imported IDs do not collide with IDs handed out afterwards.
      const later = ids(await put(addN("City", { name: "Nuuk" })));
      expect([...result.nodeIds.map(String), ...result.edgeIds.map(String), ...Object.values(s)]).not.toContain(later[0]);
    });

    it("bytes properties read back intact after later reads (records are decoded from lmdb-js's reused read buffer)", async () => {
      // Buffers are packed as msgpack bin, which a decoder may hand out as a view of the bytes it read.
      const first = Buffer.from([1, 2, 3, 250]);
      const second = Buffer.from([9, 8, 7, 6, 5, 4, 3, 2, 1]);
      const { nodeIds } = await t.db.importBatch({
        nodes: [
          { label: "Blob", props: { data: first } },
          { label: "Blob", props: { data: second } },
        ],
        edges: [],
      });
      // One invocation reads both records, the second after the first: the first's bytes must not change.
      const rows = await get(nodesById(...nodeIds.map(String)));
      expect(pluck(rows, "data")).toEqual([first.toString("base64"), second.toString("base64")]);
    });

    it("a record of 17 MiB reads back whole, beside small ones (lmdb-js hands values of 16 MiB and more over differently)", async () => {
      const big = Buffer.alloc(17 * 1024 * 1024, 7);
      big.write("the start", 0);
      const { nodeIds, edgeIds } = await t.db.importBatch({
        nodes: [
          { label: "Blob", props: { name: "small" } },
          { label: "Blob", props: { name: "big", data: big } },
        ],
        // Edges are decoded from their binary header: the case a plain Uint8Array would break.
        edges: [{ label: "Holds", from: { batch: 0 }, to: { batch: 1 }, props: { data: big } }],
      });
      const rows = (await get(nodesById(...nodeIds.map(String)))) as Record<string, unknown>[];
      expect(pluck(rows, "name")).toEqual(["small", "big"]);
      expect(Buffer.from(rows[1].data as string, "base64").equals(big)).toBe(true);
      const [edge] = (await get(edgesById(...edgeIds.map(String)))) as Record<string, unknown>[];
      expect(edge).toMatchObject({ $label: "Holds", $from: String(nodeIds[0]), $to: String(nodeIds[1]) });
      expect(Buffer.from(edge.data as string, "base64").equals(big)).toBe(true);
    });

    it("a bad row fails the whole batch, names the row, and writes nothing", async () => {
      await seedSocial(t);
      const before = await snapshot(t.db);
      const error = await expectCode(
        t.db.importBatch({
          nodes: [{ label: "City", props: { name: "Rome" } }],
          edges: [
            { label: "Road", from: { batch: 0 }, to: { batch: 0 }, props: {} },
            { label: "Road", from: { batch: 0 }, to: { id: BigInt(ID_MAX) }, props: {} },
          ],
        }),
        "node_not_found",
      );
      expect(error).toBeInstanceOf(ImportRowError);
      expect((error as ImportRowError).section).toBe("edges");
      expect((error as ImportRowError).index).toBe(1);
      expect(await snapshot(t.db)).toEqual(before);
    });
  });

  if (backend.storage === "disk") {
    describe("on disk", () => {
      it("reopening keeps every record and adjacency, and new ids do not collide", async () => {
        const s = await seedSocial(t);
        await put(update(nodesById(s.bob), { age: 26 }));
        await put(drop(outE(nodesById(s.alice), "Likes")));
        const before = await snapshot(t.db);
        await t.reopen();
        expect(await snapshot(t.db)).toEqual(before);
        expect(names(await get(in_(nodesById(s.carol), "Follows")))).toEqual(["Alice", "Bob", "Dave"]);
        const existing = new Set([...ids(before.nodes), ...ids(before.edges)]);
        const created = (await t.run(
          write([entry("n", addN("User", { name: "Eve" })), entry("m", addN("User", { name: "Fay" })), entry("e", addE(nodesVar("n"), "Follows", ref.var("m")))], ["n", "m", "e"]),
        )) as Record<string, unknown>;
        for (const key of ["n", "m", "e"]) expect(existing.has(ids(created[key])[0])).toBe(false);
        await t.reopen();
        expect(names(await get(nodesOf("User")))).toEqual(["Alice", "Bob", "Dave", "Carol", "Eve", "Fay"].sort());
      });

      it("reopening with another partition count is refused", async () => {
        await t.close();
        await expectCode(Database.open({ storage: { disk: t.directory }, partitions: backend.partitions + 1 }), "invalid_option");
        await t.reopen();
        expect(await get(allNodes())).toEqual([]);
      });

      it("read-only mode: reads work, writes fail read_only, and data is unchanged", async () => {
        const s = await seedSocial(t);
        const before = await snapshot(t.db);
        await t.close();
        const reader = await Database.open({ storage: { disk: t.directory }, mode: "readonly" });
        try {
          expect(reader.mode).toBe("readonly");
          expect(await snapshot(reader)).toEqual(before);
          expect(names((await reader.run(readOne(out(nodesById(s.alice), "Follows")))).r)).toEqual(["Bob", "Carol"]);
          await expectCode(reader.run(writeOne(addN("User", { name: "Eve" }))), "read_only");
          await expectCode(reader.run(writeOne(drop(nodesById(s.alice)))), "read_only");
          await expectCode(reader.run(writeOne(update(nodesById(s.alice), { age: 1 }))), "read_only");
          await expectCode(reader.importBatch({ nodes: [{ label: "User", props: {} }], edges: [] }), "read_only");
          // A write batch is refused even when it would change nothing.
          await expectCode(reader.run(write([entry("x", nodesOf("User"))], ["x"])), "read_only");
          expect(await snapshot(reader)).toEqual(before);
        } finally {
          await reader.close();
        }
        // The data survived the read-only handle, and a writer can open the path again.
        await t.reopen();
        expect(await snapshot(t.db)).toEqual(before);
      });

      it("a read-only handle can read while the writer is open, and sees its committed writes", async () => {
        const s = await seedSocial(t);
        const reader = await Database.open({ storage: { disk: t.directory }, mode: "readonly" });
        try {
          expect(names((await reader.run(readOne(nodesOf("User")))).r)).toEqual(["Alice", "Bob", "Carol", "Dave"]);
          await put(setProperty(nodesById(s.dave), "age", 41));
          // lmdb-js reuses a read transaction for a moment, so a reader in the same process may see the commit a
          // little later; it must see it soon, and never a torn state.
          await expect
            .poll(async () => pluck((await reader.run(readOne(nodesById(s.dave)))).r, "age"), { timeout: 2_000, interval: 10 })
            .toEqual([41]);
          await expectCode(reader.run(writeOne(addN("User"))), "read_only");
        } finally {
          await reader.close();
        }
        expect(pluck(await get(nodesById(s.dave)), "age")).toEqual([41]);
      });

      it("prepared intents without a decision block read-only opens until a writer aborts them", async () => {
        const s = await seedSocial(t);
        const before = await snapshot(t.db);
        await t.close();
        // An intent as a coordinator that died before deciding would leave it: the edge write is prepared, not decided.
        const map = new PartitionMap(backend.partitions);
        const owner = map.partitionOf(BigInt(s.dave));
        const range = map.ranges[owner];
        const store = PartitionStore.open({ path: join(t.directory, "partitions", `p${owner}`), readOnly: false, noSync: false, idFirst: range.first, idLast: range.last });
        store.prepare("orphan-1", encodeMutations([{ op: "put_record", record: { kind: "node", id: BigInt(s.dave), label: "User", props: { name: "Hijacked" } } }]));
        await store.close();
        await expectCode(Database.open({ storage: { disk: t.directory }, mode: "readonly" }), "invalid_option");
        // The refused open left nothing behind that stops a writer of this process from opening and recovering.
        await t.reopen();
        expect(await snapshot(t.db)).toEqual(before);
        await t.close();
        const reader = await Database.open({ storage: { disk: t.directory }, mode: "readonly" });
        try {
          expect(await snapshot(reader)).toEqual(before);
        } finally {
          await reader.close();
        }
        await t.reopen();
      });

      it("a read-only open of a path with no database is refused", async () => {
        await expectCode(Database.open({ storage: { disk: `${t.directory}-missing` }, mode: "readonly" }), "invalid_option");
      });

      it("a second writer on the same path is refused with writer_locked; after close it may open", async () => {
        await seedSocial(t);
        await expectCode(Database.open({ storage: { disk: t.directory } }), "writer_locked");
        const before = await snapshot(t.db);
        await t.close();
        const second = await Database.open({ storage: { disk: t.directory } });
        try {
          expect(await snapshot(second)).toEqual(before);
        } finally {
          await second.close();
        }
        await t.reopen();
        expect(await snapshot(t.db)).toEqual(before);
      });
    });
  } else {
    it("memory storage cannot be opened read-only", async () => {
      await expectCode(open({ storage: "memory", mode: "readonly" }), "invalid_option");
    });
  }
});

describe("tree helpers", () => {
  it("build the documented wire shape", () => {
    expect(write([entry("a", addN("User", { name: "Alice" }))], ["a"])).toEqual(
      JSON.parse(
        '{"request_type":"write","query":{"write":{"entries":[{"query":{"name":"a","root":{"add_n":{"label":"User","properties":[["name",{"value":{"string":"Alice"}}]]}}}}],"returns":["a"]}},"parameters":{}}',
      ),
    );
    expect(existsP(in_(context, "Follows"))).toEqual(JSON.parse('{"exists":{"traversal":{"in":{"input":"context","label":"Follows"}}}}'));
    expect(gt(countOf(in_(context, "Follows")), 1)).toEqual(
      JSON.parse('{"gt":{"left":{"count":{"traversal":{"in":{"input":"context","label":"Follows"}}}},"right":{"constant":{"i64":1}}}}'),
    );
    expect(read([entry("u", nodesOf("User"))], ["u"]).query).toEqual({
      read: { entries: [{ query: { name: "u", root: { nodes_where: { predicate: { eq: { left: { property: "$label" }, right: { constant: { string: "User" } } } } } } } }], returns: ["u"] },
    });
  });
});
