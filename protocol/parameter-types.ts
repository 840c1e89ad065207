/**
 * `parameter_types` of a `/v2/query` request: when a request declares them, its parameters must match them
 * exactly (no missing or extra names) and each value is checked, and where exact converted, before anything runs.
 * Type names follow HelixDB's dynamic queries: bool, i64, f64, f32, string, date_time (an RFC 3339 string),
 * value (anything), object, and {"array": <type>}.
 */
import { SilkError, unreachable } from "./errors.js";

const SCALAR_TYPES = ["bool", "i64", "f64", "f32", "string", "date_time", "value", "object"] as const;
type ScalarParameterType = (typeof SCALAR_TYPES)[number];
export type ParameterType = ScalarParameterType | { readonly array: ParameterType };

const F32_MAX = 3.4028234663852886e38;

function fault(path: string, message: string): SilkError {
  return new SilkError("malformed_tree", `${path}: ${message}`);
}

export function decodeParameterType(json: unknown, path: string, depth = 0): ParameterType {
  if (depth > 16) throw fault(path, "parameter type nested too deeply");
  if (typeof json === "string" && (SCALAR_TYPES as readonly string[]).includes(json)) return json as ScalarParameterType;
  if (typeof json === "object" && json !== null && !Array.isArray(json) && Object.keys(json).length === 1 && "array" in json) {
    return { array: decodeParameterType((json as { array: unknown }).array, `${path}.array`, depth + 1) };
  }
  throw fault(path, `unknown parameter type ${JSON.stringify(json)} (expected ${SCALAR_TYPES.join(", ")} or {"array": type})`);
}

function wrong(name: string, expected: string, value: unknown): SilkError {
  // A bigint (an integer beyond 2^53 from the gateway's lossless parse) has no JSON.stringify form of its own.
  const shown = JSON.stringify(value, (_key, item: unknown) => (typeof item === "bigint" ? item.toString() : item));
  return new SilkError("invalid_type", `parameter ${name} must be ${expected}, got ${shown}`);
}

/** Checks one parameter value against its declared type; returns it (date_time stays an ISO string, validated). */
export function checkParameter(type: ParameterType, value: unknown, name: string): unknown {
  if (typeof type === "object") {
    if (!Array.isArray(value)) throw wrong(name, "an array", value);
    return value.map((item, i) => checkParameter(type.array, item, `${name}[${i}]`));
  }
  switch (type) {
    case "bool":
      if (typeof value !== "boolean") throw wrong(name, "a boolean", value);
      return value;
    case "i64":
      if (typeof value === "number" && Number.isSafeInteger(value)) return value;
      if (typeof value === "bigint" && value >= -(2n ** 63n) && value < 2n ** 63n) return value;
      if (typeof value === "string" && /^-?\d+$/.test(value) && BigInt(value) >= -(2n ** 63n) && BigInt(value) < 2n ** 63n) return value;
      throw wrong(name, "a 64-bit integer", value);
    case "f64":
    case "f32":
      if (typeof value !== "number" || !Number.isFinite(value)) throw wrong(name, "a finite number", value);
      if (type === "f32" && Math.abs(value) > F32_MAX) throw wrong(name, "within the f32 range", value);
      return value;
    case "string":
      if (typeof value !== "string") throw wrong(name, "a string", value);
      return value;
    case "date_time":
      if (typeof value !== "string" || Number.isNaN(Date.parse(value))) throw wrong(name, "an RFC 3339 date-time string", value);
      return value;
    case "object":
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw wrong(name, "an object", value);
      return value;
    case "value":
      return value;
    default:
      return unreachable(type, "parameter type");
  }
}

/** Applies a request's `parameter_types` to its `parameters`: the names must match exactly. */
export function checkParameters(typesJson: unknown, parameters: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (typeof typesJson !== "object" || typesJson === null || Array.isArray(typesJson)) throw fault("$.parameter_types", "expected an object");
  const types = typesJson as Record<string, unknown>;
  const declared = Object.keys(types);
  for (const name of Object.keys(parameters)) {
    if (!(name in types)) throw new SilkError("invalid_type", `parameter ${name} has no entry in parameter_types`);
  }
  const checked: Record<string, unknown> = {};
  for (const name of declared) {
    const type = decodeParameterType(types[name], `$.parameter_types.${name}`);
    if (!(name in parameters)) throw new SilkError("missing_parameter", `parameter_types declares ${name}, but parameters do not supply it`);
    checked[name] = checkParameter(type, parameters[name], name);
  }
  return checked;
}
