/**
 * Every step of HelixDB's own v3 TypeScript SDK builder, called at least once somewhere under test/v3-sdk/ with its
 * answer checked (issue 14). This file holds the read steps of `Traversal` and `SubTraversal` the other suites leave
 * out; builder-coverage-expressions.test.ts has `Expr` and `Predicate`, builder-coverage-writes.test.ts the mutations
 * and the search and index steps of edges. Its first test is the guard: it reads the SDK's `dsl.d.ts` and fails
 * when a method of `Traversal`, `SubTraversal`, `Expr` or `Predicate` is called nowhere under test/v3-sdk/, so a new
 * SDK step arrives with a test. The SDK is imported by relative URL from /work/shared/clients (its README); nothing of
 * it is copied here.
 *
 * The graph (harness.ts): Ann (1, age 30) -Knows(4, weight 2)-> Bob (2, age 25) -Knows(5, weight 0.5)-> Cy (3, no age)
 * -Knows(6, weight 1)-> Ann. Expected answers are reasoned from it and from HelixDB v3's interpreter
 * (crates/db/src/execution/interpreter in helixdb/helix-db), not copied from Silk's output.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { describeOnKnowsGraph } from "./harness.js";

const DSL_TYPES = fileURLToPath(new URL("../../../shared/clients/helix-v3-sdk-ts/dist/dsl.d.ts", import.meta.url));
const SUITE_FOLDER = fileURLToPath(new URL(".", import.meta.url));

/** The builder classes whose every method must be called by some test (the guard below). */
const GUARDED_CLASSES = ["Traversal", "SubTraversal", "Expr", "Predicate"] as const;

/**
 * Methods that are not steps or expressions of a request, so no answer can check them: the constructor, the
 * serialisers that every `run` calls inside `toQueryJson()`, and Traversal's introspection.
 */
const NOT_BUILDER_STEPS = new Set([
  "constructor",
  "toJSON", // the JSON form, called by toQueryJson() on every request
  "intoAst", // Traversal's tree, what toJSON() wraps
  "intoSteps", // Traversal's step list, read back by no request
  "hasTerminal", // Traversal's own query about its steps
  "new", // Traversal.new() and SubTraversal.new(), the empty builders that g() and sub() return
  "fromSteps", // Traversal.fromSteps(), a builder from raw Step objects: the steps themselves are what is tested
]);

/** A method a class of dsl.d.ts declares: its name, whether it is static, and whether it takes arguments. */
interface DeclaredMethod {
  readonly name: string;
  readonly isStatic: boolean;
  readonly takesArguments: boolean;
}

/** The methods a class of dsl.d.ts declares (`    static name(`, `    name<T>(`), each once. */
function declaredMethods(declarations: string, className: string): DeclaredMethod[] {
  const start = declarations.search(new RegExp(`export declare class ${className}\\b[^{]*\\{`));
  expect(start, `dsl.d.ts declares class ${className}`).toBeGreaterThanOrEqual(0);
  const body = declarations.slice(start, declarations.indexOf("\n}\n", start));
  const methods = new Map<string, DeclaredMethod>();
  for (const match of body.matchAll(/^ {4}((?:static |private |readonly )*)([A-Za-z_$][\w$]*)\s*(?:<[^(]*>)?\((.)/gm)) {
    if (!methods.has(match[2])) methods.set(match[2], { name: match[2], isStatic: match[1].includes("static"), takesArguments: match[3] !== ")" });
  }
  return [...methods.values()];
}

/**
 * How a call of the method reads in a test. A static is called on its class (`Predicate.between(`, the suites
 * destructure the classes under their own names); a method of `Expr` on an expression, with an expression argument
 * when it takes one (`.add(Expr.`), so that `Set.add(` and `String.endsWith(` elsewhere do not count; a step of
 * `Traversal` or `SubTraversal` as `.name(`.
 */
function callText(className: string, method: DeclaredMethod): string {
  if (method.isStatic) return `${className}.${method.name}(`;
  if (className === "Expr") return method.takesArguments ? `.${method.name}(Expr.` : `.${method.name}()`;
  return `.${method.name}(`;
}

describe("the SDK builder coverage guard", () => {
  it("calls every method of Traversal, SubTraversal, Expr and Predicate somewhere under test/v3-sdk/", () => {
    const declarations = readFileSync(DSL_TYPES, "utf8");
    const suites = readdirSync(SUITE_FOLDER)
      .filter((name) => name.endsWith(".ts"))
      .map((name) => readFileSync(`${SUITE_FOLDER}/${name}`, "utf8"))
      .join("\n");
    const uncalled: string[] = [];
    for (const className of GUARDED_CLASSES) {
      const methods = declaredMethods(declarations, className);
      // A parse that found next to nothing means dsl.d.ts changed shape, not that everything is covered.
      expect(methods.length, `methods of ${className}`).toBeGreaterThan(10);
      for (const method of methods) if (!NOT_BUILDER_STEPS.has(method.name) && !suites.includes(callText(className, method))) uncalled.push(`${className}.${method.name}`);
    }
    expect(uncalled).toEqual([]);
  });
});

// Each suite runs against a schemaless database and against one with a schema (harness.ts KNOWS_SCHEMA).
describeOnKnowsGraph((graph) => {
  const run = graph.run;

  describe("read steps of Traversal built by the v3 SDK", () => {
    it("sources: nWhere, e (one ID and a list), eWhere and eWithLabelWhere", async () => {
      const { g, readBatch, Predicate } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("older", g().nWhere(Predicate.gt("age", 26)).id())
          .varAs("one_edge", g().e(5).values(["weight"]))
          .varAs("edge_list", g().e([4, 6]).id())
          .varAs("light", g().eWhere(Predicate.lt("weight", 1.5)).id())
          .varAs("heavy_knows", g().eWithLabelWhere("Knows", Predicate.gte("weight", 1)).id())
          .returning(["older", "one_edge", "edge_list", "light", "heavy_knows"]),
      );
      expect(answer).toEqual({ older: [1], one_edge: [{ weight: 0.5 }], edge_list: [4, 6], light: [5, 6], heavy_knows: [4, 6] });
    });

    it("inE, inN and otherN walk edges back to their ends", async () => {
      const { g, readBatch } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("in_edges", g().n(1).inE("Knows").id())
          .varAs("sources", g().n(1).inE("Knows").inN().values(["name"]))
          .varAs("other_out", g().n(1).outE().otherN().id())
          .varAs("other_in", g().n(1).inE().otherN().id())
          // bothE answers the out-edges first, then the in-edges; otherN is the far end of each.
          .varAs("other_both", g().n(1).bothE().otherN().id())
          .returning(["in_edges", "sources", "other_out", "other_in", "other_both"]),
      );
      expect(answer).toEqual({ in_edges: [6], sources: [{ name: "Cy" }], other_out: [2], other_in: [3], other_both: [2, 3] });
    });

    it("filters: hasLabel, dedup, within, without, edgeHas and edgeHasLabel", async () => {
      const { g, readBatch, Predicate, Expr } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("young", g().nWhere(Predicate.lt("age", 28)))
          .varAs("users", g().n([1, 2, 3]).hasLabel("User").count())
          .varAs("knows_edges", g().e([4, 5]).hasLabel("Knows").count())
          .varAs("not_knows", g().n([1, 2]).hasLabel("Knows").count())
          .varAs("both", g().n([1, 2]).both().id())
          .varAs("deduplicated", g().n([1, 2]).both().dedup().id())
          .varAs("within", g().n([1, 2, 3]).within("young").id())
          .varAs("without", g().n([1, 2, 3]).without("young").id())
          .varAs("edge_has", g().eWithLabel("Knows").edgeHas("weight", 0.5).id())
          .varAs("edge_has_expr", g().n(1).outE().edgeHas("weight", Expr.val(2)).id())
          .varAs("edge_has_label", g().n(2).bothE().edgeHasLabel("Knows").count())
          .varAs("edge_has_other_label", g().n(2).bothE().edgeHasLabel("Likes").count())
          .returning(["users", "knows_edges", "not_knows", "both", "deduplicated", "within", "without", "edge_has", "edge_has_expr", "edge_has_label", "edge_has_other_label"]),
      );
      expect(answer).toEqual({
        users: 3,
        knows_edges: 2,
        not_knows: 0,
        // Ann's neighbours (Bob out, Cy in), then Bob's (Cy out, Ann in); dedup keeps each first occurrence.
        both: [2, 3, 3, 1],
        deduplicated: [2, 3, 1],
        within: [2],
        without: [1, 3],
        edge_has: [5],
        edge_has_expr: [4],
        edge_has_label: 2,
        edge_has_other_label: 0,
      });
    });

    it("paging: limit, skip and range, with literal and expression bounds", async () => {
      const { g, readBatch, Expr, StreamBound } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("limited", g().n([1, 2, 3]).limit(2).id())
          .varAs("limited_expr", g().n([1, 2, 3]).limit(Expr.val(1)).id())
          .varAs("skipped", g().n([1, 2, 3]).skip(1).id())
          .varAs("skipped_bound", g().n([1, 2, 3]).skip(StreamBound.literal(2)).id())
          .varAs("ranged", g().n([1, 2, 3]).range(1, 2).id())
          .varAs("ranged_past_end", g().n([1, 2, 3]).range(2, 10).id())
          .returning(["limited", "limited_expr", "skipped", "skipped_bound", "ranged", "ranged_past_end"]),
      );
      expect(answer).toEqual({ limited: [1, 2], limited_expr: [1], skipped: [2, 3], skipped_bound: [3], ranged: [2], ranged_past_end: [3] });
    });

    it("named streams: as, store, select and inject", async () => {
      const { g, readBatch, Predicate } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("bob", g().nWhere(Predicate.eq("name", "Bob")))
          .varAs("selected", g().n(1).as("start").out().select("start").id())
          .varAs("stored", g().n(1).store("seen").out().store("seen").select("seen").id())
          .varAs("injected", g().n(3).inject("bob").id())
          .varAs("injected_alone", g().inject("bob").values(["name"]))
          .returning(["selected", "stored", "injected", "injected_alone"]),
      );
      expect(answer).toEqual({ selected: [1], stored: [1, 2], injected: [3, 2], injected_alone: [{ name: "Bob" }] });
    });

    it("terminals: exists and label", async () => {
      const { g, readBatch } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("has_out", g().n(1).out().exists())
          .varAs("no_likes", g().n(1).out("Likes").exists())
          .varAs("edge_labels", g().n(1).bothE().label())
          .varAs("node_labels", g().n([1, 2]).label())
          .returning(["has_out", "no_likes", "edge_labels", "node_labels"]),
      );
      expect(answer).toEqual({ has_out: true, no_likes: false, edge_labels: ["Knows", "Knows"], node_labels: ["User", "User"] });
    });

    it("branches: union, choose (with and without else) and repeat", async () => {
      const { g, sub, readBatch, Predicate, RepeatConfig } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("union", g().n(1).union([sub().out(), sub().in()]).id())
          // Ann and Bob have an age and go out; Cy has none and goes in (to Bob).
          .varAs("chosen", g().n([1, 2, 3]).choose(Predicate.hasKey("age"), sub().out(), sub().in()).id())
          .varAs("chosen_no_else", g().n([1, 3]).choose(Predicate.hasKey("age"), sub().out()).id())
          .varAs("two_hops", g().n(1).repeat(RepeatConfig.new(sub().out("Knows")).times(2)).id())
          .varAs("emitted_after", g().n(1).repeat(RepeatConfig.new(sub().out("Knows")).times(2).emitAfter()).id())
          .varAs("until_cy", g().n(1).repeat(RepeatConfig.new(sub().out("Knows")).until(Predicate.eq("name", "Cy")).maxDepth(5)).id())
          .returning(["union", "chosen", "chosen_no_else", "two_hops", "emitted_after", "until_cy"]),
      );
      expect(answer).toEqual({ union: [2, 3], chosen: [2, 3, 2], chosen_no_else: [2, 3], two_hops: [3], emitted_after: [2, 3], until_cy: [3] });
    });

    it("repeat's emitBefore, emitAll, emitIf and a multi-record until answer as HelixDB v3's repeat", async () => {
      const { g, sub, readBatch, Predicate, RepeatConfig } = graph.sdk;
      const out = () => RepeatConfig.new(sub().out("Knows"));
      const answer = await run(
        readBatch()
          .varAs("before", g().n(1).repeat(out().times(2).emitBefore()).id())
          .varAs("all", g().n(1).repeat(out().times(2).emitAll()).id())
          .varAs("if_bob", g().n(1).repeat(out().times(2).emitIf(Predicate.eq("name", "Bob"))).id())
          .varAs("until_cy", g().n([1, 2]).repeat(out().until(Predicate.eq("name", "Cy")).maxDepth(5)).id())
          .returning(["before", "all", "if_bob", "until_cy"]),
      );
      // HelixDB v3 (its interpreter's control/repeat.rs) emits, per iteration, the level it starts from (`before`,
      // `all`) and the level it makes (`after`, `all`, `emitIf`'s predicate), answers only what it emitted when it
      // emits, and stops the whole loop once any record of a new level meets `until`.
      expect(answer).toEqual({ before: [1, 2], all: [1, 2, 2, 3], if_bob: [2], until_cy: [2, 3] });
    });

    it("fold gathers the stream into one array of records, and unfold spreads it again", async () => {
      const { g, readBatch } = graph.sdk;
      const answer = await run(readBatch().varAs("folded", g().n([1, 2]).fold()).varAs("unfolded", g().n([2, 3]).fold().unfold()).returning(["folded", "unfolded"]));
      const ann = { $id: 1, $label: "User", name: "Ann", age: 30 };
      const bob = { $id: 2, $label: "User", name: "Bob", age: 25 };
      const cy = { $id: 3, $label: "User", name: "Cy" };
      expect(answer).toEqual({ folded: [ann, bob], unfolded: [bob, cy] });
    });
  });

  describe("steps of SubTraversal built by the v3 SDK", () => {
    it("traversals inside a branch: inE, inN, otherN, hasLabel, dedup, edgeHas, edgeHasLabel", async () => {
      const { g, sub, readBatch } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("in_edges", g().n(1).union([sub().inE("Knows")]).id())
          .varAs("sources", g().n([1, 2]).union([sub().inE().inN()]).id())
          .varAs("others", g().n(1).union([sub().bothE().otherN()]).id())
          .varAs("labelled", g().n(1).union([sub().out().hasLabel("User"), sub().out().hasLabel("Doc")]).id())
          .varAs("deduplicated", g().n(1).union([sub().both().both().dedup()]).id())
          .varAs("edge_has", g().n(2).union([sub().bothE().edgeHas("weight", 2)]).id())
          .varAs("edge_has_label", g().n(2).union([sub().bothE().edgeHasLabel("Knows")]).id())
          .returning(["in_edges", "sources", "others", "labelled", "deduplicated", "edge_has", "edge_has_label"]),
      );
      expect(answer).toEqual({
        in_edges: [6],
        sources: [3, 1],
        others: [2, 3],
        labelled: [2],
        // Ann's neighbours Bob and Cy; theirs: Cy, Ann (Bob's), Ann, Bob (Cy's), deduplicated in order.
        deduplicated: [3, 1, 2],
        edge_has: [4],
        edge_has_label: [5, 4],
      });
    });

    it("paging and named streams inside a branch: limit, skip, range, within, without, as, store, select", async () => {
      const { g, sub, readBatch, Predicate } = graph.sdk;
      const answer = await run(
        readBatch()
          .varAs("young", g().nWhere(Predicate.lt("age", 28)))
          .varAs("limited", g().n([1, 2]).union([sub().both().limit(1)]).id())
          .varAs("skipped", g().n([1, 2]).union([sub().both().skip(1)]).id())
          .varAs("ranged", g().n(1).union([sub().both().both().range(1, 3)]).id())
          .varAs("within", g().n(1).union([sub().both().within("young")]).id())
          .varAs("without", g().n(1).union([sub().both().without("young")]).id())
          .varAs("selected", g().n(1).union([sub().as("here").out().select("here")]).id())
          .varAs("stored", g().n(1).union([sub().store("trail").out().store("trail").select("trail")]).id())
          .returning(["limited", "skipped", "ranged", "within", "without", "selected", "stored"]),
      );
      expect(answer).toEqual({
        // Per element: Ann's first neighbour (Bob), Bob's first (Cy); then each one's second (Cy, Ann).
        limited: [2, 3],
        skipped: [3, 1],
        ranged: [1, 1],
        within: [2],
        without: [3],
        selected: [1],
        stored: [1, 2],
      });
    });
  });
});
