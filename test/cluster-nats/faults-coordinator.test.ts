/**
 * A coordinator SIGKILLed in the middle of a two-phase commit (the SILK_TEST_CRASH_AT hook of `silk serve
 * --cluster`), on a cluster of real processes (`silk cluster up`: three nats-server, 2 partitions × 3 replicas).
 * Two accounts, one on each partition; each crash leaves a transfer between them (both balances and a Transfer
 * record, a two-partition write) in doubt:
 * - after every prepare, before the decision (`prepared_all`): no coordinator comes back; the partitions' leaders
 *   resolve the intents themselves by presumed abort: the transfer is absent;
 * - after the commit decision (`decided`): again no coordinator; the leaders find the commit decision: present;
 * - after the first participant committed (`committed_first`): a coordinator restarts and its recovery commits the
 *   other before it serves: present.
 * Once resolved, a transfer is never half-visible: each balance is its opening balance plus the Transfer records
 * present, and the total never changes (the bank invariant). A bad hook value is refused at start.
 */
import { afterAll, describe, expect, it } from "vitest";
import { loadSchemaSources } from "../../bin/schema-files.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { connectClusterDirectory } from "../../runtime/remote.js";
import { removeTemporaryDirectories, runSilk } from "../cli/helpers.js";
import { BANK_PROJECT, cleanUp, clusterUp, killPid, pendingIntents, post, startServe, waitUntilNoIntents, type RunningCluster } from "./fixtures/cluster-processes.js";

afterAll(removeTemporaryDirectories);

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

const OPENING = 100;

/** The transfers present, after checking the bank invariant and that none is half applied. */
async function transfersPresent(cluster: RunningCluster): Promise<string[]> {
  const database = await connectClusterDirectory(cluster.dir, { schema: loadSchemaSources(BANK_PROJECT), mode: "readonly" });
  try {
    const { accounts } = (await database.query("Accounts", {})) as { accounts: Account[] };
    const { transfers } = (await database.query("Transfers", {})) as { transfers: Transfer[] };
    expect(accounts.reduce((sum, account) => sum + account.balance, 0)).toBe(2 * OPENING);
    for (const account of accounts) {
      const delta = transfers.reduce((sum, t) => sum + (t.dst === account.name ? t.amount : 0) - (t.src === account.name ? t.amount : 0), 0);
      expect(account.balance, account.name).toBe(OPENING + delta);
    }
    return transfers.map((transfer) => transfer.tid).sort();
  } finally {
    await database.close();
  }
}

/** Starts a coordinator that kills itself at `phase`, sends it a transfer from x to y, and waits for its death. */
async function crashAt(cluster: RunningCluster, phase: string, tid: string, accounts: { x: Account; y: Account }): Promise<number> {
  const serve = await startServe(cluster, { SILK_TEST_CRASH_AT: phase });
  const transfer = { tid, from: accounts.x.id, to: accounts.y.id, src: "x", dst: "y", amount: 7 };
  const answer = await post(serve.port, "/Transfer", transfer).then(
    (reply) => `answered ${reply.status}`,
    () => "no answer",
  );
  expect(answer).toBe("no answer");
  expect(await serve.exited).toBe("SIGKILL");
  return Date.now();
}

describe("a coordinator killed during a two-phase commit", () => {
  it("leaves no transaction half-visible: the partitions or the restarted coordinator resolve each one", async () => {
    const cluster = await clusterUp("crash");
    const figures: string[] = [];
    try {
      // Two accounts through the coordinator `up` started, then this test runs its own coordinators.
      const opened = await post(cluster.manifest.port, "/OpenPair", { a: "x", b: "y", balance: OPENING });
      expect(opened.status, JSON.stringify(opened.json)).toBe(200);
      const accounts = opened.json as unknown as { x: Account; y: Account };
      const map = new PartitionMap(2);
      expect([accounts.x, accounts.y].map((account) => map.partitionOf(BigInt(account.id))).sort()).toEqual([0, 1]);
      await killPid(cluster.processes.serve!, "SIGTERM");
      const bad = await runSilk(["serve", "--cluster", cluster.dir, "--port", "0"], { env: { SILK_TEST_CRASH_AT: "sometime" } });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/invalid_option: SILK_TEST_CRASH_AT must be one of prepared_first, prepared_all, decided, committed_first, committed_all/);

      // Prepared everywhere, nothing decided: presumed abort by the partitions' leaders, no coordinator needed.
      let crashed = await crashAt(cluster, "prepared_all", "t-prepared", accounts);
      const inDoubt = await pendingIntents(cluster);
      expect(inDoubt.map((intent) => intent.slice(0, 3)).sort()).toEqual(["p0:", "p1:"]);
      await waitUntilNoIntents(cluster, 30_000);
      figures.push(`prepared_all: resolved by the partitions (abort) ${Date.now() - crashed} ms after the crash`);
      expect(await transfersPresent(cluster)).toEqual([]);

      // Decided commit, nothing applied: the partitions find the decision and commit.
      crashed = await crashAt(cluster, "decided", "t-decided", accounts);
      expect(await pendingIntents(cluster)).toHaveLength(2);
      await waitUntilNoIntents(cluster, 30_000);
      figures.push(`decided: resolved by the partitions (commit) ${Date.now() - crashed} ms after the crash`);
      expect(await transfersPresent(cluster)).toEqual(["t-decided"]);

      // One participant committed: the restarted coordinator commits the other before it serves.
      crashed = await crashAt(cluster, "committed_first", "t-committed", accounts);
      expect(await pendingIntents(cluster)).toHaveLength(1);
      const serve = await startServe(cluster);
      figures.push(`committed_first: resolved by the restarted coordinator's recovery, serving ${Date.now() - crashed} ms after the crash`);
      expect(await pendingIntents(cluster)).toEqual([]);
      const balances = ((await post(serve.port, "/Accounts", {})).json.accounts as Account[]).map((account) => `${account.name}=${account.balance}`).sort();
      expect(balances).toEqual([`x=${OPENING - 14}`, `y=${OPENING + 14}`]);
      expect(await transfersPresent(cluster)).toEqual(["t-committed", "t-decided"]);
      // The cluster goes on taking two-partition writes.
      const after = await post(serve.port, "/Transfer", { tid: "t-after", from: accounts.y.id, to: accounts.x.id, src: "y", dst: "x", amount: 14 });
      expect(after.status).toBe(200);
      expect(await transfersPresent(cluster)).toEqual(["t-after", "t-committed", "t-decided"]);
      await killPid(serve.child.pid!, "SIGTERM");
      process.stdout.write(`${figures.join("\n")}\n`);
    } finally {
      await cleanUp(cluster);
    }
  }, 120_000);
});
