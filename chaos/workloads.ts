/**
 * The chaos workloads (docs/CHAOS.md): what each client sends over HTTP to the cluster's `silk serve`, drawn from
 * its own seeded generator, and how each answer becomes an outcome of the history. The queries are those of
 * chaos/project/ (an attached cluster must serve that project).
 *
 * Outcomes: 200 is ok. A read that did not answer 200 failed (it changed nothing, whatever happened). A write
 * failed definitely when the server refused it before running it (a 4xx other than 408, or `not_leader`) or the
 * connection was refused (nothing was sent); any other answer (a 5xx such as `partition_unavailable`, 408, a
 * timeout, a reset connection) leaves it unknown: it may have been applied, or may be yet.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SilkError } from "../protocol/errors.js";
import { checkBank, type Balances, type BankFinal, type TransferValue } from "./checkers/bank.js";
import { checkListAppend, type MicroOp, type Transaction } from "./checkers/list-append.js";
import { checkRegisters, type RegisterValue } from "./checkers/register.js";
import { verdictOf, type History, type Operation, type Outcome, type Verdict } from "./history.js";

export const WORKLOADS = ["bank", "list-append", "register"] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

export type CallResult = { readonly outcome: "ok"; readonly body: Record<string, unknown> } | { readonly outcome: Exclude<Outcome, "ok">; readonly error: string };

/** Calls one query of the project over HTTP. */
export type Call = (query: string, params: Record<string, unknown>, write: boolean) => Promise<CallResult>;

/** An HTTP client of `silk serve`'s query routes, each request bounded by `timeoutMs`. */
export function httpCall(baseUrl: string, timeoutMs: number): Call {
  return async (query, params, write) => {
    let response: Response;
    try {
      response = await fetch(`${baseUrl}/${query}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(params), signal: AbortSignal.timeout(timeoutMs) });
    } catch (cause) {
      const code = ((cause as { cause?: { code?: string } }).cause?.code ?? (cause as Error).name) || "fetch failed";
      return { outcome: !write || code === "ECONNREFUSED" ? "fail" : "unknown", error: code };
    }
    let body: Record<string, unknown>;
    try {
      body = (await response.json()) as Record<string, unknown>;
    } catch (cause) {
      return { outcome: write ? "unknown" : "fail", error: `unreadable answer (${response.status}): ${(cause as Error).name}` };
    }
    if (response.ok) return { outcome: "ok", body };
    const code = typeof body.error === "string" ? body.error : `http ${response.status}`;
    const definite = !write || (response.status >= 400 && response.status < 500 && response.status !== 408) || code === "not_leader";
    return { outcome: definite ? "fail" : "unknown", error: code };
  };
}

/** One operation a client is about to run: its history name and value, and how to run it. */
export interface PlannedOperation {
  readonly f: string;
  readonly value: unknown;
  /** Runs it; an ok answer becomes the completion's value. */
  run(call: Call): Promise<{ outcome: "ok"; value: unknown } | { outcome: Exclude<Outcome, "ok">; error: string }>;
}

export interface Workload {
  readonly name: WorkloadName;
  /** The queries it calls (an attached cluster's project must declare them). */
  readonly queries: readonly string[];
  /** Creates the run's records; `call` is retried by the caller's `ensure` until it succeeds. */
  setup(ensure: (query: string, params: Record<string, unknown>) => Promise<Record<string, unknown>>): Promise<void>;
  /** The next operation of client `client`, from its own generator (so each client's choices follow the seed). */
  next(random: () => number, client: number): PlannedOperation;
  /** The reads after the faults healed, recorded in the history as operations of process `process`. */
  final(history: History, call: Call, process: number): Promise<void>;
  check(operations: readonly Operation[]): Verdict;
}

/** The next number of a client's counter, from 1. */
function countUp(counters: Map<number, number>, client: number): number {
  const next = (counters.get(client) ?? 0) + 1;
  counters.set(client, next);
  return next;
}

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)];

/** Runs a query and maps its outcome; `read` turns an ok body into the completion's value. */
async function invokeQuery(call: Call, query: string, params: Record<string, unknown>, write: boolean, read: (body: Record<string, unknown>) => unknown): ReturnType<PlannedOperation["run"]> {
  const result = await call(query, params, write);
  return result.outcome === "ok" ? { outcome: "ok", value: read(result.body) } : result;
}

/** Runs a read until it succeeds (or `attempts` run out), recording every attempt. */
async function finalRead(history: History, call: Call, process: number, operation: PlannedOperation, attempts = 60): Promise<unknown> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const op = history.invoke(process, operation.f, operation.value);
    const result = await operation.run(call);
    if (result.outcome === "ok") {
      history.complete(op, "ok", result.value);
      return result.value;
    }
    history.complete(op, result.outcome, operation.value, result.error);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the final ${operation.f} did not succeed in ${attempts} attempts`);
}

// ---------------------------------------------------------------------------------------------------------- bank

export const BANK_ACCOUNTS = 6;
export const BANK_OPENING = 1_000;

export function bankWorkload(run: string): Workload {
  const ids = new Map<string, string>();
  const names = Array.from({ length: BANK_ACCOUNTS }, (_, index) => `a${index}`);
  const counters = new Map<number, number>();
  let final: BankFinal | undefined;
  const balancesOf = (body: Record<string, unknown>): Balances =>
    Object.fromEntries((body.accounts as { name: string; balance: number }[]).map((account) => [account.name, account.balance]));
  const readAccounts: PlannedOperation = { f: "read", value: null, run: (call) => invokeQuery(call, "Accounts", { run }, false, balancesOf) };
  return {
    name: "bank",
    queries: ["OpenAccount", "Transfer", "Accounts", "Transfers"],
    async setup(ensure) {
      for (const name of names) {
        const body = await ensure("OpenAccount", { run, name, balance: BANK_OPENING });
        ids.set(name, (body.account as { id: string }).id);
      }
    },
    next(random, client) {
      if (random() < 0.2) return readAccounts;
      const src = pick(random, names);
      const dst = pick(random, names.filter((name) => name !== src));
      const value: TransferValue = { tid: `c${client}-${countUp(counters, client)}`, src, dst, amount: 1 + Math.floor(random() * 50) };
      return {
        f: "transfer",
        value,
        run: (call) => invokeQuery(call, "Transfer", { run, tid: value.tid, from: ids.get(src), to: ids.get(dst), src, dst, amount: value.amount }, true, () => value),
      };
    },
    async final(history, call, process) {
      const balances = (await finalRead(history, call, process, readAccounts)) as Balances;
      const recorded = (await finalRead(history, call, process, {
        f: "read-transfers",
        value: null,
        run: (c) => invokeQuery(c, "Transfers", { run }, false, (body) => (body.transfers as TransferValue[]).map(({ tid, src, dst, amount }) => ({ tid, src, dst, amount }))),
      })) as TransferValue[];
      final = { balances, transfers: recorded };
    },
    check(operations) {
      if (final === undefined) throw new Error("the bank's final reads did not run");
      const opening = Object.fromEntries(names.map((name) => [name, BANK_OPENING]));
      return checkBank({ opening, negativeAllowed: true }, operations.filter((operation) => operation.f !== "read-transfers"), final);
    },
  };
}

// --------------------------------------------------------------------------------------------------- list-append

export const LIST_KEYS = 8;

interface ElementRecord {
  readonly pos: number;
  readonly value: number;
}

/** A read's elements as a list: by position. Positions must be 1..n; anything else is recorded as a gap. */
function listOf(elements: readonly ElementRecord[]): { values: number[]; positions: boolean } {
  const sorted = [...elements].sort((a, b) => a.pos - b.pos || a.value - b.value);
  return { values: sorted.map((element) => element.value), positions: sorted.every((element, index) => element.pos === index + 1) };
}

export function listAppendWorkload(run: string): Workload {
  const keys = Array.from({ length: LIST_KEYS }, (_, index) => `${run}-k${index}`);
  const ids = new Map<string, string>();
  const counters = new Map<number, number>();
  /** Unique per run: client c's n-th value is c * 1e6 + n. */
  const nextValue = (client: number): number => client * 1_000_000 + countUp(counters, client);
  /** Reads whose positions were not 1..n (two appends at one position, or a hole): a lost update of the length. */
  const badPositions: { key: string; op: Transaction }[] = [];
  const readOf = (key: string, body: Record<string, unknown>, field: string): MicroOp => {
    const list = listOf(body[field] as ElementRecord[]);
    if (!list.positions) badPositions.push({ key, op: [["r", key, list.values]] });
    return ["r", key, list.values];
  };
  const appendParams = (key: string, value: number, suffix = ""): Record<string, unknown> => ({ [`id${suffix}`]: ids.get(key), [`key${suffix}`]: key, [`value${suffix}`]: value });
  const readOnly = (key: string): PlannedOperation => ({
    f: "txn",
    value: [["r", key, null]],
    run: (call) => invokeQuery(call, "ReadList", { key }, false, (body) => [readOf(key, body, "elements")]),
  });
  return {
    name: "list-append",
    queries: ["OpenList", "Append", "ReadList", "ReadAppend", "AppendTwo"],
    async setup(ensure) {
      for (const key of keys) ids.set(key, ((await ensure("OpenList", { run, key })).list as { id: string }).id);
    },
    next(random, client) {
      const draw = random();
      const key = pick(random, keys);
      if (draw < 0.25) return readOnly(key);
      const value = nextValue(client);
      if (draw < 0.5) {
        const txn: Transaction = [["append", key, value]];
        return { f: "txn", value: txn, run: (call) => invokeQuery(call, "Append", appendParams(key, value), true, () => txn) };
      }
      if (draw < 0.8) {
        const read = pick(random, keys);
        const txn: Transaction = [["r", read, null], ["append", key, value]];
        return {
          f: "txn",
          value: txn,
          run: (call) => invokeQuery(call, "ReadAppend", { read, ...appendParams(key, value) }, true, (body) => [readOf(read, body, "elements"), ["append", key, value]]),
        };
      }
      const other = pick(random, keys.filter((candidate) => candidate !== key));
      const second = nextValue(client);
      const txn: Transaction = [["append", key, value], ["append", other, second]];
      return { f: "txn", value: txn, run: (call) => invokeQuery(call, "AppendTwo", { ...appendParams(key, value, "1"), ...appendParams(other, second, "2") }, true, () => txn) };
    },
    async final(history, call, process) {
      for (const key of keys) await finalRead(history, call, process, readOnly(key));
    },
    check(operations) {
      const verdict = checkListAppend(operations);
      if (badPositions.length === 0) return verdict;
      const gaps = badPositions.map(({ key, op }) => ({ kind: "position-gap", message: `a read of ${key} found positions other than 1..n (two appends at one position, or a hole): ${JSON.stringify(op)}`, ops: [] }));
      return verdictOf([...verdict.anomalies, ...gaps], { ...verdict.stats });
    },
  };
}

// ------------------------------------------------------------------------------------------------------ register

export const REGISTER_KEYS = 3;
/** Values are drawn from a small domain so that reads, writes and compare-and-sets often meet the same value. */
export const REGISTER_VALUES = 5;

export function registerWorkload(run: string): Workload {
  const keys = Array.from({ length: REGISTER_KEYS }, (_, index) => `r${index}`);
  const ids = new Map<string, string>();
  const valueOf = (body: Record<string, unknown>): number => (body.register as { value: number }).value;
  return {
    name: "register",
    queries: ["OpenRegister", "RegisterRead", "RegisterWrite", "RegisterCas"],
    async setup(ensure) {
      for (const key of keys) ids.set(key, ((await ensure("OpenRegister", { run, key, value: 0 })).register as { id: string }).id);
    },
    next(random) {
      const draw = random();
      const key = pick(random, keys);
      const id = ids.get(key);
      if (draw < 0.5) {
        return { f: "read", value: { key }, run: (call) => invokeQuery(call, "RegisterRead", { id }, false, (body): RegisterValue => ({ key, value: valueOf(body) })) };
      }
      if (draw < 0.8) {
        const value: RegisterValue = { key, value: Math.floor(random() * REGISTER_VALUES) };
        return { f: "write", value, run: (call) => invokeQuery(call, "RegisterWrite", { id, value: value.value }, true, () => value) };
      }
      const value: RegisterValue = { key, old: Math.floor(random() * REGISTER_VALUES), new: Math.floor(random() * REGISTER_VALUES) };
      return {
        f: "cas",
        value,
        async run(call) {
          const result = await call("RegisterCas", { id, old: value.old, new: value.new }, true);
          if (result.outcome !== "ok") return result;
          // No register matched `old`: the compare failed and nothing was written.
          return result.body.register === null ? { outcome: "fail", error: "cas-mismatch" } : { outcome: "ok", value };
        },
      };
    },
    async final() {
      // Linearizability is checked on the history alone.
    },
    check(operations) {
      return checkRegisters(Object.fromEntries(keys.map((key) => [key, 0])), operations);
    },
  };
}

export function workloadOf(name: WorkloadName, run: string): Workload {
  switch (name) {
    case "bank":
      return bankWorkload(run);
    case "list-append":
      return listAppendWorkload(run);
    case "register":
      return registerWorkload(run);
  }
}

/** The directory of the harness's project (chaos/project/): beside this file from source, two levels up from dist/. */
export function chaosProjectDirectory(): string {
  for (const relative of ["./project/", "../../chaos/project/"]) {
    const url = new URL(relative, import.meta.url);
    if (existsSync(url)) return fileURLToPath(url);
  }
  throw new SilkError("internal", "the chaos harness's project (chaos/project) is missing from this installation");
}
