/**
 * The math functions of the `call` expression. Arguments are numbers (bigints are converted, exactly while they are
 * safe integers); a null or missing argument makes the result null, as in arithmetic, and anything else is
 * `invalid_type`. The arity was checked when the tree was decoded; what each function computes is its row of
 * protocol/math-functions.ts.
 */
import { SilkError } from "../../protocol/errors.js";
import { MATH_FUNCTIONS, type MathFunction } from "../../protocol/math-functions.js";
import type { Value } from "../../protocol/values.js";

export function callMath(fn: MathFunction, args: readonly (Value | undefined)[]): number | null {
  const numbers: number[] = [];
  for (const arg of args) {
    if (arg === undefined || arg === null) return null;
    const number = typeof arg === "bigint" ? Number(arg) : arg;
    if (typeof number !== "number") throw new SilkError("invalid_type", `${fn} needs numbers, not ${JSON.stringify(arg) ?? typeof arg}`);
    numbers.push(number);
  }
  return MATH_FUNCTIONS[fn].compute(numbers);
}
