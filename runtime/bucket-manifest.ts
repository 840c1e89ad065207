/**
 * The manifest of a database in a bucket (docs/STORAGE.md, "The single-writer fence"): `manifest.json` under the
 * database's prefix names the writer's epoch, the latest snapshot and the first segment still kept. It is changed only
 * by conditional writes: created with `If-None-Match: *`, replaced with `If-Match: <the ETag read>`. A write that the
 * store refuses means someone else changed it first, and the loser gets `writer_fenced`: of two writers racing to
 * advance the same version exactly one wins, and a deposed writer can never advance it again.
 *
 * Architecture invariant: nothing here retries a refused write. Retrying with a fresh ETag would overwrite the winner's
 * change; only a writer's open (`claimWriter`) starts from a fresh read, and it deposes whoever held the epoch before.
 */
import { SilkError } from "../protocol/errors.js";
import type { ObjectStore } from "./object-store.js";

export const MANIFEST_NAME = "manifest.json";
export const MANIFEST_FORMAT = 1;

export interface BucketManifest {
  readonly format: number;
  /** Partition count, fixed when the database is created. */
  readonly partitions: number;
  /** Grows by one at each writer's open; the fence segment and every manifest update carry it. */
  readonly epoch: number;
  /** The segment the latest snapshot reflects (its objects are under `snapshots/<seq>/`); 0: no snapshot yet. */
  readonly snapshot: number;
  /** The folder of that snapshot (bucket-storage.ts `snapshotFolder`); absent while there is none. */
  readonly snapshotFolder?: string;
  /** The first segment still kept (retention deletes the ones below it). */
  readonly retainFrom: number;
  /**
   * The snapshots in the bucket, oldest first, each with the instant it was taken: retention deletes a snapshot and
   * the segments up to a newer one once that newer one is `retentionMs` old (bucket-snapshots.ts). Absent in a
   * manifest written before retention: then the one `snapshotFolder` names.
   */
  readonly snapshots?: readonly SnapshotEntry[];
  /** ISO 8601 instant of the update, for people reading the bucket. */
  readonly updatedAt: string;
}

export interface SnapshotEntry {
  /** The segment it reflects. */
  readonly seq: number;
  readonly folder: string;
  /** ISO 8601 instant its manifest update was made. */
  readonly takenAt: string;
}

/** A manifest as read, with the ETag a conditional update must name. */
export interface ManifestVersion {
  readonly manifest: BucketManifest;
  readonly etag: string;
}

function decode(body: Uint8Array, bucket: string): BucketManifest {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new SilkError("invalid_option", `${MANIFEST_NAME} in bucket ${JSON.stringify(bucket)} is not JSON: not a Silk database, or damaged`);
  }
  const manifest = value as Partial<BucketManifest> | null;
  const counters = [manifest?.partitions, manifest?.epoch, manifest?.snapshot, manifest?.retainFrom];
  if (manifest === null || typeof manifest !== "object" || manifest.format !== MANIFEST_FORMAT || !counters.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) {
    throw new SilkError("invalid_option", `${MANIFEST_NAME} in bucket ${JSON.stringify(bucket)} is not a Silk manifest of format ${MANIFEST_FORMAT}`);
  }
  if (manifest.snapshots !== undefined && (!Array.isArray(manifest.snapshots) || !manifest.snapshots.every((entry) => Number.isSafeInteger(entry?.seq) && typeof entry.folder === "string" && typeof entry.takenAt === "string"))) {
    throw new SilkError("invalid_option", `${MANIFEST_NAME} in bucket ${JSON.stringify(bucket)} has a damaged snapshots list`);
  }
  return manifest as BucketManifest;
}

/** The snapshots a manifest says are in the bucket, oldest first. */
export function snapshotsOf(manifest: BucketManifest): readonly SnapshotEntry[] {
  if (manifest.snapshots !== undefined) return manifest.snapshots;
  return manifest.snapshotFolder === undefined ? [] : [{ seq: manifest.snapshot, folder: manifest.snapshotFolder, takenAt: manifest.updatedAt }];
}

function encode(manifest: BucketManifest): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(manifest, null, 2) + "\n");
}

/** The manifest and its ETag, or undefined when the prefix holds no database yet. */
export async function readManifest(store: ObjectStore): Promise<ManifestVersion | undefined> {
  const object = await store.get(MANIFEST_NAME);
  return object === undefined ? undefined : { manifest: decode(object.body, store.bucket), etag: object.etag };
}

/** Replaces `current` with `next`, or throws `writer_fenced` when the manifest is no longer `current`. */
export async function advanceManifest(store: ObjectStore, current: ManifestVersion, next: BucketManifest): Promise<ManifestVersion> {
  if (next.epoch !== current.manifest.epoch && next.epoch !== current.manifest.epoch + 1) {
    throw new SilkError("internal", `internal error (a bug in Silk): a manifest update from epoch ${current.manifest.epoch} to ${next.epoch}`);
  }
  const answer = await store.putIfMatch(MANIFEST_NAME, encode(next), current.etag);
  if (answer.outcome === "precondition_failed") {
    throw new SilkError("writer_fenced", `another writer changed the database's manifest in bucket ${JSON.stringify(store.bucket)} (this handle held epoch ${current.manifest.epoch}): this handle may no longer write`);
  }
  return { manifest: next, etag: answer.etag };
}

/** Creates the manifest of a new database, or throws `writer_fenced` when another writer created it first. */
export async function createManifest(store: ObjectStore, manifest: BucketManifest): Promise<ManifestVersion> {
  const answer = await store.putIfAbsent(MANIFEST_NAME, encode(manifest));
  if (answer.outcome === "precondition_failed") {
    throw new SilkError("writer_fenced", `another writer created the database in bucket ${JSON.stringify(store.bucket)} at the same time: open it again`);
  }
  return { manifest, etag: answer.etag };
}

/**
 * A writer's open: the next epoch, claimed by one conditional write (creating the database with `partitions` when the
 * prefix holds none). Of writers opening at once, one wins; the others get `writer_fenced`.
 */
export async function claimWriter(store: ObjectStore, partitions: number, now: Date): Promise<ManifestVersion> {
  const current = await readManifest(store);
  if (current === undefined) {
    return createManifest(store, { format: MANIFEST_FORMAT, partitions, epoch: 1, snapshot: 0, retainFrom: 1, updatedAt: now.toISOString() });
  }
  if (current.manifest.partitions !== partitions) {
    throw new SilkError("invalid_option", `the database in bucket ${JSON.stringify(store.bucket)} was created with ${current.manifest.partitions} partitions, not ${partitions}`);
  }
  return advanceManifest(store, current, { ...current.manifest, epoch: current.manifest.epoch + 1, updatedAt: now.toISOString() });
}
