/**
 * The one table of math functions (protocol/math-functions.ts): every row is a HelixQL function (its name in
 * capitals) that checks with its arity and compiles to a `call` the tree decoder takes, and both refuse one argument
 * too few. What each computes is the engine suites' (test/engine/steps-expressions.test.ts, conformance math.hxt).
 */
import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { checkProject } from "../../protocol/helixql/query-check.js";
import { MATH_FUNCTIONS, isMathFunction, type MathFunction } from "../../protocol/math-functions.js";
import { decodeRequest } from "../../protocol/tree.js";

const SCHEMA = "N::User { age: U8 }\n";
const names = Object.keys(MATH_FUNCTIONS) as MathFunction[];

function compile(name: string, count: number): ReturnType<typeof checkProject> {
  const args = Array.from({ length: count }, (_, i) => String(i + 2)).join(", ");
  return checkProject({ file: "q.hx", text: `${SCHEMA}QUERY Q() => r <- N<User>::{x: ${name}(${args})} RETURN r` });
}

/** The `call` expressions of a tree, to change their arguments in place. */
function calls(tree: unknown): { fn: string; args: unknown[] }[] {
  if (tree === null || typeof tree !== "object") return [];
  const found: { fn: string; args: unknown[] }[] = [];
  for (const [key, value] of Object.entries(tree)) {
    if (key === "call") found.push(value as { fn: string; args: unknown[] });
    found.push(...calls(value));
  }
  return found;
}

describe("the math function table", () => {
  it("lists the functions in the order an unknown function's error names them", () => {
    expect(names).toEqual(["pow", "abs", "sqrt", "ln", "log10", "exp", "ceil", "floor", "round", "sin", "cos", "tan", "asin", "acos", "atan", "log", "atan2", "min", "max"]);
    expect(isMathFunction("constructor")).toBe(false);
    expect(isMathFunction("hypot")).toBe(false);
  });

  for (const fn of names) {
    const [fewest, most] = MATH_FUNCTIONS[fn].arity;
    it(`${fn.toUpperCase()} checks with ${fewest} argument(s) and compiles to a call the decoder takes; one fewer is refused by both`, () => {
      const good = compile(fn.toUpperCase(), fewest);
      expect(good.diagnostics).toEqual([]);
      const tree = good.queries[0].tree;
      const [call] = calls(tree);
      expect(call.fn).toBe(fn);
      expect(call.args).toHaveLength(fewest);
      expect(() => decodeRequest(tree)).not.toThrow();

      call.args.pop();
      let refusal: unknown;
      try {
        decodeRequest(tree);
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(SilkError);
      expect((refusal as SilkError).code).toBe("malformed_tree");
      expect((refusal as SilkError).message).toContain(`${fn} takes ${fewest === most ? fewest : `at least ${fewest}`} argument`);

      const short = compile(fn.toUpperCase(), fewest - 1);
      const wanted = fewest === most ? `${fewest} argument${fewest === 1 ? "" : "s"}` : "two or more arguments";
      expect(short.diagnostics.map((d) => [d.code, d.message])).toEqual([["query_invalid", `${fn.toUpperCase()} takes ${wanted}, not ${fewest - 1}`]]);
    });
  }

  it("MIN and MAX take any number from two; the others no more than their arity", () => {
    expect(compile("MAX", 5).diagnostics).toEqual([]);
    expect(compile("POW", 3).diagnostics.map((d) => d.message)).toEqual(["POW takes 2 arguments, not 3"]);
    expect(compile("SQRT", 2).diagnostics.map((d) => d.message)).toEqual(["SQRT takes 1 argument, not 2"]);
  });
});
