/**
 * `silk index create|drop|status|retry|abort`: the index operations of the operation tree (docs/INDEXES.md) on a
 * database that no server holds. The command opens the database as its writer with the project's schema — the
 * schema is required, since a writer's open drops the indexes its schema does not declare (runtime indexes
 * excepted) — runs one index operation through `db.run`, prints its answer as one JSON line, and closes.
 *
 * A build runs while a writer holds the database: `silk index status --watch` is such a writer, printing a progress
 * line of the counters on stderr until every build is active or blocked, then one JSON line per index on stdout.
 */
import { Database } from "../cluster/embedded.js";
import { answerOf, type IndexAnswer } from "../cluster/index-operations.js";
import { SilkError } from "../protocol/errors.js";
import type { IndexStatus } from "../protocol/indexes.js";
import { loadSchemaSources } from "./schema-files.js";

export type IndexAction = "create" | "drop" | "status" | "retry" | "abort";

export interface IndexCommandOptions {
  readonly data: string;
  readonly schema: string;
  readonly label?: string;
  readonly property?: string;
  readonly unique?: boolean;
  readonly edge?: boolean;
  readonly watch?: boolean;
}

export interface IndexCommandIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream & { readonly isTTY?: boolean };
}

/** How often `status --watch` reads the counters. */
export const WATCH_INTERVAL_MS = 200;

const TREE_STEP: Record<Exclude<IndexAction, "status">, string> = {
  create: "create_index",
  drop: "drop_index",
  retry: "retry_index_operation",
  abort: "abort_index_operation",
};

/** Runs one `silk index` command; throws a SilkError on failure (the caller prints it and exits 1). */
export async function runIndexCommand(action: IndexAction, options: IndexCommandOptions, io: IndexCommandIo): Promise<void> {
  if (options.watch === true && action !== "status") throw new SilkError("invalid_option", "--watch goes with `silk index status` only");
  const target = options.label !== undefined || options.property !== undefined;
  if (action !== "status" || (target && options.watch !== true)) {
    if (options.label === undefined || options.property === undefined) throw new SilkError("invalid_option", `silk index ${action} needs --label and --property`);
  }
  if (options.unique === true && action !== "create") throw new SilkError("invalid_option", "--unique goes with `silk index create` only");
  const db = await Database.open({ storage: { disk: options.data }, schema: loadSchemaSources(options.schema) });
  try {
    if (options.watch === true) return await watch(db, io);
    if (action === "status" && !target) {
      for (const status of db.indexes()) io.stdout.write(`${JSON.stringify(answerOf(status))}\n`);
      return;
    }
    const kind = options.edge === true ? "edge" : "node";
    const body = { label: options.label, property: options.property, kind, ...(action === "create" ? { unique: options.unique === true } : {}) };
    const step = action === "status" ? "get_index_operation" : TREE_STEP[action];
    const result = await db.run({ request_type: "write", query: { write: { entries: [{ query: { name: "index", root: { [step]: body } } }], returns: ["index"] } } });
    io.stdout.write(`${JSON.stringify(result.index as IndexAnswer)}\n`);
  } finally {
    await db.close();
  }
}

function progressLine(statuses: readonly IndexStatus[]): string {
  return statuses
    .filter((status) => status.state === "constructing")
    .map((status) => `${status.name} constructing: ${status.entities} entities, ${status.bytes} bytes, ${status.operations} operations`)
    .join("; ");
}

/** Holds the database (so its builds run) until no index is constructing, showing the counters meanwhile. */
async function watch(db: Database, io: IndexCommandIo): Promise<void> {
  let shown = "";
  for (;;) {
    const statuses = db.indexes();
    const stalled = statuses.find((status) => status.state === "constructing" && status.message !== undefined);
    if (stalled !== undefined) throw new SilkError("storage_error", `the build of ${stalled.name} stopped: ${stalled.message}`);
    const line = progressLine(statuses);
    if (line === "") break;
    if (line !== shown) {
      // A terminal gets one line rewritten in place; a pipe or file gets a line per change.
      io.stderr.write(io.stderr.isTTY === true ? `\r\x1b[K${line}` : `${line}\n`);
      shown = line;
    }
    await new Promise((resume) => setTimeout(resume, WATCH_INTERVAL_MS));
  }
  if (shown !== "" && io.stderr.isTTY === true) io.stderr.write("\n");
  for (const status of db.indexes()) io.stdout.write(`${JSON.stringify(answerOf(status))}\n`);
}
