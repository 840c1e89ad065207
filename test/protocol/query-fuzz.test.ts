/**
 * "A query that passes the checker always loads and runs": random queries assembled from HelixQL's sources,
 * steps and conditions are checked, and every one that checks is run against a small graph. A check may refuse a
 * query (most random ones are ill-typed); it may never throw, and a query it accepts may fail at run time only
 * with a caller's error (a value out of range, say), never with `internal` or `malformed_tree`, which would mean
 * the checker let through a tree the engine cannot run.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { open } from "../../runtime/embedded.js";
import { SilkError } from "../../protocol/errors.js";
import { checkProject } from "../../protocol/helixql/query-check.js";

const SCHEMA = `N::User { INDEX name: String, age: U8, score: F64, born: Date, tags: [String] }
N::Post { title: String }
E::Follows { From: User, To: User, Properties: { since: Date, weight: F64 } }
E::Wrote { From: User, To: Post }
`;
const PARAMS = "(id: ID, n: String, a: U8, f: F64, ids: [ID], d: Date)";
const PARAMETER_VALUES = { id: "1", n: "Ann", a: 30, f: 1.5, ids: ["1", "2"], d: "2024-01-01" };

const SOURCES = [
  "N<User>", "N<User>(id)", "N<User>(ids)", "N<Post>", "E<Follows>", "N<User>({name: n})",
  "AddN<User>({name: n, age: a})", "AddN<Post>({title: n})", "N<Follows>", "E<User>", "V<User>", "x", "_",
];
const CONDITIONS = [
  "_::{age}::GT(a)", "_::{name}::EQ(n)", "_::{score}::LTE(f)", "_::{born}::GT(d)", "_::{name}::CONTAINS(\"n\")",
  "EXISTS(_::Out<Follows>)", "!EXISTS(_::In<Follows>)", "_::Out<Follows>::COUNT::GTE(1)", "_::{name}::IS_IN(ids)",
  "AND(_::{age}::GT(1), OR(_::{name}::EQ(n), _::{age}::LT(a)))", "_::ToN::{age}::GT(3)", "_::{title}::EQ(n)",
  "_::{weight}::GT(f)", "_::{age}::GT(\"x\")", "_::{tags}",
];
const STEPS = [
  "::Out<Follows>", "::In<Follows>", "::Out<Wrote>", "::In<Wrote>", "::OutE<Follows>", "::InE<Follows>", "::ToN",
  "::FromN", "::RANGE(0, 5)", "::RANGE(a, 9)", "::ORDER<Desc>(_::{age})", "::ORDER<Asc>(_::{score})", "::FIRST",
  "::COUNT", "::ID", "::{name, c: _::Out<Follows>::COUNT}", "::{.., s: MUL(_::{score}, 2)}", "::!{age}",
  "::|u| {n: u::{name}, first: _::Out<Follows>::FIRST}", "::UPDATE({age: a})", "::UPDATE({score: f, born: d})",
  "::GROUP_BY(age)", "::AGGREGATE_BY(name)", "::SUM(_::{age})", "::AVG(_::{score})", "::MAX(_::{born})",
  "::ShortestPath<Follows>::To(id)", "::ShortestPathDijkstras<Follows>(_::{weight})::To(id)",
  "::ShortestPathAStar<Follows>(_::{weight}, \"score\")::To(id)", "::ShortestPathAStar<Follows>(_::{weight}, \"name\")::From(id)",
  "::UpsertN({name: n})", "::{title}", "::{ids: _::Out<Follows>::ID, top: _::Out<Follows>::{name}}",
];
const CONDITIONED = CONDITIONS.map((condition) => `::WHERE(${condition})`);

const chain = fc
  .tuple(fc.constantFrom(...SOURCES), fc.array(fc.constantFrom(...STEPS, ...CONDITIONED), { maxLength: 4 }))
  .map(([source, steps]) => source + steps.join(""));

/** One query: up to three assignments (x, y, z; later ones may start at x), then a RETURN. */
const query = fc
  .tuple(fc.array(chain, { minLength: 1, maxLength: 3 }), fc.boolean(), fc.constantFrom("RETURN", "RETURN \"ok\"", "RETURN {v: x}"))
  .map(([chains, drop, ret]) => {
    const names = ["x", "y", "z"];
    const statements = chains.map((text, i) => `${names[i]} <- ${text}`);
    if (drop) statements.push("DROP x");
    const returned = ret === "RETURN" ? `RETURN ${names[chains.length - 1]}` : ret;
    return `${statements.join("\n    ")}\n    ${returned}`;
  });

describe("random queries", () => {
  it("either fail the check with diagnostics inside the text, or run without an engine fault", async () => {
    const texts = fc.sample(query, { numRuns: 800, seed: 20261122 });
    const accepted: string[] = [];
    texts.forEach((body, i) => {
      const text = `${SCHEMA}QUERY Q${i}${PARAMS} =>\n    ${body}\n`;
      const result = checkProject({ file: "q.hx", text });
      const lines = text.split("\n").length;
      for (const diagnostic of result.diagnostics) {
        expect(diagnostic.code, `${diagnostic.message}\n${text}`).not.toBe("internal");
        expect(diagnostic.line).toBeGreaterThanOrEqual(1);
        expect(diagnostic.line).toBeLessThanOrEqual(lines);
      }
      if (result.diagnostics.length === 0) accepted.push(`QUERY Q${i}${PARAMS} =>\n    ${body}\n`);
    });
    // The generator must reach the engine, not only the checker's refusals.
    expect(accepted.length).toBeGreaterThan(60);
    const db = await open({ storage: "memory", schema: SCHEMA + accepted.join("\n") });
    try {
      for (const name of ["Ann", "Bob", "Cy"]) {
        await db.run({
          request_type: "write",
          query: { write: { entries: [{ query: { root: { add_n: { label: "User", properties: [["name", { value: { string: name } }], ["age", { value: { i64: 30 } }]] } } } }] } },
        });
      }
      for (const query of db.queries) {
        try {
          await db.query(query.name, PARAMETER_VALUES);
        } catch (cause) {
          const text = accepted.find((q) => q.startsWith(`QUERY ${query.name}(`));
          expect(cause, `${query.name} failed: ${String(cause)}\n${text}`).toBeInstanceOf(SilkError);
          expect((cause as SilkError).code, `${(cause as SilkError).message}\n${text}`).not.toMatch(/^(internal|malformed_tree)$/);
        }
      }
    } finally {
      await db.close();
    }
  });
});
