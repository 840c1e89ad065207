/**
 * `silk index create|drop|status|retry|abort`: the index operations of the operation tree (docs/INDEXES.md) on a
 * database that no server holds. The command opens the database as its writer with the project's schema (`--schema`;
 * a database that has one is refused without it, since a writer's open without it would drop the schema's
 * indexes; a schemaless database takes none), runs one index operation through `db.run`, prints its answer as one
 * JSON line, and closes.
 *
 * `create` chooses the family with `--type` (equality, range, unique: secondary; vector; text) and takes that
 * family's options only (vector: `--metric`, `--dimension`, `--tenant`; text: `--analyzer`, `--positions`,
 * `--tenant`); without `--type` it makes a secondary index (`--unique` as before), or a vector index over
 * `--property '$vector'`. An option of another family, an unknown value or a type option on another action is
 * `invalid_option` before the database opens. `--vector-type` targets a `V::` type (its own vector is `$vector`, the
 * default property then). Every line about an index that exists carries its family and options (from db.indexes()).
 *
 * A build runs while a writer holds the database: `silk index status --watch` is such a writer, printing a progress
 * line of the counters on stderr until every build is active or blocked, then one JSON line per index on stdout.
 */
import { Database } from "../runtime/embedded.js";
import { answerOf, type IndexAnswer } from "../cluster/index-receipts.js";
import { SilkError, unreachable } from "../protocol/errors.js";
import { TEXT_ANALYZERS, VECTOR_FIELD, VECTOR_METRICS, type IndexStatus } from "../protocol/indexes.js";
import type { RecordKind } from "../protocol/records.js";
import { loadSchemaSources } from "./schema-files.js";
import { INDEX_TYPES, type IndexAction, type IndexType } from "./index-options.js";

export interface IndexCommandOptions {
  readonly data: string;
  /** The project's .hx file or directory; absent for a schemaless database. */
  readonly schema?: string;
  readonly label?: string;
  readonly property?: string;
  readonly unique?: boolean;
  readonly edge?: boolean;
  /** The label is a `V::` type (kind `vector`). */
  readonly vectorType?: boolean;
  readonly watch?: boolean;
  readonly type?: string;
  readonly metric?: string;
  /** A positive integer, as typed on the command line or as a number. */
  readonly dimension?: string | number;
  readonly tenant?: string;
  readonly analyzer?: string;
  readonly positions?: boolean;
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
  if (options.edge === true && options.vectorType === true) throw new SilkError("invalid_option", "--edge and --vector-type name different kinds of type: give one");
  const property = options.property ?? (options.vectorType === true ? VECTOR_FIELD : undefined);
  const target = options.label !== undefined || options.property !== undefined;
  if (action !== "status" || (target && options.watch !== true)) {
    if (options.label === undefined || property === undefined) throw new SilkError("invalid_option", `silk index ${action} needs --label and --property`);
  }
  const spec = createSpec(action, options, property);
  const db = await Database.open({ storage: { disk: options.data }, ...(options.schema === undefined ? {} : { schema: loadSchemaSources(options.schema) }) });
  try {
    if (options.watch === true) return await watch(db, io);
    if (action === "status" && !target) {
      for (const status of db.indexes()) io.stdout.write(`${JSON.stringify(statusLine(status))}\n`);
      return;
    }
    const kind: RecordKind = options.edge === true ? "edge" : options.vectorType === true ? "vector" : "node";
    const body = { label: options.label, property, kind, ...spec };
    const step = action === "status" ? "get_index_operation" : TREE_STEP[action];
    const result = await db.run({ request_type: "write", query: { write: { entries: [{ query: { name: "index", root: { [step]: body } } }], returns: ["index"] } } });
    const answer = result.index as IndexAnswer;
    const status = db.indexes().find((candidate) => candidate.kind === answer.kind && candidate.name === answer.index);
    io.stdout.write(`${JSON.stringify(status === undefined ? answer : withFamily(answer, status))}\n`);
  } finally {
    await db.close();
  }
}

const FAMILY_OPTIONS = ["metric", "dimension", "tenant", "analyzer", "positions"] as const;
const TYPE_OPTIONS: Readonly<Record<IndexType, readonly (typeof FAMILY_OPTIONS)[number][]>> = {
  equality: [], range: [], unique: [],
  vector: ["metric", "dimension", "tenant"],
  text: ["analyzer", "positions", "tenant"],
};

/**
 * `create_index`'s type and options (protocol/tree-indexes.ts) from the flags, checked here so that a flag of
 * another family or action is refused by name; {} for the other actions. The tree decoder and the catalog check the
 * rest (a dimension's upper bound, a tenant field the type declares, a field of a type the family indexes).
 */
function createSpec(action: IndexAction, options: IndexCommandOptions, property: string | undefined): Record<string, unknown> {
  const flag = (name: string): string => `--${name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
  const given = FAMILY_OPTIONS.filter((name) => options[name] !== undefined && options[name] !== false);
  if (action !== "create") {
    const misplaced = [...(options.type === undefined ? [] : ["type"]), ...(options.unique === true ? ["unique"] : []), ...given];
    if (misplaced.length > 0) throw new SilkError("invalid_option", `${misplaced.map(flag).join(", ")} go${misplaced.length === 1 ? "es" : ""} with \`silk index create\` only`);
    return {};
  }
  if (options.type !== undefined && !(INDEX_TYPES as readonly string[]).includes(options.type)) {
    throw new SilkError("invalid_option", `--type must be one of ${INDEX_TYPES.join(", ")}, not ${JSON.stringify(options.type)}`);
  }
  const type = (options.type as IndexType | undefined) ?? (options.unique === true ? "unique" : property === VECTOR_FIELD ? "vector" : undefined);
  if (options.unique === true && type !== "unique") throw new SilkError("invalid_option", `--unique does not go with --type ${type}: a UNIQUE index is --type unique`);
  const foreign = given.filter((name) => !TYPE_OPTIONS[type ?? "equality"].includes(name));
  if (foreign.length > 0) {
    const belongs = (name: (typeof FAMILY_OPTIONS)[number]): string => (name === "tenant" ? "vector or text" : TYPE_OPTIONS.vector.includes(name) ? "vector" : "text");
    if (type === undefined) throw new SilkError("invalid_option", `${flag(foreign[0])} needs --type ${belongs(foreign[0])}`);
    const allowed = TYPE_OPTIONS[type].length === 0 ? "takes no options" : `takes ${TYPE_OPTIONS[type].map(flag).join(", ")} only`;
    throw new SilkError("invalid_option", `${foreign.map(flag).join(", ")} do${foreign.length === 1 ? "es" : ""} not go with --type ${type}: a ${type} index ${allowed}`);
  }
  if (options.metric !== undefined && !(VECTOR_METRICS as readonly string[]).includes(options.metric)) {
    throw new SilkError("invalid_option", `--metric must be one of ${VECTOR_METRICS.join(", ")}, not ${JSON.stringify(options.metric)}`);
  }
  if (options.analyzer !== undefined && !(TEXT_ANALYZERS as readonly string[]).includes(options.analyzer)) {
    throw new SilkError("invalid_option", `--analyzer must be one of ${TEXT_ANALYZERS.join(", ")}, not ${JSON.stringify(options.analyzer)}`);
  }
  if (type === undefined) return { unique: false };
  return {
    type,
    ...(options.metric === undefined ? {} : { metric: options.metric }),
    ...(options.dimension === undefined ? {} : { dimension: dimensionOf(options.dimension) }),
    ...(options.tenant === undefined ? {} : { tenant_property: options.tenant }),
    ...(options.analyzer === undefined ? {} : { analyzer: options.analyzer }),
    ...(options.positions === true ? { positions: true } : {}),
  };
}

function dimensionOf(text: string | number): number {
  const value = typeof text === "number" ? text : /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < 1) throw new SilkError("invalid_option", `--dimension must be a positive integer, not ${JSON.stringify(text)}`);
  return value;
}

/** A `status` line of db.indexes(): the index operations' answer with the index's family and options. */
function statusLine(status: IndexStatus): Record<string, unknown> {
  return withFamily(answerOf(status), status);
}

/** `{"index", "kind", "family", <options>, "state", ...counters}`: the family's options as db.indexes() holds them. */
function withFamily(answer: IndexAnswer, status: IndexStatus): Record<string, unknown> {
  const { index, kind, ...rest } = answer;
  const tenant = status.family !== "secondary" && status.tenant !== undefined ? { tenant: status.tenant } : {};
  switch (status.family) {
    case "secondary":
      return { index, kind, family: "secondary", unique: status.unique, ...rest };
    case "vector":
      return { index, kind, family: "vector", metric: status.metric, ...(status.dimension === undefined ? {} : { dimension: status.dimension }), ...tenant, ...rest };
    case "text":
      return { index, kind, family: "text", analyzer: status.analyzer, positions: status.positions, ...tenant, ...rest };
    default:
      return unreachable(status, "index family");
  }
}

function progressLine(statuses: readonly IndexStatus[]): string {
  return statuses
    .filter((status) => status.state === "constructing" || status.state === "validating")
    .map((status) => `${status.name} ${status.state}: ${status.entities} entities, ${status.bytes} bytes, ${status.operations} operations`)
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
  for (const status of db.indexes()) io.stdout.write(`${JSON.stringify(statusLine(status))}\n`);
}
