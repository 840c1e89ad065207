/**
 * The `Expr` and `Predicate` builders of HelixDB's own v3 TypeScript SDK that the other suites leave out (issue 14;
 * builder-coverage.test.ts guards that every one is called): arithmetic, parameters and IDs as expressions, and every
 * predicate form, each run against the seeded graph with its answer checked. Requests with parameters are made with
 * the SDK's `defineParams` and `toQueryJson(params, values)`, exactly the body a HelixDB application sends. The SDK is
 * imported by relative URL from /work/shared/clients (its README); nothing of it is copied here.
 *
 * The graph (harness.ts): Ann (1, age 30) -Knows(4, weight 2)-> Bob (2, age 25) -Knows(5, weight 0.5)-> Cy (3, no age)
 * -Knows(6, weight 1)-> Ann. Predicates follow HelixDB v3's evaluation (crates/db/src/execution/interpreter/stream/
 * eval/predicate.rs): `neq` is the negation of `eq`, so a missing property matches it; `isNull` holds for a missing
 * property or a null, `isNotNull` for a present non-null one; the string tests hold only for strings.
 */
import { describe, expect, it } from "vitest";
import { describeOnKnowsGraph, type Sdk } from "./harness.js";

// Each suite runs against a schemaless database and against one with a schema (harness.ts KNOWS_SCHEMA).
describeOnKnowsGraph((graph) => {
  const run = graph.run;

  describe("Expr built by the v3 SDK", () => {
    it("add, sub, mul, div and modulo compute on a property, in projections and predicates", async () => {
      const { g, readBatch, Expr, Projection, Predicate, CompareOp } = graph.sdk;
      const age = () => Expr.prop("age");
      const answer = await run(
        readBatch()
          .varAs(
            "rows",
            g()
              .n([1, 2])
              .project([
                Projection.expr("plus", age().add(Expr.val(1))),
                Projection.expr("minus", age().sub(Expr.val(5))),
                Projection.expr("times", age().mul(Expr.val(2))),
                // Divisors that divide both ages, so integer and float division agree.
                Projection.expr("over", age().div(Expr.val(5))),
                Projection.expr("rest", age().modulo(Expr.val(7))),
              ]),
          )
          .varAs("doubled_over_55", g().nWhere(Predicate.compare(age().mul(Expr.val(2)), CompareOp.Gt, Expr.val(55))).id())
          .varAs("even", g().nWhere(Predicate.compare(age().modulo(Expr.val(2)), CompareOp.Eq, Expr.val(0))).id())
          .returning(["rows", "doubled_over_55", "even"]),
      );
      expect(answer).toEqual({
        rows: [
          { plus: 31, minus: 25, times: 60, over: 6, rest: 2 },
          { plus: 26, minus: 20, times: 50, over: 5, rest: 4 },
        ],
        doubled_over_55: [1],
        even: [1],
      });
    });

    it("Expr.param reads a request parameter, and Expr.id the current element's ID", async () => {
      const { g, readBatch, Expr, Projection, Predicate, CompareOp, defineParams, param } = graph.sdk;
      const params = defineParams({ bonus: param.i64(), name: param.string() });
      const request = readBatch()
        .varAs("aged", g().n([1, 2]).project([Projection.expr("later", Expr.prop("age").add(Expr.param("bonus"))), Projection.expr("greeting", Expr.param("name"))]))
        .varAs("by_id", g().nWhere(Predicate.compare(Expr.id(), CompareOp.Gte, Expr.val(2))).values(["name"]))
        .returning(["aged", "by_id"]);
      const answer = await graph.send(request.toQueryRequest(params, { bonus: 10, name: "hi" }));
      expect(answer).toEqual({
        aged: [
          { later: 40, greeting: "hi" },
          { later: 35, greeting: "hi" },
        ],
        by_id: [{ name: "Bob" }, { name: "Cy" }],
      });
    });
  });

  describe("Predicate built by the v3 SDK", () => {
    it("comparisons and string tests: neq, lte, between, isNull, isNotNull, startsWith, endsWith, contains", async () => {
      const { g, readBatch, Predicate } = graph.sdk;
      const users = (predicate: Parameters<Sdk["Predicate"]["not"]>[0]) => g().nWithLabel("User").where(predicate).id();
      const answer = await run(
        readBatch()
          .varAs("not_ann", users(Predicate.neq("name", "Ann")))
          .varAs("not_thirty", users(Predicate.neq("age", 30)))
          .varAs("at_most_25", users(Predicate.lte("age", 25)))
          .varAs("between", users(Predicate.between("age", 25, 29)))
          .varAs("between_inclusive", users(Predicate.between("age", 25, 30)))
          .varAs("null_age", users(Predicate.isNull("age")))
          .varAs("aged", users(Predicate.isNotNull("age")))
          .varAs("starts_a", users(Predicate.startsWith("name", "A")))
          .varAs("ends_y", users(Predicate.endsWith("name", "y")))
          .varAs("has_o", users(Predicate.contains("name", "o")))
          .returning(["not_ann", "not_thirty", "at_most_25", "between", "between_inclusive", "null_age", "aged", "starts_a", "ends_y", "has_o"]),
      );
      expect(answer).toEqual({
        not_ann: [2, 3],
        // Cy has no age: neq is not-eq in HelixDB, so a missing property matches it.
        not_thirty: [2, 3],
        at_most_25: [2],
        between: [2],
        between_inclusive: [1, 2],
        null_age: [3],
        aged: [1, 2],
        starts_a: [1],
        ends_y: [3],
        has_o: [2],
      });
    });

    it("a string test of a number, or an order across kinds, is false as in HelixDB, not an error", async () => {
      const { g, readBatch, Predicate } = graph.sdk;
      // HelixDB's startsWith/endsWith/contains hold only when both sides are strings, and its compare of two kinds is
      // None (eval/predicate.rs over PropertyValue::compare): the element does not match. node/exec/predicates.ts follows it.
      const answer = await run(
        readBatch()
          .varAs("starts", g().nWithLabel("User").where(Predicate.startsWith("age", "3")).id())
          .varAs("gt_name", g().nWithLabel("User").where(Predicate.gt("name", 5)).id())
          .varAs("neq_age", g().nWithLabel("User").where(Predicate.neq("age", "30")).id())
          .returning(["starts", "gt_name", "neq_age"]),
      );
      expect(answer).toEqual({ starts: [], gt_name: [], neq_age: [1, 2, 3] });
    });

    it("sets and logic: isIn, isInExpr, or, not and fromSource", async () => {
      const { g, readBatch, Predicate, Expr } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("ann_or_cy", g().nWhere(Predicate.isIn("name", ["Ann", "Cy"])).id())
          .varAs("ages_in", g().nWhere(Predicate.isInExpr("age", Expr.val([25, 40]))).id())
          .varAs("either", g().nWhere(Predicate.or([Predicate.eq("name", "Ann"), Predicate.lt("age", 26)])).id())
          .varAs("ageless", g().nWhere(Predicate.not(Predicate.hasKey("age"))).id())
          .varAs("source", g().nWhere(Predicate.fromSource(Predicate.eq("name", "Cy"))).id())
          .returning(["ann_or_cy", "ages_in", "either", "ageless", "source"]),
      );
      expect(answer).toEqual({ ann_or_cy: [1, 3], ages_in: [2], either: [1, 2], ageless: [3], source: [3] });
    });

    it("parameter forms: eqParam, neqParam, gtParam, gteParam, ltParam, lteParam, containsParam, isInParam", async () => {
      const { g, readBatch, Predicate, defineParams, param } = graph.sdk;
      const params = defineParams({ who: param.string(), pivot: param.i64(), fragment: param.string(), ages: param.array(param.i64()) });
      const request = readBatch()
        .varAs("eq", g().nWhere(Predicate.eqParam("name", "who")).id())
        .varAs("neq", g().nWhere(Predicate.neqParam("name", "who")).id())
        .varAs("gt", g().nWhere(Predicate.gtParam("age", "pivot")).id())
        .varAs("gte", g().nWhere(Predicate.gteParam("age", "pivot")).id())
        .varAs("lt", g().nWhere(Predicate.ltParam("age", "pivot")).id())
        .varAs("lte", g().nWhere(Predicate.lteParam("age", "pivot")).id())
        .varAs("contains", g().nWhere(Predicate.containsParam("name", "fragment")).id())
        .varAs("in", g().nWhere(Predicate.isInParam("age", "ages")).id())
        .returning(["eq", "neq", "gt", "gte", "lt", "lte", "contains", "in"]);
      const answer = await graph.send(request.toQueryRequest(params, { who: "Bob", pivot: 25, fragment: "n", ages: [30, 31] }));
      expect(answer).toEqual({ eq: [2], neq: [1, 3], gt: [1], gte: [1, 2], lt: [], lte: [2], contains: [1], in: [1] });
    });
  });
});
