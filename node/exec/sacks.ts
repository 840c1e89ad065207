/**
 * Sacks: a value each row carries along a traversal (rows.ts), as HelixDB v3's interpreter keeps it (its reserved
 * sack operations):
 *
 * - `with_sack` gives every row the literal `initial`;
 * - `sack_set` replaces a row's sack with the property of its current element, or clears it when the element has
 *   no such property;
 * - `sack_add` adds the property to the sack (a row without a sack takes the property's value); an element without
 *   the property leaves its row unchanged. Both sides must be numbers (`invalid_type`); two integers add exactly and
 *   must stay within i64 (`invalid_value` past it), anything else adds as floats;
 * - `sack_get` shows each row's sack in the answer (`"sack": v`, null for a row without one).
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import type { Op } from "./ops.js";
import type { Step } from "../../protocol/tree.js";
import type { Value } from "../../protocol/values.js";
import { rowValue, type EvalScope } from "./predicates.js";
import { rowOf, withRow } from "./rows.js";
import { elements, elementsOf, loaded, type Element, type Stream } from "./streams.js";

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

type SackStep = Extract<Step, { op: "with_sack" | "sack_set" | "sack_add" | "sack_get" }>;

export function* sack(step: SackStep, input: Stream, scope: EvalScope): Op<Stream> {
  const items = elementsOf(input, step.op);
  // sack_set and sack_add read a property of each current element.
  const rows = step.op === "sack_set" || step.op === "sack_add" ? yield* loaded(scope.context.view, items) : items;
  const result: Element[] = [];
  for (const element of rows) {
    if (scope.context.deadline.tick()) yield scope.context.deadline.pause();
    result.push(yield* nextSack(step, element, scope));
  }
  return elements(result);
}

function* nextSack(step: SackStep, element: Element, scope: EvalScope): Op<Element> {
  switch (step.op) {
    case "with_sack":
      return withRow(element, { sack: step.initial });
    case "sack_set":
      return withRow(element, { sack: yield* rowValue(element, step.path, scope) });
    case "sack_add": {
      const value = yield* rowValue(element, step.path, scope);
      if (value === undefined) return element;
      return withRow(element, { sack: added(rowOf(element).sack, value, step.path) });
    }
    case "sack_get":
      return withRow(element, { sackVisible: true });
    default:
      return unreachable(step, "sack step");
  }
}

function isNumber(value: Value): value is number | bigint {
  return typeof value === "bigint" || (typeof value === "number" && Number.isFinite(value));
}

function isInteger(value: number | bigint): boolean {
  return typeof value === "bigint" || Number.isSafeInteger(value);
}

/** What a value is, for an error message (a value may hold bigints, which JSON.stringify refuses). */
function kindOf(value: Value): string {
  if (value === null) return "null";
  if (Array.isArray(value) || ArrayBuffer.isView(value)) return "an array";
  if (value instanceof Date) return "a date";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function added(current: Value | undefined, value: Value, property: string): Value {
  if (!isNumber(value)) throw new SilkError("invalid_type", `sack_add(${JSON.stringify(property)}): the property is ${kindOf(value)}, not a number`);
  if (current === undefined) return value;
  if (!isNumber(current)) throw new SilkError("invalid_type", `sack_add(${JSON.stringify(property)}): the sack holds ${kindOf(current)}, not a number`);
  if (!isInteger(current) || !isInteger(value)) return Number(current) + Number(value);
  const sum = BigInt(current) + BigInt(value);
  if (sum < I64_MIN || sum > I64_MAX) throw new SilkError("invalid_value", `sack_add(${JSON.stringify(property)}): the sum ${sum} is beyond a 64-bit signed integer`);
  return sum >= BigInt(Number.MIN_SAFE_INTEGER) && sum <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(sum) : sum;
}
