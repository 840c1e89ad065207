/**
 * A reader that dies inside a read no longer grows the file without bound (issue 20, item 2: a SIGKILLed read-only
 * handle kept its LMDB reader slot, and 10 s of writes grew data.mdb from 1.1 MB to 666 MB). A child process holds a
 * snapshot of a partition; `silk status` shows it as a live reader behind the writer's commits. Once the child is
 * SIGKILLed, its slot keeps pinning pages until the writer's next reader check (at most READER_CHECK_INTERVAL_MS
 * later, on the writer's clock, a fake one here): the writes before it grow the file, those after it reuse the
 * freed pages. A second `silk status` lists no reader of the dead process.
 */
import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { READER_CHECK_INTERVAL_MS, type StorageStatus } from "../../node/store/partition-store.js";
import { runSilk } from "../cli/helpers.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import { addN, allNodes, entry, update, write, writeOne } from "../helpers/tree.js";

afterAll(removeTempDirs);

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const HOLDER = fileURLToPath(new URL("./fixtures/reader-holder.ts", import.meta.url));
const NODES = 100;
/** Each transaction rewrites every node with this many bytes: about 100 KB of pages per commit. */
const PAYLOAD_BYTES = 1_000;

async function status(directory: string): Promise<StorageStatus> {
  const result = await runSilk(["status", "--data", directory, "--json"]);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  const { partitions } = JSON.parse(result.stdout) as { partitions: StorageStatus[] };
  expect(partitions).toHaveLength(1);
  return partitions[0];
}

describe("reader slots of dead processes", () => {
  it("a reader SIGKILLed inside a read pins pages only until the writer's next reader check", async () => {
    const directory = join(tempDir("silk-readers-"), "db");
    let nowMs = 0;
    const db = await Database.open({ storage: { disk: directory } }, { clockMs: () => nowMs });
    const dataFile = join(directory, "partitions", "p0", "data.mdb");
    let round = 0;
    const rewriteAll = async (transactions: number): Promise<void> => {
      for (let i = 0; i < transactions; i += 1) {
        round += 1;
        await db.run(writeOne(update(allNodes(), { payload: String(round % 10).repeat(PAYLOAD_BYTES) })));
      }
    };
    const holder = spawn(process.execPath, ["--import", "tsx", HOLDER, join(directory, "partitions", "p0")], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => holder.once("exit", (_code, signal) => resolve(signal)));
    try {
      await db.run(write(Array.from({ length: NODES }, (_, i) => entry(`n${i}`, addN("Doc", { payload: "" }))), []));
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: holder.stdout }).once("line", (line) => (line === "ready" ? resolve() : reject(new Error(line))));
        holder.once("exit", (code) => reject(new Error(`the reader exited early with code ${code}`)));
      });
      await rewriteAll(1);
      const live = await status(directory);
      const slot = live.readers.find((reader) => reader.pid === holder.pid);
      expect(slot?.behindTxns).toBeGreaterThanOrEqual(1);
      expect(live.freePages).toBeGreaterThanOrEqual(0);
      expect(live.usedPages * live.pageSize).toBeLessThanOrEqual(live.fileBytes);
    } finally {
      holder.kill("SIGKILL");
    }
    expect(await exited).toBe("SIGKILL");
    try {
      // Before the next check the dead slot still pins every page these commits replace: the file grows.
      const beforeDeadWrites = statSync(dataFile).size;
      await rewriteAll(40);
      const afterDeadWrites = statSync(dataFile).size;
      expect(afterDeadWrites - beforeDeadWrites).toBeGreaterThan(2 << 20);
      // The check is due: the next write clears the slot, and from then on commits reuse freed pages.
      nowMs += READER_CHECK_INTERVAL_MS;
      await rewriteAll(160);
      expect(statSync(dataFile).size - afterDeadWrites).toBeLessThan(1 << 20);
    } finally {
      await db.close();
    }
    const after = await status(directory);
    expect(after.readers.map((reader) => reader.pid)).not.toContain(holder.pid);
  });
});
