/**
 * Decoders of the operation tree's branching and stream-shaping steps (`union`, `coalesce`, `optional`, `choose`,
 * `repeat`, `fold`, `unfold`, `group`, `order_by_multiple`, `inject`, `as`, `store`, `select`, `edge_has`,
 * `edge_has_label`, `drop_edge`, `drop_edge_labeled`, `drop_edge_by_id`), kept apart from tree.ts for size. Field
 * names follow HelixDB's v3 wire shape; see docs/OPERATION_TREE.md.
 *
 * The decoders of steps, predicates, inputs and references are passed in, so this module does not import tree.ts
 * (which imports it).
 */
import { SilkError } from "./errors.js";
import type { EmitBehavior, Input, Order, Predicate, Ref, RepeatConfig, Step } from "./tree.js";
import { allowOnly, arrayAt, fault, labelAt, objectAt, stringAt, type Json } from "./tree-json.js";

/** Sub-traversals one `union` or `coalesce` may list. */
export const BRANCH_TRAVERSALS_MAX = 64;
/** The most iterations a `repeat` may ask for (`times`, `max_depth`). */
export const REPEAT_ITERATIONS_MAX = 1_000;
/** HelixDB's default `max_depth` of a `repeat` that sets neither it nor `times`. */
export const REPEAT_DEPTH_DEFAULT = 100;

export interface StepDecoders {
  step(value: Json, path: string, depth: number): Step;
  predicate(value: Json, path: string, depth: number): Predicate;
  input(value: Json, path: string): Input;
  ref(value: Json, path: string): Ref;
}

export const EXTENDED_STEP_TAGS: ReadonlySet<string> = new Set([
  "union", "coalesce", "optional", "choose", "repeat", "fold", "unfold", "group", "order_by_multiple", "inject", "as",
  "store", "select", "edge_has", "edge_has_label", "drop_edge", "drop_edge_labeled", "drop_edge_by_id",
]);

type Decoding = { readonly object: Record<string, Json>; readonly at: string; readonly depth: number; readonly decoders: StepDecoders };

/** Decodes one step whose tag is in EXTENDED_STEP_TAGS. */
export function decodeExtendedStep(tag: string, object: Record<string, Json>, at: string, depth: number, decoders: StepDecoders): Step {
  const d: Decoding = { object, at, depth, decoders };
  const only = (...keys: string[]): void => allowOnly(object, keys, at);
  const input = (): Step => decoders.step(object.input, `${at}.input`, depth + 1);
  const optionalInput = (): Step | undefined => (object.input === undefined || object.input === null ? undefined : input());
  switch (tag) {
    case "union":
    case "coalesce":
      only("input", "traversals");
      return { op: tag, input: input(), traversals: traversalList(d) };
    case "optional":
      only("input", "traversal");
      return { op: "optional", input: input(), traversal: subTraversal(object.traversal, `${at}.traversal`, d) };
    case "choose":
      only("input", "condition", "then_traversal", "else_traversal");
      return {
        op: "choose",
        input: input(),
        condition: decoders.predicate(object.condition, `${at}.condition`, depth + 1),
        then: subTraversal(object.then_traversal, `${at}.then_traversal`, d),
        otherwise: object.else_traversal === undefined || object.else_traversal === null ? undefined : subTraversal(object.else_traversal, `${at}.else_traversal`, d),
      };
    case "repeat":
      only("input", "config");
      return { op: "repeat", input: input(), config: repeatConfig(d) };
    case "fold":
    case "unfold":
      only("input");
      return { op: tag, input: input() };
    case "group":
      only("input", "property");
      return { op: "group", input: input(), path: stringAt(object.property, `${at}.property`) };
    case "order_by_multiple":
      only("input", "orderings");
      return { op: "order_by_multiple", input: input(), orderings: orderings(object.orderings, `${at}.orderings`) };
    case "inject":
      only("input", "variable");
      return { op: "inject", input: optionalInput(), variable: stringAt(object.variable, `${at}.variable`) };
    case "as":
    case "store":
    case "select":
      only("input", "name");
      return { op: tag, input: input(), name: stringAt(object.name, `${at}.name`) };
    case "edge_has":
      only("input", "property", "value");
      return { op: "edge_has", input: input(), path: stringAt(object.property, `${at}.property`), value: decoders.input(object.value, `${at}.value`) };
    case "edge_has_label":
      only("input", "label");
      return { op: "edge_has_label", input: input(), label: labelAt(object.label, `${at}.label`) };
    case "drop_edge":
      only("input", "to");
      return { op: "drop_edge", input: input(), to: decoders.ref(object.to, `${at}.to`) };
    case "drop_edge_labeled":
      only("input", "to", "label");
      return { op: "drop_edge", input: input(), to: decoders.ref(object.to, `${at}.to`), label: labelAt(object.label, `${at}.label`) };
    case "drop_edge_by_id":
      only("input", "edges");
      return { op: "drop_edge_by_id", input: optionalInput(), edges: decoders.ref(object.edges, `${at}.edges`) };
    default:
      throw new SilkError("internal", `internal error (a bug in Silk): ${at} is not an extended step`);
  }
}

/** A sub-traversal: `{"root": <step>}`, whose chain usually starts at `"context"`. */
function subTraversal(value: Json, path: string, d: Decoding): Step {
  const object = objectAt(value, path);
  allowOnly(object, ["root"], path);
  if (object.root === undefined) throw fault(`${path}.root`, "a sub-traversal needs a root step");
  return d.decoders.step(object.root, `${path}.root`, d.depth + 1);
}

function traversalList(d: Decoding): Step[] {
  const path = `${d.at}.traversals`;
  const list = arrayAt(d.object.traversals, path);
  if (list.length === 0) throw fault(path, "expected at least one sub-traversal");
  if (list.length > BRANCH_TRAVERSALS_MAX) throw fault(path, `at most ${BRANCH_TRAVERSALS_MAX} sub-traversals, not ${list.length}`);
  return list.map((item, i) => subTraversal(item, `${path}[${i}]`, d));
}

function orderAt(value: Json, path: string): Order {
  const order = stringAt(value, path);
  if (order !== "asc" && order !== "desc") throw fault(path, 'expected "asc" or "desc"');
  return order;
}

function orderings(value: Json, path: string): [string, Order][] {
  const list = arrayAt(value, path);
  if (list.length === 0) throw fault(path, "expected at least one [property, order] pair");
  return list.map((pair, i) => {
    const items = arrayAt(pair, `${path}[${i}]`);
    if (items.length !== 2) throw fault(`${path}[${i}]`, 'expected a [property, "asc" | "desc"] pair');
    return [stringAt(items[0], `${path}[${i}][0]`), orderAt(items[1], `${path}[${i}][1]`)];
  });
}

const EMIT_BEHAVIORS: readonly EmitBehavior[] = ["none", "before", "after", "all"];

function iterationsAt(value: Json, path: string, least: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < least || value > REPEAT_ITERATIONS_MAX) {
    throw fault(path, `expected an integer from ${least} to ${REPEAT_ITERATIONS_MAX}`);
  }
  return value;
}

/** `{"traversal", "times"?, "until"?, "emit"?, "emit_predicate"?, "max_depth"?}`. */
function repeatConfig(d: Decoding): RepeatConfig {
  const at = `${d.at}.config`;
  const config = objectAt(d.object.config, at);
  allowOnly(config, ["traversal", "times", "until", "emit", "emit_predicate", "max_depth"], at);
  const present = (key: string): boolean => config[key] !== undefined && config[key] !== null;
  const emit = present("emit") ? stringAt(config.emit, `${at}.emit`) : "none";
  if (!(EMIT_BEHAVIORS as readonly string[]).includes(emit)) throw fault(`${at}.emit`, `expected one of ${EMIT_BEHAVIORS.join(", ")}`);
  const times = present("times") ? iterationsAt(config.times, `${at}.times`, 0) : undefined;
  const maxDepth = present("max_depth") ? iterationsAt(config.max_depth, `${at}.max_depth`, 1) : (times ?? REPEAT_DEPTH_DEFAULT);
  // A loop that stopped at max_depth before `times` would return fewer levels than asked for: refuse it instead.
  if (times !== undefined && times > maxDepth) throw fault(`${at}.times`, `times ${times} is beyond max_depth ${maxDepth}`);
  const predicate = (key: string): Predicate | undefined => (present(key) ? d.decoders.predicate(config[key], `${at}.${key}`, d.depth + 1) : undefined);
  return {
    body: subTraversal(config.traversal, `${at}.traversal`, d),
    times,
    until: predicate("until"),
    emit: emit as EmitBehavior,
    emitPredicate: predicate("emit_predicate"),
    maxDepth,
  };
}
