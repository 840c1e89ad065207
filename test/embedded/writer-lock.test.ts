/**
 * One writer per database directory, also after a crash (issue 20, item 1). A crash leaves `writer.lock` behind with
 * a dead PID in it (or empty, when the process died between creating and writing it). Three processes then call
 * `open()` on that directory in the same millisecond, 100 times over: each time exactly one becomes the writer and
 * the others are refused with `writer_locked`. Before the lock was an OS file lock, the takeover of a stale lock
 * (read the PID, see it dead, delete, create) let two racers both delete and create it, and both wrote as writers.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";

afterAll(removeTempDirs);

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const RACER = fileURLToPath(new URL("./fixtures/racing-writer.ts", import.meta.url));
const RACERS = 3;
const TRIALS = 100;
/** How far ahead of now each race starts: long enough for every racer to have read its command. */
const RACE_LEAD_MS = 40;

/** A racer process and the lines it printed, read one at a time. */
class Racer {
  private readonly lines: string[] = [];
  private readonly waiting: ((line: string) => void)[] = [];
  private readonly child: ChildProcessWithoutNullStreams;

  constructor() {
    this.child = spawn(process.execPath, ["--import", "tsx", RACER], { cwd: REPO, stdio: "pipe" });
    this.child.stderr.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      const waiter = this.waiting.shift();
      if (waiter === undefined) this.lines.push(line);
      else waiter(line);
    });
  }

  send(command: string): Promise<string> {
    this.child.stdin.write(`${command}\n`);
    const line = this.lines.shift();
    return line !== undefined ? Promise.resolve(line) : new Promise((resolve) => this.waiting.push(resolve));
  }

  stop(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.stdin.end();
    return exited;
  }
}

/** The PID of a process that has exited: what a crashed writer leaves in its lock file. */
function deadPid(): number {
  const finished = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(finished.stdout);
}

describe("writer lock", () => {
  it(`${RACERS} processes racing to open a directory with a stale lock: exactly one writer, ${TRIALS} times`, async () => {
    const directory = join(tempDir("silk-race-"), "db");
    await (await Database.open({ storage: { disk: directory } })).close();
    const stalePid = deadPid();
    const racers = Array.from({ length: RACERS }, () => new Racer());
    const writersPerTrial: number[] = [];
    try {
      for (let trial = 0; trial < TRIALS; trial += 1) {
        // A crashed writer's lock: its PID, or nothing when it died before writing it.
        writeFileSync(join(directory, "writer.lock"), trial % 2 === 0 ? String(stalePid) : "");
        const atMs = Date.now() + RACE_LEAD_MS;
        const outcomes = await Promise.all(racers.map((racer) => racer.send(`open ${directory} ${atMs}`)));
        for (const outcome of outcomes) expect(["writer", "locked"]).toContain(outcome);
        writersPerTrial.push(outcomes.filter((outcome) => outcome === "writer").length);
        await Promise.all(racers.map((racer) => racer.send("close")));
      }
    } finally {
      await Promise.all(racers.map((racer) => racer.stop()));
    }
    expect(writersPerTrial).toEqual(Array.from({ length: TRIALS }, () => 1));
  });

  it("a second writer in the same process is refused, and may open once the first closed", async () => {
    const directory = join(tempDir("silk-lock-"), "db");
    const first = await Database.open({ storage: { disk: directory } });
    try {
      await expectCode(Database.open({ storage: { disk: directory } }), "writer_locked");
    } finally {
      await first.close();
    }
    await (await Database.open({ storage: { disk: directory } })).close();
  });
});
