/**
 * Per-key linearizability of integer registers (docs/CHAOS.md): the Wing & Gong search with Lowe's memoisation
 * (the "WGL" algorithm Knossos and Porcupine use). Operations on one key: `read` (ok: the value it returned),
 * `write` v, `cas` [old, new] (ok: it swapped; fail: the value was not `old`, so it did nothing).
 *
 * As in Jepsen: an ok operation took effect once between its invocation and its completion; a failed one never did;
 * an unknown write or cas took effect once at some moment after its invocation, or never; an unknown or failed read
 * says nothing and is dropped. The search succeeds once every ok operation is placed. It gives up after `budget`
 * steps (the verdict is then "unknown", never a false anomaly).
 *
 * On failure the anomaly names the operation the longest linearizable prefix could not be extended past, the
 * register's value at that point, and the operations concurrent with it.
 */
import { verdictOf, type Anomaly, type Operation, type Verdict } from "../history.js";

export type RegisterValue = { readonly key: string; readonly value?: number; readonly old?: number; readonly new?: number };

interface Entry {
  readonly call: boolean;
  readonly index: number;
  readonly time: number;
  prev: Entry | undefined;
  next: Entry | undefined;
  match: Entry | undefined;
}

/** Applies one operation to the register; undefined when it cannot take effect from `state`. */
function step(operation: Operation<RegisterValue>, state: number): number | undefined {
  switch (operation.f) {
    case "read":
      return (operation.result as RegisterValue).value === state ? state : undefined;
    case "write":
      return operation.value.value!;
    case "cas":
      return operation.value.old === state ? operation.value.new! : undefined;
    default:
      throw new Error(`a register has no operation ${operation.f}`);
  }
}

interface KeyResult {
  readonly linearizable: boolean | "unknown";
  readonly anomaly?: Anomaly;
  readonly steps: number;
}

/** Checks one key's operations, starting from `initial`. */
export function checkRegisterKey(key: string, initial: number, all: readonly Operation<RegisterValue>[], budget = 2_000_000): KeyResult {
  const operations = all.filter((operation) => operation.outcome === "ok" || (operation.outcome === "unknown" && operation.f !== "read"));
  const mustPlace = operations.filter((operation) => operation.outcome === "ok").length;
  // Calls and returns in time order; an unknown operation returns at infinity; at equal times returns first (an
  // operation that completed at t precedes one invoked at t).
  const entries: Entry[] = [];
  operations.forEach((operation, index) => {
    const call: Entry = { call: true, index, time: operation.start, prev: undefined, next: undefined, match: undefined };
    const end = operation.outcome === "ok" ? operation.end : Number.POSITIVE_INFINITY;
    const ret: Entry = { call: false, index, time: end, prev: undefined, next: undefined, match: undefined };
    call.match = ret;
    entries.push(call, ret);
  });
  entries.sort((a, b) => a.time - b.time || (a.call === b.call ? 0 : a.call ? 1 : -1));
  const head: Entry = { call: false, index: -1, time: Number.NEGATIVE_INFINITY, prev: undefined, next: undefined, match: undefined };
  let previous = head;
  for (const entry of entries) {
    previous.next = entry;
    entry.prev = previous;
    previous = entry;
  }
  const lift = (entry: Entry): void => {
    entry.prev!.next = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    const match = entry.match!;
    match.prev!.next = match.next;
    if (match.next) match.next.prev = match.prev;
  };
  const unlift = (entry: Entry): void => {
    const match = entry.match!;
    match.prev!.next = match;
    if (match.next) match.next.prev = match;
    entry.prev!.next = entry;
    if (entry.next) entry.next.prev = entry;
  };

  const linearized = new Uint8Array(operations.length);
  const cache = new Set<string>();
  const stack: { entry: Entry; state: number }[] = [];
  let state = initial;
  let placed = 0;
  let entry = head.next;
  let steps = 0;
  let deepest: { index: number; state: number; depth: number } | undefined;
  const okAt = (index: number): boolean => operations[index].outcome === "ok";
  for (;;) {
    // Every ok operation is placed; the unknown operations left may never have taken effect.
    if (placed === mustPlace) return { linearizable: true, steps };
    // The list ends with returns (an unknown operation's is at infinity), so the search always meets one first.
    if (entry === undefined) throw new Error("the search ran past the last return");
    if (++steps > budget) return { linearizable: "unknown", steps };
    if (entry.call) {
      const next = step(operations[entry.index], state);
      if (next !== undefined) {
        linearized[entry.index] = 1;
        const key = `${next}|${linearized.join("")}`;
        if (!cache.has(key)) {
          cache.add(key);
          stack.push({ entry, state });
          state = next;
          placed += okAt(entry.index) ? 1 : 0;
          lift(entry);
          entry = head.next;
          continue;
        }
        linearized[entry.index] = 0;
      }
      entry = entry.next;
    } else {
      // A return whose call is not placed: this ordering cannot go on.
      if (deepest === undefined || stack.length > deepest.depth) deepest = { index: entry.index, state, depth: stack.length };
      if (stack.length === 0) break;
      const top = stack.pop()!;
      placed -= okAt(top.entry.index) ? 1 : 0;
      linearized[top.entry.index] = 0;
      state = top.state;
      unlift(top.entry);
      entry = top.entry.next;
    }
  }
  const stuck = operations[deepest?.index ?? 0];
  const concurrent = operations.filter((operation) => operation !== stuck && operation.start < stuck.end && (operation.outcome === "unknown" || operation.end > stuck.start));
  const describe = (operation: Operation<RegisterValue>): string =>
    operation.f === "read" ? `read → ${(operation.result as RegisterValue).value}` : operation.f === "write" ? `write ${operation.value.value}` : `cas ${operation.value.old}→${operation.value.new}`;
  return {
    linearizable: false,
    steps,
    anomaly: {
      kind: "nonlinearizable",
      message: `register ${key}: no linearization places op ${stuck.op} (${describe(stuck)}); the longest linearizable prefix (${deepest?.depth ?? 0} ops) leaves the value ${deepest?.state ?? initial}; concurrent: ${concurrent.map((operation) => `op ${operation.op} (${describe(operation)}, ${operation.outcome})`).join(", ") || "none"}`,
      ops: [stuck.op, ...concurrent.map((operation) => operation.op)],
    },
  };
}

/** Checks every key's history on its own (linearizability is local: the whole is linearizable if each key is). */
export function checkRegisters(initial: Readonly<Record<string, number>>, operations: readonly Operation[], budget?: number): Verdict {
  const byKey = new Map<string, Operation<RegisterValue>[]>();
  for (const operation of operations as readonly Operation<RegisterValue>[]) {
    byKey.set(operation.value.key, [...(byKey.get(operation.value.key) ?? []), operation]);
  }
  const anomalies: Anomaly[] = [];
  let undecided = 0;
  let steps = 0;
  for (const [key, keyed] of byKey) {
    const start = initial[key];
    if (start === undefined) throw new Error(`no initial value for register ${key}`);
    const result = checkRegisterKey(key, start, keyed, budget);
    steps += result.steps;
    if (result.linearizable === "unknown") undecided += 1;
    if (result.anomaly !== undefined) anomalies.push(result.anomaly);
  }
  return verdictOf(anomalies, { keys: byKey.size, keysUndecided: undecided, searchSteps: steps }, undecided > 0);
}
