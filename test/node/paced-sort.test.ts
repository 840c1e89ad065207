/**
 * order_by sorts a large stream in runs and merges them, pausing when the slice is spent (issue 20: a sort of a
 * million records was one synchronous call of about a second, during which no other request ran). The answer is
 * Array.prototype.sort's, stable, and a deadline that passes mid-sort fails it with query_timeout. pacedFirst (a
 * range or limit of an ordering) answers the first elements of that same sort, paced the same way.
 */
import { describe, expect, it } from "vitest";
import { Deadline } from "../../node/exec/deadline.js";
import { pacedFirst, pacedSort, SORT_RUN_ELEMENTS } from "../../node/exec/paced-sort.js";
import { runAsync } from "../../node/exec/ops.js";
import { SilkError } from "../../protocol/errors.js";

/** A clock that moves one millisecond per reading: a slice is spent after a few readings. */
function tickingClock(): () => number {
  let now = 0;
  return () => (now += 1);
}

/** Pseudo-random keys with many ties, each tagged with its position so stability can be checked. */
function items(count: number, distinct: number): { key: number; at: number }[] {
  let state = 12_345;
  return Array.from({ length: count }, (_, at) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return { key: state % distinct, at };
  });
}

const byKey = (a: { key: number }, b: { key: number }): number => a.key - b.key;

describe("pacedSort", () => {
  it("answers what a stable Array.prototype.sort answers, for sizes around the run length and far beyond", async () => {
    for (const count of [0, 1, SORT_RUN_ELEMENTS, SORT_RUN_ELEMENTS + 1, 3 * SORT_RUN_ELEMENTS + 17, 40_000]) {
      const input = items(count, 97);
      const expected = [...input].sort(byKey);
      const sorted = await runAsync(pacedSort([...input], byKey, Deadline.none(() => 0)));
      expect(sorted.map((item) => item.at)).toEqual(expected.map((item) => item.at));
    }
  });

  it("lets the event loop run while it sorts a large array", async () => {
    let finished = false;
    let ranWhileSorting = false;
    setImmediate(() => (ranWhileSorting = !finished));
    const sorted = await runAsync(pacedSort(items(100_000, 1_000), byKey, Deadline.none(tickingClock())));
    finished = true;
    expect(ranWhileSorting).toBe(true);
    expect(sorted.every((item, i) => i === 0 || sorted[i - 1].key <= item.key)).toBe(true);
  });

  it("fails with query_timeout once the deadline passes mid-sort", async () => {
    const error = await runAsync(pacedSort(items(100_000, 1_000), byKey, Deadline.after(50, tickingClock()))).catch((cause: unknown) => cause);
    expect(error).toBeInstanceOf(SilkError);
    expect((error as SilkError).code).toBe("query_timeout");
  });
});

describe("pacedFirst", () => {
  it("answers a stable sort's first keep elements, ties in their order, for every size and keep around the run length", async () => {
    for (const count of [0, 1, 2, 10, SORT_RUN_ELEMENTS, SORT_RUN_ELEMENTS + 1, 3 * SORT_RUN_ELEMENTS + 17]) {
      for (const distinct of [1, 3, 97, 100_000]) {
        const input = items(count, distinct);
        const expected = [...input].sort(byKey);
        for (const keep of [0, 1, 2, 10, 11, count - 1, count, count + 5, SORT_RUN_ELEMENTS + 3]) {
          if (keep < 0) continue;
          const first = await runAsync(pacedFirst(input, byKey, keep, Deadline.none(() => 0)));
          expect(first.map((item) => item.at)).toEqual(expected.slice(0, keep).map((item) => item.at));
        }
      }
    }
  });

  it("leaves its input as it was", () => {
    const input = items(50, 7);
    const before = input.map((item) => item.at);
    pacedFirst(input, byKey, 5, Deadline.none(() => 0));
    expect(input.map((item) => item.at)).toEqual(before);
  });

  it("lets the event loop run while it selects from a large array, and fails with query_timeout past the deadline", async () => {
    let finished = false;
    let ranWhileSelecting = false;
    setImmediate(() => (ranWhileSelecting = !finished));
    const input = items(100_000, 1_000);
    const first = await runAsync(pacedFirst(input, byKey, 10, Deadline.none(tickingClock())));
    finished = true;
    expect(ranWhileSelecting).toBe(true);
    expect(first.map((item) => item.at)).toEqual([...input].sort(byKey).slice(0, 10).map((item) => item.at));
    const error = await runAsync(pacedFirst(input, byKey, 10, Deadline.after(50, tickingClock()))).catch((cause: unknown) => cause);
    expect(error).toBeInstanceOf(SilkError);
    expect((error as SilkError).code).toBe("query_timeout");
  });
});
