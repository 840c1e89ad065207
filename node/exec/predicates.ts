/**
 * Expressions and predicates of the operation tree, evaluated against one element. Comparisons follow HelixDB v3's
 * predicate evaluation (its `PropertyValue::compare` and `eq_value`): EQ and NEQ compare values of any kind (numbers
 * with numbers exactly, whatever their representation; strings, booleans, dates, bytes, arrays and objects with their
 * own kind); GT, GTE, LT and LTE order numbers, dates and strings (strings by their UTF-8 bytes, which is Unicode
 * code point order, the order of index keys; not JavaScript's UTF-16 `<`). Values of two kinds, or two booleans,
 * do not order, so an ordering comparison of them is false, and so is EQ of two kinds (NEQ is true); CONTAINS,
 * STARTS_WITH and ENDS_WITH are false unless both sides are strings. A schemaless database may hold a number in one
 * record and a string in another: a filter then skips the records of the other kind instead of failing the query.
 * HelixQL's checker still refuses a mistyped comparison at load time (`invalid_type`). Before comparing, Silk aligns
 * what denotes the same thing: an ISO 8601 string with a date, a decimal string or an answer's ID with an ID. A
 * missing property matches nothing (and so NEQ matches it).
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { wait, type Maybe, type Op } from "./ops.js";
import { idOf, JsonId } from "../../protocol/ids.js";
import type { CompareOp, Expr, Predicate, Step } from "../../protocol/tree.js";
import { compareValues, valuesEqual, type Value } from "../../protocol/values.js";
import { embed } from "./embed.js";
import { elementValue } from "./rows.js";
import { callMath } from "./math.js";
import { lookupParameter, recordField, streamToJson, type Element, type ExecutionContext, type Stream } from "./streams.js";

export interface EvalScope {
  readonly context: ExecutionContext;
  readonly variables: Map<string, Stream>;
  readonly parameters: Readonly<Record<string, unknown>>;
  /** What the `context` step yields: the current element inside a sub-traversal. */
  readonly contextStream?: Stream;
  /**
   * The `contextStream` of each enclosing sub-traversal, innermost last (undefined where one had none): what
   * `{"context": {"depth": d}}` reads. Every sub-traversal pushes the one it replaces (`enterSubTraversal`).
   */
  readonly outerContexts?: readonly (Stream | undefined)[];
  /** The executor's step evaluator, passed in so that expressions can run sub-traversals without importing it. */
  readonly evalStep: (step: Step, scope: EvalScope, withRecords?: boolean) => Maybe<Stream>;
  /** Set while a `path` or `simple_path` step evaluates its input: traversals then record each row's path (walks.ts). */
  readonly trackPaths?: boolean;
}


/**
 * A variable's value in an expression: a scalar as itself, values as an array, records as an array of their IDs in
 * the answer's form (`renderId`: decimal strings from `Database.run`, JSON numbers on `/v2/query`), as the `id` step
 * and `$id` show them.
 */
function variable(name: string, scope: EvalScope): Value {
  const stream = scope.variables.get(name);
  if (stream === undefined) throw new SilkError("unknown_variable", `no earlier entry defines ${JSON.stringify(name)}`);
  switch (stream.kind) {
    case "scalar":
      return stream.value as Value;
    case "values":
      return stream.items as Value[];
    case "elements":
      // Comparisons align either form with stored IDs; a mutation stores them as decimal strings (mutations.ts).
      return stream.items.map((item) => scope.context.renderId(item.id)) as Value[];
    default:
      return unreachable(stream, "stream");
  }
}

/**
 * A property of the current element: a field of its record, or for a search hit its `$distance` (vector searches) or
 * `$score` (text searches, rerankers), as `project` reads them (projection.ts propertyJson).
 */
function property(element: Element | undefined, path: string): Value | undefined {
  const record = element?.record;
  if (record === undefined) throw new SilkError("malformed_tree", `property ${JSON.stringify(path)} needs a record in scope`);
  const hit = element!.hit;
  if (path === "$distance") return hit?.measure === "distance" ? hit.score : undefined;
  if (path === "$score") return hit?.measure === "relevance" ? hit.score : undefined;
  return recordField(record, path);
}

/** `$from.<path>` / `$to.<path>`: a path into an edge's source or target record, as HelixDB's row properties read them. */
const ENDPOINT_PATH = /^\$(from|to)\.(.+)$/;

/**
 * A property of an edge's endpoint, HelixDB's `$from.name` or `$to.$id` (what its SDK's `Projection.fromEndpoint` /
 * `toEndpoint` project): the endpoint record's field, `$id`, `$label` or dotted path, read through the invocation's
 * view. On any other record the name is an ordinary (and absent) property, as there.
 */
function* endpointProperty(element: Element | undefined, end: "from" | "to", path: string, scope: EvalScope): Op<Value | undefined> {
  const record = element?.record;
  if (record === undefined) throw new SilkError("malformed_tree", `property ${JSON.stringify(`$${end}.${path}`)} needs a record in scope`);
  if (record.kind !== "edge") return undefined;
  const [kind, id] = end === "from" ? [record.fromKind, record.from] : [record.toKind, record.to];
  if (path === "$id") return id;
  const [endpoint] = yield* wait(scope.context.view.records(kind, [id]));
  return endpoint === undefined ? undefined : recordField(endpoint, path);
}

/**
 * A value a row reads from an element (binding projections, `sack_set`, `sack_add`): rows.ts `elementValue`, and an
 * edge's endpoint path (`$from.name`) read as expressions read it.
 */
export function* rowValue(element: Element, source: string, scope: EvalScope): Op<Value | undefined> {
  const endpoint = source.startsWith("$") ? ENDPOINT_PATH.exec(source) : null;
  // A row's element whose record is gone has no values, as elementValue answers.
  if (endpoint === null || element.record === undefined) return elementValue(element, source);
  return yield* endpointProperty(element, endpoint[1] as "from" | "to", endpoint[2], scope);
}

/**
 * Runs a sub-traversal with `context` bound to the current element; without one (a bound, a mutation value) the
 * enclosing context stays, and a traversal that reads `context` where there is none is refused by the executor.
 */
function* subTraversal(traversal: Step, element: Element | undefined, scope: EvalScope): Op<Stream> {
  if (element === undefined) return yield* wait(scope.evalStep(traversal, scope));
  return yield* wait(scope.evalStep(traversal, enterSubTraversal(scope, { kind: "elements", items: [element] })));
}

/**
 * The scope a sub-traversal runs in: `context` is `unit`, and the context it replaces becomes the innermost outer
 * one. The HelixQL compiler counts depths the same way: one level per WHERE, projection or closure a value sits in.
 */
export function enterSubTraversal(scope: EvalScope, unit: Stream): EvalScope {
  return { ...scope, contextStream: unit, outerContexts: [...(scope.outerContexts ?? []), scope.contextStream] };
}

/** What `exprNow` and `predicateNow` answer for an expression that may have to wait: `evaluateExpr` runs it. */
export const LATER: unique symbol = Symbol("later");

/**
 * The value of an expression that reads nothing beyond the element's own record (a field, a constant, a parameter, a
 * variable, the element's ID, the clock), or LATER for one that may read or wait (an endpoint's field, a
 * sub-traversal, a call, Embed): `evaluateExpr` runs those. A plain function, so a filter, a projection or an
 * ordering over many elements builds no generator per element for the common expressions.
 */
export function exprNow(expr: Expr, element: Element | undefined, scope: EvalScope): Value | undefined | typeof LATER {
  switch (expr.kind) {
    case "property":
      // Most paths are plain field names: only one that starts with "$" can name an endpoint.
      return expr.path.startsWith("$") && ENDPOINT_PATH.test(expr.path) ? LATER : property(element, expr.path);
    case "constant":
      return expr.value;
    case "param":
      return lookupParameter(expr.name, scope.parameters, "param") as Value;
    case "var":
      return variable(expr.name, scope);
    case "id":
      if (element === undefined) throw new SilkError("malformed_tree", "id needs a record in scope");
      return element.id;
    case "timestamp":
      // The invocation's clock, passed in (ExecutionContext.now), so tests can fix the time.
      return scope.context.now().getTime();
    case "date_time_now":
      // A date of its own: the value may be stored, and the clock's Date must not be shared with it.
      return new Date(scope.context.now().getTime());
    default:
      return LATER;
  }
}

export function* evaluateExpr(expr: Expr, element: Element | undefined, scope: EvalScope): Op<Value | undefined> {
  const now = exprNow(expr, element, scope);
  if (now !== LATER) return now;
  switch (expr.kind) {
    case "property": {
      const endpoint = ENDPOINT_PATH.exec(expr.path)!;
      return yield* endpointProperty(element, endpoint[1] as "from" | "to", endpoint[2], scope);
    }
    case "traversal":
      return (yield* streamToJson(yield* subTraversal(expr.traversal, element, scope), scope.context.view, scope.context.renderId)) as Value;
    case "first": {
      const json = yield* streamToJson(yield* subTraversal(expr.traversal, element, scope), scope.context.view, scope.context.renderId);
      return (Array.isArray(json) ? (json[0] ?? null) : json) as Value;
    }
    case "call": {
      const args: (Value | undefined)[] = [];
      for (const arg of expr.args) args.push(yield* evaluateExpr(arg, element, scope));
      return callMath(expr.fn, args);
    }
    case "count": {
      const stream = yield* subTraversal(expr.traversal, element, scope);
      return stream.kind === "scalar" ? 1 : stream.items.length;
    }
    case "arith":
      return arithmetic(expr.op, yield* evaluateExpr(expr.left, element, scope), yield* evaluateExpr(expr.right, element, scope));
    case "embed":
      return yield* embed(yield* evaluateExpr(expr.text, element, scope), expr.model, scope.context);
    case "neg":
      return negate(yield* evaluateExpr(expr.expr, element, scope));
    case "case":
      for (const branch of expr.branches) {
        if (yield* evaluatePredicate(branch.when, element, scope)) return yield* evaluateExpr(branch.then, element, scope);
      }
      return expr.otherwise === undefined ? null : yield* evaluateExpr(expr.otherwise, element, scope);
    default:
      // exprNow answered every other kind.
      throw new SilkError("internal", `internal error (a bug in Silk): expression ${expr.kind} was left to evaluateExpr`);
  }
}

/** `neg`: a number's negation; null (or a missing value) stays null, as arithmetic on null does. */
function negate(value: Value | undefined): Value {
  if (value === undefined || value === null) return null;
  if (typeof value === "bigint") return -value;
  if (typeof value === "number") return value === 0 ? 0 : -value;
  throw new SilkError("invalid_type", "neg needs a number");
}

function arithmetic(op: "add" | "sub" | "mul" | "div" | "mod", left: Value | undefined, right: Value | undefined): Value | undefined {
  if (left === undefined || left === null || right === undefined || right === null) return null;
  const a = typeof left === "bigint" ? Number(left) : left;
  const b = typeof right === "bigint" ? Number(right) : right;
  if (typeof a !== "number" || typeof b !== "number") throw new SilkError("invalid_type", `${op} needs numbers`);
  switch (op) {
    case "add":
      return a + b;
    case "sub":
      return a - b;
    case "mul":
      return a * b;
    case "div":
      return b === 0 ? null : a / b;
    case "mod":
      return b === 0 ? null : a % b;
    default:
      return unreachable(op, "operator");
  }
}

type Kind = "number" | "string" | "boolean" | "date" | "other";

function kindOf(value: Value): Kind {
  if (typeof value === "number" || typeof value === "bigint") return "number";
  if (typeof value === "string") return "string";
  if (typeof value === "boolean") return "boolean";
  if (value instanceof Date) return "date";
  return "other";
}

/**
 * Brings a comparison's two sides to one type where they denote the same thing: an answer's ID (JsonId) is its ID;
 * an ISO 8601 string against a date is that date; a decimal string against an ID (a bigint) is that ID. A string that
 * is not such a date or ID stays a string, which then compares with nothing of the other kind.
 */
function align(rawLeft: Value, rawRight: Value): [Value, Value] {
  const left = asId(rawLeft);
  const right = asId(rawRight);
  if (left instanceof Date && typeof right === "string") return [left, asDate(right)];
  if (right instanceof Date && typeof left === "string") return [asDate(left), right];
  if (typeof left === "bigint" && typeof right === "string") return [left, idOf(right) ?? right];
  if (typeof right === "bigint" && typeof left === "string") return [idOf(left) ?? left, right];
  return [left, right];
}

/** An answer's ID in an expression's value (a `var` of records on `/v2/query`, an `id` step's values) is its ID. */
function asId(value: Value): Value {
  return (value as unknown) instanceof JsonId ? (value as unknown as JsonId).id : value;
}

function asDate(text: string): Value {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? text : date;
}

/** A comparison of two values, as HelixDB v3 evaluates it: values that do not compare give false (NEQ: true). */
export function compare(op: CompareOp, rawLeft: Value | undefined, rawRight: Value | undefined): boolean {
  if (rawLeft === undefined || rawLeft === null || rawRight === undefined || rawRight === null) {
    return op === "neq" ? !(rawLeft == null && rawRight == null) : op === "eq" && rawLeft == null && rawRight == null;
  }
  const [left, right] = align(rawLeft, rawRight);
  if (op === "eq") return valuesEqual(left, right);
  if (op === "neq") return !valuesEqual(left, right);
  // Booleans do not order, as in HelixDB v3; compareValues orders them for sorting.
  if (typeof left === "boolean") return false;
  const order = kindOf(left) === kindOf(right) ? compareValues(left, right) : undefined;
  if (order === undefined) return false;
  switch (op) {
    case "gt":
      return order > 0;
    case "gte":
      return order >= 0;
    case "lt":
      return order < 0;
    case "lte":
      return order <= 0;
    default:
      return unreachable(op, "comparison");
  }
}

/** A side of CONTAINS, STARTS_WITH or ENDS_WITH: a string, or undefined (the predicate is false) for anything else. */
function asString(value: Value | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The expressions a leaf predicate compares, in the order they are evaluated. */
function operands(predicate: Exclude<Predicate, { kind: "and" | "or" | "not" | "exists" }>): Expr[] {
  switch (predicate.kind) {
    case "compare":
      return [predicate.left, predicate.right];
    case "between":
      return [predicate.value, predicate.min, predicate.max];
    case "is_null":
    case "is_not_null":
    case "has_key":
      return [{ kind: "property", path: predicate.path }];
    case "contains":
      return [predicate.value, predicate.needle];
    case "starts_with":
    case "ends_with":
      return [predicate.value, predicate.affix];
    case "is_in":
      return [predicate.value, predicate.values];
    default:
      return unreachable(predicate, "predicate");
  }
}

/** A leaf predicate's verdict on its operands' values (`operands`, same order). */
function decide(predicate: Exclude<Predicate, { kind: "and" | "or" | "not" | "exists" }>, values: readonly (Value | undefined)[]): boolean {
  switch (predicate.kind) {
    case "compare":
      return compare(predicate.op, values[0], values[1]);
    case "between":
      return compare("gte", values[0], values[1]) && compare("lte", values[0], values[2]);
    case "is_null":
      return values[0] === undefined || values[0] === null;
    case "is_not_null":
    case "has_key":
      return values[0] !== undefined && values[0] !== null;
    case "contains": {
      const value = asString(values[0]);
      const needle = asString(values[1]);
      return value !== undefined && needle !== undefined && value.includes(needle);
    }
    case "starts_with":
    case "ends_with": {
      const value = asString(values[0]);
      const affix = asString(values[1]);
      if (value === undefined || affix === undefined) return false;
      return predicate.kind === "starts_with" ? value.startsWith(affix) : value.endsWith(affix);
    }
    case "is_in": {
      const [value, members] = values;
      if (value === undefined || value === null) return false;
      // HelixDB v3's membership: any member equal to the value; a value that is not an array is compared itself.
      return Array.isArray(members) ? members.some((candidate) => compare("eq", value, candidate)) : compare("eq", value, members);
    }
    default:
      return unreachable(predicate, "predicate");
  }
}

/**
 * A predicate's verdict when every expression it evaluates needs no wait (`exprNow`), or LATER: then
 * `evaluatePredicate` decides it (evaluating again what was evaluated here, which reads nothing and changes nothing).
 * A plain function: a filter over many elements builds no generator per element for the common predicates.
 */
export function predicateNow(predicate: Predicate, element: Element | undefined, scope: EvalScope): boolean | typeof LATER {
  switch (predicate.kind) {
    case "and":
      for (const inner of predicate.predicates) {
        const verdict = predicateNow(inner, element, scope);
        if (verdict !== true) return verdict;
      }
      return true;
    case "or":
      for (const inner of predicate.predicates) {
        const verdict = predicateNow(inner, element, scope);
        if (verdict !== false) return verdict;
      }
      return false;
    case "not": {
      const verdict = predicateNow(predicate.predicate, element, scope);
      return verdict === LATER ? LATER : !verdict;
    }
    case "exists":
      return LATER;
    default: {
      const exprs = operands(predicate);
      const values: (Value | undefined)[] = [];
      for (const expr of exprs) {
        const value = exprNow(expr, element, scope);
        if (value === LATER) return LATER;
        values.push(value);
      }
      return decide(predicate, values);
    }
  }
}

export function* evaluatePredicate(predicate: Predicate, element: Element | undefined, scope: EvalScope): Op<boolean> {
  const now = predicateNow(predicate, element, scope);
  if (now !== LATER) return now;
  switch (predicate.kind) {
    case "and":
      for (const inner of predicate.predicates) if (!(yield* evaluatePredicate(inner, element, scope))) return false;
      return true;
    case "or":
      for (const inner of predicate.predicates) if (yield* evaluatePredicate(inner, element, scope)) return true;
      return false;
    case "not":
      return !(yield* evaluatePredicate(predicate.predicate, element, scope));
    case "exists": {
      const stream = yield* subTraversal(predicate.traversal, element, scope);
      return stream.kind === "scalar" ? Boolean(stream.value) : stream.items.length > 0;
    }
    default: {
      const values: (Value | undefined)[] = [];
      for (const expr of operands(predicate)) values.push(yield* evaluateExpr(expr, element, scope));
      return decide(predicate, values);
    }
  }
}
