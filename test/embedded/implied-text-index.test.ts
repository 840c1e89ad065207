/**
 * The implied text index of a HelixDB project (protocol/warnings.ts, `implied_text_index`): `SearchBM25<T>` on a type
 * without a TEXT INDEX warns, and Silk builds a `standard` text index over T's String and [String] fields like any
 * declared index — in the background over records already stored — whose status says `implied: true`. Its fields
 * keep their ordinary rules: a null through the operation tree removes the field (a declared TEXT INDEX refuses it).
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../runtime/embedded.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import { nodesById, update, writeOne } from "../helpers/tree.js";

afterAll(removeTempDirs);

const SCHEMA = "N::Doc { title: String, body: String, n: U32 }\n";
const SEED = 'QUERY Seed(title: String, body: String) => d <- AddN<Doc>({title: title, body: body, n: 1}) RETURN "ok"\n';
const FIND = "QUERY Find(q: String) => hits <- SearchBM25<Doc>(q, 10)::{title} RETURN hits\n";

async function untilActive(database: Database): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const text = database.indexes().filter((index) => index.family === "text");
    if (text.length > 0 && text.every((index) => index.state === "active")) return;
    await new Promise((done) => setTimeout(done, 25));
  }
  throw new Error("the implied text index did not become active");
}

describe("an implied text index", () => {
  it("is built over the records already stored when a project starts searching, and says it is implied", async () => {
    const disk = join(tempDir(), "db");
    const first = await open({ storage: { disk }, schema: [{ file: "a.hx", text: SCHEMA + SEED }] });
    expect(first.warnings).toEqual([]);
    for (let i = 0; i < 50; i++) await first.query("Seed", { title: `t${i}`, body: i === 7 ? "the cheese shop" : `filler ${i}` });
    expect(first.indexes().filter((index) => index.family === "text")).toEqual([]);
    await first.close();

    const second = await open({ storage: { disk }, schema: [{ file: "a.hx", text: SCHEMA + SEED + FIND }] });
    try {
      expect(second.warnings).toMatchObject([{ severity: "warning", code: "implied_text_index", file: "a.hx", line: 3, column: 34 }]);
      const implied = second.indexes().filter((index) => index.family === "text");
      expect(implied.map((index) => [index.name, index.family === "text" && index.implied, index.family === "text" && index.analyzer])).toEqual([
        ["Doc.title", true, "standard"],
        ["Doc.body", true, "standard"],
      ]);
      await untilActive(second);
      expect(await second.query("Find", { q: "cheese" })).toEqual({ hits: [{ title: "t7" }] });
      expect(await second.query("Find", { q: "t3" })).toEqual({ hits: [{ title: "t3" }] });
    } finally {
      await second.close();
    }
  });

  it("leaves its fields' null rule as it was: a null removes the field, and its postings", async () => {
    const database = await open({ storage: "memory", schema: [{ file: "a.hx", text: SCHEMA + SEED + FIND }] });
    try {
      await database.query("Seed", { title: "one", body: "cheese" });
      expect(await database.query("Find", { q: "cheese" })).toEqual({ hits: [{ title: "one" }] });
      await database.run(writeOne(update(nodesById(1), { body: null })));
      expect(await database.query("Find", { q: "cheese" })).toEqual({ hits: [] });
    } finally {
      await database.close();
    }
  });
});
