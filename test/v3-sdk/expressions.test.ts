/**
 * HelixDB's own v3 TypeScript SDK builds requests with the expressions `Expr.case`, `Expr.timestamp()`,
 * `Expr.datetime()` (`date_time_now`) and `.neg()`;
 * `toQueryJson()` gives the body a HelixDB application sends, and an embedded database, schemaless and with a schema, runs it with
 * `db.run`. The SDK is imported by relative URL from /work/shared/clients (its README); nothing of it is copied here.
 *
 * The graph: Ann (1, age 30) -Knows(4, weight 2)-> Bob (2, age 25) -Knows(5, weight 0.5)-> Cy (3, no age)
 * -Knows(6, weight 1)-> Ann.
 */
import { describe, expect, it } from "vitest";
import { describeOnKnowsGraph } from "./harness.js";

// Each suite runs against a schemaless database and against one with a schema (harness.ts KNOWS_SCHEMA).
describeOnKnowsGraph((graph) => {
  const run = graph.run;

  describe("expressions built by the v3 SDK", () => {
    it("neg, case and timestamp evaluate in projections and predicates", async () => {
      const { g, readBatch, Expr, Predicate, Projection, CompareOp } = graph.sdk;
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
      expect(answer.negative).toEqual([1]);
    });

    it("datetime (date_time_now) is the current time as a typed date: projected as ISO 8601, stored and compared as a date", async () => {
      const { g, readBatch, writeBatch, Expr, Predicate, Projection, DateTime, PropertyInput } = graph.sdk;
      const request = readBatch().varAs("now", g().n(1).project([Projection.expr("now", Expr.datetime())]));
      expect(JSON.parse(request.toQueryJson()).query.read.entries[0].query.root.project.projections[0]).toEqual({ expr: { alias: "now", expr: "date_time_now" } });
      const before = Date.now();
      const projected = (await run(request.returning(["now"]))).now as { now: string }[];
      const written = await run(writeBatch().varAs("seen", g().n(2).setProperty("seen", PropertyInput.expr(Expr.datetime())).values(["seen"])).returning(["seen"]));
      const after = Date.now();
      // HelixDB renders a datetime as an RFC 3339 UTC string with milliseconds, as Silk renders dates.
      const now = Date.parse(projected[0].now);
      expect(projected[0].now).toBe(new Date(now).toISOString());
      expect(now).toBeGreaterThanOrEqual(before);
      expect(now).toBeLessThanOrEqual(after);
      const seen = Date.parse((written.seen as { seen: string }[])[0].seen);
      expect(seen).toBeGreaterThanOrEqual(before);
      const compared = await run(
        readBatch()
          .varAs("later", g().n(2).where(Predicate.compare(Expr.prop("seen"), graph.sdk.CompareOp.Gte, Expr.val(DateTime.fromMillis(before)))).count())
          .returning(["later"]),
      );
      expect(compared).toEqual({ later: 1 });
    });
  });
});
