/**
 * The schema checker's rules for vector and text indexes: the option lists of `VECTOR INDEX(..)`, `TEXT INDEX(..)`
 * and `V::Type(..)`, and which field types each index takes. Every problem is one schema_invalid diagnostic at the
 * option or modifier at fault, and the options still come back (defaults in place of the bad ones) so the checker
 * carries on.
 *
 * Invariants of what comes back: a vector `dimension` is an integer in 1..VECTOR_DIMENSIONS_MAX, `ef` one in
 * 1..VECTOR_EF_MAX, `metric` and
 * `analyzer` are among protocol/indexes.ts's lists, a text index's `tenant` is `tenant_id` (SPEC), and every tenant
 * named is reported unless it is a declared top-level field of the same type (checkTenants, once the fields are in).
 */
import { TEXT_ANALYZERS, VECTOR_EF_MAX, VECTOR_METRICS, type TextAnalyzer, type VectorMetric } from "../indexes.js";
import type { FieldDecl, FieldType, TextIndexOptions, VectorIndexOptions } from "../schema.js";
import type { IndexOptionAst, ModifierAst, OptionValueAst, SourceLocation } from "./ast.js";
import { fieldTypeToString } from "./coerce.js";
import type { Reporter } from "./field-rules.js";
import { unreachable } from "../errors.js";
import { VECTOR_DIMENSIONS_MAX } from "../limits.js";

/** The only tenant property a text index may use (SPEC, "Indexes"). */
export const TEXT_TENANT_FIELD = "tenant_id";

/** A tenant field an index option names, checked against the type's fields once they are all known. */
export interface TenantUse {
  readonly field: string;
  readonly loc: SourceLocation;
  readonly where: string;
}

const VECTOR_OPTIONS = ["dimension", "metric", "tenant", "ef"] as const;
const TEXT_OPTIONS = ["analyzer", "positions", "tenant"] as const;

/** The options of a vector index (a `VECTOR INDEX` field or a `V::` type); cosine when no metric is given. */
export function vectorIndexOptions(options: readonly IndexOptionAst[], where: string, report: Reporter, tenants: TenantUse[]): VectorIndexOptions {
  const given = distinctOptions(options, VECTOR_OPTIONS, where, report);
  const out: VectorIndexOptions = { metric: "cosine" };
  const dimension = given.get("dimension");
  if (dimension !== undefined) {
    const text = dimension.kind === "number" ? dimension.text : "";
    if (/^[0-9]+$/.test(text) && Number(text) >= 1 && Number(text) <= VECTOR_DIMENSIONS_MAX) out.dimension = Number(text);
    else report(dimension.loc, `${where}: dimension is an integer from 1 to ${VECTOR_DIMENSIONS_MAX}, not ${describe(dimension)}`);
  }
  const metric = given.get("metric");
  if (metric !== undefined) {
    const word = wordOf(metric);
    if (word !== undefined && (VECTOR_METRICS as readonly string[]).includes(word)) out.metric = word as VectorMetric;
    else report(metric.loc, `${where}: metric is one of ${VECTOR_METRICS.join(", ")}, not ${describe(metric)}`);
  }
  const ef = given.get("ef");
  if (ef !== undefined) {
    const text = ef.kind === "number" ? ef.text : "";
    if (/^[0-9]+$/.test(text) && Number(text) >= 1 && Number(text) <= VECTOR_EF_MAX) out.ef = Number(text);
    else report(ef.loc, `${where}: ef (the search beam width) is an integer from 1 to ${VECTOR_EF_MAX}, not ${describe(ef)}`);
  }
  const tenant = tenantOption(given.get("tenant"), where, report, tenants);
  if (tenant !== undefined) out.tenant = tenant;
  return out;
}

/** The options of a `TEXT INDEX`: analyzer `standard` and no positions unless given. */
export function textIndexOptions(options: readonly IndexOptionAst[], where: string, report: Reporter, tenants: TenantUse[]): TextIndexOptions {
  const given = distinctOptions(options, TEXT_OPTIONS, where, report);
  const out: TextIndexOptions = { analyzer: "standard", positions: false };
  const analyzer = given.get("analyzer");
  if (analyzer !== undefined) {
    const word = wordOf(analyzer);
    if (word !== undefined && (TEXT_ANALYZERS as readonly string[]).includes(word)) out.analyzer = word as TextAnalyzer;
    else report(analyzer.loc, `${where}: analyzer is one of ${TEXT_ANALYZERS.join(", ")}, not ${describe(analyzer)}`);
  }
  const positions = given.get("positions");
  if (positions !== undefined) {
    if (positions.kind === "boolean") out.positions = positions.value;
    else report(positions.loc, `${where}: positions is true or false, not ${describe(positions)}`);
  }
  const tenantValue = given.get("tenant");
  if (tenantValue !== undefined && wordOf(tenantValue) !== undefined && wordOf(tenantValue) !== TEXT_TENANT_FIELD) {
    report(tenantValue.loc, `${where}: a text index is partitioned by the property ${TEXT_TENANT_FIELD} only, not ${describe(tenantValue)}`);
    return out;
  }
  const tenant = tenantOption(tenantValue, where, report, tenants);
  if (tenant !== undefined) out.tenant = tenant;
  return out;
}

/** A vector index covers [F32], [F64] or [I64]; a text index String or [String]. */
export function checkIndexFieldType(modifier: ModifierAst, field: string, type: FieldType, report: Reporter): void {
  const element = type.kind === "array" && type.element.kind === "scalar" ? type.element.name : undefined;
  if (modifier.kind === "vector_index" && element !== "F32" && element !== "F64" && element !== "I64") {
    report(modifier.loc, `VECTOR INDEX on ${field}: a vector index covers [F32], [F64] or [I64] fields, not ${fieldTypeToString(type)}`);
  }
  // The secondary index encodes scalars only (node/indexes/index-encoding.ts): on an array or object it would hold nothing.
  if ((modifier.kind === "index" || modifier.kind === "unique") && type.kind !== "scalar") {
    const keyword = modifier.kind === "index" ? "INDEX" : "UNIQUE INDEX";
    report(modifier.loc, `${keyword} on ${field}: a secondary index covers scalar fields (String, Boolean, numbers, Date, ID), not ${fieldTypeToString(type)}; filter it with WHERE instead`);
  }
  const text = (type.kind === "scalar" && type.name === "String") || element === "String";
  if (modifier.kind === "text_index" && !text) {
    report(modifier.loc, `TEXT INDEX on ${field}: a text index covers String or [String] fields, not ${fieldTypeToString(type)}`);
  }
}

/** Every tenant named must be a declared top-level field of the type. */
export function checkTenants(tenants: readonly TenantUse[], fields: ReadonlyMap<string, FieldDecl>, report: Reporter): void {
  for (const use of tenants) {
    if (!fields.has(use.field)) report(use.loc, `${use.where}: the tenant field ${use.field} is not a declared field of this type`);
  }
}

function tenantOption(value: OptionValueAst | undefined, where: string, report: Reporter, tenants: TenantUse[]): string | undefined {
  if (value === undefined) return undefined;
  const word = wordOf(value);
  if (word === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(word)) {
    report(value.loc, `${where}: tenant names a field of the type, not ${describe(value)}`);
    return undefined;
  }
  tenants.push({ field: word, loc: value.loc, where });
  return word;
}

/** The options by name; unknown and repeated ones are reported and left out. */
function distinctOptions(options: readonly IndexOptionAst[], allowed: readonly string[], where: string, report: Reporter): Map<string, OptionValueAst> {
  const given = new Map<string, OptionValueAst>();
  for (const option of options) {
    const name = option.name.text;
    if (!allowed.includes(name)) report(option.name.loc, `${where}: unknown option ${name}; the options are ${allowed.join(", ")}`);
    else if (given.has(name)) report(option.name.loc, `${where}: option ${name} is given twice`);
    else given.set(name, option.value);
  }
  return given;
}

/** A bare identifier or a string literal: `metric: cosine` and `metric: "cosine"` mean the same. */
function wordOf(value: OptionValueAst): string | undefined {
  if (value.kind === "name") return value.text;
  return value.kind === "string" ? value.value : undefined;
}

function describe(value: OptionValueAst): string {
  switch (value.kind) {
    case "name":
      return value.text;
    case "string":
      return JSON.stringify(value.value);
    case "number":
      return value.text;
    case "boolean":
      return String(value.value);
    default:
      return unreachable(value, "option value");
  }
}
