/**
 * The history of a chaos run (docs/CHAOS.md), as Jepsen keeps one: every client operation is an `invoke` event and
 * one completion, `ok` (it took effect), `fail` (it certainly did not) or `unknown` (it may have, or may yet: a
 * timeout, a dropped connection, an answer that says the outcome is in doubt). Times are milliseconds since the
 * run's start on the harness's monotonic clock. The checkers read the paired form, `Operation`.
 *
 * Invariant: a process has at most one operation in flight; after an `unknown` completion the client takes a new
 * process number (the old operation may still be running somewhere), as Jepsen does.
 */
import { writeFileSync } from "node:fs";

export type Outcome = "ok" | "fail" | "unknown";

export interface HistoryEvent {
  readonly type: "invoke" | Outcome;
  readonly op: number;
  readonly process: number;
  readonly f: string;
  /** On invoke: the operation's arguments; on ok: what it returned (reads), else the arguments again. */
  readonly value: unknown;
  readonly time: number;
  /** The error code (or the transport's failure) of a fail or unknown completion. */
  readonly error?: string;
}

/** One operation, invocation and completion paired. */
export interface Operation<V = unknown, R = unknown> {
  readonly op: number;
  readonly process: number;
  readonly f: string;
  readonly value: V;
  readonly outcome: Outcome;
  /** What an ok operation returned (undefined otherwise). */
  readonly result?: R;
  readonly error?: string;
  readonly start: number;
  readonly end: number;
}

/** Records events as they happen; `operations()` pairs them. */
export class History {
  private readonly recorded: HistoryEvent[] = [];
  private readonly open = new Map<number, HistoryEvent>();
  private next = 0;

  constructor(private readonly now: () => number) {}

  invoke(process: number, f: string, value: unknown): number {
    const op = this.next++;
    const event: HistoryEvent = { type: "invoke", op, process, f, value, time: this.now() };
    this.open.set(op, event);
    this.recorded.push(event);
    return op;
  }

  complete(op: number, outcome: Outcome, value: unknown, error?: string): void {
    const invoked = this.open.get(op);
    if (invoked === undefined) throw new Error(`operation ${op} is not in flight`);
    this.open.delete(op);
    this.recorded.push({ type: outcome, op, process: invoked.process, f: invoked.f, value, time: this.now(), ...(error === undefined ? {} : { error }) });
  }

  get events(): readonly HistoryEvent[] {
    return this.recorded;
  }

  operations(): Operation[] {
    return pairEvents(this.recorded);
  }
}

/** Pairs invocations with completions; an invocation never completed (the run ended first) is unknown. */
export function pairEvents(events: readonly HistoryEvent[]): Operation[] {
  const invokes = new Map<number, HistoryEvent>();
  const operations: Operation[] = [];
  for (const event of events) {
    if (event.type === "invoke") {
      invokes.set(event.op, event);
      continue;
    }
    const invoke = invokes.get(event.op);
    if (invoke === undefined) throw new Error(`completion of operation ${event.op} without its invocation`);
    invokes.delete(event.op);
    operations.push({
      op: event.op,
      process: invoke.process,
      f: invoke.f,
      value: invoke.value,
      outcome: event.type,
      ...(event.type === "ok" ? { result: event.value } : {}),
      ...(event.error === undefined ? {} : { error: event.error }),
      start: invoke.time,
      end: event.time,
    });
  }
  for (const invoke of invokes.values()) {
    operations.push({ op: invoke.op, process: invoke.process, f: invoke.f, value: invoke.value, outcome: "unknown", error: "not completed", start: invoke.time, end: Number.POSITIVE_INFINITY });
  }
  return operations.sort((a, b) => a.op - b.op);
}

/** Writes events as JSON Lines, one event a line. */
export function writeJsonLines(path: string, rows: readonly unknown[]): void {
  writeFileSync(path, rows.map((row) => `${JSON.stringify(row)}\n`).join(""));
}

/** An anomaly a checker found: its kind (stable names, docs/CHAOS.md), a sentence, and the operations at fault. */
export interface Anomaly {
  readonly kind: string;
  readonly message: string;
  readonly ops: readonly number[];
}

export interface Verdict {
  /** true: no anomaly; false: at least one; "unknown": the checker could not decide (a search past its budget). */
  readonly valid: boolean | "unknown";
  readonly anomalies: readonly Anomaly[];
  /** Figures the checker counted (reads checked, transactions ordered, ...). */
  readonly stats: Readonly<Record<string, number>>;
}

export function verdictOf(anomalies: readonly Anomaly[], stats: Record<string, number>, undecided = false): Verdict {
  return { valid: anomalies.length > 0 ? false : undecided ? "unknown" : true, anomalies, stats };
}
