/**
 * Changes to a database's keys made at the same moment, with real `silk keys` processes and a real `silk gateway`:
 * every change holds keys.lock for its read-modify-write, so parallel creates all keep their key and a revocation
 * racing a creation is never undone (before the lock, 8 parallel creates stored 5 keys, and a revoked key kept
 * working 6 times in 20). keys.json is mode 0600. A keys.json that is not a valid key list fails closed with
 * 500 internal saying what is wrong, and the logged failure never carries a key sent in the query string.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withFileLock } from "../../platform/durable-files.js";
import { createKey, KEYS_FILE_MODE, readKeys, revokeKey } from "../../gateway/hosted/key-store.js";
import { keysLockPath, keysPath } from "../../gateway/hosted/tenant-files.js";
import { REPO, removeTemporaryDirectories, runSilk, temporaryDirectory } from "../cli/helpers.js";
import { expectErrorBody, hostedDatabase, startGateway, type HostedDatabase } from "./hosted-process.js";
import type { StartedServer } from "./serve-process.js";

const PARALLEL_CREATES = 8;
const RACE_ROUNDS = 3;
/** How long the stand-in for another command holds the lock, in milliseconds. */
const LOCK_HOLD_MS = 1_000;
/** Eight CLI processes on a loaded two-core machine take tens of seconds to start. */
const PROCESS_TEST_TIMEOUT_MS = 180_000;

/**
 * Another process in the middle of a change, standing in for a `silk keys` command: plain node taking the same
 * flock through fs-ext, holding it `holdMs` after it says so, then exiting (which releases it).
 */
async function holdLock(lockPath: string, holdMs: number): Promise<{ lockedAtMs: number; exited: Promise<number | null> }> {
  const script = `
    const fd = require("node:fs").openSync(process.argv[1], "a");
    require(process.argv[2]).flockSync(fd, "exnb");
    process.stdout.write("locked " + Date.now() + "\\n");
    setTimeout(() => process.exit(0), Number(process.argv[3]));`;
  const child = spawn(process.execPath, ["-e", script, lockPath, join(REPO, "node_modules", "fs-ext"), String(holdMs)]);
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  let output = "";
  const lockedAtMs = await new Promise<number>((done, fail) => {
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      const match = /^locked (\d+)\n/.exec(output);
      if (match !== null) done(Number(match[1]));
    });
    void exited.then((code) => fail(new Error(`the lock holder exited with ${code} before locking`)));
  });
  return { lockedAtMs, exited };
}

afterAll(removeTemporaryDirectories);

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

describe.concurrent("silk keys commands run at once", () => {
  it("keep every key: parallel creates are all stored, in a file only its owner may read", async ({ expect }) => {
    const data = join(temporaryDirectory(), "data");
    const runs = await Promise.all(Array.from({ length: PARALLEL_CREATES }, (_, i) => runSilk(["keys", "create", "--data", data, "--name", `worker-${i}`])));
    for (const run of runs) expect({ code: run.code, stderr: run.code === 0 ? "" : run.stderr }).toEqual({ code: 0, stderr: "" });
    const printed = runs.map((run) => run.stdout.trim());
    expect(new Set(printed).size).toBe(PARALLEL_CREATES);
    const stored = readKeys(data);
    expect(stored.map((record) => record.sha256).sort()).toEqual(printed.map(sha256).sort());
    expect(statSync(keysPath(data)).mode & 0o777).toBe(KEYS_FILE_MODE);
    expect(readdirSync(join(data, "gateway")).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  }, PROCESS_TEST_TIMEOUT_MS);

  it("wait for the lock another process holds, and give up past the wait with nothing changed", async ({ expect }) => {
    const data = join(temporaryDirectory(), "data");
    const { record } = createKey(data, "before", Date.now());
    const before = readFileSync(keysPath(data), "utf8");
    const holder = await holdLock(keysLockPath(data), LOCK_HOLD_MS);
    // A short wait gives up with the lock's path and what to do, and changes nothing.
    expect(() => withFileLock(keysLockPath(data), 1, () => "changed")).toThrow(
      expect.objectContaining({ code: "lock_timeout", message: expect.stringContaining(`another process has held ${keysLockPath(data)} for over 1 ms; wait for it to finish and retry`) }),
    );
    expect(readFileSync(keysPath(data), "utf8")).toBe(before);
    // A command waits until the holder lets go (it exits LOCK_HOLD_MS after taking the lock), then makes its change.
    const revoked = revokeKey(data, record.id, Date.now());
    expect(Date.now()).toBeGreaterThanOrEqual(holder.lockedAtMs + LOCK_HOLD_MS);
    expect(await holder.exited).toBe(0);
    expect(revoked.revoked).not.toBeNull();
    expect(readKeys(data)[0].revoked).toBe(revoked.revoked);
  });
});

describe("a running gateway while keys change", () => {
  let database: HostedDatabase;
  let gateway: StartedServer;

  beforeAll(async () => {
    database = hostedDatabase();
    gateway = await startGateway(database);
  });

  afterAll(async () => {
    gateway?.child.kill("SIGTERM");
    await gateway?.exited;
  });

  const introspect = (key: string, query = ""): Promise<Response> => fetch(`${gateway.url}/introspect${query}`, { headers: { authorization: `Bearer ${key}` } });

  it("refuses a key revoked while another key is being created, every time", async () => {
    for (let round = 0; round < RACE_ROUNDS; round += 1) {
      const { key, record } = createKey(database.data, `round-${round}`, Date.now());
      expect((await introspect(key)).status).toBe(200);
      const [revoked, created] = await Promise.all([
        runSilk(["keys", "revoke", record.id, "--data", database.data]),
        runSilk(["keys", "create", "--data", database.data, "--name", `new-${round}`]),
      ]);
      expect([revoked.code, created.code]).toEqual([0, 0]);
      expect(revoked.stdout).toMatch(new RegExp(`^revoked ${record.id} at `));
      await expectErrorBody(await introspect(key), 403, "forbidden");
      expect((await introspect(created.stdout.trim())).status).toBe(200);
      expect(readKeys(database.data).find((stored) => stored.id === record.id)?.revoked).not.toBeNull();
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it("fails closed on a corrupt keys.json, says what is wrong, and logs no key from the query string", async () => {
    const good = readFileSync(keysPath(database.data), "utf8");
    try {
      writeFileSync(keysPath(database.data), good.slice(0, good.length / 2));
      const truncated = await introspect(database.key, `?api_key=${database.key}`);
      expect(await expectErrorBody(truncated, 500, "internal")).toMatch(
        /^the database's API key file \(gateway\/keys\.json in its directory\) is corrupt: it is not JSON \(.+\); every request is refused until an operator restores it/,
      );
      writeFileSync(keysPath(database.data), JSON.stringify({ keys: [{ id: "not hex" }] }));
      expect(await expectErrorBody(await introspect(database.key), 500, "internal")).toMatch(/is corrupt: key 0 has no id of 12 hex digits;/);
      writeFileSync(keysPath(database.data), "[]");
      expect(await expectErrorBody(await introspect(database.key), 500, "internal")).toMatch(/is corrupt: it does not hold \{"keys": \[\.\.\.\]\};/);
    } finally {
      writeFileSync(keysPath(database.data), good);
    }
    expect((await introspect(database.key)).status).toBe(200);
    // The failure is the service's, so it is logged, with the URL's query values replaced.
    const logged = gateway.stderr();
    expect(logged).toContain('"url":"/introspect?api_key=[redacted]"');
    expect(logged).not.toContain(database.key.slice(18));
  });
});
