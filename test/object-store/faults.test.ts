/**
 * Object-store faults (docs/STORAGE.md, "Faults and errors") against the real S3-compatible server (Ceph's RADOS
 * Gateway, test/helpers/s3-server.ts) behind a fault-injecting proxy (test/helpers/s3-fault-proxy.ts): 500 and 503
 * answers and slow answers are waited out and retried, and a PUT that landed but was answered 500 counts once; a store
 * that keeps failing past the retries is storage_unavailable and nothing acknowledged is lost; a writer SIGKILLed
 * after a segment is stored and before its reply, while its snapshot waits for the manifest update, loses nothing
 * acknowledged; an embedded open without a region signs with AWS_REGION.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { readManifest } from "../../runtime/bucket-manifest.js";
import { Database, type DatabaseStatus } from "../../runtime/embedded.js";
import { ObjectStore } from "../../runtime/object-store.js";
import type { S3Storage } from "../../runtime/bucket-storage.js";
import { startFaultProxy, type FaultProxy } from "../helpers/s3-fault-proxy.js";
import { createBucket, startS3Server, type S3TestServer } from "../helpers/s3-server.js";
import { addN, entry, nodesOf, readOne, values, write, writeOne } from "../helpers/tree.js";
import { runSilk } from "../cli/helpers.js";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const WRITER = fileURLToPath(new URL("./fixtures/s3-writer.ts", import.meta.url));
const BUCKET = "silk-faults";
let server: S3TestServer;
let proxy: FaultProxy;
const scratch = mkdtempSync(join(tmpdir(), "silk-s3-faults-"));
let caches = 0;
const handles: Database[] = [];

/** Storage through the proxy (`direct`: straight to the server). */
function s3(prefix: string, extra: Partial<S3Storage> = {}, direct = false): S3Storage {
  caches += 1;
  return { bucket: BUCKET, prefix, endpoint: direct ? server.endpoint : proxy.endpoint, region: server.region, credentials: server.credentials, cacheDir: join(scratch, `cache-${caches}`), ...extra };
}

async function open(storage: S3Storage): Promise<Database> {
  const db = await Database.open({ storage: { s3: storage } });
  handles.push(db);
  return db;
}

async function docs(db: Database): Promise<number[]> {
  const answer = (await db.run(readOne(values(nodesOf("Doc"), "i")))) as { r: { i: number }[] };
  return answer.r.map((row) => row.i).sort((a, b) => a - b);
}

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "ok";
  } catch (cause) {
    if (cause instanceof SilkError) return cause.code;
    throw cause;
  }
}

/** Waits for `check`, running `step` (default: a 20 ms pause) between looks. */
async function until(what: string, deadlineMs: number, check: () => boolean, step?: () => Promise<void>): Promise<void> {
  const end = performance.now() + deadlineMs;
  while (!check()) {
    if (performance.now() > end) throw new Error(`${what} within ${deadlineMs} ms`);
    await (step?.() ?? new Promise((resolve) => setTimeout(resolve, 20)));
  }
}

const segmentPut = (method: string, path: string): boolean => method === "PUT" && path.includes("/segments/");
const manifestPut = (method: string, path: string): boolean => method === "PUT" && path.includes("/manifest.json");

beforeAll(async () => {
  server = await startS3Server();
  proxy = await startFaultProxy(server.endpoint);
  await createBucket(server, BUCKET);
}, 120_000);

afterEach(() => {
  proxy.rules.splice(0);
});

afterAll(async () => {
  for (const db of handles.splice(0)) await db.close().catch(() => undefined);
  await proxy?.stop();
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe("a store that fails for a while", () => {
  it("503, 500 and slow answers are waited out: every write is acknowledged and in the bucket once", async () => {
    const db = await open(s3("flaky"));
    // Every other request fails: before the store (503, 500) or after it applied it (500: the retry finds its segment).
    let request = 0;
    const actions = ["503", "500", "500-after"] as const;
    proxy.rules.push({ match: () => ((request += 1), false), action: "503" });
    for (const [index, action] of actions.entries()) proxy.rules.push({ match: () => request % (2 * actions.length) === 2 * index, action });
    await Promise.all(Array.from({ length: 20 }, (_, i) => db.run(writeOne(addN("Doc", { i })))));
    for (let i = 20; i < 30; i += 1) await db.run(writeOne(addN("Doc", { i })));
    const injected = proxy.seen.filter((seen) => seen.outcome !== "pass").map((seen) => seen.outcome);
    for (const action of actions) expect(injected).toContain(action);
    proxy.rules.splice(0);
    proxy.rules.push({ action: { delayMs: 300 } });
    await Promise.all(Array.from({ length: 5 }, (_, i) => db.run(writeOne(addN("Doc", { i: 30 + i })))));
    proxy.rules.splice(0);
    await db.close();
    const fresh = await open(s3("flaky", {}, true));
    expect(await docs(fresh)).toEqual(Array.from({ length: 35 }, (_, i) => i));
    await fresh.close();
  }, 60_000);

  it("a store that keeps failing past the retries: storage_unavailable, the writer takes no more writes, nothing acknowledged is lost", async () => {
    const db = await open(s3("down"));
    for (let i = 0; i < 5; i += 1) await db.run(writeOne(addN("Doc", { i })));
    proxy.rules.push({ match: segmentPut, action: "503" });
    expect(await code(db.run(writeOne(addN("Doc", { i: 5 }))))).toBe("storage_unavailable");
    expect(await code(db.run(writeOne(addN("Doc", { i: 6 }))))).toBe("storage_unavailable");
    await db.close();
    proxy.rules.splice(0);
    // The unacknowledged writes are nowhere: their segment never reached the store.
    const fresh = await open(s3("down", {}, true));
    expect(await docs(fresh)).toEqual([0, 1, 2, 3, 4]);
    await fresh.close();
    // The same cache (its writer failed: not trusted) restores from the bucket too, and takes writes again.
    const again = await open(s3("down", { cacheDir: join(scratch, `cache-${caches - 1}`) }));
    expect(await docs(again)).toEqual([0, 1, 2, 3, 4]);
    await again.run(writeOne(addN("Doc", { i: 7 })));
    await again.close();
  }, 60_000);
});

describe("a deadline and attempts of the database's own", () => {
  it("open(): attempts as configured, then storage_unavailable; a store slower than the deadline fails, one within it is waited for", async () => {
    const db = await open(s3("tuned", { requestDeadlineMs: 1_500, maxAttempts: 3 }));
    await db.run(writeOne(addN("Doc", { i: 0 })));
    // Slower than usual, within the deadline: waited for.
    proxy.rules.push({ match: segmentPut, action: { delayMs: 100 }, times: 1 });
    await db.run(writeOne(addN("Doc", { i: 1 })));
    // Every try answered 503: exactly maxAttempts tries of the segment PUT.
    proxy.rules.splice(0, proxy.rules.length, { match: segmentPut, action: "503" });
    const before = proxy.seen.length;
    expect(await code(db.run(writeOne(addN("Doc", { i: 2 }))))).toBe("storage_unavailable");
    expect(proxy.seen.slice(before).filter((seen) => segmentPut(seen.method, seen.path))).toHaveLength(3);
    await db.close();
    proxy.rules.splice(0);

    // One try, and an answer later than the deadline (the default deadline, 10 s, would have waited for it).
    const slow = await open(s3("tuned-slow", { requestDeadlineMs: 1_000, maxAttempts: 1 }));
    await slow.run(writeOne(addN("Doc", { i: 0 })));
    proxy.rules.push({ match: segmentPut, action: { delayMs: 4_000 } });
    const failure = await slow.run(writeOne(addN("Doc", { i: 1 }))).then(() => undefined, (cause: unknown) => cause);
    expect(failure).toBeInstanceOf(SilkError);
    expect(failure).toMatchObject({ code: "storage_unavailable", message: expect.stringMatching(/within 1000 ms/) });
    await slow.close();
  }, 60_000);

  it("refuses a deadline or attempts that are not positive integers", async () => {
    for (const extra of [{ requestDeadlineMs: 0 }, { maxAttempts: 1.5 }, { maxAttempts: "3" }] as unknown as Partial<S3Storage>[]) {
      await expect(Database.open({ storage: { s3: s3("refused", extra) } })).rejects.toMatchObject({ code: "invalid_option", message: expect.stringMatching(/storage\.s3\.(requestDeadlineMs|maxAttempts) must be a positive integer/) });
    }
  });

  it("silk restore --s3-request-deadline-ms --s3-max-attempts: a store slower than the deadline is storage_unavailable", async () => {
    const db = await open(s3("tuned-cli", {}, true));
    await db.run(writeOne(addN("Doc", { i: 0 })));
    await db.close();
    proxy.rules.push({ match: (method) => method === "GET", action: { delayMs: 4_000 } });
    const environment = { ...process.env, AWS_ACCESS_KEY_ID: server.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey, AWS_REGION: server.region };
    const args = ["restore", "--from", `s3://${BUCKET}/tuned-cli`, "--data", join(scratch, "tuned-cli-restore"), "--s3-endpoint", proxy.endpoint];
    const slow = await runSilk([...args, "--s3-request-deadline-ms", "1000", "--s3-max-attempts", "1"], { env: environment });
    expect(slow.code).toBe(1);
    expect(slow.stderr).toMatch(/storage_unavailable: .*within 1000 ms/);
    const refused = await runSilk([...args, "--s3-max-attempts", "0"], { env: environment });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('invalid_option: --s3-max-attempts must be a positive integer, got "0"');
    proxy.rules.splice(0);
    const waited = await runSilk([...args, "--s3-request-deadline-ms", "20000"], { env: environment });
    expect(waited.stderr).toBe("");
    expect(waited.code).toBe(0);
  }, 120_000);
});

describe("a snapshot that keeps failing", () => {
  it("is tried again after a growing backoff, not after every stored segment, and succeeds once the store takes it", async () => {
    // One try per request: each snapshot attempt is one PUT of its first file.
    const db = await open(s3("snapshot-backoff", { snapshotEverySegments: 1, retentionMs: 0, maxAttempts: 1 }));
    const snapshotPut = (method: string, path: string): boolean => method === "PUT" && path.includes("/snapshot-backoff/snapshots/");
    proxy.rules.push({ match: snapshotPut, action: "503" });
    const before = proxy.seen.length;
    const started = performance.now();
    let writes = 0;
    // Every write is a segment, and every segment makes a snapshot due.
    while (performance.now() - started < 4_000 || writes < 20) {
      await db.run(writeOne(addN("Doc", { i: writes })));
      writes += 1;
    }
    const status = db.status();
    if (status.storage !== "s3" || status.mode !== "writer") throw new Error("not a bucket writer");
    expect(status.s3.lastSnapshotError).toMatch(/storage_unavailable|did not complete PUT/);
    const attempts = proxy.seen.slice(before).filter((seen) => snapshotPut(seen.method, seen.path));
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(attempts.length).toBeLessThan(writes / 2);
    expect(status.s3.snapshotFailures).toBeGreaterThanOrEqual(attempts.length - 1);
    // Attempt n + 1 starts no sooner than half of min(60 s, 1 s x 2^n) after attempt n failed (equal jitter).
    attempts.slice(1).forEach((attempt, n) => expect(attempt.atMs - attempts[n]!.atMs).toBeGreaterThanOrEqual(0.5 * Math.min(60_000, 1_000 * 2 ** n)));
    proxy.rules.splice(0);
    const writerStatus = (): Extract<DatabaseStatus, { storage: "s3"; mode: "writer" }>["s3"] => {
      const now = db.status();
      if (now.storage !== "s3" || now.mode !== "writer") throw new Error("not a bucket writer");
      return now.s3;
    };
    // Each stored segment makes the next snapshot due: the first after the backoff succeeds.
    await until("a snapshot once the store takes it", 90_000, () => writerStatus().snapshot > 0, async () => {
      await db.run(writeOne(addN("Doc", { i: writes })));
      writes += 1;
    });
    await until("the snapshots in flight done", 30_000, () => !writerStatus().snapshotting);
    const after = db.status();
    if (after.storage !== "s3" || after.mode !== "writer") throw new Error("not a bucket writer");
    expect(after.s3).not.toHaveProperty("lastSnapshotError");
    expect(after.s3.snapshotFailures).toBe(0);
    await db.close();
    const fresh = await open(s3("snapshot-backoff", {}, true));
    expect(await docs(fresh)).toEqual(Array.from({ length: writes }, (_, i) => i));
    await fresh.close();
  }, 120_000);
});

describe("a snapshot file larger than a part", () => {
  it("goes up as a multipart upload in parts of snapshotPartBytes, a failed one is aborted and retried, and a follower restores from it", async () => {
    const partBytes = 5 * 1024 * 1024;
    const db = await open(s3("multipart", { snapshotEverySegments: 20, retentionMs: 0, snapshotPartBytes: partBytes, maxAttempts: 1 }));
    const multipart = (path: string): boolean => path.includes("/multipart/snapshots/") && path.includes("data.mdb");
    // The second part of the first try fails: that upload is aborted, and the snapshot is tried again (after its
    // backoff, or at close).
    proxy.rules.push({ match: (method, path) => method === "PUT" && multipart(path) && path.includes("partNumber=2"), action: "503", times: 1 });
    const before = proxy.seen.length;
    const text = (i: number): string => `${i}:`.padEnd(100_000, String.fromCharCode(97 + (i % 26)));
    // About 12 MB of records: the partition's data.mdb is more than one part.
    for (let t = 0; t < 24; t += 1) await db.run(write(Array.from({ length: 5 }, (_, k) => entry(`d${k}`, addN("Doc", { i: 5 * t + k, text: text(5 * t + k) }))), []));
    await db.close();
    const seen = proxy.seen.slice(before).filter((request) => multipart(request.path));
    expect(seen.some((request) => request.method === "DELETE" && request.path.includes("uploadId="))).toBe(true);
    const parts = seen.filter((request) => request.method === "PUT" && request.path.includes("partNumber=") && request.outcome === "pass");
    expect(parts.length).toBeGreaterThanOrEqual(3); // the aborted try's first part, and two or more of the one completed
    expect(seen.filter((request) => request.method === "POST" && request.path.includes("uploadId=")).length).toBe(1);
    const store = new ObjectStore({ bucket: BUCKET, prefix: "multipart", endpoint: server.endpoint, region: server.region, credentials: server.credentials });
    const manifest = (await readManifest(store))!.manifest;
    const data = await store.get(`${manifest.snapshotFolder!}/partitions/p0/data.mdb`);
    store.close();
    expect(data!.body.length).toBeGreaterThan(partBytes);
    const follower = await Database.open({ storage: { s3: s3("multipart", {}, true) }, mode: "readonly" });
    handles.push(follower);
    expect(await docs(follower)).toEqual(Array.from({ length: 120 }, (_, i) => i));
    const sample = (await follower.run(readOne(values(nodesOf("Doc"), "i", "text")))) as { r: { i: number; text: string }[] };
    for (const row of sample.r) expect(row.text).toBe(text(row.i));
    await follower.close();
  }, 180_000);

  it("refuses parts smaller than S3's 5 MiB", async () => {
    await expect(Database.open({ storage: { s3: s3("refused-parts", { snapshotPartBytes: 1024 }) } })).rejects.toMatchObject({ code: "invalid_option", message: expect.stringMatching(/snapshotPartBytes must be .* at least 5242880/) });
  });
});

describe("a writer SIGKILLed at the worst moments", () => {
  it("after a segment is stored and before its reply, with a snapshot waiting for its manifest update: nothing acknowledged is lost, nothing doubled", async () => {
    const prefix = "killed";
    const storage = s3(prefix);
    const child = spawn(process.execPath, ["--import", "tsx", WRITER, proxy.endpoint, BUCKET, prefix, storage.cacheDir!, "object", "5"], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    const acknowledged: number[] = [];
    let early: Error | undefined;
    child.once("exit", (status) => (early = new Error(`the writer exited early with code ${status}`)));
    createInterface({ input: child.stdout }).on("line", (line) => acknowledged.push(Number(line)));
    await until("the first acknowledged writes", 30_000, () => acknowledged.length >= 20 || early !== undefined);
    // The next manifest update (a snapshot's) is held, then the next segment PUT is stored and its answer held.
    proxy.rules.push({ match: manifestPut, action: "hold" });
    await until("a snapshot waiting for its manifest update", 30_000, () => proxy.seen.some((seen) => seen.outcome === "hold") || early !== undefined);
    proxy.rules.push({ match: segmentPut, action: "hold-after", times: 1 });
    await until("a stored segment whose answer is held", 30_000, () => proxy.held() >= 2 || early !== undefined);
    child.kill("SIGKILL");
    expect(early).toBeUndefined();
    expect(await exited).toBe("SIGKILL");
    proxy.rules.splice(0);
    const store = new ObjectStore({ bucket: BUCKET, prefix, endpoint: server.endpoint, region: server.region, credentials: server.credentials });
    const manifest = (await readManifest(store))!.manifest;
    const snapshotObjects = await store.list("snapshots");
    store.close();
    // The snapshot's files are in the bucket; the manifest does not name them.
    expect(snapshotObjects.length).toBeGreaterThan(0);
    expect(snapshotObjects.every((name) => !name.startsWith(`${manifest.snapshotFolder ?? "-"}/`))).toBe(true);
    for (const cacheDir of [storage.cacheDir!, s3(prefix).cacheDir!]) {
      const db = await open({ ...s3(prefix, {}, true), cacheDir });
      const held = await docs(db);
      expect(new Set(held).size).toBe(held.length);
      for (const i of acknowledged) expect(held).toContain(i);
      await db.close();
    }
  }, 120_000);
});

describe("the region", () => {
  it("an embedded open without a region signs with AWS_REGION", async () => {
    const before = process.env.AWS_REGION;
    process.env.AWS_REGION = "eu-central-1";
    try {
      const { region: _region, ...storage } = s3("region");
      const db = await open(storage);
      await db.run(writeOne(addN("Doc", { i: 0 })));
      await db.close();
    } finally {
      if (before === undefined) delete process.env.AWS_REGION;
      else process.env.AWS_REGION = before;
    }
    const signed = proxy.seen.filter((seen) => seen.path.includes("/region/"));
    expect(signed.length).toBeGreaterThan(0);
    for (const seen of signed) expect(seen.authorization).toContain("/eu-central-1/s3/aws4_request");
  }, 60_000);
});
