/**
 * Expressions and entry shapes that HelixQL queries compile to: `var`, `traversal` and `call` expressions, dotted
 * parameters, `for_each ... as`, `project` with `all` / `exclude`, and the existing shapes the compiler leans on
 * (by-ID lookups that check the label, label-and-property sources, parameter bounds, sub-traversals over variables).
 * Runs on memory and on three partitions on disk; bad input gets a stable code and leaves the data unchanged.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ErrorCode } from "../../protocol/errors.js";
import { BACKENDS, TestDatabase, expectRefused, ids, pluck, removeTempDirs, sorted } from "../helpers/engine.js";
import {
  addE,
  addN,
  and,
  count,
  entry,
  eq,
  existsP,
  forEach,
  limit,
  nodes,
  nodesOf,
  nodesVar,
  orderBy,
  out,
  project,
  prop,
  read,
  readOne,
  ref,
  values,
  where,
  write,
  writeOne,
  type Json,
  type Request,
  type TreeNode,
} from "../helpers/tree.js";

afterAll(removeTempDirs);

const CHEAP_BACKENDS = BACKENDS.filter((backend) => backend.storage === "memory" || backend.partitions === 3);

type Ids = Record<"alice" | "bob" | "carol" | "post", string>;

/** Alice (30) follows Bob (25) and Carol (35); Bob follows Carol; Alice wrote "Hello". Schemaless. */
async function seed(t: TestDatabase): Promise<Ids> {
  const result = await t.run(
    write(
      [
        entry("alice", addN("User", { name: "Alice", age: 30, bio: "likes graphs" })),
        entry("bob", addN("User", { name: "Bob", age: 25, bio: "likes vectors" })),
        entry("carol", addN("User", { name: "Carol", age: 35 })),
        entry("post", addN("Post", { title: "Hello" })),
        entry(undefined, addE(nodesVar("alice"), "Follows", ref.var("bob"))),
        entry(undefined, addE(nodesVar("alice"), "Follows", ref.var("carol"))),
        entry(undefined, addE(nodesVar("bob"), "Follows", ref.var("carol"))),
        entry(undefined, addE(nodesVar("alice"), "Wrote", ref.var("post"))),
      ],
      ["alice", "bob", "carol", "post"],
    ),
  );
  const only = (name: keyof Ids): string => ids(result[name])[0];
  return { alice: only("alice"), bob: only("bob"), carol: only("carol"), post: only("post") };
}

const exprProjection = (alias: string, expression: Json): Json => ({ expr: { alias, expr: expression } });
const projectRaw = (input: TreeNode, projections: Json[], extra: Record<string, Json> = {}): TreeNode => ({
  project: { input: input as Json, projections, ...extra },
});
const call = (fn: string, ...args: Json[]): Json => ({ call: { fn, args } });
const num = (value: number): Json => ({ constant: Number.isInteger(value) ? { i64: value } : { f64: value } });

describe.each(CHEAP_BACKENDS)("expressions on $name", (backend) => {
  let t: TestDatabase;
  let s: Ids;
  const get = async (root: TreeNode, parameters: Record<string, unknown> = {}): Promise<unknown> => (await t.run(readOne(root, parameters))).r;

  const refused = (request: unknown, code: ErrorCode): Promise<unknown> => expectRefused(t, request, code);

  beforeEach(async () => {
    t = await TestDatabase.open(backend);
    s = await seed(t);
  });

  afterEach(async () => {
    await t.close();
  });

  describe("var", () => {
    it("is a scalar's value, a values stream's array, and the IDs of a record stream", async () => {
      const result = await t.run(
        read(
          [
            entry("n", count(nodesOf("User"))),
            entry("names", values(nodesOf("User"), "name")),
            entry("friends", out(nodes(ref.ids(s.alice)), "Follows")),
            entry(
              "r",
              projectRaw(nodes(ref.ids(s.alice)), [
                exprProjection("n", { var: "n" }),
                exprProjection("names", { var: "names" }),
                exprProjection("friendCount", call("max", { constant: { i64: 0 } }, { count: { traversal: { nodes: { reference: { var: "friends" } } } } })),
              ]),
            ),
            entry("inFriends", where(nodesOf("User"), { is_in: { value: "id", values: { var: "friends" } } })),
          ],
          ["r", "inFriends"],
        ),
      );
      const [row] = result.r as Record<string, unknown>[];
      expect(row.n).toBe(3);
      expect(sorted(row.names as string[])).toEqual(["Alice", "Bob", "Carol"]);
      expect(row.friendCount).toBe(2);
      expect(sorted(ids(result.inFriends))).toEqual(sorted([s.bob, s.carol]));
    });

    it("an unknown variable is unknown_variable", async () => {
      await refused(readOne(projectRaw(nodes(ref.ids(s.alice)), [exprProjection("x", { var: "nope" })])), "unknown_variable");
      await refused(writeOne({ add_n: { label: "User", properties: [["name", { expr: { var: "nope" } }]] } }), "unknown_variable");
    });
  });

  describe("traversal", () => {
    it("renders a sub-traversal from the current element: rows, records, or a scalar", async () => {
      const wrote = { out: { input: "context", label: "Wrote" } };
      const rows = (await get(
        projectRaw(nodes(ref.ids(s.alice, s.bob)), [
          { property: { source: "name" } },
          exprProjection("posts", { traversal: { project: { input: wrote, projections: [{ property: { source: "title" } }] } } }),
          exprProjection("postRecords", { traversal: wrote }),
          exprProjection("following", { traversal: { count: { input: { out: { input: "context", label: "Follows" } } } } }),
          exprProjection("titles", { traversal: { values: { input: wrote, properties: ["title"] } } }),
        ]),
      )) as Record<string, unknown>[];
      const byName = Object.fromEntries(rows.map((row) => [row.name, row]));
      expect(byName.Alice).toEqual({
        name: "Alice",
        posts: [{ title: "Hello" }],
        postRecords: [{ $id: s.post, $label: "Post", title: "Hello" }],
        following: 2,
        titles: ["Hello"],
      });
      expect(byName.Bob).toEqual({ name: "Bob", posts: [], postRecords: [], following: 1, titles: [] });
    });

    it("context without a current element is malformed_tree", async () => {
      await refused(writeOne({ add_n: { label: "User", properties: [["n", { expr: { traversal: { count: { input: "context" } } } }]] } }), "malformed_tree");
    });
  });

  describe("call", () => {
    it("computes math functions over numbers, properties and bigints", async () => {
      const [row] = (await get(
        projectRaw(nodes(ref.ids(s.alice)), [
          exprProjection("pow", call("pow", num(2), num(10))),
          exprProjection("sqrt", call("sqrt", num(16))),
          exprProjection("log", call("log", num(8), num(2))),
          exprProjection("log10", call("log10", num(1000))),
          exprProjection("ln", call("ln", call("exp", num(2)))),
          exprProjection("abs", call("abs", num(-3.5))),
          exprProjection("rounding", call("max", call("ceil", num(1.2)), call("floor", num(1.8)), call("round", num(1.5)))),
          exprProjection("min", call("min", { property: "age" }, num(7), num(12))),
          exprProjection("trig", call("atan2", call("sin", num(0)), call("cos", num(0)))),
          exprProjection("big", call("abs", { constant: { i64: "-9007199254740993" } })),
          exprProjection("inverse", call("max", call("asin", num(1)), call("acos", num(1)), call("atan", num(1)), call("tan", num(0)))),
        ]),
      )) as Record<string, unknown>[];
      expect(row).toMatchObject({ pow: 1024, sqrt: 4, log: 3, log10: 3, abs: 3.5, rounding: 2, min: 7, trig: 0, big: 9007199254740992 });
      expect(row.ln).toBeCloseTo(2);
      expect(row.inverse).toBeCloseTo(Math.PI / 2);
    });

    it("a null or missing argument gives null", async () => {
      const [row] = (await get(
        projectRaw(nodes(ref.ids(s.carol)), [exprProjection("a", call("pow", { property: "bio" }, num(2))), exprProjection("b", call("abs", { constant: "null" }))]),
      )) as Record<string, unknown>[];
      expect(row).toEqual({ a: null, b: null });
    });

    it("a non-number is invalid_type; a wrong arity or an unknown function is malformed_tree", async () => {
      const at = (expression: Json): Request =>
        writeOne({ update: { input: nodes(ref.ids(s.alice)) as Json, properties: [["x", { expr: expression }]] } }, { text: "abc" });
      await refused(at(call("sqrt", { param: "text" })), "invalid_type");
      await refused(readOne(projectRaw(nodes(ref.ids(s.alice)), [exprProjection("x", call("max", num(1), { property: "name" }))])), "invalid_type");
      await refused(at(call("pow", num(2))), "malformed_tree");
      await refused(at(call("min", num(2))), "malformed_tree");
      await refused(at(call("sqrt", num(2), num(3))), "malformed_tree");
      await refused(at(call("cube", num(2))), "malformed_tree");
      await refused(at({ call: { fn: "abs", args: num(2) } }), "malformed_tree");
    });
  });

  describe("parameters", () => {
    it("a dotted name walks into an object parameter, unless a parameter has that exact name", async () => {
      const rows = await get(projectRaw(nodes(ref.ids(s.alice)), [exprProjection("a", { param: "row.name" }), exprProjection("b", { param: "row.address.city" }), exprProjection("c", { param: "x.y" })]), {
        row: { name: "Zoe", address: { city: "Oslo" } },
        "x.y": "exact",
        x: { y: "walked" },
      });
      expect(rows).toEqual([{ a: "Zoe", b: "Oslo", c: "exact" }]);
    });

    it("a dotted name that leads nowhere is missing_parameter", async () => {
      const at = (name: string): Request =>
        writeOne({ add_n: { label: "User", properties: [["name", { expr: { param: name } }]] } }, { row: { name: "Zoe" }, text: "abc" });
      await refused(at("row.age"), "missing_parameter");
      await refused(at("text.length"), "missing_parameter");
      await refused(at("other.name"), "missing_parameter");
    });

    it("a reference takes a dotted parameter too", async () => {
      expect(ids(await get(nodes({ param: "row.id" }), { row: { id: s.bob } }))).toEqual([s.bob]);
    });
  });

  describe("for_each with as", () => {
    it("binds each element, of any JSON type, as one parameter", async () => {
      const result = await t.run({
        request_type: "write",
        query: {
          write: {
            entries: [
              { for_each: { param: "names", as: "n", body: [entry("made", { add_n: { label: "Tag", properties: [["name", { expr: { param: "n" } }]] } })] } },
              {
                for_each: {
                  param: "rows",
                  as: "row",
                  body: [entry("rows", { add_n: { label: "Row", properties: [["name", { expr: { param: "row.name" } }], ["whole", { expr: { param: "row" } }]] } })],
                },
              },
            ],
            returns: ["made", "rows"],
          },
        },
        parameters: { names: ["a", "b", "c"], rows: [{ name: "r1" }, { name: "r2" }] },
      });
      expect(pluck(result.made, "name")).toEqual(["a", "b", "c"]);
      expect(pluck(result.rows, "name")).toEqual(["r1", "r2"]);
      expect(pluck(result.rows, "whole")).toEqual([{ name: "r1" }, { name: "r2" }]);
    });

    it("without as, objects' fields still become parameters and a non-object is invalid_type", async () => {
      const made = await t.run(write([forEach("rows", [entry("made", { add_n: { label: "Tag", properties: [["name", { expr: { param: "name" } }]] } })])], ["made"], { rows: [{ name: "x" }] }));
      expect(pluck(made.made, "name")).toEqual(["x"]);
      await refused(write([forEach("rows", [entry("made", addN("Tag"))])], ["made"], { rows: ["x"] }), "invalid_type");
      await refused(write([{ for_each: { param: "rows", as: 3 as unknown as string, body: [] } }], []), "malformed_tree");
    });
  });

  describe("for_each over var", () => {
    it("binds each record of an earlier entry as a one-record variable, gone after the loop", async () => {
      const result = await t.run({
        request_type: "write",
        query: {
          write: {
            entries: [
              entry("tags", addN("Tag", { name: "t" })),
              entry("more", addN("Tag", { name: "u" })),
              entry("all", nodesOf("Tag")),
              { for_each: { var: "all", as: "tag", body: [entry("each", nodesVar("tag"))] } },
            ],
            returns: ["each"],
          },
        },
      });
      expect(pluck(result.each, "name")).toEqual(["t", "u"]);
      const after = write([{ for_each: { var: "none", as: "x", body: [] } }], []);
      await refused(after, "unknown_variable");
      await refused(write([entry("all", nodesOf("Tag")), { for_each: { var: "all", as: "tag", body: [] } }, entry("again", nodesVar("tag"))], ["again"]), "unknown_variable");
    });

    it("needs as, takes param or var but not both, and refuses a stream of values", async () => {
      await refused(write([entry("all", nodesOf("Tag")), { for_each: { var: "all", body: [] } }], []), "malformed_tree");
      await refused(write([{ for_each: { var: "all", param: "rows", as: "x", body: [] } }], []), "malformed_tree");
      await refused(write([entry("names", values(nodesOf("Tag"), "name")), { for_each: { var: "names", as: "x", body: [] } }], []), "malformed_tree");
    });
  });

  describe("project all and exclude", () => {
    it("all starts each row as the whole record; projections add or overwrite", async () => {
      const rows = await get(projectRaw(nodes(ref.ids(s.alice)), [exprProjection("age", { add: { left: { property: "age" }, right: num(1) } }), exprProjection("extra", num(7))], { all: true }));
      expect(rows).toEqual([{ $id: s.alice, $label: "User", name: "Alice", age: 31, bio: "likes graphs", extra: 7 }]);
    });

    it("exclude implies all and leaves the listed properties out", async () => {
      const rows = await get(projectRaw(nodes(ref.ids(s.alice)), [], { exclude: ["bio", "$label"] }));
      expect(rows).toEqual([{ $id: s.alice, name: "Alice", age: 30 }]);
    });

    it("a non-boolean all or a non-list exclude is malformed_tree", async () => {
      await refused(readOne(projectRaw(nodes(ref.ids(s.alice)), [], { all: "yes" })), "malformed_tree");
      await refused(readOne(projectRaw(nodes(ref.ids(s.alice)), [], { exclude: "bio" })), "malformed_tree");
    });
  });

  describe("shapes the compiler relies on", () => {
    it("has_label on a by-ID lookup checks the label", async () => {
      const lookup = (label: string): TreeNode => ({ has_label: { input: { nodes: { reference: { param: "id" } } }, label } });
      expect(ids(await get(lookup("User"), { id: s.alice }))).toEqual([s.alice]);
      expect(await get(lookup("Post"), { id: s.alice })).toEqual([]);
    });

    it("nodes_where with an and of $label and a property", async () => {
      expect(ids(await get({ nodes_where: { predicate: and(eq(prop("$label"), "User"), eq(prop("name"), "Bob")) as Json } }))).toEqual([s.bob]);
      expect(await get({ nodes_where: { predicate: and(eq(prop("$label"), "Post"), eq(prop("name"), "Bob")) as Json } })).toEqual([]);
    });

    it("range with parameter bounds, and order_by then limit", async () => {
      const ranged = { range: { input: orderBy(nodesOf("User"), "age") as Json, start: { expr: { param: "a" } }, end: { expr: { param: "b" } } } };
      expect(pluck(await get(ranged, { a: 1, b: 3 }), "name")).toEqual(["Alice", "Carol"]);
      expect(pluck(await get(limit(orderBy(nodesOf("User"), "age", "desc"), 2)), "name")).toEqual(["Carol", "Alice"]);
      await refused(readOne(ranged, { a: -1, b: 2 }), "invalid_type");
      await refused(readOne(ranged, { a: "x", b: 2 }), "invalid_type");
    });

    it("exists and count over a variable source inside a sub-traversal", async () => {
      const result = await t.run(
        read(
          [
            entry("carol", nodes(ref.ids(s.carol))),
            entry("withCarol", where(nodesOf("User"), existsP({ nodes: { reference: { var: "carol" } } }))),
            entry("count", projectRaw(nodes(ref.ids(s.alice)), [exprProjection("c", { count: { traversal: { nodes: { reference: { var: "carol" } } } } })])),
            entry("none", nodes(ref.ids())),
            entry("withNone", where(nodesOf("User"), existsP({ nodes: { reference: { var: "none" } } }))),
          ],
          ["withCarol", "count", "withNone"],
        ),
      );
      expect(ids(result.withCarol)).toHaveLength(3);
      expect(result.count).toEqual([{ c: 1 }]);
      expect(result.withNone).toEqual([]);
    });

    it("is_in against an array parameter, and contains on strings", async () => {
      const isIn = where(nodesOf("User"), { is_in: { value: { property: "name" }, values: { param: "names" } } });
      expect(sorted(pluck(await get(isIn, { names: ["Bob", "Carol", "Nobody"] }), "name"))).toEqual(["Bob", "Carol"]);
      const idIn = where(nodesOf("User"), { is_in: { value: "id", values: { param: "ids" } } });
      expect(ids(await get(idIn, { ids: [s.bob] }))).toEqual([s.bob]);
      const contains = where(nodesOf("User"), { contains: { value: { property: "bio" }, substring: { param: "q" } } });
      expect(sorted(pluck(await get(contains, { q: "likes" }), "name"))).toEqual(["Alice", "Bob"]);
      expect(pluck(await get(contains, { q: "vec" }), "name")).toEqual(["Bob"]);
      // HelixDB v3's rules: a value that is not an array is one member; CONTAINS of a number is false.
      expect(pluck(await get(isIn, { names: "Bob" }), "name")).toEqual(["Bob"]);
      expect(await get(where(nodesOf("User"), { contains: { value: { property: "age" }, substring: { param: "q" } } }), { q: "3" })).toEqual([]);
    });
  });
});
