/**
 * `silk backup` and `silk restore` (bin/backup.ts, runtime/bucket-backup.ts; docs/STORAGE.md, "Backup and restore")
 * against a real S3-compatible server (Ceph's RADOS Gateway, test/helpers/s3-server.ts), through the built CLI: a
 * disk database of one partition copied into a bucket while a server writes to it opens as a bucket database with
 * every transaction acknowledged before the copy, whole; one of several partitions is refused beside its writer
 * (writer_locked) and, stopped, backs up with every transaction whole; a restore makes a disk database of it again; an
 * occupied prefix or directory, a missing bucket and refused credentials are refused with their codes.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readManifest } from "../../runtime/bucket-manifest.js";
import { Database } from "../../runtime/embedded.js";
import { ObjectStore } from "../../runtime/object-store.js";
import { createBucket, startS3Server, type S3TestServer } from "../helpers/s3-server.js";
import { addN, entry, nodesOf, readOne, values, write, writeOne } from "../helpers/tree.js";
import { runSilk } from "../cli/helpers.js";
import { startServer } from "../gateway/serve-process.js";

const BUCKET = "silk-backups";
let server: S3TestServer;
const scratch = mkdtempSync(join(tmpdir(), "silk-s3-backup-"));

const environment = (): NodeJS.ProcessEnv => ({ AWS_ACCESS_KEY_ID: server.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey, AWS_REGION: server.region });

function silk(args: readonly string[], env: NodeJS.ProcessEnv = environment()): ReturnType<typeof runSilk> {
  return runSilk(args, { env: { ...process.env, ...env } });
}

function bucketStorage(prefix: string, cache: string): { s3: { bucket: string; prefix: string; endpoint: string; region: string; credentials: S3TestServer["credentials"]; cacheDir: string } } {
  return { s3: { bucket: BUCKET, prefix, endpoint: server.endpoint, region: server.region, credentials: server.credentials, cacheDir: join(scratch, cache) } };
}

/** Every Doc's `i` and `t` (its transaction), sorted by `i`. */
async function docs(db: Database): Promise<{ i: number; t: number }[]> {
  const answer = (await db.run(readOne(values(nodesOf("Doc"), "i", "t")))) as { r: { i: number; t: number }[] };
  return [...answer.r].sort((a, b) => a.i - b.i);
}

/** A transaction of two Docs, across both partitions (new records go round-robin over the partitions). */
function pair(t: number): unknown {
  return write([entry("a", addN("Doc", { i: 2 * t, t })), entry("b", addN("Doc", { i: 2 * t + 1, t }))], []);
}

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, BUCKET);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe("silk backup and silk restore", () => {
  /** Writes pair transactions through a running server until stopped; answers how many it wrote in all. */
  function writePairs(url: string, from: number): { stop(): Promise<number> } {
    let writing = true;
    let written = from;
    const loop = (async () => {
      for (; writing; written += 1) {
        const response = await fetch(`${url}/v2/query`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(pair(written)) });
        expect(response.status).toBe(200);
      }
    })();
    return {
      stop: async () => {
        writing = false;
        await loop;
        return written;
      },
    };
  }

  it("backs up a database of one partition while a server writes it: every transaction acknowledged before the copy is there, whole", async () => {
    const data = join(scratch, "live-one");
    const seeded = await Database.open({ storage: { disk: data } });
    for (let t = 0; t < 10; t += 1) await seeded.run(pair(t));
    await seeded.close();
    const served = await startServer(["serve", "--data", data, "--port", "0"], {});
    const writes = writePairs(served.url, 10);
    const backup = await silk(["backup", "--data", data, "--to", `s3://${BUCKET}/live-one`, "--s3-endpoint", server.endpoint]);
    expect(await writes.stop()).toBeGreaterThan(11);
    served.child.kill("SIGTERM");
    expect(await served.exited).toBe(0);
    expect(backup.stderr).not.toContain("silk backup:");
    expect(backup.code).toBe(0);
    const inBucket = await Database.open({ storage: bucketStorage("live-one", "live-one-cache") });
    const transactions = new Map<number, number>();
    for (const doc of await docs(inBucket)) transactions.set(doc.t, (transactions.get(doc.t) ?? 0) + 1);
    for (let t = 0; t < 10; t += 1) expect(transactions.get(t)).toBe(2);
    expect([...transactions.values()].every((count) => count === 2)).toBe(true);
    await inBucket.close();
  }, 120_000);

  it("refuses to copy a database of several partitions beside its writer (writer_locked); stopped, it backs up and restores whole", async () => {
    const data = join(scratch, "live");
    const seeded = await Database.open({ storage: { disk: data }, partitions: 2 });
    for (let t = 0; t < 10; t += 1) await seeded.run(pair(t));
    await seeded.close();
    // Beside a running writer a copy of one partition after another could catch a transaction across them half-way.
    const served = await startServer(["serve", "--data", data, "--port", "0"], {});
    const writes = writePairs(served.url, 10);
    const refused = await silk(["backup", "--data", data, "--to", `s3://${BUCKET}/live`, "--s3-endpoint", server.endpoint]);
    const written = await writes.stop();
    served.child.kill("SIGTERM");
    expect(await served.exited).toBe(0);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`silk backup: writer_locked: ${data} has 2 partitions and a writer runs on it`);

    const backup = await silk(["backup", "--data", data, "--to", `s3://${BUCKET}/live`, "--s3-endpoint", server.endpoint]);
    expect(backup.stderr).not.toContain("silk backup:");
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(new RegExp(`^silk backup: ${data} -> s3://${BUCKET}/live: 2 partitions, \\d+ files, \\d+ bytes in [0-9.]+ s \\(snapshot at segment 0\\)\\n$`));

    const store = new ObjectStore({ bucket: BUCKET, prefix: "live", endpoint: server.endpoint, region: server.region, credentials: server.credentials });
    expect((await readManifest(store))?.manifest).toMatchObject({ partitions: 2, epoch: 0, snapshot: 0, retainFrom: 1 });
    store.close();
    const inBucket = await Database.open({ storage: bucketStorage("live", "live-cache") });
    const backedUp = await docs(inBucket);
    // Every transaction the server acknowledged, each whole.
    const transactions = new Map<number, number>();
    for (const doc of backedUp) transactions.set(doc.t, (transactions.get(doc.t) ?? 0) + 1);
    expect(transactions.size).toBe(written);
    expect([...transactions.values()].every((count) => count === 2)).toBe(true);
    // It is a bucket database like any other: a writer takes the next epoch and ships.
    await inBucket.run(writeOne(addN("Doc", { i: 1_000_000, t: -1 })));
    expect(inBucket.status()).toMatchObject({ storage: "s3", mode: "writer", s3: { epoch: 1 } });
    await inBucket.close();

    const restoredDir = join(scratch, "restored");
    const restore = await silk(["restore", "--from", `s3://${BUCKET}/live`, "--data", restoredDir, "--s3-endpoint", server.endpoint]);
    expect(restore.stderr).not.toContain("silk restore:");
    expect(restore.code).toBe(0);
    expect(restore.stdout).toMatch(new RegExp(`^silk restore: s3://${BUCKET}/live -> ${restoredDir}: 2 partitions, up to segment \\d+, in [0-9.]+ s\\n$`));
    const restored = await Database.open({ storage: { disk: restoredDir } });
    expect(await docs(restored)).toEqual([...backedUp, { i: 1_000_000, t: -1 }]);
    await restored.run(writeOne(addN("Doc", { i: 1_000_001, t: -1 })));
    await restored.close();
  }, 120_000);

  it("refuses an occupied prefix or directory, a missing bucket and refused credentials with their codes", async () => {
    const data = join(scratch, "small");
    const db = await Database.open({ storage: { disk: data } });
    await db.run(writeOne(addN("Doc", { i: 0, t: 0 })));
    await db.close();
    const to = ["--to", `s3://${BUCKET}/small`, "--s3-endpoint", server.endpoint];
    expect((await silk(["backup", "--data", data, ...to])).code).toBe(0);
    const again = await silk(["backup", "--data", data, ...to]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`silk backup: target_not_empty: s3://${BUCKET}/small already holds a Silk database`);

    const occupied = join(scratch, "occupied");
    mkdirSync(occupied);
    writeFileSync(join(occupied, "notes.txt"), "mine\n");
    const into = await silk(["restore", "--from", `s3://${BUCKET}/small`, "--data", occupied, "--s3-endpoint", server.endpoint]);
    expect(into.code).toBe(1);
    expect(into.stderr).toContain(`silk restore: target_not_empty: ${occupied} is not an empty directory`);

    const noBucket = await silk(["backup", "--data", data, "--to", "s3://silk-no-such-bucket/x", "--s3-endpoint", server.endpoint]);
    expect(noBucket.code).toBe(1);
    expect(noBucket.stderr).toContain('silk backup: bucket_not_found: the bucket "silk-no-such-bucket" does not exist');
    const denied = await silk(["restore", "--from", `s3://${BUCKET}/small`, "--data", join(scratch, "denied"), "--s3-endpoint", server.endpoint], { ...environment(), AWS_SECRET_ACCESS_KEY: "not-the-secret" });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain("silk restore: storage_denied:");
    const nothing = await silk(["restore", "--from", `s3://${BUCKET}/nothing`, "--data", join(scratch, "nothing"), "--s3-endpoint", server.endpoint]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain("silk restore: invalid_option:");
    expect(nothing.stderr).toContain("holds no Silk database");
  }, 120_000);
});
