/**
 * Bulk import: writes a batch of nodes and edges as one transaction without going through the operation tree, for
 * `silk import` and bulk loads. IDs are reserved in blocks, properties are checked against the schema exactly as a
 * query's writes are, and the batch commits all-or-nothing (two-phase when it spans partitions).
 */
import { SilkError } from "../protocol/errors.js";
import { idToString } from "../protocol/ids.js";
import type { EndpointKind, Mutation, RecordKind, StoredRecord } from "../protocol/records.js";
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
  commit(mutations: Mutation[]): Promise<void>;
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
  const existing = new Map(existingList.map((id, i) => [id, found[i]] as const));
  const endpoint = (end: ImportEndpoint, role: string): { id: bigint; label: string; kind: EndpointKind } => {
    if ("batch" in end) {
      const node = batch.nodes[end.batch];
      if (node === undefined) throw new SilkError("node_not_found", `${role} names node ${end.batch} of the batch, which has ${batch.nodes.length}`);
      return { id: nodeIds[end.batch], label: node.label, kind: "node" };
    }
    const record = existing.get(end.id);
    if (record === undefined) throw new SilkError("node_not_found", `${role}: no node or vector has id ${idToString(end.id)}`);
    return { id: end.id, label: record.label, kind: record.kind };
  };
  const edgeSources: { from: ReturnType<typeof endpoint>; to: ReturnType<typeof endpoint>; props: Properties }[] = [];
  batch.edges.forEach((edge, i) => {
    try {
      const props = prepare("edge", edge.label, edge.props);
      const from = endpoint(edge.from, "from");
      const to = endpoint(edge.to, "to");
      const declared = schema?.edges.get(edge.label);
      if (declared && (from.label !== declared.from || to.label !== declared.to)) {
        throw new SilkError("edge_endpoint_mismatch", `${edge.label} joins ${declared.from} to ${declared.to}, not ${from.label} to ${to.label}`);
      }
      edgeSources.push({ from, to, props });
    } catch (cause) {
      rowError("edges", i, cause);
    }
  });
  // An edge's ID comes from its source's partition, where its record and out-adjacency live.
  const edgesPerPartition = new Map<number, number[]>();
  edgeSources.forEach((edge, i) => {
    const partition = map.partitionOf(edge.from.id);
    const list = edgesPerPartition.get(partition);
    if (list) list.push(i);
    else edgesPerPartition.set(partition, [i]);
  });
  const edgeIds: bigint[] = new Array(edgeSources.length);
  for (const [partition, indexes] of edgesPerPartition) {
    const block = await services.allocateBlock(partition, indexes.length);
    indexes.forEach((index, j) => (edgeIds[index] = block + BigInt(j)));
  }
  const mutations: Mutation[] = nodeRecords.map((record) => ({ op: "put_record", record }));
  edgeSources.forEach((edge, i) => {
    const label = batch.edges[i].label;
    mutations.push({
      op: "put_record",
      record: { kind: "edge", id: edgeIds[i], label, from: edge.from.id, to: edge.to.id, fromKind: edge.from.kind, toKind: edge.to.kind, props: edge.props },
    });
    mutations.push({ op: "put_in", target: edge.to.id, label, edge: edgeIds[i], source: edge.from.id, sourceKind: edge.from.kind });
  });
  await services.commit(mutations);
  return { nodeIds, edgeIds };
}
