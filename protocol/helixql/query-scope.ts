/**
 * What the parts of the query compiler share: the scope of names (declared parameters, FOR bindings, variables),
 * the current element `_` inside a WHERE, projection or closure, the diagnostics sink, and the chain compiler that
 * sub-traversals recurse into. query-compile.ts implements it; query-steps.ts and query-values.ts use it.
 */
import type { ErrorCode } from "../errors.js";
import type { Schema } from "../schema.js";
import type { WireCompareOp, WireStep } from "../tree-wire.js";
import type { WarningCode } from "../warnings.js";
import type { ExprAst, SourceLocation } from "./ast.js";
import type { StaticType, ValueType } from "./query-types.js";

/** A compiled traversal: its tree step (the wire JSON of protocol/tree-wire.ts) and what it yields. */
export interface Compiled {
  readonly tree: WireStep;
  readonly type: StaticType;
}

export type RecordsType = Extract<StaticType, { kind: "records" }>;

/** The current element `_` (and the closure parameter naming it, in `::|x| {...}`). */
export interface ElementContext {
  readonly type: RecordsType;
  readonly alias?: string;
  /**
   * The current element of the traversal whose step (WHERE, projection, closure...) made this one: a closure
   * parameter further out is found here, one level per link, and read as the tree's `{"context": {"depth": n}}`.
   */
  readonly outer?: ElementContext;
}

/**
 * A name in scope: a tree parameter (declared, or bound by FOR) or a variable (an earlier entry). A variable's
 * `tree` is the name to reference it by in the tree: its own, except inside the FOR body that assigns it, where it
 * names this iteration's value only.
 */
export type Binding =
  | { readonly kind: "param"; readonly type: ValueType; readonly optional?: boolean }
  | { readonly kind: "var"; readonly type: StaticType; readonly tree: string };

export type ChainAst = Extract<ExprAst, { kind: "chain" }>;

export interface CompilerScope {
  readonly schema: Schema;
  report(code: ErrorCode, loc: SourceLocation, message: string): void;
  /** A construct HelixDB accepts that Silk loads its own way (protocol/warnings.ts); the query still compiles. */
  warn(code: WarningCode, loc: SourceLocation, message: string): void;
  lookup(name: string): Binding | undefined;
  /** Records that the query writes (it then runs as a write batch). */
  markWrite(): void;
  /** The embedding model the query's `#[model("name")]` names, for its Embed calls; undefined: the provider's own. */
  readonly embeddingModel: string | undefined;
  /** Compiles a chain (a traversal) with `_` bound to `context` when given. */
  chain(expr: ChainAst, context: ElementContext | undefined): Compiled | undefined;
  /** The context the chain being compiled runs in (undefined at the top of a statement): the outer of its steps' contexts. */
  readonly enclosing: ElementContext | undefined;
}

/** The context of a step's current element (`type`, named `alias` in a closure), inside the chain being compiled. */
export function elementContext(scope: CompilerScope, type: RecordsType, alias?: string): ElementContext {
  const outer = scope.enclosing;
  return { type, ...(alias === undefined ? {} : { alias }), ...(outer === undefined ? {} : { outer }) };
}

/**
 * The closure parameter `name` as seen from `context`: 0 when it names the current element (as `_` does), n when it
 * names the element n levels out; undefined when no closure in scope is named so.
 */
export function closureDepth(context: ElementContext | undefined, name: string): { depth: number; context: ElementContext } | undefined {
  let depth = 0;
  for (let at = context; at !== undefined; at = at.outer, depth++) {
    if (at.alias === name || (depth === 0 && name === "_")) return { depth, context: at };
  }
  return undefined;
}

/** The step names that compare the value before them with their argument (conditions only). */
export const COMPARISONS: ReadonlyMap<string, WireCompareOp | "contains" | "is_in"> = new Map<string, WireCompareOp | "contains" | "is_in">([
  ["EQ", "eq"],
  ["NEQ", "neq"],
  ["GT", "gt"],
  ["GTE", "gte"],
  ["LT", "lt"],
  ["LTE", "lte"],
  ["CONTAINS", "contains"],
  ["IS_IN", "is_in"],
]);

/** The tree's source for the current element `depth` sub-traversals out (0: this one's). */
export function contextTree(depth: number): WireStep {
  return depth === 0 ? "context" : { context: { depth } };
}
