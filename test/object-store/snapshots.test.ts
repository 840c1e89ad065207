/**
 * Snapshots taken while a bucket writer serves, and retention (docs/STORAGE.md, "Snapshots, compaction, retention"),
 * against a real S3-compatible server (Ceph's RADOS Gateway, test/helpers/s3-server.ts): after many writes the bucket
 * holds a bounded number of objects; a fresh follower, and a fresh writer, restored from the compacted bucket answer
 * the same; a snapshot carries the persisted vector graphs; a follower that fell further behind than the retention
 * restores at its reopen, and a running one restores itself beside its cache and follows on (one without a way to
 * restore says so).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readManifest, type BucketManifest } from "../../runtime/bucket-manifest.js";
import { BucketFollower } from "../../runtime/bucket-follower.js";
import { Database, type DatabaseStatus, type OpenOptions } from "../../runtime/embedded.js";
import { ObjectStore } from "../../runtime/object-store.js";
import type { S3Storage } from "../../runtime/bucket-storage.js";
import { createBucket, startS3Server, type S3TestServer } from "../helpers/s3-server.js";
import { startFaultProxy } from "../helpers/s3-fault-proxy.js";
import { addN, entry, nodesOf, readOne, values, write, writeOne } from "../helpers/tree.js";
import { seededRandom } from "../../protocol/random.js";

const BUCKET = "silk-snapshots";
let server: S3TestServer;
const scratch = mkdtempSync(join(tmpdir(), "silk-s3-snapshots-"));
let caches = 0;
const handles: Database[] = [];

function s3(prefix: string, extra: Partial<S3Storage> = {}): S3Storage {
  caches += 1;
  return { bucket: BUCKET, prefix, endpoint: server.endpoint, region: server.region, credentials: server.credentials, cacheDir: join(scratch, `cache-${caches}`), ...extra };
}

function objectStore(prefix: string): ObjectStore {
  return new ObjectStore({ bucket: BUCKET, prefix, endpoint: server.endpoint, region: server.region, credentials: server.credentials });
}

async function open(options: OpenOptions): Promise<Database> {
  const db = await Database.open(options);
  handles.push(db);
  return db;
}

async function docs(db: Database): Promise<number[]> {
  const answer = (await db.run(readOne(values(nodesOf("Doc"), "i")))) as { r: { i: number }[] };
  return answer.r.map((row) => row.i).sort((a, b) => a - b);
}

function writerStatus(db: Database): Extract<DatabaseStatus, { mode: "writer"; storage: "s3" }>["s3"] {
  const status = db.status();
  if (status.storage !== "s3" || status.mode !== "writer") throw new Error("not a bucket writer");
  return status.s3;
}

function followerStatus(db: Database): Extract<DatabaseStatus, { mode: "readonly"; storage: "s3" }>["s3"] {
  const status = db.status();
  if (status.storage !== "s3" || status.mode !== "readonly") throw new Error("not a bucket follower");
  return status.s3;
}

function followerPosition(db: Database): number {
  return followerStatus(db).position;
}

async function until(what: string, deadlineMs: number, check: () => boolean | Promise<boolean>): Promise<void> {
  const end = performance.now() + deadlineMs;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`${what} within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function readdirSafe(folder: string): string[] {
  return existsSync(folder) ? readdirSync(folder) : [];
}

/** Every object under the prefix, by folder. */
async function objects(prefix: string): Promise<{ manifest: BucketManifest; segments: number[]; snapshotFolders: string[]; snapshotObjects: number }> {
  const store = objectStore(prefix);
  try {
    const manifest = (await readManifest(store))!.manifest;
    const segments = (await store.list("segments")).map((name) => Number(/(\d{20})\.seg$/.exec(name)![1]));
    const snapshotNames = await store.list("snapshots");
    const snapshotFolders = [...new Set(snapshotNames.map((name) => name.split("/").slice(0, 2).join("/")))];
    return { manifest, segments, snapshotFolders, snapshotObjects: snapshotNames.length };
  } finally {
    store.close();
  }
}

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, BUCKET);
}, 120_000);

afterAll(async () => {
  for (const db of handles.splice(0)) await db.close().catch(() => undefined);
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe("snapshots while a writer serves, and retention", () => {
  it("a writer snapshots as it serves and retention bounds the bucket; followers and writers restored from it answer the same", async () => {
    const every = 5;
    const writer = await open({ storage: { s3: s3("compact", { snapshotEverySegments: every, retentionMs: 0 }) }, partitions: 2 });
    // One at a time: each write is a segment of its own.
    for (let i = 0; i < 30; i += 1) await writer.run(writeOne(addN("Doc", { i })));
    await until("a snapshot taken while the writer serves", 20_000, () => writerStatus(writer).snapshot > 0);
    // The writer takes writes while it snapshots, and after.
    for (let i = 30; i < 61; i += 1) await writer.run(writeOne(addN("Doc", { i })));
    await until("the last snapshot stored", 20_000, () => !writerStatus(writer).snapshotting);
    const all = Array.from({ length: 61 }, (_, i) => i);
    const serving = await objects("compact");
    expect(serving.manifest.snapshot).toBe(writerStatus(writer).snapshot);
    // Retention 0: nothing below the newest snapshot is left, and only that snapshot.
    expect(serving.manifest.retainFrom).toBe(serving.manifest.snapshot + 1);
    expect(Math.min(...serving.segments)).toBeGreaterThanOrEqual(serving.manifest.retainFrom);
    expect(serving.snapshotFolders).toEqual([serving.manifest.snapshotFolder]);
    expect(serving.manifest.snapshots?.map((entry) => entry.folder)).toEqual([serving.manifest.snapshotFolder]);
    // A follower restored from the compacted bucket while the writer serves.
    const follower = await open({ storage: { s3: s3("compact", { followIntervalMs: 50 }) }, mode: "readonly" });
    expect(await docs(follower)).toEqual(all);
    await follower.close();
    await writer.close();

    // After close: fewer than `every` segments past the snapshot (the close snapshots and applies retention too).
    const closed = await objects("compact");
    expect(closed.segments.length).toBeLessThan(every);
    expect(closed.snapshotFolders).toHaveLength(1);
    const files = closed.snapshotObjects;
    expect(files).toBeLessThanOrEqual(8); // silk.json, the decision log, two partitions, files.json (no vector graphs here)
    const fresh = await open({ storage: { s3: s3("compact") }, mode: "readonly" });
    expect(await docs(fresh)).toEqual(all);
    await fresh.close();
    const next = await open({ storage: { s3: s3("compact", { snapshotEverySegments: every, retentionMs: 0 }) }, partitions: 2 });
    expect(await docs(next)).toEqual(all);
    await next.run(writeOne(addN("Doc", { i: 61 })));
    await next.close();
  });

  it("a snapshot taken while serving holds the persisted vector graphs, and a follower restored from it answers searches the same", async () => {
    const schema = `
N::Doc {
    VECTOR INDEX(dimension: 4, metric: cosine) embedding: [F32],
    title: String,
}
QUERY AddDocs(docs: [{title: String, embedding: [F32]}]) =>
    FOR {title, embedding} IN docs {
        AddN<Doc>({title: title, embedding: embedding})
    }
    RETURN "ok"
QUERY Near(v: [F32], k: I64) =>
    docs <- SearchV<Doc>(v, k)
    RETURN docs::{title}
`;
    const random = seededRandom(17);
    const vector = (): number[] => Array.from({ length: 4 }, () => random() * 2 - 1);
    const storage = s3("graphs", { snapshotEverySegments: 3 });
    const writer = await Database.open({ storage: { s3: storage }, schema });
    handles.push(writer);
    // Over a thousand changes: the writer persists the graph file at once (node/indexes/vector-index.ts).
    await writer.query("AddDocs", { docs: Array.from({ length: 1_200 }, (_, i) => ({ title: `d${i}`, embedding: vector() })) });
    await until("the graph file persisted", 20_000, () => readdirSafe(join(storage.cacheDir!, "partitions", "p0", "vector-graphs")).some((name) => name.endsWith(".graph")));
    for (let i = 0; i < 3; i += 1) await writer.query("AddDocs", { docs: [{ title: `e${i}`, embedding: vector() }] });
    await until("a snapshot taken while the writer serves", 20_000, () => writerStatus(writer).snapshot > 0 && !writerStatus(writer).snapshotting);
    const store = objectStore("graphs");
    const manifest = (await readManifest(store))!.manifest;
    const files = JSON.parse(new TextDecoder().decode((await store.get(`${manifest.snapshotFolder!}/files.json`))!.body)) as string[];
    store.close();
    expect(files.filter((file) => /^partitions\/p0\/vector-graphs\/.+\.graph$/.test(file))).toHaveLength(1);
    const follower = await Database.open({ storage: { s3: s3("graphs") }, mode: "readonly", schema });
    handles.push(follower);
    for (let probe = 0; probe < 5; probe += 1) {
      const v = vector();
      expect(await follower.query("Near", { v, k: 10 })).toEqual(await writer.query("Near", { v, k: 10 }));
    }
    await follower.close();
    await writer.close();
  }, 60_000);

  it("a retention period keeps the segments a lagging follower needs until a newer snapshot is that old", async () => {
    let clock = Date.parse("2026-01-01T00:00:00Z");
    const now = (): Date => new Date(clock);
    const hour = 3_600_000;
    const writer = await Database.open({ storage: { s3: s3("retain", { snapshotEverySegments: 3, retentionMs: hour }) } }, { now });
    handles.push(writer);
    for (let i = 0; i < 10; i += 1) await writer.run(writeOne(addN("Doc", { i })));
    await until("a snapshot", 20_000, () => writerStatus(writer).snapshot > 0 && !writerStatus(writer).snapshotting);
    const young = await objects("retain");
    // Snapshots younger than the retention period: every segment is still there.
    expect(young.manifest.retainFrom).toBe(1);
    expect(Math.min(...young.segments)).toBe(1);
    clock += 2 * hour;
    for (let i = 10; i < 20; i += 1) await writer.run(writeOne(addN("Doc", { i })));
    await writer.close();
    const old = await objects("retain");
    // The snapshots taken two hours ago are ripe: the segments up to the newest of them are gone, the newer ones kept.
    expect(old.manifest.retainFrom).toBeGreaterThan(1);
    expect(Math.min(...old.segments)).toBe(old.manifest.retainFrom);
    expect(old.manifest.snapshots!.length).toBeGreaterThan(1);
    expect(old.snapshotFolders.sort()).toEqual(old.manifest.snapshots!.map((entry) => entry.folder).sort());
  });

  it("a follower further behind than the retention restores the newest snapshot at its reopen", async () => {
    const writer = await open({ storage: { s3: s3("lagging", { snapshotEverySegments: 3, retentionMs: 0 }) } });
    for (let i = 0; i < 3; i += 1) await writer.run(writeOne(addN("Doc", { i })));
    const cacheDir = join(scratch, "lagging-follower");
    const follower = await open({ storage: { s3: s3("lagging", { cacheDir, followIntervalMs: 50 }) }, mode: "readonly" });
    expect(await docs(follower)).toEqual([0, 1, 2]);
    const left = followerPosition(follower);
    await follower.close();
    for (let i = 3; i < 30; i += 1) await writer.run(writeOne(addN("Doc", { i })));
    await until("retention past the follower", 20_000, async () => (await objects("lagging")).manifest.retainFrom > left + 1 && !writerStatus(writer).snapshotting);
    const back = await open({ storage: { s3: s3("lagging", { cacheDir, followIntervalMs: 50 }) }, mode: "readonly" });
    expect(await docs(back)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(followerPosition(back)).toBe(writerStatus(writer).position);
    await back.close();
    await writer.close();
  });

  it("a running follower behind the retention restores itself beside its cache, swaps under the open handle and follows on", async () => {
    const proxy = await startFaultProxy(server.endpoint);
    try {
      const writer = await open({ storage: { s3: s3("restoring", { snapshotEverySegments: 3, retentionMs: 0 }) }, partitions: 2 });
      // Two records per transaction: a reader must never see one without the other.
      const pair = (t: number) => write([entry("a", addN("Doc", { i: 2 * t, t })), entry("b", addN("Doc", { i: 2 * t + 1, t }))], []);
      const upTo = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
      for (let t = 0; t < 3; t += 1) await writer.run(pair(t));
      const cacheDir = join(scratch, "restoring-follower");
      // The follower alone goes through the proxy, so its polls can be stopped while the writer goes on.
      const follower = await open({ storage: { s3: { ...s3("restoring", { cacheDir, followIntervalMs: 50 }), endpoint: proxy.endpoint } }, mode: "readonly" });
      const prepared = await follower.prepare(readOne(values(nodesOf("Doc"), "i")));
      expect(await docs(follower)).toEqual(upTo(6));
      const left = followerPosition(follower);

      proxy.rules.push({ action: "503" });
      for (let t = 3; t < 21; t += 1) await writer.run(pair(t));
      await until("retention past the follower", 20_000, async () => !writerStatus(writer).snapshotting && (await objects("restoring")).manifest.retainFrom > left + 1);
      expect(followerPosition(follower)).toBe(left);

      // Reads go on through the restore and the swap: each sees whole transactions, and never fewer than the one before.
      const counts: number[] = [];
      let reading = true;
      const reader = (async () => {
        while (reading) {
          counts.push((await docs(follower)).length);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();
      proxy.rules.splice(0);
      await until("the follower restored and caught up", 30_000, () => followerStatus(follower).restores === 1 && followerPosition(follower) === writerStatus(writer).position);
      reading = false;
      await reader;
      // The reader's last read may have begun before the swap it just saw end: one more read, after it.
      counts.push((await docs(follower)).length);
      expect(counts.every((count) => count % 2 === 0)).toBe(true);
      expect(counts.every((count, index) => index === 0 || count >= counts[index - 1]!)).toBe(true);
      expect(counts[0]).toBe(6);
      expect(counts[counts.length - 1]).toBe(42);
      expect(followerStatus(follower)).not.toHaveProperty("behindRetention");
      expect(await docs(follower)).toEqual(upTo(42));
      // A query prepared before the swap runs on the restored copy.
      expect(((await prepared.run()) as { r: unknown[] }).r).toHaveLength(42);
      // The restored copy is served from beside the cache, whose own data is gone.
      expect(readdirSync(scratch).filter((name) => name.startsWith("restoring-follower."))).toEqual(["restoring-follower.restored-1"]);
      expect(readdirSync(cacheDir).sort()).toEqual(["cache.json", "coordinator", "writer.lock"]);

      // It follows on from the restored copy.
      await writer.run(pair(21));
      await until("the next write followed", 20_000, () => followerPosition(follower) === writerStatus(writer).position);
      expect(await docs(follower)).toEqual(upTo(44));
      expect(followerStatus(follower).lagMs).toBeLessThan(20_000);
      await prepared.release();
      await follower.close();
      // At close the copy moved into the cache: a reopen serves it.
      expect(readdirSync(scratch).filter((name) => name.startsWith("restoring-follower."))).toEqual([]);
      // A copy a killed follower left beside its cache is removed at the next open.
      mkdirSync(join(scratch, "restoring-follower.restored-7", "partitions"), { recursive: true });
      const back = await open({ storage: { s3: s3("restoring", { cacheDir, followIntervalMs: 50 }) }, mode: "readonly" });
      expect(await docs(back)).toEqual(upTo(44));
      expect(followerStatus(back)).toMatchObject({ position: writerStatus(writer).position, restores: 0 });
      expect(readdirSync(scratch).filter((name) => name.startsWith("restoring-follower."))).toEqual([]);
      await back.close();
      await writer.close();
    } finally {
      await proxy.stop();
    }
  }, 90_000);

  it("a follower that cannot restore itself says in its status that retention deleted its next segment", async () => {
    const writer = await open({ storage: { s3: s3("stranded", { snapshotEverySegments: 2, retentionMs: 0 }) } });
    for (let i = 0; i < 8; i += 1) await writer.run(writeOne(addN("Doc", { i })));
    await writer.close();
    const store = objectStore("stranded");
    // A follower at segment 0 (as one that stalled from the start): segment 1 is long gone.
    const follower = new BucketFollower({ store, stores: [], position: 0, intervalMs: 1_000, exclusive: (work) => work() });
    await expect(follower.poll()).rejects.toMatchObject({ code: "storage_unavailable", message: expect.stringMatching(/reopen it, which restores the newest snapshot/) });
    expect(follower.status()).toMatchObject({ position: 0, behindRetention: true });
    store.close();
  });
});
