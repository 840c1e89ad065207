/**
 * The branching and stream-shaping steps of HelixDB's v3 vocabulary: `union`, `coalesce`, `optional`, `choose`,
 * Silk's `intersect`, `repeat` (times, until, emit, bounds), `fold` / `unfold`, `group`, `order_by_multiple`, `edge_has` /
 * `edge_has_label`, `drop_edge` / `drop_edge_labeled` / `drop_edge_by_id`, `inject`, `as` / `store` / `select`;
 * bad input with its JSON path, and proof that refused requests change nothing. Memory and three partitions.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ErrorCode } from "../../protocol/errors.js";
import { BACKENDS, TestDatabase, expectRefused, removeTempDirs } from "../helpers/engine.js";
import {
  addE,
  addN,
  context,
  count,
  entry,
  eq,
  gt,
  nodesOf,
  nodesVar,
  orderBy,
  out,
  outE,
  prop,
  read,
  readOne,
  ref,
  values,
  where,
  write,
  writeOne,
  type Json,
  type TreeNode,
} from "../helpers/tree.js";

afterAll(removeTempDirs);

const CHEAP_BACKENDS = BACKENDS.filter((backend) => backend.storage === "memory" || backend.partitions === 3);

const sub = (root: TreeNode): Json => ({ root: root as Json });
const step = (op: string, input: TreeNode | undefined, fields: Record<string, unknown> = {}): TreeNode =>
  ({ [op]: { ...(input === undefined ? {} : { input }), ...fields } }) as TreeNode;
const user = (name: string): TreeNode => where(nodesOf("User"), eq(prop("name"), name));
const names = (input: TreeNode): TreeNode => values(input, "name");
/** What `names` answers: one object per element, as HelixDB v3 answers values (it was one flat array of names). */
const rows = (...names: string[]): { name: string }[] => names.map((name) => ({ name }));
const repeatOut = (input: TreeNode, config: Record<string, unknown>): TreeNode =>
  step("repeat", input, { config: { traversal: sub(out(context, "Follows")), ...config } });

describe.each(CHEAP_BACKENDS)("branch and shape steps on $name", (backend) => {
  let t: TestDatabase;
  const get = async (root: TreeNode): Promise<unknown> => (await t.run(readOne(root))).r;

  async function refused(request: unknown, code: ErrorCode, path?: string): Promise<void> {
    const error = await expectRefused(t, request, code);
    if (path !== undefined) expect(error.message.startsWith(`${path}:`), error.message).toBe(true);
  }

  beforeEach(async () => {
    t = await TestDatabase.open(backend);
    const people = { Ann: ["Paris", 30], Bob: ["Lyon", 25], Cid: ["Paris", 41], Dee: ["Lyon", 25] } as const;
    await t.run(write(Object.entries(people).map(([name, [city, age]]) => entry(name, addN("User", { name, city, age }))), []));
    const follows: [string, string, number][] = [["Ann", "Bob", 1], ["Bob", "Cid", 2], ["Cid", "Dee", 3], ["Ann", "Cid", 2]];
    for (const [from, to, weight] of follows) {
      const target = (await t.run(readOne(step("id", user(to))))).r as string[];
      await t.run(writeOne(addE(user(from), "Follows", ref.ids(...target), { weight })));
    }
    await t.run(writeOne(addE(user("Ann"), "Likes", ref.ids(...((await t.run(readOne(step("id", user("Dee"))))).r as string[])))));
  });

  afterEach(async () => {
    await t.destroy();
  });

  it("union concatenates each sub-traversal's result, element by element", async () => {
    const both = step("union", user("Bob"), { traversals: [sub(out(context, "Follows")), sub(step("in", context, { label: "Follows" }))] });
    expect(await get(names(both))).toEqual(rows("Cid", "Ann"));
    // A count inside a branch counts per element; scalars and values come back as one values array.
    const perUser = step("union", orderBy(nodesOf("User"), "name"), { traversals: [sub(count(out(context, "Follows")))] });
    expect(await get(perUser)).toEqual([2, 1, 1, 0]);
  });

  it("coalesce takes the first sub-traversal that yields something, optional falls back to the element", async () => {
    const firstNonEmpty = step("coalesce", orderBy(nodesOf("User"), "name"), {
      traversals: [sub(out(context, "Likes")), sub(out(context, "Follows")), sub(context)],
    });
    expect(await get(names(firstNonEmpty))).toEqual(rows("Dee", "Cid", "Dee", "Dee"));
    const optional = step("optional", orderBy(nodesOf("User"), "name"), { traversal: sub(out(context, "Likes")) });
    expect(await get(names(optional))).toEqual(rows("Dee", "Bob", "Cid", "Dee"));
  });

  it("choose runs then_traversal where the condition holds, else_traversal (or the element itself) elsewhere", async () => {
    const users = orderBy(nodesOf("User"), "name");
    const withElse = step("choose", users, { condition: gt(prop("age"), 28), then_traversal: sub(out(context, "Follows")), else_traversal: sub(context) });
    expect(await get(names(withElse))).toEqual(rows("Bob", "Cid", "Bob", "Dee", "Dee"));
    const withoutElse = step("choose", users, { condition: gt(prop("age"), 28), then_traversal: sub(step("limit", context, { count: { literal: 0 } })) });
    expect(await get(names(withoutElse))).toEqual(rows("Bob", "Dee"));
  });

  it("intersect keeps what every element's sub-traversal reaches, in the smallest result's order", async () => {
    // Ann follows Bob and Cid, Bob follows Cid, Cid follows Dee: Ann and Bob both follow Cid only.
    const annAndBob = where(nodesOf("User"), { or: { predicates: [eq(prop("name"), "Ann"), eq(prop("name"), "Bob")] } } as TreeNode);
    expect(await get(names(step("intersect", annAndBob, { traversal: sub(out(context, "Follows")) })))).toEqual(rows("Cid"));
    // Everyone's followees have nothing in common (Dee follows nobody); a single element keeps its whole result.
    expect(await get(count(step("intersect", nodesOf("User"), { traversal: sub(out(context, "Follows")) })))).toBe(0);
    expect(await get(names(step("intersect", user("Ann"), { traversal: sub(out(context, "Follows")) })))).toEqual(rows("Bob", "Cid"));
    // Cid's followers are Bob and Ann, Bob's Ann: Ann alone, whichever partition holds each.
    const cidAndBob = where(nodesOf("User"), { or: { predicates: [eq(prop("name"), "Cid"), eq(prop("name"), "Bob")] } } as TreeNode);
    expect(await get(names(step("intersect", cidAndBob, { traversal: sub(step("in", context, { label: "Follows" })) })))).toEqual(rows("Ann"));
  });

  it("repeat follows its body times over, stops at until, emits levels, and ends at an empty level, as HelixDB v3 does", async () => {
    // Ann follows Bob and Cid, Bob Cid, Cid Dee: L0 [Ann], L1 [Bob, Cid], L2 [Cid, Dee], L3 [Dee], L4 empty.
    expect(await get(names(repeatOut(user("Ann"), { times: 2 })))).toEqual(rows("Cid", "Dee"));
    expect(await get(names(repeatOut(user("Ann"), { times: 2, emit: "after" })))).toEqual(rows("Bob", "Cid", "Cid", "Dee"));
    expect(await get(names(repeatOut(user("Ann"), { times: 1, emit: "all" })))).toEqual(rows("Ann", "Bob", "Cid"));
    expect(await get(names(repeatOut(user("Ann"), { times: 2, emit: "before" })))).toEqual(rows("Ann", "Bob", "Cid"));
    expect(await get(names(repeatOut(user("Ann"), { times: 2, emit: "all" })))).toEqual(rows("Ann", "Bob", "Cid", "Bob", "Cid", "Cid", "Dee"));
    // Only the levels the iterations make are filtered and emitted: the last level is not added.
    expect(await get(names(repeatOut(user("Ann"), { times: 2, emit: "after", emit_predicate: eq(prop("city"), "Paris") })))).toEqual(rows("Cid", "Cid"));
    // until ends the whole loop at the first level holding a match, and that level is the answer.
    expect(await get(names(repeatOut(user("Ann"), { until: eq(prop("name"), "Cid") })))).toEqual(rows("Bob", "Cid"));
    expect(await get(names(repeatOut(user("Ann"), { until: eq(prop("name"), "Dee"), emit: "after" })))).toEqual(rows("Bob", "Cid", "Cid", "Dee"));
    // No times and no until: the loop ends when a level is empty (Dee follows nobody).
    expect(await get(names(repeatOut(user("Ann"), {})))).toEqual(rows());
    expect(await get(names(repeatOut(user("Ann"), { times: 0 })))).toEqual(rows("Ann"));
  });

  it("fold gathers a stream into one array, unfold spreads it again, group rows records by a property's value", async () => {
    const folded = step("fold", names(orderBy(nodesOf("User"), "name")));
    expect(await get(folded)).toEqual(["Ann", "Bob", "Cid", "Dee"]);
    expect(await get(step("count", step("unfold", folded)))).toBe(4);
    const records = (await get(step("fold", user("Ann")))) as { name: string }[];
    expect(records.map((record) => record.name)).toEqual(["Ann"]);
    // HelixDB v3's rows: one per value, ordered by it, keys in name order, the IDs in stream order.
    const idOf = async (name: string): Promise<string> => ((await get(step("id", user(name)))) as string[])[0];
    const [ann, bob, cid, dee] = [await idOf("Ann"), await idOf("Bob"), await idOf("Cid"), await idOf("Dee")];
    const grouped = (await get(step("group", orderBy(nodesOf("User"), "name"), { property: "city" }))) as Record<string, unknown>[];
    expect(grouped).toEqual([
      { city: "Lyon", count: 2, ids: [bob, dee] },
      { city: "Paris", count: 2, ids: [ann, cid] },
    ]);
    expect(Object.keys(grouped[0])).toEqual(["city", "count", "ids"]);
    const byAge = (await get(step("group", orderBy(nodesOf("User"), "name"), { property: "age" }))) as { age: number; count: number }[];
    expect(byAge.map(({ age, count }) => [age, count])).toEqual([[25, 2], [30, 1], [41, 1]]);
    const byName = (await get(step("group", user("Ann"), { property: "name" }))) as Record<string, unknown>[];
    expect(Object.keys(byName[0])).toEqual(["count", "ids", "name"]);
  });

  it("order_by_multiple sorts by each key in turn", async () => {
    const sorted = step("order_by_multiple", nodesOf("User"), { orderings: [["city", "asc"], ["age", "desc"], ["name", "desc"]] });
    expect(await get(names(sorted))).toEqual(rows("Dee", "Bob", "Cid", "Ann"));
  });

  it("edge_has and edge_has_label keep edges by property and label", async () => {
    const weighted = step("edge_has", outE(user("Ann")), { property: "weight", value: { value: { i64: 2 } } });
    expect(await get(values(step("in_n", weighted), "name"))).toEqual(rows("Ann"));
    expect(await get(names(step("out_n", weighted)))).toEqual(rows("Cid"));
    expect(await get(count(step("edge_has_label", outE(user("Ann")), { label: "Likes" })))).toBe(1);
    expect(await get(count(step("edge_has_label", user("Ann"), { label: "Likes" })))).toBe(0);
  });

  it("drop_edge, drop_edge_labeled and drop_edge_by_id drop edges and keep the nodes", async () => {
    const cid = (await get(step("id", user("Cid")))) as string[];
    const dee = (await get(step("id", user("Dee")))) as string[];
    const kept = await t.run(writeOne(step("drop_edge", user("Ann"), { to: ref.ids(...cid) })));
    expect((kept.r as { name: string }[]).map((record) => record.name)).toEqual(["Ann"]);
    expect(await get(names(out(user("Ann"))))).toEqual(rows("Bob", "Dee"));
    await t.run(writeOne(step("drop_edge_labeled", user("Ann"), { to: ref.ids(...dee), label: "Follows" })));
    expect(await get(names(out(user("Ann"))))).toEqual(rows("Bob", "Dee"));
    await t.run(writeOne(step("drop_edge_labeled", user("Ann"), { to: ref.ids(...dee), label: "Likes" })));
    expect(await get(names(out(user("Ann"))))).toEqual(rows("Bob"));
    const edge = (await get(step("id", outE(user("Bob"))))) as string[];
    await t.run(writeOne(step("drop_edge_by_id", undefined, { edges: ref.ids(...edge, "999999") })));
    expect(await get(count(outE(user("Bob"))))).toBe(0);
    expect(await get(count(nodesOf("User")))).toBe(4);
  });

  it("as binds a stream that select, inject and returns can read; store appends", async () => {
    const request = read(
      [
        entry("r", names(step("select", out(step("as", user("Ann"), { name: "start" })), { name: "start" }))),
        entry("both", names(step("inject", user("Bob"), { variable: "start" }))),
        entry("stored", step("store", user("Cid"), { name: "pile" })),
        entry(undefined, step("store", user("Dee"), { name: "pile" })),
        entry("only", names(step("inject", undefined, { variable: "pile" }))),
      ],
      ["r", "both", "start", "only"],
    );
    const result = await t.run(request);
    expect(result.r).toEqual(rows("Ann"));
    expect(result.both).toEqual(rows("Bob", "Ann"));
    expect((result.start as { name: string }[]).map((record) => record.name)).toEqual(["Ann"]);
    expect(result.only).toEqual(rows("Cid", "Dee"));
    await refused(readOne(step("select", user("Ann"), { name: "nowhere" })), "unknown_variable");
    // A name bound by `as` reads like an entry's name in later entries of the same batch.
    const later = await t.run(read([entry(undefined, step("as", user("Bob"), { name: "b" })), entry("x", names(out(nodesVar("b"))))], ["x"]));
    expect(later.x).toEqual(rows("Cid"));
  });

  it("refuses bad shapes with the JSON path, mutations in read branches, and runaway repeats", async () => {
    const at = "$.query.read.entries[0].query.root";
    await refused(readOne(step("union", user("Ann"), { traversals: [] })), "malformed_tree", `${at}.union.traversals`);
    await refused(readOne(step("union", user("Ann"), { traversals: [{ start: "context" }] })), "malformed_tree", `${at}.union.traversals[0].start`);
    await refused(readOne(step("optional", user("Ann"), { traversal: {} })), "malformed_tree", `${at}.optional.traversal.root`);
    await refused(readOne(step("choose", user("Ann"), { then_traversal: sub(context) })), "malformed_tree", `${at}.choose.condition`);
    await refused(readOne(repeatOut(user("Ann"), { times: 5, max_depth: 2 })), "malformed_tree", `${at}.repeat.config.times`);
    await refused(readOne(repeatOut(user("Ann"), { emit: "sometimes" })), "malformed_tree", `${at}.repeat.config.emit`);
    await refused(readOne(repeatOut(user("Ann"), { times: 2, emit: "all", emit_predicate: eq(prop("city"), "Paris") })), "malformed_tree", `${at}.repeat.config.emit_predicate`);
    await refused(readOne(repeatOut(user("Ann"), { max_depth: 1_001 })), "malformed_tree", `${at}.repeat.config.max_depth`);
    await refused(readOne(step("order_by_multiple", user("Ann"), { orderings: [["age", "up"]] })), "malformed_tree", `${at}.order_by_multiple.orderings[0][1]`);
    await refused(readOne(step("group", user("Ann"), {})), "malformed_tree", `${at}.group.property`);
    await refused(readOne(step("group", user("Ann"), { property: "ids" })), "malformed_tree", `${at}.group.property`);
    await refused(readOne(step("drop_edge_labeled", user("Ann"), { to: "all" })), "malformed_tree", `${at}.drop_edge_labeled.label`);
    await refused(readOne(step("union", user("Ann"), { traversals: [sub(step("drop", context))] })), "write_in_read");
    await refused(readOne(step("drop_edge", user("Ann"), { to: "all" })), "write_in_read");
    await refused(readOne(step("choose", names(user("Ann")), { condition: gt(prop("age"), 1), then_traversal: sub(context) })), "malformed_tree");
    await refused(readOne(step("bind", user("Ann"), { name: "" })), "malformed_tree", `${at}.bind.name`);
  });
});
