/**
 * Bulk import: writes a batch of nodes and edges as one transaction without going through the operation tree, for
 * `silk import` and bulk loads. IDs are reserved in blocks, properties are checked against the schema exactly as a
 * query's writes are, and the batch commits all-or-nothing (two-phase when it spans partitions).
 */
import { SilkError } from "../protocol/errors.js";
import { idToString } from "../protocol/ids.js";
import { MutationListWriter } from "../protocol/mutation-codec.js";
import type { EndpointKind, RecordKind, StoredRecord } from "../protocol/records.js";
import type { Schema } from "../protocol/schema.js";
import type { Properties } from "../protocol/values.js";
import { checkLabel, prepareCreate } from "../node/validation.js";
import type { PartitionMap } from "./partition-map.js";

export interface ImportNode {
  readonly label: string;
  readonly props: Record<string, unknown>;
}

/** An edge endpoint: a node of the same batch (by index) or an existing node or vector (by ID). */
export type ImportEndpoint = { readonly batch: number } | { readonly id: bigint };

export interface ImportEdge {
  readonly label: string;
  readonly from: ImportEndpoint;
  readonly to: ImportEndpoint;
  readonly props: Record<string, unknown>;
}

export interface ImportBatch {
  readonly nodes: readonly ImportNode[];
  readonly edges: readonly ImportEdge[];
}

interface Endpoint {
  readonly id: bigint;
  readonly label: string;
  readonly kind: EndpointKind;
}

export interface ImportResult {
  readonly nodeIds: bigint[];
  readonly edgeIds: bigint[];
}

/** An import failure that names the offending row of the batch, so a loader can report file and line. */
export class ImportRowError extends SilkError {
  constructor(
    readonly section: "nodes" | "edges",
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
  /** Commits one encoded mutation list per partition as one transaction. */
  commitLists(lists: ReadonlyMap<number, Uint8Array>): Promise<void>;
}

function rowError(section: "nodes" | "edges", index: number, cause: unknown): never {
  if (cause instanceof SilkError) throw new ImportRowError(section, index, cause);
  throw cause;
}

/**
 * Label checks and property preparation, memoised per batch where the answer cannot differ from row to row: a label
 * checked once is checked, and rows without properties all get the same (never mutated) prepared properties.
 */
function preparer(schema: Schema | undefined, now: () => Date): (kind: RecordKind, label: string, props: Record<string, unknown>) => Properties {
  const checked = new Set<string>();
  const empty = new Map<string, Properties>();
  return (kind, label, props) => {
    const key = `${kind}:${label}`;
    if (!checked.has(key)) {
      checkLabel(schema, kind, label);
      checked.add(key);
    }
    for (const _ in props) return prepareCreate(schema, kind, label, props, now);
    let prepared = empty.get(key);
    if (prepared === undefined) {
      prepared = prepareCreate(schema, kind, label, props, now);
      empty.set(key, prepared);
    }
    return prepared;
  };
}

export async function importBatch(batch: ImportBatch, services: ImportServices): Promise<ImportResult> {
  const { map, schema, now } = services;
  const prepare = preparer(schema, now);
  const nodeRecords: StoredRecord[] = [];
  // Nodes are spread over partitions in contiguous slices, one ID block per partition.
  const perPartition = Math.ceil(batch.nodes.length / map.count);
  const nodeIds: bigint[] = new Array(batch.nodes.length);
  for (let partition = 0; partition < map.count; partition += 1) {
    const first = partition * perPartition;
    const count = Math.max(0, Math.min(batch.nodes.length, first + perPartition) - first);
    if (count === 0) continue;
    const block = await services.allocateBlock(partition, count);
    for (let i = 0; i < count; i += 1) nodeIds[first + i] = block + BigInt(i);
  }
  batch.nodes.forEach((node, i) => {
    try {
      nodeRecords.push({ kind: "node", id: nodeIds[i], label: node.label, props: prepare("node", node.label, node.props) });
    } catch (cause) {
      rowError("nodes", i, cause);
    }
  });
  const existingIds = new Set<bigint>();
  for (const edge of batch.edges) for (const end of [edge.from, edge.to]) if ("id" in end) existingIds.add(end.id);
  const existingList = [...existingIds];
  const found = await services.lookupEndpoints(existingList);
  // One endpoint object per node of the batch and per existing record, shared by every edge that names it.
  const existing = new Map<bigint, Endpoint>();
  existingList.forEach((id, i) => {
    const record = found[i];
    if (record !== undefined) existing.set(id, { id, label: record.label, kind: record.kind });
  });
  const batchEndpoints: Endpoint[] = batch.nodes.map((node, i) => ({ id: nodeIds[i], label: node.label, kind: "node" }));
  const endpoint = (end: ImportEndpoint, role: string): Endpoint => {
    const found = "batch" in end ? batchEndpoints[end.batch] : existing.get(end.id);
    if (found !== undefined) return found;
    if ("batch" in end) throw new SilkError("node_not_found", `${role} names node ${end.batch} of the batch, which has ${batch.nodes.length}`);
    throw new SilkError("node_not_found", `${role}: no node or vector has id ${idToString(end.id)}`);
  };
  const froms: Endpoint[] = new Array(batch.edges.length);
  const tos: Endpoint[] = new Array(batch.edges.length);
  const edgeProps: Properties[] = new Array(batch.edges.length);
  // An edge's ID comes from its source's partition, where its record and out-adjacency live.
  const edgesPerPartition = new Map<number, number>();
  batch.edges.forEach((edge, i) => {
    try {
      edgeProps[i] = prepare("edge", edge.label, edge.props);
      const from = (froms[i] = endpoint(edge.from, "from"));
      const to = (tos[i] = endpoint(edge.to, "to"));
      const declared = schema?.edges.get(edge.label);
      if (declared && (from.label !== declared.from || to.label !== declared.to)) {
        throw new SilkError("edge_endpoint_mismatch", `${edge.label} joins ${declared.from} to ${declared.to}, not ${from.label} to ${to.label}`);
      }
    } catch (cause) {
      rowError("edges", i, cause);
    }
    const partition = map.partitionOf(froms[i].id);
    edgesPerPartition.set(partition, (edgesPerPartition.get(partition) ?? 0) + 1);
  });
  const nextEdgeId = new Map<number, bigint>();
  for (const [partition, count] of edgesPerPartition) nextEdgeId.set(partition, await services.allocateBlock(partition, count));
  const writers = new Map<number, MutationListWriter>();
  const writerOf = (id: bigint): MutationListWriter => {
    const partition = map.partitionOf(id);
    let writer = writers.get(partition);
    if (writer === undefined) writers.set(partition, (writer = new MutationListWriter()));
    return writer;
  };
  for (const record of nodeRecords) writerOf(record.id).putRecord(record);
  const edgeIds: bigint[] = new Array(batch.edges.length);
  batch.edges.forEach((edge, i) => {
    const from = froms[i];
    const to = tos[i];
    const partition = map.partitionOf(from.id);
    const id = nextEdgeId.get(partition)!;
    nextEdgeId.set(partition, id + 1n);
    edgeIds[i] = id;
    writerOf(from.id).putEdge(id, edge.label, from.id, to.id, from.kind, to.kind, edgeProps[i]);
    writerOf(to.id).putIn(to.id, edge.label, id, from.id, from.kind);
  });
  const lists = new Map<number, Uint8Array>();
  for (const [partition, writer] of writers) lists.set(partition, writer.finish());
  await services.commitLists(lists);
  return { nodeIds, edgeIds };
}
