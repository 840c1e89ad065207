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

/** One parsed `.hx` file: its schema declarations and QUERY definitions, in the order written. */
export interface SourceFileAst {
  readonly declarations: readonly DeclarationAst[];
}

export type DeclarationAst = NodeDeclAst | EdgeDeclAst | VectorDeclAst | QueryDeclAst | SchemaVersionAst | MigrationAst;

/** A node, edge or vector type declaration. */
export type TypeDeclAst = NodeDeclAst | EdgeDeclAst | VectorDeclAst;

/** `schema::N { .. }`: the types of version N of the schema. */
export interface SchemaVersionAst {
  readonly kind: "schema_version";
  readonly version: VersionAst;
  readonly declarations: readonly TypeDeclAst[];
  readonly loc: SourceLocation;
}

/** The N of `schema::N`, as written (the checker reads the number and its range). */
export interface VersionAst {
  readonly text: string;
  readonly loc: SourceLocation;
}

/** `MIGRATION schema::A => schema::B { items }`. */
export interface MigrationAst {
  readonly kind: "migration";
  readonly from: VersionAst;
  readonly to: VersionAst;
  readonly items: readonly MigrationItemAst[];
  readonly loc: SourceLocation;
}

/** `N::Old => _::{..}` (target null: the same name) or `N::Old => N::New {..}`; `properties`: the `{ Properties: {..} }` form. */
export interface MigrationItemAst {
  readonly source: TypeRefAst;
  readonly target: TypeRefAst | null;
  readonly properties: boolean;
  readonly fields: readonly MigrationFieldAst[];
  readonly loc: SourceLocation;
}

export interface TypeRefAst {
  readonly kind: "node" | "edge" | "vector";
  readonly name: NameAst;
  readonly loc: SourceLocation;
}

export type MigrationFieldAst =
  | { readonly kind: "spread"; readonly loc: SourceLocation }
  | { readonly kind: "set"; readonly name: NameAst; readonly value: MigrationValueAst };

export type MigrationValueAst =
  | { readonly kind: "literal"; readonly literal: LiteralAst }
  | { readonly kind: "field"; readonly name: NameAst; readonly cast?: TypeAst };

export interface NodeDeclAst {
  readonly kind: "node";
  readonly name: NameAst;
  readonly fields: readonly FieldAst[];
}

export interface VectorDeclAst {
  readonly kind: "vector";
  readonly name: NameAst;
  readonly fields: readonly FieldAst[];
  /** `V::Chunk(dimension: 384, ..)`: the options of the type's own vector index, when a list was written. */
  readonly options?: readonly IndexOptionAst[];
}

/** An edge body is a list of items so that the checker, not the parser, reports a missing or repeated From/To. */
export interface EdgeDeclAst {
  readonly kind: "edge";
  readonly name: NameAst;
  /** `E::Name UNIQUE {..}`: one edge of the type at most per (from, to) pair. */
  readonly unique: boolean;
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

export type ModifierAst =
  | { readonly kind: "index" | "unique" | "required"; readonly loc: SourceLocation }
  /** `VECTOR INDEX(..)` / `TEXT INDEX(..)`; `options` is empty when no list was written. */
  | { readonly kind: "vector_index" | "text_index"; readonly loc: SourceLocation; readonly options: readonly IndexOptionAst[] };

/** One `name: value` of an index option list; which names exist and what they take is the checker's business. */
export interface IndexOptionAst {
  readonly name: NameAst;
  readonly value: OptionValueAst;
}

/** An option value: a bare identifier (`cosine`, `org`) or a number, string or boolean literal. */
export type OptionValueAst =
  | { readonly kind: "name"; readonly text: string; readonly loc: SourceLocation }
  | Extract<LiteralAst, { kind: "number" | "string" | "boolean" }>;

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

// ---- QUERY definitions ------------------------------------------------------------------------------------------
//
// The query grammar is deliberately uniform: every source and every `::` step is a call `Name<Generic>(args)`
// whose generic and argument list are both optional (`N<User>`, `N<User>(id)`, `Out<Follows>`, `COUNT`,
// `WHERE(cond)`, `RANGE(0, 10)`, `ORDER<Desc>(_::{age})`, `ADD(a, b)`, `Embed(text)`, `_`, a variable `x`). The
// checker, not the parser, knows which names exist and what they take, so an unknown step or a wrong argument count
// is a diagnostic at its place with every other diagnostic, not a syntax error that hides the rest of the file.

/** `QUERY Name(p: Type, q?: Type) => statements RETURN items` */
export interface QueryDeclAst {
  readonly kind: "query";
  readonly name: NameAst;
  readonly params: readonly ParamAst[];
  readonly body: readonly StatementAst[];
  /** The RETURN items in order; empty when the query has no RETURN clause. */
  readonly returns: readonly ExprAst[];
  /** Where `RETURN` was written, when it was. */
  readonly returnLoc?: SourceLocation;
  /** `#[mcp]`, `#[model("name")]` written before QUERY, in order; absent when there are none. */
  readonly attributes?: readonly QueryAttributeAst[];
  readonly loc: SourceLocation;
}

/**
 * An attribute before a QUERY, `#[name]` or `#[name(args)]` (HelixDB's built-in macros); `args` is absent when no
 * parentheses were written. Which names exist and what they take is the checker's business (query-attributes.ts).
 */
export interface QueryAttributeAst {
  readonly name: NameAst;
  readonly args?: readonly OptionValueAst[];
  readonly loc: SourceLocation;
}

/** A declared parameter; `optional` for `q?: Type`. The type reuses the schema's type syntax. */
export interface ParamAst {
  readonly name: NameAst;
  readonly optional: boolean;
  readonly type: TypeAst;
}

export type StatementAst =
  /** `x <- expr` */
  | { readonly kind: "assign"; readonly name: NameAst; readonly value: ExprAst; readonly loc: SourceLocation }
  /** A bare expression (usually a mutation such as `AddE<Follows>::From(a)::To(b)`). */
  | { readonly kind: "expr"; readonly value: ExprAst; readonly loc: SourceLocation }
  /** `DROP expr` */
  | { readonly kind: "drop"; readonly target: ExprAst; readonly loc: SourceLocation }
  /** `FOR x IN expr { ... }` or `FOR {a, b} IN expr { ... }` */
  | {
      readonly kind: "for";
      readonly binding: ForBindingAst;
      readonly source: ExprAst;
      readonly body: readonly StatementAst[];
      readonly loc: SourceLocation;
    };

export type ForBindingAst =
  | { readonly kind: "name"; readonly name: NameAst }
  | { readonly kind: "destructure"; readonly names: readonly NameAst[]; readonly loc: SourceLocation };

/**
 * A call: a source or a step. `generic` is the `<...>` part (`N<User>`, `ORDER<Desc>`), `args` the parenthesised
 * list, absent when no parentheses were written (`COUNT`, `N<User>`) and empty for `()`.
 */
export interface CallAst {
  readonly name: NameAst;
  readonly generic?: NameAst;
  readonly args?: readonly ExprAst[];
  /** `name: expr` arguments after the positional ones (`RerankMMR(lambda: 0.7)`); absent when none was written. */
  readonly named?: readonly NamedArgumentAst[];
  readonly loc: SourceLocation;
}

/** A named argument `name: expr`; only the search and rerank calls take them. */
export interface NamedArgumentAst {
  readonly name: NameAst;
  readonly value: ExprAst;
}

/** One item of a projection `::{...}` or of an object literal `{...}`. */
export type ProjectionItemAst =
  /**
   * `name` alone: the property of that name (in an object literal: the variable or parameter of that name). In a
   * projection the name may be a dotted path into object fields, `addr.city`, kept as written in `name.text`.
   */
  | { readonly kind: "field"; readonly name: NameAst }
  /** `key: expr` */
  | { readonly kind: "assign"; readonly key: NameAst; readonly value: ExprAst }
  /** `..`: every property of the element, then the other items. */
  | { readonly kind: "spread"; readonly loc: SourceLocation };

export type StepAst =
  | { readonly kind: "call"; readonly call: CallAst }
  /** `::{a, b: expr, ..}`; with `exclude`, `::!{a, b}` (every property but these; items are all `field`). */
  | { readonly kind: "projection"; readonly items: readonly ProjectionItemAst[]; readonly exclude: boolean; readonly loc: SourceLocation }
  /** `::|x| { items }`: a projection whose items may name the current element as `x`. */
  | { readonly kind: "closure"; readonly param: NameAst; readonly items: readonly ProjectionItemAst[]; readonly loc: SourceLocation };

export type ExprAst =
  /** `start::step::step...`; a bare variable, parameter, `_` or function call is a chain without steps. */
  | { readonly kind: "chain"; readonly start: CallAst; readonly steps: readonly StepAst[]; readonly loc: SourceLocation }
  /** Number, string or boolean literal (`NOW` is a call named NOW). */
  | { readonly kind: "literal"; readonly literal: LiteralAst }
  /** `[e1, e2]` */
  | { readonly kind: "array"; readonly elements: readonly ExprAst[]; readonly loc: SourceLocation }
  /** `{key: expr, name}`: property blocks of AddN/AddE/UPDATE, index lookups `N<T>({field: v})`, RETURN objects. */
  | { readonly kind: "object"; readonly items: readonly ProjectionItemAst[]; readonly loc: SourceLocation }
  /** `!expr` (as in `!EXISTS(...)`) */
  | { readonly kind: "not"; readonly operand: ExprAst; readonly loc: SourceLocation };
