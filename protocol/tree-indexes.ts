/**
 * Decoder of the operation tree's index operations (`create_index`, `drop_index`, `get_index_operation`,
 * `retry_index_operation`, `abort_index_operation`). They are administration, not steps of a traversal: each is the
 * root of an entry, a batch that holds one holds nothing else, and the coordinator runs them (cluster/index-operations.ts).
 * See docs/OPERATION_TREE.md and docs/INDEXES.md.
 */
import { TEXT_ANALYZERS, VECTOR_METRICS, type TextAnalyzer, type VectorMetric } from "./indexes.js";
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
const TYPES = ["equality", "range", "unique", "vector", "text"] as const;
/** The longest vector a vector index may declare (as in the schema's VECTOR INDEX). */
const DIMENSION_MAX = 65_536;
const TEXT_TENANT = "tenant_id";
const OPTION_KEYS: Readonly<Record<(typeof TYPES)[number] | "legacy", readonly string[]>> = {
  equality: [], range: [], unique: [], legacy: ["unique"],
  vector: ["metric", "dimension", "tenant_property"],
  text: ["analyzer", "positions", "tenant_property"],
};

/**
 * `{"label", "property", "kind"?}`; `create_index` also takes `"type"` and that type's options, or (the earlier
 * form) `"unique"`. `kind` defaults to `node`, `type` to a plain secondary index.
 */
export function decodeIndexOperation(tag: string, body: Json, at: string): IndexOperation {
  const action = ACTIONS.get(tag);
  if (action === undefined) throw fault(at, `${tag} is not an index operation`);
  const object = objectAt(body, at);
  const base = ["label", "property", "kind"];
  if (action !== "create") allowOnly(object, base, at);
  const kind = object.kind === undefined || object.kind === null ? "node" : stringAt(object.kind, `${at}.kind`);
  if (!(KINDS as readonly string[]).includes(kind)) throw fault(`${at}.kind`, `expected one of ${KINDS.join(", ")}`);
  const label = labelAt(object.label, `${at}.label`);
  const field = stringAt(object.property, `${at}.property`);
  const spec: IndexSpec = action === "create" ? decodeSpec(object, base, at) : { family: "secondary", unique: false };
  return { action, kind: kind as RecordKind, label, field, spec };
}

function decodeSpec(object: Record<string, Json>, base: readonly string[], at: string): IndexSpec {
  const given = object.type === undefined || object.type === null ? "legacy" : stringAt(object.type, `${at}.type`);
  if (given !== "legacy" && !(TYPES as readonly string[]).includes(given)) throw fault(`${at}.type`, `expected one of ${TYPES.join(", ")}`);
  const type = given as keyof typeof OPTION_KEYS;
  allowOnly(object, [...base, "type", ...OPTION_KEYS[type]], at);
  const tenant = (): { tenant?: string } =>
    object.tenant_property === undefined || object.tenant_property === null ? {} : { tenant: stringAt(object.tenant_property, `${at}.tenant_property`) };
  switch (type) {
    case "legacy": {
      const unique = object.unique ?? false;
      if (typeof unique !== "boolean") throw fault(`${at}.unique`, "must be true or false");
      return { family: "secondary", unique };
    }
    case "equality":
    case "range":
    case "unique":
      return { family: "secondary", unique: type === "unique" };
    case "vector": {
      const metric = object.metric === undefined || object.metric === null ? "cosine" : stringAt(object.metric, `${at}.metric`);
      if (!(VECTOR_METRICS as readonly string[]).includes(metric)) throw fault(`${at}.metric`, `expected one of ${VECTOR_METRICS.join(", ")}`);
      const dimension = object.dimension ?? undefined;
      if (dimension !== undefined && (typeof dimension !== "number" || !Number.isInteger(dimension) || dimension < 1 || dimension > DIMENSION_MAX)) {
        throw fault(`${at}.dimension`, `expected an integer from 1 to ${DIMENSION_MAX}`);
      }
      return { family: "vector", metric: metric as VectorMetric, ...(dimension === undefined ? {} : { dimension }), ...tenant() };
    }
    case "text": {
      const analyzer = object.analyzer === undefined || object.analyzer === null ? "standard" : stringAt(object.analyzer, `${at}.analyzer`);
      if (!(TEXT_ANALYZERS as readonly string[]).includes(analyzer)) throw fault(`${at}.analyzer`, `expected one of ${TEXT_ANALYZERS.join(", ")}`);
      const positions = object.positions ?? false;
      if (typeof positions !== "boolean") throw fault(`${at}.positions`, "must be true or false");
      const spec = { family: "text" as const, analyzer: analyzer as TextAnalyzer, positions, ...tenant() };
      if (spec.tenant !== undefined && spec.tenant !== TEXT_TENANT) throw fault(`${at}.tenant_property`, `a text index is partitioned by ${TEXT_TENANT} only`);
      return spec;
    }
    default: {
      const unreachable: never = type;
      throw fault(at, `unknown index type ${String(unreachable)}`);
    }
  }
}
