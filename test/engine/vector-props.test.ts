/**
 * Vector records read without their vectors (node/actor/vector-reads.ts): which plans may, that their answers are those of
 * whole reads, that the label-and-properties value beside each vector record follows every put, update and drop, that
 * a database written before those values existed still answers (each record is then read whole), and that code which
 * would render or compare a vector it did not read refuses loudly.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { open } from "lmdb";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { idToString } from "../../protocol/ids.js";
import { checkProject } from "../../protocol/helixql/query-check.js";
import { decodeRequest } from "../../protocol/tree.js";
import { VECTOR_NOT_LOADED } from "../../node/record-codec.js";
import { recordToJson } from "../../node/exec/streams.js";
import { vectorOfHit } from "../../node/exec/search.js";
import { readsVectorData } from "../../node/actor/vector-reads.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";
import { downgradeToFormat2 } from "./fixtures/format-2.js";
import type { Json } from "../helpers/tree.js";

afterAll(removeTempDirs);

const SCHEMA = `
V::Note(dimension: 3, metric: euclidean) { text: String, n: I64 }
N::Tag { name: String }
E::Tagged { From: Tag, To: Note }

QUERY AddNote(v: [F64], text: String, n: I64) =>
    note <- AddV<Note>(v, {text: text, n: n})
    RETURN note
QUERY SetText(note: ID, text: String) =>
    updated <- V<Note>(note)::UPDATE({text: text})
    RETURN updated
QUERY DropNote(note: ID) =>
    DROP V<Note>(note)
    RETURN "dropped"
QUERY NearTexts(v: [F64], k: I64) =>
    notes <- SearchV<Note>(v, k)
    RETURN notes::{text, n}
QUERY NearCount(v: [F64], k: I64) =>
    notes <- SearchV<Note>(v, k)
    RETURN notes::COUNT
QUERY NearIds(v: [F64], k: I64) =>
    notes <- SearchV<Note>(v, k)::WHERE(_::{n}::GT(0))
    RETURN notes::ID
QUERY NearWhole(v: [F64], k: I64) =>
    notes <- SearchV<Note>(v, k)
    RETURN notes
QUERY NearMmr(v: [F64], k: I64) =>
    notes <- SearchV<Note>(v, k)::RerankMMR(lambda: 0.5)
    RETURN notes::{text}
QUERY NearRrf(v: [F64], k: I64) =>
    notes <- SearchV<Note>(v, k)::RerankRRF
    RETURN notes::{text}
QUERY NoteById(id: ID) =>
    note <- V<Note>(id)
    RETURN note::{text}
QUERY WholeById(id: ID) =>
    note <- V<Note>(id)
    RETURN note
QUERY TaggedTexts(tag: ID) =>
    notes <- N<Tag>(tag)::Out<Tagged>
    RETURN notes::{text}
QUERY TaggedWhole(tag: ID) =>
    notes <- N<Tag>(tag)::Out<Tagged>
    RETURN notes
`;

const checked = checkProject({ file: "notes.hx", text: SCHEMA });

function planOf(name: string) {
  const query = checked.queries.find((candidate) => candidate.name === name);
  if (query?.tree === undefined) throw new Error(`no query ${name}`);
  return decodeRequest(query.tree);
}

describe("readsVectorData", () => {
  it("lets read plans that return only properties, IDs or counts of vector records skip their vectors", () => {
    expect(checked.diagnostics).toEqual([]);
    for (const name of ["NearTexts", "NearCount", "NearIds", "NearRrf", "NoteById", "TaggedTexts"]) {
      expect(readsVectorData(planOf(name)), name).toBe(false);
    }
  });

  it("reads vectors for plans that return records, compare vectors or write", () => {
    for (const name of ["NearWhole", "NearMmr", "WholeById", "TaggedWhole", "AddNote", "SetText", "DropNote"]) {
      expect(readsVectorData(planOf(name)), name).toBe(true);
    }
  });

  it("reads vectors when an expression renders a sub-traversal or a variable", () => {
    const plan = (root: Json) =>
      decodeRequest({ request_type: "read", query: { read: { entries: [{ query: { name: "r", root } }], returns: ["r"] } } });
    const notes = { vectors: { reference: "all" } };
    expect(readsVectorData(plan({ values: { input: notes, properties: ["text"] } }))).toBe(false);
    expect(readsVectorData(plan({ value_map: { input: notes } }))).toBe(true);
    expect(readsVectorData(plan({ project: { input: notes, projections: [{ expr: { alias: "all", expr: { traversal: { out: { input: "context" } } } } }] } }))).toBe(true);
    expect(readsVectorData(plan({ project: { input: notes, projections: [{ expr: { alias: "c", expr: { count: { traversal: { out: { input: "context" } } } } } }] } }))).toBe(false);
    expect(readsVectorData(plan({ fold: { input: notes } }))).toBe(true);
  });

  it("reads vectors when a step or expression reads $vector (HelixQL's implicit data field)", () => {
    const plan = (root: Json) =>
      decodeRequest({ request_type: "read", query: { read: { entries: [{ query: { name: "r", root } }], returns: ["r"] } } });
    const notes = { vectors: { reference: "all" } };
    expect(readsVectorData(plan({ project: { input: notes, projections: [{ expr: { alias: "data", expr: { property: "$vector" } } }] } }))).toBe(true);
    expect(readsVectorData(plan({ project: { input: notes, projections: [{ property: { source: "$vector", alias: "data" } }] } }))).toBe(true);
    expect(readsVectorData(plan({ values: { input: notes, properties: ["$vector"] } }))).toBe(true);
    expect(readsVectorData(plan({ value_map: { input: notes, properties: ["$vector"] } }))).toBe(true);
    expect(readsVectorData(plan({ count: { input: { where: { input: notes, predicate: { is_not_null: { property: "$vector" } } } } } }))).toBe(true);
    expect(readsVectorData(plan({ count: { input: { order_by: { input: notes, property: "$vector" } } } }))).toBe(true);
    expect(readsVectorData(plan({ project: { input: notes, projections: [{ expr: { alias: "d", expr: { property: "$distance" } } }] } }))).toBe(false);
  });
});

describe("vector records read without their vectors", () => {
  const opened: Database[] = [];
  afterEach(async () => {
    for (const db of opened.splice(0)) await db.close();
  });

  async function openDb(directory: string): Promise<Database> {
    const db = await Database.open({ storage: { disk: directory }, schema: SCHEMA });
    opened.push(db);
    return db;
  }

  async function addNotes(db: Database): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { note } = (await db.query("AddNote", { v: [i, i * 0.5, 1], text: `note ${i}`, n: i })) as { note: { id: string } };
      ids.push(note.id);
    }
    return ids;
  }

  type Whole = { id: string; text: string; n: number; data: number[] };

  it("answers as whole reads do, and whole reads still carry the vectors", async () => {
    const db = await openDb(tempDir());
    await addNotes(db);
    const v = [2.2, 1.1, 1];
    const whole = ((await db.query("NearWhole", { v, k: 4 })) as { notes: Whole[] }).notes;
    expect(whole.map((note) => note.data)).toEqual([[2, 1, 1], [3, 1.5, 1], [1, 0.5, 1], [4, 2, 1]]);
    expect(await db.query("NearTexts", { v, k: 4 })).toEqual({ notes: whole.map((note) => ({ text: note.text, n: note.n })) });
    expect(await db.query("NearCount", { v, k: 4 })).toEqual({ notes: 4 });
    expect(await db.query("NearIds", { v, k: 4 })).toEqual({ notes: whole.filter((note) => note.n > 0).map((note) => note.id) });
    // RerankMMR compares the hits' vectors, so its plan reads them whole.
    const mmr = ((await db.query("NearMmr", { v, k: 4 })) as { notes: { text: string }[] }).notes;
    expect(mmr.map((note) => note.text).sort()).toEqual(whole.map((note) => note.text).sort());
  });

  it("follows puts, updates and drops", async () => {
    const db = await openDb(tempDir());
    const ids = await addNotes(db);
    await db.query("SetText", { note: ids[2], text: "rewritten" });
    expect(await db.query("NoteById", { id: ids[2] })).toEqual({ note: { text: "rewritten" } });
    expect(((await db.query("WholeById", { id: ids[2] })) as { note: Whole }).note).toMatchObject({ text: "rewritten", data: [2, 1, 1] });
    await db.query("DropNote", { note: ids[2] });
    expect(await db.query("NoteById", { id: ids[2] })).toEqual({ note: null });
    const texts = ((await db.query("NearTexts", { v: [2, 1, 1], k: 6 })) as { notes: { text: string }[] }).notes.map((note) => note.text);
    expect(texts).toHaveLength(5);
    expect(texts).not.toContain("rewritten");
  });

  it("reads each record whole in a database written before the values apart existed", async () => {
    const directory = tempDir();
    const db = await openDb(directory);
    const ids = await addNotes(db);
    const tag = (await db.importBatch({ nodes: [{ label: "Tag", props: { name: "t" } }], edges: [] })).nodeIds[0];
    await db.importBatch({ nodes: [], edges: ids.slice(0, 3).map((id) => ({ label: "Tagged", from: { id: tag }, to: { id: BigInt(id) }, props: {} })) });
    const before = await db.query("NearTexts", { v: [2, 1, 1], k: 6 });
    await db.close();
    opened.splice(0);
    // What an older Silk left: the same records, and no `vector_props` entries.
    const env = open({ path: join(directory, "partitions", "p0"), maxDbs: 16 });
    const props = env.openDB({ name: "vector_props", keyEncoding: "binary", encoding: "binary" });
    expect([...props.getKeys()]).toHaveLength(6);
    await props.clearAsync();
    await env.close();
    const manifest = join(directory, "silk.json");
    expect(JSON.parse(readFileSync(manifest, "utf8"))).toEqual({ format: 3, partitions: 1 });
    // Format 1 also kept one adjacency entry per edge, as format 2 did.
    await downgradeToFormat2(directory);
    writeFileSync(manifest, JSON.stringify({ format: 1, partitions: 1 }));
    // A reader cannot read the old adjacency: it is sent to a writer, which converts the directory.
    await expectCode(Database.open({ storage: { disk: directory }, mode: "readonly", schema: SCHEMA }), "invalid_option");
    expect(JSON.parse(readFileSync(manifest, "utf8")).format).toBe(1); // a reader changes nothing
    const reopened = await openDb(directory);
    // A writer marks the directory as this format, so an older Silk, which would not keep the values, stays out.
    expect(JSON.parse(readFileSync(manifest, "utf8"))).toEqual({ format: 3, partitions: 1 });
    expect(await reopened.query("NearTexts", { v: [2, 1, 1], k: 6 })).toEqual(before);
    expect(await reopened.query("TaggedTexts", { tag: tag.toString() })).toEqual({ notes: [{ text: "note 0" }, { text: "note 1" }, { text: "note 2" }] });
    expect(((await reopened.query("TaggedWhole", { tag: tag.toString() })) as { notes: Whole[] }).notes.map((note) => note.data)).toEqual([[0, 0, 1], [1, 0.5, 1], [2, 1, 1]]);
  });

  it("refuses a directory of a data format it does not read", async () => {
    const directory = tempDir();
    await (await Database.open({ storage: { disk: directory } })).close();
    writeFileSync(join(directory, "silk.json"), JSON.stringify({ format: 4, partitions: 1 }));
    const error = await expectCode(Database.open({ storage: { disk: directory } }), "invalid_option");
    expect(error.message).toContain("holds data format 4; this Silk reads 1, 2 and 3");
  });

  it("refuses to render or compare a vector it did not read", async () => {
    const record = { kind: "vector" as const, id: 7n, label: "Note", vector: VECTOR_NOT_LOADED, props: { text: "x" } };
    await expectCode(() => recordToJson(record, idToString), "internal");
    await expectCode(() => vectorOfHit({ kind: "vector", id: 7n, record }), "internal");
    expect(recordToJson({ ...record, vector: Float64Array.of(1, 2) }, idToString)).toEqual({ $id: "7", $label: "Note", $vector: [1, 2], text: "x" });
  });
});
