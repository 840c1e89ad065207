/**
 * The list-append checker, after Elle (Kingsbury & Alvaro, "Elle: Inferring Isolation Anomalies from Experimental
 * Observations", VLDB 2020); docs/CHAOS.md. A transaction is a list of micro-operations on lists of integers:
 * `["append", key, value]` and `["r", key, null]` (ok: `["r", key, [values...]]`). Every appended value is unique per
 * key, so a read names the transactions that wrote each element it saw, and the longest read of a key gives that
 * key's version order (every other read must be a prefix of it).
 *
 * Anomalies (stable kinds): `duplicate-elements` (a value twice in one read), `garbage-read` (a value nobody
 * appended), `aborted-read` (a value of a transaction that failed definitely), `future-read` (a transaction read its
 * own later append), `incompatible-order` (two reads of a key not prefixes of each other), `lost-append` (a read
 * invoked after an append was acknowledged lacks it), and the cycles of the dependency graph over transactions: ww
 * (T1 appended the element before T2's), wr (T2 read T1's last element), rw (T1 read a prefix that T2's element
 * extends), named as Adya's G0 (ww only), G1c (ww and wr), G-single (one rw) and G2 (several rw). An unknown
 * transaction takes part in the graph when a read saw one of its values (then it committed), else it is left out.
 */
import { verdictOf, type Anomaly, type Operation, type Verdict } from "../history.js";

export type MicroOp = readonly ["append", string, number] | readonly ["r", string, readonly number[] | null];
export type Transaction = readonly MicroOp[];

type EdgeKind = "ww" | "wr" | "rw";
interface Edge {
  readonly to: number;
  readonly kind: EdgeKind;
  readonly key: string;
}

interface Read {
  readonly op: Operation<Transaction>;
  readonly key: string;
  readonly values: readonly number[];
  /** The micro-operation's position in its transaction. */
  readonly position: number;
}

export function checkListAppend(operations: readonly Operation[]): Verdict {
  const anomalies: Anomaly[] = [];
  const txns = operations as readonly Operation<Transaction>[];
  // key → value → [the appending operation, its micro-operation's position]
  const writers = new Map<string, Map<number, { op: Operation<Transaction>; position: number }>>();
  for (const op of txns) {
    op.value.forEach((micro, position) => {
      if (micro[0] !== "append") return;
      const byValue = writers.get(micro[1]) ?? new Map<number, { op: Operation<Transaction>; position: number }>();
      writers.set(micro[1], byValue);
      const earlier = byValue.get(micro[2]);
      if (earlier !== undefined) throw new Error(`value ${micro[2]} is appended to ${micro[1]} twice (ops ${earlier.op.op} and ${op.op}): the workload must append unique values`);
      byValue.set(micro[2], { op, position });
    });
  }

  const reads: Read[] = [];
  for (const op of txns) {
    if (op.outcome !== "ok") continue;
    (op.result as Transaction).forEach((micro, position) => {
      if (micro[0] === "r" && micro[2] !== null) reads.push({ op, key: micro[1], values: micro[2], position });
    });
  }

  // Reads on their own: duplicates, values of nobody or of failed or later micro-operations.
  for (const read of reads) {
    const seen = new Set<number>();
    for (const value of read.values) {
      if (seen.has(value)) anomalies.push({ kind: "duplicate-elements", message: `op ${read.op.op} read ${value} twice in ${read.key}: [${read.values.join(", ")}]`, ops: [read.op.op] });
      seen.add(value);
      const writer = writers.get(read.key)?.get(value);
      if (writer === undefined) anomalies.push({ kind: "garbage-read", message: `op ${read.op.op} read ${value} in ${read.key}, which no operation appended`, ops: [read.op.op] });
      else if (writer.op.outcome === "fail") anomalies.push({ kind: "aborted-read", message: `op ${read.op.op} read ${value} in ${read.key}, appended by op ${writer.op.op}, which failed (${writer.op.error ?? "?"})`, ops: [read.op.op, writer.op.op] });
      else if (writer.op === read.op && writer.position > read.position) anomalies.push({ kind: "future-read", message: `op ${read.op.op} read its own later append of ${value} to ${read.key}`, ops: [read.op.op] });
    }
  }

  // Version orders: the longest read of each key; every read must be a prefix of it.
  const order = new Map<string, Read>();
  for (const read of reads) {
    const longest = order.get(read.key);
    if (longest === undefined || read.values.length > longest.values.length) order.set(read.key, read);
  }
  for (const read of reads) {
    const longest = order.get(read.key)!;
    const mismatch = read.values.findIndex((value, index) => longest.values[index] !== value);
    if (mismatch >= 0) {
      anomalies.push({
        kind: "incompatible-order",
        message: `${read.key}: op ${read.op.op} read [${read.values.join(", ")}], op ${longest.op.op} read [${longest.values.join(", ")}]: they differ at position ${mismatch}`,
        ops: [read.op.op, longest.op.op],
      });
    }
  }

  // Acknowledged appends that a later read (invoked after the acknowledgement) lacks.
  for (const [key, byValue] of writers) {
    const keyReads = reads.filter((read) => read.key === key);
    for (const [value, writer] of byValue) {
      if (writer.op.outcome !== "ok") continue;
      const missing = keyReads.find((read) => read.op.start > writer.op.end && !read.values.includes(value));
      if (missing !== undefined) {
        anomalies.push({ kind: "lost-append", message: `op ${writer.op.op} appended ${value} to ${key} (acknowledged), but op ${missing.op.op}, invoked later, read [${missing.values.join(", ")}]`, ops: [writer.op.op, missing.op.op] });
      }
    }
  }

  // The dependency graph over transactions that committed (ok, or unknown and observed).
  const observed = new Set<number>();
  for (const read of reads) for (const value of read.values) {
    const writer = writers.get(read.key)?.get(value);
    if (writer !== undefined) observed.add(writer.op.op);
  }
  const nodes = txns.filter((op) => op.outcome === "ok" || (op.outcome === "unknown" && observed.has(op.op)));
  const index = new Map(nodes.map((op, position) => [op.op, position]));
  const edges: Edge[][] = nodes.map(() => []);
  const addEdge = (from: Operation<Transaction>, to: Operation<Transaction>, kind: EdgeKind, key: string): void => {
    const a = index.get(from.op);
    const b = index.get(to.op);
    if (a === undefined || b === undefined || a === b) return;
    if (!edges[a].some((edge) => edge.to === b && edge.kind === kind)) edges[a].push({ to: b, kind, key });
  };
  for (const [key, longest] of order) {
    const byValue = writers.get(key)!;
    const sequence = longest.values.map((value) => byValue.get(value)?.op);
    for (let i = 1; i < sequence.length; i++) if (sequence[i - 1] && sequence[i]) addEdge(sequence[i - 1]!, sequence[i]!, "ww", key);
    for (const read of reads.filter((candidate) => candidate.key === key)) {
      const last = read.values.length === 0 ? undefined : byValue.get(read.values[read.values.length - 1])?.op;
      if (last !== undefined) addEdge(last, read.op, "wr", key);
      const following = sequence[read.values.length];
      if (following !== undefined) addEdge(read.op, following, "rw", key);
    }
  }
  const cycles = cyclesOf(edges);
  for (const cycle of cycles) {
    const kinds = cycle.map((step) => step.kind);
    const rw = kinds.filter((kind) => kind === "rw").length;
    const kind = rw === 0 ? (kinds.every((k) => k === "ww") ? "G0" : "G1c") : rw === 1 ? "G-single" : "G2";
    const ops = cycle.map((step) => nodes[step.from].op);
    const text = cycle.map((step) => `op ${nodes[step.from].op} -${step.kind} ${step.key}-> op ${nodes[step.to].op}`).join(", ");
    anomalies.push({ kind, message: `dependency cycle: ${text}`, ops });
  }
  return verdictOf(anomalies, {
    transactions: txns.length,
    reads: reads.length,
    graphNodes: nodes.length,
    graphEdges: edges.reduce((total, list) => total + list.length, 0),
    keys: writers.size,
  });
}

interface Step {
  readonly from: number;
  readonly to: number;
  readonly kind: EdgeKind;
  readonly key: string;
}

/** One shortest cycle in each strongly connected component that has one (Tarjan's algorithm, then a BFS). */
function cyclesOf(edges: readonly Edge[][]): Step[][] {
  const count = edges.length;
  const order = new Array<number>(count).fill(-1);
  const low = new Array<number>(count).fill(0);
  const onStack = new Array<boolean>(count).fill(false);
  const stack: number[] = [];
  const components: number[][] = [];
  let counter = 0;
  // Iterative Tarjan: histories hold thousands of transactions, deeper than the call stack likes.
  for (let root = 0; root < count; root++) {
    if (order[root] !== -1) continue;
    const work: { node: number; edge: number }[] = [{ node: root, edge: 0 }];
    order[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = true;
    while (work.length > 0) {
      const frame = work[work.length - 1];
      if (frame.edge < edges[frame.node].length) {
        const next = edges[frame.node][frame.edge++].to;
        if (order[next] === -1) {
          order[next] = low[next] = counter++;
          stack.push(next);
          onStack[next] = true;
          work.push({ node: next, edge: 0 });
        } else if (onStack[next]) low[frame.node] = Math.min(low[frame.node], order[next]);
        continue;
      }
      work.pop();
      if (work.length > 0) low[work[work.length - 1].node] = Math.min(low[work[work.length - 1].node], low[frame.node]);
      if (low[frame.node] === order[frame.node]) {
        const component: number[] = [];
        for (;;) {
          const member = stack.pop()!;
          onStack[member] = false;
          component.push(member);
          if (member === frame.node) break;
        }
        if (component.length > 1) components.push(component);
      }
    }
  }
  return components.map((component) => shortestCycle(edges, new Set(component)));
}

const SHORTEST_CYCLE_STARTS = 64;

function shortestCycle(edges: readonly Edge[][], members: ReadonlySet<number>): Step[] {
  let best: Step[] | undefined;
  // A BFS from each member finds the shortest cycle through it; a few dozen starts are enough to report a short one.
  for (const start of [...members].slice(0, SHORTEST_CYCLE_STARTS)) {
    const parent = new Map<number, Step>();
    const queue = [start];
    let found: Step | undefined;
    for (let head = 0; head < queue.length && found === undefined; head++) {
      const node = queue[head];
      for (const edge of edges[node]) {
        if (!members.has(edge.to)) continue;
        const step: Step = { from: node, to: edge.to, kind: edge.kind, key: edge.key };
        if (edge.to === start) {
          found = step;
          break;
        }
        if (!parent.has(edge.to)) {
          parent.set(edge.to, step);
          queue.push(edge.to);
        }
      }
    }
    if (found === undefined) continue;
    const cycle = [found];
    for (let node = found.from; node !== start; node = parent.get(node)!.from) cycle.unshift(parent.get(node)!);
    if (best === undefined || cycle.length < best.length) best = cycle;
    if (best.length === 2) break;
  }
  return best!;
}
