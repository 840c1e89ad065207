/**
 * Decoders of the operation tree's row steps. HelixDB v3 runs a traversal as rows: beside its current element a row
 * carries the elements bound by name (`bind`), the path it walked and a sack value. The steps that read or show that
 * state decode here: `bind`, `project_bindings`, `path`, `simple_path`, `with_sack`, `sack_set`, `sack_add`,
 * `sack_get`, and `edge_properties` (HelixDB's terminal over edge rows). Field names follow HelixDB's serde names
 * (crates/ast `AstNode`, `BindingProjection`); see docs/OPERATION_TREE.md, "Rows".
 *
 * The decoders of steps and literals are passed in, so this module does not import tree.ts (which imports it).
 */
import type { Step } from "./tree.js";
import { unreachable } from "./errors.js";
import { allowOnly, arrayAt, fault, objectAt, stringAt, tagged, type Json } from "./tree-json.js";
import { WIRE_FIELDS, type WireStepTag } from "./tree-wire.js";
import type { Value } from "./values.js";

/** Whose value a binding projection reads: the row's current element, or the element bound under a name. */
export type BindingTarget = { readonly kind: "current" } | { readonly kind: "binding"; readonly name: string };

export interface BindingValueRef {
  readonly target: BindingTarget;
  /** A property (dotted paths reach into objects) or a virtual field: `$id`, `$label`, `$from`, `$to`, `$distance`, `$score`. */
  readonly source: string;
}

/** One field of a `project_bindings` row: a value read from a target, or the first present non-null of several. */
export type BindingProjection =
  | { readonly kind: "property"; readonly target: BindingTarget; readonly source: string; readonly alias: string }
  | { readonly kind: "coalesce"; readonly refs: readonly BindingValueRef[]; readonly alias: string };

export interface RowDecoders {
  step(value: Json, path: string, depth: number): Step;
  literal(value: Json, path: string): Value;
}

const ROW_STEP_TAGS = [
  "path", "simple_path", "bind", "project_bindings", "edge_properties", "with_sack", "sack_set", "sack_add", "sack_get",
] as const satisfies readonly WireStepTag[];

/** The steps decodeRowStep decodes. */
export type RowStepTag = (typeof ROW_STEP_TAGS)[number];

const ROWS: ReadonlySet<string> = new Set(ROW_STEP_TAGS);

export function isRowStepTag(tag: WireStepTag): tag is RowStepTag {
  return ROWS.has(tag);
}

/** HelixDB refuses an empty binding name, projection source or alias (crates/ast projection.rs `non_empty_string`). */
function nonEmptyAt(value: Json, path: string): string {
  const text = stringAt(value, path);
  if (text === "") throw fault(path, "expected a non-empty string");
  return text;
}

/** Decodes one step whose tag is a RowStepTag; tree.ts `decodeStep` has checked its fields (WIRE_STEP_FIELDS). */
export function decodeRowStep(tag: RowStepTag, object: Record<string, Json>, at: string, depth: number, decoders: RowDecoders): Step {
  const input = (): Step => decoders.step(object.input, `${at}.input`, depth + 1);
  switch (tag) {
    case "path":
    case "simple_path":
    case "sack_get":
    case "edge_properties":
      return { op: tag, input: input() };
    case "bind":
      return { op: "bind", input: input(), name: nonEmptyAt(object.name, `${at}.name`) };
    case "project_bindings": {
      if (object.distinct !== undefined && typeof object.distinct !== "boolean") throw fault(`${at}.distinct`, "expected a boolean");
      const list = arrayAt(object.projections, `${at}.projections`);
      if (list.length === 0) throw fault(`${at}.projections`, "expected at least one binding projection");
      return {
        op: "project_bindings",
        input: input(),
        projections: list.map((item, i) => bindingProjection(item, `${at}.projections[${i}]`)),
        distinct: object.distinct === true,
      };
    }
    case "with_sack":
      if (object.initial === undefined) throw fault(`${at}.initial`, "with_sack needs the sack's initial value");
      return { op: "with_sack", input: input(), initial: decoders.literal(object.initial, `${at}.initial`) };
    case "sack_set":
    case "sack_add":
      return { op: tag, input: input(), path: nonEmptyAt(object.property, `${at}.property`) };
    default:
      return unreachable(tag, "row step");
  }
}

function bindingTarget(value: Json, path: string): BindingTarget {
  if (value === "current") return { kind: "current" };
  const [tag, body] = tagged(value, path);
  if (tag !== "binding") throw fault(path, `expected "current" or {"binding": name}, found ${JSON.stringify(tag)}`);
  return { kind: "binding", name: nonEmptyAt(body, `${path}.binding`) };
}

function valueRef(value: Json, path: string): BindingValueRef {
  const object = objectAt(value, path);
  allowOnly(object, WIRE_FIELDS.binding_value_ref, path);
  return { target: bindingTarget(object.target, `${path}.target`), source: nonEmptyAt(object.source, `${path}.source`) };
}

/** `{"property": {"target", "source", "alias"}}` or `{"coalesce": {"refs": [{"target", "source"}, ..], "alias"}}`. */
function bindingProjection(value: Json, path: string): BindingProjection {
  const [tag, body] = tagged(value, path);
  const at = `${path}.${tag}`;
  const object = objectAt(body, at);
  switch (tag) {
    case "property":
      allowOnly(object, WIRE_FIELDS.property_binding_projection, at);
      return {
        kind: "property",
        target: bindingTarget(object.target, `${at}.target`),
        source: nonEmptyAt(object.source, `${at}.source`),
        alias: nonEmptyAt(object.alias, `${at}.alias`),
      };
    case "coalesce": {
      allowOnly(object, WIRE_FIELDS.coalesce_binding_projection, at);
      const refs = arrayAt(object.refs, `${at}.refs`);
      if (refs.length === 0) throw fault(`${at}.refs`, "expected at least one reference");
      return { kind: "coalesce", refs: refs.map((item, i) => valueRef(item, `${at}.refs[${i}]`)), alias: nonEmptyAt(object.alias, `${at}.alias`) };
    }
    default:
      throw fault(path, `unknown binding projection ${JSON.stringify(tag)} (expected property or coalesce)`);
  }
}
