/**
 * Model test of vector and text search (STYLE.md, "Against a simple model"): random sequences of transactions, each
 * of one or several operations (add, update, drop a doc; a vector or a text search), run through the operation tree
 * against a database whose Doc type has a 4-dimension euclidean VECTOR INDEX and a stemming TEXT INDEX, and against a
 * plain in-memory model. Vectors come from a few values and texts from a small vocabulary, so ties and repeated
 * terms are common.
 *
 * What must agree:
 * - a vector search with k ≥ the number of docs returns every doc that has a vector (≤ 50 docs: HNSW at a beam of 64
 *   is exact), each `$distance` the exact euclidean distance, in ascending order; inside a write transaction the
 *   transaction's own adds, updates and drops count (docs/INDEXES.md, "A write sees its own vectors");
 * - a text search returns exactly the docs whose text holds one of the query's terms after analysis
 *   (node/indexes/text-analyzers.ts `analyze`), scores descending; inside a write transaction the committed texts are
 *   searched and the transaction's drops are left out (docs/INDEXES.md, text rules).
 *
 * Reproducing a failure: fast-check prints the seed and path; `SILK_SEARCH_MODEL_RUNS` raises the number of runs.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { analyze } from "../../node/indexes/text-analyzers.js";
import { distance } from "../../node/indexes/vector-math.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import { drop, entry, nodesById, write, type Json, type TreeNode } from "../helpers/tree.js";
import { join } from "node:path";

afterAll(removeTempDirs);

const RUNS = Number(process.env.SILK_SEARCH_MODEL_RUNS ?? 60);
const SCHEMA = `N::Doc {
    VECTOR INDEX(dimension: 4, metric: euclidean) v: [F32],
    TEXT INDEX(analyzer: standard_stem_en) body: String,
}`;
const K = 100;

const VOCABULARY = ["graph", "graphs", "vector", "search", "searching", "the", "databases", "database", "fast", "and"];
const component = fc.constantFrom(0, 1, -1, 0.5, 2);
const vector = fc.array(component, { minLength: 4, maxLength: 4 });
const text = fc.array(fc.constantFrom(...VOCABULARY), { minLength: 0, maxLength: 4 }).map((words) => words.join(" "));

type Op =
  | { readonly op: "add"; readonly v?: number[]; readonly body?: string }
  | { readonly op: "update"; readonly target: number; readonly v?: number[]; readonly body?: string }
  | { readonly op: "drop"; readonly target: number }
  | { readonly op: "searchV"; readonly q: number[] }
  | { readonly op: "searchT"; readonly q: string };

const fields = fc.record({ v: vector, body: text }, { requiredKeys: [] });
const operation: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fields.map((f): Op => ({ op: "add", ...f })), weight: 4 },
  { arbitrary: fc.tuple(fc.nat(), fields).map(([target, f]): Op => ({ op: "update", target, ...f })), weight: 2 },
  { arbitrary: fc.nat().map((target): Op => ({ op: "drop", target })), weight: 1 },
  { arbitrary: vector.map((q): Op => ({ op: "searchV", q })), weight: 2 },
  { arbitrary: text.map((q): Op => ({ op: "searchT", q })), weight: 2 },
);
const transactions = fc.array(fc.array(operation, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 10 });

interface Doc {
  v?: number[];
  body?: string;
}

interface Hit {
  readonly $id: string;
  readonly $distance?: number;
  readonly $score?: number;
  readonly v?: unknown;
  readonly body?: unknown;
}

function assignments(f: Doc): Json[] {
  const list: Json[] = [];
  if (f.v !== undefined) list.push(["v", { value: { f64_array: f.v } }]);
  if (f.body !== undefined) list.push(["body", { value: { string: f.body } }]);
  return list;
}

const vectorSearch = (q: number[]): TreeNode => ({
  vector_search_nodes: { label: "Doc", property: "v", query: { value: { f64_array: q } }, k: { value: { i64: K } } },
});
const textSearch = (q: string): TreeNode => ({ text_search_nodes: { label: "Doc", query: { value: { string: q } }, k: { value: { i64: K } } } });

/** The docs holding one of the query's terms. */
function textMatches(docs: ReadonlyMap<string, Doc>, q: string): string[] {
  const terms = new Set(analyze("standard_stem_en", q));
  return [...docs].filter(([, doc]) => doc.body !== undefined && analyze("standard_stem_en", doc.body).some((term) => terms.has(term))).map(([id]) => id);
}

/** Exactly the docs with a vector, each with its exact `$distance`, nearest first (also inside a transaction that writes). */
function expectVectorHits(hits: readonly Hit[], docs: ReadonlyMap<string, Doc>, q: number[], where: string): void {
  const query = Float32Array.from(q);
  const expected = [...docs].filter(([, doc]) => doc.v !== undefined).map(([id, doc]) => ({ id, d: distance("euclidean", query, Float32Array.from(doc.v!)) }));
  expect(new Set(hits.map((hit) => hit.$id)), where).toEqual(new Set(expected.map((e) => e.id)));
  expect(hits, where).toHaveLength(expected.length);
  const byId = new Map(expected.map((e) => [e.id, e.d]));
  let previous = -Infinity;
  for (const hit of hits) {
    const d = hit.$distance!;
    expect(d, `${where}: $distance of ${hit.$id}`).toBeTypeOf("number");
    expect(d, `${where}: distance of ${hit.$id}`).toBeCloseTo(byId.get(hit.$id)!, 4);
    expect(d, `${where}: ascending`).toBeGreaterThanOrEqual(previous - 1e-6);
    previous = d;
  }
}

function expectTextHits(hits: readonly Hit[], matching: readonly string[], where: string): void {
  expect(new Set(hits.map((hit) => hit.$id)), where).toEqual(new Set(matching));
  expect(hits, where).toHaveLength(matching.length);
  const scores = hits.map((hit) => hit.$score!);
  for (const score of scores) expect(score, where).toBeGreaterThan(0);
  for (let i = 1; i < scores.length; i += 1) expect(scores[i], `${where}: descending`).toBeLessThanOrEqual(scores[i - 1]);
}

async function runModel(db: Database, plan: readonly (readonly Op[])[]): Promise<void> {
  const committed = new Map<string, Doc>();
  for (const [t, ops] of plan.entries()) {
    const ids = [...committed.keys()];
    const current = new Map([...committed].map(([id, doc]) => [id, { ...doc }]));
    const dropped = new Set<string>();
    const entries = [];
    const returns: string[] = [];
    /** What each search entry must return, checked once the transaction answered (vector: expected state). */
    const checks: ((answer: Record<string, unknown>) => void)[] = [];
    const addNames: [string, Doc][] = [];
    for (const [i, op] of ops.entries()) {
      const name = `e${i}`;
      const where = `txn ${t} op ${i} ${JSON.stringify(op)}`;
      if (op.op === "add") {
        const doc: Doc = { ...(op.v === undefined ? {} : { v: op.v }), ...(op.body === undefined ? {} : { body: op.body }) };
        entries.push(entry(name, { add_n: { label: "Doc", properties: assignments(doc) } }));
        returns.push(name);
        addNames.push([name, doc]);
        current.set(`pending:${name}`, doc);
      } else if (op.op === "update" || op.op === "drop") {
        if (ids.length === 0) continue;
        const id = ids[op.target % ids.length];
        if (dropped.has(id)) continue;
        if (op.op === "drop") {
          entries.push(entry(undefined, drop(nodesById(id))));
          dropped.add(id);
          current.delete(id);
        } else {
          if (op.v === undefined && op.body === undefined) continue;
          entries.push(entry(undefined, { update: { input: nodesById(id) as Json, properties: assignments(op) } }));
          current.set(id, { ...current.get(id), ...(op.v === undefined ? {} : { v: op.v }), ...(op.body === undefined ? {} : { body: op.body }) });
        }
      } else if (op.op === "searchV") {
        entries.push(entry(name, vectorSearch(op.q)));
        returns.push(name);
        const snapshot = new Map(current);
        checks.push((answer) => {
          // Answers show records as the transaction left them: a hit dropped by a later entry is gone.
          const resolved = new Map([...snapshot].filter(([id]) => !dropped.has(id)).map(([id, doc]) => [resolve(answer, id), doc]));
          expectVectorHits(answer[name] as Hit[], resolved, op.q, where);
        });
      } else {
        entries.push(entry(name, textSearch(op.q)));
        returns.push(name);
        // The committed index is searched, minus what this transaction dropped so far.
        const visible = new Map([...committed].filter(([id]) => !dropped.has(id)));
        const matching = textMatches(visible, op.q);
        checks.push((answer) => expectTextHits(answer[name] as Hit[], matching.filter((id) => !dropped.has(id)), where));
      }
    }
    if (entries.length === 0) continue;
    const answer = await db.run(write(entries, returns));
    for (const check of checks) check(answer);
    for (const [name, doc] of addNames) {
      const id = resolve(answer, `pending:${name}`);
      current.delete(`pending:${name}`);
      current.set(id, doc);
    }
    committed.clear();
    for (const [id, doc] of current) committed.set(id, doc);

    // After the commit: every committed doc is found by both kinds of search, against the model.
    for (const q of [[0, 0, 0, 0], [1, -1, 0.5, 2]]) {
      const hits = (await db.run({ request_type: "read", query: { read: { entries: [entry("r", vectorSearch(q))], returns: ["r"] } }, parameters: {} })).r as Hit[];
      expectVectorHits(hits, committed, q, `after txn ${t}, vector ${JSON.stringify(q)}`);
    }
    for (const q of ["graph", "searching databases", "the", "fast vector"]) {
      const hits = (await db.run({ request_type: "read", query: { read: { entries: [entry("r", textSearch(q))], returns: ["r"] } }, parameters: {} })).r as Hit[];
      expectTextHits(hits, textMatches(committed, q), `after txn ${t}, text ${JSON.stringify(q)}`);
    }
  }
}

/** A model key: a committed doc's ID, or `pending:<entry>` for a doc this transaction adds (its ID in the answer). */
function resolve(answer: Record<string, unknown>, key: string): string {
  if (!key.startsWith("pending:")) return key;
  const rows = answer[key.slice("pending:".length)] as { $id: string }[];
  return rows[0].$id;
}

const BACKENDS = [
  { name: "memory", storage: "memory" as const, partitions: 1, runs: RUNS },
  { name: "disk, 3 partitions", storage: "disk" as const, partitions: 3, runs: Math.max(1, Math.round(RUNS / 3)) },
];

describe.each(BACKENDS)("search against a model ($name)", (backend) => {
  it("vector hits are exact and ordered, text hits are exactly the docs holding a query term", async () => {
    await fc.assert(
      fc.asyncProperty(transactions, async (plan) => {
        const storage = backend.storage === "memory" ? ("memory" as const) : { disk: join(tempDir("silk-search-model-"), "db") };
        const db = await Database.open({ storage, partitions: backend.partitions, schema: SCHEMA });
        try {
          await runModel(db, plan);
        } finally {
          await db.close();
        }
      }),
      { numRuns: backend.runs },
    );
  }, 60_000);
});
