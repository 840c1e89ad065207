/**
 * The chaos checkers on hand-made histories (docs/CHAOS.md): each anomaly they name is flagged in a history built to
 * have it, and histories without one (with failed and unknown operations, Jepsen's way) pass.
 */
import { describe, expect, it } from "vitest";
import { checkBank, type BankFinal, type TransferValue } from "../../chaos/checkers/bank.js";
import { checkListAppend, type Transaction } from "../../chaos/checkers/list-append.js";
import { checkRegisterKey, checkRegisters, type RegisterValue } from "../../chaos/checkers/register.js";
import { History, pairEvents, type Operation, type Outcome } from "../../chaos/history.js";

let counter = 0;
function op<V, R = V>(f: string, value: V, outcome: Outcome, start: number, end: number, result?: R, process = 0): Operation<V, R> {
  return { op: counter++, process, f, value, outcome, start, end, ...(outcome === "ok" ? { result: (result ?? value) as R } : {}) };
}
const kinds = (verdict: { anomalies: readonly { kind: string }[] }): string[] => verdict.anomalies.map((anomaly) => anomaly.kind).sort();

describe("history", () => {
  it("pairs invocations with their completions and leaves one never completed unknown", () => {
    let clock = 0;
    const history = new History(() => clock++);
    const a = history.invoke(0, "write", { key: "r0", value: 1 });
    const b = history.invoke(1, "read", { key: "r0" });
    history.complete(b, "ok", { key: "r0", value: 0 });
    history.invoke(2, "write", { key: "r0", value: 2 });
    history.complete(a, "fail", { key: "r0", value: 1 }, "not_leader");
    const operations = pairEvents(history.events);
    expect(operations.map((o) => [o.op, o.outcome, o.start, o.end, o.error])).toEqual([
      [0, "fail", 0, 4, "not_leader"],
      [1, "ok", 1, 2, undefined],
      [2, "unknown", 3, Number.POSITIVE_INFINITY, "not completed"],
    ]);
    expect(operations[1].result).toEqual({ key: "r0", value: 0 });
    expect(() => history.complete(a, "ok", null)).toThrow(/not in flight/);
  });
});

describe("bank checker", () => {
  const opening = { a: 100, b: 100, c: 100 };
  const t = (tid: string, src: string, dst: string, amount: number): TransferValue => ({ tid, src, dst, amount });

  it("passes a history whose acknowledged transfers are all applied once, with unknown ones applied or not", () => {
    const operations = [
      op("transfer", t("t1", "a", "b", 10), "ok", 0, 1),
      op("transfer", t("t2", "b", "c", 5), "unknown", 1, 2),
      op("transfer", t("t3", "c", "a", 7), "unknown", 2, 3),
      op("transfer", t("t4", "a", "c", 50), "fail", 3, 4),
      op("read", null, "ok", 4, 5, { a: 90, b: 105, c: 105 }),
      op("read", null, "fail", 5, 6),
    ];
    const final: BankFinal = { balances: { a: 90, b: 105, c: 105 }, transfers: [t("t1", "a", "b", 10), t("t2", "b", "c", 5)] };
    const verdict = checkBank({ opening, negativeAllowed: false }, operations, final);
    expect(verdict.anomalies).toEqual([]);
    expect(verdict.valid).toBe(true);
    expect(verdict.stats).toMatchObject({ reads: 1, transfersOk: 1, transfersFailed: 1, transfersUnknown: 2, unknownApplied: 1 });
  });

  it("flags a lost acknowledged transfer (its record absent) and the balances that no longer add up", () => {
    const lost = op("transfer", t("t1", "a", "b", 10), "ok", 0, 1);
    const verdict = checkBank({ opening, negativeAllowed: true }, [lost], { balances: { a: 90, b: 110, c: 100 }, transfers: [] });
    expect(kinds(verdict)).toEqual(["lost-transfer", "wrong-balance", "wrong-balance"]);
    expect(verdict.anomalies[0].ops).toEqual([lost.op]);
    expect(verdict.valid).toBe(false);
  });

  it("flags a broken total in a read and at the end", () => {
    const read = op("read", null, "ok", 0, 1, { a: 100, b: 90, c: 100 });
    const verdict = checkBank({ opening, negativeAllowed: true }, [read], { balances: { a: 100, b: 90, c: 100 }, transfers: [] });
    expect(kinds(verdict)).toEqual(["wrong-balance", "wrong-total", "wrong-total"]);
    expect(verdict.anomalies.find((anomaly) => anomaly.ops.includes(read.op))?.message).toMatch(/total of 290, not 300/);
  });

  it("flags a transfer recorded twice, one applied after it failed, one never invoked, and a negative balance where forbidden", () => {
    const operations = [op("transfer", t("t1", "a", "b", 10), "ok", 0, 1), op("transfer", t("t2", "a", "c", 200), "fail", 1, 2)];
    const final: BankFinal = {
      balances: { a: -120, b: 120, c: 300 },
      transfers: [t("t1", "a", "b", 10), t("t1", "a", "b", 10), t("t2", "a", "c", 200), t("t9", "b", "c", 0)],
    };
    const verdict = checkBank({ opening, negativeAllowed: false }, operations, final);
    expect(kinds(verdict)).toEqual(["aborted-transfer-applied", "duplicate-transfer", "negative-balance", "phantom-transfer"]);
    expect(checkBank({ opening, negativeAllowed: true }, operations, final).anomalies.some((anomaly) => anomaly.kind === "negative-balance")).toBe(false);
  });
});

describe("register checker (linearizability)", () => {
  const w = (value: number): RegisterValue => ({ key: "x", value });
  const r = (value: number): RegisterValue => ({ key: "x", value });

  it("passes concurrent operations that some order explains", () => {
    const operations = [
      op("write", w(1), "ok", 0, 10),
      op("read", { key: "x" }, "ok", 1, 3, r(1)),
      op("read", { key: "x" }, "ok", 2, 4, r(0)),
      op("cas", { key: "x", old: 1, new: 2 }, "ok", 11, 12),
      op("read", { key: "x" }, "ok", 13, 14, r(2)),
    ];
    expect(checkRegisterKey("x", 0, operations).linearizable).toBe(true);
  });

  it("flags a read of a value overwritten before the read began (a stale read)", () => {
    const stale = op("read", { key: "x" }, "ok", 3, 4, r(1));
    const operations = [op("write", w(1), "ok", 0, 1), op("write", w(2), "ok", 1.5, 2), stale];
    const result = checkRegisterKey("x", 0, operations);
    expect(result.linearizable).toBe(false);
    expect(result.anomaly?.kind).toBe("nonlinearizable");
    expect(result.anomaly?.ops[0]).toBe(stale.op);
    expect(result.anomaly?.message).toMatch(/read → 1/);
  });

  it("flags a read of a value no write (not even an unknown one) could have produced", () => {
    const verdict = checkRegisters({ x: 0 }, [op("write", w(1), "fail", 0, 1), op("read", { key: "x" }, "ok", 2, 3, r(1))]);
    expect(verdict.valid).toBe(false);
    expect(kinds(verdict)).toEqual(["nonlinearizable"]);
  });

  it("lets an unknown write take effect late or never, and drops unknown reads", () => {
    const late = [op("write", w(3), "unknown", 0, 1), op("read", { key: "x" }, "ok", 2, 3, r(0)), op("read", { key: "x" }, "ok", 4, 5, r(3))];
    expect(checkRegisterKey("x", 0, late).linearizable).toBe(true);
    const never = [op("write", w(3), "unknown", 0, 1), op("read", { key: "x" }, "ok", 2, 3, r(0)), op("read", { key: "x" }, "unknown", 4, 5)];
    expect(checkRegisterKey("x", 0, never).linearizable).toBe(true);
    // Once a read saw 3 and a later one 0 with no other write, the unknown write cannot explain both.
    const flip = [op("write", w(3), "unknown", 0, 1), op("read", { key: "x" }, "ok", 2, 3, r(3)), op("read", { key: "x" }, "ok", 4, 5, r(0))];
    expect(checkRegisterKey("x", 0, flip).linearizable).toBe(false);
  });

  it("checks each key on its own and answers unknown when the search runs past its budget", () => {
    const operations = [op("write", { key: "x", value: 1 }, "ok", 0, 1), op("read", { key: "y" }, "ok", 0, 1, { key: "y", value: 1 })];
    const verdict = checkRegisters({ x: 0, y: 0 }, operations);
    expect(verdict.anomalies.map((anomaly) => anomaly.message)).toEqual([expect.stringMatching(/^register y:/)]);
    const wide = Array.from({ length: 12 }, (_, i) => op("write", w(i), "unknown", i, i + 1)).concat([op("read", { key: "x" }, "ok", 20, 21, r(99))]);
    expect(checkRegisters({ x: 0 }, wide, 50).valid).toBe("unknown");
  });
});

describe("list-append checker (Elle-style)", () => {
  const txn = (micro: Transaction, outcome: Outcome, start: number, end: number, result?: Transaction): Operation<Transaction> => op("txn", micro, outcome, start, end, result ?? micro);

  it("passes a serial history with reads, appends and an unknown append that was applied", () => {
    const operations = [
      txn([["append", "x", 1]], "ok", 0, 1),
      txn([["r", "x", null], ["append", "y", 2]], "ok", 2, 3, [["r", "x", [1]], ["append", "y", 2]]),
      txn([["append", "x", 3]], "unknown", 4, 5),
      txn([["append", "y", 4]], "fail", 4, 5),
      txn([["r", "x", null]], "ok", 6, 7, [["r", "x", [1, 3]]]),
      txn([["r", "y", null]], "ok", 6, 7, [["r", "y", [2]]]),
    ];
    const verdict = checkListAppend(operations);
    expect(verdict.anomalies).toEqual([]);
    expect(verdict.stats).toMatchObject({ transactions: 6, reads: 3, graphNodes: 5 });
  });

  it("flags an acknowledged append missing from a later read (a lost write)", () => {
    const append = txn([["append", "x", 1]], "ok", 0, 1);
    const read = txn([["r", "x", null]], "ok", 2, 3, [["r", "x", []]]);
    const verdict = checkListAppend([append, read]);
    expect(kinds(verdict)).toContain("lost-append");
    expect(verdict.anomalies.find((anomaly) => anomaly.kind === "lost-append")?.ops).toEqual([append.op, read.op]);
  });

  it("flags a value appended once but read twice (a duplicated append)", () => {
    const verdict = checkListAppend([txn([["append", "x", 1]], "ok", 0, 1), txn([["r", "x", null]], "ok", 2, 3, [["r", "x", [1, 1]]])]);
    expect(kinds(verdict)).toContain("duplicate-elements");
  });

  it("flags reads that are not prefixes of each other, values nobody appended, and values of failed appends", () => {
    const operations = [
      txn([["append", "x", 1]], "ok", 0, 1),
      txn([["append", "x", 2]], "ok", 0, 1),
      txn([["append", "x", 3]], "fail", 0, 1),
      txn([["r", "x", null]], "ok", 2, 3, [["r", "x", [1, 2]]]),
      txn([["r", "x", null]], "ok", 2, 3, [["r", "x", [2, 1, 3, 9]]]),
    ];
    expect(kinds(checkListAppend(operations))).toEqual(expect.arrayContaining(["aborted-read", "garbage-read", "incompatible-order"]));
  });

  it("finds a write-skew cycle (G2: two rw edges) and names it by its operations", () => {
    // T1 reads x empty and appends to y; T2 reads y empty and appends to x: each missed the other's write.
    const t1 = txn([["r", "x", null], ["append", "y", 1]], "ok", 0, 2, [["r", "x", []], ["append", "y", 1]]);
    const t2 = txn([["r", "y", null], ["append", "x", 2]], "ok", 0, 2, [["r", "y", []], ["append", "x", 2]]);
    const reads = [txn([["r", "x", null]], "ok", 3, 4, [["r", "x", [2]]]), txn([["r", "y", null]], "ok", 3, 4, [["r", "y", [1]]])];
    const verdict = checkListAppend([t1, t2, ...reads]);
    expect(kinds(verdict)).toEqual(["G2"]);
    expect([...verdict.anomalies[0].ops].sort()).toEqual([t1.op, t2.op].sort());
    expect(verdict.anomalies[0].message).toMatch(/-rw x->.*-rw y->|-rw y->.*-rw x->/);
  });

  it("finds a write-write cycle (G0) from two keys' version orders", () => {
    const t1 = txn([["append", "x", 1], ["append", "y", 2]], "ok", 0, 1);
    const t2 = txn([["append", "x", 3], ["append", "y", 4]], "ok", 0, 1);
    const reads = [txn([["r", "x", null]], "ok", 2, 3, [["r", "x", [1, 3]]]), txn([["r", "y", null]], "ok", 2, 3, [["r", "y", [4, 2]]])];
    expect(kinds(checkListAppend([t1, t2, ...reads]))).toEqual(["G0"]);
  });

  it("finds a cycle through a read of a write (G1c) and a read of one's own later append", () => {
    // T1 appends x1 and reads y [2]; T2 appends y2 and reads x [1]: each saw the other, a wr cycle.
    const t1 = txn([["r", "y", null], ["append", "x", 1]], "ok", 0, 1, [["r", "y", [2]], ["append", "x", 1]]);
    const t2 = txn([["r", "x", null], ["append", "y", 2]], "ok", 0, 1, [["r", "x", [1]], ["append", "y", 2]]);
    expect(kinds(checkListAppend([t1, t2]))).toEqual(["G1c"]);
    const own = txn([["r", "x", null], ["append", "x", 5]], "ok", 0, 1, [["r", "x", [5]], ["append", "x", 5]]);
    expect(kinds(checkListAppend([own]))).toEqual(["future-read"]);
  });

  it("refuses a history that appends one value to one key twice (the workload's values must be unique)", () => {
    expect(() => checkListAppend([txn([["append", "x", 1]], "ok", 0, 1), txn([["append", "x", 1]], "ok", 0, 1)])).toThrow(/appended to x twice/);
  });
});
