/**
 * The rows of `silk import`, whatever file format they came from, and the rules that turn text into them: the
 * JSONL row shape and the conversion of CSV cells to property values. Readers (readers.ts) produce these rows;
 * the batcher (batcher.ts) resolves their keys to node IDs. docs/IMPORT.md is the user-facing description.
 */
import { SilkError } from "../../protocol/errors.js";
import { parseId } from "../../protocol/ids.js";
import type { FieldDecl, Schema } from "../../protocol/schema.js";

/** Where an edge row's endpoint is: a node key of this run, or the ID of a node that already exists. */
export type EndpointRef = { readonly key: string } | { readonly id: bigint };

export interface NodeRow {
  readonly kind: "node";
  readonly label: string;
  /** The external key, as a string: keys 7 and "7" are the same key. */
  readonly key: string;
  /** The key as written (a JSON number stays a number), for `--key-property`. */
  readonly keyValue: unknown;
  readonly props: Record<string, unknown>;
}

export interface EdgeRow {
  readonly kind: "edge";
  readonly label: string;
  readonly from: EndpointRef;
  readonly to: EndpointRef;
  readonly props: Record<string, unknown>;
  /** Edge lists: endpoints whose key is new in this run become nodes of this label on first sight. */
  readonly createNodeLabel?: string;
}

/**
 * A `V::` record (JSONL only): its vector as a JSON array, whose numbers the database checks as AddV does, and an
 * optional key that edges of the run may name, in the same key space as nodes'.
 */
export interface VectorRow {
  readonly kind: "vector";
  readonly label: string;
  readonly key: string | undefined;
  readonly vector: readonly number[];
  readonly props: Record<string, unknown>;
}

export type ImportRow = NodeRow | EdgeRow | VectorRow;

/** A row problem with the place it was found; the importer prints it as `file:line: code: message`. */
export class RowError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly error: SilkError,
  ) {
    super(`${file}:${line}: ${error.code}: ${error.message}`);
    this.name = "RowError";
  }
}

export function badRow(message: string): SilkError {
  return new SilkError("import_bad_row", message);
}

/** What a label may be: an identifier, as in HelixQL. */
export const LABEL_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Labels must be identifiers, as in HelixQL and the operation tree: a schemaless database would store any string,
 * but a label like `my-users` could then never be named in a query.
 */
export function checkLabelText(label: unknown, what: string): string {
  if (typeof label !== "string" || !LABEL_PATTERN.test(label)) {
    throw badRow(`${what} must be an identifier (letters, digits and _, not starting with a digit), got ${JSON.stringify(label) ?? "nothing"}`);
  }
  return label;
}

const NODE_FIELDS = new Set(["kind", "label", "key", "props"]);
const EDGE_FIELDS = new Set(["kind", "label", "from", "to", "props"]);
const VECTOR_FIELDS = new Set(["kind", "label", "key", "vector", "props"]);
const ROW_FIELDS = { node: NODE_FIELDS, edge: EDGE_FIELDS, vector: VECTOR_FIELDS } as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Parses one JSONL line into a row; throws import_bad_row saying what is wrong with it. */
export function parseJsonRow(text: string): ImportRow {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw badRow(`malformed JSON: ${(cause as Error).message}`);
  }
  if (!isObject(value)) throw badRow("a row must be a JSON object");
  const kind = value.kind;
  if (kind !== "node" && kind !== "edge" && kind !== "vector") throw badRow(`"kind" must be "node", "edge" or "vector", got ${JSON.stringify(kind) ?? "nothing"}`);
  const allowed = ROW_FIELDS[kind];
  for (const field of Object.keys(value)) {
    if (!allowed.has(field)) throw badRow(`unknown field ${JSON.stringify(field)} in a ${kind} row (allowed: ${[...allowed].join(", ")})`);
  }
  const label = checkLabelText(value.label, `the "label" of a ${kind} row`);
  const props = value.props ?? {};
  if (!isObject(props)) throw badRow(`"props" must be an object`);
  if (kind === "node") {
    if (value.key === undefined) throw badRow(`a node row needs "key", a string or number that edges refer to`);
    return { kind, label, key: keyText(value.key, "key"), keyValue: value.key, props };
  }
  if (kind === "vector") {
    const vector = value.vector;
    if (!Array.isArray(vector) || vector.length === 0) throw badRow(`a vector row needs "vector", a non-empty array of numbers`);
    return { kind, label, key: value.key === undefined ? undefined : keyText(value.key, "key"), vector: vector as number[], props };
  }
  return { kind, label, from: endpointRef(value.from, "from"), to: endpointRef(value.to, "to"), props };
}

/** A key is a non-empty string or a finite number; it is compared as its string form. */
export function keyText(value: unknown, field: string): string {
  if (typeof value === "string" && value !== "") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  throw badRow(`"${field}" must be a non-empty string or a number, got ${JSON.stringify(value) ?? "nothing"}`);
}

function endpointRef(value: unknown, field: string): EndpointRef {
  if (value === undefined) throw badRow(`an edge row needs "${field}", the key of a node imported earlier in this run`);
  if (isObject(value)) {
    const keys = Object.keys(value);
    if (keys.length !== 1 || keys[0] !== "id") throw badRow(`"${field}" must be a key or {"id": "<node id>"}`);
    return { id: parseId(value.id, `"${field}".id`) };
  }
  return { key: keyText(value, field) };
}

const NUMBER_TEXT = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
const INTEGER_TEXT = /^-?(?:0|[1-9][0-9]*)$/;

/**
 * The property value of one CSV cell (never empty: empty cells are absent properties). With a declared field the
 * schema decides: String keeps the text; integers, Date and ID keep the text too, since the schema's coercion
 * parses decimal strings exactly (a u64 beyond 2^53 survives); F32/F64 and Boolean take a number or boolean when
 * the text is one; arrays and objects take the cell as JSON. Without a declared field (a schemaless database),
 * text that is a JSON number becomes a number (an integer beyond 2^53 a bigint), `true`/`false` a boolean, and
 * anything else stays a string. When the text does not fit, it is passed on as a string and the schema's
 * coercion reports the error with its own code.
 */
export function cellValue(text: string, field: FieldDecl | undefined): unknown {
  if (field === undefined) return untypedCell(text);
  const type = field.type;
  if (type.kind !== "scalar") {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  switch (type.name) {
    case "F32":
    case "F64":
      return NUMBER_TEXT.test(text) ? Number(text) : text;
    case "Boolean":
      return text === "true" ? true : text === "false" ? false : text;
    default:
      return text;
  }
}

function untypedCell(text: string): unknown {
  if (text === "true") return true;
  if (text === "false") return false;
  if (!NUMBER_TEXT.test(text)) return text;
  const number = Number(text);
  if (INTEGER_TEXT.test(text) && !Number.isSafeInteger(number)) return BigInt(text);
  return number;
}

/** The declared fields of a node or edge label, or undefined (schemaless, or a label the schema lacks). */
export function declaredFields(schema: Schema | undefined, kind: "node" | "edge", label: string): ReadonlyMap<string, FieldDecl> | undefined {
  if (schema === undefined) return undefined;
  return (kind === "node" ? schema.nodes : schema.edges).get(label)?.fields;
}
