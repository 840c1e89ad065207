/**
 * The syntax tree that the HelixQL grammar (helixql.peggy) produces: what was written, where, and nothing more.
 * Names are not resolved and types are not checked here; the checker (schema-check.ts) turns this tree into a
 * Schema and reports every inconsistency with the locations kept on these nodes.
 *
 * Every node that a diagnostic may point at carries a `loc`: the 1-based line and column and the 0-based offset
 * of its first character in the file.
 */

export interface SourceLocation {
  readonly line: number;
  readonly column: number;
  readonly offset: number;
}

/** A name as written, with where it was written. */
export interface NameAst {
  readonly text: string;
  readonly loc: SourceLocation;
}

/** One parsed `.hx` file: its declarations in order. QUERY definitions will join this union. */
export interface SourceFileAst {
  readonly declarations: readonly DeclarationAst[];
}

export type DeclarationAst = NodeDeclAst | EdgeDeclAst | VectorDeclAst;

export interface NodeDeclAst {
  readonly kind: "node";
  readonly name: NameAst;
  readonly fields: readonly FieldAst[];
}

export interface VectorDeclAst {
  readonly kind: "vector";
  readonly name: NameAst;
  readonly fields: readonly FieldAst[];
}

/** An edge body is a list of items so that the checker, not the parser, reports a missing or repeated From/To. */
export interface EdgeDeclAst {
  readonly kind: "edge";
  readonly name: NameAst;
  readonly items: readonly EdgeItemAst[];
}

export type EdgeItemAst =
  | { readonly kind: "from"; readonly loc: SourceLocation; readonly target: NameAst }
  | { readonly kind: "to"; readonly loc: SourceLocation; readonly target: NameAst }
  | { readonly kind: "properties"; readonly loc: SourceLocation; readonly fields: readonly FieldAst[] };

export interface FieldAst {
  /** The name may start with `$` here only so that the checker can say "reserved" instead of a syntax error. */
  readonly name: NameAst;
  readonly modifiers: readonly ModifierAst[];
  readonly type: TypeAst;
  readonly default?: LiteralAst;
}

export interface ModifierAst {
  readonly kind: "index" | "unique" | "required";
  readonly loc: SourceLocation;
}

export type TypeAst =
  | { readonly kind: "named"; readonly name: string; readonly loc: SourceLocation }
  | { readonly kind: "array"; readonly element: TypeAst; readonly loc: SourceLocation }
  | { readonly kind: "object"; readonly fields: readonly FieldAst[]; readonly loc: SourceLocation };

/** Number literals keep their text so that integers beyond 2^53 (U64, U128 defaults) are not rounded. */
export type LiteralAst =
  | { readonly kind: "number"; readonly text: string; readonly loc: SourceLocation }
  | { readonly kind: "string"; readonly value: string; readonly loc: SourceLocation }
  | { readonly kind: "boolean"; readonly value: boolean; readonly loc: SourceLocation }
  | { readonly kind: "now"; readonly loc: SourceLocation }
  | { readonly kind: "array"; readonly elements: readonly LiteralAst[]; readonly loc: SourceLocation };
