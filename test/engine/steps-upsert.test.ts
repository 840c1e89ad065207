/**
 * `upsert_n`, `upsert_v` and `upsert_e`: update what the input found (of the upsert's label, and for edges between
 * the named endpoints), create otherwise. Schema mode, so creation and update are checked like add_n and update; a
 * refused upsert changes nothing. Runs on memory and on three partitions on disk.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ErrorCode } from "../../protocol/errors.js";
import { BACKENDS, TestDatabase, expectCode, ids, pluck, removeTempDirs, snapshot, sorted } from "../helpers/engine.js";
import {
  addE,
  addN,
  and,
  assignments,
  count,
  entry,
  eq,
  nodes,
  nodesOf,
  nodesVar,
  outE,
  param,
  prop,
  read,
  readOne,
  ref,
  write,
  writeOne,
  type Json,
  type Ref,
  type Request,
  type TreeNode,
} from "../helpers/tree.js";

afterAll(removeTempDirs);

const CHEAP_BACKENDS = BACKENDS.filter((backend) => backend.storage === "memory" || backend.partitions === 3);

const SCHEMA = `
N::User { REQUIRED name: String, age: U32 DEFAULT 0 }
N::Team { name: String }
V::Doc { title: String }
E::Follows { From: User, To: User, Properties: { since: U32 } }
`;

type Ids = Record<"alice" | "bob" | "carol" | "team" | "doc", string>;

const upsertN = (input: TreeNode, label: string, properties: Record<string, unknown>): TreeNode => ({
  upsert_n: { input: input as Json, label, properties: assignments(properties) },
});
const upsertV = (input: TreeNode, label: string, vector: number[] | undefined, properties: Record<string, unknown>): TreeNode => ({
  upsert_v: {
    input: input as Json,
    label,
    ...(vector === undefined ? {} : { vector: { value: { f64_array: vector } } }),
    properties: assignments(properties),
  },
});
const upsertE = (input: TreeNode, label: string, from: Ref, to: Ref, properties: Record<string, unknown>): TreeNode => ({
  upsert_e: { input: input as Json, label, from: from as Json, to: to as Json, properties: assignments(properties) },
});
const userNamed = (name: string): TreeNode => ({ nodes_where: { predicate: and(eq(prop("$label"), "User"), eq(prop("name"), name)) as Json } });
const allDocs: TreeNode = { vectors: { reference: "all" } };

describe.each(CHEAP_BACKENDS)("upserts on $name", (backend) => {
  let t: TestDatabase;
  let s: Ids;
  const put = async (root: TreeNode, parameters: Record<string, unknown> = {}): Promise<Record<string, unknown>[]> =>
    (await t.run(writeOne(root, parameters))).r as Record<string, unknown>[];
  const get = async (root: TreeNode): Promise<unknown> => (await t.run(readOne(root))).r;

  async function refused(request: Request | unknown, code: ErrorCode): Promise<void> {
    const before = await snapshot(t.db);
    const docs = await get(allDocs);
    await expectCode(t.run(request), code);
    expect(await snapshot(t.db)).toEqual(before);
    expect(await get(allDocs)).toEqual(docs);
  }

  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: SCHEMA });
    const result = await t.run(
      write(
        [
          entry("alice", addN("User", { name: "Alice", age: 30 })),
          entry("bob", addN("User", { name: "Bob" })),
          entry("carol", addN("User", { name: "Carol" })),
          entry("team", addN("Team", { name: "Alice" })),
          entry("doc", { add_v: { label: "Doc", vector: { value: { f64_array: [1, 0] } }, properties: assignments({ title: "One" }) } }),
          entry(undefined, addE(nodesVar("alice"), "Follows", ref.var("bob"), { since: 2020 })),
        ],
        ["alice", "bob", "carol", "team", "doc"],
      ),
    );
    const only = (name: keyof Ids): string => ids(result[name])[0];
    s = { alice: only("alice"), bob: only("bob"), carol: only("carol"), team: only("team"), doc: only("doc") };
  });

  afterEach(async () => {
    await t.close();
  });

  describe("upsert_n", () => {
    it("updates the nodes of its label that the input found", async () => {
      const rows = await put(upsertN(userNamed("Alice"), "User", { age: 31 }));
      expect(rows).toEqual([{ $id: s.alice, $label: "User", name: "Alice", age: 31 }]);
      expect(await get(count(nodesOf("User")))).toBe(3);
      const both = await put(upsertN(nodes(ref.ids(s.alice, s.bob, s.alice)), "User", { age: 5 }));
      expect(sorted(ids(both))).toEqual(sorted([s.alice, s.bob]));
      expect(pluck(await get(nodes(ref.ids(s.alice, s.bob))), "age")).toEqual([5, 5]);
    });

    it("creates one node when the input found none of its label", async () => {
      const [created] = await put(upsertN(userNamed("Zed"), "User", { name: "Zed" }));
      expect(created).toEqual({ $id: expect.stringMatching(/^\d+$/), $label: "User", name: "Zed", age: 0 });
      // A Team named Alice is not a User: a User is created.
      const [user] = await put(upsertN(nodes(ref.ids(s.team)), "User", { name: "Alice 2" }));
      expect(user.$label).toBe("User");
      expect(await get(count(nodesOf("User")))).toBe(5);
      expect(await get(nodes(ref.ids(s.team)))).toEqual([{ $id: s.team, $label: "Team", name: "Alice" }]);
    });

    it("takes parameters, as the compiler's for_each bodies do", async () => {
      const request = (name: string): Request => writeOne(upsertN(userNamed(name), "User", { name: param("name"), age: param("age") }), { name, age: 44 });
      expect(pluck((await t.run(request("Bob"))).r, "$id")).toEqual([s.bob]);
      expect(pluck((await t.run(request("Dora"))).r, "age")).toEqual([44]);
      expect(await get(count(nodesOf("User")))).toBe(4);
    });

    it("a missing REQUIRED property, a wrong type, or an unknown label is refused and changes nothing", async () => {
      await refused(writeOne(upsertN(userNamed("Zed"), "User", { age: 3 })), "missing_property");
      await refused(writeOne(upsertN(userNamed("Alice"), "User", { age: true })), "invalid_type");
      await refused(writeOne(upsertN(userNamed("Alice"), "User", { age: "old" })), "invalid_value");
      await refused(writeOne(upsertN(userNamed("Zed"), "User", { name: "Zed", age: -1 })), "invalid_value");
      await refused(writeOne(upsertN(userNamed("Alice"), "User", { nickname: "Al" })), "invalid_field");
      await refused(writeOne(upsertN(userNamed("Zed"), "Ghost", {})), "unknown_label");
    });

    it("is a mutation: refused in a read batch; a bad shape is malformed_tree", async () => {
      await refused(read([entry("r", upsertN(userNamed("Zed"), "User", { name: "Zed" }))], ["r"]), "write_in_read");
      await refused(writeOne({ upsert_n: { input: userNamed("Zed") as Json, properties: [] } }), "malformed_tree");
      await refused(writeOne({ upsert_n: { input: userNamed("Zed") as Json, label: "User", properties: [], extra: 1 } }), "malformed_tree");
      await refused(writeOne({ upsert_n: { label: "User", properties: [] } }), "malformed_tree");
    });
  });

  describe("upsert_v", () => {
    it("updates found vectors, replacing the vector when one is given", async () => {
      const [kept] = await put(upsertV({ vectors: { reference: { ids: [s.doc] } } }, "Doc", undefined, { title: "Uno" }));
      expect(kept).toEqual({ $id: s.doc, $label: "Doc", $vector: [1, 0], title: "Uno" });
      const [moved] = await put(upsertV({ vectors: { reference: { ids: [s.doc] } } }, "Doc", [0, 1], {}));
      expect(moved).toEqual({ $id: s.doc, $label: "Doc", $vector: [0, 1], title: "Uno" });
    });

    it("creates one vector when none was found", async () => {
      const [created] = await put(upsertV({ vectors_where: { predicate: eq(prop("title"), "Two") as Json } }, "Doc", [0.5, 0.5], { title: "Two" }));
      expect(created).toEqual({ $id: expect.stringMatching(/^\d+$/), $label: "Doc", $vector: [0.5, 0.5], title: "Two" });
      expect(ids(await get(allDocs))).toHaveLength(2);
    });

    it("creating without a vector, or with a bad one, is refused and changes nothing", async () => {
      const nothing: TreeNode = { vectors_where: { predicate: eq(prop("title"), "None") as Json } };
      await refused(writeOne(upsertV(nothing, "Doc", undefined, { title: "None" })), "missing_property");
      await refused(writeOne({ upsert_v: { input: nothing as Json, label: "Doc", vector: { value: { string: "v" } } } }), "invalid_type");
      await refused(writeOne({ upsert_v: { input: { vectors: { reference: { ids: [s.doc] } } } as Json, label: "Doc", vector: { value: { array: [] } } } }), "invalid_value");
      await refused(writeOne(upsertV(nothing, "Doc", [1], { title: 3 })), "invalid_type");
    });
  });

  describe("upsert_e", () => {
    const follows = (source: keyof Ids): TreeNode => outE(nodes(ref.ids(s[source])), "Follows");

    it("updates the edges of its label between the named endpoints", async () => {
      const rows = await put(upsertE(follows("alice"), "Follows", ref.ids(s.alice), ref.ids(s.bob), { since: 2024 }));
      expect(rows).toEqual([{ $id: expect.stringMatching(/^\d+$/), $label: "Follows", $from: s.alice, $to: s.bob, since: 2024 }]);
      expect(ids(await get(outE(nodes(ref.ids(s.alice)))))).toHaveLength(1);
    });

    it("creates an edge for each from × to pair when none matched", async () => {
      const [created] = await put(upsertE(follows("alice"), "Follows", ref.ids(s.alice), ref.ids(s.carol), { since: 2025 }));
      expect(created).toMatchObject({ $label: "Follows", $from: s.alice, $to: s.carol, since: 2025 });
      const pairs = await put(upsertE({ edges: { reference: { ids: [] } } }, "Follows", { param: "from" }, ref.ids(s.carol), {}), { from: [s.bob, s.carol] });
      expect(pairs.map((edge) => [edge.$from, edge.$to])).toEqual([[s.bob, s.carol], [s.carol, s.carol]]);
      expect(ids(await get({ edges: { reference: "all" } }))).toHaveLength(4);
    });

    it("takes endpoints from variables", async () => {
      const result = await t.run(
        write(
          [
            entry("a", nodes(ref.ids(s.alice))),
            entry("b", nodes(ref.ids(s.bob))),
            entry("r", upsertE(outE(nodesVar("a"), "Follows"), "Follows", ref.var("a"), ref.var("b"), { since: 1999 })),
          ],
          ["r"],
        ),
      );
      expect(pluck(result.r, "since")).toEqual([1999]);
    });

    it("a missing endpoint, a wrong endpoint label or a wrong type is refused and changes nothing", async () => {
      await refused(writeOne(upsertE(follows("alice"), "Follows", ref.ids(s.alice), ref.ids("987654321"), {})), "node_not_found");
      await refused(writeOne(upsertE(follows("alice"), "Follows", ref.ids(s.alice), ref.ids(s.team), {})), "edge_endpoint_mismatch");
      await refused(writeOne(upsertE(follows("alice"), "Follows", ref.ids(s.alice), ref.ids(s.bob), { since: false })), "invalid_type");
      await refused(writeOne(upsertE(follows("alice"), "Follows", ref.ids(s.alice), ref.ids(s.carol), { since: false })), "invalid_type");
      await refused(writeOne({ upsert_e: { input: follows("alice") as Json, label: "Follows", to: ref.ids(s.bob) as Json } }), "malformed_tree");
    });
  });
});
