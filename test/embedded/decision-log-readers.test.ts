/**
 * The coordinator's decision log (cluster/decision-log.ts) frees the reader slots of processes that died inside a
 * read, before a write, at most once per READER_CHECK_INTERVAL_MS on its clock (a fake one here), as the partitions'
 * writers do (issue 20: a dead reader pins pages, and the file grows with every commit after it).
 */
import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { open } from "lmdb";
import { afterAll, describe, expect, it } from "vitest";
import { LmdbDecisionLog } from "../../cluster/decision-log.js";
import { READER_CHECK_INTERVAL_MS } from "../../node/store/partition-store.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";

afterAll(removeTempDirs);

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const HOLDER = fileURLToPath(new URL("./fixtures/lmdb-reader-holder.ts", import.meta.url));

describe("decision log reader slots", () => {
  it("a reader SIGKILLed inside a read keeps its slot only until the log's next reader check", async () => {
    const path = join(tempDir("silk-decision-readers-"), "coordinator");
    let nowMs = 0;
    const log = new LmdbDecisionLog(path, { readOnly: false, noSync: false, clockMs: () => nowMs });
    // The lock file's reader slots, listed through this process's handle of the environment (lmdb-js keeps one per
    // path; another process's open would run its own reader check and clear the dead slot itself).
    const slots = (): string => open({ path, maxDbs: 4 }).readerList();
    const dataFile = join(path, "data.mdb");
    let written = 0;
    /** Rewrites the same keys with bulky participant lists: each commit replaces a few pages. */
    const decideMany = async (count: number): Promise<void> => {
      for (let i = 0; i < count; i += 1) {
        written += 1;
        await log.decide(`d${written % 50}-${written}`, "commit", Array.from({ length: 200 }, (_, j) => j));
        await log.forget(`d${written % 50}-${written}`);
      }
    };
    try {
      await log.decide("t0", "commit", [0, 1]);
      const holder = spawn(process.execPath, ["--import", "tsx", HOLDER, path], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => holder.once("exit", (_code, signal) => resolve(signal)));
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: holder.stdout! }).once("line", (line) => (line === "ready" ? resolve() : reject(new Error(line))));
        holder.once("exit", (code) => reject(new Error(`the reader exited early with code ${code}`)));
      });
      const pid = new RegExp(`^\\s*${holder.pid}\\b`, "m");
      expect(slots()).toMatch(pid);
      // Decisions written while the reader lives keep the pages its snapshot sees.
      await decideMany(200);
      holder.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
      // Before the check is due, the dead slot still pins every page these commits replace: the file grows.
      const beforeDeadWrites = statSync(dataFile).size;
      await decideMany(400);
      const afterDeadWrites = statSync(dataFile).size;
      expect(afterDeadWrites - beforeDeadWrites).toBeGreaterThan(1 << 20);
      // The check is due: the next decision clears the slot, and from then on commits reuse freed pages.
      nowMs += READER_CHECK_INTERVAL_MS;
      await decideMany(400);
      expect(statSync(dataFile).size - afterDeadWrites).toBeLessThan(256 << 10);
      await log.decide("t2", "abort", [0, 1]);
      expect(await log.decision("t2")).toBe("abort");
    } finally {
      await log.close();
    }
  });
});
