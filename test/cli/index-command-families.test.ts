/**
 * `silk index` for vector and text indexes (bin/index-command.ts), in the test's process on a real LMDB directory:
 * the flags parsed by the commander declarations of addIndexOptions, then runIndexCommand. Vector and text indexes
 * created at run time over existing data become active under `status --watch` and answer searches; status lines
 * carry each index's family and options; every option of another family or action is `invalid_option` before the
 * database opens, and the catalog's refusals leave the indexes and data as they were.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runIndexCommand, type IndexCommandOptions } from "../../bin/index-command.js";
import { addIndexOptions, type IndexAction } from "../../bin/index-options.js";
import { Database } from "../../runtime/embedded.js";
import { asSilkError } from "../../protocol/errors.js";
import { removeTemporaryDirectories, temporaryDirectory } from "./helpers.js";

afterAll(removeTemporaryDirectories);

const SCHEMA = "N::Doc { body: String, tenant_id: String, embedding: [F32], age: I64 }\nV::Chunk { text: String }\n";
/** Over one build chunk (2,000 records), so a build is still constructing when `create` returns. */
const DOCS = 2_500;
const WORDS = ["graph", "vector", "search", "ranking", "database", "index"];

type Line = Record<string, unknown>;
interface Outcome {
  readonly lines: Line[];
  readonly stderr: string;
  readonly error?: { code: string; message: string };
}

let data = "";
let schema = "";

/** Parses `args` with the action's commander declarations, as bin/silk.ts does, and runs the command. */
async function silkIndex(action: IndexAction, args: readonly string[]): Promise<Outcome> {
  const command = addIndexOptions(new Command(action).requiredOption("--data <dir>").requiredOption("--schema <path>"), action).exitOverride();
  command.parse(["--data", data, "--schema", schema, ...args], { from: "user" });
  return run(action, command.opts<IndexCommandOptions>());
}

async function run(action: IndexAction, options: IndexCommandOptions): Promise<Outcome> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  let error: Outcome["error"];
  try {
    await runIndexCommand(action, options, { stdout, stderr });
  } catch (cause) {
    const silk = asSilkError(cause);
    error = { code: silk.code, message: silk.message };
  }
  await new Promise((resume) => setImmediate(resume));
  const lines = out.trim().split("\n").filter(Boolean).map((line) => operationNamed(JSON.parse(line) as Line & { operation_id?: unknown }));
  return { lines, stderr: err, ...(error === undefined ? {} : { error }) };
}

/**
 * The answer of an index operation (create, drop, retry, abort) names the operation (HelixDB v3's operation_id, a
 * UUID), status lines do not; the rest is what the tests compare.
 */
function operationNamed({ operation_id: operationId, ...line }: Line & { operation_id?: unknown }): Line {
  if (operationId !== undefined) expect(operationId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  return line as Line;
}

async function refused(action: IndexAction, args: readonly string[], code: string, message: RegExp): Promise<void> {
  const outcome = await silkIndex(action, args);
  expect(outcome.error, args.join(" ")).toEqual({ code, message: expect.stringMatching(message) });
  expect(outcome.lines).toEqual([]);
}

async function read(root: unknown): Promise<Record<string, unknown>[]> {
  const db = await Database.open({ storage: { disk: data }, mode: "readonly" });
  try {
    const result = await db.run({ request_type: "read", query: { read: { entries: [{ query: { name: "hits", root } }], returns: ["hits"] } } });
    return result.hits as Record<string, unknown>[];
  } finally {
    await db.close();
  }
}

const countDocs = async (): Promise<unknown> => read({ count: { input: { has_label: { input: { nodes: { reference: "all" } }, label: "Doc" } } } });

beforeAll(async () => {
  const dir = temporaryDirectory();
  data = join(dir, "db");
  schema = join(dir, "schema.hx");
  writeFileSync(schema, SCHEMA);
  const db = await Database.open({ storage: { disk: data }, schema: SCHEMA });
  for (let first = 0; first < DOCS; first += 1_000) {
    const entries = Array.from({ length: Math.min(1_000, DOCS - first) }, (_, offset) => {
      const i = first + offset;
      const properties = [
        ["body", { value: { string: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} doc${i}` } }],
        ["tenant_id", { value: { string: i % 2 === 0 ? "even" : "odd" } }],
        ["embedding", { value: { f32_array: [i % 7, i % 11, 1] } }],
        ["age", { value: { i64: i % 50 } }],
      ];
      return { query: { root: { add_n: { label: "Doc", properties } } } };
    });
    await db.run({ request_type: "write", query: { write: { entries, returns: [] } } });
  }
  await db.close();
}, 60_000);

describe("silk index create for vector and text indexes", () => {
  it("builds a vector and a text index over existing data; status --watch ends with both active; they answer searches", async () => {
    const vector = await silkIndex("create", ["--label", "Doc", "--property", "embedding", "--type", "vector", "--metric", "euclidean", "--dimension", "3"]);
    expect(vector.error).toBeUndefined();
    expect(vector.lines).toEqual([
      { index: "Doc.embedding", kind: "node", family: "vector", metric: "euclidean", dimension: 3, state: "constructing", entities: 0, bytes: 0, operations: 0 },
    ]);
    const text = await silkIndex("create", ["--label", "Doc", "--property", "body", "--type", "text", "--analyzer", "standard_stem_en", "--positions", "--tenant", "tenant_id"]);
    expect(text.error).toBeUndefined();
    expect(text.lines).toEqual([
      { index: "Doc.body", kind: "node", family: "text", analyzer: "standard_stem_en", positions: true, tenant: "tenant_id", state: "constructing", entities: 0, bytes: 0, operations: 0 },
    ]);

    const watched = await silkIndex("status", ["--watch"]);
    expect(watched.error).toBeUndefined();
    expect(watched.stderr).toMatch(/Doc\.(embedding|body) constructing: \d+ entities, \d+ bytes, \d+ operations/);
    expect(watched.lines).toContainEqual(expect.objectContaining({ index: "Doc.embedding", family: "vector", metric: "euclidean", dimension: 3, state: "active", entities: DOCS }));
    expect(watched.lines).toContainEqual(expect.objectContaining({ index: "Doc.body", family: "text", analyzer: "standard_stem_en", positions: true, tenant: "tenant_id", state: "active", entities: DOCS }));
    // The V:: type's own vector index, declared by the schema: cosine, its dimension not fixed (no vector yet).
    expect(watched.lines).toContainEqual({ index: "Chunk.$vector", kind: "vector", family: "vector", metric: "cosine", state: "active", entities: 0, bytes: 0, operations: 0 });

    const one = await silkIndex("status", ["--label", "Doc", "--property", "body"]);
    expect(one.lines).toEqual([expect.objectContaining({ index: "Doc.body", kind: "node", family: "text", tenant: "tenant_id", state: "active" })]);

    const near = await read({ vector_search_nodes: { label: "Doc", property: "embedding", query: { value: { f32_array: [3, 5, 1] } }, k: { value: { i64: 4 } } } });
    expect(near).toHaveLength(4);
    // i % 7 = 3 and i % 11 = 5: i = 38 + 77n, 33 of them below 2,500, all at distance 0.
    for (const hit of near) expect(hit).toEqual(expect.objectContaining({ embedding: [3, 5, 1], $distance: 0 }));
    const matches = await read({ text_search_nodes: { label: "Doc", property: "body", query: { value: { string: "doc38" } }, k: { value: { i64: 5 } }, tenant_value: { value: { string: "even" } } } });
    expect(matches).toEqual([expect.objectContaining({ body: expect.stringMatching(/ doc38$/), tenant_id: "even" })]);
    const otherTenant = await read({ text_search_nodes: { label: "Doc", property: "body", query: { value: { string: "doc38" } }, k: { value: { i64: 5 } }, tenant_value: { value: { string: "odd" } } } });
    expect(otherTenant).toEqual([]);
  }, 60_000);

  it("a vector build over vectors of another length ends blocked under status --watch", async () => {
    const dropped = await silkIndex("drop", ["--label", "Doc", "--property", "embedding"]);
    expect(dropped.lines).toEqual([expect.objectContaining({ index: "Doc.embedding", state: "dropped" })]);
    const created = await silkIndex("create", ["--label", "Doc", "--property", "embedding", "--type", "vector", "--dimension", "4"]);
    expect(created.lines).toEqual([expect.objectContaining({ index: "Doc.embedding", family: "vector", metric: "cosine", dimension: 4 })]);
    const watched = await silkIndex("status", ["--watch"]);
    expect(watched.error).toBeUndefined();
    expect(watched.lines).toContainEqual(expect.objectContaining({ index: "Doc.embedding", state: "blocked", reason: "vector_dimension_mismatch" }));
    const gone = await silkIndex("drop", ["--label", "Doc", "--property", "embedding"]);
    expect(gone.lines).toEqual([expect.objectContaining({ index: "Doc.embedding", state: "dropped" })]);
  }, 60_000);

  it("--vector-type targets a V:: type: its own vector by default, or a field", async () => {
    const own = await silkIndex("create", ["--vector-type", "--label", "Chunk"]);
    expect(own.lines).toEqual([expect.objectContaining({ index: "Chunk.$vector", kind: "vector", family: "vector", metric: "cosine", state: "active" })]);
    const same = await silkIndex("create", ["--vector-type", "--label", "Chunk", "--property", "$vector", "--type", "vector", "--metric", "cosine"]);
    expect(same.lines).toEqual(own.lines);
    await refused("create", ["--vector-type", "--label", "Chunk", "--metric", "euclidean"], "index_definition_conflict", /Chunk\.\$vector is already indexed/);
    const text = await silkIndex("create", ["--vector-type", "--label", "Chunk", "--property", "text", "--type", "text"]);
    expect(text.lines).toEqual([{ index: "Chunk.text", kind: "vector", family: "text", analyzer: "standard", positions: false, state: "active", entities: 0, bytes: 0, operations: 0 }]);
    const status = await silkIndex("status", ["--vector-type", "--label", "Chunk"]);
    expect(status.lines).toEqual(own.lines);
    const dropped = await silkIndex("drop", ["--vector-type", "--label", "Chunk", "--property", "text"]);
    expect(dropped.lines).toEqual([expect.objectContaining({ index: "Chunk.text", kind: "vector", state: "dropped" })]);
  }, 60_000);

  it("refuses options of another family or action, and bad values, with invalid_option before opening", async () => {
    const before = (await silkIndex("status", [])).lines;
    const create = (...rest: string[]): string[] => ["--label", "Doc", "--property", "age", ...rest];
    await refused("create", create("--type", "vector", "--analyzer", "standard"), "invalid_option", /^--analyzer does not go with --type vector: a vector index takes --metric, --dimension, --tenant only$/);
    await refused("create", create("--type", "vector", "--positions"), "invalid_option", /^--positions does not go with --type vector/);
    await refused("create", create("--type", "text", "--metric", "cosine", "--dimension", "3"), "invalid_option", /^--metric, --dimension do not go with --type text: a text index takes --analyzer, --positions, --tenant only$/);
    await refused("create", create("--type", "range", "--tenant", "tenant_id"), "invalid_option", /^--tenant does not go with --type range: a range index takes no options$/);
    await refused("create", create("--metric", "cosine"), "invalid_option", /^--metric needs --type vector$/);
    await refused("create", create("--analyzer", "standard"), "invalid_option", /^--analyzer needs --type text$/);
    await refused("create", create("--tenant", "tenant_id"), "invalid_option", /^--tenant needs --type vector or text$/);
    await refused("create", create("--unique", "--type", "vector"), "invalid_option", /^--unique does not go with --type vector/);
    await refused("create", create("--unique", "--type", "equality"), "invalid_option", /^--unique does not go with --type equality/);
    await refused("create", create("--type", "bitmap"), "invalid_option", /^--type must be one of equality, range, unique, vector, text, not "bitmap"$/);
    await refused("create", create("--type", "vector", "--metric", "chebyshev"), "invalid_option", /^--metric must be one of cosine, euclidean, manhattan/);
    await refused("create", create("--type", "text", "--analyzer", "klingon"), "invalid_option", /^--analyzer must be one of standard, standard_stem_en, whitespace_lowercase/);
    for (const dimension of ["0", "-3", "3.5", "x", "1e3", ""]) {
      await refused("create", create("--type", "vector", "--dimension", dimension), "invalid_option", /^--dimension must be a positive integer/);
    }
    await refused("create", ["--edge", "--vector-type", "--label", "Chunk"], "invalid_option", /--edge and --vector-type/);
    // Options of `create` on another action (commander does not declare them there; the command still refuses them).
    for (const action of ["drop", "status", "retry", "abort"] as const) {
      const outcome = await run(action, { data, schema, label: "Doc", property: "age", type: "vector", metric: "cosine" });
      expect(outcome.error).toEqual({ code: "invalid_option", message: "--type, --metric go with `silk index create` only" });
    }
    const unique = await run("drop", { data, schema, label: "Doc", property: "age", unique: true });
    expect(unique.error).toEqual({ code: "invalid_option", message: "--unique goes with `silk index create` only" });
    expect(() => addIndexOptions(new Command("drop"), "drop").exitOverride().configureOutput({ writeErr: () => {} }).parse(["--type", "vector"], { from: "user" })).toThrow(/unknown option '--type'/);
    expect((await silkIndex("status", [])).lines).toEqual(before);
  }, 60_000);

  it("the catalog's refusals of a field or tenant the family does not take leave indexes and data as they were", async () => {
    const before = (await silkIndex("status", [])).lines;
    await refused("create", ["--label", "Doc", "--property", "body", "--type", "vector"], "invalid_field", /Doc\.body is String: a vector index takes \[F32\], \[F64\] or \[I64\]/);
    await refused("create", ["--label", "Doc", "--property", "age", "--type", "text"], "invalid_field", /Doc\.age is I64: a text index takes String or \[String\]/);
    await refused("create", ["--label", "Doc", "--property", "embedding", "--type", "vector", "--tenant", "owner"], "invalid_field", /declares no top-level field owner/);
    await refused("create", ["--label", "Doc", "--property", "embedding", "--type", "text"], "invalid_field", /a text index takes String/);
    await refused("create", ["--label", "Doc", "--property", "embedding", "--type", "vector", "--dimension", "70000"], "malformed_tree", /dimension: expected an integer from 1 to 65536/);
    await refused("create", ["--label", "Doc", "--property", "body", "--type", "text", "--analyzer", "standard"], "index_definition_conflict", /Doc\.body is already indexed/);
    expect((await silkIndex("status", [])).lines).toEqual(before);
    expect(await countDocs()).toBe(DOCS);
  }, 60_000);
});
