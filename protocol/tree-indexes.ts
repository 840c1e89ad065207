/**
 * Decoder of the operation tree's index operations (`create_index`, `drop_index`, `get_index_operation`,
 * `retry_index_operation`, `abort_index_operation`). They are administration, not steps of a traversal: each is the
 * root of an entry, a batch that holds one holds nothing else, and the coordinator runs them (cluster/index-operations.ts).
 * See docs/OPERATION_TREE.md and docs/INDEXES.md.
 */
import type { TextAnalyzer, VectorMetric } from "./indexes.js";
import type { RecordKind } from "./records.js";
import { allowOnly, fault, labelAt, objectAt, stringAt, type Json } from "./tree-json.js";

export type IndexAction = "create" | "drop" | "get" | "retry" | "abort";

export interface IndexOperation {
  readonly action: IndexAction;
  readonly kind: RecordKind;
  readonly label: string;
  readonly field: string;
  /** What `create` makes (`{"family": "secondary", "unique": false}` by default); the other actions find the index by kind, label and field. */
  readonly spec: IndexSpec;
}

/** A created index's family and options: `create_index`'s `"type"` (`equality`/`range`/`unique`, `vector`, `text`) and its options. */
export type IndexSpec =
  | { readonly family: "secondary"; readonly unique: boolean }
  | { readonly family: "vector"; readonly metric: VectorMetric; readonly dimension?: number; readonly tenant?: string }
  | { readonly family: "text"; readonly analyzer: TextAnalyzer; readonly positions: boolean; readonly tenant?: string };

const ACTIONS: ReadonlyMap<string, IndexAction> = new Map([
  ["create_index", "create"],
  ["drop_index", "drop"],
  ["get_index_operation", "get"],
  ["retry_index_operation", "retry"],
  ["abort_index_operation", "abort"],
]);

export function isIndexOperationTag(tag: string): boolean {
  return ACTIONS.has(tag);
}

const KINDS: readonly RecordKind[] = ["node", "edge", "vector"];

/** `{"label", "property", "kind"?}`, and `"unique"?` for `create_index`. `kind` defaults to `node`. */
export function decodeIndexOperation(tag: string, body: Json, at: string): IndexOperation {
  const action = ACTIONS.get(tag);
  if (action === undefined) throw fault(at, `${tag} is not an index operation`);
  const object = objectAt(body, at);
  allowOnly(object, action === "create" ? ["label", "property", "kind", "unique"] : ["label", "property", "kind"], at);
  const kind = object.kind === undefined || object.kind === null ? "node" : stringAt(object.kind, `${at}.kind`);
  if (!(KINDS as readonly string[]).includes(kind)) throw fault(`${at}.kind`, `expected one of ${KINDS.join(", ")}`);
  const unique = object.unique ?? false;
  if (typeof unique !== "boolean") throw fault(`${at}.unique`, "must be true or false");
  return { action, kind: kind as RecordKind, label: labelAt(object.label, `${at}.label`), field: stringAt(object.property, `${at}.property`), unique };
}
