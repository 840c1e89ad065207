/**
 * Values are checked where they enter, on every backend: `array`/`object` literals, parameters and imported
 * properties nest at most VALUE_DEPTH_MAX deep (10,000 deep used to overflow the stack: `internal`), and a string
 * with a lone UTF-16 surrogate is refused (it used to be stored as U+FFFD, so two different strings became one, in a
 * UNIQUE index too). Each refusal is `invalid_value` and leaves the data as it was.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ImportBatch } from "../../cluster/bulk-import.js";
import { VALUE_DEPTH_MAX } from "../../protocol/limits.js";
import { BACKENDS, TestDatabase, expectCode, expectRefused, ids, removeTempDirs, snapshot } from "../helpers/engine.js";
import { addN, nodesById, param, readOne, update, writeOne, type Json } from "../helpers/tree.js";

afterAll(removeTempDirs);

const SCHEMA = `
N::User { UNIQUE INDEX name: String, INDEX city: String }
QUERY AddUser(name: String) => u <- AddN<User>({name: name}) RETURN u
`;

/** A tagged literal `{"array": [{"array": [... "x" ...]}]}` (or `object`) of `depth` levels. */
function nestedLiteral(depth: number, tag: "array" | "object"): Json {
  let value: Json = { string: "x" };
  for (let i = 0; i < depth; i += 1) value = tag === "array" ? { array: [value] } : { object: { k: value } };
  return value;
}

/** The plain JSON value `[[... "x" ...]]` (or `{"k": {...}}`) of `depth` levels. */
function nestedJson(depth: number, tag: "array" | "object"): Json {
  let value: Json = "x";
  for (let i = 0; i < depth; i += 1) value = tag === "array" ? [value] : { k: value };
  return value;
}

/** A write of one schemaless node whose property `v` is the given tagged literal, as the wire carries it. */
function addBlob(literal: Json): unknown {
  return writeOne({ add_n: { label: "Blob", properties: [["v", { value: literal }]] } });
}

const LONE_SURROGATES = ["a\ud800", "a\udc00", "\udfff\ud800", "\ud83d"];

describe.each(BACKENDS)("values at the edge, schemaless ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend);
    await t.run(writeOne(addN("Blob", { v: "seed" })));
  });
  afterEach(async () => t.destroy());

  it("refuses literals and parameters nested 10,000 deep, and more than VALUE_DEPTH_MAX", async () => {
    for (const tag of ["array", "object"] as const) {
      for (const depth of [10_000, VALUE_DEPTH_MAX + 1]) {
        await expectRefused(t, addBlob(nestedLiteral(depth, tag)), "invalid_value");
        await expectRefused(t, writeOne(addN("Blob", { v: param("p") }), { p: nestedJson(depth, tag) }), "invalid_value");
      }
      const atLimit = await t.run(addBlob(nestedLiteral(VALUE_DEPTH_MAX, tag)));
      const stored = await t.run(readOne(nodesById(ids(atLimit.r)[0])));
      expect((stored.r as { v: unknown }[])[0].v).toEqual(nestedJson(VALUE_DEPTH_MAX, tag));
    }
  });

  it("refuses lone surrogates in values, parameters and property names", async () => {
    for (const text of LONE_SURROGATES) {
      await expectRefused(t, writeOne(addN("Blob", { v: text })), "invalid_value");
      await expectRefused(t, writeOne(addN("Blob", { v: [text] })), "invalid_value");
      await expectRefused(t, writeOne(addN("Blob", { v: { [text]: 1 } })), "invalid_value");
      await expectRefused(t, writeOne(addN("Blob", { [`k${text}`]: 1 })), "invalid_value");
      await expectRefused(t, writeOne(addN("Blob", { v: param("p") }), { p: { inner: text } }), "invalid_value");
    }
    // A surrogate pair is a well-formed character.
    await t.run(writeOne(addN("Blob", { v: "\ud83d\ude00" })));
  });

  it("refuses imported rows nested too deep or holding lone surrogates, and writes nothing of the batch", async () => {
    const batches: ImportBatch[] = [
      { nodes: [{ label: "Blob", props: { v: "fine" } }, { label: "Blob", props: { v: nestedJson(10_000, "array") } }], edges: [] },
      { nodes: [{ label: "Blob", props: { v: "fine" } }, { label: "Blob", props: { v: "a\ud800" } }], edges: [] },
    ];
    for (const batch of batches) {
      const before = await snapshot(t.db);
      await expectCode(t.db.importBatch(batch), "invalid_value");
      expect(await snapshot(t.db)).toEqual(before);
    }
  });
});

describe.each(BACKENDS)("lone surrogates and a UNIQUE INDEX ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: SCHEMA });
  });
  afterEach(async () => t.destroy());

  it("refuses both of two different strings that would have collided as U+FFFD, in the tree and in HelixQL", async () => {
    const id = ids((await t.run(writeOne(addN("User", { name: "a\ufffd" })))).r)[0];
    for (const name of ["a\ud800", "a\udc00"]) {
      await expectRefused(t, writeOne(addN("User", { name })), "invalid_value");
      await expectRefused(t, writeOne(addN("User", { name: "b", city: param("c") }), { c: name }), "invalid_value");
      await expectRefused(t, writeOne(update(nodesById(id), { name })), "invalid_value");
      const before = await snapshot(t.db);
      await expectCode(t.db.query("AddUser", { name }), "invalid_value");
      expect(await snapshot(t.db)).toEqual(before);
    }
  });
});
