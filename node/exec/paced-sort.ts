/**
 * A stable sort that yields to the event loop while it works, for streams too large to sort in one synchronous
 * call (a million records sorted by a property take about a second of comparisons, during which no other request,
 * not even GET /health, would run). Runs of SORT_RUN_ELEMENTS are sorted with Array.prototype.sort (stable, and fast
 * enough to finish well inside a slice); the runs are then merged pairwise, level by level, counting every element
 * written against the deadline (`tick`), pausing when the slice is spent and failing with `query_timeout` past the
 * deadline. A stream of at most one run is sorted in place, with no pause.
 */
import type { Deadline } from "./deadline.js";
import type { Op } from "./ops.js";

/** Elements per run sorted in one synchronous call: small enough to take well under a slice. */
export const SORT_RUN_ELEMENTS = 4_096;

export function* pacedSort<T>(items: T[], compare: (a: T, b: T) => number, deadline: Deadline): Op<T[]> {
  if (items.length <= SORT_RUN_ELEMENTS) return items.sort(compare);
  for (let start = 0; start < items.length; start += SORT_RUN_ELEMENTS) {
    const run = items.slice(start, start + SORT_RUN_ELEMENTS).sort(compare);
    for (let i = 0; i < run.length; i += 1) items[start + i] = run[i];
    if (deadline.tick(run.length)) yield deadline.pause();
  }
  let from = items;
  let to: T[] = new Array<T>(items.length);
  for (let width = SORT_RUN_ELEMENTS; width < items.length; width *= 2) {
    for (let left = 0; left < items.length; left += 2 * width) {
      const middle = Math.min(left + width, items.length);
      const end = Math.min(left + 2 * width, items.length);
      let i = left;
      let j = middle;
      for (let k = left; k < end; k += 1) {
        // Take from the left run on ties: equal elements keep their order.
        to[k] = j >= end || (i < middle && compare(from[i], from[j]) <= 0) ? from[i++] : from[j++];
        if (deadline.tick()) yield deadline.pause();
      }
    }
    [from, to] = [to, from];
  }
  return from;
}
