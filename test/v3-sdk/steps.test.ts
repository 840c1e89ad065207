/**
 * HelixDB's own v3 TypeScript SDK builds the requests for the row steps (`bind`, `projectBindings`,
 * `projectDistinctBindings`, `path`, `simplePath`, `withSack`, `sackSet`, `sackAdd`, `sackGet`, `edgeProperties`);
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

  describe("row steps built by the v3 SDK", () => {
    it("bind and projectDistinctBindings, with coalesce across an optional binding (the SDK README's example)", async () => {
      const { g, sub, readBatch, BindingProjection } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs(
            "workloads",
            g()
              .nWithLabel("User")
              .bind("service")
              .out("Knows")
              .bind("pod")
              .optional(sub().has("name", "Ann").bind("deployment"))
              .projectDistinctBindings([
                BindingProjection.binding("service", "name", "service"),
                BindingProjection.coalesce([BindingProjection.bindingRef("deployment", "name"), BindingProjection.bindingRef("pod", "name")], "workload"),
              ]),
          )
          .varAs("ids", g().nWithLabel("User").bind("a").out("Knows").projectBindings([BindingProjection.binding("a", "$id", "from"), BindingProjection.current("$id", "to"), BindingProjection.current("age", "age")]))
          .varAs("distinct", g().nWithLabel("User").bind("a").out("Knows").projectDistinctBindings([BindingProjection.binding("a", "$label", "label")]))
          .varAs("rows", g().n(1).bind("start").out("Knows"))
          .returning(["workloads", "ids", "distinct", "rows"]),
      );
      expect(answer).toEqual({
        workloads: [
          { service: "Ann", workload: "Bob" },
          { service: "Bob", workload: "Cy" },
          { service: "Cy", workload: "Ann" },
        ],
        ids: [{ from: 1, to: 2, age: 25 }, { from: 2, to: 3 }, { from: 3, to: 1, age: 30 }],
        distinct: [{ label: "User" }],
        rows: [{ current: { node: 2 }, bindings: { start: { node: 1 } } }],
      });
    });

    it("path and simplePath follow each row's walk, edges included", async () => {
      const { g, readBatch } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("walk", g().n(1).outE("Knows").outN().out("Knows").path())
          .varAs("simple", g().n(1).both().both().simplePath().path())
          .varAs("cycle", g().n(1).out().out().out().simplePath().count())
          .returning(["walk", "simple", "cycle"]),
      );
      expect(answer).toEqual({
        walk: [{ current: { node: 3 }, bindings: {}, path: [{ node: 1 }, { edge: 4 }, { node: 2 }, { node: 3 }] }],
        simple: [
          { current: { node: 3 }, bindings: {}, path: [{ node: 1 }, { node: 2 }, { node: 3 }] },
          { current: { node: 2 }, bindings: {}, path: [{ node: 1 }, { node: 3 }, { node: 2 }] },
        ],
        cycle: 0,
      });
    });

    it("withSack, sackAdd, sackSet and sackGet carry a value along each row", async () => {
      const { g, readBatch } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("weights", g().n(1).withSack(0).outE("Knows").sackAdd("weight").outN().outE("Knows").sackAdd("weight").outN().sackGet())
          .varAs("ages", g().n([1, 3]).withSack("none").sackSet("age").sackGet())
          .varAs("integers", g().n(1).sackAdd("age").out("Knows").sackAdd("age").sackGet())
          .returning(["weights", "ages", "integers"]),
      );
      expect(answer).toEqual({
        weights: [{ current: { node: 3 }, bindings: {}, sack: 2.5 }],
        ages: [
          { current: { node: 1 }, bindings: {}, sack: 30 },
          { current: { node: 3 }, bindings: {}, sack: null },
        ],
        integers: [{ current: { node: 2 }, bindings: {}, sack: 55 }],
      });
    });

    it("Projection.fromEndpoint and toEndpoint project an edge's source and target fields, and filters read them", async () => {
      const { g, readBatch, Projection, Predicate, Order } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("ends", g().eWithLabel("Knows").project([Projection.fromEndpoint("$id", "source"), Projection.fromEndpoint("name", "from"), Projection.toEndpoint("age", "to_age")]))
          .varAs("from_bob", g().eWithLabel("Knows").where(Predicate.eq("$from.name", "Bob")).id())
          .varAs("by_target_age", g().eWithLabel("Knows").orderBy("$to.age", Order.Asc).values(["weight"]))
          .returning(["ends", "from_bob", "by_target_age"]),
      );
      expect(answer).toEqual({
        ends: [
          { source: 1, from: "Ann", to_age: 25 },
          { source: 2, from: "Bob" },
          { source: 3, from: "Cy", to_age: 30 },
        ],
        from_bob: [5],
        // Ascending by the target's age, Cy's edge (no age) first: HelixDB v3 ranks a missing key below every value.
        by_target_age: [{ weight: 0.5 }, { weight: 2 }, { weight: 1 }],
      });
    });

    it("edgeProperties answers the edges' record objects", async () => {
      const { g, readBatch } = graph.sdk;
      const answer = await run(readBatch().varAs("edges", g().n(2).bothE("Knows").edgeProperties()).returning(["edges"]));
      expect(answer).toEqual({
        edges: [
          { $id: 5, $label: "Knows", $from: 2, $to: 3, weight: 0.5 },
          { $id: 4, $label: "Knows", $from: 1, $to: 2, weight: 2 },
        ],
      });
    });
  });
});
