/**
 * `silk cluster up`'s supervisor and `silk cluster replace-replica` with real processes: `up` (examples/ project, one
 * partition x 3 replica processes, three nats-server, one `silk serve --cluster`, the supervisor). A second
 * supervisor is refused; one started by hand takes over from one SIGKILLed. Every replica, the
 * coordinator and a NATS server are SIGKILLed; each comes back under a new pid, the restarts show in `status`, and the
 * cluster answers writes and reads again. Then, with a snapshot policy small enough that the log is truncated, one
 * replica is replaced by a new one on another directory with one command: it bootstraps from the latest snapshot and
 * applies the log's tail. A replica started by hand (held down, so the supervisor leaves it to the operator) is not in
 * processes.json; `down` still finds and stops it, and leaves nothing running.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { clusterPaths, readClusterManifest, readClusterProcesses, updateClusterProcesses, type ClusterProcesses } from "../../cluster/nats/manifest.js";
import { withHold } from "../../cluster/nats/supervisor.js";
import { processAlive } from "../../platform/processes.js";
import { REPO, SILK, removeTemporaryDirectories, runSilk, temporaryDirectory } from "../cli/helpers.js";
import { killPid, post, sleep } from "./fixtures/cluster-processes.js";
import { pathToFileURL } from "node:url";

afterAll(removeTemporaryDirectories);

const TSX_LOADER = pathToFileURL(join(REPO, "node_modules", "tsx", "dist", "loader.mjs")).href;

/** Polls until `probe` answers something; generous, for a loaded machine (not a timing assertion). */
async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await Promise.resolve()
      .then(probe)
      .catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** Waits until the supervisor recorded a new pid for `name` that runs; returns it. */
function restarted(dir: string, name: string, previous: number): Promise<number> {
  return until(`${name} restarted`, () => {
    const processes = readClusterProcesses(dir)!;
    const pid = name === "serve" ? processes.serve! : (processes.replicas[name] ?? processes.nats[name]);
    return pid !== previous && processAlive(pid) ? pid : undefined;
  });
}

let users = 0;
async function createUser(port: number): Promise<string> {
  users += 1;
  const created = await post(port, "/CreateUser", { handle: `u${users}`, name: `User ${users}`, age: 20 + users });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  return (created.json.user as { id: string }).id;
}

describe("silk cluster supervision", () => {
  it("restarts killed replicas, the coordinator and a NATS server, replaces a replica on a new directory, and down stops everything", async () => {
    const dir = temporaryDirectory();
    const everyPid = new Set<number>();
    const remember = (processes: ClusterProcesses): void => {
      for (const pid of [...Object.values(processes.nats), ...Object.values(processes.replicas), processes.serve!, processes.supervisor!]) everyPid.add(pid);
    };
    try {
      const up = await runSilk(["cluster", "up", "--dir", dir, "--project", join(REPO, "examples"), "--partitions", "1", "--replicas", "3", "--port", "0", "--name", "sup-test"]);
      expect(up.stderr).toBe("");
      expect(up.code).toBe(0);
      expect(up.stdout).toMatch(/supervised \(a process that dies is started again\) by pid \d+/);
      const started = readClusterProcesses(dir)!;
      remember(started);
      expect(processAlive(started.supervisor!)).toBe(true);
      const port = readClusterManifest(dir).port;
      const first = await createUser(port);

      const status = await runSilk(["cluster", "status", "--dir", dir]);
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(`supervisor: pid ${started.supervisor} alive\n`);
      for (const name of ["n1", "n2", "n3", "p0-r0", "p0-r1", "p0-r2"]) expect(status.stdout).toMatch(new RegExp(`^  ${name}: pid \\d+ alive$`, "m"));
      expect(status.stdout).toContain(`  serve: pid ${started.serve} alive\n`);

      // A second supervisor is refused while the first runs; one started by hand takes over from one that died (and
      // does every restart below).
      const second = await runSilk(["cluster", "supervise", "--dir", dir]);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(new RegExp(`silk cluster: invalid_option: the cluster in .* is supervised already, by pid ${started.supervisor}`));
      await killPid(started.supervisor!, "SIGKILL");
      const takeover = spawn(process.execPath, ["--import", TSX_LOADER, SILK, "cluster", "supervise", "--dir", dir], { cwd: REPO, detached: true, stdio: "ignore" });
      takeover.unref();
      everyPid.add(takeover.pid!);
      await until("the new supervisor's claim", () => (readClusterProcesses(dir)!.supervisor === takeover.pid ? true : undefined));

      // A snapshot every 4 entries, keeping one: the log is truncated at each. Replicas read cluster.json when they
      // start, so kill all three at once: the supervisor starts them again, and they take the new policy.
      const manifest = JSON.parse(readFileSync(join(dir, "cluster.json"), "utf8")) as Record<string, unknown>;
      writeFileSync(join(dir, "cluster.json"), JSON.stringify({ ...manifest, snapshots: { everyEntries: 4, keep: 1 } }));
      for (const replica of [0, 1, 2]) process.kill(started.replicas[`p0-r${replica}`], "SIGKILL");
      for (const replica of [0, 1, 2]) await restarted(dir, `p0-r${replica}`, started.replicas[`p0-r${replica}`]);
      // The cluster answers: a write (a leader was elected among the restarted replicas) and a read of the first.
      await createUser(port);
      expect((await post(port, "/GetUser", { id: first })).json).toMatchObject({ user: { handle: "u1" } });

      // The coordinator and a NATS server, killed, come back; the HTTP port answers again.
      process.kill(started.serve!, "SIGKILL");
      await restarted(dir, "serve", started.serve!);
      process.kill(started.nats.n2, "SIGKILL");
      await restarted(dir, "n2", started.nats.n2);
      await until("the restarted coordinator's /health", async () => ((await fetch(`http://127.0.0.1:${port}/health`)).ok ? true : undefined));
      for (let write = 0; write < 12; write++) await createUser(port);

      const afterRestarts = await runSilk(["cluster", "status", "--dir", dir]);
      // A replica may restart more than once: one that falls behind the log truncated below the newest snapshot (keep
      // 1, a snapshot every 4 entries; seen once, around n2's kill) stops with log_truncated and, started again,
      // bootstraps from that snapshot (docs/CLUSTER.md, "What followers still need").
      for (const name of ["p0-r0", "p0-r1", "p0-r2"]) expect(afterRestarts.stdout).toMatch(new RegExp(`^  ${name}: pid \\d+ alive, [1-9]\\d* restarts?$`, "m"));
      for (const name of ["serve", "n2"]) expect(afterRestarts.stdout).toMatch(new RegExp(`^  ${name}: pid \\d+ alive, 1 restart$`, "m"));
      expect(afterRestarts.stdout).toMatch(/^  n1: pid \d+ alive$/m);
      remember(readClusterProcesses(dir)!);

      // Replace a follower by a new one on another directory: the log no longer starts at 1, so it bootstraps.
      const truncated = await until("a snapshot and a truncated log", async () => {
        const text = (await runSilk(["cluster", "status", "--dir", dir])).stdout;
        return /log holds (\d+)\.\./.exec(text) !== null && Number(/log holds (\d+)\.\./.exec(text)![1]) > 1 && /latest snapshot at \d+/.test(text) ? text : undefined;
      });
      const leader = /^p0: leader r(\d)/m.exec(truncated)![1];
      const follower = ["0", "1", "2"].find((replica) => replica !== leader)!;
      const name = `p0-r${follower}`;
      const oldPid = readClusterProcesses(dir)!.replicas[name];
      const store = join(temporaryDirectory(), "new-store");
      const replaced = await runSilk(["cluster", "replace-replica", "--dir", dir, "--partition", "0", "--replica", follower, "--store", store]);
      expect(replaced.stderr).toBe("");
      expect(replaced.code).toBe(0);
      // The old one runs, unless it is between two restarts (see above).
      expect(replaced.stdout).toMatch(new RegExp(`replica ${name} of partition 0 runs on ${store} \\(pid \\d+\\)(, the old one \\(pid ${oldPid}\\) stopped)?; it applied the log through sequence \\d+`));
      expect(readClusterManifest(dir).stores).toEqual({ [name]: store });
      expect(processAlive(oldPid)).toBe(false);
      expect(existsSync(join(store, "data.mdb"))).toBe(true);
      expect(readFileSync(`${clusterPaths.replicaLog(dir, 0, Number(follower))}.out`, "utf8")).toMatch(/bootstrapped from the snapshot at log sequence \d+/);
      const processes = readClusterProcesses(dir)!;
      remember(processes);
      expect(processes.held).toBeUndefined();
      expect(processes.restarts?.[name]).toBeUndefined();
      // It follows the log from there: after another write every replica is at the log's last sequence.
      await createUser(port);
      await until("every replica at the log's last sequence", async () => {
        const match = /^p0: leader r\d \(term \d+\), log last sequence (\d+), applied r0=(\d+) r1=(\d+) r2=(\d+)$/m.exec((await runSilk(["cluster", "status", "--dir", dir])).stdout);
        return match !== null && match.slice(2).every((applied) => applied === match[1]) ? true : undefined;
      });
      // The replaced replica is supervised as any other: killed, it comes back on its new store.
      process.kill(processes.replicas[name], "SIGKILL");
      await restarted(dir, name, processes.replicas[name]);
      expect((await post(port, "/GetUser", { id: first })).json).toMatchObject({ user: { handle: "u1" } });

      // Replacing onto a directory that holds files is refused before anything changes.
      const refused = await runSilk(["cluster", "replace-replica", "--dir", dir, "--partition", "0", "--replica", follower, "--store", dir]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/invalid_option: .* is not empty/);

      // A replica held down and started by hand: nothing records its pid, yet it is this cluster's.
      const other = ["0", "1", "2"].find((replica) => replica !== leader && replica !== follower)!;
      const byHandName = `p0-r${other}`;
      updateClusterProcesses(dir, (current) => withHold(current, byHandName, true));
      await killPid(readClusterProcesses(dir)!.replicas[byHandName], "SIGKILL");
      const byHand = spawn(process.execPath, ["--import", TSX_LOADER, SILK, "partition", "--dir", dir, "--partition", "0", "--replica", other], { cwd: REPO, detached: true, stdio: "ignore" });
      byHand.unref();
      everyPid.add(byHand.pid!);
      await until("the replica started by hand to run", () => (existsSync(clusterPaths.replicaLog(dir, 0, Number(other))) && processAlive(byHand.pid!) ? true : undefined));
      const heldStatus = await runSilk(["cluster", "status", "--dir", dir]);
      expect(heldStatus.stdout).toMatch(new RegExp(`^  ${byHandName}: pid \\d+ dead, [1-9]\\d* restarts?, held down$`, "m"));

      const down = await runSilk(["cluster", "down", "--dir", dir]);
      expect(down.code).toBe(0);
      // The supervisor, 3 NATS servers, 2 recorded replicas, the coordinator and the replica started by hand; the
      // held replica's recorded pid is dead.
      expect(down.stdout).toMatch(/stopped 8 processes of the cluster in .* \(1 recorded were not running\)/);
    } finally {
      if (existsSync(clusterPaths.processes(dir))) await runSilk(["cluster", "down", "--dir", dir]); // after a failure
    }
    expect([...everyPid].filter(processAlive)).toEqual([]);
    expect(existsSync(clusterPaths.processes(dir))).toBe(false);
  }, 300_000);
});
