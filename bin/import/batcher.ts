/**
 * The batcher of `silk import`: collects rows into batches of at most `batchSize` records and commits each batch
 * with `importBatch`, one all-or-nothing transaction. It owns the run's key map (external key → node ID), so that
 * edges can name their endpoints by key: a node of the batch being built is referred to by its index in the
 * batch, a node of an earlier, committed batch by its ID. A batch is never split, so a row that fails leaves
 * nothing of its batch in the database, while the batches before it stay committed.
 */
import type { Database } from "../../runtime/embedded.js";
import { ImportRowError, type ImportEdge, type ImportEndpoint, type ImportNode } from "../../cluster/bulk-import.js";
import { SilkError } from "../../protocol/errors.js";
import type { Schema } from "../../protocol/schema.js";
import { badRow, cellValue, declaredFields, RowError, type EdgeRow, type EndpointRef, type NodeRow } from "./rows.js";

/** Where a row came from: an index into the batcher's file list and a 1-based line. */
export interface RowSource {
  readonly file: number;
  readonly line: number;
}

export interface BatcherOptions {
  readonly database: Pick<Database, "importBatch">;
  readonly schema: Schema | undefined;
  /** Records (nodes + edges) per transaction. */
  readonly batchSize: number;
  /** `--key-property`: also store every node's key in this property. */
  readonly keyProperty?: string;
}

export class ImportBatcher {
  /** Key → ID of every node committed in this run. */
  private readonly committedKeys = new Map<string, bigint>();
  /** Key → index in `nodes` of the nodes of the batch being built. */
  private batchKeys = new Map<string, number>();
  private nodes: ImportNode[] = [];
  private edges: ImportEdge[] = [];
  private nodeSources: RowSource[] = [];
  private edgeSources: RowSource[] = [];
  private readonly files: string[] = [];
  nodesCommitted = 0;
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
    return this.nodes.length + this.edges.length;
  }

  get full(): boolean {
    return this.pending >= this.options.batchSize;
  }

  /** Adds a row to the batch being built; throws RowError for a duplicate or unknown key. */
  add(row: NodeRow | EdgeRow, source: RowSource): void {
    try {
      if (row.kind === "node") this.addNode(row, source);
      else this.addEdge(row, source);
    } catch (cause) {
      if (cause instanceof SilkError) throw new RowError(this.files[source.file], source.line, cause);
      throw cause;
    }
  }

  private addNode(row: NodeRow, source: RowSource): void {
    if (this.batchKeys.has(row.key) || this.committedKeys.has(row.key)) {
      throw badRow(`node key ${JSON.stringify(row.key)} is defined twice in this run; keys must be unique`);
    }
    this.pushNode(row.label, row.key, this.withKeyProperty(row.label, row.keyValue, row.props), source);
  }

  private pushNode(label: string, key: string, props: Record<string, unknown>, source: RowSource): number {
    const index = this.nodes.length;
    this.nodes.push({ label, props });
    this.nodeSources.push(source);
    this.batchKeys.set(key, index);
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
    const batchIndex = this.batchKeys.get(ref.key);
    if (batchIndex !== undefined) return { batch: batchIndex };
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
    try {
      ({ nodeIds } = await this.options.database.importBatch({ nodes: this.nodes, edges: this.edges }));
    } catch (cause) {
      if (!(cause instanceof ImportRowError)) throw cause;
      const source = (cause.section === "nodes" ? this.nodeSources : this.edgeSources)[cause.index];
      if (source === undefined) throw cause;
      throw new RowError(this.files[source.file], source.line, new SilkError(cause.code, cause.message));
    }
    for (const [key, index] of this.batchKeys) this.committedKeys.set(key, nodeIds[index]);
    this.nodesCommitted += this.nodes.length;
    this.edgesCommitted += this.edges.length;
    this.batchesCommitted += 1;
    this.batchKeys = new Map();
    this.nodes = [];
    this.edges = [];
    this.nodeSources = [];
    this.edgeSources = [];
  }
}
