/**
 * `silk index` as a real process (bin/index-command.ts): create an index over existing data, then `status --watch`
 * holds the database while the build runs and ends when it is active; refusals exit 1 with the stable code.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { removeTemporaryDirectories, runSilk, temporaryDirectory } from "./helpers.js";

afterAll(removeTemporaryDirectories);

const SCHEMA = "N::User { UNIQUE INDEX handle: String, age: I64 }\n";
/** Over one build chunk (2,000 records), so the build is still constructing when `create` returns. */
const USERS = 3_000;
const BATCH_ENTRIES = 1_000;

/** Output lines, compared without the operation_id an index operation's answer carries (checked to be a UUID). */
const lines = (text: string): Record<string, unknown>[] =>
  text.trim().split("\n").filter(Boolean).map((line) => {
    const { operation_id: operationId, ...rest } = JSON.parse(line) as Record<string, unknown>;
    if (operationId !== undefined) expect(operationId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    return rest;
  });

describe("silk index", () => {
  it("creates an index over existing data; status --watch runs the build until it is active", async () => {
    const dir = temporaryDirectory();
    const data = join(dir, "db");
    const schema = join(dir, "schema.hx");
    writeFileSync(schema, SCHEMA);
    const db = await Database.open({ storage: { disk: data }, schema: SCHEMA });
    for (let first = 0; first < USERS; first += BATCH_ENTRIES) {
      const entries = Array.from({ length: BATCH_ENTRIES }, (_, i) => ({
        query: { root: { add_n: { label: "User", properties: [["handle", { value: { string: `h${first + i}` } }], ["age", { value: { i64: (first + i) % 50 } }]] } } },
      }));
      await db.run({ request_type: "write", query: { write: { entries, returns: [] } } });
    }
    await db.close();
    const base = ["--data", data, "--schema", schema];

    const created = await runSilk(["index", "create", ...base, "--label", "User", "--property", "age"]);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toHaveProperty("operation_id");
    expect(lines(created.stdout)).toEqual([{ index: "User.age", kind: "node", family: "secondary", unique: false, state: "constructing", entities: 0, bytes: 0, operations: 0 }]);

    const watched = await runSilk(["index", "status", ...base, "--watch"]);
    expect(watched.code).toBe(0);
    expect(watched.stderr).toMatch(/User\.age constructing: \d+ entities, \d+ bytes, \d+ operations/);
    expect(lines(watched.stdout)).toContainEqual(expect.objectContaining({ index: "User.age", state: "active", entities: USERS, operations: USERS }));
    expect(lines(watched.stdout)).toContainEqual(expect.objectContaining({ index: "User.handle", family: "secondary", unique: true, state: "active" }));

    const status = await runSilk(["index", "status", ...base, "--label", "User", "--property", "age"]);
    expect(lines(status.stdout)).toEqual([expect.objectContaining({ index: "User.age", family: "secondary", unique: false, state: "active" })]);

    const schemaDrop = await runSilk(["index", "drop", ...base, "--label", "User", "--property", "handle"]);
    expect(schemaDrop.code).toBe(1);
    expect(schemaDrop.stderr).toMatch(/^silk index: unsupported_operation: /);
    const missing = await runSilk(["index", "create", ...base, "--label", "User"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^silk index: invalid_option: /);

    const dropped = await runSilk(["index", "drop", ...base, "--label", "User", "--property", "age"]);
    expect(dropped.code).toBe(0);
    expect(lines(dropped.stdout)).toEqual([expect.objectContaining({ index: "User.age", state: "dropped", entities: USERS })]);
    const gone = await runSilk(["index", "status", ...base, "--label", "User", "--property", "age"]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^silk index: index_not_found: /);

    // Without --schema, a database that has one is refused, and its schema's indexes stay.
    const schemaless = await runSilk(["index", "status", "--data", data]);
    expect(schemaless.code).toBe(1);
    expect(schemaless.stderr).toMatch(/^silk index: invalid_option: .* holds a database with a schema \(version 1\): open it with its project's schema/);
    const after = await runSilk(["index", "status", ...base]);
    expect(lines(after.stdout)).toEqual([expect.objectContaining({ index: "User.handle", unique: true, state: "active" })]);
  }, 120_000);

  it("takes no --schema for a schemaless database", async () => {
    const data = join(temporaryDirectory(), "db");
    const db = await Database.open({ storage: { disk: data } });
    const entries = Array.from({ length: 20 }, (_, i) => ({ query: { root: { add_n: { label: "Doc", properties: [["n", { value: { i64: i } }]] } } } }));
    await db.run({ request_type: "write", query: { write: { entries, returns: [] } } });
    await db.close();
    const created = await runSilk(["index", "create", "--data", data, "--label", "Doc", "--property", "n", "--type", "range"]);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    expect(lines(created.stdout)).toEqual([expect.objectContaining({ index: "Doc.n", family: "secondary", unique: false })]);
    const watched = await runSilk(["index", "status", "--data", data, "--watch"]);
    expect(lines(watched.stdout)).toEqual([expect.objectContaining({ index: "Doc.n", state: "active", entities: 20 })]);
  }, 120_000);
});
