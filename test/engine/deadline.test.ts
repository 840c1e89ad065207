/**
 * The execution deadline: a request's `timeout_ms` and the servers' default (an internal open option). The clock is
 * a fake that moves one millisecond each time it is read, so a deadline passes after a known number of checks and
 * nothing depends on how fast the machine is. Past the deadline the request fails with `query_timeout` and none of
 * its writes are visible, on memory and on three partitions.
 */
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { Deadline, DEADLINE_CHECK_INTERVAL_ELEMENTS, EXECUTION_SLICE_MS, monotonicClockMs } from "../../node/exec/deadline.js";
import { QUERY_TIMEOUT_MS_MAX } from "../../protocol/limits.js";
import { decodeRequest } from "../../protocol/tree.js";
import { SOCIAL_SOURCES } from "../gateway/social-project.js";
import { BACKENDS, expectCode, removeTempDirs, snapshot, tempDir } from "../helpers/engine.js";
import { addN, count, entry, forEach, nodesOf, readOne, write, type Request } from "../helpers/tree.js";

afterAll(removeTempDirs);

const CHEAP_BACKENDS = BACKENDS.filter((backend) => backend.storage === "memory" || backend.partitions === 3);

/** A clock that moves one millisecond per reading. */
function tickingClock(): () => number {
  let now = 0;
  return () => (now += 1);
}

async function openTicking(backend: (typeof BACKENDS)[number], defaultTimeoutMs?: number): Promise<Database> {
  const storage = backend.storage === "memory" ? ("memory" as const) : { disk: `${tempDir()}/db` };
  return Database.open({ storage, partitions: backend.partitions, schema: SOCIAL_SOURCES }, { clockMs: tickingClock(), defaultTimeoutMs });
}

/** A write batch whose first entry is one cheap step and whose second runs a body for each of 200 rows. */
function twoEntryBatch(timeoutMs?: number): Request {
  const rows = Array.from({ length: 200 }, (_, i) => ({ name: `row${i}` }));
  const request = write(
    [entry("first", addN("User", { name: "First", age: 1 })), forEach("rows", [entry("made", addN("User", { name: "Row", age: 2 }))])],
    ["first"],
    { rows },
  );
  return timeoutMs === undefined ? request : ({ ...request, timeout_ms: timeoutMs } as Request);
}

describe.each(CHEAP_BACKENDS)("execution deadline on $name", (backend) => {
  it("a batch whose later entry runs out of time fails with query_timeout and leaves nothing behind", async () => {
    const db = await openTicking(backend);
    try {
      const before = await snapshot(db);
      await expectCode(db.run(twoEntryBatch(40)), "query_timeout");
      expect(await snapshot(db)).toEqual(before);
      // The first entry alone fits in the same deadline: it was the later one that ran out of time.
      await db.run({ ...write([entry("first", addN("User", { name: "First", age: 1 }))], ["first"]), timeout_ms: 40 });
      expect((await db.run(readOne(count(nodesOf("User"))))).r).toBe(1);
    } finally {
      await db.close();
    }
  });

  it("the same batch within a generous deadline commits both entries", async () => {
    const db = await openTicking(backend);
    try {
      await db.run(twoEntryBatch(QUERY_TIMEOUT_MS_MAX));
      expect((await db.run(readOne(count(nodesOf("User"))))).r).toBe(201);
    } finally {
      await db.close();
    }
  });

  it("the default deadline applies to requests without timeout_ms, which can override it", async () => {
    const db = await openTicking(backend, 40);
    try {
      const before = await snapshot(db);
      await expectCode(db.run(twoEntryBatch()), "query_timeout");
      expect(await snapshot(db)).toEqual(before);
      await db.run(twoEntryBatch(QUERY_TIMEOUT_MS_MAX));
      expect((await db.run(readOne(count(nodesOf("User"))))).r).toBe(201);
    } finally {
      await db.close();
    }
  });

  it("a long invocation lets the event loop run while it works (a callback queued before it runs before it ends)", async () => {
    const db = await openTicking(backend);
    try {
      let finished = false;
      let ranWhileWorking = false;
      setImmediate(() => (ranWhileWorking = !finished));
      await db.run(twoEntryBatch(QUERY_TIMEOUT_MS_MAX));
      finished = true;
      expect(ranWhileWorking).toBe(true);
    } finally {
      await db.close();
    }
  });

  it("the default deadline applies to named queries (prepared plans) too", async () => {
    const db = await openTicking(backend, 1);
    try {
      await expectCode(db.query("CreateUser", { name: "Late", age: 3 }), "query_timeout");
      expect((await db.run({ ...readOne(count(nodesOf("User"))), timeout_ms: QUERY_TIMEOUT_MS_MAX })).r).toBe(0);
    } finally {
      await db.close();
    }
  });
});

describe("Deadline", () => {
  it("reads the clock once every DEADLINE_CHECK_INTERVAL_ELEMENTS elements of a loop", () => {
    let reads = 0;
    const deadline = Deadline.after(1_000, () => (reads += 1, 0));
    expect(reads).toBe(1);
    for (let i = 0; i < DEADLINE_CHECK_INTERVAL_ELEMENTS * 3; i += 1) deadline.tick();
    expect(reads).toBe(4);
  });

  it("throws query_timeout from a loop once the clock is past it", () => {
    let now = 0;
    const deadline = Deadline.after(10, () => now);
    now = 11;
    for (let i = 0; i < DEADLINE_CHECK_INTERVAL_ELEMENTS - 1; i += 1) deadline.tick();
    expect(() => deadline.tick()).toThrow(expect.objectContaining({ code: "query_timeout" }));
    expect(() => deadline.check()).toThrow(expect.objectContaining({ code: "query_timeout" }));
  });

  it("without a timeout never reads the clock", () => {
    const deadline = Deadline.after(undefined, () => {
      throw new Error("read the clock");
    });
    deadline.check();
    expect(deadline.remainingMs()).toBeUndefined();
  });
});

describe("Deadline pacing", () => {
  it("says when a slice of EXECUTION_SLICE_MS is spent, on the same clock reading as the deadline check", () => {
    let now = 0;
    let reads = 0;
    const deadline = Deadline.after(1_000, () => (reads += 1, now));
    now = EXECUTION_SLICE_MS - 1;
    expect(deadline.checkSlice()).toBe(false);
    now = EXECUTION_SLICE_MS;
    expect(deadline.checkSlice()).toBe(true);
    expect(reads).toBe(3);
    now = 1_001;
    expect(() => deadline.checkSlice()).toThrow(expect.objectContaining({ code: "query_timeout" }));
  });

  it("pause lets queued callbacks run, then starts a new slice", async () => {
    let now = 0;
    const deadline = Deadline.none(() => now);
    expect(deadline.checkSlice()).toBe(false);
    now = EXECUTION_SLICE_MS;
    expect(deadline.checkSlice()).toBe(true);
    let ran = false;
    setImmediate(() => (ran = true));
    await deadline.pause();
    expect(ran).toBe(true);
    expect(deadline.checkSlice()).toBe(false);
  });

  it("a deadline without a timeout paces too, reading the clock only when a loop or a chunk asks", () => {
    let reads = 0;
    const deadline = Deadline.none(() => (reads += 1, 0));
    deadline.check();
    for (let i = 0; i < DEADLINE_CHECK_INTERVAL_ELEMENTS - 1; i += 1) expect(deadline.tick()).toBe(false);
    expect(reads).toBe(0);
    deadline.tick();
    expect(reads).toBe(1);
  });

  it("within answers query_timeout at the deadline while the awaited turn has not come, and passes a timely one through", async () => {
    const deadline = Deadline.after(20, monotonicClockMs);
    const startMs = performance.now();
    await expect(deadline.within(new Promise(() => undefined))).rejects.toMatchObject({ code: "query_timeout" });
    expect(performance.now() - startMs).toBeGreaterThanOrEqual(15);
    await expect(Deadline.after(10_000, monotonicClockMs).within(Promise.resolve("turn"))).resolves.toBe("turn");
  });

  it("names the timeout in whole milliseconds", () => {
    let now = 0;
    const deadline = Deadline.after(0.9933100000489503, () => now);
    now = 2;
    expect(() => deadline.check()).toThrow(expect.objectContaining({ code: "query_timeout", message: expect.stringContaining("deadline of 1 ms") }));
  });
});

describe("timeout_ms in the envelope", () => {
  const base = readOne(count(nodesOf("User")));
  it.each([0, -1, 1.5, "100", QUERY_TIMEOUT_MS_MAX + 1, true])("refuses %j with malformed_tree at $.timeout_ms", (value) => {
    expect(() => decodeRequest({ ...base, timeout_ms: value })).toThrow(expect.objectContaining({ code: "malformed_tree", message: expect.stringMatching(/^\$\.timeout_ms:/) }));
  });

  it("decodes whole milliseconds into the plan", () => {
    expect(decodeRequest({ ...base, timeout_ms: 250 }).timeoutMs).toBe(250);
    expect(decodeRequest(base).timeoutMs).toBeUndefined();
  });
});
