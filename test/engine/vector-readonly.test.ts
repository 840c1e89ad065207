/**
 * Vector search on a read-only handle (and any second process) while a writer commits: the reader's graphs follow the
 * per-index change counter in `meta` (node/indexes/vector-index.ts), so its SearchV sees vectors the writer added, updated and
 * dropped after the reader opened, an index the reader only knew as empty, a dimension the writer's first vector
 * fixed, and a writer in a child process. A read-only handle in the same process sees a commit one event-loop turn
 * late (docs/ISOLATION.md), hence the polls.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";

afterAll(removeTempDirs);

const REPO = fileURLToPath(new URL("../../", import.meta.url));

const SCHEMA = `
N::Doc {
    VECTOR INDEX(dimension: 2, metric: euclidean) embedding: [F32],
    title: String,
}
V::Note { text: String }

QUERY AddDoc(title: String, embedding: [F32]) =>
    d <- AddN<Doc>({title: title, embedding: embedding})
    RETURN d
QUERY MoveDoc(doc: ID, embedding: [F32]) =>
    d <- N<Doc>(doc)::UPDATE({embedding: embedding})
    RETURN d
QUERY DropDoc(doc: ID) =>
    DROP N<Doc>(doc)
    RETURN "dropped"
QUERY Near(v: [F32], k: I64) =>
    docs <- SearchV<Doc>(v, k)
    RETURN docs
QUERY AddNote(v: [F64], text: String) =>
    n <- AddV<Note>(v, {text: text})
    RETURN n
QUERY NearNotes(v: [F64], k: I64) =>
    n <- SearchV<Note>(v, k)
    RETURN n
`;

type Row = Record<string, unknown> & { id: string };

const opened: Database[] = [];
afterEach(async () => {
  // Readers first: the writer's close releases the directory's writer lock.
  for (const db of opened.splice(0).reverse()) await db.close();
});

async function openDb(directory: string, mode: "writer" | "readonly"): Promise<Database> {
  const db = await Database.open({ storage: { disk: directory }, mode, schema: SCHEMA });
  opened.push(db);
  return db;
}

async function titles(db: Database, v: number[], k = 10): Promise<string[]> {
  return ((await db.query("Near", { v, k })) as { docs: Row[] }).docs.map((doc) => doc.title as string);
}

async function notes(db: Database, v: number[]): Promise<string[]> {
  return ((await db.query("NearNotes", { v, k: 10 })) as { n: Row[] }).n.map((note) => note.text as string);
}

async function addDoc(db: Database, title: string, embedding: number[]): Promise<string> {
  return ((await db.query("AddDoc", { title, embedding })) as { d: Row }).d.id;
}

function poll<T>(read: () => Promise<T>) {
  return expect.poll(read, { timeout: 5_000, interval: 10 });
}

describe("vector search on a read-only handle", () => {
  it("sees the writer's added, updated and dropped vectors, nearest first", async () => {
    const directory = tempDir("silk-vreadonly-");
    const writer = await openDb(directory, "writer");
    const a = await addDoc(writer, "a", [0, 0]);
    const reader = await openDb(directory, "readonly");
    expect(await titles(reader, [0, 0])).toEqual(["a"]);

    // Added after the reader built its graphs at open.
    await addDoc(writer, "b", [1, 0]);
    const c = await addDoc(writer, "c", [5, 5]);
    await poll(() => titles(reader, [0.9, 0])).toEqual(["b", "a", "c"]);

    // Updated: c moves next to the query.
    await writer.query("MoveDoc", { doc: c, embedding: [0.9, 0.1] });
    await poll(() => titles(reader, [0.9, 0])).toEqual(["c", "b", "a"]);

    // Dropped.
    await writer.query("DropDoc", { doc: a });
    await poll(() => titles(reader, [0, 0])).toEqual(["c", "b"]);
    const hits = ((await reader.query("Near", { v: [0.9, 0.1], k: 1 })) as { docs: Row[] }).docs;
    expect(hits.map((hit) => [hit.title, hit.$distance])).toEqual([["c", 0]]);

    // The reader still refuses writes and a query of another dimension, and agrees with the writer.
    await expectCode(reader.query("AddDoc", { title: "x", embedding: [1, 1] }), "read_only");
    await expectCode(reader.query("Near", { v: [1, 2, 3], k: 1 }), "vector_dimension_mismatch");
    expect(await titles(reader, [3, 3])).toEqual(await titles(writer, [3, 3]));
  });

  it("sees an index that was empty when it opened, with the dimension the writer's first vector fixed", async () => {
    const directory = tempDir("silk-vreadonly-");
    const writer = await openDb(directory, "writer");
    const reader = await openDb(directory, "readonly");
    expect(await notes(reader, [1, 0, 0])).toEqual([]);
    await writer.query("AddNote", { v: [1, 0, 0], text: "x" });
    await writer.query("AddNote", { v: [0, 1, 0], text: "y" });
    await poll(() => notes(reader, [0.1, 1, 0])).toEqual(["y", "x"]);
    await expectCode(reader.query("NearNotes", { v: [1, 0], k: 1 }), "vector_dimension_mismatch");
    expect(await notes(reader, [1, 0.1, 0])).toEqual(["x", "y"]);
  });

  it("sees vectors a writer in another process committed", async () => {
    const directory = tempDir("silk-vreadonly-");
    const setup = await Database.open({ storage: { disk: directory }, schema: SCHEMA });
    await addDoc(setup, "local", [0, 0]);
    await setup.close();
    const reader = await openDb(directory, "readonly");
    expect(await titles(reader, [0, 0])).toEqual(["local"]);

    const script = `
      const { Database } = await import(${JSON.stringify(`${REPO}runtime/embedded.ts`)});
      const db = await Database.open({ storage: { disk: ${JSON.stringify(directory)} }, schema: ${JSON.stringify(SCHEMA)} });
      const far = await db.query("AddDoc", { title: "far", embedding: [9, 9] });
      await db.query("AddDoc", { title: "near", embedding: [0.5, 0] });
      await db.query("MoveDoc", { doc: far.d.id, embedding: [0.2, 0] });
      await db.close();
    `;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: REPO, stdio: ["ignore", "ignore", "pipe"] });
    let errors = "";
    child.stderr.on("data", (data: Buffer) => (errors += data.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(errors).toBe("");
    expect(code).toBe(0);
    await poll(() => titles(reader, [0.3, 0])).toEqual(["far", "near", "local"]);
  }, 20_000);

  it("searches a runtime index the writer created after the reader opened", async () => {
    const directory = tempDir("silk-vreadonly-");
    const writer = await openDb(directory, "writer");
    await addDoc(writer, "graph databases", [0, 0]);
    const reader = await openDb(directory, "readonly");
    const search = () =>
      reader.run({
        request_type: "read",
        query: { read: { entries: [{ query: { name: "hits", root: { text_search_nodes: { label: "Doc", property: "title", query: { value: { string: "graph" } }, k: { value: { i64: 5 } } } } } }], returns: ["hits"] } },
      });
    await expectCode(search(), "index_not_found");
    await writer.run({
      request_type: "write",
      query: { write: { entries: [{ query: { name: "op", root: { create_index: { label: "Doc", property: "title", type: "text" } } } }], returns: ["op"] } },
    });
    await poll(async () => {
      try {
        return ((await search()) as { hits: Row[] }).hits.map((hit) => hit.title);
      } catch (error) {
        return (error as { code?: string }).code;
      }
    }).toEqual(["graph databases"]);
  });
});
