/**
 * The cluster supervisor's decisions (cluster/nats/supervisor.ts), tick by tick on a clock the test moves, with
 * processes that are only numbers: a dead process is started again once its backoff has passed (not before), each
 * restart is counted and recorded in processes.json, the wait doubles with each restart and starts over once a
 * process has run SUPERVISOR_STABLE_MS, a held or replaced process is left alone, a failed start is tried again
 * later, and the supervisor stops when processes.json is gone or names another supervisor. The real processes are
 * test/cluster-nats/supervision-cli.test.ts's.
 */
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { clusterPaths, readClusterProcesses, updateClusterProcesses, writeClusterProcesses } from "../../cluster/nats/manifest.js";
import { ClusterSupervisor, SUPERVISOR_BACKOFF, SUPERVISOR_STABLE_MS, withHold, type SupervisorEvent } from "../../cluster/nats/supervisor.js";
import { removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";

afterAll(removeTemporaryDirectories);

const SELF = 99;

/** A supervisor over processes that live while in `live`; `start` hands out pids from 1000 up. */
function harness(options: { failStarts?: number } = {}) {
  const dir = temporaryDirectory();
  writeClusterProcesses(dir, { nats: { n1: 1 }, replicas: { "p0-r0": 2, "p0-r1": 3 }, serve: 4, supervisor: SELF });
  const live = new Set([1, 2, 3, 4]);
  const events: SupervisorEvent[] = [];
  const started: string[] = [];
  let clock = 0;
  let nextPid = 1000;
  let failStarts = options.failStarts ?? 0;
  const supervisor = new ClusterSupervisor({
    dir,
    start: (name) => {
      if (failStarts > 0) {
        failStarts -= 1;
        throw new Error("spawn failed");
      }
      started.push(name);
      live.add(nextPid);
      return nextPid++;
    },
    alive: (pid) => live.has(pid),
    now: () => clock,
    log: (event) => events.push(event),
    random: () => 0, // equal jitter at its lowest: half of each ceiling
  });
  return {
    dir,
    live,
    events,
    started,
    supervisor,
    tick: () => supervisor.tick(SELF),
    advance: (ms: number) => (clock += ms),
    pidOf: (name: string) => readClusterProcesses(dir)!.replicas[name],
  };
}

const firstWaitMs = SUPERVISOR_BACKOFF.firstMs / 2;

describe("ClusterSupervisor", () => {
  it("restarts a dead process once its backoff has passed, records its new pid and counts the restart", () => {
    const h = harness();
    expect(h.tick()).toBe(true);
    expect(h.started).toEqual([]);
    h.live.delete(2);
    h.tick();
    expect(h.events).toEqual([{ event: "died", name: "p0-r0", pid: 2, restartInMs: firstWaitMs }]);
    h.advance(firstWaitMs - 1);
    h.tick();
    expect(h.started).toEqual([]);
    h.advance(1);
    h.tick();
    expect(h.started).toEqual(["p0-r0"]);
    expect(h.events.at(-1)).toEqual({ event: "restarted", name: "p0-r0", pid: 1000, previous: 2, restarts: 1 });
    const recorded = readClusterProcesses(h.dir)!;
    expect(recorded.replicas).toEqual({ "p0-r0": 1000, "p0-r1": 3 });
    expect(recorded.restarts).toEqual({ "p0-r0": 1 });
    // The NATS server and the coordinator are restarted the same way, under their own names.
    h.live.delete(1);
    h.live.delete(4);
    h.tick();
    h.advance(firstWaitMs);
    h.tick();
    expect(h.started.slice(1).sort()).toEqual(["n1", "serve"]);
    expect(readClusterProcesses(h.dir)!.restarts).toEqual({ "p0-r0": 1, n1: 1, serve: 1 });
  });

  it("doubles the wait with each restart of a process and starts over once it has run SUPERVISOR_STABLE_MS", () => {
    const h = harness();
    const waits: number[] = [];
    for (let restart = 0; restart < 3; restart++) {
      h.live.delete(h.pidOf("p0-r1"));
      h.tick();
      waits.push((h.events.at(-1) as { restartInMs: number }).restartInMs);
      h.advance(waits.at(-1)!);
      h.tick();
    }
    expect(waits).toEqual([firstWaitMs, firstWaitMs * 2, firstWaitMs * 4]);
    expect(readClusterProcesses(h.dir)!.restarts).toEqual({ "p0-r1": 3 });
    h.advance(SUPERVISOR_STABLE_MS);
    h.tick(); // alive for that long: the next death waits the first wait again
    h.live.delete(h.pidOf("p0-r1"));
    h.tick();
    expect(h.events.at(-1)).toMatchObject({ event: "died", restartInMs: firstWaitMs });
  });

  it("leaves a held process dead and does not start a process another command started meanwhile", () => {
    const h = harness();
    updateClusterProcesses(h.dir, (processes) => withHold(processes, "p0-r0", true));
    h.live.delete(2);
    h.tick();
    h.advance(60_000);
    h.tick();
    expect(h.started).toEqual([]);
    expect(h.events).toEqual([]);
    // Released: watched again, restarted after the first wait.
    updateClusterProcesses(h.dir, (processes) => withHold(processes, "p0-r0", false));
    expect(readClusterProcesses(h.dir)!.held).toBeUndefined();
    h.tick();
    h.advance(firstWaitMs);
    h.tick();
    expect(h.started).toEqual(["p0-r0"]);

    // p0-r1 dies; before its wait is over another command starts it (pid 555): the supervisor watches that one.
    h.live.delete(3);
    h.tick();
    updateClusterProcesses(h.dir, (processes) => ({ ...processes, replicas: { ...processes.replicas, "p0-r1": 555 } }));
    h.live.add(555);
    h.advance(firstWaitMs);
    h.tick();
    expect(h.started).toEqual(["p0-r0"]);
    expect(h.pidOf("p0-r1")).toBe(555);
  });

  it("tries a start that failed again after a longer wait", () => {
    const h = harness({ failStarts: 1 });
    h.live.delete(2);
    h.tick();
    h.advance(firstWaitMs);
    h.tick();
    expect(h.events.at(-1)).toEqual({ event: "start_failed", name: "p0-r0", message: "spawn failed" });
    expect(h.pidOf("p0-r0")).toBe(2);
    h.advance(firstWaitMs * 2 - 1);
    h.tick();
    expect(h.started).toEqual([]);
    h.advance(1);
    h.tick();
    expect(h.started).toEqual(["p0-r0"]);
  });

  it("stops when processes.json is gone or names another supervisor", () => {
    const h = harness();
    updateClusterProcesses(h.dir, (processes) => ({ ...processes, supervisor: SELF + 1 }));
    expect(h.tick()).toBe(false);
    rmSync(clusterPaths.processes(h.dir));
    expect(h.tick()).toBe(false);
  });
});
