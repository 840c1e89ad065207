/**
 * Crash test of group commit (node/actor/write-group.ts; STYLE.md, "Faults on purpose"): a child process
 * (fixtures/group-commit-child.ts) keeps 16 writers in flight, so its writes commit in groups, and prints each write
 * once it is answered; the parent SIGKILLs it while groups are being executed and committed. Reopened, the database
 * holds every answered write, each once, its UNIQUE index agrees with its records, and it takes writes again.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";
import { GROUP_CRASH_SCHEMA } from "./fixtures/group-commit-child.js";

afterAll(removeTempDirs);

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const CHILD = fileURLToPath(new URL("./fixtures/group-commit-child.ts", import.meta.url));

/** Runs the child (numbers from `first`) until it has answered `answers` writes, then SIGKILLs it; the numbers it answered. */
function runAndKill(directory: string, first: number, answers: number): Promise<{ answered: number[]; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, directory, String(first)], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.split("\n").length > answers) child.kill("SIGKILL");
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (_code, signal) => {
      // A line cut short by the kill was not wholly printed: only whole lines count as answered.
      const lines = stdout.split("\n").slice(0, -1);
      resolve({ answered: lines.map(Number), signal, stderr });
    });
  });
}

describe("group commit under SIGKILL", () => {
  it("keeps every answered write of a writer killed while groups commit, each once", async () => {
    const directory = join(tempDir("silk-group-crash-"), "db");
    for (const [round, answers] of [50, 400].entries()) {
      const { answered, signal, stderr } = await runAndKill(directory, round * 1_000_000, answers);
      expect(signal, stderr).toBe("SIGKILL");
      expect(answered.length).toBeGreaterThanOrEqual(answers);
      const db = await Database.open({ storage: { disk: directory }, schema: GROUP_CRASH_SCHEMA });
      try {
        const stored = (await db.query("Tickets")) as { t: { seq: number }[] };
        const seqs = stored.t.map((ticket) => ticket.seq);
        // Each number once (the UNIQUE index held), and every answered one among them.
        expect(new Set(seqs).size).toBe(seqs.length);
        const held = new Set(seqs);
        expect(answered.filter((seq) => !held.has(seq))).toEqual([]);
        // The index agrees with the records: a stored number is refused again, and a new one is taken.
        await expectCode(db.query("AddTicket", { seq: answered[0], note: "again" }), "unique_violation");
        await db.query("AddTicket", { seq: -1 - round, note: "after" });
      } finally {
        await db.close();
      }
    }
  });
});
