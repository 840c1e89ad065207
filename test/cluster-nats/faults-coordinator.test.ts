/**
 * A coordinator SIGKILLed in the middle of a two-phase commit (the SILK_TEST_CRASH_AT hook of `silk serve
 * --cluster`), on a cluster of real processes (`silk cluster up`: three nats-server, 2 partitions × 3 replicas).
 * Each crash leaves a two-partition write (two accounts, one per partition) in doubt:
 * - after every prepare, before the decision (`prepared_all`): no coordinator comes back; the partitions' leaders
 *   resolve the intents themselves by presumed abort: neither account exists;
 * - after the commit decision (`decided`): again no coordinator; the leaders find the commit decision: both exist;
 * - after the first participant committed (`committed_first`): a coordinator restarts and its recovery commits the
 *   other before it serves: both exist.
 * Never is one account of a pair visible without the other once the transaction is resolved. A bad hook value is
 * refused at start.
 */
import { afterAll, describe, expect, it } from "vitest";
import { loadSchemaSources } from "../../bin/schema-files.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { connectClusterDirectory } from "../../cluster/remote.js";
import { removeTemporaryDirectories, runSilk } from "../cli/helpers.js";
import { BANK_PROJECT, cleanUp, clusterUp, killPid, pendingIntents, post, startServe, waitUntilNoIntents, type RunningCluster } from "./fixtures/cluster-processes.js";

afterAll(removeTemporaryDirectories);

interface Account {
  readonly id: string;
  readonly name: string;
  readonly balance: number;
}

async function accountNames(cluster: RunningCluster): Promise<string[]> {
  const database = await connectClusterDirectory(cluster.dir, { schema: loadSchemaSources(BANK_PROJECT), mode: "readonly" });
  try {
    return ((await database.query("Accounts", {})) as { accounts: Account[] }).accounts.map((account) => account.name).sort();
  } finally {
    await database.close();
  }
}

/** Starts a coordinator that kills itself at `phase`, sends it a two-partition write, and waits for its death. */
async function crashAt(cluster: RunningCluster, phase: string, pair: string): Promise<number> {
  const serve = await startServe(cluster, { SILK_TEST_CRASH_AT: phase });
  const answer = await post(serve.port, "/OpenPair", { a: `${pair}-a`, b: `${pair}-b`, balance: 10 }).then(
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
      await killPid(cluster.processes.serve!, "SIGTERM"); // this test runs its own coordinators
      const bad = await runSilk(["serve", "--cluster", cluster.dir, "--port", "0"], { env: { SILK_TEST_CRASH_AT: "sometime" } });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/invalid_option: SILK_TEST_CRASH_AT must be one of prepared_first, prepared_all, decided, committed_first, committed_all/);

      // Prepared everywhere, nothing decided: presumed abort by the partitions' leaders, no coordinator needed.
      let crashed = await crashAt(cluster, "prepared_all", "pa");
      const inDoubt = await pendingIntents(cluster);
      expect(inDoubt.map((intent) => intent.slice(0, 3)).sort()).toEqual(["p0:", "p1:"]);
      await waitUntilNoIntents(cluster, 30_000);
      figures.push(`prepared_all: resolved by the partitions (abort) ${Date.now() - crashed} ms after the crash`);
      expect(await accountNames(cluster)).toEqual([]);

      // Decided commit, nothing applied: the partitions find the decision and commit.
      crashed = await crashAt(cluster, "decided", "dc");
      expect(await pendingIntents(cluster)).toHaveLength(2);
      await waitUntilNoIntents(cluster, 30_000);
      figures.push(`decided: resolved by the partitions (commit) ${Date.now() - crashed} ms after the crash`);
      expect(await accountNames(cluster)).toEqual(["dc-a", "dc-b"]);

      // One participant committed: the restarted coordinator commits the other before it serves.
      crashed = await crashAt(cluster, "committed_first", "cf");
      expect(await pendingIntents(cluster)).toHaveLength(1);
      const serve = await startServe(cluster);
      figures.push(`committed_first: resolved by the restarted coordinator's recovery, serving ${Date.now() - crashed} ms after the crash`);
      expect(await pendingIntents(cluster)).toEqual([]);
      const accounts = ((await post(serve.port, "/Accounts", {})).json.accounts as Account[]).map((account) => account.name).sort();
      expect(accounts).toEqual(["cf-a", "cf-b", "dc-a", "dc-b"]);
      // The pairs really spanned both partitions, and the cluster goes on taking two-partition writes.
      const opened = await post(serve.port, "/OpenPair", { a: "ok-a", b: "ok-b", balance: 1 });
      expect(opened.status).toBe(200);
      const map = new PartitionMap(2);
      const ids = [(opened.json.x as Account).id, (opened.json.y as Account).id].map((id) => map.partitionOf(BigInt(id)));
      expect(ids.sort()).toEqual([0, 1]);
      await killPid(serve.child.pid!, "SIGTERM");
      process.stdout.write(`${figures.join("\n")}\n`);
    } finally {
      await cleanUp(cluster);
    }
  }, 120_000);
});
