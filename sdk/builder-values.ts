/**
 * The value vocabulary of the `/v2/query` builder (builder.ts): tagged literals, expressions, predicates, source
 * references, entry conditions and `parameter_types`, each producing exactly the JSON of docs/OPERATION_TREE.md.
 * Literals and expressions are distinct classes so that a comparison can take either and wrap a literal in
 * `{"constant": ..}` itself: `gt(prop("age"), lit.i64(18))`.
 */
import type { Json } from "./client.js";

/** A tagged literal: `{"string": "Ann"}`, `{"i64": 25}`, `"null"`. */
export class Literal {
  constructor(readonly json: Json) {}
}

/** An expression: `{"property": "age"}`, `{"param": "p"}`, `"id"`, ... */
export class Expr {
  constructor(readonly json: Json) {}
}

/** A predicate of `where`, `nodes_where` and friends. */
export class Predicate {
  constructor(readonly json: Json) {}
}

/** Something that reads as a step's JSON: a traversal (builder.ts) exposes its step this way. */
export interface StepJson {
  readonly step: Json;
}

/** An integer as the tree takes it: a JSON number up to 2^53, a decimal string beyond. */
function integerJson(value: number | bigint | string): Json {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new RangeError(`${value} is not a safe integer; pass a bigint or a decimal string`);
    return value;
  }
  const big = BigInt(value);
  return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big.toString(10);
}

export const lit = {
  string: (value: string): Literal => new Literal({ string: value }),
  i64: (value: number | bigint | string): Literal => new Literal({ i64: integerJson(value) }),
  f64: (value: number): Literal => new Literal({ f64: value }),
  f32: (value: number): Literal => new Literal({ f32: value }),
  bool: (value: boolean): Literal => new Literal({ bool: value }),
  null: (): Literal => new Literal("null"),
  /** A Date, an ISO 8601 string or epoch milliseconds. */
  dateTime: (value: Date | string | number): Literal => new Literal({ date_time: value instanceof Date ? value.toISOString() : value }),
  bytes: (value: Uint8Array | readonly number[]): Literal => new Literal({ bytes: Array.from(value) }),
  i64Array: (values: readonly (number | bigint | string)[]): Literal => new Literal({ i64_array: values.map(integerJson) }),
  f64Array: (values: ArrayLike<number>): Literal => new Literal({ f64_array: Array.from(values) }),
  f32Array: (values: ArrayLike<number>): Literal => new Literal({ f32_array: Array.from(values) }),
  stringArray: (values: readonly string[]): Literal => new Literal({ string_array: [...values] }),
  array: (values: readonly Literal[]): Literal => new Literal({ array: values.map((value) => value.json) }),
  object: (fields: Readonly<Record<string, Literal>>): Literal =>
    new Literal({ object: Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, value.json])) }),
};

/** An expression, or a literal used as one (`{"constant": literal}`). */
export type Operand = Expr | Literal;

export function toExprJson(operand: Operand): Json {
  return operand instanceof Literal ? { constant: operand.json } : operand.json;
}

/** A property of the current element; dotted paths reach into objects; `$id`, `$label`, `$from`, `$to` are virtual. */
export const prop = (path: string): Expr => new Expr({ property: path });
export const constant = (value: Literal): Expr => new Expr({ constant: value.json });
export const param = (name: string): Expr => new Expr({ param: name });
/** The current element's ID. */
export const currentId = (): Expr => new Expr("id");
/** An earlier entry's result. */
export const variable = (name: string): Expr => new Expr({ var: name });

const arithmetic = (op: "add" | "sub" | "mul" | "div" | "mod") => (left: Operand, right: Operand): Expr =>
  new Expr({ [op]: { left: toExprJson(left), right: toExprJson(right) } });
export const add = arithmetic("add");
export const sub = arithmetic("sub");
export const mul = arithmetic("mul");
export const div = arithmetic("div");
export const mod = arithmetic("mod");

export type MathFunctionName =
  | "pow" | "abs" | "sqrt" | "ln" | "log10" | "exp" | "ceil" | "floor" | "round" | "sin" | "cos" | "tan" | "asin"
  | "acos" | "atan" | "log" | "atan2" | "min" | "max";
export const call = (fn: MathFunctionName, ...args: Operand[]): Expr => new Expr({ call: { fn, args: args.map(toExprJson) } });
/** The number of results of a sub-traversal (start it with `context()`). */
export const countOf = (traversal: StepJson): Expr => new Expr({ count: { traversal: traversal.step } });
/** The first element of a sub-traversal, or null. */
export const firstOf = (traversal: StepJson): Expr => new Expr({ first: traversal.step });
/** The whole JSON result of a sub-traversal. */
export const traversalOf = (traversal: StepJson): Expr => new Expr({ traversal: traversal.step });

const comparison = (op: "eq" | "neq" | "gt" | "gte" | "lt" | "lte") => (left: Operand, right: Operand): Predicate =>
  new Predicate({ [op]: { left: toExprJson(left), right: toExprJson(right) } });
export const eq = comparison("eq");
export const neq = comparison("neq");
export const gt = comparison("gt");
export const gte = comparison("gte");
export const lt = comparison("lt");
export const lte = comparison("lte");
/** Inclusive at both ends. */
export const between = (value: Operand, min: Operand, max: Operand): Predicate =>
  new Predicate({ between: { value: toExprJson(value), min: toExprJson(min), max: toExprJson(max) } });
export const isNull = (property: string): Predicate => new Predicate({ is_null: { property } });
export const isNotNull = (property: string): Predicate => new Predicate({ is_not_null: { property } });
export const hasKey = (property: string): Predicate => new Predicate({ has_key: { property } });
export const contains = (value: Operand, substring: Operand): Predicate =>
  new Predicate({ contains: { value: toExprJson(value), substring: toExprJson(substring) } });
export const startsWith = (value: Operand, prefix: Operand): Predicate =>
  new Predicate({ starts_with: { value: toExprJson(value), prefix: toExprJson(prefix) } });
export const endsWith = (value: Operand, suffix: Operand): Predicate =>
  new Predicate({ ends_with: { value: toExprJson(value), suffix: toExprJson(suffix) } });
export const isIn = (value: Operand, values: Operand): Predicate =>
  new Predicate({ is_in: { value: toExprJson(value), values: toExprJson(values) } });
export const and = (...predicates: Predicate[]): Predicate => new Predicate({ and: { predicates: predicates.map((p) => p.json) } });
export const or = (...predicates: Predicate[]): Predicate => new Predicate({ or: { predicates: predicates.map((p) => p.json) } });
export const not = (predicate: Predicate): Predicate => new Predicate({ not: { predicate: predicate.json } });
/** True when the sub-traversal (started with `context()`) yields anything. */
export const exists = (traversal: StepJson): Predicate => new Predicate({ exists: { traversal: traversal.step } });

/** Where a source (or `add_e`'s `to`, `upsert_e`'s ends, `shortest_path`'s `to`) takes its records from. */
export class Ref {
  constructor(readonly json: Json) {}
}
export const ref = {
  all: (): Ref => new Ref("all"),
  ids: (ids: readonly (string | number | bigint)[]): Ref => new Ref({ ids: ids.map((id) => (typeof id === "bigint" ? id.toString(10) : id)) }),
  var: (name: string): Ref => new Ref({ var: name }),
  param: (name: string): Ref => new Ref({ param: name }),
};

/** A property value of a mutation: `{"optional_param": name}` leaves the property out when the call omits it. */
export class OptionalParam {
  constructor(readonly name: string) {}
}
export const optionalParam = (name: string): OptionalParam => new OptionalParam(name);

export type PropertyValue = Literal | Expr | OptionalParam;

/** `{name: value}` to the tree's `[name, {"value"|"expr"|"optional_param": ..}]` pairs, in the object's order. */
export function propertyPairs(properties: Readonly<Record<string, PropertyValue>>): Json {
  return Object.entries(properties).map(([name, value]) => [name, propertyValueJson(value)]);
}

export function propertyValueJson(value: PropertyValue): Json {
  if (value instanceof Literal) return { value: value.json };
  if (value instanceof OptionalParam) return { optional_param: value.name };
  return { expr: value.json };
}

/** Conditions that gate an entry on earlier results. */
export class Condition {
  constructor(readonly json: Json) {}
}
export const cond = {
  varEmpty: (name: string): Condition => new Condition({ var_empty: name }),
  varNotEmpty: (name: string): Condition => new Condition({ var_not_empty: name }),
  varMinSize: (name: string, size: number): Condition => new Condition({ var_min_size: [name, size] }),
  prevNotEmpty: (): Condition => new Condition("prev_not_empty"),
};

/** `parameter_types` entries: checked by the server before anything runs. */
export type ParameterType = "bool" | "i64" | "f64" | "f32" | "string" | "date_time" | "value" | "object" | { readonly array: ParameterType };
export const ptype = {
  bool: "bool",
  i64: "i64",
  f64: "f64",
  f32: "f32",
  string: "string",
  dateTime: "date_time",
  value: "value",
  object: "object",
  array: (element: ParameterType): ParameterType => ({ array: element }),
} as const;
