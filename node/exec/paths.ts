/**
 * `shortest_path`: for each input node (or vector), the path to the nearest of the target records, by fewest hops
 * (breadth-first, one batched adjacency read per level) or by least total weight (Dijkstra, or A* guided by a numeric
 * property of each record; the weight computed per edge by an expression with the edge as the current element). Ties
 * break by ID: adjacency is visited in order of the other end's ID, then the edge's, and the weighted searches take
 * equal priorities in ID order, so the same data always gives the same path. HelixDB's v3 form (`helixForm`)
 * searches from one node to one node, at most `maxDepth` hops, and answers the path's node IDs.
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { wait, type Op } from "./ops.js";
import { PATH_VISITED_NODES_MAX } from "../../protocol/limits.js";
import { parseId } from "../../protocol/ids.js";
import type { AdjacencyEntry, Direction, EndpointKind } from "../../protocol/records.js";
import type { Expr, PathAlgorithm, PathDirection, Ref, Step } from "../../protocol/tree.js";
import { evaluateExpr, type EvalScope } from "./predicates.js";
import { adjacencyOf, elementsOf, loaded, lookupParameter, recordField, recordToJson, valuesStream, type Element, type Stream } from "./streams.js";

type ShortestPathStep = Extract<Step, { op: "shortest_path" }>;

interface Reached {
  readonly kind: EndpointKind;
  /** How the search first (BFS) or best (Dijkstra, A*) reached this record; absent for the source. */
  readonly previous?: bigint;
  readonly edge?: bigint;
}

interface Found {
  readonly target: bigint;
  readonly reached: Map<bigint, Reached>;
  readonly weight?: number;
}

interface Search {
  readonly step: ShortestPathStep;
  readonly targets: ReadonlySet<bigint>;
  readonly directions: Direction[];
  readonly scope: EvalScope;
}

export function* shortestPaths(step: ShortestPathStep, input: Stream, scope: EvalScope): Op<Stream> {
  const search: Search = { step, targets: yield* pathTargets(step.to, scope), directions: DIRECTIONS[step.direction], scope };
  const sources = yield* loaded(scope.context.view, elementsOf(input, "shortest_path").filter((item) => item.kind !== "edge"));
  if (step.helixForm !== undefined) return yield* nodeIdPath(sources, search);
  const rows: unknown[] = [];
  for (const source of sources) {
    const found = step.algorithm.kind === "bfs" ? yield* breadthFirst(source, search) : yield* leastWeight(source, step.algorithm, search);
    if (found !== undefined) rows.push(yield* renderPath(found, scope));
  }
  return valuesStream(rows);
}

const DIRECTIONS: Record<PathDirection, Direction[]> = { out: ["out"], in: ["in"], both: ["out", "in"] };

/**
 * HelixDB's form: the IDs of the path's nodes, source first, or none. Its ends name one node each: a variable or
 * parameter that names several is refused, one that names a missing node finds no path.
 */
function* nodeIdPath(sources: readonly Element[], search: Search): Op<Stream> {
  for (const [end, count] of [["source", sources.length], ["target", search.targets.size]] as const) {
    if (count > 1) throw new SilkError("invalid_value", `shortest_path.${end} must name exactly one node, not ${count}`);
  }
  const found = sources.length === 0 ? undefined : yield* breadthFirst(sources[0], search);
  if (found === undefined) return valuesStream([]);
  const ids: unknown[] = [];
  const { renderId } = search.scope.context;
  for (let id: bigint | undefined = found.target; id !== undefined; id = found.reached.get(id)!.previous) ids.push(renderId(id));
  return valuesStream(ids.reverse());
}

/** The IDs a path may end at. IDs that name nothing are simply never reached. */
function* pathTargets(ref: Ref, scope: EvalScope): Op<Set<bigint>> {
  switch (ref.kind) {
    case "all":
      return new Set([...(yield* wait(scope.context.view.allIds("node"))), ...(yield* wait(scope.context.view.allIds("vector")))]);
    case "ids":
      return new Set(ref.ids);
    case "param": {
      const raw = lookupParameter(ref.name, scope.parameters, "shortest_path.to");
      return new Set((Array.isArray(raw) ? raw : [raw]).map((id, i) => parseId(id, `shortest_path.to [${i}]`)));
    }
    case "var": {
      const stream = scope.variables.get(ref.name);
      if (stream === undefined) throw new SilkError("unknown_variable", `shortest_path.to: no earlier entry defines ${JSON.stringify(ref.name)}`);
      return new Set(elementsOf(stream, "shortest_path.to").filter((item) => item.kind !== "edge").map((item) => item.id));
    }
    default:
      return unreachable(ref, "reference");
  }
}

function byId(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One adjacency list in the search's deterministic order. */
function ordered(list: readonly AdjacencyEntry[]): AdjacencyEntry[] {
  return [...list].sort((a, b) => byId(a.other, b.other) || byId(a.edge, b.edge));
}

function checkVisited(reached: Map<bigint, Reached>): void {
  if (reached.size > PATH_VISITED_NODES_MAX) {
    throw new SilkError("limit_exceeded", `shortest_path reached more than ${PATH_VISITED_NODES_MAX} records without finding a target`);
  }
}

function* breadthFirst(source: Element, search: Search): Op<Found | undefined> {
  const reached = new Map<bigint, Reached>([[source.id, { kind: source.kind as EndpointKind }]]);
  if (search.targets.has(source.id)) return { target: source.id, reached };
  let frontier: Element[] = [source];
  // Silk's form has no depth bound (PATH_VISITED_NODES_MAX bounds the work); HelixDB's stops after maxDepth hops.
  for (let hops = 0; frontier.length > 0 && hops < (search.step.helixForm?.maxDepth ?? Infinity); hops += 1) {
    const lists = yield* adjacencyOf(search.scope.context.view, frontier, search.directions, search.step.label);
    const next: Element[] = [];
    for (let i = 0; i < frontier.length; i += 1) {
      for (const entry of ordered(lists[i])) {
        if (reached.has(entry.other)) continue;
        reached.set(entry.other, { kind: entry.otherKind, previous: frontier[i].id, edge: entry.edge });
        if (search.targets.has(entry.other)) return { target: entry.other, reached };
        checkVisited(reached);
        if (search.scope.context.deadline.tick()) yield search.scope.context.deadline.pause();
        next.push({ kind: entry.otherKind, id: entry.other });
      }
    }
    frontier = next;
  }
  return undefined;
}

/**
 * Least total weight from `source` to the nearest target. Dijkstra queues each record by its cost so far; A* by its
 * cost so far plus its heuristic property, an estimate of the cost still to go. A queued entry whose cost a cheaper
 * way has since beaten is stale and skipped. Dijkstra never revisits an expanded record (with non-negative weights
 * its cost is final), so edges back to one are not weighed; A* may reopen one when a cheaper way to it turns up, as a
 * heuristic that is admissible but not consistent requires to still find the least total weight.
 */
function* leastWeight(source: Element, algorithm: WeightedAlgorithm, search: Search): Op<Found | undefined> {
  const { view } = search.scope.context;
  const estimate = algorithm.kind === "astar" ? heuristic(algorithm.heuristic, search.scope) : noEstimate;
  const reached = new Map<bigint, Reached>([[source.id, { kind: source.kind as EndpointKind }]]);
  const cost = new Map<bigint, number>([[source.id, 0]]);
  const expanded = new Set<bigint>();
  const queue = new MinHeap();
  const [sourceEstimate] = yield* estimate([source]);
  queue.push(sourceEstimate, source.id, 0);
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    const { id, cost: current } = next;
    if (current > cost.get(id)!) continue;
    if (search.targets.has(id)) return { target: id, reached, weight: current };
    expanded.add(id);
    const [list] = yield* adjacencyOf(view, [{ kind: reached.get(id)!.kind, id }], search.directions, search.step.label);
    const entries = ordered(list).filter((entry) => algorithm.kind === "astar" || !expanded.has(entry.other));
    const edges = yield* wait(view.records("edge", entries.map((entry) => entry.edge)));
    const improved: { entry: AdjacencyEntry; cost: number }[] = [];
    for (let i = 0; i < entries.length; i += 1) {
      const entry = entries[i];
      const edge = edges[i];
      if (edge === undefined) continue;
      const candidate = current + (yield* edgeWeight(algorithm.weight, { kind: "edge", id: edge.id, record: edge }, search.scope));
      if (candidate >= (cost.get(entry.other) ?? Infinity)) continue;
      cost.set(entry.other, candidate);
      reached.set(entry.other, { kind: entry.otherKind, previous: id, edge: entry.edge });
      checkVisited(reached);
      if (search.scope.context.deadline.tick()) yield search.scope.context.deadline.pause();
      improved.push({ entry, cost: candidate });
    }
    const estimates = yield* estimate(improved.map(({ entry }) => ({ kind: entry.otherKind, id: entry.other })));
    improved.forEach(({ entry, cost: candidate }, i) => queue.push(candidate + estimates[i], entry.other, candidate));
  }
  return undefined;
}

type WeightedAlgorithm = Exclude<PathAlgorithm, { kind: "bfs" }>;

/**
 * A*'s estimates: each record's `property` (a dotted path reads into an object field), which must be a finite number
 * (`invalid_value` otherwise, as HelixDB refuses a heuristic that is missing or not numeric). Records are read in one
 * batch per call and each record's estimate once per search.
 */
/** Dijkstra's estimate: none. */
function* noEstimate(items: Element[]): Op<number[]> {
  return items.map(() => 0);
}

function heuristic(property: string, scope: EvalScope): (items: Element[]) => Op<number[]> {
  const known = new Map<bigint, number>();
  return function* (items) {
    const missing: Element[] = items.filter((item) => !known.has(item.id)).map((item) => ({ kind: item.kind, id: item.id }));
    yield* loaded(scope.context.view, missing);
    for (const item of missing) {
      const value = item.record === undefined ? undefined : recordField(item.record, property);
      const number = typeof value === "bigint" ? Number(value) : value;
      if (typeof number !== "number" || !Number.isFinite(number)) {
        throw new SilkError("invalid_value", `shortest_path: the heuristic ${JSON.stringify(property)} of ${item.kind} ${item.id} is ${shown(value)}, not a finite number`);
      }
      known.set(item.id, number);
    }
    return items.map((item) => known.get(item.id)!);
  };
}

function* edgeWeight(weight: Expr, edge: Element, scope: EvalScope): Op<number> {
  const value = yield* evaluateExpr(weight, edge, scope);
  const number = typeof value === "bigint" ? Number(value) : value;
  if (typeof number !== "number" || !Number.isFinite(number) || number < 0) {
    throw new SilkError("invalid_value", `shortest_path: the weight of edge ${edge.id} is ${shown(value)}, not a non-negative finite number`);
  }
  return number;
}

/** A value as an error message shows it: JSON, with 64-bit integers as digits (JSON.stringify refuses a bigint). */
function shown(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => (typeof inner === "bigint" ? inner.toString() : inner)) ?? "missing";
}

/** `{nodes, edges, hops, weight}`, nodes from source to target inclusive, as records in their JSON form. */
function* renderPath(found: Found, scope: EvalScope): Op<Record<string, unknown>> {
  const nodes: Element[] = [];
  const edges: Element[] = [];
  for (let id: bigint | undefined = found.target; id !== undefined; ) {
    const step: Reached = found.reached.get(id)!;
    nodes.push({ kind: step.kind, id });
    if (step.edge !== undefined) edges.push({ kind: "edge", id: step.edge });
    id = step.previous;
  }
  nodes.reverse();
  edges.reverse();
  const { view } = scope.context;
  return {
    nodes: (yield* loaded(view, nodes)).map((item) => recordToJson(item.record!, scope.context.renderId)),
    edges: (yield* loaded(view, edges)).map((item) => recordToJson(item.record!, scope.context.renderId)),
    hops: edges.length,
    weight: found.weight ?? edges.length,
  };
}

/** One queued record: its priority (cost so far, plus A*'s estimate) and the cost so far it was queued with. */
interface Queued {
  readonly priority: number;
  readonly id: bigint;
  readonly cost: number;
}

/** A binary min-heap of queued records, ordered by priority then ID so equal priorities settle deterministically. */
class MinHeap {
  private readonly items: Queued[] = [];

  push(priority: number, id: bigint, cost: number): void {
    const items = this.items;
    items.push({ priority, id, cost });
    for (let i = items.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!this.less(items[i], items[parent])) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }

  pop(): Queued | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    for (let i = 0; ; ) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < items.length && this.less(items[left], items[smallest])) smallest = left;
      if (right < items.length && this.less(items[right], items[smallest])) smallest = right;
      if (smallest === i) break;
      [items[i], items[smallest]] = [items[smallest], items[i]];
      i = smallest;
    }
    return top;
  }

  private less(a: Queued, b: Queued): boolean {
    return a.priority < b.priority || (a.priority === b.priority && a.id < b.id);
  }
}
