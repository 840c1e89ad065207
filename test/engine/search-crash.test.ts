/**
 * Crash tests of the vector and text indexes (STYLE.md, "Faults on purpose"). A child process
 * (fixtures/search-crash-child.ts) writes docs with a VECTOR INDEX field and a TEXT INDEX field in a loop (adds,
 * with updates and drops now and then) on a disk database of one or three partitions (two-phase commit) and is
 * killed with SIGKILL at a random moment. Reopened as a writer (recovery), the indexes must agree with the records
 * a plain scan finds:
 *
 * - every hit of a vector search is an existing doc, and k ≥ the number of docs returns each of them once;
 * - a search for each doc's own vector (k = 1, euclidean) finds that doc at distance 0;
 * - a text search for each word returns exactly the docs whose stored text holds it (node/indexes/text-analyzers.ts);
 * - the database takes new writes, which both indexes find.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { analyze } from "../../node/indexes/text-analyzers.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import { entry, nodesOf, read, readOne, write, type Json, type TreeNode } from "../helpers/tree.js";
import { SEARCH_CRASH_SCHEMA, SEARCH_CRASH_WORDS } from "./fixtures/search-crash-child.js";

afterAll(removeTempDirs);

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const CHILD = fileURLToPath(new URL("./fixtures/search-crash-child.ts", import.meta.url));

interface Doc {
  readonly $id: string;
  readonly v: number[];
  readonly body: string;
}

interface Hit {
  readonly $id: string;
  readonly $distance?: number;
  readonly $score?: number;
}

/** Runs the child until it printed `ready` and then `delayMs` more, kills it with SIGKILL, resolves on its exit. */
function runAndKill(directory: string, partitions: number, seed: number, delayMs: number): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, directory, String(partitions), String(seed)], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let timer: NodeJS.Timeout | undefined;
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (timer === undefined && stdout.includes("ready")) timer = setTimeout(() => child.kill("SIGKILL"), delayMs);
    });
    child.on("error", reject);
    child.on("exit", (_code, signal) => {
      clearTimeout(timer);
      resolve({ signal, stderr });
    });
  });
}

const vectorSearch = (q: readonly number[], k: number): TreeNode => ({
  vector_search_nodes: { label: "Doc", property: "v", query: { value: { f64_array: q as number[] } }, k: { value: { i64: k } } },
});
const textSearch = (q: string, k: number): TreeNode => ({ text_search_nodes: { label: "Doc", query: { value: { string: q } }, k: { value: { i64: k } } } });

/** One read of many searches (fewer round trips than one request each). */
async function searchAll(db: Database, roots: readonly TreeNode[]): Promise<Hit[][]> {
  const names = roots.map((_, i) => `s${i}`);
  const answer = await db.run(read(roots.map((root, i) => entry(names[i], root)), names));
  return names.map((name) => answer[name] as Hit[]);
}

async function expectIndexesMatchRecords(db: Database): Promise<Doc[]> {
  const docs = (await db.run(readOne(nodesOf("Doc")))).r as Doc[];
  const byId = new Map(docs.map((doc) => [doc.$id, doc]));
  const k = Math.max(1, docs.length);

  // Every hit exists, each doc is found once when k covers them all.
  for (const hits of await searchAll(db, [vectorSearch([0, 0, 0, 0, 0, 0, 0, 0], k), vectorSearch([5, -5, 5, -5, 5, -5, 5, -5], k)])) {
    for (const hit of hits) expect(byId.has(hit.$id), `vector hit ${hit.$id} is a stored doc`).toBe(true);
    expect(new Set(hits.map((hit) => hit.$id)).size).toBe(hits.length);
    expect(hits.length).toBe(docs.length);
  }

  // Each doc's own vector finds it first.
  for (let start = 0; start < docs.length; start += 200) {
    const slice = docs.slice(start, start + 200);
    const answers = await searchAll(db, slice.map((doc) => vectorSearch(doc.v, 1)));
    slice.forEach((doc, i) => {
      expect(answers[i].map((hit) => hit.$id), `own vector of ${doc.$id}`).toEqual([doc.$id]);
      expect(answers[i][0].$distance).toBeCloseTo(0, 5);
    });
  }

  // Text search for each word: exactly the docs whose stored text holds it.
  const answers = await searchAll(db, SEARCH_CRASH_WORDS.map((word) => textSearch(word, 10_000)));
  SEARCH_CRASH_WORDS.forEach((word, i) => {
    const expected = docs.filter((doc) => analyze("standard", doc.body).includes(word)).map((doc) => doc.$id);
    const got = answers[i].map((hit) => hit.$id);
    expect(new Set(got), `text ${word}`).toEqual(new Set(expected));
    expect(got).toHaveLength(expected.length);
  });
  return docs;
}

const RUNS = [
  { partitions: 1, seed: 11, delayMs: 300 },
  { partitions: 1, seed: 12, delayMs: 900 },
  { partitions: 3, seed: 31, delayMs: 400 },
  { partitions: 3, seed: 32, delayMs: 1_100 },
];

describe("a writer of vector and text docs killed at a random moment", () => {
  it.each(RUNS)("$partitions partition(s), seed $seed: after recovery the indexes agree with the records", async ({ partitions, seed, delayMs }) => {
    const directory = join(tempDir("silk-search-crash-"), "db");
    // The kill lands somewhere in the write loop: a fixed base plus a jitter, so repeated runs hit other moments.
    const exit = await runAndKill(directory, partitions, seed, delayMs + Math.floor(Math.random() * 200));
    expect({ signal: exit.signal, stderr: exit.stderr }).toEqual({ signal: "SIGKILL", stderr: "" });

    const db = await Database.open({ storage: { disk: directory }, partitions, schema: SEARCH_CRASH_SCHEMA });
    try {
      const docs = await expectIndexesMatchRecords(db);
      expect(docs.length).toBeGreaterThan(0);
      // New writes after recovery are indexed as well.
      const props = (v: number[]): Json[] => [
        ["v", { value: { f64_array: v } }],
        ["body", { value: { string: "zeta alpha" } }],
      ];
      const v1 = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08];
      const v2 = [-0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08];
      const added = (await db.run(write([entry("a", { add_n: { label: "Doc", properties: props(v1) } }), entry("b", { add_n: { label: "Doc", properties: props(v2) } })], ["a", "b"]))) as Record<string, Doc[]>;
      const [near, zeta] = await searchAll(db, [vectorSearch(v1, 1), textSearch("zeta", 10)]);
      expect(near.map((hit) => hit.$id)).toEqual([added.a[0].$id]);
      expect(new Set(zeta.map((hit) => hit.$id))).toEqual(new Set([added.a[0].$id, added.b[0].$id]));
      await expectIndexesMatchRecords(db);
    } finally {
      await db.close();
    }

    // A second open (graphs rebuilt from the records again) agrees as well.
    const again = await Database.open({ storage: { disk: directory }, partitions, schema: SEARCH_CRASH_SCHEMA });
    try {
      await expectIndexesMatchRecords(again);
    } finally {
      await again.close();
    }
  }, 30_000);
});
