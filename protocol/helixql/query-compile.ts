/**
 * Compiles one checked-as-it-goes HelixQL QUERY into a CompiledQuery: its statements become the entries of one
 * operation-tree batch (an assignment `x <- ...` is the entry named x, a FOR loop a `for_each`), its RETURN clause
 * the tree's `returns` plus the shape of the response (query.ts). Problems are reported through `report` and the
 * compiler carries on, so one pass finds every problem of a query.
 */
import type { ErrorCode } from "../errors.js";
import type { Schema } from "../schema.js";
import type { WarningCode } from "../warnings.js";
import type { ExprAst, ParamAst, QueryDeclAst, SourceLocation, StatementAst } from "./ast.js";
import type { CompiledQuery, QueryOutput, QueryParameter, ReturnShape } from "./query.js";
import type { WireEntry, WireEntryBodies, WireRequest } from "../tree-wire.js";
import type { Binding, ChainAst, Compiled, CompilerScope, ElementContext } from "./query-scope.js";
import { checkQueryAttributes } from "./query-attributes.js";
import type { Report } from "./diagnostics.js";
import { compileChain } from "./query-steps.js";
import { describeStaticType, describeValueType, elementOf, fieldValue, literalToJson, type StaticType, type ValueType } from "./query-types.js";
import { compileExists, isBareName, isExistsCall, locOf } from "./query-values.js";
import type { FieldType } from "../schema.js";
import { unreachable } from "../errors.js";

/** Where the compiler's findings go: errors (the query does not load) and warnings (it loads; protocol/warnings.ts). */
export interface CompileSink {
  readonly report: Report;
  readonly warn: (code: WarningCode, loc: SourceLocation, message: string) => void;
}

/** Converts a parameter's written type; reports and answers undefined when it names no type. */
export type TypeConverter = (param: ParamAst) => FieldType | undefined;

/** A variable's static type, and the name the operation tree knows its current value by. */
interface Variable {
  readonly type: StaticType;
  readonly tree: string;
}

const UNKNOWN_RECORDS: StaticType = { kind: "records", record: "node", label: undefined, one: false };

/** Names that cannot be variables or parameters: they would shadow a source, a constant or `RETURN NONE`. */
const RESERVED_NAMES = new Set(["_", "N", "E", "V", "ID", "PI", "NONE"]);

export function compileQuery(decl: QueryDeclAst, file: string, schema: Schema, sink: CompileSink, convert: TypeConverter): CompiledQuery | undefined {
  return new QueryCompiler(schema, sink).compile(decl, file, convert);
}

class QueryCompiler implements CompilerScope {
  private readonly parameters = new Map<string, QueryParameter>();
  private readonly variables = new Map<string, Variable>();
  /** FOR loops, innermost last: their bindings, and the variables their bodies assign. */
  private readonly loops: { readonly bindings: Map<string, Binding>; readonly assigned: string[] }[] = [];
  /** Entries made for RETURN items that are traversals; they run after the body. */
  private readonly pendingHidden: WireEntry[] = [];
  private writes = false;
  private failed = false;
  /** `#[model("name")]`: the model every Embed of the query names; set before any statement compiles. */
  embeddingModel: string | undefined;
  private hidden = 0;

  constructor(
    readonly schema: Schema,
    private readonly sink: CompileSink,
  ) {}

  report(code: ErrorCode, loc: SourceLocation, message: string): void {
    this.failed = true;
    this.sink.report(code, loc, message);
  }

  warn(code: WarningCode, loc: SourceLocation, message: string): void {
    this.sink.warn(code, loc, message);
  }

  lookup(name: string): Binding | undefined {
    for (let i = this.loops.length - 1; i >= 0; i--) {
      const binding = this.loops[i].bindings.get(name);
      if (binding !== undefined) return binding;
    }
    const parameter = this.parameters.get(name);
    if (parameter !== undefined) return { kind: "param", type: fieldValue(parameter.type), optional: parameter.optional };
    const variable = this.variables.get(name);
    return variable === undefined ? undefined : { kind: "var", ...variable };
  }

  markWrite(): void {
    this.writes = true;
  }

  enclosing: ElementContext | undefined = undefined;

  chain(expr: ChainAst, context: ElementContext | undefined): Compiled | undefined {
    const saved = this.enclosing;
    this.enclosing = context;
    try {
      return compileChain(this, expr, context);
    } finally {
      this.enclosing = saved;
    }
  }

  compile(decl: QueryDeclAst, file: string, convert: TypeConverter): CompiledQuery | undefined {
    const attributes = checkQueryAttributes(decl, (code, loc, message) => this.report(code, loc, message));
    this.embeddingModel = attributes.embeddingModel;
    for (const param of decl.params) this.declareParameter(param, convert);
    const entries = this.statements(decl.body);
    const returned = this.returns(decl);
    if (this.failed || entries === undefined || returned === undefined) return undefined;
    entries.push(...this.pendingHidden);
    const requestType = this.writes ? "write" : "read";
    const batch = { entries, returns: returned.entries };
    const name = decl.name.text;
    const tree: WireRequest | undefined =
      entries.length === 0
        ? undefined
        : this.writes
          ? { request_type: "write", query_name: name, query: { write: batch } }
          : { request_type: "read", query_name: name, query: { read: batch } };
    return {
      name: decl.name.text,
      file,
      parameters: [...this.parameters.values()],
      requestType,
      tree,
      output: returned.output,
      ...(attributes.mcp ? { mcp: true as const } : {}),
      ...(attributes.embeddingModel === undefined ? {} : { embeddingModel: attributes.embeddingModel }),
    };
  }

  private declareParameter(param: ParamAst, convert: TypeConverter): void {
    const name = param.name.text;
    if (RESERVED_NAMES.has(name)) {
      this.report("query_invalid", param.name.loc, `${name} is a reserved name; call the parameter something else`);
      return;
    }
    if (this.parameters.has(name)) {
      this.report("query_invalid", param.name.loc, `parameter ${name} is declared twice`);
      return;
    }
    const type = convert(param);
    if (type === undefined) {
      this.failed = true;
      return;
    }
    this.parameters.set(name, { name, type, optional: param.optional });
  }

  private statements(body: readonly StatementAst[]): WireEntry[] | undefined {
    const entries: WireEntry[] = [];
    for (const statement of body) {
      const entry = this.statement(statement);
      if (entry !== undefined) entries.push(entry);
    }
    return entries;
  }

  private statement(statement: StatementAst): WireEntry | undefined {
    switch (statement.kind) {
      case "assign": {
        const name = statement.name.text;
        if (RESERVED_NAMES.has(name) || this.lookup(name) !== undefined) {
          this.report("query_invalid", statement.name.loc, `${name} is already defined; give the new value another name`);
          return undefined;
        }
        const compiled = this.traversal(statement.value);
        if (compiled === undefined) {
          // Defined anyway, as records of no known type, so that later uses do not echo the error.
          this.variables.set(name, { type: UNKNOWN_RECORDS, tree: name });
          return undefined;
        }
        const loop = this.loops.at(-1);
        if (loop === undefined) {
          this.variables.set(name, { type: compiled.type, tree: name });
          return { query: { name, root: compiled.tree } };
        }
        // In a FOR body the entry's name collects every iteration's result (for_each appends), while the body's
        // own uses must see only this iteration's value, as HelixDB binds it: an `as` step binds that value to a
        // second name, which no HelixQL variable can take (`$` is not allowed in names).
        const iteration = `${name}$iteration`;
        loop.assigned.push(name);
        this.variables.set(name, { type: compiled.type, tree: iteration });
        return { query: { name, root: { as: { input: compiled.tree, name: iteration } } } };
      }
      case "expr": {
        const compiled = this.traversal(statement.value);
        return compiled === undefined ? undefined : { query: { root: compiled.tree } };
      }
      case "drop": {
        const compiled = this.traversal(statement.target);
        if (compiled === undefined) return undefined;
        if (compiled.type.kind !== "records") {
          this.report("query_invalid", statement.loc, `DROP removes records; this traversal yields ${describeStaticType(compiled.type)}`);
          return undefined;
        }
        this.markWrite();
        return { query: { root: { drop: { input: compiled.tree } } } };
      }
      case "for":
        return this.loop(statement);
      default:
        return unreachable(statement, "statement");
    }
  }

  /**
   * A statement's expression must be a traversal (a chain) or `!EXISTS(...)` (a boolean, as `EXISTS(...)` is); a lone
   * literal or object does nothing.
   */
  private traversal(expr: ExprAst): Compiled | undefined {
    if (expr.kind === "not" && isExistsCall(expr.operand)) return compileExists(this, expr.operand.start, true, undefined);
    if (expr.kind !== "chain") {
      this.report("query_invalid", locOf(expr), "a statement is a traversal or a mutation, such as N<User>(id) or AddN<User>({..})");
      return undefined;
    }
    return this.chain(expr, undefined);
  }

  /**
   * FOR over an array parameter (or an array an outer FOR bound) binds each element as a parameter; FOR over a
   * variable holding records binds each record in turn as a one-record variable. A loop name may shadow a parameter
   * or an outer loop's name (as HelixDB's scopes do), not a variable.
   */
  private loop(statement: Extract<StatementAst, { kind: "for" }>): WireEntry | undefined {
    const source = statement.source;
    const name = source.kind === "chain" && source.steps.length === 0 && isBareName(source.start) ? source.start.name.text : undefined;
    const binding = name === undefined || name.includes(".") ? undefined : this.lookup(name);
    if (name === undefined || binding === undefined || (binding.kind === "var" && binding.type.kind !== "records")) {
      this.report("query_invalid", locOf(source), "FOR loops over an array parameter, an array bound by an outer FOR, or a variable holding records");
      return undefined;
    }
    const names = new Map<string, Binding>();
    const bind = (text: string, loc: SourceLocation, bound: Binding): void => {
      if (RESERVED_NAMES.has(text) || this.variables.has(text) || names.has(text)) {
        this.report("query_invalid", loc, `${text} is already defined; name the loop variable something else`);
      } else names.set(text, bound);
    };
    let over: Omit<WireEntryBodies["for_each"], "body">;
    if (binding.kind === "var") {
      if (binding.type.kind !== "records") return undefined; // refused above
      if (statement.binding.kind !== "name") {
        this.report("query_invalid", statement.binding.loc, `FOR {..} takes apart objects; ${name} holds records: name each one (FOR r IN ${name}) and read r::{field}`);
        return undefined;
      }
      const loopName = statement.binding.name.text;
      bind(loopName, statement.binding.name.loc, { kind: "var", type: { ...binding.type, one: true }, tree: loopName });
      over = { var: binding.tree, as: loopName };
    } else {
      const element = elementOf(binding.type);
      if (element === undefined) {
        this.report("invalid_type", locOf(source), `FOR loops over an array; ${name} is ${describeValueType(binding.type)}`);
        return undefined;
      }
      if (statement.binding.kind === "name") bind(statement.binding.name.text, statement.binding.name.loc, { kind: "param", type: element });
      else {
        const fields = element.t === "field" && element.type.kind === "object" ? element.type.fields : undefined;
        if (fields === undefined && element.t !== "any") {
          this.report("invalid_type", statement.binding.loc, `FOR {..} takes apart objects; ${name} holds ${describeValueType(element)}`);
          return undefined;
        }
        for (const field of statement.binding.names) {
          const decl = fields?.get(field.text);
          // Bound even when it is not a field, so that its uses in the body do not echo the error.
          if (fields !== undefined && decl === undefined) this.report("invalid_field", field.loc, `the elements of ${name} have no field ${field.text}`);
          bind(field.text, field.loc, { kind: "param", type: decl === undefined ? { t: "any" } : fieldValue(decl.type) });
        }
      }
      over = statement.binding.kind === "name" ? { param: name, as: statement.binding.name.text } : { param: name };
    }
    const loop = { bindings: names, assigned: [] as string[] };
    this.loops.push(loop);
    const body = this.statements(statement.body);
    this.loops.pop();
    // After the loop, a variable of its body holds every value it took: one result per iteration.
    for (const assigned of loop.assigned) {
      const variable = this.variables.get(assigned);
      if (variable !== undefined) this.variables.set(assigned, { type: many(variable.type), tree: assigned });
    }
    if (body === undefined) return undefined;
    return { for_each: { ...over, body } };
  }

  private returns(decl: QueryDeclAst): { entries: string[]; output: QueryOutput } | undefined {
    const entries: string[] = [];
    const items = decl.returns;
    // `RETURN NONE` answers what a query without RETURN answers: HelixDB's handler for it serialises `()`, null.
    const none = items.find(isNone);
    if (none !== undefined && items.length > 1) {
      this.report("query_invalid", locOf(none), "RETURN NONE returns nothing; it cannot be listed with other values");
      return undefined;
    }
    if (items.length === 0 || none !== undefined) return { entries, output: { kind: "value", shape: { kind: "literal", value: null } } };
    // Keyed by variable name: `RETURN users, posts::{title}`. Anything else is returned alone, as the whole body.
    const named = items.every((item) => item.kind === "chain" && isBareName(item.start) && this.lookup(item.start.name.text)?.kind !== "param");
    if (items.length === 1 && !named) {
      const shape = this.returnShape(items[0], entries);
      return shape === undefined ? undefined : { entries, output: { kind: "value", shape } };
    }
    if (!named) {
      this.report("query_invalid", decl.returnLoc ?? decl.loc, "RETURN lists variables, or returns one literal, object or array; wrap mixed values in an object {name: value}");
      return undefined;
    }
    const fields: [string, ReturnShape][] = [];
    const keys = new Set<string>();
    for (const item of items) {
      const key = (item as ChainAst).start.name.text;
      if (keys.has(key)) {
        this.report("query_invalid", locOf(item), `${key} is returned twice; return it once or wrap the returns in an object`);
        continue;
      }
      keys.add(key);
      const shape = this.returnShape(item, entries);
      if (shape !== undefined) fields.push([key, shape]);
    }
    return { entries, output: { kind: "keyed", fields } };
  }

  private returnShape(item: ExprAst, entries: string[]): ReturnShape | undefined {
    switch (item.kind) {
      case "literal":
        return { kind: "literal", value: literalToJson(item.literal) };
      case "array": {
        const elements = item.elements.map((element) => this.returnShape(element, entries));
        return elements.every((element) => element !== undefined) ? { kind: "array", elements: elements as ReturnShape[] } : undefined;
      }
      case "object": {
        const fields: [string, ReturnShape][] = [];
        const keys = new Set<string>();
        for (const field of item.items) {
          if (field.kind === "spread") {
            this.report("query_invalid", item.loc, ".. is only allowed in projections");
            return undefined;
          }
          const key = field.kind === "field" ? field.name : field.key;
          if (keys.has(key.text)) {
            this.report("query_invalid", key.loc, `${key.text} is given twice in this object; give each key once`);
            return undefined;
          }
          keys.add(key.text);
          const value: ExprAst = field.kind === "field" ? { kind: "chain", start: { name: field.name, loc: field.name.loc }, steps: [], loc: field.name.loc } : field.value;
          const shape = this.returnShape(value, entries);
          if (shape === undefined) return undefined;
          fields.push([key.text, shape]);
        }
        return { kind: "object", fields };
      }
      case "not":
        if (isExistsCall(item.operand)) {
          const compiled = compileExists(this, item.operand.start, true, undefined);
          return compiled === undefined ? undefined : this.hiddenEntry(compiled, entries);
        }
        this.report("query_invalid", item.loc, "RETURN takes variables, traversals and literals, not conditions");
        return undefined;
      case "chain":
        return this.returnChain(item, entries);
      default:
        return unreachable(item, "expression");
    }
  }

  /** A returned variable is its own entry; any other traversal becomes a hidden entry (names starting with `$`). */
  private returnChain(item: ChainAst, entries: string[]): ReturnShape | undefined {
    if (item.steps.length === 0 && isBareName(item.start)) {
      const name = item.start.name.text;
      const binding = this.lookup(name);
      if (binding?.kind === "var") {
        if (!entries.includes(name)) entries.push(name);
        return { kind: "entry", entry: name, cardinality: cardinality(binding.type) };
      }
      if (binding?.kind === "param") {
        this.report("query_invalid", item.loc, `${name} is a parameter; RETURN returns variables and literals`);
        return undefined;
      }
    }
    const compiled = this.chain(item, undefined);
    return compiled === undefined ? undefined : this.hiddenEntry(compiled, entries);
  }

  /** A returned traversal that is not a variable: an entry of its own, run after the body. */
  private hiddenEntry(compiled: Compiled, entries: string[]): ReturnShape {
    const entry = `$return${this.hidden++}`;
    this.pendingHidden.push({ query: { name: entry, root: compiled.tree } });
    entries.push(entry);
    return { kind: "entry", entry, cardinality: cardinality(compiled.type) };
  }

}

/** `NONE` written as a RETURN item. */
function isNone(item: ExprAst): boolean {
  return item.kind === "chain" && item.steps.length === 0 && isBareName(item.start) && item.start.name.text === "NONE";
}

function many(type: StaticType): StaticType {
  return type.kind === "values" ? { ...type, shape: "many" } : { ...type, one: false };
}

function cardinality(type: StaticType): "one" | "many" | "scalar" {
  if (type.kind === "values") return type.shape;
  return type.one ? "one" : "many";
}
