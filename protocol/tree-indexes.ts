/**
 * Decoder of the operation tree's index operations (`create_index`, `drop_index`, `get_index_operation`,
 * `retry_index_operation`, `abort_index_operation`), in Silk's form and in HelixDB v3's (`spec`, `operation_id`). They are administration, not steps of a traversal: each is the
 * root of an entry, a batch that holds one holds nothing else, and the coordinator runs them (cluster/index-operations.ts).
 * See docs/OPERATION_TREE.md and docs/INDEXES.md.
 */
import { isVectorEf, TEXT_ANALYZERS, VECTOR_EF_MAX, VECTOR_METRICS, type TextAnalyzer, type VectorMetric } from "./indexes.js";
import type { RecordKind } from "./records.js";
import { allowOnly, fault, labelAt, objectAt, stringAt, tagged, type Json } from "./tree-json.js";
import { unreachable } from "./errors.js";
import { VECTOR_DIMENSIONS_MAX } from "./limits.js";

export type IndexAction = "create" | "drop" | "get" | "retry" | "abort";

/**
 * One index operation: an index named by kind, label and field (Silk's form, and HelixDB's `spec` of `create_index`
 * and `drop_index`), or HelixDB's `operation_id` of the operation that built it (`get`, `retry` and `abort` only).
 */
export type IndexOperation = NamedIndexOperation | IdentifiedIndexOperation;

export interface NamedIndexOperation {
  readonly action: IndexAction;
  readonly kind: RecordKind;
  readonly label: string;
  readonly field: string;
  /** What `create` makes (`{"family": "secondary", "unique": false}` by default); the other actions find the index by kind, label and field. */
  readonly spec: IndexSpec;
  /** Given in HelixDB's form (a `spec`): answered with HelixDB's receipt (cluster/index-receipts.ts). */
  readonly helixForm: boolean;
  /**
   * `create` only: whether an existing index of the same definition is answered (true) or refused with
   * `index_already_exists` (false), HelixDB's `if_not_exists`. Silk's own form always answers it.
   */
  readonly ifNotExists: boolean;
}

export interface IdentifiedIndexOperation {
  readonly action: "get" | "retry" | "abort";
  /** A canonical lowercase UUID, as `create_index` answered it (cluster/index-operation-ids.ts). HelixDB's form: answered with its status. */
  readonly operationId: string;
}

/** A created index's family and options: `create_index`'s `"type"` (`equality`/`range`/`unique`, `vector`, `text`) and its options. */
export type IndexSpec =
  | { readonly family: "secondary"; readonly unique: boolean }
  | { readonly family: "vector"; readonly metric: VectorMetric; readonly dimension?: number; readonly tenant?: string; readonly ef?: number }
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
const TEXT_TENANT = "tenant_id";
const OPTION_KEYS: Readonly<Record<(typeof TYPES)[number] | "legacy", readonly string[]>> = {
  equality: [], range: [], unique: [], legacy: ["unique"],
  vector: ["metric", "dimension", "tenant_property", "ef"],
  text: ["analyzer", "positions", "tenant_property"],
};

/**
 * Silk's form: `{"label", "property", "kind"?}`; `create_index` also takes `"type"` and that type's options, or (the
 * earlier form) `"unique"`. `kind` defaults to `node`, `type` to a plain secondary index. HelixDB's v3 form, what its
 * SDKs send: `create_index` `{"spec", "if_not_exists"?}` and `drop_index` `{"spec"}` (decodeHelixSpec), and
 * `{"operation_id"}` for the others.
 */
export function decodeIndexOperation(tag: string, body: Json, at: string): IndexOperation {
  const action = ACTIONS.get(tag);
  if (action === undefined) throw fault(at, `${tag} is not an index operation`);
  const object = objectAt(body, at);
  if (object.spec !== undefined && (action === "create" || action === "drop")) {
    allowOnly(object, action === "create" ? ["spec", "if_not_exists"] : ["spec"], at);
    // HelixDB's SDKs always send if_not_exists; absent, Silk answers an existing index as it did before the flag was
    // honoured (and as its own form does), rather than refuse a request that names no preference.
    const ifNotExists = object.if_not_exists ?? true;
    if (typeof ifNotExists !== "boolean") throw fault(`${at}.if_not_exists`, "must be true or false");
    return { action, ...decodeHelixSpec(object.spec, `${at}.spec`), helixForm: true, ifNotExists };
  }
  if (object.operation_id !== undefined && (action === "get" || action === "retry" || action === "abort")) {
    allowOnly(object, ["operation_id"], at);
    const operationId = stringAt(object.operation_id, `${at}.operation_id`);
    if (!OPERATION_ID.test(operationId)) throw fault(`${at}.operation_id`, "expected a canonical lowercase UUID, as create_index answered it");
    return { action, operationId };
  }
  const base = ["label", "property", "kind"];
  if (action !== "create") allowOnly(object, base, at);
  const kind = object.kind === undefined || object.kind === null ? "node" : stringAt(object.kind, `${at}.kind`);
  if (!(KINDS as readonly string[]).includes(kind)) throw fault(`${at}.kind`, `expected one of ${KINDS.join(", ")}`);
  const label = labelAt(object.label, `${at}.label`);
  const field = stringAt(object.property, `${at}.property`);
  const spec: IndexSpec = action === "create" ? decodeSpec(object, base, at) : { family: "secondary", unique: false };
  return { action, kind: kind as RecordKind, label, field, spec, helixForm: false, ifNotExists: true };
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
      const dimension = object.dimension === undefined || object.dimension === null ? undefined : dimensionAt(object.dimension, `${at}.dimension`);
      return { family: "vector", metric: metric as VectorMetric, ...(dimension === undefined ? {} : { dimension }), ...tenant(), ...efOf(object, at) };
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
    default:
      return unreachable(type, "index type");
  }
}

/** A vector index's `ef` option, absent or a whole number from 1 to VECTOR_EF_MAX. */
function efOf(object: Record<string, Json>, at: string): { ef?: number } {
  if (object.ef === undefined || object.ef === null) return {};
  if (!isVectorEf(object.ef)) throw fault(`${at}.ef`, `the search beam width is an integer from 1 to ${VECTOR_EF_MAX}`);
  return { ef: object.ef };
}

function dimensionAt(value: Json, path: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > VECTOR_DIMENSIONS_MAX) throw fault(path, `expected an integer from 1 to ${VECTOR_DIMENSIONS_MAX}`);
  return value;
}

/** A canonical lowercase non-nil UUID, the form of HelixDB's operation IDs. */
const OPERATION_ID = /^(?!0{8}-0{4}-0{4}-0{4}-0{12}$)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** HelixDB's index specs: `{"<kind>_<family>": {"label", "property", ..}}`, by the spec's tag. */
const HELIX_SPECS: ReadonlyMap<string, { readonly kind: RecordKind; readonly family: "equality" | "range" | "vector" | "text" }> = new Map([
  ["node_equality", { kind: "node", family: "equality" }],
  ["node_range", { kind: "node", family: "range" }],
  ["edge_equality", { kind: "edge", family: "equality" }],
  ["edge_range", { kind: "edge", family: "range" }],
  ["node_vector", { kind: "node", family: "vector" }],
  ["edge_vector", { kind: "edge", family: "vector" }],
  ["node_text", { kind: "node", family: "text" }],
  ["edge_text", { kind: "edge", family: "text" }],
] as const);

const HELIX_SPEC_KEYS: Readonly<Record<"equality" | "range" | "vector" | "text", readonly string[]>> = {
  equality: ["label", "property", "unique"],
  range: ["label", "property", "direction"],
  vector: ["label", "property", "dimension", "metric", "tenant_property", "ef"],
  text: ["label", "property", "tenant_property"],
};

/**
 * HelixDB's index spec as Silk's kind, label, field and spec. Equality and range are one secondary index in Silk
 * (it answers both; a range's `direction` is only checked); only a node's equality index can be `unique`. A vector
 * spec's `dimension` and `metric` are required, as HelixDB has them; a text index uses the standard analyzer.
 */
function decodeHelixSpec(value: Json, at: string): Omit<NamedIndexOperation, "action" | "helixForm" | "ifNotExists"> {
  const [tag, body] = tagged(value, at);
  const helix = HELIX_SPECS.get(tag);
  if (helix === undefined) throw fault(at, `unknown index spec ${JSON.stringify(tag)} (expected ${[...HELIX_SPECS.keys()].join(", ")})`);
  const where = `${at}.${tag}`;
  const object = objectAt(body, where);
  allowOnly(object, HELIX_SPEC_KEYS[helix.family].filter((key) => key !== "unique" || helix.kind === "node"), where);
  const label = labelAt(object.label, `${where}.label`);
  const field = stringAt(object.property, `${where}.property`);
  const present = (key: string): boolean => object[key] !== undefined && object[key] !== null;
  const tenant = (): { tenant?: string } => (present("tenant_property") ? { tenant: stringAt(object.tenant_property, `${where}.tenant_property`) } : {});
  switch (helix.family) {
    case "equality": {
      const unique = object.unique ?? false;
      if (typeof unique !== "boolean") throw fault(`${where}.unique`, "must be true or false");
      return { kind: helix.kind, label, field, spec: { family: "secondary", unique } };
    }
    case "range": {
      const direction = present("direction") ? stringAt(object.direction, `${where}.direction`) : "asc";
      if (direction !== "asc" && direction !== "desc") throw fault(`${where}.direction`, 'expected "asc" or "desc"');
      return { kind: helix.kind, label, field, spec: { family: "secondary", unique: false } };
    }
    case "vector": {
      const metric = stringAt(object.metric, `${where}.metric`);
      if (!(VECTOR_METRICS as readonly string[]).includes(metric)) throw fault(`${where}.metric`, `expected one of ${VECTOR_METRICS.join(", ")}`);
      return { kind: helix.kind, label, field, spec: { family: "vector", metric: metric as VectorMetric, dimension: dimensionAt(object.dimension, `${where}.dimension`), ...tenant(), ...efOf(object, where) } };
    }
    case "text": {
      const spec = { family: "text" as const, analyzer: "standard" as const, positions: false, ...tenant() };
      if (spec.tenant !== undefined && spec.tenant !== TEXT_TENANT) throw fault(`${where}.tenant_property`, `a text index is partitioned by ${TEXT_TENANT} only`);
      return { kind: helix.kind, label, field, spec };
    }
    default:
      return unreachable(helix.family, "index family");
  }
}
