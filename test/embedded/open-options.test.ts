/**
 * `open()` refuses bad options with `invalid_option` and a message naming the option, before it touches any file:
 * a caller's typo must never surface as a TypeError from inside the schema checker or LMDB.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { open, type OpenOptions } from "../../index.js";

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** Options as a caller without types might pass them (JavaScript, JSON config). */
const loose = (options: unknown): OpenOptions => options as OpenOptions;

describe("open() options", () => {
  const refused: [string, unknown, RegExp][] = [
    ["no object", undefined, /options object/],
    ["an unknown key", { storage: "memory", storag: "memory" }, /unknown option "storag"/],
    ["a gateway option", { storage: "memory", apiKey: "k" }, /gateway/],
    ["storage of another shape", { storage: { path: "/tmp/x" } }, /storage must be/],
    ["an empty disk directory", { storage: { disk: "" } }, /storage must be/],
    ["an unknown mode", { storage: "memory", mode: "write" }, /mode must be/],
    ["an embedder without embed()", { storage: "memory", embedder: {} }, /embedder must be/],
    ["a read-only memory database", { storage: "memory", mode: "readonly" }, /cannot be opened read-only/],
    ["an unknown cache option", { storage: "memory", cache: { size: 1 } }, /unknown cache option "size"/],
    ["a map size under 1 MiB", { storage: "memory", cache: { mapSizeBytes: 1000 } }, /at least 1 MiB/],
    ["a schema object without text", { storage: "memory", schema: { "schema.hx": "N::User { name: String }" } }, /schema must be/],
    ["a schema list with a bad member", { storage: "memory", schema: [{ file: "a.hx", text: "N::A {}" }, { file: "b.hx" }] }, /schema must be/],
    ["a schema that is a number", { storage: "memory", schema: 42 }, /schema must be/],
  ];
  for (const [name, options, message] of refused) {
    it(`refuses ${name} with invalid_option`, async () => {
      await expect(open(loose(options))).rejects.toMatchObject({ code: "invalid_option", message: expect.stringMatching(message) });
    });
  }

  it("writes nothing on disk when it refuses a bad schema option", async () => {
    const directory = mkdtempSync(join(tmpdir(), "silk-open-options-"));
    directories.push(directory);
    await expect(open(loose({ storage: { disk: directory }, schema: { text: "N::A {}" } }))).rejects.toMatchObject({ code: "invalid_option" });
    expect(readdirSync(directory)).toEqual([]);
  });

  it("refuses a writer without a schema on a database that has one, and keeps its indexes", async () => {
    const directory = mkdtempSync(join(tmpdir(), "silk-open-options-"));
    directories.push(directory);
    const schema = "N::User { UNIQUE INDEX handle: String }\nQUERY Add(h: String) => u <- AddN<User>({handle: h}) RETURN u";
    let db = await open({ storage: { disk: directory }, schema });
    await db.query("Add", { h: "ann" });
    await db.close();
    await expect(open({ storage: { disk: directory } })).rejects.toMatchObject({ code: "invalid_option", message: expect.stringContaining("holds a database with a schema (version 1)") });
    // The refused open dropped nothing: the index is still built (a dropped one would be constructing again).
    db = await open({ storage: { disk: directory }, schema });
    expect(db.indexes()).toEqual([expect.objectContaining({ name: "User.handle", unique: true, state: "active" })]);
    await expect(db.query("Add", { h: "ann" })).rejects.toMatchObject({ code: "unique_violation" });
    await db.close();
    // A schemaless database takes a writer without a schema, and one with a schema later.
    const schemaless = mkdtempSync(join(tmpdir(), "silk-open-options-"));
    directories.push(schemaless);
    await (await open({ storage: { disk: schemaless } })).close();
    await (await open({ storage: { disk: schemaless } })).close();
    await (await open({ storage: { disk: schemaless }, schema })).close();
  });

  it("takes each accepted schema form", async () => {
    for (const schema of ["N::A { name: String }", { file: "a.hx", text: "N::A { name: String }" }, [{ file: "a.hx", text: "N::A { name: String }" }, { file: "b.hx", text: "N::B { n: I32 }" }]]) {
      const db = await open({ storage: "memory", schema });
      await db.close();
    }
  });
});
