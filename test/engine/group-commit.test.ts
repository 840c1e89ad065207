/**
 * Group commit (node/actor/write-group.ts): a single server's write invocations that wait together run one after another,
 * each against the state of those before it, and commit in one LMDB transaction, each answered once it is durable.
 * The groups are watched through PartitionStore.applyAll, which commits one group's lists: how many lists each call
 * carried says how the invocations were grouped, and a fault is injected there.
 */
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { PartitionStore } from "../../node/store/partition-store.js";
import { SilkError } from "../../protocol/errors.js";
import type { InternalOpenOptions } from "../../runtime/embedded.js";
import { BACKENDS, TestDatabase, removeTempDirs } from "../helpers/engine.js";

afterAll(removeTempDirs);

const SCHEMA = `
N::Ticket { UNIQUE INDEX seq: I64, note: String }
N::Doc { TEXT INDEX body: String }
N::Item { VECTOR INDEX(dimension: 2, metric: euclidean) v: [F32] }

QUERY Take(note: String) =>
    n <- N<Ticket>::COUNT
    t <- AddN<Ticket>({seq: n, note: note})
    RETURN t
QUERY AddTicket(seq: I64, note: String) =>
    t <- AddN<Ticket>({seq: seq, note: note})
    RETURN t
QUERY Renote(seq: I64, note: String) =>
    t <- N<Ticket>::WHERE(_::{seq}::EQ(seq))::UPDATE({note: note})
    RETURN t
QUERY DropTicket(seq: I64) =>
    DROP N<Ticket>::WHERE(_::{seq}::EQ(seq))
    RETURN "dropped"
QUERY Tickets() =>
    t <- N<Ticket>
    RETURN t
QUERY AddDoc(body: String) =>
    d <- AddN<Doc>({body: body})
    RETURN d
QUERY AddAndFind(body: String, q: String) =>
    d <- AddN<Doc>({body: body})
    hits <- SearchBM25<Doc>(q, 10)
    RETURN hits
QUERY AddItem(v: [F32]) =>
    i <- AddN<Item>({v: v})
    RETURN i
QUERY AddAndNear(v: [F32], q: [F32]) =>
    i <- AddN<Item>({v: v})
    hits <- SearchV<Item>(q, 10)
    RETURN hits
QUERY Items() =>
    i <- N<Item>
    RETURN i
`;

/** The group sizes PartitionStore.applyAll committed (lists per call) since `watchGroups`. */
function watchGroups(): number[] {
  const sizes: number[] = [];
  const original = PartitionStore.prototype.applyAll;
  vi.spyOn(PartitionStore.prototype, "applyAll").mockImplementation(function (this: PartitionStore, batches) {
    sizes.push(batches.length);
    original.call(this, batches);
  });
  return sizes;
}

/** How each invocation ended: "fulfilled", or the code of the SilkError it was answered. */
function endings(outcomes: readonly PromiseSettledResult<unknown>[]): string[] {
  return outcomes.map((outcome) => (outcome.status === "fulfilled" ? "fulfilled" : outcome.reason instanceof SilkError ? outcome.reason.code : String(outcome.reason)));
}

interface Ticket {
  readonly id: string;
  readonly seq: number;
  readonly note: string;
}

const single = BACKENDS.filter((backend) => backend.partitions === 1);

describe.each(single)("group commit ($name)", (backend) => {
  let t: TestDatabase;
  const open = async (internal: InternalOpenOptions = {}): Promise<void> => {
    t = await TestDatabase.open(backend, { schema: SCHEMA }, internal);
  };
  afterEach(async () => {
    vi.restoreAllMocks();
    await t.destroy();
  });

  /** What a query returns: each of this file's queries returns one value. */
  const query = async (name: string, parameters: Record<string, unknown> = {}): Promise<unknown> => Object.values((await t.db.query(name, parameters)) as Record<string, unknown>)[0];
  const tickets = async (): Promise<Ticket[]> => ((await query("Tickets")) as Ticket[]).map(({ id, seq, note }) => ({ id, seq, note }));

  it("commits concurrent read-then-write invocations in groups, ending as their serial execution does", async () => {
    await open();
    const groups = watchGroups();
    const notes = Array.from({ length: 40 }, (_, i) => `n${i}`);
    // Each Take counts the tickets and takes the next number: any invocation that missed another's write would
    // take a number twice (a unique_violation) or leave a gap.
    const answers = (await Promise.all(notes.map((note) => query("Take", { note })))) as Ticket[];
    expect(groups.some((size) => size > 1)).toBe(true);
    expect(groups.reduce((sum, size) => sum + size, 0)).toBe(40);
    expect(answers.map((answer) => answer.seq).sort((a, b) => a - b)).toEqual(notes.map((_, i) => i));
    const grouped = await tickets();

    // The same invocations one at a time, in the order the groups ran them (their numbers), on a fresh database.
    await t.destroy();
    await open();
    const bySeq = [...answers].sort((a, b) => a.seq - b.seq);
    for (const answer of bySeq) await query("Take", { note: answer.note });
    const serial = await tickets();
    const strip = (list: Ticket[]): { seq: number; note: string }[] => list.map(({ seq, note }) => ({ seq, note })).sort((a, b) => a.seq - b.seq);
    expect(strip(grouped)).toEqual(strip(serial));
  });

  it("reads the writes of the members before it: records, secondary-index lookups, UNIQUE checks, updates and drops", async () => {
    await open();
    // Each query once before: a query's first run registers its plan with the partition first, which would let a
    // later one overtake it on the way to the write queue.
    await query("AddTicket", { seq: 100, note: "warm" });
    await query("Renote", { seq: 100, note: "warm" });
    await query("DropTicket", { seq: 100 });
    await query("Take", { note: "warm" });
    const groups = watchGroups();
    const outcomes = await Promise.allSettled([
      query("AddTicket", { seq: 5, note: "first" }),
      query("Renote", { seq: 5, note: "renoted" }),
      query("AddTicket", { seq: 5, note: "again" }),
      query("Take", { note: "counted" }),
      query("AddTicket", { seq: 7, note: "doomed" }),
      query("DropTicket", { seq: 7 }),
      query("AddTicket", { seq: 7, note: "reborn" }),
    ]);
    expect(endings(outcomes)).toEqual(["fulfilled", "fulfilled", "unique_violation", "fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
    expect(groups).toEqual([6]);
    const value = (i: number): unknown => (outcomes[i] as PromiseFulfilledResult<unknown>).value;
    expect((value(1) as Ticket[]).map(({ seq, note }) => ({ seq, note }))).toEqual([{ seq: 5, note: "renoted" }]);
    expect((value(3) as Ticket).seq).toBe(2);
    expect((value(6) as Ticket).note).toBe("reborn");
    const stored = (await tickets()).map(({ seq, note }) => ({ seq, note })).sort((a, b) => a.seq - b.seq);
    expect(stored).toEqual([
      { seq: 0, note: "warm" },
      { seq: 2, note: "counted" },
      { seq: 5, note: "renoted" },
      { seq: 7, note: "reborn" },
    ]);
  });

  it("a member that fails leaves no trace, and the others of its group commit", async () => {
    await open();
    const groups = watchGroups();
    const outcomes = await Promise.allSettled([
      query("AddTicket", { seq: 1, note: "a" }),
      query("AddTicket", { seq: 1, note: "duplicate" }),
      query("AddTicket", { seq: 2, note: "b" }),
      query("AddTicket", { seq: "not a number", note: "bad input" }),
      query("AddTicket", { seq: 3, note: "c" }),
    ]);
    expect(endings(outcomes)).toEqual(["fulfilled", "unique_violation", "fulfilled", "invalid_value", "fulfilled"]);
    expect(groups).toEqual([3]);
    expect((await tickets()).map(({ seq, note }) => ({ seq, note }))).toEqual([
      { seq: 1, note: "a" },
      { seq: 2, note: "b" },
      { seq: 3, note: "c" },
    ]);
  });

  it("a member refused by a check only the commit makes fails alone: the group's members run again, each alone", async () => {
    await open();
    const groups = watchGroups();
    const outcomes = await Promise.allSettled([
      query("AddItem", { v: [1, 2] }),
      query("AddItem", { v: [1, 2, 3] }),
      query("AddItem", { v: [3, 4] }),
    ]);
    expect(endings(outcomes)).toEqual(["fulfilled", "vector_dimension_mismatch", "fulfilled"]);
    // The group of three failed as one transaction; then each ran and committed (or failed) alone.
    expect(groups).toEqual([3, 1, 1, 1]);
    const items = (await query("Items")) as { v: number[] }[];
    expect(items.map((item) => item.v)).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });

  it("sees the members before it in a vector search", async () => {
    await open();
    const groups = watchGroups();
    const [, near] = await Promise.all([query("AddItem", { v: [0, 0] }), query("AddAndNear", { v: [5, 5], q: [0, 0] })]);
    expect(groups).toEqual([2]);
    expect((near as { v: number[] }[]).map((item) => item.v)).toEqual([
      [0, 0],
      [5, 5],
    ]);
  });

  it("commits the group before a member whose text search cannot see it, which then sees it", async () => {
    await open();
    const groups = watchGroups();
    const [, hits] = await Promise.all([query("AddDoc", { body: "alpha beta" }), query("AddAndFind", { body: "gamma", q: "alpha" })]);
    expect(groups).toEqual([1, 1]);
    expect((hits as { body: string }[]).map((doc) => doc.body)).toEqual(["alpha beta"]);
  });

  it("answers each member only after its group's transaction committed", async () => {
    await open();
    const events: string[] = [];
    const original = PartitionStore.prototype.applyAll;
    vi.spyOn(PartitionStore.prototype, "applyAll").mockImplementation(function (this: PartitionStore, batches) {
      original.call(this, batches);
      events.push(`commit ${batches.length}`);
    });
    await Promise.all([1, 2, 3].map((seq) => query("AddTicket", { seq, note: "x" }).then(() => events.push("answer"))));
    expect(events).toEqual(["commit 3", "answer", "answer", "answer"]);
  });

  it("a disk fault inside the group's transaction fails every member, and none is written", async () => {
    await open();
    const original = PartitionStore.prototype.applyAll;
    // The members' lists are written in the transaction; then the write of one more list fails as lmdb-js reports an
    // I/O error (EIO): not a member's error, so every member is answered it and nothing runs again.
    const fault = new Uint8Array(0);
    const store = PartitionStore.prototype as unknown as { write(batch: Uint8Array): void };
    const write = store.write;
    vi.spyOn(store, "write").mockImplementation(function (this: PartitionStore, batch) {
      if (batch === fault) throw Object.assign(new Error("Input/output error"), { code: 5 });
      write.call(this, batch);
    });
    const spy = vi.spyOn(PartitionStore.prototype, "applyAll").mockImplementationOnce(function (this: PartitionStore, batches) {
      original.call(this, [...batches, fault]);
    });
    const outcomes = await Promise.allSettled([1, 2, 3].map((seq) => query("AddTicket", { seq, note: "lost" })));
    expect(spy).toHaveBeenCalledTimes(1);
    expect(endings(outcomes)).toEqual(["storage_error", "storage_error", "storage_error"]);
    expect(await tickets()).toEqual([]);
    // The partition writes on afterwards, its UNIQUE index unpolluted by the aborted transaction.
    await query("AddTicket", { seq: 1, note: "kept" });
    expect((await tickets()).map(({ seq, note }) => ({ seq, note }))).toEqual([{ seq: 1, note: "kept" }]);
  });

  it("bounds a group by invocations and by bytes, and commits every write alone with one invocation", async () => {
    await open({ writeGroup: { invocations: 3 } });
    let groups = watchGroups();
    await Promise.all(Array.from({ length: 10 }, (_, i) => query("AddTicket", { seq: i, note: "x" })));
    expect(groups).toEqual([3, 3, 3, 1]);
    await t.destroy();

    vi.restoreAllMocks();
    await open({ writeGroup: { bytes: 1 } });
    groups = watchGroups();
    await Promise.all(Array.from({ length: 4 }, (_, i) => query("AddTicket", { seq: i, note: "x" })));
    expect(groups).toEqual([1, 1, 1, 1]);
    await t.destroy();

    vi.restoreAllMocks();
    await open({ writeGroup: { invocations: 1 } });
    groups = watchGroups();
    await Promise.all(Array.from({ length: 4 }, (_, i) => query("AddTicket", { seq: i, note: "x" })));
    expect(groups).toEqual([1, 1, 1, 1]);
  });

  it("a lone write commits at once, waiting for no other", async () => {
    await open();
    const groups = watchGroups();
    for (let seq = 0; seq < 3; seq += 1) await query("AddTicket", { seq, note: "alone" });
    expect(groups).toEqual([1, 1, 1]);
  });
});
