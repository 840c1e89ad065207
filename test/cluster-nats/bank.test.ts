/**
 * The bank-transfer invariant under faults, on a cluster of real processes (`silk cluster up`: three nats-server,
 * 2 partitions × 3 replica processes) with the coordinator in this process (connectCluster; the one coordinator of
 * the cluster: the `silk serve` that `up` started is stopped first).
 *
 * Six accounts, three on each partition. Three workers run transfers concurrently, each one HelixQL query that reads
 * two balances (one account on each partition), updates both and records a Transfer node, all in one transaction
 * (a two-phase commit). A reader samples the total balance meanwhile. While they run: partition 0's leader is
 * SIGKILLed and restarted, a follower of partition 1 is SIGKILLed and restarted, and the NATS server leading
 * partition 0's log stream is SIGKILLed and restarted.
 *
 * Afterwards: every acknowledged transfer's record is present, once; every account's balance is its opening balance
 * plus the transfers present into it minus those out of it (so no transfer is half applied, acknowledged or not);
 * the total never changed, in any sample or at the end; every replica caught up with its log.
 */
import { afterAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { loadSchemaSources } from "../../bin/schema-files.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { connectClusterDirectory } from "../../runtime/remote.js";
import { subjects } from "../../cluster/nats/subjects.js";
import { asSilkError } from "../../protocol/errors.js";
import { removeTemporaryDirectories, runSilk } from "../cli/helpers.js";
import {
  BANK_PROJECT,
  cleanUp,
  clusterUp,
  killPid,
  leaseHolder,
  restartNatsServer,
  sleep,
  startReplicaProcess,
  waitUntilNoIntents,
  type RunningCluster,
} from "./fixtures/cluster-processes.js";

afterAll(removeTemporaryDirectories);

const OPENING = 1_000;
const PAIRS = 3;

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

async function waitUntilFor(what: string, probe: () => boolean, timeoutMs = 60_000, state: () => string = () => ""): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} ${state()}`);
    await sleep(20);
  }
}

/** Every replica of every partition has applied its log's last sequence (from `silk cluster status`). */
/** Whether every replica of both partitions applied its log's last entry, and the status lines that say so. */
async function replicasCaughtUp(cluster: RunningCluster): Promise<{ caughtUp: boolean; status: string }> {
  const status = await runSilk(["cluster", "status", "--dir", cluster.dir]);
  const lines = status.stdout.split("\n").filter((line) => /^p\d:/.test(line));
  const caughtUp =
    lines.length === 2 &&
    lines.every((line) => {
      const match = /log last sequence (\d+), applied r0=(\d+) r1=(\d+) r2=(\d+)$/.exec(line);
      return match !== null && match.slice(2).every((applied) => applied === match[1]);
    });
  return { caughtUp, status: `${status.stdout}${status.stderr}` };
}

describe("bank transfers across partitions under faults", () => {
  it("keeps every acknowledged transfer and the total balance through leader, follower and NATS server crashes", async () => {
    const cluster = await clusterUp("bank");
    try {
      await killPid(cluster.processes.serve!, "SIGTERM"); // this process is the cluster's one coordinator
      const db = await connectClusterDirectory(cluster.dir, { schema: loadSchemaSources(BANK_PROJECT) });
      try {
        const map = new PartitionMap(2);
        const byPartition: Account[][] = [[], []];
        for (let pair = 0; pair < PAIRS; pair++) {
          const opened = (await db.query("OpenPair", { a: `acct-${pair}a`, b: `acct-${pair}b`, balance: OPENING })) as { x: Account; y: Account };
          for (const account of [opened.x, opened.y]) byPartition[map.partitionOf(BigInt(account.id))].push(account);
        }
        expect(byPartition.map((accounts) => accounts.length)).toEqual([PAIRS, PAIRS]);
        const total = 2 * PAIRS * OPENING;

        let running = true;
        const acked: { tid: string; at: number }[] = [];
        const failed = new Map<string, string>();
        const samples: number[] = [];
        let readErrors = 0;
        const worker = async (w: number): Promise<void> => {
          for (let n = 0; running; n++) {
            const [p0, p1] = [byPartition[0][Math.floor(Math.random() * PAIRS)], byPartition[1][Math.floor(Math.random() * PAIRS)]];
            const [from, to] = Math.random() < 0.5 ? [p0, p1] : [p1, p0];
            const tid = `w${w}-${n}`;
            try {
              await db.query("Transfer", { tid, from: from.id, to: to.id, src: from.name, dst: to.name, amount: 1 + Math.floor(Math.random() * 50) });
              acked.push({ tid, at: Date.now() });
            } catch (cause) {
              failed.set(tid, asSilkError(cause).code);
            }
            await sleep(5);
          }
        };
        const reader = async (): Promise<void> => {
          while (running) {
            try {
              const { accounts } = (await db.query("Accounts", {})) as { accounts: Account[] };
              samples.push(accounts.reduce((sum, account) => sum + account.balance, 0));
            } catch {
              readErrors += 1;
            }
            await sleep(50);
          }
        };
        const work = [worker(0), worker(1), worker(2), reader()];
        const ackedAfter = (at: number, count = 1): boolean => acked.filter((ack) => ack.at > at).length >= count;
        const state = (): string => `(acknowledged ${acked.length}, failed ${JSON.stringify([...failed])})`;
        const waitUntil = (what: string, probe: () => boolean): Promise<void> => waitUntilFor(what, probe, 60_000, state);
        const figures: string[] = [];
        try {
          await waitUntil("the first transfers", () => acked.length >= 5);

          // Partition 0's leader crashes; another replica leads; the crashed one restarts and catches up.
          const leader = (await leaseHolder(cluster, 0))!;
          let at = Date.now();
          await killPid(cluster.processes.replicas[`p0-${leader}`], "SIGKILL");
          await waitUntil("a transfer after the leader's crash", () => ackedAfter(at));
          figures.push(`partition leader SIGKILLed: first acknowledged transfer ${acked.find((ack) => ack.at > at)!.at - at} ms later`);
          startReplicaProcess(cluster, 0, Number(leader.slice(1)));
          const back = Date.now();
          await waitUntil("transfers after the restart", () => ackedAfter(back, 5));

          // A follower of partition 1 crashes and restarts.
          const leader1 = (await leaseHolder(cluster, 1))!;
          const follower = [0, 1, 2].find((r) => `r${r}` !== leader1)!;
          at = Date.now();
          await killPid(cluster.processes.replicas[`p1-r${follower}`], "SIGKILL");
          await waitUntil("transfers after the follower's crash", () => ackedAfter(at, 5));
          startReplicaProcess(cluster, 1, follower);

          // The NATS server leading partition 0's log crashes, then restarts with its store.
          const jsm = await jetstreamManager(cluster.nc);
          const natsLeader = (await jsm.streams.info(subjects.logStream(cluster.manifest.name, 0))).cluster?.leader ?? "n1";
          at = Date.now();
          await killPid(cluster.processes.nats[natsLeader], "SIGKILL");
          await waitUntil("a transfer after the NATS server's crash", () => ackedAfter(at));
          figures.push(`NATS server leading the log SIGKILLed: first acknowledged transfer ${acked.find((ack) => ack.at > at)!.at - at} ms later`);
          await sleep(1_000);
          restartNatsServer(cluster, natsLeader);
          const restarted = Date.now();
          await waitUntil("transfers after the NATS server's restart", () => ackedAfter(restarted, 5));
        } finally {
          running = false;
          await Promise.all(work);
        }

        // Anything a failed transfer left prepared is resolved (by its coordinator or the partitions' leaders).
        await waitUntilNoIntents(cluster, 30_000);
        const { accounts } = (await db.query("Accounts", {})) as { accounts: Account[] };
        const { transfers } = (await db.query("Transfers", {})) as { transfers: Transfer[] };
        expect(accounts.reduce((sum, account) => sum + account.balance, 0)).toBe(total);
        const present = new Map<string, number>();
        for (const transfer of transfers) present.set(transfer.tid, (present.get(transfer.tid) ?? 0) + 1);
        expect([...present.values()].every((count) => count === 1)).toBe(true);
        expect(acked.filter((ack) => present.get(ack.tid) !== 1)).toEqual([]);
        for (const account of accounts) {
          const delta = transfers.reduce((sum, t) => sum + (t.dst === account.name ? t.amount : 0) - (t.src === account.name ? t.amount : 0), 0);
          expect(account.balance, account.name).toBe(OPENING + delta);
        }
        expect(samples.length).toBeGreaterThan(10);
        expect(samples.filter((sum) => sum !== total)).toEqual([]);
        // Under a loaded machine the replicas restarted during the faults can take a while to finish catching up.
        let replicas = await replicasCaughtUp(cluster);
        for (let i = 0; i < 120 && !replicas.caughtUp; i++) {
          await sleep(500);
          replicas = await replicasCaughtUp(cluster);
        }
        expect(replicas.caughtUp, replicas.status).toBe(true);
        const failures = [...failed.values()].reduce<Record<string, number>>((counts, code) => ({ ...counts, [code]: (counts[code] ?? 0) + 1 }), {});
        figures.push(`${acked.length} transfers acknowledged, ${transfers.length - acked.length} unacknowledged ones applied, failures ${JSON.stringify(failures)}; ${samples.length} total-balance samples (${readErrors} reads failed)`);
        process.stdout.write(`${figures.join("\n")}\n`);
      } finally {
        await db.close();
      }
    } finally {
      await cleanUp(cluster);
    }
  }, 210_000);
});
