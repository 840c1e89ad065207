/**
 * Rows: the traverser state HelixDB v3 keeps beside a stream's current element. A row holds the elements bound by
 * name (`bind`), the path it walked (every element it was current at, from its source on) and a sack value
 * (`with_sack`, `sack_set`, `sack_add`). An element without a row is a row with no bindings, no sack and a path of
 * itself alone, so plain streams carry nothing extra; traversals extend a row only when one exists or a `path` /
 * `simple_path` step asked for paths (walks.ts).
 *
 * A row whose state a step made visible renders as HelixDB renders it (its query service, `execution_row_to_json`):
 * `{"current": {"node": "7"}, "bindings": {"a": {"node": "1"}}, "path": [...], "sack": v}`, with `path` only after
 * `path` and `sack` only after `sack_get`, bindings by name in sorted order. IDs are decimal strings, as everywhere
 * in Silk's answers (HelixDB writes numbers).
 */
import type { IdRenderer } from "../../protocol/ids.js";
import { valueToJson, type Value } from "../../protocol/values.js";
import { recordField, type Element } from "./streams.js";

/** One link of a path, newest first, so that extending a row's path costs one allocation, not a copy. */
export interface PathLink {
  readonly kind: Element["kind"];
  readonly id: bigint;
  readonly previous?: PathLink;
}

export interface RowState {
  /** Elements bound by `bind`, by name; a record read through a binding is loaded on the bound element. */
  readonly bindings: ReadonlyMap<string, Element>;
  readonly path: PathLink;
  /** Set by `path`: the row renders with its path. */
  readonly pathVisible: boolean;
  /** The sack; undefined until `with_sack` or `sack_set` gives the row one. */
  readonly sack: Value | undefined;
  /** Set by `sack_get`: the row renders with its sack. */
  readonly sackVisible: boolean;
}

const NO_BINDINGS: ReadonlyMap<string, Element> = new Map();

/** The row of an element: its own, or the empty row whose path is the element alone. */
export function rowOf(element: Element): RowState {
  return element.row ?? { bindings: NO_BINDINGS, path: { kind: element.kind, id: element.id }, pathVisible: false, sack: undefined, sackVisible: false };
}

/** `next` as the row of `from` moved on to it: the same bindings and sack, `next` appended to the path. */
export function movedTo(from: Element, next: Element): Element {
  const row = rowOf(from);
  return { ...next, row: { ...row, path: { kind: next.kind, id: next.id, previous: row.path } } };
}

/** `element` with its row changed by `change`. */
export function withRow(element: Element, change: Partial<RowState>): Element {
  return { ...element, row: { ...rowOf(element), ...change } };
}

/** A row's path from its source to its current element. */
export function pathElements(path: PathLink): PathLink[] {
  const elements: PathLink[] = [];
  for (let link: PathLink | undefined = path; link !== undefined; link = link.previous) elements.push(link);
  return elements.reverse();
}

/** Whether no element occurs twice on the path (HelixDB's `simple_path`). */
export function isSimplePath(path: PathLink): boolean {
  const seen = new Set<string>();
  for (let link: PathLink | undefined = path; link !== undefined; link = link.previous) {
    const key = `${link.kind}:${link.id}`;
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

/** Whether the element renders as a row rather than as its record: it has bindings, or a step showed its path or sack. */
export function showsRow(row: RowState | undefined): row is RowState {
  return row !== undefined && (row.bindings.size > 0 || row.pathVisible || row.sackVisible);
}

function referenceJson(element: { readonly kind: Element["kind"]; readonly id: bigint }, renderId: IdRenderer): Record<string, unknown> {
  return { [element.kind]: renderId(element.id) };
}

/** An element with a shown row in its JSON form (see the module comment). */
export function rowToJson(element: Element, row: RowState, renderId: IdRenderer): Record<string, unknown> {
  const bindings: Record<string, unknown> = {};
  for (const name of [...row.bindings.keys()].sort()) bindings[name] = referenceJson(row.bindings.get(name)!, renderId);
  const json: Record<string, unknown> = { current: referenceJson(element, renderId), bindings };
  if (row.pathVisible) json.path = pathElements(row.path).map((link) => referenceJson(link, renderId));
  if (row.sackVisible) json.sack = row.sack === undefined ? null : valueToJson(row.sack);
  return json;
}

/**
 * A property or virtual field of an element, as a row reads it (binding projections, `sack_set`, `sack_add`):
 * `$id`, `$label`, `$from` and `$to` (edges only), `$distance` and `$score` (search results only), or a stored
 * property (dotted paths reach into objects). Undefined when the element has none, or its record is gone.
 */
export function elementValue(element: Element, source: string): Value | undefined {
  if (source === "$distance" || source === "$score") {
    const hit = element.hit;
    return hit !== undefined && (hit.measure === "distance") === (source === "$distance") ? hit.score : undefined;
  }
  const record = element.record;
  if (record === undefined) return undefined;
  return recordField(record, source);
}
