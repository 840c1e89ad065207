/**
 * Decoders of HelixDB v3's expressions that Silk computes without a record read: `neg` (numeric negation), `case`
 * (the first branch whose predicate holds), `timestamp` (the current time in epoch milliseconds) and `date_time_now`
 * (the current time as a date). Field names follow HelixDB's serde names (crates/ast/src/expr.rs `Expr::Neg { expr }`,
 * `Expr::Case { when_then, else_expr }`, the unit variants `Expr::Timestamp` and `Expr::DateTimeNow`); see
 * docs/OPERATION_TREE.md, "Values".
 *
 * The decoders of expressions and predicates are passed in, so this module does not import tree.ts (which imports
 * it).
 */
import type { CaseBranch, Expr, Predicate } from "./tree.js";
import { allowOnly, arrayAt, fault, objectAt, type Json } from "./tree-json.js";
import { WIRE_EXPR_FIELDS, WIRE_FIELDS } from "./tree-wire.js";

export interface ComputedDecoders {
  expr(value: Json, path: string, depth: number): Expr;
  predicate(value: Json, path: string, depth: number): Predicate;
}

export const COMPUTED_EXPR_TAGS: ReadonlySet<string> = new Set(["neg", "case", "timestamp", "date_time_now"]);

/**
 * `"timestamp"` and `"date_time_now"` (unit variants), `{"neg": {"expr": e}}` and `{"case": {"when_then": [{"when": predicate, "then": e},
 * ..], "else_expr": e?}}`.
 */
export function decodeComputedExpr(tag: string, body: Json, at: string, depth: number, decoders: ComputedDecoders): Expr {
  switch (tag) {
    case "timestamp":
    case "date_time_now":
      if (body !== null) throw fault(at, `${tag} takes no arguments: write "${tag}"`);
      return { kind: tag };
    case "neg": {
      const object = objectAt(body, at);
      allowOnly(object, WIRE_EXPR_FIELDS.neg, at);
      return { kind: "neg", expr: decoders.expr(object.expr, `${at}.expr`, depth + 1) };
    }
    case "case": {
      const object = objectAt(body, at);
      allowOnly(object, WIRE_EXPR_FIELDS.case, at);
      const branches = arrayAt(object.when_then, `${at}.when_then`).map((item, i): CaseBranch => {
        const where = `${at}.when_then[${i}]`;
        const branch = objectAt(item, where);
        allowOnly(branch, WIRE_FIELDS.case_branch, where);
        return { when: decoders.predicate(branch.when, `${where}.when`, depth + 1), then: decoders.expr(branch.then, `${where}.then`, depth + 1) };
      });
      const otherwise = object.else_expr === undefined || object.else_expr === null ? undefined : decoders.expr(object.else_expr, `${at}.else_expr`, depth + 1);
      return { kind: "case", branches, ...(otherwise === undefined ? {} : { otherwise }) };
    }
    default:
      throw fault(at, `${tag} is not a computed expression`);
  }
}
