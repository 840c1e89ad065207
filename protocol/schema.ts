/**
 * The schema of a Silk database: the node, edge and vector types declared in the project's HelixQL (`.hx`) files,
 * with their fields' types, DEFAULTs, REQUIRED markers and indexes. This module holds the types every layer
 * shares and is the one import for schema work; the machinery lives in protocol/helixql/:
 *
 * - parseSchema / checkSchema: `.hx` text to a Schema, with every diagnostic (helixql/schema-check.ts);
 * - coerceValue / prepareProperties: input values to stored Values, run on every write (helixql/coerce.ts);
 * - schemaToJson / schemaFromJson: the stored and introspection form (helixql/schema-json.ts).
 */

import type { ErrorCode } from "./errors.js";
import type { TextAnalyzer, VectorMetric } from "./indexes.js";
import type { Value } from "./values.js";
import type { WarningCode } from "./warnings.js";

export type ScalarTypeName =
  | "String"
  | "Boolean"
  | "F32"
  | "F64"
  | "I8"
  | "I16"
  | "I32"
  | "I64"
  | "U8"
  | "U16"
  | "U32"
  | "U64"
  | "U128"
  | "Date"
  | "ID";

export type FieldType =
  | { kind: "scalar"; name: ScalarTypeName }
  | { kind: "array"; element: FieldType }
  | { kind: "object"; fields: ReadonlyMap<string, FieldDecl> };

/**
 * One declared field. `required` means the field must be present when a record is created (a DEFAULT satisfies
 * it) and cannot be removed by an update. DEFAULT and the index modifiers are only allowed on top-level fields, and
 * a field has at most one of `index`, `vectorIndex` and `textIndex`.
 */
export interface FieldDecl {
  name: string;
  type: FieldType;
  required: boolean;
  default?: { kind: "value"; value: Value } | { kind: "now" };
  index?: "index" | "unique";
  /** `VECTOR INDEX(..)`: only on [F32], [F64] or [I64] fields. */
  vectorIndex?: VectorIndexOptions;
  /** `TEXT INDEX(..)`: only on String or [String] fields. */
  textIndex?: TextIndexOptions;
}

/** A vector index's options as declared; `tenant` names a declared top-level field of the same type. */
export interface VectorIndexOptions {
  metric: VectorMetric;
  /** Absent: the first vector indexed fixes it. */
  dimension?: number;
  tenant?: string;
  /** Its searches' beam width, 1..VECTOR_EF_MAX (protocol/indexes.ts); absent: max(k, 64). */
  ef?: number;
}

/** A text index's options as declared; `tenant` can only be `tenant_id` (SPEC), a declared field of the type. */
export interface TextIndexOptions {
  analyzer: TextAnalyzer;
  positions: boolean;
  tenant?: string;
  /**
   * Not declared: implied by a `SearchBM25<T>` on a type without a TEXT INDEX (warning `implied_text_index`). Such a
   * field keeps the writes it took before (a null removes it, as for any field) instead of a TEXT INDEX's text-only rule.
   */
  implied?: true;
}

export interface NodeTypeDecl {
  kind: "node";
  name: string;
  fields: ReadonlyMap<string, FieldDecl>;
}

/**
 * `from` and `to` name a declared node type, or a vector type (HelixQL lets edges end at vectors). `unique`
 * (`E::Follows UNIQUE {..}`): at most one edge of this type from one record to another (a directed pair: a to b and b
 * to a are two pairs); a write that would make a second is `unique_violation` (node/exec/unique-edges.ts).
 */
export interface EdgeTypeDecl {
  kind: "edge";
  name: string;
  from: string;
  to: string;
  unique: boolean;
  fields: ReadonlyMap<string, FieldDecl>;
}

/** Every `V::` type has a vector index on its own vector (VECTOR_FIELD); `index` is its options, cosine by default. */
export interface VectorTypeDecl {
  kind: "vector";
  name: string;
  fields: ReadonlyMap<string, FieldDecl>;
  index: VectorIndexOptions;
}

/** Type names are unique within a kind; maps iterate in declaration order. */
export interface Schema {
  nodes: ReadonlyMap<string, NodeTypeDecl>;
  edges: ReadonlyMap<string, EdgeTypeDecl>;
  vectors: ReadonlyMap<string, VectorTypeDecl>;
}

/** One `.hx` file: its name as diagnostics should show it, and its text. */
export interface SchemaSource {
  file: string;
  text: string;
}

/** One problem found in schema text, at a 1-based line and column. */
export interface Diagnostic {
  code: ErrorCode;
  file: string;
  line: number;
  column: number;
  message: string;
}

/**
 * A construct HelixDB accepts that Silk loads in its own way (protocol/warnings.ts), at a 1-based line and column.
 * `severity` tells it apart from a Diagnostic where both are listed together.
 */
export interface Warning {
  severity: "warning";
  code: WarningCode;
  file: string;
  line: number;
  column: number;
  message: string;
}

export function emptySchema(): Schema {
  return { nodes: new Map(), edges: new Map(), vectors: new Map() };
}

export { SCALAR_TYPE_NAMES, coerceValue, fieldTypeToString, isScalarTypeName, prepareProperties } from "./helixql/coerce.js";
export { formatDiagnostic, formatDiagnostics } from "./helixql/diagnostics.js";
export { checkSchema, parseSchema } from "./helixql/schema-check.js";
export { schemaFromJson, schemaToJson } from "./helixql/schema-json.js";
