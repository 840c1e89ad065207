/**
 * A QUERY's parameters as a JSON Schema (draft 2020-12 keywords only): what an MCP tool publishes as its
 * `inputSchema` (gateway/mcp.ts) so that an agent knows what to send. It describes what `bindParameters` (query.ts)
 * accepts; bindParameters stays the judge of every call, so the schema only has to be faithful, not enforced.
 */
import type { FieldType, ScalarTypeName } from "../schema.js";
import type { CompiledQuery } from "./query.js";
import { unreachable } from "../errors.js";

/** A JSON Schema object, as plain JSON. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** The integer types whose JSON values are numbers only, with their bounds (query.ts refuses their strings). */
const SMALL_INTEGERS: Readonly<Record<"I8" | "I16" | "I32" | "U8" | "U16" | "U32", readonly [number, number]>> = {
  I8: [-128, 127],
  I16: [-32_768, 32_767],
  I32: [-2_147_483_648, 2_147_483_647],
  U8: [0, 255],
  U16: [0, 65_535],
  U32: [0, 4_294_967_295],
};

/**
 * The schema of a query's parameters: an object with one property per parameter, the non-optional ones required,
 * no others allowed (an undeclared parameter is `unknown_parameter`).
 */
export function parametersJsonSchema(query: CompiledQuery): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const parameter of query.parameters) properties[parameter.name] = fieldTypeJsonSchema(parameter.type);
  const required = query.parameters.filter((parameter) => !parameter.optional).map((parameter) => parameter.name);
  return { type: "object", properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}

/** The schema of one declared type, as a call's JSON carries it. */
export function fieldTypeJsonSchema(type: FieldType): JsonSchema {
  switch (type.kind) {
    case "scalar":
      return scalarJsonSchema(type.name);
    case "array":
      return { type: "array", items: fieldTypeJsonSchema(type.element) };
    case "object": {
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      for (const [name, field] of type.fields) {
        properties[name] = fieldTypeJsonSchema(field.type);
        if (field.required) required.push(name);
      }
      return { type: "object", properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
    }
    default:
      return unreachable(type, "field type");
  }
}

function scalarJsonSchema(name: ScalarTypeName): JsonSchema {
  switch (name) {
    case "String":
      return { type: "string" };
    case "Boolean":
      return { type: "boolean" };
    case "F32":
    case "F64":
      return { type: "number" };
    // Beyond 2^53 a JSON number may be rounded on the way, so these also take decimal strings.
    case "I64":
      return { anyOf: [{ type: "integer" }, { type: "string", pattern: "^-?[0-9]+$" }], description: "I64: a whole number, or its decimal string" };
    case "U64":
    case "U128":
      return { anyOf: [{ type: "integer", minimum: 0 }, { type: "string", pattern: "^[0-9]+$" }], description: `${name}: a whole number, or its decimal string` };
    case "Date":
      return { type: "string", description: "Date: ISO 8601, a date (2024-01-31) or a UTC timestamp (2024-01-31T12:00:00Z)" };
    case "ID":
      return { type: "string", pattern: "^[0-9]+$", description: "ID: a record's ID as a decimal string" };
    case "I8":
    case "I16":
    case "I32":
    case "U8":
    case "U16":
    case "U32": {
      const [minimum, maximum] = SMALL_INTEGERS[name];
      return { type: "integer", minimum, maximum };
    }
    default:
      return unreachable(name, "scalar type");
  }
}
