/**
 * The math functions of the operation tree's `call` expression, in one table: each function's arity, the static
 * type HelixQL gives its result, and what it computes. The tree decoder (tree.ts) checks a call's name and argument
 * count against it, the HelixQL checker (helixql/query-values.ts) its `POW(..)`, `ATAN2(..)` and the rest (the
 * name in capitals), and the executor (node/exec/math.ts) computes with it; so adding a function, or changing one, is one
 * row here, and none of the three can know a function the others do not. The SDK's builder lists the names once more
 * (sdk/builder-values.ts), since the files an application bundles import nothing of ours.
 */

/**
 * One function. `arity` is [fewest, most] arguments (most is Infinity for "or more"). `result` is the static type of
 * a HelixQL call: `float` always, `int` always, or `widest` (an integer when every argument is one, else a float).
 * `compute` gets the arguments already as numbers, `arity` of them (node/exec/math.ts converts them and handles null).
 */
export interface MathFunctionSpec {
  readonly arity: readonly [fewest: number, most: number];
  readonly result: "float" | "int" | "widest";
  readonly compute: (numbers: readonly number[]) => number;
}

// The order of the keys is the order an unknown function's error lists them in (tree.ts).
export const MATH_FUNCTIONS = {
  pow: { arity: [2, 2], result: "float", compute: ([a, b]) => a ** b },
  abs: { arity: [1, 1], result: "widest", compute: ([a]) => Math.abs(a) },
  sqrt: { arity: [1, 1], result: "float", compute: ([a]) => Math.sqrt(a) },
  ln: { arity: [1, 1], result: "float", compute: ([a]) => Math.log(a) },
  log10: { arity: [1, 1], result: "float", compute: ([a]) => Math.log10(a) },
  exp: { arity: [1, 1], result: "float", compute: ([a]) => Math.exp(a) },
  ceil: { arity: [1, 1], result: "int", compute: ([a]) => Math.ceil(a) },
  floor: { arity: [1, 1], result: "int", compute: ([a]) => Math.floor(a) },
  // Half away from zero, as HelixQL's ROUND (Rust's f64::round); Math.round rounds -2.5 to -2.
  round: { arity: [1, 1], result: "int", compute: ([a]) => Math.sign(a) * Math.round(Math.abs(a)) },
  sin: { arity: [1, 1], result: "float", compute: ([a]) => Math.sin(a) },
  cos: { arity: [1, 1], result: "float", compute: ([a]) => Math.cos(a) },
  tan: { arity: [1, 1], result: "float", compute: ([a]) => Math.tan(a) },
  asin: { arity: [1, 1], result: "float", compute: ([a]) => Math.asin(a) },
  acos: { arity: [1, 1], result: "float", compute: ([a]) => Math.acos(a) },
  atan: { arity: [1, 1], result: "float", compute: ([a]) => Math.atan(a) },
  // The logarithm of the first argument in the base of the second.
  log: { arity: [2, 2], result: "float", compute: ([a, b]) => Math.log(a) / Math.log(b) },
  atan2: { arity: [2, 2], result: "float", compute: ([a, b]) => Math.atan2(a, b) },
  min: { arity: [2, Infinity], result: "widest", compute: (numbers) => Math.min(...numbers) },
  max: { arity: [2, Infinity], result: "widest", compute: (numbers) => Math.max(...numbers) },
} as const satisfies Record<string, MathFunctionSpec>;

export type MathFunction = keyof typeof MATH_FUNCTIONS;

/** Whether `name` is a function of the table (its own key: "constructor" and the like are not). */
export function isMathFunction(name: string): name is MathFunction {
  return Object.prototype.hasOwnProperty.call(MATH_FUNCTIONS, name);
}
