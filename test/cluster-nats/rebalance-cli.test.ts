/**
 * `silk cluster add-partition` and `silk cluster move` end to end: `silk cluster up` (three NATS servers, the bank
 * project, 1 partition x 2 replica processes, one `silk serve --cluster`), accounts written over HTTP, a partition
 * added (its replica processes started, cluster.json and processes.json updated), half of partition 0's IDs moved to
 * it through the coordinator's admin subject; every account stays readable over HTTP, `status` shows the map, bad
 * moves are refused with their code, and `down` stops every process, the new ones included.
 */
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { clusterPaths, readClusterManifest, type ClusterProcesses } from "../../cluster/nats/manifest.js";
import { removeTemporaryDirectories, runSilk, temporaryDirectory } from "../cli/helpers.js";
import { BANK_PROJECT, post } from "./fixtures/cluster-processes.js";
import { processAlive } from "../../platform/processes.js";

afterAll(() => removeTemporaryDirectories());

interface Account {
  id: string;
  name: string;
  balance: number;
}

describe("silk cluster add-partition and move", () => {
  it("adds a partition and moves half of partition 0's IDs to it while the server serves", async () => {
    const dir = temporaryDirectory();
    let processes: ClusterProcesses | undefined;
    try {
      const up = await runSilk(["cluster", "up", "--dir", dir, "--project", BANK_PROJECT, "--partitions", "1", "--replicas", "2", "--port", "0", "--name", "rebalance-cli"]);
      expect(up.stderr).toBe("");
      expect(up.code).toBe(0);
      const port = readClusterManifest(dir).port;
      for (let pair = 0; pair < 30; pair++) expect((await post(port, "/OpenPair", { a: `a${pair}`, b: `b${pair}`, balance: 100 })).status).toBe(200);
      const before = ((await post(port, "/Accounts", {})).json.accounts as Account[]).map((a) => a.id).sort();
      expect(before).toHaveLength(60);

      const added = await runSilk(["cluster", "add-partition", "--dir", dir]);
      expect(added.stderr).toBe("");
      expect(added.stdout).toMatch(/partition 1 \(IDs \d+\.\.\d+\) serves; map version 2/);
      expect(readClusterManifest(dir).partitions).toBe(2);
      processes = JSON.parse(readFileSync(clusterPaths.processes(dir), "utf8")) as ClusterProcesses;
      expect(Object.keys(processes.replicas).sort()).toEqual(["p0-r0", "p0-r1", "p1-r0", "p1-r1"]);

      const refused = await runSilk(["cluster", "move", "--dir", dir, "--from", "0", "--to", "5"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/invalid_option: no serving partition 5/);

      const moved = await runSilk(["cluster", "move", "--dir", dir, "--from", "0", "--to", "1"]);
      expect(moved.stderr).toBe("");
      expect(moved.stdout).toMatch(/silk: moved \d+ IDs from partition 0 to 1 in \d+ chunks; map version 3/);

      const after = (await post(port, "/Accounts", {})).json.accounts as Account[];
      expect(after.map((a) => a.id).sort()).toEqual(before);
      // A write after the move and a transfer between a moved and an unmoved account.
      expect((await post(port, "/OpenPair", { a: "late-a", b: "late-b", balance: 5 })).status).toBe(200);
      const [first, last] = [after[0], after[after.length - 1]];
      expect((await post(port, "/Transfer", { tid: "t1", from: first.id, to: last.id, src: first.name, dst: last.name, amount: 7 })).status).toBe(200);
      const final = (await post(port, "/Accounts", {})).json.accounts as Account[];
      expect(final).toHaveLength(62);
      expect(new Set(final.map((a) => a.id)).size).toBe(62);
      expect(final.reduce((sum, a) => sum + a.balance, 0)).toBe(6_010);

      const status = await runSilk(["cluster", "status", "--dir", dir]);
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(/map version 3/);
      expect(status.stdout).toMatch(/^p1: leader r\d/m);
    } finally {
      const down = await runSilk(["cluster", "down", "--dir", dir]);
      expect(down.stdout).toMatch(/stopped \d+ processes/);
      if (processes !== undefined) expect(Object.values(processes.replicas).filter(processAlive)).toEqual([]);
    }
  }, 120_000);
});
