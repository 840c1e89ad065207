/**
 * `open({ storage: { s3 } })` against a real S3-compatible server (Ceph's RADOS Gateway, test/helpers/s3-server.ts;
 * docs/STORAGE.md): a writer ships every commit as segments and is fenced by a newer writer; a fresh cache restores
 * from the snapshot and segments; a process SIGKILLed while writing loses no acknowledged write; a read-only follower
 * sees the writer's commits; bad options are refused with invalid_option; `silk serve|gateway --storage s3://...`
 * serve such a database, `/health` showing its position.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { readManifest } from "../../runtime/bucket-manifest.js";
import { Database, type OpenOptions } from "../../runtime/embedded.js";
import { ObjectStore } from "../../runtime/object-store.js";
import type { S3Storage } from "../../runtime/bucket-storage.js";
import { createBucket, startS3Server, type S3TestServer } from "../helpers/s3-server.js";
import { addN, entry, nodesOf, readOne, values, write, writeOne } from "../helpers/tree.js";
import { countRequest, nodesLabeled, runSilk } from "../cli/helpers.js";
import { startServer } from "../gateway/serve-process.js";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const WRITER = fileURLToPath(new URL("./fixtures/s3-writer.ts", import.meta.url));
const BUCKET = "silk-database";
let server: S3TestServer;
const scratch = mkdtempSync(join(tmpdir(), "silk-s3-db-"));
let caches = 0;
const handles: Database[] = [];

function s3(prefix: string, extra: Partial<S3Storage> = {}): S3Storage {
  caches += 1;
  return { bucket: BUCKET, prefix, endpoint: server.endpoint, region: server.region, credentials: server.credentials, cacheDir: join(scratch, `cache-${caches}`), ...extra };
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

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "ok";
  } catch (cause) {
    if (cause instanceof SilkError) return cause.code;
    throw cause;
  }
}

async function until(what: string, deadlineMs: number, check: () => Promise<boolean>): Promise<void> {
  const end = performance.now() + deadlineMs;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`${what} within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
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

describe("options", () => {
  it("refuses bad storage.s3 options with invalid_option naming the field", async () => {
    const refused = async (storage: unknown, mode?: "readonly"): Promise<string> => {
      try {
        await Database.open({ storage: storage as OpenOptions["storage"], ...(mode === undefined ? {} : { mode }) });
      } catch (cause) {
        expect(cause).toMatchObject({ code: "invalid_option" });
        return (cause as Error).message;
      }
      throw new Error("opened");
    };
    expect(await refused({ s3: { prefix: "x" } })).toMatch(/storage\.s3\.bucket must be an S3 bucket name/);
    expect(await refused({ s3: { bucket: "Bad_Name" } })).toMatch(/storage\.s3\.bucket/);
    expect(await refused({ s3: { bucket: "good", prefix: "/x/" } })).toMatch(/storage\.s3\.prefix/);
    expect(await refused({ s3: { bucket: "good", endpoint: "ftp://x" } })).toMatch(/storage\.s3\.endpoint must be an http/);
    expect(await refused({ s3: { bucket: "good", durability: "fast" } })).toMatch(/storage\.s3\.durability must be "object" or "local"/);
    expect(await refused({ s3: { bucket: "good", durability: "local" } }, "readonly")).toMatch(/durability is a writer's option/);
    expect(await refused({ s3: { bucket: "good", credentials: { accessKeyId: 1 } } })).toMatch(/storage\.s3\.credentials/);
    expect(await refused({ s3: { bucket: "good", cacheDir: "" } })).toMatch(/storage\.s3\.cacheDir/);
    expect(await refused({ s3: { bucket: "good", snapshotEverySegments: 0 } })).toMatch(/snapshotEverySegments must be a positive integer/);
    expect(await refused({ s3: { bucket: "good", snapshotEveryBytes: 1.5 } })).toMatch(/snapshotEveryBytes must be a positive integer/);
    expect(await refused({ s3: { bucket: "good", retentionMs: -1 } })).toMatch(/retentionMs must be a whole number of milliseconds, 0 or more/);
    expect(await refused({ s3: { bucket: "good", bukket: "x" } })).toMatch(/storage\.s3\.bukket is not an option/);
    expect(await refused({ s3: "s3://good/x" })).toMatch(/storage\.s3 must be an object/);
    expect(await refused({ disk: "/tmp/x", s3: { bucket: "good" } })).toMatch(/storage must be "memory", \{ disk/);
  });

  it("refuses a bucket that does not exist, credentials the store refuses, and a follower of a prefix that holds no database", async () => {
    const missing = await code(Database.open({ storage: { s3: { ...s3("any"), bucket: "silk-no-such-bucket" } } }));
    expect(missing).toBe("bucket_not_found");
    const denied = await code(Database.open({ storage: { s3: { ...s3("any"), credentials: { accessKeyId: server.credentials.accessKeyId, secretAccessKey: "not-the-secret" } } } }));
    expect(denied).toBe("storage_denied");
    await expect(Database.open({ storage: { s3: s3("nothing-here") }, mode: "readonly" })).rejects.toMatchObject({ code: "invalid_option", message: expect.stringContaining("holds no Silk database") });
  });
});

describe("a writer", () => {
  it("ships commits; a fresh cache restores them; status names the epoch and the stored segment", async () => {
    const storage = s3("restore");
    const db = await open({ storage: { s3: storage } });
    await Promise.all(Array.from({ length: 16 }, (_, i) => db.run(writeOne(addN("Doc", { i })))));
    const status = db.status();
    expect(status).toMatchObject({ storage: "s3", mode: "writer", s3: { bucket: BUCKET, prefix: "restore", epoch: 1, durability: "object", unshippedBytes: 0 } });
    // 16 concurrent commits share segments: fewer PUTs than commits (plus the fence segment).
    const position = status.storage === "s3" && status.mode === "writer" ? status.s3.position : 0;
    expect(position).toBeGreaterThan(1);
    expect(position).toBeLessThan(17);
    const again = await open({ storage: { s3: s3("restore") }, mode: "readonly" });
    expect(await docs(again)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    await db.close();
    await again.close();
    const writer = await open({ storage: { s3: s3("restore") } });
    expect(await docs(writer)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    expect(writer.status()).toMatchObject({ s3: { epoch: 2 } });
    await writer.close();
  });

  it("a newer writer deposes the older one, whose next write is writer_fenced; racing opens: one wins", async () => {
    const old = await open({ storage: { s3: s3("fence") } });
    await old.run(writeOne(addN("Doc", { i: 1 })));
    const next = await open({ storage: { s3: s3("fence") } });
    expect(await docs(next)).toEqual([1]);
    expect(await code(old.run(writeOne(addN("Doc", { i: 2 }))))).toBe("writer_fenced");
    // Once fenced, the handle takes no write at all.
    expect(await code(old.run(writeOne(addN("Doc", { i: 3 }))))).toBe("writer_fenced");
    await next.run(writeOne(addN("Doc", { i: 4 })));
    expect(await docs(next)).toEqual([1, 4]);
    await old.close();
    await next.close();
    const racers = await Promise.allSettled([0, 1, 2].map(() => Database.open({ storage: { s3: s3("fence") } })));
    const won = racers.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
    for (const db of won) handles.push(db);
    expect(won.length).toBeGreaterThanOrEqual(1);
    for (const outcome of racers) if (outcome.status === "rejected") expect(outcome.reason).toMatchObject({ code: "writer_fenced" });
    // Whichever opened last holds the epoch: exactly one of them may write.
    const writes = await Promise.all(won.map((db) => code(db.run(writeOne(addN("Doc", { i: 5 }))))));
    expect(writes.filter((outcome) => outcome === "ok")).toHaveLength(1);
    for (const db of won) await db.close();
  });

  it("local durability acknowledges before the bucket and ships within its bounds; a fresh cache sees it all", async () => {
    const db = await open({ storage: { s3: s3("local", { durability: "local" }) } });
    await Promise.all(Array.from({ length: 20 }, (_, i) => db.run(writeOne(addN("Doc", { i })))));
    expect(db.status()).toMatchObject({ s3: { durability: "local" } });
    await db.close();
    const restored = await open({ storage: { s3: s3("local") }, mode: "readonly" });
    expect(await docs(restored)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await restored.close();
  });

  it("a snapshot taken at close restores without replaying the segments before it", async () => {
    const db = await open({ storage: { s3: s3("snapshot", { snapshotEverySegments: 1 }) }, partitions: 2 });
    // One transaction across both partitions (a two-phase commit and its decision in the log), then single ones.
    await db.run(write(Array.from({ length: 10 }, (_, i) => entry(`n${i}`, addN("Doc", { i }))), []));
    await db.run(writeOne(addN("Doc", { i: 10 })));
    await db.close();
    const store = new ObjectStore({ bucket: BUCKET, prefix: "snapshot", endpoint: server.endpoint, region: server.region, credentials: server.credentials });
    const manifest = (await readManifest(store))?.manifest;
    store.close();
    expect(manifest?.snapshot).toBeGreaterThan(0);
    expect(manifest?.snapshotFolder).toMatch(/^snapshots\/\d{20}-e1$/);
    const restored = await open({ storage: { s3: s3("snapshot") } });
    expect(await docs(restored)).toEqual(Array.from({ length: 11 }, (_, i) => i));
    await restored.run(writeOne(addN("Doc", { i: 11 })));
    expect(await docs(restored)).toHaveLength(12);
    await restored.close();
  });
});

describe("crash and restore", () => {
  for (const durability of ["object", "local"] as const) {
    it(`${durability} durability: a writer SIGKILLed while writing loses no acknowledged write`, async () => {
      const prefix = `crash-${durability}`;
      const storage = s3(prefix);
      const child = spawn(process.execPath, ["--import", "tsx", WRITER, server.endpoint, BUCKET, prefix, storage.cacheDir!, durability], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
      const acknowledged: number[] = [];
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: child.stdout }).on("line", (line) => {
          acknowledged.push(Number(line));
          if (acknowledged.length === 60) {
            child.kill("SIGKILL");
            resolve();
          }
        });
        child.once("exit", (code) => reject(new Error(`the writer exited early with code ${code}`)));
      });
      expect(await exited).toBe("SIGKILL");
      // The same cache (a crashed writer's: restored, or shipped from its outbox) and a fresh one both hold every
      // acknowledged write, once.
      for (const cacheDir of [storage.cacheDir!, s3(prefix).cacheDir!]) {
        const db = await open({ storage: { s3: { ...s3(prefix), cacheDir, durability } } });
        const held = await docs(db);
        expect(new Set(held).size).toBe(held.length);
        for (const i of acknowledged) expect(held).toContain(i);
        await db.close();
      }
    }, 60_000);
  }
});

describe("a read-only follower", () => {
  it("restores, then follows the writer's commits with its position and lag in status()", async () => {
    const writer = await open({ storage: { s3: s3("follow") } });
    await writer.run(writeOne(addN("Doc", { i: 0 })));
    const follower = await open({ storage: { s3: s3("follow", { followIntervalMs: 50 }) }, mode: "readonly" });
    expect(await docs(follower)).toEqual([0]);
    expect(await code(follower.run(writeOne(addN("Doc", { i: 9 }))))).toBe("read_only");
    await Promise.all([1, 2, 3].map((i) => writer.run(writeOne(addN("Doc", { i })))));
    const stored = (): number => {
      const status = writer.status();
      return status.storage === "s3" && status.mode === "writer" ? status.s3.position : 0;
    };
    await until("the follower applied the writer's segments", 10_000, async () => {
      const status = follower.status();
      return status.storage === "s3" && status.mode === "readonly" && status.s3.position >= stored();
    });
    expect(await docs(follower)).toEqual([0, 1, 2, 3]);
    const status = follower.status();
    expect(status).toMatchObject({ storage: "s3", mode: "readonly", s3: { bucket: BUCKET, prefix: "follow", waitingSegments: 0 } });
    expect(status.storage === "s3" && status.s3 !== undefined && "lagMs" in status.s3 ? status.s3.lagMs : -1).toBeGreaterThanOrEqual(0);
    await follower.close();
    await writer.close();
  });
});

describe("silk serve and silk gateway --storage s3://bucket/prefix", () => {
  const environment = (): NodeJS.ProcessEnv => ({ AWS_ACCESS_KEY_ID: server.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey, AWS_REGION: server.region });
  const post = async (url: string, body: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${url}/v2/query`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  };
  const stop = async (started: Awaited<ReturnType<typeof startServer>>): Promise<void> => {
    started.child.kill("SIGTERM");
    expect(await started.exited).toBe(0);
  };

  it("serve writes to the bucket; a gateway follower and a fresh serve's cache see it", async () => {
    const storage = ["--storage", `s3://${BUCKET}/cli/db`, "--s3-endpoint", server.endpoint];
    const writer = await startServer(["serve", ...storage, "--data", join(scratch, "cli-writer"), "--port", "0"], environment());
    expect(writer.stdout()).toContain(`s3://${BUCKET}/cli/db`);
    await post(writer.url, writeOne(addN("Doc", { i: 1 })));
    const health = (await (await fetch(`${writer.url}/health`)).json()) as { storage: { storage: string; mode: string; s3: { epoch: number; position: number } } };
    expect(health.storage).toMatchObject({ storage: "s3", mode: "writer", s3: { epoch: 1 } });
    expect(health.storage.s3.position).toBeGreaterThanOrEqual(2);
    const follower = await startServer(["gateway", ...storage, "--read-only", "--data", join(scratch, "cli-follower"), "--port", "0"], environment());
    const followed = (await (await fetch(`${follower.url}/health`)).json()) as { storage: { mode: string; s3: { position: number } } };
    expect(followed.storage.mode).toBe("readonly");
    expect(followed.storage.s3.position).toBe(health.storage.s3.position);
    await stop(follower);
    await stop(writer);
    const fresh = await startServer(["serve", ...storage, "--data", join(scratch, "cli-fresh"), "--port", "0"], environment());
    expect(await post(fresh.url, countRequest({ docs: nodesLabeled("Doc") }))).toEqual({ docs: 1 });
    await stop(fresh);
  }, 240_000);

  it("refuses a --storage that is not s3://bucket/prefix, and --s3-endpoint without it", async () => {
    const notS3 = await runSilk(["serve", "--storage", "https://example.com/x", "--port", "0", "--data", join(scratch, "cli-bad")]);
    expect(notS3.code).toBe(1);
    expect(notS3.stderr).toContain('invalid_option: --storage must be s3://bucket/prefix, got "https://example.com/x"');
    const endpointOnly = await runSilk(["serve", "--s3-endpoint", server.endpoint, "--port", "0", "--data", join(scratch, "cli-bad")]);
    expect(endpointOnly.code).toBe(1);
    expect(endpointOnly.stderr).toContain("--s3-endpoint names the object store of --storage");
  }, 120_000);
});
