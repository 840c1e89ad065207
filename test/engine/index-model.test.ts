/**
 * Model test of the planner (STYLE.md, "Against a simple model"): random records, random writes and random
 * predicates run against two databases holding the same data, one whose schema declares INDEX on the compared
 * fields and one whose schema does not (every source is then a label scan, the model). Every answer must be
 * identical, including inside a write transaction that reads its own uncommitted updates, creates and drops.
 *
 * Reproducing a failure: fast-check prints the seed and path; `SILK_INDEX_MODEL_RUNS` raises the number of runs.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { removeTempDirs } from "../helpers/engine.js";
import {
  addN,
  and,
  between,
  drop,
  entry,
  eq,
  gt,
  gte,
  isIn,
  lt,
  lte,
  nodesById,
  nodesWhere,
  prop,
  readOne,
  update,
  write,
  type TreeNode,
} from "../helpers/tree.js";

afterAll(removeTempDirs);

const RUNS = Number(process.env.SILK_INDEX_MODEL_RUNS ?? 40);
const INDEXED = "N::R { INDEX a: I64, INDEX f: F64, INDEX s: String, INDEX d: Date, b: I64 }\nN::Other { a: I64 }";
const PLAIN = "N::R { a: I64, f: F64, s: String, d: Date, b: I64 }\nN::Other { a: I64 }";

const DATES = [new Date("2020-01-01T00:00:00Z"), new Date("2020-01-01T00:00:00.001Z"), new Date("1969-12-31T23:59:59Z"), new Date("2031-05-05T05:05:05Z")];
const integer = fc.oneof(fc.integer({ min: -4, max: 4 }), fc.constantFrom(2 ** 53 - 1, -(2 ** 53 - 1)), fc.constantFrom(2n ** 60n, 2n ** 60n + 1n));
const float = fc.oneof(fc.double({ min: -3, max: 3, noNaN: true, noDefaultInfinity: true }), fc.integer({ min: -3, max: 3 }), fc.constantFrom(0.5, -0.5, 1e-9));
const text = fc.constantFrom("", "a", "ab", "b", "\0", "é", "😀");
const date = fc.constantFrom(...DATES);

const record = fc.record(
  { a: integer, f: float, s: text, d: date, b: fc.integer({ min: 0, max: 3 }) },
  { requiredKeys: [] },
);

type FieldName = "a" | "f" | "s" | "d";
const valueOf: Record<FieldName, fc.Arbitrary<unknown>> = { a: integer, f: float, s: text, d: date };

/** A comparison of an indexed field with a constant of its kind (strings: only the comparisons SPEC allows). */
const comparison: fc.Arbitrary<TreeNode> = fc.constantFrom<FieldName>("a", "f", "s", "d").chain((field) => {
  const value = valueOf[field];
  const ops = field === "s" ? ["eq", "is_in"] : ["eq", "gt", "gte", "lt", "lte", "between", "is_in", "flipped"];
  return fc.tuple(fc.constantFrom(...ops), value, value, fc.array(value, { maxLength: 3 })).map(([op, x, y, list]): TreeNode => {
    switch (op) {
      case "eq":
        return eq(prop(field), x);
      case "gt":
        return gt(prop(field), x);
      case "gte":
        return gte(prop(field), x);
      case "lt":
        return lt(prop(field), x);
      case "lte":
        return lte(prop(field), x);
      case "between":
        return between(prop(field), x, y);
      case "flipped":
        return lt(x, prop(field));
      default:
        return isIn(prop(field), list);
    }
  });
});

const predicate: fc.Arbitrary<TreeNode> = fc
  .tuple(comparison, fc.option(comparison), fc.option(fc.integer({ min: 0, max: 3 })))
  .map(([first, second, b]) => and(eq(prop("$label"), "R"), first, ...(second === null ? [] : [second]), ...(b === null ? [] : [gte(prop("b"), b)])));

type Change = { kind: "update"; index: number; props: Record<string, unknown> } | { kind: "drop"; index: number } | { kind: "create"; props: Record<string, unknown> };
const change: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ kind: fc.constant("update" as const), index: fc.nat(), props: record }),
  fc.record({ kind: fc.constant("drop" as const), index: fc.nat() }),
  fc.record({ kind: fc.constant("create" as const), props: record }),
);

function changeEntry(change: Change, liveIds: string[]): TreeNode {
  switch (change.kind) {
    case "update":
      return update(nodesById(liveIds[change.index % liveIds.length]), change.props);
    case "drop":
      return drop(nodesById(liveIds[change.index % liveIds.length]));
    case "create":
      return addN("R", change.props);
  }
}

async function answers(db: Database, predicates: TreeNode[], changes: Change[], liveIds: string[]): Promise<unknown[]> {
  const results: unknown[] = [];
  for (const p of predicates) results.push((await db.run(readOne(nodesWhere(p)))).r);
  // One write transaction: its changes, then every predicate again over its own uncommitted writes.
  const entries = [
    ...changes.map((c, i) => entry(`c${i}`, changeEntry(c, liveIds))),
    ...predicates.map((p, i) => entry(`p${i}`, nodesWhere(p))),
  ];
  const inTransaction = await db.run(write(entries, predicates.map((_, i) => `p${i}`)));
  results.push(inTransaction);
  for (const p of predicates) results.push((await db.run(readOne(nodesWhere(p)))).r);
  return results;
}

describe("index model: the same answers with and without indexes", () => {
  it("matches a label scan for random data, writes and predicates", async () => {
    const indexed = await Database.open({ storage: "memory", schema: INDEXED });
    const plain = await Database.open({ storage: "memory", schema: PLAIN });
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 25 }), fc.array(change, { maxLength: 6 }), fc.array(predicate, { minLength: 1, maxLength: 5 }), async (records, changes, predicates) => {
          const create = write(records.map((r, i) => entry(`n${i}`, addN("R", r))), records.map((_, i) => `n${i}`));
          const created = await indexed.run(create);
          expect(await plain.run(create)).toEqual(created);
          const liveIds = records.map((_, i) => (created[`n${i}`] as { $id: string }[])[0].$id);
          expect(await answers(indexed, predicates, changes, liveIds)).toEqual(await answers(plain, predicates, changes, liveIds));
          const explained = (await indexed.run({ ...readOne(nodesWhere(predicates[0])), explain: true })) as { $explain: { access: string }[] };
          expect(explained.$explain[0].access).toBe("index");
          await indexed.run(write([entry(undefined, drop(nodesWhere(eq(prop("$label"), "R"))))], []));
          await plain.run(write([entry(undefined, drop(nodesWhere(eq(prop("$label"), "R"))))], []));
        }),
        { numRuns: RUNS },
      );
    } finally {
      await indexed.close();
      await plain.close();
    }
  });
});
