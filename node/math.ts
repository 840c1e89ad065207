/**
 * The math functions of the `call` expression. Arguments are numbers (bigints are converted, exactly while they are
 * safe integers); a null or missing argument makes the result null, as in arithmetic, and anything else is
 * `invalid_type`. The arity was checked when the tree was decoded.
 */
import { SilkError, unreachable } from "../protocol/errors.js";
import type { MathFunction } from "../protocol/tree.js";
import type { Value } from "../protocol/values.js";

export function callMath(fn: MathFunction, args: readonly (Value | undefined)[]): number | null {
  const numbers: number[] = [];
  for (const arg of args) {
    if (arg === undefined || arg === null) return null;
    const number = typeof arg === "bigint" ? Number(arg) : arg;
    if (typeof number !== "number") throw new SilkError("invalid_type", `${fn} needs numbers, not ${JSON.stringify(arg) ?? typeof arg}`);
    numbers.push(number);
  }
  const [a, b] = numbers;
  switch (fn) {
    case "pow":
      return a ** b;
    case "abs":
      return Math.abs(a);
    case "sqrt":
      return Math.sqrt(a);
    case "ln":
      return Math.log(a);
    case "log10":
      return Math.log10(a);
    case "log":
      return Math.log(a) / Math.log(b);
    case "exp":
      return Math.exp(a);
    case "ceil":
      return Math.ceil(a);
    case "floor":
      return Math.floor(a);
    case "round":
      // Half away from zero, as HelixQL's ROUND (Rust's f64::round); Math.round rounds -2.5 to -2.
      return Math.sign(a) * Math.round(Math.abs(a));
    case "sin":
      return Math.sin(a);
    case "cos":
      return Math.cos(a);
    case "tan":
      return Math.tan(a);
    case "asin":
      return Math.asin(a);
    case "acos":
      return Math.acos(a);
    case "atan":
      return Math.atan(a);
    case "atan2":
      return Math.atan2(a, b);
    case "min":
      return Math.min(...numbers);
    case "max":
      return Math.max(...numbers);
    default:
      return unreachable(fn, "function");
  }
}
