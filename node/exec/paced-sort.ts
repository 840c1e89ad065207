/**
 * A stable sort that yields to the event loop while it works, for streams too large to sort in one synchronous
 * call (a million records sorted by a property take about a second of comparisons, during which no other request,
 * not even GET /health, would run). Runs of SORT_RUN_ELEMENTS are sorted with Array.prototype.sort (stable, and fast
 * enough to finish well inside a slice); the runs are then merged pairwise, level by level, counting every element
 * written against the deadline (`tick`), pausing when the slice is spent and failing with `query_timeout` past the
 * deadline. A stream of at most one run is sorted in place, with no pause.
 *
 * Where only the first `keep` elements of the sorted stream are wanted (an `order_by` read by a `range` or `limit`),
 * `pacedFirst` selects them with a heap of `keep` elements: n log keep comparisons instead of n log n, and the order
 * (ties included) of the stable sort's first `keep`.
 */
import type { Deadline } from "./deadline.js";
import type { Maybe, Op } from "./ops.js";

/** Elements per run sorted in one synchronous call: small enough to take well under a slice. */
export const SORT_RUN_ELEMENTS = 4_096;

/** `pacedSort` as a plain function for a stream of at most one run (no generator is built), else its op. */
export function sortNow<T>(items: T[], compare: (a: T, b: T) => number, deadline: Deadline): Maybe<T[]> {
  return items.length <= SORT_RUN_ELEMENTS ? items.sort(compare) : pacedSort(items, compare, deadline);
}

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

/**
 * The first `keep` of `items` as a stable sort by `compare` would order them (all of them sorted when they are no
 * more than `keep`). A stream of at most one run is answered at once; a longer one counts its elements against the
 * deadline and pauses when the slice is spent.
 */
export function pacedFirst<T>(items: readonly T[], compare: (a: T, b: T) => number, keep: number, deadline: Deadline): Maybe<T[]> {
  if (keep <= 0) return [];
  if (items.length <= keep) return sortNow(items.slice(), compare, deadline);
  const heap = new FirstHeap(items, compare, keep);
  if (items.length <= SORT_RUN_ELEMENTS) {
    for (let i = keep; i < items.length; i += 1) heap.offer(i);
    return heap.sorted();
  }
  return pacedSelection(heap, items.length, deadline);
}

function* pacedSelection<T>(heap: FirstHeap<T>, length: number, deadline: Deadline): Op<T[]> {
  for (let i = heap.size; i < length; i += 1) {
    heap.offer(i);
    if (deadline.tick()) yield deadline.pause();
  }
  return heap.sorted();
}

/**
 * The best `keep` positions of `items` seen so far, the worst at the root. Positions break ties (the earlier is
 * better), so the heap's order is total and its survivors are those a stable sort puts first.
 */
class FirstHeap<T> {
  private readonly positions: number[] = [];

  constructor(
    private readonly items: readonly T[],
    private readonly compare: (a: T, b: T) => number,
    keep: number,
  ) {
    for (let i = 0; i < keep; i += 1) this.push(i);
  }

  get size(): number {
    return this.positions.length;
  }

  /** Whether position `a` sorts after position `b`. */
  private after(a: number, b: number): boolean {
    const order = this.compare(this.items[a], this.items[b]);
    return order > 0 || (order === 0 && a > b);
  }

  private push(position: number): void {
    const { positions } = this;
    let at = positions.length;
    positions.push(position);
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.after(positions[at], positions[parent])) break;
      [positions[at], positions[parent]] = [positions[parent], positions[at]];
      at = parent;
    }
  }

  /** Takes `position` in place of the worst kept one when it sorts before it (a later position never ties in). */
  offer(position: number): void {
    const { positions } = this;
    if (!this.after(positions[0], position)) return;
    positions[0] = position;
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= positions.length) break;
      const right = left + 1;
      const worse = right < positions.length && this.after(positions[right], positions[left]) ? right : left;
      if (!this.after(positions[worse], positions[at])) break;
      [positions[at], positions[worse]] = [positions[worse], positions[at]];
      at = worse;
    }
  }

  /** The kept items, in sorted order. */
  sorted(): T[] {
    return this.positions.sort((a, b) => (this.after(a, b) ? 1 : -1)).map((position) => this.items[position]);
  }
}
