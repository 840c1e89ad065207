/**
 * One executor, two ways to run it (node/exec/ops.ts): synchronously on lmdb-js's shared read transaction, as the
 * partition actor answers a prepared read at once (`runNow`, `readPreparedNow`), and asynchronously where a read
 * must wait. Random plans run both ways on the same LMDB state must give equal results or the same error code (the
 * asynchronous side reads through a base that answers every read with a promise, so every step waits); a run that
 * outruns its slice is given up synchronously and answers the same when driven; the actor answers reads of every
 * kind at once and leaves writes and runs that must wait to the held snapshot. Also: a synchronous snapshot keeps one
 * state until its caller yields.
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
import { executePlan, planRun } from "../../node/exec/executor.js";
import { drive, NOT_NOW, runAsync, runNow, type Maybe, type Op } from "../../node/exec/ops.js";
import { PartitionActor, SnapshotReader } from "../../node/actor/partition-actor.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { BASE_READ_CHUNK_IDS, TxnView, type BaseReader } from "../../node/exec/txn-view.js";
import { SilkError } from "../../protocol/errors.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { QueryResult } from "../../protocol/messages.js";
import type { StoredRecord } from "../../protocol/records.js";
import { decodeRequest, type Plan } from "../../protocol/tree.js";
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
  orderBy,
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
  directory = mkdtempSync(join(tmpdir(), "silk-sync-runs-"));
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

/** A snapshot's reads, each answered with a promise: every step of a run over it has to wait. */
class PromisedReader implements BaseReader {
  constructor(private readonly reader: SnapshotReader) {}
  records = (...args: Parameters<SnapshotReader["records"]>) => Promise.resolve(this.reader.records(...args));
  exists = (...args: Parameters<SnapshotReader["exists"]>) => Promise.resolve(this.reader.exists(...args));
  adjacency = (...args: Parameters<SnapshotReader["adjacency"]>) => Promise.resolve(this.reader.adjacency(...args));
  neighbours = (...args: Parameters<SnapshotReader["neighbours"]>) => Promise.resolve(this.reader.neighbours(...args));
  idsOfLabel = (...args: Parameters<SnapshotReader["idsOfLabel"]>) => Promise.resolve(this.reader.idsOfLabel(...args));
  allIds = (...args: Parameters<SnapshotReader["allIds"]>) => Promise.resolve(this.reader.allIds(...args));
  countIds = (...args: Parameters<SnapshotReader["countIds"]>) => Promise.resolve(this.reader.countIds(...args));
  indexIds = (...args: Parameters<SnapshotReader["indexIds"]>) => Promise.resolve(this.reader.indexIds(...args));
  vectorSearch = (...args: Parameters<SnapshotReader["vectorSearch"]>) => Promise.resolve(this.reader.vectorSearch(...args));
  textSearch = (...args: Parameters<SnapshotReader["textSearch"]>) => Promise.resolve(this.reader.textSearch(...args));
}

const ids = { allocate: (): bigint => 0n };

/** The executor's run of a read plan over `base`. */
function runOver(plan: Plan, base: BaseReader, deadline: Deadline): Maybe<QueryResult> {
  return planRun(plan, { view: new TxnView(base, ids, deadline), schema: undefined, now: () => new Date(0), writable: false, deadline });
}

/**
 * Runs a request synchronously on a synchronous snapshot (`runNow`, a clock that stands still so it never gives up)
 * and asynchronously on a held snapshot whose every read is a promise.
 */
async function bothWays(request: unknown): Promise<{ waiting: Outcome; now: Outcome }> {
  const plan = decodeRequest(request as Json);
  const waiting = await settle(() => {
    const snapshot = store.snapshot();
    return executePlan(plan, { view: new TxnView(new PromisedReader(new SnapshotReader(snapshot)), ids), schema: undefined, now: () => new Date(0), writable: false, deadline: Deadline.none() }).finally(() => snapshot.close());
  });
  const now = await settle(() => {
    const snapshot = store.synchronousSnapshot();
    try {
      const result = runNow(runOver(plan, new SnapshotReader(snapshot), Deadline.none(() => 0)));
      expect(result).not.toBe(NOT_NOW);
      return result;
    } finally {
      snapshot.close();
    }
  });
  return { waiting, now };
}

const hasLabel = (input: TreeNode, name: string): TreeNode => ({ has_label: { input: input as Json, label: name } });

/** Random read plans: sources by ID, parameter, variable and scan, traversals, filters, paging, ordering, projections. */
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
      fc.tuple(tie("step"), fc.nat(24)).map(([input, n]) => where(input, gt(prop("n"), n))),
      tie("step").map((input) => orderBy(input, "n", "desc")),
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
    step.map((input) => valueMap(input, ["n"])),
    step.map((input) => values(input, "name")),
    step.map((input) => dedup(values(input, "n"))),
    step.map((input): TreeNode => ({ group_count: { input: input as Json, properties: ["n"] } })),
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

describe("one executor, run at once or waiting", () => {
  it("gives the same results and errors on random read plans, whether every read waits or none does", async () => {
    await fc.assert(
      fc.asyncProperty(plans(), async ({ request }) => {
        const { waiting, now } = await bothWays(request);
        expect(now).toEqual(waiting);
      }),
      { numRuns: 300, seed: 20261126 },
    );
  });

  it("answers a traversal with records, IDs and counts (not only errors)", async () => {
    const request = read([entry("a", out(nodes(ref.param("p")), "X")), entry("r", count(nodes(ref.var("a"))))], ["a", "r"], { p: nodeIds.slice(0, 6) });
    const { waiting, now } = await bothWays(request);
    expect(now).toEqual(waiting);
    expect(now.ok).toBe(true);
    const result = (now as { result: { a: unknown[]; r: number } }).result;
    expect(result.a.length).toBeGreaterThan(0);
    expect(result.r).toBeGreaterThan(0);
  });

  it("answers a range or limit of an ordering as that slice of the whole ordering, ties and missing keys in their places", async () => {
    const sources = [nodes(ref.all), edges(ref.all), out(nodes(ref.all)), outE(nodes(ref.all), "X"), nodes(ref.ids(...nodeIds.slice(0, 3)))];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...sources),
        fc.constantFrom("n", "w", "name"),
        fc.constantFrom<"asc" | "desc">("asc", "desc"),
        fc.constantFrom("helixql", "helixdb_v3"),
        fc.nat(70),
        fc.nat(70),
        fc.boolean(),
        async (source, property, order, rule, start, end, asRange) => {
          const ordering: TreeNode = { order_by: { input: source as Json, property, order, rule } };
          const whole = await bothWays(read([entry("r", id(ordering))], ["r"]));
          const paged = await bothWays(read([entry("r", id(asRange ? range(ordering, start, end) : limit(ordering, end)))], ["r"]));
          expect(whole.now).toEqual(whole.waiting);
          expect(paged.now).toEqual(paged.waiting);
          const all = (whole.now as { result: { r: string[] } }).result.r;
          expect((paged.now as { result: { r: string[] } }).result.r).toEqual(all.slice(asRange ? start : 0, end));
        },
      ),
      { numRuns: 200, seed: 20261126 },
    );
  });

  it("gives a run up at its first wait once a large read outruns its slice; driven on a held snapshot it answers the same", async () => {
    // More IDs than one read chunk, so the slice is checked between chunks; the clock moves a whole slice per reading.
    const request = read([entry("r", count(nodes(ref.param("p"))))], ["r"], { p: Array.from({ length: BASE_READ_CHUNK_IDS * 3 }, (_, i) => nodeIds[i % NODES]) });
    const plan = decodeRequest(request as unknown as Json);
    const moving = (): Deadline => {
      let nowMs = 0;
      return Deadline.none(() => (nowMs += EXECUTION_SLICE_MS));
    };
    const shared = store.synchronousSnapshot();
    try {
      expect(runNow(runOver(plan, new SnapshotReader(shared), moving()))).toBe(NOT_NOW);
      expect(runNow(runOver(plan, new SnapshotReader(shared), Deadline.none(() => 0)))).toEqual({ r: BASE_READ_CHUNK_IDS * 3 });
    } finally {
      shared.close();
    }
    const held = store.snapshot();
    try {
      const driven = drive(runOver(plan, new SnapshotReader(held), moving()));
      expect(driven).toBeInstanceOf(Promise);
      expect(await driven).toEqual({ r: BASE_READ_CHUNK_IDS * 3 });
    } finally {
      held.close();
    }
  });
});

describe("the partition actor's reads at once", () => {
  const prepared = async (actor: PartitionActor, planId: number, request: unknown): Promise<void> => {
    const reply = await actor.handle({ type: "register_plan", planId, plan: decodeRequest(request as Json) });
    expect(reply.ok).toBe(true);
  };
  const run = (planId: number, parameters: Record<string, unknown> = {}) => ({ type: "execute_prepared" as const, planId, parameters, timeoutMs: undefined });

  it("answers reads of every kind synchronously, as execute_prepared answers them, and leaves writes to the queue", async () => {
    // A clock that stands still: no run outruns its slice, however slow the machine.
    const actor = new PartitionActor({ store, schema: undefined, writable: false, now: () => new Date(0), clockMs: () => 0 });
    const union: TreeNode = { union: { input: nodes(ref.param("p")) as Json, traversals: [{ root: out("context" as TreeNode, "X") as Json }, { root: in_("context" as TreeNode) as Json }] } };
    const reads: TreeNode[] = [
      valueMap(nodes(ref.param("p"))),
      values(out(nodes(ref.param("p"))), "name"),
      valueMap(where(out(nodes(ref.param("p"))), gt(prop("n"), 5)), ["n"]),
      range(orderBy(nodes(ref.all), "n", "desc"), 2, 6),
      dedup(union),
      { aggregate: { input: nodes(ref.all) as Json, fn: "sum", property: "n" } } as TreeNode,
      { group_count: { input: out(nodes(ref.param("p"))) as Json, properties: ["n"] } },
    ];
    for (const [i, root] of reads.entries()) {
      await prepared(actor, i + 1, read([entry("r", root)], ["r"]));
      const request = run(i + 1, { p: nodeIds.slice(0, 5) });
      const now = actor.readPreparedNow(request);
      expect(now, JSON.stringify(root)).toBeDefined();
      const reply = await actor.handle(request);
      expect(reply).toEqual({ ok: true, body: { type: "result", result: now } });
    }
    await prepared(actor, 100, writeOne(addN("A", { n: 1 })));
    expect(actor.readPreparedNow(run(100))).toBeUndefined();
  });

  it("leaves a read that had to wait to execute_prepared for its next runs, twice as many after each run given up in a row", async () => {
    // The clock moves a whole slice per reading: every run that reads it twice is given up.
    let readings = 0;
    const actor = new PartitionActor({ store, schema: undefined, writable: false, now: () => new Date(0), clockMs: () => (readings += 1) * EXECUTION_SLICE_MS });
    await prepared(actor, 1, read([entry("r", count(nodes(ref.param("p"))))], ["r"]));
    const request = run(1, { p: Array.from({ length: BASE_READ_CHUNK_IDS * 3 }, (_, i) => nodeIds[i % NODES]) });
    /** Whether readPreparedNow tried the run (it reads the clock) or left it at once; it answers undefined either way. */
    const tried = (): boolean => {
      const before = readings;
      expect(actor.readPreparedNow(request)).toBeUndefined();
      return readings > before;
    };
    expect(tried()).toBe(true);
    expect(await actor.handle(request)).toEqual({ ok: true, body: { type: "result", result: { r: BASE_READ_CHUNK_IDS * 3 } } });
    expect([tried(), tried()]).toEqual([false, true]);
    expect([tried(), tried(), tried()]).toEqual([false, false, true]);
    expect([tried(), tried(), tried(), tried(), tried()]).toEqual([false, false, false, false, true]);
  });

  it("tries a plan at once again after a run of it that was given up, and forgets it once a run answers", async () => {
    let moving = true;
    let nowMs = 0;
    const actor = new PartitionActor({ store, schema: undefined, writable: false, now: () => new Date(0), clockMs: () => (moving ? (nowMs += EXECUTION_SLICE_MS) : nowMs) });
    // Two entries: a chain of steps checks its slice once, before its first read; the second entry checks again.
    await prepared(actor, 1, read([entry("a", nodes(ref.param("p"))), entry("r", valueMap(nodes(ref.param("p"))))], ["r"]));
    const request = run(1, { p: nodeIds[0] });
    expect(actor.readPreparedNow(request)).toBeUndefined(); // given up
    moving = false;
    expect(actor.readPreparedNow(request)).toBeUndefined(); // left to execute_prepared
    expect(actor.readPreparedNow(request)).toEqual((await actor.handle(request) as { body: { result: unknown } }).body.result);
    expect(actor.readPreparedNow(request)).toBeDefined();
  });

  it("answers an error at once as execute_prepared answers it", async () => {
    const actor = new PartitionActor({ store, schema: undefined, writable: false, now: () => new Date(0), clockMs: () => 0 });
    await prepared(actor, 1, read([entry("r", valueMap(nodes(ref.param("p"))))], ["r"]));
    const request = run(1, { p: "not an id" });
    const thrown = (() => {
      try {
        actor.readPreparedNow(request);
      } catch (cause) {
        return cause;
      }
      return undefined;
    })();
    expect(thrown).toBeInstanceOf(SilkError);
    const reply = await actor.handle(request);
    expect(reply).toMatchObject({ ok: false, code: (thrown as SilkError).code });
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
