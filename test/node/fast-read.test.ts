/**
 * The synchronous read path (node/actor/fast-read.ts) against the general executor: random plans of the steps it accepts,
 * run on the same LMDB state by both (the fast path through a synchronous snapshot, as the partition actor runs it),
 * must give equal results or the same error code. Also: which plans it refuses, that the embedded runtime's answers
 * do not depend on which path ran, and that a synchronous snapshot keeps one state until its caller yields.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open } from "../../runtime/embedded.js";
import { REPO } from "../cli/helpers.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { Deadline, EXECUTION_SLICE_MS } from "../../node/exec/deadline.js";
import { executePlan } from "../../node/exec/executor.js";
import { executeFastRead, fastReadable } from "../../node/actor/fast-read.js";
import { SnapshotReader } from "../../node/actor/partition-actor.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { BASE_READ_CHUNK_IDS, TxnView } from "../../node/exec/txn-view.js";
import { SilkError } from "../../protocol/errors.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { StoredRecord } from "../../protocol/records.js";
import { decodeRequest } from "../../protocol/tree.js";
import {
  count,
  dedup,
  edges,
  entry,
  exists,
  gt,
  id,
  inE,
  inN,
  in_,
  label,
  limit,
  nodes,
  out,
  outE,
  outN,
  prop,
  range,
  read,
  ref,
  skip,
  valueMap,
  values,
  where,
  writeOne,
  addN,
  type Json,
  type TreeNode,
} from "../helpers/tree.js";

const NODE_LABELS = ["A", "B"];
const EDGE_LABELS = ["X", "Y"];
const NODES = 24;
const EDGES = 60;

let directory: string;
let store: PartitionStore;
let nodeIds: string[];
let edgeIds: string[];

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), "silk-fast-read-"));
  const db = await open({ storage: { disk: directory } });
  const nodesResult = await db.importBatch({
    nodes: Array.from({ length: NODES }, (_, i) => ({ label: NODE_LABELS[i % 2], props: { n: i, name: `node ${i}` } })),
    edges: [],
  });
  // A fixed pseudo-random graph: repeated pairs, self-loops and nodes without edges all occur.
  const pick = (i: number, salt: number): number => (i * 7 + salt * 13 + ((i * i) % 5)) % (NODES - 2);
  const edgesResult = await db.importBatch({
    nodes: [],
    edges: Array.from({ length: EDGES }, (_, i) => ({
      label: EDGE_LABELS[i % 3 === 0 ? 1 : 0],
      from: { id: nodesResult.nodeIds[pick(i, 1)] },
      to: { id: nodesResult.nodeIds[pick(i, 2)] },
      props: i % 4 === 0 ? { w: i } : {},
    })),
  });
  await db.close();
  nodeIds = nodesResult.nodeIds.map(String);
  edgeIds = edgesResult.edgeIds.map(String);
  const [only] = new PartitionMap(1).ranges;
  store = PartitionStore.open({ path: join(directory, "partitions", "p0"), readOnly: true, noSync: false, idFirst: only.first, idLast: only.last });
});

afterAll(async () => {
  await store?.close();
  rmSync(directory, { recursive: true, force: true });
});

type Outcome = { ok: true; result: unknown } | { ok: false; code: string };

async function settle(run: () => unknown): Promise<Outcome> {
  try {
    return { ok: true, result: await run() };
  } catch (cause) {
    if (cause instanceof SilkError) return { ok: false, code: cause.code };
    throw cause;
  }
}

/** Runs a request through the executor and through the fast path, each on its own snapshot of the same store. */
async function bothWays(request: unknown): Promise<{ general: Outcome; fast: Outcome }> {
  const plan = decodeRequest(request as Json);
  expect(fastReadable(plan)).toBe(true);
  const ids = { allocate: (): bigint => 0n };
  const general = await settle(() => {
    const snapshot = store.snapshot();
    const view = new TxnView(new SnapshotReader(snapshot), ids);
    return executePlan(plan, { view, schema: undefined, now: () => new Date(0), writable: false, deadline: Deadline.none() }).finally(() => snapshot.close());
  });
  const fast = await settle(() => {
    const snapshot = store.synchronousSnapshot();
    try {
      // A clock that stands still: the fast read never outruns its slice, so it always answers (see below).
      return executeFastRead(plan, new SnapshotReader(snapshot), plan.parameters, Deadline.none(() => 0));
    } finally {
      snapshot.close();
    }
  });
  return { general, fast };
}

const hasLabel = (input: TreeNode, name: string): TreeNode => ({ has_label: { input: input as Json, label: name } });

/** Random plans of the fast path's steps, over IDs that exist, IDs that do not, parameters and variables. */
function plans(): fc.Arbitrary<{ request: unknown }> {
  const anyId = fc.oneof(
    fc.constantFrom(...nodeIds),
    fc.constantFrom(...edgeIds),
    fc.constantFrom("0", "987654321"),
  );
  const edgeLabel = fc.option(fc.constantFrom(...EDGE_LABELS, "Z"), { nil: undefined });
  const source = fc.oneof(
    fc.constant(nodes(ref.all)),
    fc.constant(edges(ref.all)),
    fc.array(anyId, { maxLength: 4 }).map((list) => nodes(ref.ids(...list))),
    fc.array(anyId, { maxLength: 4 }).map((list) => edges(ref.ids(...list))),
    fc.constant(nodes(ref.param("p"))),
    fc.constant(edges(ref.param("p"))),
    fc.constant(nodes(ref.var("a"))),
    fc.constant(nodes(ref.var("undefined_name"))),
  );
  const { step } = fc.letrec<{ step: TreeNode }>((tie) => ({
    step: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      source,
      fc.tuple(tie("step"), edgeLabel).map(([input, name]) => out(input, name)),
      fc.tuple(tie("step"), edgeLabel).map(([input, name]) => in_(input, name)),
      fc.tuple(tie("step"), edgeLabel).map(([input, name]) => outE(input, name)),
      fc.tuple(tie("step"), edgeLabel).map(([input, name]) => inE(input, name)),
      tie("step").map((input) => outN(input)),
      tie("step").map((input) => inN(input)),
      fc.tuple(tie("step"), fc.constantFrom(...NODE_LABELS, ...EDGE_LABELS)).map(([input, name]) => hasLabel(input, name)),
      tie("step").map((input) => dedup(input)),
      fc.tuple(tie("step"), fc.nat(30)).map(([input, n]) => limit(input, n)),
      fc.tuple(tie("step"), fc.nat(30)).map(([input, n]) => skip(input, n)),
      fc.tuple(tie("step"), fc.nat(30), fc.nat(30)).map(([input, a, b]) => range(input, a, b)),
    ),
  }));
  const terminal = fc.oneof(
    step,
    step.map((input) => count(input)),
    step.map((input) => exists(input)),
    step.map((input): TreeNode => ({ exists: { input: input as Json, negate: true } })),
    step.map((input) => id(input)),
    step.map((input) => label(input)),
    step.map((input) => valueMap(input)),
  );
  const parameter = fc.oneof(
    anyId,
    fc.array(anyId, { maxLength: 3 }),
    fc.constantFrom("not an id", -1),
  );
  return fc
    .record({ first: step, second: terminal, returns: fc.constantFrom(["a", "r"], ["r"], ["a"]), p: fc.option(parameter, { nil: undefined }) })
    .map(({ first, second, returns, p }) => ({
      request: read([entry("a", first), entry("r", second)], [...returns], p === undefined ? {} : { p }),
    }));
}

describe("fast read path", () => {
  it("gives the executor's results and errors on random plans of its steps", async () => {
    await fc.assert(
      fc.asyncProperty(plans(), async ({ request }) => {
        const { general, fast } = await bothWays(request);
        expect(fast).toEqual(general);
      }),
      { numRuns: 400, seed: 20261123 },
    );
  });

  it("answers a traversal with records, IDs and counts (not only errors)", async () => {
    const request = read([entry("a", out(nodes(ref.param("p")), "X")), entry("r", count(nodes(ref.var("a"))))], ["a", "r"], { p: nodeIds.slice(0, 6) });
    const { general, fast } = await bothWays(request);
    expect(fast).toEqual(general);
    expect(fast.ok).toBe(true);
    const result = (fast as { result: { a: unknown[]; r: number } }).result;
    expect(result.a.length).toBeGreaterThan(0);
    expect(result.r).toBeGreaterThan(0);
  });

  it("gives up, answering undefined, once a large read outruns its slice of time; the executor answers instead", async () => {
    // More IDs than one read chunk, so the slice is checked between chunks; the clock moves a whole slice per reading.
    const request = read([entry("r", count(nodes(ref.param("p"))))], ["r"], { p: Array.from({ length: BASE_READ_CHUNK_IDS * 3 }, (_, i) => nodeIds[i % NODES]) });
    const plan = decodeRequest(request as unknown as Json);
    let nowMs = 0;
    const snapshot = store.synchronousSnapshot();
    try {
      expect(executeFastRead(plan, new SnapshotReader(snapshot), plan.parameters, Deadline.none(() => (nowMs += EXECUTION_SLICE_MS)))).toBeUndefined();
      expect(executeFastRead(plan, new SnapshotReader(snapshot), plan.parameters, Deadline.none(() => 0))).toEqual({ r: BASE_READ_CHUNK_IDS * 3 });
    } finally {
      snapshot.close();
    }
    const { general } = await bothWays(request);
    expect(general).toEqual({ ok: true, result: { r: BASE_READ_CHUNK_IDS * 3 } });
  });

  it("refuses what it does not run: writes, explain, filters, property projections, computed bounds, conditions", () => {
    const refused = [
      writeOne(addN("A", { n: 1 })),
      { ...read([entry("r", nodes(ref.all))], ["r"]), explain: true },
      read([entry("r", where(nodes(ref.all), gt(prop("n"), 3)))], ["r"]),
      read([entry("r", values(nodes(ref.all), "n"))], ["r"]),
      read([entry("r", valueMap(nodes(ref.all), ["n"]))], ["r"]),
      read([entry("r", { limit: { input: nodes(ref.all), count: { expr: { param: "n" } } } } as TreeNode)], ["r"], { n: 2 }),
      read([{ query: { name: "r", root: nodes(ref.all) as Json, condition: { var_not_empty: "r" } } }], ["r"]),
    ];
    for (const request of refused) expect(fastReadable(decodeRequest(request as unknown as Json))).toBe(false);
    expect(fastReadable(decodeRequest(read([entry("r", count(out(nodes(ref.all))))], ["r"]) as unknown as Json))).toBe(true);
  });
});

describe("a synchronous snapshot", () => {
  const user = (id: bigint, age: number): StoredRecord => ({ kind: "node", id, label: "User", props: { age } });
  /** What a snapshot reads of the test's users: user 1's properties and every User's ID. */
  const stateOf = (snapshot: ReturnType<PartitionStore["synchronousSnapshot"]>): { first: unknown; users: bigint[] } => ({
    first: snapshot.record("node", 1n)?.props,
    users: snapshot.idsOfLabel("node", "User"),
  });
  /** The same, read by a synchronous snapshot taken and closed now. */
  const stateNow = (store: PartitionStore): { first: unknown; users: bigint[] } => {
    const snapshot = store.synchronousSnapshot();
    try {
      return stateOf(snapshot);
    } finally {
      snapshot.close();
    }
  };

  it("sees what this process committed before it, without yielding", async () => {
    const path = mkdtempSync(join(tmpdir(), "silk-sync-snapshot-"));
    const writer = PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: 1n, idLast: 2n ** 64n - 1n });
    try {
      writer.apply(encodeMutations([{ op: "put_record", record: user(1n, 1) }]));
      expect(stateNow(writer)).toEqual({ first: { age: 1 }, users: [1n] });
      writer.apply(encodeMutations([{ op: "put_record", record: user(1n, 2) }, { op: "put_record", record: user(2n, 9) }]));
      expect(stateNow(writer)).toEqual({ first: { age: 2 }, users: [1n, 2n] });
    } finally {
      await writer.close();
      rmSync(path, { recursive: true, force: true });
    }
  });

  it("keeps one state through its run while another process commits (a read-only handle beside a writer)", async () => {
    const path = mkdtempSync(join(tmpdir(), "silk-sync-snapshot-"));
    const range = { idFirst: 1n, idLast: 2n ** 64n - 1n };
    const seed = PartitionStore.open({ path, readOnly: false, noSync: false, ...range });
    seed.apply(encodeMutations([{ op: "put_record", record: user(1n, 1) }]));
    await seed.close();
    const reader = PartitionStore.open({ path, readOnly: true, noSync: false, ...range });
    // The other process: opens the same environment as a writer and commits age 2 and a second user.
    const writeInChild = (): void => {
      const script = [
        `import { PartitionStore } from "./node/store/partition-store.ts";`,
        `import { encodeMutations } from "./protocol/mutation-codec.ts";`,
        `const store = PartitionStore.open({ path: ${JSON.stringify(path)}, readOnly: false, noSync: false, idFirst: 1n, idLast: 2n ** 64n - 1n });`,
        `const user = (id, age) => ({ kind: "node", id, label: "User", props: { age } });`,
        `store.apply(encodeMutations([{ op: "put_record", record: user(1n, 2) }, { op: "put_record", record: user(2n, 9) }]));`,
        `await store.close();`,
      ].join("\n");
      const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: REPO, encoding: "utf8" });
      expect(child.status, child.stderr).toBe(0);
    };
    try {
      const snapshot = reader.synchronousSnapshot();
      expect(stateOf(snapshot)).toEqual({ first: { age: 1 }, users: [1n] });
      writeInChild(); // synchronous: this run has not yielded
      expect(stateOf(snapshot)).toEqual({ first: { age: 1 }, users: [1n] });
      expect(snapshot.exists("node", 2n)).toBe(false);
      snapshot.close();
      // lmdb-js renews its shared read transaction after a timer turn; a snapshot taken then sees the commit.
      await new Promise((resume) => setTimeout(resume, 5));
      expect(stateNow(reader)).toEqual({ first: { age: 2 }, users: [1n, 2n] });
    } finally {
      await reader.close();
      rmSync(path, { recursive: true, force: true });
    }
  });
});
