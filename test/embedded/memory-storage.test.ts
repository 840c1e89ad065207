/**
 * A memory database leaves nothing behind when its process dies before `close()` (issue 20, item 6: one SIGKILLed
 * process left 73 MB under /dev/shm). A child process opens one, writes about 2 MB and is SIGKILLed; while it lives,
 * the LMDB files it holds are already deleted from the file system (alive only through its descriptors and maps),
 * and after its death their directory does not exist.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const HOLDER = fileURLToPath(new URL("./fixtures/memory-holder.ts", import.meta.url));
const DELETED = " (deleted)";

interface Held {
  readonly files: readonly string[];
  readonly count: number;
}

describe("memory storage", () => {
  it("a process SIGKILLed before close() leaves no files and no directory behind", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", HOLDER], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    let held: Held;
    try {
      held = await new Promise<Held>((resolve, reject) => {
        createInterface({ input: child.stdout }).once("line", (line) => resolve(JSON.parse(line) as Held));
        child.once("exit", (code) => reject(new Error(`the holder exited early with code ${code}`)));
      });
    } finally {
      child.kill("SIGKILL");
    }
    expect(await exited).toBe("SIGKILL");
    expect(held.count).toBe(2_000);
    // Two partitions and the decision log, each a data.mdb (LMDB opens it more than once) and a lock.mdb: every one
    // deleted while still in use.
    expect(new Set(held.files.filter((file) => file.endsWith(`data.mdb${DELETED}`))).size).toBe(3);
    expect(held.files.filter((file) => !file.endsWith(DELETED))).toEqual([]);
    const directories = new Set(held.files.map((file) => file.slice(0, file.indexOf("/", file.indexOf("/silk-") + 1))));
    expect(directories.size).toBe(1);
    for (const directory of directories) expect(existsSync(directory)).toBe(false);
  });
});
