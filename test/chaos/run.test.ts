/**
 * `silk chaos run` end to end, bounded (docs/CHAOS.md): a 12-second bank run on a cluster the command starts
 * (2 partitions × 3 replica processes, three nats-server), with leader and follower kills and pauses drawn from the
 * seed; then a short register run attached to the same cluster; then the cluster is stopped; and a 12-second
 * list-append run whose seed draws two partitions (a follower, then a leader cut off from every NATS server by the
 * run's proxies) on a cluster it starts and stops, and one interrupted mid-run, which stops its cluster (it cannot
 * outlive the proxies). Each run's history,
 * faults, summary and report are written, the verdict is valid and the exit code says so. A bad fault name, and a
 * non-empty directory without a running cluster, are refused before anything starts.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pairEvents, type HistoryEvent } from "../../chaos/history.js";
import type { ChaosSummary } from "../../chaos/summary.js";
import type { FaultEvent } from "../../chaos/nemesis.js";
import { readClusterProcesses } from "../../cluster/nats/manifest.js";
import { parseDuration } from "../../bin/chaos-command.js";
import { processAlive } from "../../platform/processes.js";
import { removeTemporaryDirectories, runSilk, spawnSilk, temporaryDirectory } from "../cli/helpers.js";

afterAll(removeTemporaryDirectories);

const jsonLines = <T>(path: string): T[] =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as T);

describe("silk chaos run", () => {
  it("refuses an unknown fault, and a directory it cannot start a cluster in, before starting anything", async () => {
    const dir = temporaryDirectory();
    const fault = await runSilk(["chaos", "run", "--cluster", dir, "--workload", "bank", "--faults", "kill-leader,netsplit"]);
    expect(fault.code).toBe(1);
    expect(fault.stderr).toContain("unknown fault netsplit (known: kill-leader, kill-follower, kill-nats, kill-coordinator, pause, partition, partition-nats)");
    // Partitions need the run's own proxies in front of NATS: a cluster it starts and stops.
    const kept = await runSilk(["chaos", "run", "--cluster", dir, "--workload", "bank", "--faults", "partition", "--keep"]);
    expect(kept.code).toBe(1);
    expect(kept.stderr).toContain("silk chaos: invalid_option: partition needs a cluster the run starts and stops");
    expect(existsSync(join(dir, "cluster.json"))).toBe(false);
    // A directory that holds something but no running cluster (a stopped one's stores would meet a fresh log).
    writeFileSync(join(dir, "notes.txt"), "x");
    const occupied = await runSilk(["chaos", "run", "--cluster", dir, "--workload", "bank"]);
    expect(occupied.code).toBe(1);
    expect(occupied.stderr).toContain("silk chaos: invalid_option:");
    expect(occupied.stderr).toContain("is not empty and holds no running cluster");
  }, 180_000);

  it("reads durations in ms, s and m, and refuses others", () => {
    expect([parseDuration("60s"), parseDuration("1500ms"), parseDuration("2m"), parseDuration("15")]).toEqual([60_000, 1_500, 120_000, 15_000]);
    expect(() => parseDuration("soon")).toThrow("expected a duration such as 60s, 1500ms or 2m");
    expect(() => parseDuration("500ms")).toThrow("a run lasts at least 1s");
  });

  it("runs the bank under seeded kills and pauses, checks the history, then attaches a register run to the same cluster", async () => {
    const dir = temporaryDirectory();
    const out = temporaryDirectory();
    try {
      const bank = await runSilk([
        "chaos", "run", "--cluster", dir, "--workload", "bank", "--faults", "kill-leader,kill-follower,pause",
        "--duration", "12s", "--rate", "15", "--seed", "11", "--out", out, "--keep",
      ]);
      expect(bank.code, `${bank.stdout}${bank.stderr}`).toBe(0);
      expect(bank.stdout).toContain("verdict: valid");
      const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8")) as ChaosSummary;
      expect(summary.verdict.valid).toBe(true);
      expect(summary.operations.total).toBeGreaterThan(10);
      expect(summary.operations.ok).toBeGreaterThan(0);
      expect(summary.operations.ok + summary.operations.fail + summary.operations.unknown).toBe(summary.operations.total);
      expect(summary.faults.planned).toBeGreaterThanOrEqual(1);
      const faults = jsonLines<FaultEvent>(join(out, "faults.jsonl"));
      expect(faults.length).toBe(summary.faults.planned);
      expect(faults.filter((fault) => fault.skipped === undefined).length).toBe(summary.faults.applied);
      // Every invocation has its completion (the final reads included), and the summary counts the clients' ones.
      const operations = pairEvents(jsonLines<HistoryEvent>(join(out, "history.jsonl")));
      expect(operations.every((operation) => Number.isFinite(operation.end))).toBe(true);
      expect(operations.filter((operation) => operation.process >= 0).length).toBe(summary.operations.total);
      expect(operations.some((operation) => operation.process === -1 && operation.f === "read-transfers" && operation.outcome === "ok")).toBe(true);
      expect(readFileSync(join(out, "report.html"), "utf8")).toContain("Verdict: valid");
      expect(readFileSync(join(out, "summary.txt"), "utf8")).toBe(bank.stdout.slice(bank.stdout.indexOf("workload bank")).split("silk chaos: history")[0]);

      // The cluster kept running (--keep): a second run attaches to it rather than starting another.
      const before = readClusterProcesses(dir)!;
      const registerOut = temporaryDirectory();
      const register = await runSilk(["chaos", "run", "--cluster", dir, "--workload", "register", "--duration", "3s", "--rate", "20", "--seed", "2", "--out", registerOut]);
      expect(register.code, `${register.stdout}${register.stderr}`).toBe(0);
      expect(register.stdout).not.toContain("is up in");
      expect(register.stdout).toContain("verdict: valid");
      expect(readClusterProcesses(dir)).toEqual(before);
      const registerSummary = JSON.parse(readFileSync(join(registerOut, "summary.json"), "utf8")) as ChaosSummary;
      expect(registerSummary.faults.planned).toBe(0);
      expect(registerSummary.verdict.stats.keys).toBe(3);
    } finally {
      const down = await runSilk(["cluster", "down", "--dir", dir]);
      expect(down.code).toBe(0);
    }
    // Generous: on a loaded machine starting the cluster's eleven processes alone can take minutes (the command
    // waits up to CHAOS_CLUSTER_UP_TIMEOUT_MS for them).
  }, 420_000);

  it("runs list-append under seeded network partitions on a cluster it starts behind its proxies, and stops it", async () => {
    const dir = temporaryDirectory();
    const out = temporaryDirectory();
    const run = await runSilk([
      "chaos", "run", "--cluster", dir, "--workload", "list-append", "--faults", "partition",
      "--duration", "12s", "--rate", "15", "--seed", "7", "--out", out,
    ]);
    expect(run.code, `${run.stdout}${run.stderr}`).toBe(0);
    expect(run.stdout).toContain("verdict: valid");
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8")) as ChaosSummary;
    expect(summary.verdict.valid).toBe(true);
    expect(summary.operations.ok).toBeGreaterThan(0);
    // Seed 7 draws a follower's partition at 1.8 s, then a leader's at 5.5 s (chaos/schedule.ts).
    const faults = jsonLines<FaultEvent>(join(out, "faults.jsonl"));
    expect(faults.map((fault) => fault.kind)).toEqual(["partition-follower", "partition-leader"]);
    expect(faults.filter((fault) => fault.skipped === undefined).length).toBeGreaterThanOrEqual(1);
    // The run started the cluster and stopped it (its proxies end with the run).
    expect(run.stdout).toContain("is up in");
    expect(run.stdout).toMatch(/silk: stopped \d+ processes of the cluster/);
  }, 420_000);

  it("runs the bank under seeded partitions between NATS servers (their routes through its proxies): no anomaly", async () => {
    const dir = temporaryDirectory();
    const out = temporaryDirectory();
    const run = await runSilk([
      "chaos", "run", "--cluster", dir, "--workload", "bank", "--faults", "partition-nats",
      "--duration", "15s", "--rate", "15", "--seed", "2", "--out", out,
    ]);
    expect(run.code, `${run.stdout}${run.stderr}`).toBe(0);
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8")) as ChaosSummary;
    expect(summary.verdict.valid).toBe(true);
    expect(summary.verdict.anomalies).toEqual([]);
    expect(summary.operations.ok).toBeGreaterThan(0);
    // Seed 2 cuts n1 off from its peers at 2.3 s for 2.0 s, then n2 at 7.9 s for 2.5 s (chaos/schedule.ts).
    const faults = jsonLines<FaultEvent>(join(out, "faults.jsonl"));
    expect(faults.map((fault) => [fault.kind, fault.target, fault.skipped])).toEqual([
      ["partition-nats", "n1", undefined],
      ["partition-nats", "n2", undefined],
    ]);
    expect(run.stdout).toMatch(/silk: stopped \d+ processes of the cluster/);
  }, 420_000);

  it("interrupted with partitions, heals and stops the cluster it started behind its proxies", async () => {
    const dir = temporaryDirectory();
    const child = spawnSilk(["chaos", "run", "--cluster", dir, "--workload", "register", "--faults", "partition", "--duration", "60s", "--seed", "1", "--out", temporaryDirectory()]);
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    while (!stdout.includes("faults planned")) {
      if (child.exitCode !== null) throw new Error(`the run exited early: ${stdout}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const processes = readClusterProcesses(dir)!;
    const pids = [...Object.values(processes.nats), ...Object.values(processes.replicas), processes.serve!];
    expect(pids.every(processAlive)).toBe(true);
    child.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(stdout).toMatch(/silk: stopped \d+ processes of the cluster/);
    expect(pids.filter(processAlive)).toEqual([]);
  }, 420_000);
});
