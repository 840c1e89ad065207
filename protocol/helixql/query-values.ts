/**
 * Values, conditions and projections of HelixQL queries, compiled to the operation tree's expressions,
 * predicates and `project` steps, with their types checked against the schema: property blocks of AddN/AddE/UPDATE
 * (unknown field: invalid_field; wrong type: invalid_type; missing REQUIRED field: missing_property), WHERE
 * conditions (SPEC's comparison rules), math functions, and `::{...}` remappings.
 */
import type { FieldDecl, FieldType } from "../schema.js";
import type { CallAst, ExprAst, ProjectionItemAst, SourceLocation, StepAst } from "./ast.js";
import { fieldTypeToString } from "./coerce.js";
import type { WireArithmetic, WireAssignments, WireCompareOp, WireExpr, WireInput, WireLiteral, WirePredicate, WireProjection, WireStep } from "../tree-wire.js";
import { closureDepth, COMPARISONS, contextTree, elementContext, type ChainAst, type Compiled, type CompilerScope, type ElementContext, type RecordsType } from "./query-scope.js";
import {
  ANY, assignable, comparable, describeValueType, elementOf, familyOf, fieldValue, FLOAT, INT, literalToTree, scalarValue,
  type Family, type RecordKind, type ValueType,
} from "./query-types.js";
import { unreachable } from "../errors.js";
import { isMathFunction as isKnownFunction, MATH_FUNCTIONS, type MathFunction, type MathFunctionSpec } from "../math-functions.js";

/** A compiled value: a tree expression (`{"param": "x"}`, `{"constant": ...}`, ...) and its type. */
export interface CompiledValue {
  readonly expr: WireExpr;
  readonly type: ValueType;
}

/** The declared fields of a record type, or undefined when the label is not known statically. */
export function fieldsOf(scope: CompilerScope, kind: RecordKind, label: string | undefined): ReadonlyMap<string, FieldDecl> | undefined {
  if (label === undefined) return undefined;
  const { schema } = scope;
  const decl = kind === "node" ? schema.nodes.get(label) : kind === "edge" ? schema.edges.get(label) : schema.vectors.get(label);
  return decl?.fields;
}

/** The names a projection or `_::{name}` may use besides declared fields, and the tree property each reads. */
const VIRTUAL_FIELDS: ReadonlyMap<string, { path: string; type: ValueType }> = new Map([
  ["id", { path: "$id", type: scalarValue("ID") }],
  ["label", { path: "$label", type: scalarValue("String") }],
]);

/**
 * The implicit fields of a vector record, as HelixDB reads them after `SearchV` (`::{id, score, data}`): `data` is the
 * vector, `score` the search's distance (null on a vector that is not a search hit; HelixDB answers 2.0 there). A
 * field the `V::` type declares under either name is read instead.
 */
const VECTOR_FIELDS: ReadonlyMap<string, { path: string; type: ValueType }> = new Map([
  ["data", { path: "$vector", type: { t: "field", type: { kind: "array", element: { kind: "scalar", name: "F64" } } } }],
  ["score", { path: "$distance", type: scalarValue("F64") }],
]);

/**
 * Resolves `name` on the records `type`: its tree property path and value type, or reports invalid_field. `name`
 * may be a dotted path (`addr.city`): each segment after the first must be a field of the object field before it,
 * and the path's type is the innermost field's. The tree reads the same dotted string (protocol/values.ts getPath).
 */
export function resolveField(scope: CompilerScope, type: RecordsType, name: string, loc: SourceLocation): { path: string; type: ValueType } | undefined {
  const [head, ...inner] = name.split(".");
  const virtual = VIRTUAL_FIELDS.get(head);
  if (virtual !== undefined) {
    if (inner.length === 0) return virtual;
    scope.report("invalid_field", segmentLoc(loc, name, 1), `${head} is the record's ${head === "id" ? "ID" : "type name"}, not an object: it has no field ${inner[0]}`);
    return undefined;
  }
  const fields = fieldsOf(scope, type.record, type.label);
  const implicit = type.record === "vector" && fields?.has(head) !== true ? VECTOR_FIELDS.get(head) : undefined;
  if (implicit !== undefined) {
    if (inner.length === 0) return implicit;
    scope.report("invalid_field", segmentLoc(loc, name, 1), `${head} is the vector's ${head === "data" ? "vector" : "search distance"}, not an object: it has no field ${inner[0]}`);
    return undefined;
  }
  if (fields === undefined) return { path: name, type: ANY };
  const decl = fields.get(head);
  if (decl === undefined) {
    scope.report("invalid_field", loc, `${type.label} has no field ${head}${knownFields(fields)}`);
    return undefined;
  }
  let current: FieldType = decl.type;
  for (const [index, segment] of inner.entries()) {
    const walked = [type.label, head, ...inner.slice(0, index)].join(".");
    const at = segmentLoc(loc, name, index + 1);
    if (current.kind !== "object") {
      scope.report("invalid_field", at, `${walked} is ${fieldTypeToString(current)}, not an object: it has no field ${segment}`);
      return undefined;
    }
    const next = current.fields.get(segment);
    if (next === undefined) {
      scope.report("invalid_field", at, `${walked} has no field ${segment}${knownFields(current.fields)}`);
      return undefined;
    }
    current = next.type;
  }
  return { path: name, type: fieldValue(current) };
}

/** Where segment `index` of a dotted path written at `loc` starts; a path is written on one line without spaces. */
function segmentLoc(loc: SourceLocation, path: string, index: number): SourceLocation {
  const skipped = path.split(".").slice(0, index).join(".").length + 1;
  return { line: loc.line, column: loc.column + skipped, offset: loc.offset + skipped };
}

function knownFields(fields: ReadonlyMap<string, FieldDecl>): string {
  return fields.size === 0 ? " (it declares no fields)" : ` (fields: ${[...fields.keys()].join(", ")})`;
}

// ---- Values -----------------------------------------------------------------------------------------------------

/** A HelixQL math call: arithmetic (`ADD(a, b)`: the tree's `add`) or a `call` of protocol/math-functions.ts. */
interface MathCall {
  /** Arithmetic (`{"add": {left, right}}`) or a `call` of a math function. */
  readonly tree: { readonly arith: WireArithmeticOp } | { readonly fn: MathFunction };
  /** [fewest, most] arguments. */
  readonly arity: readonly [number, number];
  readonly result: MathFunctionSpec["result"];
}

const BOOL: ValueType = { t: "bool" };

type WireArithmeticOp = "add" | "sub" | "mul" | "div" | "mod";

// Maps, not object literals: a name like "constructor" must not find Object.prototype's members. The functions are
// the tree's, named in capitals (POW, ATAN2, ...).
const MATH: ReadonlyMap<string, MathCall> = new Map([
  ["ADD", { tree: { arith: "add" }, arity: [2, 2], result: "widest" }],
  ["SUB", { tree: { arith: "sub" }, arity: [2, 2], result: "widest" }],
  ["MUL", { tree: { arith: "mul" }, arity: [2, 2], result: "widest" }],
  ["DIV", { tree: { arith: "div" }, arity: [2, 2], result: "float" }],
  ["MOD", { tree: { arith: "mod" }, arity: [2, 2], result: "widest" }],
  ...Object.keys(MATH_FUNCTIONS).filter(isKnownFunction).map((fn): [string, MathCall] => [fn.toUpperCase(), { tree: { fn }, arity: MATH_FUNCTIONS[fn].arity, result: MATH_FUNCTIONS[fn].result }]),
]);

const CONSTANTS: ReadonlyMap<string, number> = new Map([
  ["PI", Math.PI],
  ["E", Math.E],
]);

export function isMathFunction(name: string): boolean {
  return MATH.has(name) || CONSTANTS.has(name);
}

/**
 * How `x::Step::{field}` reads when it yields one record: as the field's value (comparison operands, math
 * arguments, property values), or, in a projection, as the remapped object `{field: value}` it writes.
 */
export type ValueMode = "value" | "projection";

/** Compiles an expression used as a value (a property value, a comparison operand, a math argument, a projection item). */
export function compileValue(scope: CompilerScope, expr: ExprAst, context: ElementContext | undefined, mode: ValueMode = "value"): CompiledValue | undefined {
  switch (expr.kind) {
    case "literal": {
      const { tree, type } = literalToTree(expr.literal);
      return { expr: { constant: tree }, type };
    }
    case "array": {
      const literal = arrayLiteral(scope, expr);
      return literal === undefined ? undefined : { expr: { constant: literal.tree }, type: literal.type };
    }
    case "object":
      scope.report("query_invalid", expr.loc, "an object is only allowed as a property block ({field: value}) or in RETURN");
      return undefined;
    case "not":
      if (isExistsCall(expr.operand)) return existsValue(scope, expr.operand.start, true, context);
      scope.report("query_invalid", expr.loc, "! negates a condition: inside WHERE, or !EXISTS(...) as a value");
      return undefined;
    case "chain":
      return chainValue(scope, expr, context, mode);
    default:
      return unreachable(expr, "expression");
  }
}

/** An array of literals as one tagged literal; anything else in it is reported. */
function arrayLiteral(scope: CompilerScope, expr: Extract<ExprAst, { kind: "array" }>): { tree: WireLiteral; type: ValueType } | undefined {
  const elements: WireLiteral[] = [];
  for (const element of expr.elements) {
    if (element.kind === "literal") elements.push(literalToTree(element.literal).tree);
    else if (element.kind === "array") {
      const inner = arrayLiteral(scope, element);
      if (inner === undefined) return undefined;
      elements.push(inner.tree);
    } else {
      scope.report("query_invalid", expr.loc, "an array value may only hold literals; pass computed arrays as parameters");
      return undefined;
    }
  }
  return { tree: { array: elements }, type: ANY };
}

/** Reports named arguments (`f(x: 1)`) on a call that takes none; true when there are none. */
export function refuseNamedArguments(scope: CompilerScope, call: CallAst): boolean {
  const [first] = call.named ?? [];
  if (first === undefined) return true;
  scope.report("query_invalid", first.name.loc, `${call.name.text} takes no named arguments (only SearchV, SearchBM25, RerankRRF and RerankMMR do)`);
  return false;
}

/** Whether a call is a bare name: no generic, no parentheses. */
export function isBareName(call: CallAst): boolean {
  return call.generic === undefined && call.args === undefined;
}

/** `_`, or the closure parameter, naming the current element. */
export function isElement(call: CallAst, context: ElementContext | undefined): boolean {
  return isBareName(call) && context !== undefined && (call.name.text === "_" || call.name.text === context.alias);
}

function chainValue(scope: CompilerScope, expr: ChainAst, context: ElementContext | undefined, mode: ValueMode): CompiledValue | undefined {
  const { start, steps } = expr;
  if (steps.length === 0) return nameOrCall(scope, start, context);
  const last = steps[steps.length - 1];
  if (isElement(start, context) && steps.length === 1) {
    const field = singleField(last);
    if (field !== undefined) return elementField(scope, context!, field.text, field.loc);
    if (last.kind === "call" && last.call.name.text === "ID" && isBareName(last.call)) return { expr: "id", type: scalarValue("ID") };
  }
  // `usr::{name}` with `usr` a closure further out: its field's value, as `u::{name}` is the current element's.
  const outer = isBareName(start) && steps.length === 1 ? closureDepth(context, start.name.text) : undefined;
  const outerField = outer !== undefined && outer.depth > 0 ? singleField(last) : undefined;
  if (outerField !== undefined) {
    const resolved = resolveField(scope, outer!.context.type, outerField.text, outerField.loc);
    if (resolved === undefined) return undefined;
    return { expr: { first: { values: { input: contextTree(outer!.depth), properties: [resolved.path] } } }, type: resolved.type };
  }
  if (last.kind === "call" && last.call.name.text === "COUNT" && isBareName(last.call)) {
    const counted = scope.chain({ ...expr, steps: steps.slice(0, -1) }, context);
    return counted === undefined ? undefined : { expr: { count: { traversal: counted.tree } }, type: INT };
  }
  const field = mode === "value" ? singleField(last) : undefined;
  if (field !== undefined) {
    // `x::ToN::{age}`: the field's value when the traversal before it yields one record.
    const prefix = scope.chain({ ...expr, steps: steps.slice(0, -1) }, context);
    if (prefix === undefined) return undefined;
    if (prefix.type.kind === "records" && prefix.type.one) {
      const resolved = resolveField(scope, prefix.type, field.text, field.loc);
      if (resolved === undefined) return undefined;
      return { expr: { first: { values: { input: prefix.tree, properties: [resolved.path] } } }, type: resolved.type };
    }
  }
  const compiled = scope.chain(expr, context);
  if (compiled === undefined) return undefined;
  const type = compiled.type;
  if (type.kind === "values" && type.shape === "scalar") return { expr: { traversal: compiled.tree }, type: type.value };
  // A traversal that yields one record, row or value is that value (or null), not a list of one.
  const single = type.kind === "values" ? type.shape === "one" : type.one;
  if (single) return { expr: { first: compiled.tree }, type: type.kind === "values" ? type.value : ANY };
  return { expr: { traversal: compiled.tree }, type: ANY };
}

/** The field of a one-field projection step `::{name}`, as in `_::{age}`. */
export function singleField(step: StepAst): { text: string; loc: SourceLocation } | undefined {
  if (step.kind !== "projection" || step.exclude || step.items.length !== 1) return undefined;
  const item = step.items[0];
  return item.kind === "field" ? item.name : undefined;
}

function elementField(scope: CompilerScope, context: ElementContext, name: string, loc: SourceLocation): CompiledValue | undefined {
  const field = resolveField(scope, context.type, name, loc);
  return field === undefined ? undefined : { expr: { property: field.path }, type: field.type };
}

function nameOrCall(scope: CompilerScope, call: CallAst, context: ElementContext | undefined): CompiledValue | undefined {
  const name = call.name.text;
  if (!refuseNamedArguments(scope, call)) return undefined;
  if (isBareName(call)) {
    if (closureDepth(context, name) !== undefined) {
      const whole = name === "_" ? "" : `, or remap it whole as in ::{key: ${name}}`;
      scope.report("query_invalid", call.loc, `${name} is an element, not a value here; read a field with ${name}::{field}${whole}`);
      return undefined;
    }
    if (name === "ID" && context !== undefined && scope.lookup("ID") === undefined) return { expr: "id", type: scalarValue("ID") };
    const constant = CONSTANTS.get(name);
    if (constant !== undefined) return { expr: { constant: { f64: constant } }, type: FLOAT };
    return namedValue(scope, call);
  }
  if (name === "EXISTS" && call.generic === undefined && call.args !== undefined) return existsValue(scope, call, false, context);
  if (call.generic === undefined && call.args !== undefined) {
    const constant = CONSTANTS.get(name);
    if (constant !== undefined && call.args.length === 0) return { expr: { constant: { f64: constant } }, type: FLOAT };
    const math = MATH.get(name);
    if (math !== undefined) return mathCall(scope, call, math, call.args, context);
  }
  scope.report("query_invalid", call.loc, `${name} is not a value: expected a parameter, a variable, a literal or a math function`);
  return undefined;
}

/** A parameter, a FOR binding (`row` or `row.field`), or a variable holding values. */
function namedValue(scope: CompilerScope, call: CallAst): CompiledValue | undefined {
  const [head, ...path] = call.name.text.split(".");
  const binding = scope.lookup(head);
  if (binding === undefined && call.name.text === "NONE") {
    scope.report("query_invalid", call.loc, "NONE is only allowed alone, as RETURN NONE");
    return undefined;
  }
  if (binding === undefined) {
    scope.report("unknown_variable", call.loc, `no parameter or variable named ${head}`);
    return undefined;
  }
  if (binding.kind === "param") {
    let type: ValueType = binding.type;
    for (const segment of path) {
      const next = memberType(type, segment);
      if (next === undefined) {
        scope.report("invalid_field", call.loc, `${head} (${describeValueType(binding.type)}) has no field ${segment}`);
        return undefined;
      }
      type = next;
    }
    return { expr: { param: call.name.text }, type };
  }
  if (path.length > 0) {
    scope.report("query_invalid", call.loc, `${head} is a variable; read its fields with ${head}::{${path[0]}}`);
    return undefined;
  }
  const held = binding.type;
  const type = held.kind === "values" && held.shape !== "many" ? held.value : ANY;
  return { expr: { var: binding.tree }, type };
}

function memberType(type: ValueType, name: string): ValueType | undefined {
  if (type.t === "any") return ANY;
  if (type.t !== "field" || type.type.kind !== "object") return undefined;
  const field = type.type.fields.get(name);
  return field === undefined ? undefined : fieldValue(field.type);
}

/** How the least argument count of a function with no most reads in a diagnostic ("MIN takes two or more arguments"). */
const NUMBER_WORDS: ReadonlyMap<number, string> = new Map([[1, "one"], [2, "two"], [3, "three"]]);

function mathCall(
  scope: CompilerScope,
  call: CallAst,
  math: MathCall,
  args: readonly ExprAst[],
  context: ElementContext | undefined,
): CompiledValue | undefined {
  const name = call.name.text;
  const [fewest, most] = math.arity;
  if (args.length < fewest || args.length > most) {
    const wanted = fewest === most ? `${fewest} argument${fewest === 1 ? "" : "s"}` : `${NUMBER_WORDS.get(fewest) ?? fewest} or more arguments`;
    scope.report("query_invalid", call.loc, `${name} takes ${wanted}, not ${args.length}`);
    return undefined;
  }
  const compiled: CompiledValue[] = [];
  for (const arg of args) {
    const value = compileValue(scope, arg, context);
    if (value === undefined) return undefined;
    const family = familyOf(value.type);
    // HelixDB does not check math arguments, so a project with one that is not a number still loads here; the
    // executor refuses the value when a call reaches it (node/exec/math.ts, node/exec/predicates.ts: invalid_type).
    if (family !== "number" && family !== "any") {
      scope.warn("math_argument_type", locOf(arg), `${name} takes numbers, not ${describeValueType(value.type)}: a call that reaches this value answers invalid_type`);
    }
    compiled.push(value);
  }
  const allIntegers = compiled.every((value) => value.type.t === "int" || (value.type.t === "field" && isIntegerField(value.type.type)));
  const type = math.result === "float" ? FLOAT : math.result === "int" || allIntegers ? INT : FLOAT;
  const tree = math.tree;
  if ("fn" in tree) return { expr: { call: { fn: tree.fn, args: compiled.map((value) => value.expr) } }, type };
  return { expr: arithmetic(tree.arith, { left: compiled[0].expr, right: compiled[1].expr }), type };
}

/** The tree's arithmetic expression `op` of two operands. */
function arithmetic(op: WireArithmeticOp, operands: WireArithmetic): WireExpr {
  switch (op) {
    case "add":
      return { add: operands };
    case "sub":
      return { sub: operands };
    case "mul":
      return { mul: operands };
    case "div":
      return { div: operands };
    case "mod":
      return { mod: operands };
    default:
      return unreachable(op, "arithmetic");
  }
}

function isIntegerField(type: FieldType): boolean {
  return type.kind === "scalar" && /^[IU]\d+$/.test(type.name);
}

/** A mutation's value: `{"value": literal}` for literals, `{"expr": ...}` otherwise. */
export function compileInput(scope: CompilerScope, expr: ExprAst, context: ElementContext | undefined): { input: WireInput; type: ValueType } | undefined {
  if (expr.kind === "literal") {
    const { tree, type } = literalToTree(expr.literal);
    return { input: { value: tree }, type };
  }
  if (expr.kind === "array") {
    const literal = arrayLiteral(scope, expr);
    return literal === undefined ? undefined : { input: { value: literal.tree }, type: literal.type };
  }
  const value = compileValue(scope, expr, context);
  return value === undefined ? undefined : { input: { expr: value.expr }, type: value.type };
}

/**
 * A property block `{field: value, ...}` for a record of `label`: each field must be declared (invalid_field) and
 * each value of a type the field takes (invalid_type); on create, REQUIRED fields without a DEFAULT must be given
 * (missing_property). Answers the tree's `[name, input]` pairs.
 */
export function compileProperties(
  scope: CompilerScope,
  block: ExprAst | undefined,
  target: { kind: RecordKind; label: string; loc: SourceLocation },
  mode: "create" | "update",
): WireAssignments | undefined {
  const fields = fieldsOf(scope, target.kind, target.label) ?? new Map<string, FieldDecl>();
  const pairs: [string, WireInput][] = [];
  const given = new Set<string>();
  let ok = true;
  if (block !== undefined && block.kind !== "object") {
    scope.report("query_invalid", target.loc, "expected a property block {field: value, ...}");
    return undefined;
  }
  for (const item of block?.items ?? []) {
    const entry = propertyItem(item);
    if (entry === undefined) {
      scope.report("query_invalid", block!.loc, ".. is only allowed in projections, not in a property block");
      ok = false;
      continue;
    }
    const { key, value } = entry;
    if (given.has(key.text)) {
      scope.report("query_invalid", key.loc, `field ${key.text} is given twice`);
      ok = false;
      continue;
    }
    given.add(key.text);
    const decl = fields.get(key.text);
    if (decl === undefined) {
      scope.report("invalid_field", key.loc, `${target.label} has no field ${key.text}${knownFields(fields)}`);
      ok = false;
      continue;
    }
    const input = optionalParameter(scope, value) ?? compileInput(scope, value, undefined);
    if (input === undefined) {
      ok = false;
      continue;
    }
    if (!assignable(input.type, decl.type)) {
      scope.report("invalid_type", key.loc, `${target.label}.${key.text} is ${describeValueType(fieldValue(decl.type))}, not ${describeValueType(input.type)}`);
      ok = false;
      continue;
    }
    pairs.push([key.text, input.input]);
  }
  if (mode === "create") {
    for (const decl of fields.values()) {
      if (decl.required && decl.default === undefined && !given.has(decl.name)) {
        scope.report("missing_property", target.loc, `${target.label}.${decl.name} is REQUIRED and has no DEFAULT; give it a value`);
        ok = false;
      }
    }
  }
  return ok ? pairs : undefined;
}

/** An optional parameter given as a property's value: when a call omits it, the property is left out. */
function optionalParameter(scope: CompilerScope, value: ExprAst): { input: WireInput; type: ValueType } | undefined {
  if (value.kind !== "chain" || value.steps.length > 0 || !isBareName(value.start)) return undefined;
  const binding = scope.lookup(value.start.name.text);
  if (binding?.kind !== "param" || binding.optional !== true) return undefined;
  return { input: { optional_param: value.start.name.text }, type: binding.type };
}

/** A block item as key and value: `name` alone stands for `name: name`. */
function propertyItem(item: ProjectionItemAst): { key: { text: string; loc: SourceLocation }; value: ExprAst } | undefined {
  if (item.kind === "assign") return { key: item.key, value: item.value };
  if (item.kind === "field") {
    return { key: item.name, value: { kind: "chain", start: { name: item.name, loc: item.name.loc }, steps: [], loc: item.name.loc } };
  }
  return undefined;
}

// ---- Conditions -------------------------------------------------------------------------------------------------

/** Compiles a WHERE condition to a tree predicate. */
export function compileCondition(scope: CompilerScope, expr: ExprAst, context: ElementContext | undefined): WirePredicate | undefined {
  if (expr.kind === "not") {
    const inner = compileCondition(scope, expr.operand, context);
    return inner === undefined ? undefined : { not: { predicate: inner } };
  }
  if (expr.kind !== "chain") {
    scope.report("query_invalid", locOf(expr), "a condition is expected here: _::{field}::GT(v), EXISTS(...), AND(...), OR(...)");
    return undefined;
  }
  const { start, steps } = expr;
  if (steps.length === 0 && start.generic === undefined && start.args !== undefined) {
    const name = start.name.text;
    if (!refuseNamedArguments(scope, start)) return undefined;
    if (name === "AND" || name === "OR") return combination(scope, start, start.args, context);
    if (name === "EXISTS") {
      const traversal = existsTraversal(scope, start, context);
      return traversal === undefined ? undefined : { exists: { traversal: traversal.tree } };
    }
  }
  const last = steps[steps.length - 1];
  if (last?.kind === "call" && COMPARISONS.has(last.call.name.text)) {
    return refuseNamedArguments(scope, last.call) ? comparison(scope, expr, last.call, context) : undefined;
  }
  const value = compileValue(scope, expr, context);
  if (value === undefined) return undefined;
  const family = familyOf(value.type);
  if (family !== "bool" && family !== "any") {
    scope.report("invalid_type", expr.loc, `a condition must be true or false; this is ${describeValueType(value.type)} (compare it with ::EQ(...) or ::GT(...))`);
    return undefined;
  }
  return { eq: { left: value.expr, right: { constant: { bool: true } } } };
}

/** Whether an expression is a call `EXISTS(...)` with no steps after it. */
export function isExistsCall(expr: ExprAst): expr is ChainAst {
  return expr.kind === "chain" && expr.steps.length === 0 && expr.start.name.text === "EXISTS" && expr.start.generic === undefined && expr.start.args !== undefined;
}

/** The traversal an `EXISTS(traversal)` looks at, compiled with `_` bound to `context`. */
function existsTraversal(scope: CompilerScope, call: CallAst, context: ElementContext | undefined): Compiled | undefined {
  const [target] = call.args ?? [];
  if (call.generic !== undefined || call.args?.length !== 1 || target.kind !== "chain") {
    scope.report("query_invalid", call.loc, "EXISTS takes one traversal, as in EXISTS(_::In<Follows>)");
    return undefined;
  }
  return scope.chain(target, context);
}

/**
 * `EXISTS(t)` (or, with `negate`, `!EXISTS(t)`) as a traversal of its own: the tree's `exists` terminal, one
 * boolean. A variable assigned it holds that boolean; a value reads it through a `traversal` expression.
 */
export function compileExists(scope: CompilerScope, call: CallAst, negate: boolean, context: ElementContext | undefined): Compiled | undefined {
  const traversal = existsTraversal(scope, call, context);
  if (traversal === undefined) return undefined;
  const tree: WireStep = { exists: negate ? { input: traversal.tree, negate: true } : { input: traversal.tree } };
  return { tree, type: { kind: "values", value: BOOL, shape: "scalar" } };
}

/** `EXISTS(t)` or `!EXISTS(t)` used as a value: a remapped field, a property value, an operand. */
function existsValue(scope: CompilerScope, call: CallAst, negate: boolean, context: ElementContext | undefined): CompiledValue | undefined {
  const compiled = compileExists(scope, call, negate, context);
  return compiled === undefined ? undefined : { expr: { traversal: compiled.tree }, type: BOOL };
}

function combination(scope: CompilerScope, call: CallAst, args: readonly ExprAst[], context: ElementContext | undefined): WirePredicate | undefined {
  if (args.length === 0) {
    scope.report("query_invalid", call.loc, `${call.name.text} needs at least one condition`);
    return undefined;
  }
  const predicates: WirePredicate[] = [];
  for (const arg of args) {
    const predicate = compileCondition(scope, arg, context);
    if (predicate === undefined) return undefined;
    predicates.push(predicate);
  }
  return call.name.text === "AND" ? { and: { predicates } } : { or: { predicates } };
}

/**
 * The families GT and friends order: numbers, dates and strings (by their UTF-8 bytes, as SPEC's range indexes do).
 * A string against a date is a date (ISO 8601), as `comparable` allows.
 */
const ORDERED: ReadonlySet<Family> = new Set<Family>(["number", "date", "string", "any"]);

function comparison(scope: CompilerScope, expr: ChainAst, call: CallAst, context: ElementContext | undefined): WirePredicate | undefined {
  const op = COMPARISONS.get(call.name.text)!;
  const name = call.name.text;
  if (call.args === undefined || call.args.length !== 1 || call.generic !== undefined) {
    scope.report("query_invalid", call.loc, `${name} takes one value, as in ${name}(18)`);
    return undefined;
  }
  const left = compileValue(scope, { ...expr, steps: expr.steps.slice(0, -1) }, context);
  const right = compileValue(scope, call.args[0], context);
  if (left === undefined || right === undefined) return undefined;
  const leftFamily = familyOf(left.type);
  const rightFamily = familyOf(right.type);
  const mismatch = (why: string): undefined => {
    scope.report("invalid_type", call.loc, `${name} ${why}: ${describeValueType(left.type)} against ${describeValueType(right.type)}`);
    return undefined;
  };
  switch (op) {
    case "contains":
      if (!["string", "any"].includes(leftFamily) || !["string", "any"].includes(rightFamily)) return mismatch("looks for a string in a string");
      return { contains: { value: left.expr, substring: right.expr } };
    case "is_in": {
      const element = elementOf(right.type);
      if (element === undefined) return mismatch("needs an array of values to look in");
      if (!comparable(leftFamily, familyOf(element))) return mismatch("compares values of one type");
      return { is_in: { value: left.expr, values: right.expr } };
    }
    default:
      if (leftFamily === "other" || rightFamily === "other") return mismatch("compares strings, booleans, dates and numbers");
      if (!comparable(leftFamily, rightFamily)) return mismatch("compares values of one type");
      if (op !== "eq" && op !== "neq" && !(ORDERED.has(leftFamily) && ORDERED.has(rightFamily))) {
        return mismatch("orders numbers, dates and strings only");
      }
      return comparePredicate(op, { left: left.expr, right: right.expr });
  }
}

/** The tree's comparison predicate `op` of two operands. */
function comparePredicate(op: WireCompareOp, operands: WireArithmetic): WirePredicate {
  switch (op) {
    case "eq":
      return { eq: operands };
    case "neq":
      return { neq: operands };
    case "gt":
      return { gt: operands };
    case "gte":
      return { gte: operands };
    case "lt":
      return { lt: operands };
    case "lte":
      return { lte: operands };
    default:
      return unreachable(op, "comparison");
  }
}

export function locOf(expr: ExprAst): SourceLocation {
  return expr.kind === "literal" ? expr.literal.loc : expr.loc;
}

// ---- Projections ------------------------------------------------------------------------------------------------

/** `::{a, b: expr, ..}`, `::!{a}` and `::|x| {...}` over a stream of records. */
export function compileProjection(scope: CompilerScope, step: Extract<StepAst, { kind: "projection" | "closure" }>, input: Compiled): Compiled | undefined {
  if (input.type.kind !== "records") {
    scope.report("query_invalid", step.loc, "a projection ::{...} reads fields of records; this traversal yields values");
    return undefined;
  }
  const element: RecordsType = { ...input.type, one: true };
  const context = elementContext(scope, element, step.kind === "closure" ? step.param.text : undefined);
  if (step.kind === "projection" && step.exclude) {
    const exclude: string[] = [];
    for (const item of step.items) {
      if (item.kind !== "field") {
        scope.report("query_invalid", step.loc, "::!{...} lists field names to leave out");
        return undefined;
      }
      // The record's rendering is left without whole top-level keys; leaving out part of an object is not a thing it does.
      if (item.name.text.includes(".")) {
        scope.report("query_invalid", item.name.loc, `::!{...} leaves out top-level fields; ${item.name.text} is a path into an object field`);
        return undefined;
      }
      if (resolveField(scope, element, item.name.text, item.name.loc) === undefined) return undefined;
      exclude.push(item.name.text);
    }
    return { tree: { project: { input: input.tree, projections: [], exclude } }, type: { kind: "rows", one: input.type.one } };
  }
  const projections: WireProjection[] = [];
  let all = false;
  for (const item of step.items) {
    if (item.kind === "spread") {
      all = true;
      continue;
    }
    if (item.kind === "field") {
      const field = resolveField(scope, element, item.name.text, item.name.loc);
      if (field === undefined) return undefined;
      // An expression item, not a property item: a tree's property item leaves a missing field out of the row (HelixDB
      // v3's projection), while a HelixQL projection names every field it lists, null when the record lacks it.
      projections.push({ expr: { alias: item.name.text, expr: { property: field.path } } });
      continue;
    }
    const value = remapValue(scope, item.value, context);
    if (value === undefined) return undefined;
    // The element's ID is read as the virtual property $id, which renders as a decimal string like every ID.
    if (value.expr === "id") projections.push({ property: { source: "$id", alias: item.key.text } });
    else projections.push({ expr: { alias: item.key.text, expr: value.expr } });
  }
  const tree: WireStep = { project: all ? { input: input.tree, projections, all: true } : { input: input.tree, projections } };
  return { tree, type: { kind: "rows", one: input.type.one } };
}

/**
 * The value of a remapped field `key: value`. A bare name there is HelixDB's identifier remapping, resolved in this
 * order: a closure parameter (this closure's or one further out) is its element, rendered whole as a record; a
 * parameter, FOR binding or variable in scope is its value; otherwise the current element's field of that name
 * (`username: name`), a dotted name reading a path (`city: addr.city`). A name that is none of these is
 * unknown_variable at the name. Any other value is compiled as a projection's value.
 */
function remapValue(scope: CompilerScope, value: ExprAst, context: ElementContext): CompiledValue | undefined {
  if (value.kind !== "chain" || value.steps.length > 0 || !isBareName(value.start) || value.start.name.text === "_") {
    return compileValue(scope, value, context, "projection");
  }
  const { name } = value.start;
  const [head, ...path] = name.text.split(".");
  const closure = closureDepth(context, head);
  if (closure !== undefined) {
    if (path.length > 0) {
      scope.report("query_invalid", name.loc, `${head} is a closure's element; read its fields with ${head}::{${path.join(".")}}`);
      return undefined;
    }
    return { expr: { first: contextTree(closure.depth) }, type: ANY };
  }
  if (scope.lookup(head) !== undefined || isReservedValue(head)) return compileValue(scope, value, context, "projection");
  if (!hasField(scope, context.type, head)) {
    const fields = fieldsOf(scope, context.type.record, context.type.label);
    const known = fields === undefined ? "" : knownFields(fields);
    scope.report("unknown_variable", name.loc, `no parameter, variable or field of ${context.type.label ?? "the element"} named ${head}${known}`);
    return undefined;
  }
  return elementField(scope, context, name.text, name.loc);
}

/** Names a bare value reads without a binding: NONE, `ID` (the element's ID) and the math constants. */
function isReservedValue(name: string): boolean {
  return name === "NONE" || name === "ID" || CONSTANTS.has(name);
}

/** Whether `name` is a field `resolveField` reads on `type` (any name, when the type's fields are not known). */
function hasField(scope: CompilerScope, type: RecordsType, name: string): boolean {
  if (VIRTUAL_FIELDS.has(name)) return true;
  const fields = fieldsOf(scope, type.record, type.label);
  if (fields === undefined) return true;
  return fields.has(name) || (type.record === "vector" && VECTOR_FIELDS.has(name));
}
