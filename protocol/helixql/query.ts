/**
 * A checked HelixQL QUERY, compiled: the operation tree it runs (protocol/tree.ts, the one plan format), its
 * declared parameters (checked and coerced on every call before anything runs), and how its RETURN clause turns
 * the tree's named results into the response body (`QueryOutput`, which output.ts renders). The checker (query-check.ts) makes these; the embedded
 * runtime's `db.query(name, params)` and the server's `POST /<QueryName>` routes run them.
 */

import { SilkError, unreachable } from "../errors.js";
import type { FieldType } from "../schema.js";
import { coerceValue, fieldTypeToString } from "./coerce.js";
import type { WireRequest } from "../tree-wire.js";

export interface QueryParameter {
  readonly name: string;
  readonly type: FieldType;
  readonly optional: boolean;
}

/**
 * How one RETURN item is built from the tree's results. `entry` names a returned entry of the tree; `one` takes
 * its first element (or null when it is empty): `N<User>(id)`, `AddN`, `FIRST` and unique index lookups return one
 * record, the other traversals a list.
 */
export type ReturnShape =
  | { readonly kind: "entry"; readonly entry: string; readonly cardinality: "one" | "many" | "scalar" }
  | { readonly kind: "literal"; readonly value: unknown }
  | { readonly kind: "object"; readonly fields: readonly (readonly [string, ReturnShape])[] }
  | { readonly kind: "array"; readonly elements: readonly ReturnShape[] };

/**
 * The response body: `keyed` is the usual `{"user": ..., "posts": ...}` keyed by the returned variables' names;
 * `value` is a single RETURN of a literal, object or array, which is the whole body (`RETURN "ok"` answers `"ok"`).
 */
export type QueryOutput =
  | { readonly kind: "keyed"; readonly fields: readonly (readonly [string, ReturnShape])[] }
  | { readonly kind: "value"; readonly shape: ReturnShape };

export interface CompiledQuery {
  readonly name: string;
  /** The file that defines it, as diagnostics name it. */
  readonly file: string;
  readonly parameters: readonly QueryParameter[];
  readonly requestType: "read" | "write";
  /**
   * The `/v2/query` request body this query runs, without `parameters` (each call supplies them); undefined when the
   * query has no statements (`QUERY Hello() => RETURN "hello"`): there is nothing to run, only literals to return.
   */
  readonly tree: WireRequest | undefined;
  readonly output: QueryOutput;
  /** `#[mcp]`: the server offers it as a Model Context Protocol tool (gateway/mcp.ts). */
  readonly mcp?: true;
  /** The `//` lines just above the QUERY (query-attributes.ts); an MCP tool's description. */
  readonly description?: string;
  /** `#[model("name")]`: the embedding model its Embed calls name (already in the tree; shown by introspection). */
  readonly embeddingModel?: string;
}

/** The introspection form of a query (GET /introspect). */
export function queryToJson(query: CompiledQuery): Record<string, unknown> {
  return {
    name: query.name,
    parameters: query.parameters.map((p) => ({ name: p.name, type: fieldTypeToString(p.type), optional: p.optional })),
    returns: query.output.kind === "keyed" ? query.output.fields.map(([name]) => name) : [],
    request_type: query.requestType,
    ...(query.description === undefined ? {} : { description: query.description }),
    ...(query.mcp === true ? { mcp: true } : {}),
    ...(query.embeddingModel === undefined ? {} : { embedding_model: query.embeddingModel }),
  };
}

/**
 * Checks a call's parameters against the declaration: every declared, non-optional parameter present, no
 * undeclared one, each value of its type (IDs as decimal strings). Returns the coerced values as the tree expects
 * them (IDs as decimal strings, dates as ISO strings; JSON-safe). Errors: missing_parameter, unknown_parameter,
 * invalid_type / invalid_id / invalid_value from coercion, all 400.
 */
export function bindParameters(query: CompiledQuery, supplied: unknown): Record<string, unknown> {
  if (typeof supplied !== "object" || supplied === null || Array.isArray(supplied)) {
    throw new SilkError("invalid_type", `${query.name} takes its parameters as a JSON object`);
  }
  const given = supplied as Record<string, unknown>;
  const declared = declaredParameters(query);
  for (const name in given) {
    if (Object.hasOwn(given, name) && !declared.has(name)) throw new SilkError("unknown_parameter", `${query.name} has no parameter ${JSON.stringify(name)}`);
  }
  const bound: Record<string, unknown> = {};
  for (const [name, { parameter, where }] of declared) {
    const value = given[name];
    if (value === undefined || value === null) {
      if (!parameter.optional) {
        throw new SilkError("missing_parameter", `${query.name} needs parameter ${parameter.name}: ${fieldTypeToString(parameter.type)}`);
      }
      continue;
    }
    rejectIntegerText(parameter.type, value, where);
    bound[name] = toTreeParameter(coerceValue(parameter.type, value, where));
  }
  return bound;
}

/**
 * Integer types whose every value is a JSON number without rounding. Their parameters take numbers only, as
 * HelixDB's typed parameters do: the string "3" is `invalid_type`. The 64- and 128-bit types keep taking decimal
 * strings, since a JSON number beyond 2^53 may already have been rounded by the time it arrives.
 */
const NUMBER_ONLY_INTEGERS: ReadonlySet<string> = new Set(["I8", "I16", "I32", "U8", "U16", "U32"]);

/** Throws invalid_type for a string where the type (or an element or field of it) is a number-only integer. */
function rejectIntegerText(type: FieldType, value: unknown, where: string): void {
  switch (type.kind) {
    case "scalar":
      if (typeof value === "string" && NUMBER_ONLY_INTEGERS.has(type.name)) {
        throw new SilkError("invalid_type", `${where}: expected ${type.name}, a JSON number, got the string ${JSON.stringify(value.slice(0, 40))}; send the number itself`);
      }
      return;
    case "array":
      if (Array.isArray(value) && holdsNumberOnlyInteger(type.element)) value.forEach((item, i) => rejectIntegerText(type.element, item, `${where}[${i}]`));
      return;
    case "object":
      if (typeof value !== "object" || value === null) return;
      for (const [key, field] of type.fields) {
        if (Object.hasOwn(value, key)) rejectIntegerText(field.type, (value as Record<string, unknown>)[key], `${where}.${key}`);
      }
      return;
    default:
      return unreachable(type, "field type");
  }
}

/** Whether a type holds a number-only integer anywhere, so that a long vector of floats is not walked for nothing. */
function holdsNumberOnlyInteger(type: FieldType): boolean {
  switch (type.kind) {
    case "scalar":
      return NUMBER_ONLY_INTEGERS.has(type.name);
    case "array":
      return holdsNumberOnlyInteger(type.element);
    case "object":
      return [...type.fields.values()].some((field) => holdsNumberOnlyInteger(field.type));
    default:
      return unreachable(type, "field type");
  }
}

/** A query's parameters by name, each with the name its errors give it; made once per query, not once per call. */
const declaredOf = new WeakMap<CompiledQuery, ReadonlyMap<string, { readonly parameter: QueryParameter; readonly where: string }>>();

function declaredParameters(query: CompiledQuery): ReadonlyMap<string, { readonly parameter: QueryParameter; readonly where: string }> {
  let declared = declaredOf.get(query);
  if (declared === undefined) {
    declared = new Map(query.parameters.map((parameter) => [parameter.name, { parameter, where: `${query.name}.${parameter.name}` }]));
    declaredOf.set(query, declared);
  }
  return declared;
}

/**
 * Whether every element is a number, string or boolean, which the tree takes as they are: a vector parameter is
 * then passed on without a call per component (coercion already copied the array).
 */
function allPlain(values: readonly unknown[]): boolean {
  for (let i = 0; i < values.length; i += 1) {
    const type = typeof values[i];
    if (type !== "number" && type !== "string" && type !== "boolean") return false;
  }
  return true;
}

/** A coerced value in the form the tree's parameters take: bigints as decimal strings, dates as ISO strings. */
function toTreeParameter(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString(10);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return allPlain(value) ? value : value.map(toTreeParameter);
  if (ArrayBuffer.isView(value)) return Array.from(value as unknown as ArrayLike<number | bigint>, toTreeParameter);
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = toTreeParameter(inner);
    return out;
  }
  return value;
}
