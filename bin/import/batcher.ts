/**
 * The batcher of `silk import`: collects rows into batches of at most `batchSize` records and commits each batch
 * with `importBatch`, one all-or-nothing transaction. It owns the run's key map (external key → node or vector ID),
 * so that edges can name their endpoints by key: a node or vector of the batch being built is referred to by its
 * index in the batch, one of an earlier, committed batch by its ID. A batch is never split, so a row that fails leaves
 * nothing of its batch in the database, while the batches before it stay committed.
 */
import type { Database } from "../../runtime/embedded.js";
import { ImportRowError, type ImportEdge, type ImportEndpoint, type ImportNode, type ImportVector } from "../../cluster/bulk-import.js";
import { SilkError } from "../../protocol/errors.js";
import type { Schema } from "../../protocol/schema.js";
import { badRow, cellValue, declaredFields, RowError, type EdgeRow, type EndpointRef, type ImportRow, type NodeRow, type VectorRow } from "./rows.js";

/** Where a row came from: an index into the batcher's file list and a 1-based line. */
export interface RowSource {
  readonly file: number;
  readonly line: number;
}

export interface BatcherOptions {
  readonly database: Pick<Database, "importBatch">;
  readonly schema: Schema | undefined;
  /** Records (nodes + vectors + edges) per transaction. */
  readonly batchSize: number;
  /** `--key-property`: also store every node's key in this property. */
  readonly keyProperty?: string;
}

export class ImportBatcher {
  /** Key → ID of every node and vector committed in this run. */
  private readonly committedKeys = new Map<string, bigint>();
  /** Key → the batch endpoint of the nodes and vectors of the batch being built (their index in `nodes` or `vectors`). */
  private batchKeys = new Map<string, { readonly batch: number } | { readonly vector: number }>();
  private nodes: ImportNode[] = [];
  private vectors: ImportVector[] = [];
  private edges: ImportEdge[] = [];
  private nodeSources: RowSource[] = [];
  private vectorSources: RowSource[] = [];
  private edgeSources: RowSource[] = [];
  private readonly files: string[] = [];
  nodesCommitted = 0;
  vectorsCommitted = 0;
  edgesCommitted = 0;
  batchesCommitted = 0;

  constructor(private readonly options: BatcherOptions) {
    if (!Number.isSafeInteger(options.batchSize) || options.batchSize < 1) {
      throw new SilkError("invalid_option", "the batch size must be a positive integer");
    }
  }

  /** Registers an input file; rows name their file by the returned index. */
  addFile(path: string): number {
    this.files.push(path);
    return this.files.length - 1;
  }

  /** Records in the batch being built. */
  get pending(): number {
    return this.nodes.length + this.vectors.length + this.edges.length;
  }

  get full(): boolean {
    return this.pending >= this.options.batchSize;
  }

  /** Adds a row to the batch being built; throws RowError for a duplicate or unknown key. */
  add(row: ImportRow, source: RowSource): void {
    try {
      if (row.kind === "node") this.addNode(row, source);
      else if (row.kind === "vector") this.addVector(row, source);
      else this.addEdge(row, source);
    } catch (cause) {
      if (cause instanceof SilkError) throw new RowError(this.files[source.file], source.line, cause);
      throw cause;
    }
  }

  private addNode(row: NodeRow, source: RowSource): void {
    this.checkNewKey(row.key, "node");
    this.pushNode(row.label, row.key, this.withKeyProperty(row.label, row.keyValue, row.props), source);
  }

  private checkNewKey(key: string, kind: string): void {
    if (this.batchKeys.has(key) || this.committedKeys.has(key)) {
      throw badRow(`${kind} key ${JSON.stringify(key)} is defined twice in this run; keys must be unique`);
    }
  }

  private addVector(row: VectorRow, source: RowSource): void {
    if (row.key !== undefined) this.checkNewKey(row.key, "vector");
    const index = this.vectors.length;
    this.vectors.push({ label: row.label, vector: row.vector, props: row.props });
    this.vectorSources.push(source);
    if (row.key !== undefined) this.batchKeys.set(row.key, { vector: index });
  }

  private pushNode(label: string, key: string, props: Record<string, unknown>, source: RowSource): number {
    const index = this.nodes.length;
    this.nodes.push({ label, props });
    this.nodeSources.push(source);
    this.batchKeys.set(key, { batch: index });
    return index;
  }

  private withKeyProperty(label: string, keyValue: unknown, props: Record<string, unknown>): Record<string, unknown> {
    const name = this.options.keyProperty;
    if (name === undefined) return props;
    if (Object.prototype.hasOwnProperty.call(props, name)) {
      throw badRow(`the row sets property ${JSON.stringify(name)}, which --key-property fills with the node's key`);
    }
    // A key written as text is converted like a CSV cell, so a numeric key can fill an integer property.
    const field = declaredFields(this.options.schema, "node", label)?.get(name);
    return { ...props, [name]: typeof keyValue === "string" ? cellValue(keyValue, field) : keyValue };
  }

  private addEdge(row: EdgeRow, source: RowSource): void {
    const from = this.endpoint(row.from, row.createNodeLabel, source, "from");
    const to = this.endpoint(row.to, row.createNodeLabel, source, "to");
    this.edges.push({ label: row.label, from, to, props: row.props });
    this.edgeSources.push(source);
  }

  private endpoint(ref: EndpointRef, createLabel: string | undefined, source: RowSource, role: string): ImportEndpoint {
    if ("id" in ref) return ref;
    const inBatch = this.batchKeys.get(ref.key);
    if (inBatch !== undefined) return inBatch;
    const id = this.committedKeys.get(ref.key);
    if (id !== undefined) return { id };
    if (createLabel === undefined) {
      throw new SilkError("node_not_found", `${role}: no node with key ${JSON.stringify(ref.key)} was imported before this row in this run`);
    }
    return { batch: this.pushNode(createLabel, ref.key, this.withKeyProperty(createLabel, ref.key, {}), source) };
  }

  /**
   * Commits the batch being built as one transaction, then remembers its keys' IDs. A row the database refuses
   * is reported as a RowError at that row's file and line; nothing of the batch was written.
   */
  async flush(): Promise<void> {
    if (this.pending === 0) return;
    let nodeIds: bigint[];
    let vectorIds: bigint[];
    try {
      ({ nodeIds, vectorIds } = await this.options.database.importBatch({ nodes: this.nodes, edges: this.edges, ...(this.vectors.length === 0 ? {} : { vectors: this.vectors }) }));
    } catch (cause) {
      if (!(cause instanceof ImportRowError)) throw cause;
      const sources = { nodes: this.nodeSources, vectors: this.vectorSources, edges: this.edgeSources }[cause.section];
      const source = sources[cause.index];
      if (source === undefined) throw cause;
      throw new RowError(this.files[source.file], source.line, new SilkError(cause.code, cause.message));
    }
    for (const [key, at] of this.batchKeys) this.committedKeys.set(key, "batch" in at ? nodeIds[at.batch] : vectorIds[at.vector]);
    this.nodesCommitted += this.nodes.length;
    this.vectorsCommitted += this.vectors.length;
    this.edgesCommitted += this.edges.length;
    this.batchesCommitted += 1;
    this.batchKeys = new Map();
    this.nodes = [];
    this.vectors = [];
    this.edges = [];
    this.nodeSources = [];
    this.vectorSources = [];
    this.edgeSources = [];
  }
}
