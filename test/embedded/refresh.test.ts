/**
 * Database.refresh on a read-only handle beside a writer in another process: lmdb-js serves a run of synchronous reads
 * from one shared read transaction, so a commit the writer made in between is not seen until the handle renews its
 * reads; after `refresh()` the very next read sees it. (`silk serve --workers` refreshes each read worker this way
 * before a write's answer, bin/serve-workers.ts.) The writer is a child process run to completion synchronously, so
 * that no timer of this process (lmdb-js renews in one) runs between the reads.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { countRequest, nodesLabeled, REPO } from "../cli/helpers.js";

const directory = mkdtempSync(join(tmpdir(), "silk-refresh-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const WRITER = `
import { Database } from ${JSON.stringify(pathToFileURL(join(REPO, "runtime", "embedded.ts")).href)};
const db = await Database.open({ storage: { disk: process.argv[2] } });
await db.run({ request_type: "write", query: { write: { entries: [{ query: { name: "u", root: { add_n: { label: "User", properties: [] } } } }], returns: [] } } });
await db.close();
`;

it("makes the next read of a read-only handle see a commit another process made since its read transaction began", async () => {
  const data = join(directory, "data");
  await (await Database.open({ storage: { disk: data } })).close();
  const script = join(directory, "writer.mts");
  writeFileSync(script, WRITER);
  const loader = pathToFileURL(join(REPO, "node_modules", "tsx", "dist", "loader.mjs")).href;
  const reader = await Database.open({ storage: { disk: data }, mode: "readonly" });
  const count = await reader.prepare(countRequest({ users: nodesLabeled("User") }));
  try {
    // Prepared reads on one partition run synchronously inside run(): the three calls share this one turn.
    const before = count.run();
    execFileSync(process.execPath, ["--import", loader, script, data], { stdio: "pipe" });
    const stale = count.run();
    reader.refresh();
    const fresh = count.run();
    expect(await before).toEqual({ users: 0 });
    expect(await stale).toEqual({ users: 0 });
    expect(await fresh).toEqual({ users: 1 });
  } finally {
    await count.release();
    await reader.close();
  }
});
