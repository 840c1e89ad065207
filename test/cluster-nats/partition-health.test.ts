/**
 * `silk partition --health-port`: a replica process answers GET /health for a supervisor's probes (the Kubernetes
 * manifests in deploy/ read it): 200 with its partition, replica, role and applied sequence while it runs; GET
 * /metrics in Prometheus text (role, applied sequence, LMDB gauges, process metrics); 404 for any other route; and a
 * port it cannot bind refuses the start with invalid_option. GET /ready is the readiness probe: 200 while the
 * replica is caught up with its log (a leader; a follower current within `--ready-within-ms`), 503 naming how far
 * behind it is once a follower cut off from NATS (through the chaos harness's proxy) falls past the bound, and 200
 * again after it rejoins and catches up; /health stays 200 throughout (liveness is not readiness).
 */
import { once } from "node:events";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLUSTER_FORMAT, NATS_SERVERS_ENV, writeClusterManifest } from "../../cluster/nats/manifest.js";
import { FaultProxy } from "../../chaos/proxy.js";
import { REPO, removeTemporaryDirectories, runSilk, spawnSilk, temporaryDirectory } from "../cli/helpers.js";
import { startTestNats, stopTestNats, type TestNats } from "../helpers/cluster.js";

let nats: TestNats;

beforeAll(async () => {
  nats = await startTestNats(1);
}, 30_000);

afterAll(async () => {
  if (nats !== undefined) await stopTestNats(nats);
  removeTemporaryDirectories();
});

/** Starts `silk partition` with a health port; resolves to it and its base URL once it prints where it listens. */
async function startReplica(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<{ process: ReturnType<typeof spawnSilk>; base: string }> {
  const child = spawnSilk(["partition", ...args, "--health-port", "0"], env === undefined ? {} : { env: { ...process.env, ...env } });
  let printed = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (printed += chunk));
  const pattern = /health on (http:\/\/[0-9.]+:[0-9]+)\/health/;
  while (!pattern.test(printed)) {
    if (child.exitCode !== null) throw new Error(`the replica exited (${child.exitCode})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { process: child, base: pattern.exec(printed)![1] };
}

/** Asks GET /ready until it answers `status`; resolves to that answer's body. */
async function readyUntil(base: string, status: number): Promise<Record<string, unknown>> {
  for (;;) {
    const response = await fetch(`${base}/ready`);
    const body = (await response.json()) as Record<string, unknown>;
    if (response.status === status) return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("silk partition --health-port", () => {
  it("answers GET /health and GET /metrics while the replica runs, 404 elsewhere, and refuses a port it cannot bind", async () => {
    const dir = temporaryDirectory();
    writeClusterManifest(dir, { format: CLUSTER_FORMAT, name: "health", nats: nats.urls, partitions: 1, replicas: 2, project: join(REPO, "examples"), port: 0 });
    const replica = spawnSilk(["partition", "--dir", dir, "--partition", "0", "--replica", "0", "--health-port", "0"]);
    try {
      let printed = "";
      replica.stdout.setEncoding("utf8").on("data", (chunk: string) => (printed += chunk));
      while (!/health on (http:\/\/[0-9.]+:[0-9]+)\/health/.test(printed)) {
        if (replica.exitCode !== null) throw new Error(`the replica exited (${replica.exitCode})`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const base = /health on (http:\/\/[0-9.]+:[0-9]+)\/health/.exec(printed)![1];
      const health = await fetch(`${base}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: "ok", partition: 0, replica: "r0", role: expect.stringMatching(/^(leader|follower)$/), applied: expect.any(Number) });
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
      const text = await metrics.text();
      expect(text).toMatch(/^silk_replica_leader\{partition="0",replica="r0"\} [01]$/m);
      expect(text).toMatch(/^silk_replica_applied_sequence\{partition="0",replica="r0"\} \d+$/m);
      for (const name of ["silk_lmdb_map_size_bytes", "silk_lmdb_used_bytes", "silk_lmdb_free_pages", "silk_lmdb_readers"]) {
        expect(text).toMatch(new RegExp(`^${name}\\{partition="0",replica="r0"\\} \\d+$`, "m"));
      }
      expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
      const other = await fetch(`${base}/status`);
      expect([other.status, ((await other.json()) as { error: string }).error]).toEqual([404, "not_found"]);

      // The same port for the second replica: refused before it serves, naming the flag.
      const taken = await runSilk(["partition", "--dir", dir, "--partition", "0", "--replica", "1", "--health-port", new URL(base).port]);
      expect(taken.code).toBe(1);
      expect(taken.stderr).toMatch(/silk partition: invalid_option: --health-port \d+: .*EADDRINUSE/);
    } finally {
      replica.kill("SIGTERM");
      if (replica.exitCode === null) await once(replica, "exit");
    }
    expect(replica.exitCode).toBe(0);
  }, 60_000);

  it("answers GET /ready 200 only while caught up with the log: 503 for a follower cut off from NATS past the bound, 200 again once it rejoins", async () => {
    const dir = temporaryDirectory();
    writeClusterManifest(dir, { format: CLUSTER_FORMAT, name: "ready", nats: nats.urls, partitions: 1, replicas: 2, project: join(REPO, "examples"), port: 0 });
    const leader = await startReplica(["--dir", dir, "--partition", "0", "--replica", "0"]);
    const target = new URL(nats.urls[0].replace(/^nats:/, "http:"));
    const proxy = await FaultProxy.start({ host: target.hostname, port: Number(target.port) });
    let follower: Awaited<ReturnType<typeof startReplica>> | undefined;
    try {
      expect(await readyUntil(leader.base, 200)).toMatchObject({ status: "ok", partition: 0, replica: "r0", readyWithinMs: 5_000 });
      follower = await startReplica(["--dir", dir, "--partition", "0", "--replica", "1", "--ready-within-ms", "2000"], { [NATS_SERVERS_ENV]: proxy.url });
      expect(await readyUntil(follower.base, 200)).toMatchObject({ status: "ok", replica: "r1", readyWithinMs: 2_000 });

      proxy.partition();
      const behind = await readyUntil(follower.base, 503);
      expect(behind).toMatchObject({ error: "partition_unavailable", replica: "r1", readyWithinMs: 2_000 });
      expect(behind.stalenessMs).toBeGreaterThan(2_000);
      expect(String(behind.msg)).toMatch(/^the replica was last caught up with its log \d+ ms ago, beyond the readiness bound of 2000 ms$/);
      expect((await fetch(`${follower.base}/health`)).status).toBe(200);

      proxy.heal();
      expect(await readyUntil(follower.base, 200)).toMatchObject({ status: "ok", replica: "r1" });
    } finally {
      for (const replica of [follower, leader]) {
        if (replica === undefined) continue;
        replica.process.kill("SIGTERM");
        if (replica.process.exitCode === null) await once(replica.process, "exit");
      }
      await proxy.close();
    }
  }, 90_000);
});
