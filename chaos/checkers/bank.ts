/**
 * The bank checker (docs/CHAOS.md). Transfers move an amount between two accounts and record a Transfer in the same
 * transaction; reads return every balance at once; after the faults healed, a final read returns every balance and
 * every Transfer record. It flags:
 *
 * - `wrong-total`: a read (or the final state) whose balances do not sum to the opening total;
 * - `negative-balance`: a balance below zero, where the workload forbids them;
 * - `lost-transfer`: an acknowledged transfer whose record is absent at the end;
 * - `duplicate-transfer`: a transfer recorded more than once;
 * - `aborted-transfer-applied`: a transfer that failed definitely but whose record is present;
 * - `phantom-transfer`: a record of a transfer never invoked, or recorded with other accounts or amount;
 * - `wrong-balance`: an account whose final balance is not its opening balance plus the recorded transfers into it
 *   minus those out of it (a transfer applied in part).
 *
 * Unknown transfers may be present once or absent. Reads that failed or whose outcome is unknown say nothing.
 */
import { verdictOf, type Anomaly, type Operation, type Verdict } from "../history.js";

export interface TransferValue {
  readonly tid: string;
  readonly src: string;
  readonly dst: string;
  readonly amount: number;
}

/** What a read returned: each account's balance, by name. */
export type Balances = Readonly<Record<string, number>>;

export interface BankFinal {
  readonly balances: Balances;
  readonly transfers: readonly TransferValue[];
}

export interface BankModel {
  /** Each account's opening balance, by name. */
  readonly opening: Balances;
  readonly negativeAllowed: boolean;
}

function sum(balances: Balances): number {
  return Object.values(balances).reduce((total, balance) => total + balance, 0);
}

export function checkBank(model: BankModel, operations: readonly Operation[], final: BankFinal): Verdict {
  const anomalies: Anomaly[] = [];
  const total = sum(model.opening);
  const transfers = new Map<string, Operation<TransferValue>>();
  let reads = 0;
  for (const operation of operations) {
    if (operation.f === "transfer") {
      const transfer = operation as Operation<TransferValue>;
      transfers.set(transfer.value.tid, transfer);
    } else if (operation.f === "read" && operation.outcome === "ok") {
      reads += 1;
      const balances = operation.result as Balances;
      const seen = sum(balances);
      if (seen !== total) anomalies.push({ kind: "wrong-total", message: `read ${operation.op} saw a total of ${seen}, not ${total}`, ops: [operation.op] });
      const negative = Object.entries(balances).filter(([, balance]) => balance < 0);
      if (!model.negativeAllowed && negative.length > 0) {
        anomalies.push({ kind: "negative-balance", message: `read ${operation.op} saw ${negative.map(([name, balance]) => `${name}=${balance}`).join(", ")}`, ops: [operation.op] });
      }
    }
  }

  const finalTotal = sum(final.balances);
  if (finalTotal !== total) anomalies.push({ kind: "wrong-total", message: `the final balances sum to ${finalTotal}, not ${total}`, ops: [] });
  if (!model.negativeAllowed) {
    for (const [name, balance] of Object.entries(final.balances)) {
      if (balance < 0) anomalies.push({ kind: "negative-balance", message: `account ${name} ends at ${balance}`, ops: [] });
    }
  }

  const present = new Map<string, TransferValue[]>();
  for (const record of final.transfers) present.set(record.tid, [...(present.get(record.tid) ?? []), record]);
  for (const [tid, records] of present) {
    const invoked = transfers.get(tid);
    if (records.length > 1) anomalies.push({ kind: "duplicate-transfer", message: `transfer ${tid} is recorded ${records.length} times`, ops: invoked === undefined ? [] : [invoked.op] });
    if (invoked === undefined) {
      anomalies.push({ kind: "phantom-transfer", message: `transfer ${tid} is recorded but was never invoked`, ops: [] });
      continue;
    }
    const record = records[0];
    if (record.src !== invoked.value.src || record.dst !== invoked.value.dst || record.amount !== invoked.value.amount) {
      anomalies.push({ kind: "phantom-transfer", message: `transfer ${tid} is recorded as ${record.amount} from ${record.src} to ${record.dst}, invoked as ${invoked.value.amount} from ${invoked.value.src} to ${invoked.value.dst}`, ops: [invoked.op] });
    }
    if (invoked.outcome === "fail") anomalies.push({ kind: "aborted-transfer-applied", message: `transfer ${tid} failed (${invoked.error ?? "?"}) but is recorded`, ops: [invoked.op] });
  }
  for (const transfer of transfers.values()) {
    if (transfer.outcome === "ok" && !present.has(transfer.value.tid)) {
      anomalies.push({ kind: "lost-transfer", message: `transfer ${transfer.value.tid} was acknowledged but is not recorded`, ops: [transfer.op] });
    }
  }

  const expected = new Map(Object.entries(model.opening));
  for (const record of final.transfers) {
    expected.set(record.src, (expected.get(record.src) ?? 0) - record.amount);
    expected.set(record.dst, (expected.get(record.dst) ?? 0) + record.amount);
  }
  for (const [name, balance] of expected) {
    const actual = final.balances[name];
    if (actual !== balance) {
      anomalies.push({ kind: "wrong-balance", message: `account ${name} ends at ${actual ?? "(missing)"}; its opening balance and recorded transfers give ${balance}`, ops: [] });
    }
  }

  const count = (outcome: string): number => [...transfers.values()].filter((transfer) => transfer.outcome === outcome).length;
  return verdictOf(anomalies, {
    reads,
    transfersOk: count("ok"),
    transfersFailed: count("fail"),
    transfersUnknown: count("unknown"),
    unknownApplied: [...transfers.values()].filter((transfer) => transfer.outcome === "unknown" && present.has(transfer.value.tid)).length,
  });
}
