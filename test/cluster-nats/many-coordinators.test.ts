/**
 * Several coordinators at once (issue 16 item 1; docs/ISOLATION.md, "Several coordinators"): bank transfers between
 * 8 accounts on 2 partitions through 3 coordinators (`coordinators: "many"`, each its own NATS connection) running
 * concurrently on a real NATS-backed cluster (in-process replicas, nats-server). Each transfer is one HelixQL
 * invocation that reads both balances, updates both and records a Transfer node.
 *
 * Afterwards: the total is unchanged (8 × 1,000); every acknowledged transfer's record is present exactly once; every
 * balance is its opening balance plus the transfers present into it minus those out of it; every total a reader
 * sampled through any coordinator meanwhile (a multi-partition read) was 8,000. Without validation at the partition
 * leaders (each coordinator's own lock only) transfers through two coordinators lose updates and the total drifts.
 *
 * Then chaos's list-append workload (chaos/workloads.ts: transactions that append to and read several lists) through
 * 3 coordinators at once, its history judged by chaos's checker (cycles in the dependency graph, lost or duplicated
 * appends, reads that no serial order gives).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSchemaSources } from "../../bin/schema-files.js";
import { connectCluster } from "../../runtime/remote.js";
import type { Database } from "../../runtime/embedded.js";
import { asSilkError } from "../../protocol/errors.js";
import { checkClusterManifest } from "../../cluster/nats/manifest.js";
import { chaosProjectDirectory, listAppendWorkload, type Call } from "../../chaos/workloads.js";
import { History } from "../../chaos/history.js";
import { seededRandom } from "../../protocol/random.js";
import { BANK_PROJECT } from "./fixtures/cluster-processes.js";
import { expectCode } from "../helpers/engine.js";
import { startTestCluster, startTestNats, stopTestNats, type TestCluster, type TestNats } from "../helpers/cluster.js";

const SCHEMA = loadSchemaSources(BANK_PROJECT);
const OPENING = 1_000;
const ACCOUNTS = 8;
const COORDINATORS = 3;
const WORKERS_PER_COORDINATOR = 2;
const TRANSFERS_PER_WORKER = 20;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Account {
  readonly id: string;
  readonly name: string;
  readonly balance: number;
}
interface Transfer {
  readonly tid: string;
  readonly src: string;
  readonly dst: string;
  readonly amount: number;
}

let nats: TestNats;
let cluster: TestCluster;
const coordinators: Database[] = [];

beforeAll(async () => {
  nats = await startTestNats(1);
  cluster = await startTestCluster(nats, { partitions: 2, replicas: 2, schema: SCHEMA, coordinators: "many" });
  coordinators.push(cluster.database);
  for (let i = 1; i < COORDINATORS; i++) {
    coordinators.push(await connectCluster({ cluster: cluster.name, servers: nats.urls, partitions: 2, decisionReplicas: nats.streamReplicas, schema: SCHEMA, coordinators: "many" }));
  }
}, 120_000);

afterAll(async () => {
  for (const database of coordinators.slice(1)) await database.close();
  await cluster?.close();
  if (nats !== undefined) await stopTestNats(nats);
});

describe("several coordinators", () => {
  it("keep the bank's total and every acknowledged transfer exactly once with transfers through 3 coordinators at once", async () => {
    const accounts: Account[] = [];
    for (let pair = 0; pair < ACCOUNTS / 2; pair++) {
      const opened = (await coordinators[pair % COORDINATORS].query("OpenPair", { a: `acct-${pair}a`, b: `acct-${pair}b`, balance: OPENING })) as { x: Account; y: Account };
      accounts.push(opened.x, opened.y);
    }
    const total = ACCOUNTS * OPENING;
    const acked: string[] = [];
    const failed = new Map<string, string>();
    const samples: number[] = [];
    const readFailures = new Map<string, number>();
    let writing = true;

    const worker = async (c: number, w: number): Promise<void> => {
      for (let n = 0; n < TRANSFERS_PER_WORKER; n++) {
        const from = accounts[Math.floor(Math.random() * ACCOUNTS)];
        let to = accounts[Math.floor(Math.random() * ACCOUNTS)];
        while (to === from) to = accounts[Math.floor(Math.random() * ACCOUNTS)];
        const tid = `c${c}-w${w}-${n}`;
        try {
          await coordinators[c].query("Transfer", { tid, from: from.id, to: to.id, src: from.name, dst: to.name, amount: 1 + Math.floor(Math.random() * 50) });
          acked.push(tid);
        } catch (cause) {
          failed.set(tid, asSilkError(cause).code);
        }
      }
    };
    const reader = async (c: number): Promise<void> => {
      while (writing) {
        try {
          const { accounts: read } = (await coordinators[c].query("Accounts", {})) as { accounts: Account[] };
          samples.push(read.reduce((sum, account) => sum + account.balance, 0));
        } catch (cause) {
          const code = asSilkError(cause).code;
          readFailures.set(code, (readFailures.get(code) ?? 0) + 1);
        }
        await sleep(20);
      }
    };
    const writers = coordinators.flatMap((_, c) => Array.from({ length: WORKERS_PER_COORDINATOR }, (__, w) => worker(c, w)));
    const readers = coordinators.map((_, c) => reader(c));
    await Promise.all(writers);
    writing = false;
    await Promise.all(readers);

    const state = `acknowledged ${acked.length}, failed ${JSON.stringify(Object.fromEntries(failed))}, read failures ${JSON.stringify(Object.fromEntries(readFailures))}`;
    // Conflicts are retried inside the coordinator: a transfer fails only after its retries ran out.
    expect(acked.length, state).toBeGreaterThan(COORDINATORS * WORKERS_PER_COORDINATOR * TRANSFERS_PER_WORKER * 0.8);
    const { accounts: final } = (await coordinators[0].query("Accounts", {})) as { accounts: Account[] };
    const { transfers } = (await coordinators[1].query("Transfers", {})) as { transfers: Transfer[] };
    expect(final.reduce((sum, account) => sum + account.balance, 0), state).toBe(total);
    const present = new Map<string, number>();
    for (const transfer of transfers) present.set(transfer.tid, (present.get(transfer.tid) ?? 0) + 1);
    expect([...present].filter(([, count]) => count !== 1)).toEqual([]);
    expect(acked.filter((tid) => present.get(tid) !== 1)).toEqual([]);
    // A transfer that failed wrote nothing (every failure is one the coordinator knows left nothing behind).
    expect([...failed.keys()].filter((tid) => present.has(tid))).toEqual([]);
    for (const account of final) {
      const delta = transfers.reduce((sum, t) => sum + (t.dst === account.name ? t.amount : 0) - (t.src === account.name ? t.amount : 0), 0);
      expect(account.balance, account.name).toBe(OPENING + delta);
    }
    expect(samples.length, state).toBeGreaterThan(5);
    expect(samples.filter((sum) => sum !== total), state).toEqual([]);
    process.stdout.write(`many-coordinators: ${state}; ${samples.length} total samples\n`);
  }, 300_000);

  it("refuses a coordinator of the many mode beside a single writer coordinator, whose lock would not see it", async () => {
    const single = await startTestCluster(nats, { partitions: 2, replicas: 1, schema: SCHEMA });
    try {
      // A write waits until its coordinator holds the lease, so the check below meets a held lease.
      await single.database.query("OpenPair", { a: "s-a", b: "s-b", balance: 1 });
      const error = await expectCode(
        connectCluster({ cluster: single.name, servers: nats.urls, partitions: 2, decisionReplicas: nats.streamReplicas, schema: SCHEMA, coordinators: "many" }),
        "writer_locked",
      );
      expect(error.message).toContain("has a single writer coordinator (coordinator ");
    } finally {
      await single.close();
    }
  }, 60_000);

  it("accepts \"one\" and \"many\" as cluster.json's coordinators and connectCluster's option, and refuses another value", async () => {
    const manifest = { format: 1, name: "c", nats: ["nats://127.0.0.1:4222"], partitions: 2, replicas: 1, project: "/p", port: 0 };
    expect(checkClusterManifest({ ...manifest, coordinators: "many" }, "cluster.json").coordinators).toBe("many");
    expect(() => checkClusterManifest({ ...manifest, coordinators: "several" }, "cluster.json")).toThrow('cluster.json: coordinators must be "one" or "many"');
    await expectCode(
      connectCluster({ cluster: cluster.name, servers: nats.urls, partitions: 2, coordinators: "several" as "many" }),
      "invalid_option",
    );
  });

  it("passes chaos's list-append checker with transactions through 3 coordinators at once", async () => {
    const schema = loadSchemaSources(chaosProjectDirectory());
    const lists = await startTestCluster(nats, { partitions: 2, replicas: 1, schema, coordinators: "many" });
    const others: Database[] = [];
    try {
      for (let i = 1; i < COORDINATORS; i++) {
        others.push(await connectCluster({ cluster: lists.name, servers: nats.urls, partitions: 2, decisionReplicas: nats.streamReplicas, schema, coordinators: "many" }));
      }
      const through = [lists.database, ...others];
      // An answer as chaos's HTTP client judges it: an error of the caller's kind (a conflict included) wrote nothing.
      const callThrough =
        (database: Database): Call =>
        async (query, params, write) => {
          try {
            return { outcome: "ok", body: (await database.query(query, params)) as Record<string, unknown> };
          } catch (cause) {
            const error = asSilkError(cause);
            const definite = !write || (error.kind === "user" && error.code !== "query_timeout");
            return { outcome: definite ? "fail" : "unknown", error: error.code };
          }
        };
      const workload = listAppendWorkload("many");
      await workload.setup(async (query, params) => (await through[0].query(query, params)) as Record<string, unknown>);
      const origin = performance.now();
      const history = new History(() => performance.now() - origin);
      let nextProcess = COORDINATORS * WORKERS_PER_COORDINATOR;
      const client = async (index: number): Promise<void> => {
        const random = seededRandom(index + 1);
        const call = callThrough(through[index % COORDINATORS]);
        let process = index;
        for (let n = 0; n < 15; n++) {
          const operation = workload.next(random, index);
          const op = history.invoke(process, operation.f, operation.value);
          const result = await operation.run(call);
          if (result.outcome === "ok") history.complete(op, "ok", result.value);
          else history.complete(op, result.outcome, operation.value, result.error);
          if (result.outcome === "unknown") process = nextProcess++;
        }
      };
      await Promise.all(Array.from({ length: COORDINATORS * WORKERS_PER_COORDINATOR }, (_, index) => client(index)));
      await workload.final(history, callThrough(through[1]), -1);
      const operations = history.operations();
      const verdict = workload.check(operations);
      const outcomes = operations.reduce<Record<string, number>>((counts, op) => ({ ...counts, [op.outcome]: (counts[op.outcome] ?? 0) + 1 }), {});
      expect(verdict.anomalies).toEqual([]);
      expect(verdict.valid).toBe(true);
      expect(outcomes.ok).toBeGreaterThan(operations.length / 2);
      process.stdout.write(`many-coordinators list-append: ${JSON.stringify(outcomes)}, checker ${JSON.stringify(verdict.stats)}\n`);
    } finally {
      for (const database of others) await database.close();
      await lists.close();
    }
  }, 300_000);
});
