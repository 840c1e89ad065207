/**
 * The `/v2/query` builder: its JSON is exactly docs/OPERATION_TREE.md's (one case spelled out in full), and every
 * request it builds here decodes with the server's decoder (protocol/tree.ts) and runs on an embedded database with
 * the expected answer — sources, traversals, filters and predicates, paging, terminals, aggregates, paths,
 * mutations, FOR loops, conditions and `parameter_types`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../runtime/embedded.js";
import { decodeRequest } from "../../protocol/tree.js";
import {
  add, addN, addV, and, between, call, cond, constant, contains, context, countOf, currentId, div, edges, endsWith, eq, exists,
  firstOf, gt, gte, hasKey, isIn, isNotNull, isNull, lit, lt, lte, mod, mul, neq, nodes, not, optionalParam, or, param, prop,
  ptype, read, ref, startsWith, sub, traversalOf, variable, vectors, write,
} from "../../sdk/builder.js";

let db: Database;
let ids: Record<string, string>;

/** Decodes the request as the server would, then runs it. */
async function run(request: Record<string, unknown>): Promise<Record<string, unknown>> {
  expect(() => decodeRequest(request)).not.toThrow();
  return (await db.run(request)) as Record<string, unknown>;
}

const names = (records: unknown): string[] => (records as { name: string }[]).map((record) => record.name).sort();
/** The rows a `values(["name"])` answers: one object per element. */
const rows = (...values: string[]): { name: string }[] => values.map((name) => ({ name }));

beforeAll(async () => {
  db = await open({ storage: "memory" });
  const people = [["ann", 31, "Oslo"], ["bob", 17, "Rome"], ["cy", 45, "Oslo"]] as const;
  const created = write();
  for (const [name, age, city] of people) created.entry(name, addN("User", { name: lit.string(name), age: lit.i64(age), address: lit.object({ city: lit.string(city) }) }));
  created
    .run(nodes.byVar("ann").addE("Follows", ref.var("bob"), { since: lit.dateTime("2024-05-01"), weight: lit.f64(1) }))
    .run(nodes.byVar("bob").addE("Follows", ref.var("cy"), { weight: lit.f64(2.5) }))
    .run(nodes.byVar("ann").addE("Follows", ref.var("cy"), { weight: lit.f64(9) }))
    .returns("ann", "bob", "cy");
  const result = await run(created.build());
  ids = Object.fromEntries(people.map(([name]) => [name, (result[name] as { $id: string }[])[0].$id]));
});

afterAll(async () => {
  await db?.close();
});

describe("builder JSON", () => {
  it("is the operation tree of the docs", () => {
    const built = read().entry("u", nodes.byIds(["1"]).out("Follows").where(gt(prop("age"), lit.i64(18)))).returns("u").build();
    expect(built).toEqual({
      request_type: "read",
      query: {
        read: {
          entries: [
            {
              query: {
                name: "u",
                root: {
                  where: {
                    input: { out: { input: { nodes: { reference: { ids: ["1"] } } }, label: "Follows" } },
                    predicate: { gt: { left: { property: "age" }, right: { constant: { i64: 18 } } } },
                  },
                },
              },
            },
          ],
          returns: ["u"],
        },
      },
    });
  });

  it("writes integers beyond 2^53 as decimal strings and refuses unsafe numbers", () => {
    expect(lit.i64(2n ** 63n - 1n).json).toEqual({ i64: "9223372036854775807" });
    expect(lit.i64("42").json).toEqual({ i64: 42 });
    expect(() => lit.i64(2 ** 60)).toThrow(RangeError);
  });

  it("refuses parameter_types that do not cover every parameter", () => {
    const batch = read().entry("n", nodes.all().count()).returns("n").parameter("a", 1, ptype.i64).parameter("b", 2);
    expect(() => batch.build()).toThrow(/missing: b/);
  });
});

describe("builder requests run", () => {
  it("sources, traversals and filters", async () => {
    const result = await run(
      read()
        .entry("out", nodes.byIds([ids.ann]).out("Follows"))
        .entry("in", nodes.byIds([ids.cy]).in("Follows").dedup())
        .entry("both", nodes.byIds([ids.bob]).both("Follows"))
        .entry("edgesOut", nodes.byIds([ids.ann]).outE("Follows").inN())
        .entry("targets", edges.all().outN().dedup())
        .entry("other", nodes.byIds([ids.bob]).bothE("Follows").otherN())
        .entry("inE", nodes.byIds([ids.cy]).inE("Follows").count())
        .entry("oslo", nodes.all().has("address.city", lit.string("Oslo")))
        .entry("labelled", nodes.where(eq(prop("$label"), lit.string("User"))).hasLabel("User").hasKey("age").count())
        .entry("notAnn", nodes.all().without("out").hasLabel("User"))
        .entry("onlyOut", nodes.all().within("out"))
        .returns("out", "in", "both", "edgesOut", "targets", "other", "inE", "oslo", "labelled", "notAnn", "onlyOut")
        .build(),
    );
    expect(names(result.out)).toEqual(["bob", "cy"]);
    expect(names(result.in)).toEqual(["ann", "bob"]);
    expect(names(result.both)).toEqual(["ann", "cy"]);
    expect(names(result.edgesOut)).toEqual(["ann", "ann"]);
    expect(names(result.targets)).toEqual(["bob", "cy"]);
    expect((result.other as unknown[]).length).toBe(2);
    expect(result.inE).toBe(2);
    expect(names(result.oslo)).toEqual(["ann", "cy"]);
    expect(result.labelled).toBe(3);
    expect(names(result.notAnn)).toEqual(["ann"]);
    expect(names(result.onlyOut)).toEqual(["bob", "cy"]);
  });

  it("predicates and expressions", async () => {
    const where = (predicate: Parameters<ReturnType<typeof nodes.all>["where"]>[0]) => nodes.all().where(predicate).values(["name"]);
    const result = await run(
      read()
        .entry("adults", where(and(gte(prop("age"), lit.i64(18)), not(eq(prop("name"), lit.string("cy"))))))
        .entry("either", where(or(lt(prop("age"), lit.i64(18)), lte(prop("age"), lit.i64(31)))))
        .entry("between", where(between(prop("age"), lit.i64(30), lit.i64(50))))
        .entry("neq", where(neq(prop("name"), lit.string("ann"))))
        .entry("strings", where(and(contains(prop("name"), lit.string("n")), startsWith(prop("name"), lit.string("a")), endsWith(prop("name"), lit.string("n")))))
        .entry("in", where(isIn(prop("name"), lit.stringArray(["bob", "cy"]))))
        .entry("nulls", where(and(isNull("missing"), isNotNull("age"), hasKey("address"))))
        .entry("followed", where(exists(context().in("Follows"))))
        .entry("popular", where(gt(countOf(context().in("Follows")), lit.i64(1))))
        .entry("math", where(eq(mod(add(mul(prop("age"), lit.i64(2)), sub(lit.i64(1), lit.i64(1))), lit.i64(10)), div(lit.i64(4), lit.i64(2)))))
        .entry("call", where(eq(call("max", prop("age"), lit.i64(40)), lit.i64(45))))
        .entry("byParam", where(eq(prop("name"), param("who"))))
        .entry("byId", nodes.all().where(eq(currentId(), constant(lit.i64(ids.bob)))).values(["name"]))
        .returns("adults", "either", "between", "neq", "strings", "in", "nulls", "followed", "popular", "math", "call", "byParam", "byId")
        .parameter("who", "cy")
        .build(),
    );
    // values answers one object per element, as HelixDB v3 does (it was one flat array of names).
    expect(result).toEqual({
      adults: rows("ann"), either: rows("ann", "bob"), between: rows("ann", "cy"), neq: rows("bob", "cy"), strings: rows("ann"), in: rows("bob", "cy"),
      nulls: rows("ann", "bob", "cy"), followed: rows("bob", "cy"), popular: rows("cy"), math: rows("ann"), call: rows("cy"), byParam: rows("cy"), byId: rows("bob"),
    });
  });

  it("paging, order, terminals, projections, aggregates and paths", async () => {
    const byAge = nodes.all().orderBy("age", "desc");
    const result = await run(
      read()
        .entry("top", byAge.limit(2).values(["name"]))
        .entry("skipped", byAge.skip(param("n")).values(["name"]))
        .entry("range", byAge.range(1, 2).values(["name"]))
        .entry("exists", nodes.byIds([ids.ann]).exists())
        .entry("ids", nodes.byIds([ids.ann]).id())
        .entry("labels", nodes.byIds([ids.ann]).label())
        .entry("maps", nodes.byIds([ids.ann]).valueMap(["name"]))
        .entry("rows", nodes.byIds([ids.ann]).project([
          { property: "name" },
          { property: "age", alias: "years" },
          { alias: "follows", expr: countOf(context().out("Follows")) },
          { alias: "firstFollowed", expr: firstOf(context().out("Follows").orderBy("age").values(["name"])) },
          { alias: "followed", expr: traversalOf(context().out("Follows").orderBy("age").values(["name"])) },
        ]))
        .entry("whole", nodes.byIds([ids.bob]).project([], { exclude: ["address"] }))
        .entry("sum", nodes.all().aggregate("sum", "age"))
        .entry("groups", nodes.all().groupCount(["address.city"]))
        .entry("grouped", nodes.all().aggregateBy(["address.city"]).count())
        .entry("hops", nodes.byIds([ids.ann]).shortestPath(ref.ids([ids.cy]), { label: "Follows" }))
        .entry("light", nodes.byIds([ids.ann]).shortestPath(ref.ids([ids.cy]), { algorithm: { dijkstra: prop("weight") }, direction: "out" }))
        .entry("guided", nodes.byIds([ids.ann]).shortestPath(ref.ids([ids.cy]), { algorithm: { astar: { weight: prop("weight"), heuristic: "age" } } }))
        .entry("vars", nodes.all().where(isIn(currentId(), variable("ids"))).count())
        .returns("top", "skipped", "range", "exists", "ids", "labels", "maps", "rows", "whole", "sum", "groups", "grouped", "hops", "light", "guided", "vars")
        .parameter("n", 2, ptype.i64)
        .build(),
    );
    expect(result.top).toEqual(rows("cy", "ann"));
    expect(result.skipped).toEqual(rows("bob"));
    expect(result.range).toEqual(rows("ann"));
    expect(result.exists).toBe(true);
    expect(result.ids).toEqual([ids.ann]);
    expect(result.labels).toEqual(["User"]);
    expect(result.maps).toEqual([{ name: "ann" }]);
    expect(result.rows).toEqual([{ name: "ann", years: 31, follows: 2, firstFollowed: "bob", followed: ["bob", "cy"] }]);
    expect(result.whole).toEqual([{ $id: ids.bob, $label: "User", name: "bob", age: 17 }]);
    expect(result.sum).toBe(93);
    expect(result.groups).toEqual([{ "address.city": "Oslo", count: 2 }, { "address.city": "Rome", count: 1 }]);
    expect(result.grouped).toBe(2);
    expect((result.hops as { hops: number }[])[0].hops).toBe(1);
    expect((result.light as { hops: number; weight: number }[])[0]).toMatchObject({ hops: 2, weight: 3.5 });
    expect((result.guided as { hops: number; weight: number }[])[0]).toMatchObject({ hops: 2, weight: 3.5 });
    expect(result.vars).toBe(1);
  });

  it("mutations, FOR loops, conditions and typed parameters", async () => {
    const request = write()
      .name("builder mutations")
      .forEach("rows", (body) => body.entry("made", addN("Tag", { name: param("name"), rank: optionalParam("rank") })))
      .entry("renamed", nodes.byVar("made").where(eq(prop("name"), lit.string("t1"))).update({ name: lit.string("first") }).setProperty("seen", lit.bool(true)))
      .entry("cleared", nodes.byVar("made").where(eq(prop("name"), lit.string("t2"))).removeProperty("rank"))
      .entry("upserted", nodes.where(eq(prop("$label"), lit.string("Tag"))).has("name", lit.string("t3")).upsertN("Tag", { rank: lit.i64(30) }))
      .entry("vector", addV("Doc", lit.f64Array([0.5, 1]), { title: lit.string("d") }))
      .entry("vectorUpsert", vectors.byVar("vector").upsertV("Doc", { title: lit.string("e") }, lit.f64Array([1, 2])))
      .entry("link", nodes.byVar("vector").upsertE("About", ref.var("vector"), ref.var("renamed"), { note: lit.null() }))
      .entry("skippedWhenEmpty", addN("Never"), cond.varEmpty("made"))
      .entry("madeWhenPresent", addN("Marker", { at: lit.dateTime(new Date(0)), raw: lit.bytes([1, 2]), nums: lit.i64Array([1, "2"]), f: lit.f32(1.5), xs: lit.f32Array([1]), list: lit.array([lit.string("a")]) }), cond.varMinSize("made", 3))
      .entry("afterPrevious", addN("Marker2"), cond.prevNotEmpty())
      .entry("alsoWhenPresent", addN("Marker3"), cond.varNotEmpty("made"))
      .returns("made", "renamed", "cleared", "upserted", "vector", "vectorUpsert", "link", "skippedWhenEmpty", "madeWhenPresent", "afterPrevious", "alsoWhenPresent")
      .parameter("rows", [{ name: "t1", rank: 1 }, { name: "t2", rank: 2 }, { name: "t3" }], ptype.array(ptype.object))
      .build();
    const result = await run(request);
    expect((result.made as unknown[]).length).toBe(3);
    expect(result.renamed).toMatchObject([{ name: "first", seen: true, rank: 1 }]);
    expect((result.cleared as Record<string, unknown>[])[0].rank).toBeUndefined();
    expect(result.upserted).toMatchObject([{ name: "t3", rank: 30 }]);
    expect(result.vectorUpsert).toMatchObject([{ title: "e", $vector: [1, 2] }]);
    expect(result.link).toMatchObject([{ $label: "About" }]);
    expect(result.skippedWhenEmpty).toEqual([]);
    expect((result.madeWhenPresent as unknown[]).length).toBe(1);
    expect((result.afterPrevious as unknown[]).length).toBe(1);
    expect((result.alsoWhenPresent as unknown[]).length).toBe(1);

    const dropped = await run(write().run(nodes.where(eq(prop("$label"), lit.string("Tag"))).drop()).entry("left", nodes.where(eq(prop("$label"), lit.string("Tag"))).count()).returns("left").build());
    expect(dropped.left).toBe(0);
  });
});
