/**
 * The object store's conditional writes and the manifest's single-writer fence (docs/STORAGE.md), against a real
 * S3-compatible server: Ceph's RADOS Gateway on a one-node Ceph cluster on loopback (test/helpers/s3-server.ts). The
 * races are decided by the server, never by a mock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { advanceManifest, claimWriter, readManifest, type ManifestVersion } from "../../runtime/bucket-manifest.js";
import { ObjectStore } from "../../runtime/object-store.js";
import { createBucket, startS3Server, type S3TestServer } from "../helpers/s3-server.js";

const BUCKET = "silk-fence";
const RACERS = 8;
let server: S3TestServer;
const stores: ObjectStore[] = [];

function store(prefix: string, bucket = BUCKET): ObjectStore {
  const made = new ObjectStore({ bucket, prefix, endpoint: server.endpoint, region: server.region, credentials: server.credentials });
  stores.push(made);
  return made;
}

/** The SilkError code a promise rejects with, or "ok" with its value. */
async function settle<T>(promise: Promise<T>): Promise<{ code: "ok"; value: T } | { code: string; value?: undefined }> {
  try {
    return { code: "ok", value: await promise };
  } catch (cause) {
    if (cause instanceof SilkError) return { code: cause.code };
    throw cause;
  }
}

beforeAll(async () => {
  server = await startS3Server();
  await createBucket(server, BUCKET);
}, 120_000);

afterAll(async () => {
  for (const made of stores.splice(0)) made.close();
  await server?.stop();
});

describe("conditional writes on the real server", () => {
  it("If-None-Match: * writes once; the object reads back with its ETag", async () => {
    const bucket = store("conditional");
    const first = await bucket.putIfAbsent("segments/00000000000000000001.seg", new Uint8Array([1, 2, 3]));
    expect(first.outcome).toBe("written");
    expect(await bucket.putIfAbsent("segments/00000000000000000001.seg", new Uint8Array([9]))).toEqual({ outcome: "precondition_failed" });
    const read = await bucket.get("segments/00000000000000000001.seg");
    expect([...(read?.body ?? [])]).toEqual([1, 2, 3]);
    expect(first.outcome === "written" && read?.etag === first.etag).toBe(true);
    expect(await bucket.get("segments/00000000000000000002.seg")).toBeUndefined();
  });

  it("If-Match replaces only the version it names", async () => {
    const bucket = store("if-match");
    const created = await bucket.putIfAbsent("object", new TextEncoder().encode("one"));
    if (created.outcome !== "written") throw new Error("not created");
    const replaced = await bucket.putIfMatch("object", new TextEncoder().encode("two"), created.etag);
    expect(replaced.outcome).toBe("written");
    expect(await bucket.putIfMatch("object", new TextEncoder().encode("three"), created.etag)).toEqual({ outcome: "precondition_failed" });
    expect(await bucket.putIfMatch("missing", new TextEncoder().encode("x"), created.etag)).toEqual({ outcome: "precondition_failed" });
    expect(new TextDecoder().decode((await bucket.get("object"))?.body)).toBe("two");
  });

  it("of racing If-None-Match writes of one key exactly one lands", async () => {
    const bucket = store("race-absent");
    const answers = await Promise.all(Array.from({ length: RACERS }, (_, i) => bucket.putIfAbsent("segments/00000000000000000007.seg", new Uint8Array([i]))));
    const winners = answers.flatMap((answer, i) => (answer.outcome === "written" ? [i] : []));
    expect(winners).toHaveLength(1);
    expect([...((await bucket.get("segments/00000000000000000007.seg"))?.body ?? [])]).toEqual(winners);
  });

  it("lists a folder in key order after a given name", async () => {
    const bucket = store("listing");
    for (const seq of [3, 1, 2, 10]) await bucket.putIfAbsent(`segments/${String(seq).padStart(20, "0")}.seg`, new Uint8Array([seq]));
    const names = await bucket.list("segments");
    expect(names).toEqual([1, 2, 3, 10].map((seq) => `segments/${String(seq).padStart(20, "0")}.seg`));
    expect(await bucket.list("segments", names[1])).toEqual(names.slice(2));
  });
});

describe("the manifest fence", () => {
  it("two writers racing to advance the same version: exactly one wins, the other is writer_fenced", async () => {
    const [first, second] = [store("race-manifest"), store("race-manifest")];
    await claimWriter(first, 1, new Date());
    for (let round = 0; round < 5; round += 1) {
      const read = await readManifest(first);
      if (read === undefined) throw new Error("no manifest");
      const next = (snapshot: number): ManifestVersion["manifest"] => ({ ...read.manifest, snapshot, updatedAt: new Date().toISOString() });
      const outcomes = await Promise.all([settle(advanceManifest(first, read, next(round * 2 + 1))), settle(advanceManifest(second, read, next(round * 2 + 2)))]);
      expect(outcomes.map((outcome) => outcome.code).sort()).toEqual(["ok", "writer_fenced"]);
      const winner = outcomes.find((outcome) => outcome.code === "ok")?.value;
      expect((await readManifest(first))?.manifest).toEqual(winner?.manifest);
    }
  });

  it("writers opening at once: each success is a new epoch, every other open is writer_fenced", async () => {
    const racers = Array.from({ length: RACERS }, () => store("race-open"));
    const creations = await Promise.all(racers.map((racer) => settle(claimWriter(racer, 2, new Date()))));
    expect(creations.filter((outcome) => outcome.code === "ok")).toHaveLength(1);
    expect(new Set(creations.map((outcome) => outcome.code))).toEqual(new Set(["ok", "writer_fenced"]));
    const claims = await Promise.all(racers.map((racer) => settle(claimWriter(racer, 2, new Date()))));
    const epochs = claims.flatMap((outcome) => (outcome.code === "ok" ? [outcome.value?.manifest.epoch] : []));
    expect(epochs.length).toBeGreaterThanOrEqual(1);
    expect(new Set(epochs).size).toBe(epochs.length);
    expect(claims.every((outcome) => outcome.code === "ok" || outcome.code === "writer_fenced")).toBe(true);
    expect((await readManifest(racers[0]!))?.manifest.epoch).toBe(1 + epochs.length);
  });

  it("a deposed writer cannot advance the manifest again", async () => {
    const [old, next] = [store("deposed"), store("deposed")];
    const held = await claimWriter(old, 1, new Date());
    const taken = await claimWriter(next, 1, new Date());
    expect(taken.manifest.epoch).toBe(held.manifest.epoch + 1);
    const refused = await settle(advanceManifest(old, held, { ...held.manifest, snapshot: 5 }));
    expect(refused.code).toBe("writer_fenced");
    expect((await readManifest(next))?.manifest).toEqual(taken.manifest);
    expect((await settle(claimWriter(next, 3, new Date()))).code).toBe("invalid_option"); // another partition count
  });
});

describe("failures at the edges", () => {
  it("a bucket that does not exist is bucket_not_found naming it", async () => {
    const missing = store("any", "silk-no-such-bucket");
    await expect(readManifest(missing)).rejects.toMatchObject({ code: "bucket_not_found", message: expect.stringContaining("silk-no-such-bucket") });
    await expect(missing.putIfAbsent("x", new Uint8Array([1]))).rejects.toMatchObject({ code: "bucket_not_found" });
  });

  it("a store that does not answer is storage_unavailable within the deadline", async () => {
    // A loopback port nothing listens on: every attempt's connection is refused.
    const down = new ObjectStore({ bucket: BUCKET, prefix: "down", endpoint: "http://127.0.0.1:9", region: server.region, credentials: server.credentials, maxAttempts: 2, requestDeadlineMs: 3_000 });
    stores.push(down);
    const started = performance.now();
    await expect(down.get("manifest.json")).rejects.toMatchObject({ code: "storage_unavailable" });
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
