/**
 * What a read worker of `silk serve --workers N` (bin/serve-workers.ts) serves: its own read-only Database for every
 * read, and the one writer, reached through a `WriterLink`, for every write. The worker does not classify requests
 * itself: it runs each one on its read-only handle, which refuses a write plan with `read_only` before anything of it
 * runs (the coordinator's first step for a write, a write QUERY's first check), and only then sends it to the writer.
 * A read therefore costs what it costs on a single server; a write pays one decode more and the hop to the writer.
 *
 * Read-your-writes: the link resolves a write's answer only once the writer has committed it and this worker's
 * handle was refreshed (Database.refresh), so every read that starts after the answer (on this connection or any
 * other of this worker) sees it; the writer has every other worker refresh too before it answers (docs/SERVER.md).
 */
import { SilkError } from "../protocol/errors.js";
import type { CompiledQuery } from "../protocol/helixql/query.js";
import type { IndexStatus } from "../protocol/indexes.js";
import type { QueryResult } from "../protocol/messages.js";
import type { Schema } from "../protocol/schema.js";
import type { Database, DatabaseStatistics } from "../runtime/embedded.js";
import type { GatewayDatabase } from "./server.js";

/** The writer, as a read worker reaches it. Each call resolves after the writer answered and the worker refreshed. */
export interface WriterLink {
  /**
   * Runs a `/v2/query` body on the writer: its answer as JSON text of the result (`stringifyJson`, IDs as JsonId's
   * JSON image), which `stringifyAnswer` writes again as the very bytes the writer's own route would answer.
   */
  runV2(tree: unknown): Promise<string>;
  /** Runs the project's QUERY `name` on the writer: the answer's JSON text (Database.queryJson). */
  queryJson(name: string, parameters: Readonly<Record<string, unknown>>): Promise<string>;
  /** The writer's index statuses: a worker's own may not yet know an index created after it opened. */
  indexStatuses(): Promise<IndexStatus[]>;
}

/** The transaction counts a worker reports: none, since it commits nothing (the writer reports its own). */
const NO_TRANSACTIONS: DatabaseStatistics = { transactions: { committed: 0, aborted: 0, commitAnomalies: 0 }, partitions: [] };

function refusedAsReadOnly(cause: unknown): boolean {
  return cause instanceof SilkError && cause.code === "read_only";
}

export class WorkerDatabase implements GatewayDatabase {
  constructor(
    private readonly local: Database,
    private readonly writer: WriterLink,
  ) {}

  get schema(): Schema | undefined {
    return this.local.schema;
  }

  get queries(): readonly CompiledQuery[] {
    return this.local.queries;
  }

  runV2(tree: unknown): Promise<QueryResult> {
    return this.local.runV2(tree).catch((cause: unknown) => {
      if (!refusedAsReadOnly(cause)) throw cause;
      // The JSON image of a result: plain values whose stringifyAnswer is the writer's answer, byte for byte.
      return this.writer.runV2(tree).then((text) => JSON.parse(text) as QueryResult);
    });
  }

  queryJson(name: string, parameters: Readonly<Record<string, unknown>>): Promise<string> {
    return this.local.queryJson(name, parameters).catch((cause: unknown) => {
      if (!refusedAsReadOnly(cause)) throw cause;
      return this.writer.queryJson(name, parameters);
    });
  }

  indexStatuses(): Promise<IndexStatus[]> {
    return this.writer.indexStatuses();
  }

  /** A worker commits nothing and reports no storage: the writer's figures join the workers' in the aggregate. */
  async statistics(): Promise<DatabaseStatistics> {
    return NO_TRANSACTIONS;
  }
}
