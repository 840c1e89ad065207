/**
 * Bulk import: writes a batch of nodes, vectors (`V::` records) and edges as one transaction without going through the
 * operation tree, for `silk import` and bulk loads. IDs are reserved in blocks, properties and vectors are checked
 * against the schema exactly as a query's writes are (AddN, AddV), and the batch commits all-or-nothing (two-phase
 * when it spans partitions). The partitions index what they commit as they index a query's writes: a vector of
 * another length than its vector index's dimension aborts the whole batch there (`vector_dimension_mismatch`); one
 * that contradicts a declared dimension, or another vector of its label in the same batch, or (on several partitions)
 * the dimension any partition fixed, is refused before anything is written, naming its row.
 */
import { SilkError } from "../protocol/errors.js";
import { idToString, parseId } from "../protocol/ids.js";
import { MutationListWriter } from "../protocol/mutation-codec.js";
import type { AdjacencyEntry, EndpointKind, RecordKind, StoredRecord } from "../protocol/records.js";
import type { Schema } from "../protocol/schema.js";
import type { Properties } from "../protocol/values.js";
import { uniqueEdgeViolation } from "../node/unique-edge-violation.js";
import { checkLabel, prepareCreate, toVector } from "../node/exec/validation.js";
import type { PartitionMap } from "./partition-map.js";
import type { DimensionMismatch } from "./vector-dimensions.js";

export interface ImportNode {
  readonly label: string;
  readonly props: Record<string, unknown>;
}

/** A `V::` record: its vector (numbers, a Float32Array or a Float64Array, as AddV takes it) and its properties. */
export interface ImportVector {
  readonly label: string;
  readonly vector: readonly number[] | Float32Array | Float64Array;
  readonly props: Record<string, unknown>;
}

/**
 * An edge endpoint: a node of the same batch (`batch`, its index in `nodes`), a vector of the same batch (`vector`, its
 * index in `vectors`), or an existing node or vector (by ID: a bigint, a safe integer or a decimal string, as IDs are
 * everywhere; anything else is `invalid_id` naming the row and field).
 */
export type ImportEndpoint = { readonly batch: number } | { readonly vector: number } | { readonly id: bigint | number | string };

export interface ImportEdge {
  readonly label: string;
  readonly from: ImportEndpoint;
  readonly to: ImportEndpoint;
  readonly props: Record<string, unknown>;
}

export interface ImportBatch {
  readonly nodes: readonly ImportNode[];
  readonly edges: readonly ImportEdge[];
  readonly vectors?: readonly ImportVector[];
}

/** A node or vector an edge of the batch names, with the partition that owns it (looked up once, not per edge). */
interface Endpoint {
  readonly id: bigint;
  readonly label: string;
  readonly kind: EndpointKind;
  readonly partition: number;
}

export interface ImportResult {
  readonly nodeIds: bigint[];
  readonly edgeIds: bigint[];
  /** The IDs of the batch's vectors, in its order (empty when it had none). */
  readonly vectorIds: bigint[];
}

type ImportSection = "nodes" | "vectors" | "edges";

/** An import failure that names the offending row of the batch, so a loader can report file and line. */
export class ImportRowError extends SilkError {
  constructor(
    readonly section: ImportSection,
    readonly index: number,
    cause: SilkError,
  ) {
    super(cause.code, cause.message);
  }
}

export interface ImportServices {
  readonly map: PartitionMap;
  readonly schema: Schema | undefined;
  readonly now: () => Date;
  allocateBlock(partition: number, count: number): Promise<bigint>;
  /** The label and kind of existing records, or undefined for IDs that name no node or vector. */
  lookupEndpoints(ids: readonly bigint[]): Promise<({ label: string; kind: EndpointKind } | undefined)[]>;
  /** The committed out-adjacency of a label, one list per source (the check of UNIQUE edge types). */
  outAdjacency(sources: readonly bigint[], label: string): Promise<AdjacencyEntry[][]>;
  /** Commits one encoded mutation list per partition as one transaction. */
  commitLists(lists: ReadonlyMap<number, Uint8Array>): Promise<void>;
  /**
   * On several partitions, where each partition's storage guard sees only its own records: whether records of a
   * label can break a UNIQUE index (a schema's UNIQUE INDEX fields or a `create_index` one; schemaless, any label
   * may), and the check of the batch's records of such labels against each other and every partition's index.
   */
  readonly unique?: {
    mayBreak(kind: RecordKind, label: string): boolean;
    check(records: readonly StoredRecord[]): Promise<void>;
  };
  /**
   * On several partitions, where each partition fixes a vector index's dimension from its own first vector: the first
   * of the batch's records whose vector contradicts its index's dimension across partitions (cluster/vector-dimensions.ts).
   */
  readonly vectorDimensions?: (records: readonly StoredRecord[]) => Promise<DimensionMismatch | undefined>;
}

function rowError(section: ImportSection, index: number, cause: unknown): never {
  if (cause instanceof SilkError) throw new ImportRowError(section, index, cause);
  throw cause;
}

/**
 * Label checks and property preparation, memoised per batch where the answer cannot differ from row to row: a label
 * checked once is checked, and rows without properties all get the same (never mutated) prepared properties. Keyed by
 * kind and then label, so a row costs map lookups and no key string.
 */
function preparer(schema: Schema | undefined, now: () => Date): (kind: RecordKind, label: string, props: Record<string, unknown>) => Properties {
  const checked: Record<RecordKind, Set<string>> = { node: new Set(), edge: new Set(), vector: new Set() };
  const empty: Record<RecordKind, Map<string, Properties>> = { node: new Map(), edge: new Map(), vector: new Map() };
  return (kind, label, props) => {
    if (!checked[kind].has(label)) {
      checkLabel(schema, kind, label);
      checked[kind].add(label);
    }
    for (const _ in props) return prepareCreate(schema, kind, label, props, now);
    let prepared = empty[kind].get(label);
    if (prepared === undefined) {
      prepared = prepareCreate(schema, kind, label, props, now);
      empty[kind].set(label, prepared);
    }
    return prepared;
  };
}

type Prepare = ReturnType<typeof preparer>;

/**
 * Reserves IDs for the batch's new records of one kind (nodes and vectors share the ID space), spread over partitions
 * in contiguous slices, one ID block per partition.
 */
async function allocateRecords(rows: readonly { readonly label: string }[], kind: EndpointKind, services: ImportServices): Promise<Endpoint[]> {
  const { map } = services;
  const perPartition = Math.ceil(rows.length / map.count);
  const endpoints: Endpoint[] = new Array(rows.length);
  for (let partition = 0; partition < map.count; partition += 1) {
    const first = partition * perPartition;
    const count = Math.max(0, Math.min(rows.length, first + perPartition) - first);
    if (count === 0) continue;
    const block = await services.allocateBlock(partition, count);
    for (let i = 0; i < count; i += 1) {
      const id = block + BigInt(i);
      endpoints[first + i] = { id, label: rows[first + i].label, kind, partition: map.partitionOf(id) };
    }
  }
  return endpoints;
}

/**
 * The batch's vector records, each vector checked as AddV checks it and, for a declared `V::` type, against its
 * declared dimension or else the first vector of its label in the batch (its index would refuse the batch at commit,
 * without the row).
 */
function vectorRecords(vectors: readonly ImportVector[], schema: Schema | undefined, prepare: Prepare, endpoints: readonly Endpoint[]): StoredRecord[] {
  const lengths = new Map<string, number>();
  return vectors.map((row, i) => {
    try {
      const props = prepare("vector", row.label, row.props);
      const vector = toVector(row.vector, `vectors[${i}].vector`);
      const declared = schema?.vectors.get(row.label);
      if (declared !== undefined) {
        const expected = declared.index.dimension ?? lengths.get(row.label);
        if (expected !== undefined && vector.length !== expected) {
          throw new SilkError("vector_dimension_mismatch", `vectors[${i}].vector has length ${vector.length}; V::${row.label} vectors have dimension ${expected}`);
        }
        lengths.set(row.label, vector.length);
      }
      return { kind: "vector", id: endpoints[i].id, label: row.label, vector, props };
    } catch (cause) {
      return rowError("vectors", i, cause);
    }
  });
}

/** The existing records the batch's edges name by ID, one shared endpoint object per record. */
async function existingEndpoints(batch: ParsedBatch, services: ImportServices): Promise<Map<bigint, Endpoint>> {
  const ids = new Set<bigint>();
  for (const edge of batch.edges) {
    if ("id" in edge.from) ids.add(edge.from.id);
    if ("id" in edge.to) ids.add(edge.to.id);
  }
  const list = [...ids];
  const found = await services.lookupEndpoints(list);
  const existing = new Map<bigint, Endpoint>();
  list.forEach((id, i) => {
    const record = found[i];
    if (record !== undefined) existing.set(id, { id, label: record.label, kind: record.kind, partition: services.map.partitionOf(id) });
  });
  return existing;
}

/** Both ends of every edge, checked against the schema, and each edge's prepared properties. */
function resolveEdges(
  batch: ParsedBatch,
  schema: Schema | undefined,
  prepare: Prepare,
  nodes: readonly Endpoint[],
  vectors: readonly Endpoint[],
  existing: ReadonlyMap<bigint, Endpoint>,
): ResolvedEdges {
  const endpoint = (end: ParsedEndpoint, role: string): Endpoint => {
    const found = "batch" in end ? nodes[end.batch] : "vector" in end ? vectors[end.vector] : existing.get(end.id);
    if (found !== undefined) return found;
    if ("batch" in end) throw new SilkError("node_not_found", `${role} names node ${end.batch} of the batch, which has ${batch.nodes.length}`);
    if ("vector" in end) throw new SilkError("node_not_found", `${role} names vector ${end.vector} of the batch, which has ${batch.vectors?.length ?? 0}`);
    throw new SilkError("node_not_found", `${role}: no node or vector has id ${idToString(end.id)}`);
  };
  const count = batch.edges.length;
  const resolved: ResolvedEdges = { froms: new Array(count), tos: new Array(count), props: new Array(count) };
  for (let i = 0; i < count; i += 1) {
    const edge = batch.edges[i];
    try {
      resolved.props[i] = prepare("edge", edge.label, edge.props);
      const from = (resolved.froms[i] = endpoint(edge.from, "from"));
      const to = (resolved.tos[i] = endpoint(edge.to, "to"));
      const declared = schema?.edges.get(edge.label);
      if (declared && (from.label !== declared.from || to.label !== declared.to)) {
        throw new SilkError("edge_endpoint_mismatch", `${edge.label} joins ${declared.from} to ${declared.to}, not ${from.label} to ${to.label}`);
      }
    } catch (cause) {
      rowError("edges", i, cause);
    }
  }
  return resolved;
}

interface ResolvedEdges {
  readonly froms: Endpoint[];
  readonly tos: Endpoint[];
  readonly props: Properties[];
}

/** The batch's records of labels with UNIQUE INDEX fields, checked before anything is written. */
async function checkUnique(
  unique: NonNullable<ImportServices["unique"]>,
  batch: ImportBatch,
  newRecords: readonly StoredRecord[],
  edges: ResolvedEdges,
  edgeIds: readonly bigint[],
): Promise<void> {
  const hasUnique = new Map<string, boolean>();
  const checked = (kind: RecordKind, label: string): boolean => {
    const key = `${kind}:${label}`;
    let answer = hasUnique.get(key);
    if (answer === undefined) hasUnique.set(key, (answer = unique.mayBreak(kind, label)));
    return answer;
  };
  const records = newRecords.filter((record) => checked(record.kind, record.label));
  batch.edges.forEach((edge, i) => {
    if (!checked("edge", edge.label)) return;
    const from = edges.froms[i];
    const to = edges.tos[i];
    records.push({ kind: "edge", id: edgeIds[i], label: edge.label, from: from.id, to: to.id, fromKind: from.kind, toKind: to.kind, props: edges.props[i] });
  });
  if (records.length > 0) await unique.check(records);
}

/**
 * The batch's edges of UNIQUE types (`E::Follows UNIQUE`, node/exec/unique-edges.ts): a pair the batch gives two edges,
 * or one it already has, is `unique_violation` naming the row. Only sources named by ID can have committed edges.
 */
async function checkUniqueEdges(batch: ParsedBatch, schema: Schema, edges: ResolvedEdges, edgeIds: readonly bigint[], services: ImportServices): Promise<void> {
  const rowsOfPair = new Map<string, number>();
  const existingSources = new Map<string, Set<bigint>>();
  batch.edges.forEach((edge, i) => {
    if (schema.edges.get(edge.label)?.unique !== true) return;
    const from = edges.froms[i].id;
    const to = edges.tos[i].id;
    const pair = `${edge.label}|${from}|${to}`;
    const first = rowsOfPair.get(pair);
    if (first !== undefined) rowError("edges", i, uniqueEdgeViolation(edge.label, from, to, edgeIds[first]));
    rowsOfPair.set(pair, i);
    if ("id" in edge.from) {
      const sources = existingSources.get(edge.label);
      if (sources) sources.add(from);
      else existingSources.set(edge.label, new Set([from]));
    }
  });
  for (const [label, sourceSet] of existingSources) {
    const sources = [...sourceSet];
    const lists = await services.outAdjacency(sources, label);
    for (let s = 0; s < sources.length; s += 1) {
      for (const entry of lists[s]) {
        const row = rowsOfPair.get(`${label}|${sources[s]}|${entry.other}`);
        if (row !== undefined) rowError("edges", row, uniqueEdgeViolation(label, sources[s], entry.other, entry.edge));
      }
    }
  }
}

/** An endpoint whose ID is parsed: what the steps after `withParsedIds` work on. */
type ParsedEndpoint = { readonly batch: number } | { readonly vector: number } | { readonly id: bigint };
type ParsedBatch = Omit<ImportBatch, "edges"> & { readonly edges: readonly (Omit<ImportEdge, "from" | "to"> & { readonly from: ParsedEndpoint; readonly to: ParsedEndpoint })[] };

const isParsed = (end: ImportEndpoint): end is ParsedEndpoint => "batch" in end || "vector" in end || typeof end.id === "bigint";

/** The batch with every endpoint ID a bigint; the batch itself when it has no other form (bin/import's batches). */
function withParsedIds(batch: ImportBatch): ParsedBatch {
  if (batch.edges.every((edge) => isParsed(edge.from) && isParsed(edge.to))) return batch as ParsedBatch;
  const parsed = (end: ImportEndpoint, where: string): ParsedEndpoint => (isParsed(end) ? end : { id: parseId(end.id, where) });
  const edges = batch.edges.map((edge, i) => {
    try {
      return { ...edge, from: parsed(edge.from, `edges[${i}].from.id`), to: parsed(edge.to, `edges[${i}].to.id`) };
    } catch (cause) {
      return rowError("edges", i, cause);
    }
  });
  return { ...batch, edges };
}

export async function importBatch(input: ImportBatch, services: ImportServices): Promise<ImportResult> {
  const { map, schema, now } = services;
  const batch = withParsedIds(input);
  const prepare = preparer(schema, now);
  const nodes = await allocateRecords(batch.nodes, "node", services);
  const nodeRecords: StoredRecord[] = new Array(batch.nodes.length);
  batch.nodes.forEach((node, i) => {
    try {
      nodeRecords[i] = { kind: "node", id: nodes[i].id, label: node.label, props: prepare("node", node.label, node.props) };
    } catch (cause) {
      rowError("nodes", i, cause);
    }
  });
  const vectorRows = batch.vectors ?? [];
  const vectors = vectorRows.length === 0 ? [] : await allocateRecords(vectorRows, "vector", services);
  const vectorList = vectorRecords(vectorRows, schema, prepare, vectors);
  const { froms, tos, props } = resolveEdges(batch, schema, prepare, nodes, vectors, await existingEndpoints(batch, services));
  // An edge's ID comes from its source's partition, where its record and out-adjacency live.
  const edgesPerPartition = new Array<number>(map.count).fill(0);
  for (const from of froms) edgesPerPartition[from.partition] += 1;
  const nextEdgeId: bigint[] = new Array(map.count);
  for (let partition = 0; partition < map.count; partition += 1) {
    if (edgesPerPartition[partition] > 0) nextEdgeId[partition] = await services.allocateBlock(partition, edgesPerPartition[partition]);
  }
  const writers: (MutationListWriter | undefined)[] = new Array(map.count);
  const writerOf = (partition: number): MutationListWriter => (writers[partition] ??= new MutationListWriter());
  nodeRecords.forEach((record, i) => writerOf(nodes[i].partition).putRecord(record));
  vectorList.forEach((record, i) => writerOf(vectors[i].partition).putRecord(record));
  const edgeIds: bigint[] = new Array(batch.edges.length);
  for (let i = 0; i < batch.edges.length; i += 1) {
    const label = batch.edges[i].label;
    const from = froms[i];
    const to = tos[i];
    const id = nextEdgeId[from.partition];
    nextEdgeId[from.partition] = id + 1n;
    edgeIds[i] = id;
    writerOf(from.partition).putEdge(id, label, from.id, to.id, from.kind, to.kind, props[i]);
    writerOf(to.partition).putIn(to.id, label, id, from.id, from.kind);
  }
  if (schema !== undefined) await checkUniqueEdges(batch, schema, { froms, tos, props }, edgeIds, services);
  const newRecords = vectorList.length === 0 ? nodeRecords : [...nodeRecords, ...vectorList];
  if (services.unique !== undefined) await checkUnique(services.unique, batch, newRecords, { froms, tos, props }, edgeIds);
  const mismatch = await services.vectorDimensions?.(newRecords);
  if (mismatch !== undefined) {
    if (mismatch.index < nodeRecords.length) rowError("nodes", mismatch.index, mismatch.error);
    rowError("vectors", mismatch.index - nodeRecords.length, mismatch.error);
  }
  const lists = new Map<number, Uint8Array>();
  writers.forEach((writer, partition) => {
    if (writer !== undefined) lists.set(partition, writer.finish());
  });
  await services.commitLists(lists);
  return { nodeIds: nodes.map((node) => node.id), edgeIds, vectorIds: vectors.map((vector) => vector.id) };
}
