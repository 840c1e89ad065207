/**
 * The commit benchmark (`make bench-commit`): what one acknowledged write costs on disk, next to the leanest
 * durable commit lmdb-js allows, side by side in one run on the same disk.
 *
 * A Silk write is acknowledged once its LMDB transaction is on disk (node/store/partition-store.ts opens writers with
 * overlappingSync off). The invocations waiting in the partition's write queue commit together, one transaction and
 * one fsync per group (node/actor/write-group.ts), so with 16 writers in flight most writes share an fsync. The rows:
 *
 * - `silk`: `db.query("AddUser")` on a disk database, one writer at a time, then 16 in flight.
 * - `silk, groups of 1`: the same with write groups of one invocation (`writeGroup: { invocations: 1 }`): one
 *   transaction and one fsync per write, as before group commit — the baseline beside it.
 * - `lmdb sync`: raw lmdb-js, one `transactionSync` put per write with overlappingSync off — one fsync per
 *   acknowledged write, what Silk's commit is underneath.
 * - `lmdb batched`: raw lmdb-js `await put()` with 16 in flight — lmdb-js groups the puts of one moment into one
 *   transaction and one fsync and resolves each once it is durable: the ceiling a group commit would reach.
 * - `lmdb overlapping`: `transactionSync` with overlappingSync on — the call returns before its fsync, so the
 *   write is not durable when acknowledged (what Silk did before), shown for the price of that promise.
 *
 * Options: `--writes <n>` per row (default 2000), `--rounds <n>`, best of (default 2; other load only slows a run).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { open as openLmdb } from "lmdb";
import { Database } from "../runtime/embedded.js";
import { formatMachine, machineInfo } from "./report.js";

const IN_FLIGHT = 16;
const PROJECT = `N::User { name: String, age: U8 }

QUERY AddUser(name: String, age: U8) =>
    user <- AddN<User>({name: name, age: age})
    RETURN user
`;

interface Row {
  readonly name: string;
  readonly writers: number;
  readonly writesPerSecond: number;
}

/** Runs `write(i)` for i in [0, count) with `writers` of them in flight; the writes per second. */
async function timed(count: number, writers: number, write: (i: number) => Promise<unknown> | unknown): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < count) await write(next++);
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

function scratch(): string {
  return mkdtempSync(join(tmpdir(), "silk-bench-commit-"));
}

async function silk(count: number, writers: number, groupInvocations?: number): Promise<number> {
  const directory = scratch();
  const db = await Database.open({ storage: { disk: directory }, schema: PROJECT }, groupInvocations === undefined ? {} : { writeGroup: { invocations: groupInvocations } });
  try {
    return await timed(count, writers, (i) => db.query("AddUser", { name: `u${i}`, age: i % 100 }));
  } finally {
    await db.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

async function lmdb(count: number, writers: number, mode: "sync" | "batched" | "overlapping"): Promise<number> {
  const directory = scratch();
  const db = openLmdb({ path: directory, overlappingSync: mode === "overlapping", encoding: "binary" });
  const value = Buffer.from(JSON.stringify({ name: "u0000000", age: 42 }));
  const key = (i: number): Buffer => Buffer.from(`user:${i.toString().padStart(9, "0")}`);
  try {
    return await timed(count, writers, (i) => (mode === "batched" ? db.put(key(i), value) : db.transactionSync(() => db.putSync(key(i), value))));
  } finally {
    await db.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { writes: { type: "string", default: "2000" }, rounds: { type: "string", default: "2" } } });
  const count = Number(values.writes);
  const rounds = Number(values.rounds);
  const cases: readonly { name: string; writers: number; run: () => Promise<number> }[] = [
    { name: "silk", writers: 1, run: () => silk(count, 1) },
    { name: "lmdb sync", writers: 1, run: () => lmdb(count, 1, "sync") },
    { name: "lmdb overlapping", writers: 1, run: () => lmdb(count, 1, "overlapping") },
    { name: "silk, groups of 1", writers: IN_FLIGHT, run: () => silk(count, IN_FLIGHT, 1) },
    { name: "silk", writers: IN_FLIGHT, run: () => silk(count, IN_FLIGHT) },
    { name: "lmdb sync", writers: IN_FLIGHT, run: () => lmdb(count, IN_FLIGHT, "sync") },
    { name: "lmdb batched", writers: IN_FLIGHT, run: () => lmdb(count, IN_FLIGHT, "batched") },
  ];
  const best = new Map<number, number>();
  for (let round = 1; round <= rounds; round++) {
    for (const [index, entry] of cases.entries()) {
      const rate = await entry.run();
      best.set(index, Math.max(best.get(index) ?? 0, rate));
      process.stderr.write(`round ${round}: ${entry.name} x${entry.writers}: ${rate.toFixed(0)} writes/s\n`);
    }
  }
  const rows: Row[] = cases.map((entry, index) => ({ name: entry.name, writers: entry.writers, writesPerSecond: best.get(index)! }));
  const rate = (name: string, writers: number): number => rows.find((row) => row.name === name && row.writers === writers)!.writesPerSecond;
  console.log(formatMachine(machineInfo("sources (tsx)")));
  console.log(`disk: ${tmpdir()}; ${count} writes per row, best of ${rounds} rounds\n`);
  for (const row of rows) console.log(`${`${row.name} x${row.writers}`.padEnd(26)} ${row.writesPerSecond.toFixed(0).padStart(8)} writes/s`);
  console.log("");
  console.log(`silk x1 / lmdb sync x1 (the same one fsync per write):        ${(rate("silk", 1) / rate("lmdb sync", 1)).toFixed(2)}`);
  console.log(`lmdb overlapping x1 / lmdb sync x1 (what not waiting costs):  ${(rate("lmdb overlapping", 1) / rate("lmdb sync", 1)).toFixed(2)}`);
  console.log(`silk x${IN_FLIGHT} / lmdb batched x${IN_FLIGHT} (group commit's ceiling):        ${(rate("silk", IN_FLIGHT) / rate("lmdb batched", IN_FLIGHT)).toFixed(2)}`);
  console.log(`silk, groups of 1 x${IN_FLIGHT} / lmdb batched x${IN_FLIGHT} (no group commit):   ${(rate("silk, groups of 1", IN_FLIGHT) / rate("lmdb batched", IN_FLIGHT)).toFixed(2)}`);
  console.log(`silk x${IN_FLIGHT} / silk, groups of 1 x${IN_FLIGHT} (what grouping buys):        ${(rate("silk", IN_FLIGHT) / rate("silk, groups of 1", IN_FLIGHT)).toFixed(2)}`);
}

await main();
