/**
 * The shapes of secondary indexes that cross the transport (partition replies) and reach callers (`db.indexes()`,
 * the index operations of the operation tree). Storage and builds are node/indexes/secondary-index.ts; see docs/INDEXES.md.
 */
import type { RecordKind } from "./records.js";
import type { ScalarTypeName } from "./schema.js";
import { valueToJson, type Value } from "./values.js";
import { unreachable } from "./errors.js";

/** The three families of index (docs/INDEXES.md): equality/range, approximate nearest neighbour, BM25 text. */
export type IndexFamily = "secondary" | "vector" | "text";

export type VectorMetric = "cosine" | "euclidean" | "manhattan";
export const VECTOR_METRICS: readonly VectorMetric[] = ["cosine", "euclidean", "manhattan"];

export type TextAnalyzer = "standard" | "standard_stem_en" | "whitespace_lowercase";
export const TEXT_ANALYZERS: readonly TextAnalyzer[] = ["standard", "standard_stem_en", "whitespace_lowercase"];

/**
 * A vector search's beam width (`ef`: how many candidates the graph walk keeps), set per index (`ef` among its
 * options) or per search (the `vector_search` step's `ef`): a whole number from 1 to this. A search's beam is never
 * narrower than its k. Without either, max(k, 64) (node/indexes/vector-index.ts EF_SEARCH_MIN).
 */
export const VECTOR_EF_MAX = 10_000;

/** Whether `value` is a beam width a vector index or search accepts. */
export function isVectorEf(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= VECTOR_EF_MAX;
}

/** The field a vector index of a `V::` type covers: the record's own vector, not a property. */
export const VECTOR_FIELD = "$vector";

interface IndexDefinitionBase {
  readonly kind: RecordKind;
  readonly label: string;
  /** A top-level property, or VECTOR_FIELD for the vector of a `V::` record. */
  readonly field: string;
  /** `User.age`: the name explain output and `db.indexes()` show. */
  readonly name: string;
}

/** An equality and range index. Persisted before families existed without `family`: read such as "secondary". */
export interface SecondaryIndexDefinition extends IndexDefinitionBase {
  readonly family: "secondary";
  readonly unique: boolean;
  /**
   * The field's declared type: a changed type is a different index, rebuilt. Absent in a schemaless database, which
   * declares no types: such an index keys each value by its own kind (node/indexes/index-encoding.ts), see node/exec/planner.ts.
   */
  readonly type?: ScalarTypeName;
}

/** An HNSW index over float vectors (normalised to float32); one graph per tenant value when `tenant` is set. */
export interface VectorIndexDefinition extends IndexDefinitionBase {
  readonly family: "vector";
  readonly metric: VectorMetric;
  /** Every indexed vector has exactly this length; absent, the first vector indexed fixes it (kept in the state). */
  readonly dimension?: number;
  /** The property whose value names a record's tenant partition. */
  readonly tenant?: string;
  /** Its searches' beam width (VECTOR_EF_MAX); a search option, not the graph's: changing it keeps the index. */
  readonly ef?: number;
}

/** A BM25 index over a String or [String] property; postings live in the partition's LMDB. */
export interface TextIndexDefinition extends IndexDefinitionBase {
  readonly family: "text";
  readonly analyzer: TextAnalyzer;
  /** Whether term positions are stored with the postings. */
  readonly positions: boolean;
  /** Only `tenant_id` (SPEC): the property whose value names a record's tenant partition. */
  readonly tenant?: string;
  /** Implied by a `SearchBM25<T>` on a type without a TEXT INDEX, not declared (protocol/warnings.ts). Not part of the index's identity. */
  readonly implied?: true;
}

export type IndexDefinition = SecondaryIndexDefinition | VectorIndexDefinition | TextIndexDefinition;

/**
 * `validating`: a UNIQUE index built on one of several partitions, each of which checked only its own records; it
 * waits for the coordinator's check across partitions, which activates or blocks it everywhere (docs/INDEXES.md).
 */
export type IndexStateName = "constructing" | "validating" | "active" | "blocked";

/** Who declared an index: the schema (it lives and dies with the declaration) or an index operation (`create_index`). */
export type IndexOrigin = "schema" | "runtime";

/** One index as a partition persists it: its definition, state and monotonic build counters. */
export type IndexStatus = IndexDefinition & IndexProgress;

/** One index's state and monotonic build counters. */
export interface IndexProgress {
  readonly state: IndexStateName;
  readonly origin: IndexOrigin;
  /** Records the build has scanned. */
  readonly entities: number;
  /** Stored bytes of those records. */
  readonly bytes: number;
  /** Index entries the build has written. */
  readonly operations: number;
  /** Why a `blocked` index is blocked: an error code, and a message naming the value. */
  readonly reason?: string;
  readonly message?: string;
  /** A vector index's dimension once fixed (declared, or by the first vector indexed). */
  readonly dimension?: number;
}

/** The secondary index an index operation created on a kind, label and field, if any (the schema's are in the schema). */
export type RuntimeIndexLookup = (kind: RecordKind, label: string, field: string) => SecondaryIndexDefinition | undefined;

/** The definition alone, without state or counters. */
export function definitionOf(source: IndexDefinition): IndexDefinition {
  const { kind, label, field, name } = source;
  switch (source.family) {
    case "secondary":
      return { family: "secondary", kind, label, field, name, unique: source.unique, ...optionalEntry("type", source.type) };
    case "vector":
      return { family: "vector", kind, label, field, name, metric: source.metric, ...optionalEntry("dimension", source.dimension), ...optionalEntry("tenant", source.tenant), ...optionalEntry("ef", source.ef) };
    case "text":
      return {
        family: "text", kind, label, field, name, analyzer: source.analyzer, positions: source.positions,
        ...optionalEntry("tenant", source.tenant), ...optionalEntry("implied", source.implied),
      };
    default:
      return unreachable(source, "index family");
  }
}

export function optionalEntry<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** Two definitions of one index are the same index: a changed option is a different index, rebuilt. */
export function sameDefinition(a: IndexDefinition, b: IndexDefinition): boolean {
  if (a.kind !== b.kind || a.label !== b.label || a.field !== b.field || a.name !== b.name) return false;
  switch (a.family) {
    case "secondary":
      return b.family === "secondary" && a.unique === b.unique && a.type === b.type;
    case "vector":
      // `ef` is left out: it changes how the graphs are searched, not what they hold.
      return b.family === "vector" && a.metric === b.metric && a.dimension === b.dimension && a.tenant === b.tenant;
    case "text":
      return b.family === "text" && a.analyzer === b.analyzer && a.positions === b.positions && a.tenant === b.tenant;
    default:
      return unreachable(a, "index family");
  }
}

/**
 * How an index is described in messages: `User.age as I32`, `User.email (UNIQUE) as String`, `User.age as values of
 * any type` (schemaless), `Doc.body as a text index`.
 */
export function describeIndex(definition: IndexDefinition): string {
  if (definition.family === "secondary") return `${definition.name}${definition.unique ? " (UNIQUE)" : ""} as ${definition.type ?? "values of any type"}`;
  return `${definition.name} as a ${definition.family} index`;
}

/**
 * The tenant partition a tenant property's value names: strings as themselves, anything else by its JSON text.
 * A record without the property is in no partition (a tenant-partitioned index leaves it out).
 */
export function tenantKey(value: Value): string {
  if (typeof value === "string") return value;
  // Keys are stored: a bigint keeps the key it had before bigints rendered as strings (its number while safe).
  if (typeof value === "bigint") return JSON.stringify(value >= -9007199254740991n && value <= 9007199254740991n ? Number(value) : value.toString(10));
  return JSON.stringify(valueToJson(value));
}

/** A database's index is as far along as its least advanced partition. */
const STATE_RANK: Record<IndexStateName, number> = { active: 0, validating: 1, constructing: 2, blocked: 3 };

/** One status per index over every partition's: the least advanced partition's state, counters summed. */
export function mergeIndexStatuses(perPartition: readonly (readonly IndexStatus[])[]): IndexStatus[] {
  const merged = new Map<string, IndexStatus>();
  for (const statuses of perPartition) {
    for (const own of statuses) {
      const key = `${own.kind}:${own.name}`;
      const earlier = merged.get(key);
      if (earlier === undefined) merged.set(key, own);
      else {
        const worse = STATE_RANK[own.state] > STATE_RANK[earlier.state] ? own : earlier;
        merged.set(key, {
          ...worse,
          entities: earlier.entities + own.entities,
          bytes: earlier.bytes + own.bytes,
          operations: earlier.operations + own.operations,
        });
      }
    }
  }
  return [...merged.values()];
}
