/**
 * Persisted vector graphs through the whole engine (node/indexes/vector-graph-files.ts, wired by node/store/partition-store.ts): a
 * disk writer writes each partition's graph files (at close at the latest) into `partitions/p<i>/vector-graphs/`, a
 * reopened writer and a read-only handle answer as before, a read-only handle follows the writer's later commits,
 * and a damaged file changes nothing but the time an open takes.
 */
import { existsSync, readdirSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { seededRandom } from "../../protocol/random.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";

afterAll(removeTempDirs);

const SCHEMA = `
N::Doc {
    VECTOR INDEX(dimension: 4, metric: cosine) embedding: [F32],
    title: String,
}

QUERY AddDocs(docs: [{title: String, embedding: [F32]}]) =>
    FOR {title, embedding} IN docs {
        AddN<Doc>({title: title, embedding: embedding})
    }
    RETURN "ok"
QUERY Near(v: [F32], k: I64) =>
    docs <- SearchV<Doc>(v, k)
    RETURN docs::{title}
`;

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0).reverse()) await db.close();
});

async function openDb(directory: string, mode: "writer" | "readonly" = "writer", partitions = 1): Promise<Database> {
  const db = await Database.open({ storage: { disk: directory }, mode, schema: SCHEMA, partitions });
  opened.push(db);
  return db;
}

function docs(count: number, seed: number, prefix: string) {
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => ({ title: `${prefix}${i}`, embedding: Array.from({ length: 4 }, () => random() * 2 - 1) }));
}

async function near(db: Database, v: number[], k = 10): Promise<string[]> {
  return ((await db.query("Near", { v, k })) as { docs: { title: string }[] }).docs.map((doc) => doc.title);
}

function graphFiles(directory: string, partitions: number): string[] {
  const files: string[] = [];
  for (let p = 0; p < partitions; p++) {
    const folder = join(directory, "partitions", `p${p}`, "vector-graphs");
    if (existsSync(folder)) files.push(...readdirSync(folder).map((name) => join(folder, name)));
  }
  return files;
}

const QUERIES = docs(10, 99, "q").map((doc) => doc.embedding);

async function answers(db: Database): Promise<string[][]> {
  return Promise.all(QUERIES.map((v) => near(db, v)));
}

describe("vector graph files through the engine", () => {
  it("a writer writes them by its close; a reopened writer and a read-only handle answer as before, on 3 partitions", async () => {
    const directory = tempDir("silk-graph-files-");
    const writer = await openDb(directory, "writer", 3);
    await writer.query("AddDocs", { docs: docs(200, 1, "d") });
    const before = await answers(writer);
    await opened.pop()!.close();
    const files = graphFiles(directory, 3);
    expect(files.filter((file) => file.endsWith(".graph"))).toHaveLength(3);
    const again = await openDb(directory, "writer", 3);
    expect(await answers(again)).toEqual(before);
    const reader = await openDb(directory, "readonly", 3);
    expect(await answers(reader)).toEqual(before);
    // The reader follows the writer's later commits (replayed from the change log).
    await again.query("AddDocs", { docs: [{ title: "new", embedding: QUERIES[0] }] });
    await expect.poll(() => near(reader, QUERIES[0], 1), { timeout: 5_000, interval: 10 }).toEqual(["new"]);
  });

  it("a truncated file only costs a rebuild: the answers are the same", async () => {
    const directory = tempDir("silk-graph-files-");
    const writer = await openDb(directory);
    await writer.query("AddDocs", { docs: docs(100, 2, "d") });
    const before = await answers(writer);
    await opened.pop()!.close();
    const [file] = graphFiles(directory, 1);
    truncateSync(file, 100);
    const again = await openDb(directory);
    expect(await answers(again)).toEqual(before); // 100 records: a beam of 64 finds the exact top 10
  });
});
