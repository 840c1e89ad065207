/**
 * `aggregate` (sum, avg, min, max), `group_count` and `aggregate_by`: over record streams by property, over values
 * streams by value (or by a field of projected rows), empty inputs, type errors with stable codes. Runs on memory and
 * on three partitions on disk.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ErrorCode } from "../../protocol/errors.js";
import { BACKENDS, TestDatabase, expectRefused, ids, removeTempDirs } from "../helpers/engine.js";
import {
  addN,
  entry,
  expr,
  gt,
  lit,
  nodesOf,
  orderBy,
  prop,
  read,
  readOne,
  values,
  where,
  write,
  type Json,
  type Request,
  type TreeNode,
} from "../helpers/tree.js";

afterAll(removeTempDirs);

const CHEAP_BACKENDS = BACKENDS.filter((backend) => backend.storage === "memory" || backend.partitions === 3);

const aggregate = (input: TreeNode, fn: string, property?: string): TreeNode => ({
  aggregate: property === undefined ? { input: input as Json, fn } : { input: input as Json, fn, property },
});
const groupCount = (input: TreeNode, ...properties: string[]): TreeNode => ({ group_count: { input: input as Json, properties } });
const aggregateBy = (input: TreeNode, ...properties: string[]): TreeNode => ({ aggregate_by: { input: input as Json, properties } });
/** Users in name order, so first-seen group order is the same on every backend. */
const users = (): TreeNode => orderBy(nodesOf("User"), "name");

describe.each(CHEAP_BACKENDS)("aggregates on $name", (backend) => {
  let t: TestDatabase;
  const get = async (root: TreeNode, parameters: Record<string, unknown> = {}): Promise<unknown> => (await t.run(readOne(root, parameters))).r;

  const refused = (request: unknown, code: ErrorCode): Promise<unknown> => expectRefused(t, request, code);

  beforeEach(async () => {
    t = await TestDatabase.open(backend);
    await t.run(
      write(
        [
          entry(undefined, addN("User", { name: "Alice", age: 30, city: "Paris", joined: lit.date("2020-01-01T00:00:00Z"), big: 2n ** 60n })),
          entry(undefined, addN("User", { name: "Bob", age: 25, city: "Lyon", joined: lit.date("2022-06-01T00:00:00Z") })),
          entry(undefined, addN("User", { name: "Carol", age: 35, city: "Paris", team: "red" })),
          entry(undefined, addN("User", { name: "Dave", city: "Lyon", team: "red" })),
          entry(undefined, addN("Odd", { age: "old", mixed: 1 })),
          entry(undefined, addN("Odd", { age: 3, mixed: "one" })),
        ],
        [],
      ),
    );
  });

  afterEach(async () => {
    await t.close();
  });

  describe("aggregate", () => {
    it("sums, averages and orders a property of records, skipping records without it", async () => {
      expect(await get(aggregate(nodesOf("User"), "sum", "age"))).toBe(90);
      expect(await get(aggregate(nodesOf("User"), "avg", "age"))).toBe(30);
      expect(await get(aggregate(nodesOf("User"), "min", "age"))).toBe(25);
      expect(await get(aggregate(nodesOf("User"), "max", "age"))).toBe(35);
      expect(await get(aggregate(nodesOf("User"), "min", "name"))).toBe("Alice");
      expect(await get(aggregate(nodesOf("User"), "max", "joined"))).toBe("2022-06-01T00:00:00.000Z");
      expect(await get(aggregate(nodesOf("User"), "sum", "big"))).toBe(2 ** 60);
    });

    it("runs over a values stream, or one field of projected rows", async () => {
      expect(await get(aggregate(values(nodesOf("User"), "age"), "sum"))).toBe(90);
      expect(await get(aggregate(values(nodesOf("User"), "name"), "max"))).toBe("Dave");
      const rows = { project: { input: nodesOf("User") as Json, projections: [{ property: { source: "age", alias: "years" } }] } };
      expect(await get(aggregate(rows, "avg", "years"))).toBe(30);
    });

    it("of nothing: sum is 0, avg, min and max are null", async () => {
      expect(await get(aggregate(nodesOf("Ghost"), "sum", "age"))).toBe(0);
      expect(await get(aggregate(nodesOf("Ghost"), "avg", "age"))).toBeNull();
      expect(await get(aggregate(nodesOf("Ghost"), "min", "age"))).toBeNull();
      expect(await get(aggregate(nodesOf("User"), "max", "nothing"))).toBeNull();
    });

    it("is a variable later entries compare against", async () => {
      const result = await t.run(
        read([entry("avg", aggregate(nodesOf("User"), "avg", "age")), entry("older", where(nodesOf("User"), gt(prop("age"), expr({ var: "avg" }))))], ["older"]),
      );
      expect(ids(result.older)).toHaveLength(1);
      expect((result.older as { name: string }[])[0].name).toBe("Carol");
    });

    it("sum of a non-number or min of mixed kinds is invalid_type", async () => {
      await refused(readOne(aggregate(nodesOf("Odd"), "sum", "age")), "invalid_type");
      await refused(readOne(aggregate(nodesOf("Odd"), "avg", "age")), "invalid_type");
      await refused(readOne(aggregate(nodesOf("Odd"), "min", "mixed")), "invalid_type");
      await refused(readOne(aggregate(values(nodesOf("User"), "name"), "sum")), "invalid_type");
    });

    it("over records without a property, or with an unknown function, is malformed_tree", async () => {
      await refused(readOne(aggregate(nodesOf("User"), "sum")), "malformed_tree");
      await refused(readOne(aggregate(nodesOf("User"), "median", "age")), "malformed_tree");
      await refused(readOne({ aggregate: { input: nodesOf("User") as Json, property: "age" } }), "malformed_tree");
      await refused(readOne({ aggregate: { input: nodesOf("User") as Json, fn: "sum", property: 3 } }), "malformed_tree");
    });
  });

  describe("group_count and aggregate_by", () => {
    it("group_count counts each combination, in first-seen order, missing values as null", async () => {
      expect(await get(groupCount(users(), "city"))).toEqual([
        { city: "Paris", count: 2 },
        { city: "Lyon", count: 2 },
      ]);
      expect(await get(groupCount(users(), "city", "team"))).toEqual([
        { city: "Paris", team: null, count: 1 },
        { city: "Lyon", team: null, count: 1 },
        { city: "Paris", team: "red", count: 1 },
        { city: "Lyon", team: "red", count: 1 },
      ]);
      expect(await get(groupCount(users()))).toEqual([{ count: 4 }]);
      expect(await get(groupCount(nodesOf("Ghost"), "city"))).toEqual([]);
    });

    it("aggregate_by lists each group's records", async () => {
      const rows = (await get(aggregateBy(users(), "team"))) as { team: unknown; count: number; items: { name: string; $label: string }[] }[];
      expect(rows.map((row) => [row.team, row.count, row.items.map((item) => item.name)])).toEqual([
        [null, 2, ["Alice", "Bob"]],
        ["red", 2, ["Carol", "Dave"]],
      ]);
      expect(rows[1].items[0]).toMatchObject({ $id: expect.stringMatching(/^\d+$/), $label: "User", name: "Carol", city: "Paris" });
    });

    it("groups by virtual properties such as $label", async () => {
      const all = { nodes: { reference: "all" } };
      const rows = (await get(groupCount(all, "$label"))) as { $label: string; count: number }[];
      expect(Object.fromEntries(rows.map((row) => [row.$label, row.count]))).toEqual({ User: 4, Odd: 2 });
    });

    it("a property named like the row's own fields, a values input, or a bad list is malformed_tree", async () => {
      await refused(readOne(groupCount(users(), "count")), "malformed_tree");
      await refused(readOne(aggregateBy(users(), "items")), "malformed_tree");
      await refused(readOne(groupCount(users(), "city", "city")), "malformed_tree");
      await refused(readOne(groupCount(values(users(), "city"), "city")), "malformed_tree");
      await refused(readOne({ group_count: { input: users() as Json, properties: "city" } }), "malformed_tree");
      await refused(readOne({ group: { input: users() as Json } }), "malformed_tree");
    });
  });
});
