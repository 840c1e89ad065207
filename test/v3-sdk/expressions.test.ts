/**
 * HelixDB's own v3 TypeScript SDK builds requests with the expressions `Expr.case`, `Expr.timestamp()` and `.neg()`;
 * `toQueryJson()` gives the body a HelixDB application sends, and an embedded schemaless database runs it with
 * `db.run`. The SDK is imported by relative URL from /work/shared/clients (its README); nothing of it is copied here.
 *
 * The graph: Ann (1, age 30) -Knows(4, weight 2)-> Bob (2, age 25) -Knows(5, weight 0.5)-> Cy (3, no age)
 * -Knows(6, weight 1)-> Ann.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../cluster/embedded.js";
import type * as HelixSdk from "../../../shared/clients/helix-v3-sdk-ts/dist/index.js";

const SDK_MODULE_URL = new URL("../../../shared/clients/helix-v3-sdk-ts/dist/index.js", import.meta.url).href;

type Batch = HelixSdk.ReadBatch | HelixSdk.WriteBatch;

let sdk: typeof HelixSdk;
let db: Database;

/** Runs what the SDK built, exactly as its JSON text (what it would send to `/v2/query`). */
async function run(batch: Batch): Promise<Record<string, unknown>> {
  return (await db.run(JSON.parse(batch.toQueryJson()))) as Record<string, unknown>;
}

beforeAll(async () => {
  sdk = (await import(SDK_MODULE_URL)) as typeof HelixSdk;
  db = await open({ storage: "memory" });
  const { g, writeBatch, NodeRef } = sdk;
  const seeded = await run(
    writeBatch()
      .varAs("ann", g().addN("User", { name: "Ann", age: 30 }))
      .varAs("bob", g().addN("User", { name: "Bob", age: 25 }))
      .varAs("cy", g().addN("User", { name: "Cy" }))
      .varAs("ab", g().n(NodeRef.var("ann")).addE("Knows", NodeRef.var("bob"), { weight: 2 }))
      .varAs("bc", g().n(NodeRef.var("bob")).addE("Knows", NodeRef.var("cy"), { weight: 0.5 }))
      .varAs("ca", g().n(NodeRef.var("cy")).addE("Knows", NodeRef.var("ann"), { weight: 1 }))
      .returning(["ann", "bob", "cy"]),
  );
  expect(seeded).toMatchObject({ ann: [{ $id: "1" }], bob: [{ $id: "2" }], cy: [{ $id: "3" }] });
});

afterAll(() => db.close());

describe("expressions built by the v3 SDK", () => {
  it("neg, case and timestamp evaluate in projections and predicates", async () => {
    const { g, readBatch, Expr, Predicate, Projection, CompareOp } = sdk;
    const before = Date.now();
    const answer = await run(
      readBatch()
        .varAs(
          "rows",
          g()
            .n([1, 2, 3])
            .project([
              Projection.property("name", "name"),
              Projection.expr("minus_age", Expr.prop("age").neg()),
              Projection.expr("band", Expr.case([[Predicate.gte("age", 30), Expr.val("senior")], [Predicate.hasKey("age"), Expr.val("junior")]], Expr.val("unknown"))),
              Projection.expr("now", Expr.timestamp()),
            ]),
        )
        .varAs("no_else", g().n(3).project([Projection.expr("band", Expr.case([[Predicate.hasKey("age"), Expr.val("aged")]]))]))
        .varAs("negative", g().nWithLabelWhere("User", Predicate.compare(Expr.prop("age").neg(), CompareOp.Lt, Expr.val(-26))).id())
        .returning(["rows", "no_else", "negative"]),
    );
    const after = Date.now();
    const rows = answer.rows as { name: string; minus_age: number | null; band: string; now: number }[];
    expect(rows.map(({ now: _now, ...rest }) => rest)).toEqual([
      { name: "Ann", minus_age: -30, band: "senior" },
      { name: "Bob", minus_age: -25, band: "junior" },
      { name: "Cy", minus_age: null, band: "unknown" },
    ]);
    // timestamp is epoch milliseconds (HelixDB: "current UTC timestamp in milliseconds"), read during the call.
    for (const row of rows) {
      expect(Number.isInteger(row.now)).toBe(true);
      expect(row.now).toBeGreaterThanOrEqual(before);
      expect(row.now).toBeLessThanOrEqual(after);
    }
    expect(answer.no_else).toEqual([{ band: null }]);
    expect(answer.negative).toEqual(["1"]);
  });
});
