/**
 * Crash tests of a UNIQUE build's verdict across partitions (cluster/unique-builds.ts; STYLE.md, "Faults on purpose").
 * A child process (fixtures/unique-crash-child.ts) builds a runtime UNIQUE index over users spread on three
 * partitions and dies by SIGKILL at one phase of the verdict: once it is checked but sent to no partition, and once
 * only the first partition applied it. Reopened as a writer, the database must finish the build by itself, with the
 * verdict the data calls for, on every partition: active and enforced when the emails are distinct, blocked with
 * `unique_violation` when two partitions hold the same one.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import type { ValidationPhase } from "../../cluster/unique-builds.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import type { IndexStatus } from "../../protocol/indexes.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";
import { addN, writeOne } from "../helpers/tree.js";
import { UNIQUE_CRASH_PARTITIONS, UNIQUE_CRASH_SCHEMA, uniqueCrashEmails } from "./fixtures/unique-crash-child.js";

afterAll(removeTempDirs);

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const CHILD = fileURLToPath(new URL("./fixtures/unique-crash-child.ts", import.meta.url));

function runChild(directory: string, phase: ValidationPhase, emails: "clean" | "duplicate"): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, directory, phase, emails], { cwd: REPO, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (_code, signal) => resolve({ signal, stderr }));
  });
}

/** Waits until the merged status (the least advanced partition's) is neither constructing nor validating. */
async function settled(db: Database): Promise<IndexStatus> {
  for (let poll = 0; poll < 500; poll += 1) {
    const status = (await db.indexStatuses()).find((index) => index.name === "User.email");
    if (status !== undefined && status.state !== "constructing" && status.state !== "validating") return status;
    await new Promise((resume) => setTimeout(resume, 20));
  }
  throw new Error("User.email is still being built or validated");
}

/** The email index's state and reason as each partition's own store holds it (read with the database closed). */
async function statesOnDisk(directory: string): Promise<[string, string | undefined][]> {
  const stores = new PartitionMap(UNIQUE_CRASH_PARTITIONS).ranges.map((range) =>
    PartitionStore.open({ path: join(directory, "partitions", `p${range.index}`), readOnly: true, noSync: false, idFirst: range.first, idLast: range.last }),
  );
  try {
    return stores.map((store) => {
      const status = store.indexStatuses().find((index) => index.name === "User.email")!;
      return [status.state, status.reason];
    });
  } finally {
    await Promise.all(stores.map((store) => store.close()));
  }
}

describe("a crash while a UNIQUE build's verdict is sent", () => {
  for (const phase of ["checked", "verdict_first"] as const) {
    for (const emails of ["clean", "duplicate"] as const) {
      it(`at ${phase}, over ${emails} emails: the next writer finishes the build on every partition`, async () => {
        const directory = tempDir("silk-unique-crash-");
        const exit = await runChild(directory, phase, emails);
        expect(exit.signal, exit.stderr).toBe("SIGKILL");
        // What the crash left: no partition has the verdict yet, or only the first one has it.
        const verdict: [string, string | undefined] = emails === "clean" ? ["active", undefined] : ["blocked", "unique_violation"];
        const validating: [string, string | undefined] = ["validating", undefined];
        expect(await statesOnDisk(directory)).toEqual(phase === "checked" ? [validating, validating, validating] : [verdict, validating, validating]);
        const db = await Database.open({ storage: { disk: directory }, partitions: UNIQUE_CRASH_PARTITIONS, schema: UNIQUE_CRASH_SCHEMA });
        try {
          const status = await settled(db);
          if (emails === "clean") {
            expect(status.state).toBe("active");
            await expectCode(db.run(writeOne(addN("User", { handle: "late", email: uniqueCrashEmails(false)[3] }))), "unique_violation");
          } else {
            expect(status).toMatchObject({ state: "blocked", reason: "unique_violation" });
            await db.run(writeOne(addN("User", { handle: "late", email: "dup@x" })));
          }
        } finally {
          await db.close();
        }
        expect(await statesOnDisk(directory)).toEqual([verdict, verdict, verdict]);
      });
    }
  }
});
