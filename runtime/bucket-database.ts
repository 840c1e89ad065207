/**
 * The steps of opening and closing a bucket database that runtime/embedded.ts runs around its partitions
 * (docs/STORAGE.md): before the stores open, `prepareCache` claims the writer's epoch (or reads the manifest, for a
 * follower), judges the cache and restores it when it cannot be trusted; once they are open, `catchUpAndFence` replays
 * the segments the cache lacks and puts the writer's fence segment; at close, `closeWriter` waits for the shipper and
 * takes a snapshot when enough segments passed since the last one. A follower that restores itself while it serves
 * (bucket-follower.ts) does so into a copy beside the cache (`restoredCopyFolder`), moved into the cache at close.
 */
import { existsSync, readdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { SilkError } from "../protocol/errors.js";
import type { PartitionStore } from "../node/store/partition-store.js";
import type { DecisionStore } from "../cluster/decision-log.js";
import { claimWriter, readManifest, type ManifestVersion } from "./bucket-manifest.js";
import {
  applySegment,
  checkCacheOwner,
  checkS3Storage,
  downloadSnapshot,
  emptyCache,
  objectStoreOf,
  readCacheState,
  readSegment,
  readSegmentsAfter,
  writeCacheState,
} from "./bucket-storage.js";
import type { ObjectStore } from "./object-store.js";
import { uploadSnapshot, type BucketSnapshotter } from "./bucket-snapshots.js";
import { encodeSegment, segmentName } from "./segment-log.js";
import { Outbox, shipOutbox, type SegmentShipper } from "./segment-shipper.js";

export type CheckedS3Storage = ReturnType<typeof checkS3Storage>;

export interface PreparedCache {
  readonly store: ObjectStore;
  /** The writer's claimed manifest; undefined for a follower. */
  readonly manifest: ManifestVersion | undefined;
  readonly partitions: number;
  /** The last segment the cache holds whole. */
  readonly position: number;
  /** `local` durability's outbox (open). */
  readonly outbox: Outbox | undefined;
  /** Whether the cache was emptied and restored from the bucket. */
  readonly restored: boolean;
}

function where(storage: CheckedS3Storage): string {
  return `s3://${storage.bucket}/${storage.prefix}`;
}

/**
 * The folder beside the cache `cacheDir` into which a running follower restores its `n`th copy (bucket-follower.ts):
 * it serves from there until it closes, when the copy moves into `cacheDir` (`moveCopyIntoCache`).
 */
export function restoredCopyFolder(cacheDir: string, n: number): string {
  return join(dirname(cacheDir), `${basename(cacheDir)}.restored-${n}`);
}

/** Removes the restored copies a follower left beside `cacheDir` (it was killed while it served one); under the cache's lock. */
function removeRestoredCopies(cacheDir: string): void {
  const prefix = `${basename(cacheDir)}.restored-`;
  const parent = dirname(cacheDir);
  if (!existsSync(parent)) return;
  for (const name of readdirSync(parent)) if (name.startsWith(prefix) && /^\d+$/.test(name.slice(prefix.length))) rmSync(join(parent, name), { recursive: true, force: true });
}

/**
 * A follower's cache once the restored copy it serves replaced it: its data goes (the disk holds one copy), its state
 * says position 0 (below the bucket's retention, so a reopen after a crash restores), and only the decision log stays,
 * open until close (a follower never writes it).
 */
export function retireReplacedCache(storage: CheckedS3Storage, cacheDir: string): void {
  writeCacheState(cacheDir, { bucket: storage.bucket, prefix: storage.prefix, role: "follower", epoch: 0, clean: false, position: 0 });
  for (const entry of ["silk.json", "partitions", "outbox"]) rmSync(join(cacheDir, entry), { recursive: true, force: true });
}

/**
 * At a follower's close, its environments closed: the restored copy it served moves into the cache, its state last
 * (a crash before that leaves the cache at position 0, which restores at reopen).
 */
export function moveCopyIntoCache(copy: string, cacheDir: string): void {
  for (const entry of readdirSync(copy)) {
    if (entry === "cache.json") continue;
    rmSync(join(cacheDir, entry), { recursive: true, force: true });
    renameSync(join(copy, entry), join(cacheDir, entry));
  }
  renameSync(join(copy, "cache.json"), join(cacheDir, "cache.json"));
  rmSync(copy, { recursive: true, force: true });
}

/**
 * Before the partitions open: the manifest read (a follower) or the next epoch claimed (a writer), an outbox a
 * `local` writer left shipped, and the cache kept or emptied and restored from the latest snapshot.
 */
export async function prepareCache(storage: CheckedS3Storage, mode: "writer" | "readonly", directory: string, partitions: number | undefined, now: Date): Promise<PreparedCache> {
  const store = objectStoreOf(storage);
  try {
    removeRestoredCopies(directory);
    const current = await readManifest(store);
    const state = readCacheState(directory);
    checkCacheOwner(directory, storage, state);
    if (mode === "readonly") {
      if (current === undefined) throw new SilkError("invalid_option", `${where(storage)} holds no Silk database (no manifest.json): open it as a writer first`);
      // A follower's cache holds only what it read from the bucket, and a writer's that closed cleanly only what it
      // stored there; a crashed writer's may hold commits the bucket lacks. A cache older than the bucket's retention
      // would need segments that are gone: it starts again from the snapshot.
      const restore = state === undefined || (state.role === "writer" && !state.clean) || state.position + 1 < current.manifest.retainFrom;
      if (restore) {
        emptyCache(directory);
        if (current.manifest.snapshotFolder !== undefined) await downloadSnapshot(store, current.manifest.snapshotFolder, directory);
      }
      const position = restore || state === undefined ? current.manifest.snapshot : state.position;
      writeCacheState(directory, { bucket: storage.bucket, prefix: storage.prefix, role: "follower", epoch: current.manifest.epoch, clean: false, position });
      return { store, manifest: undefined, partitions: current.manifest.partitions, position, outbox: undefined, restored: restore };
    }
    const outboxPath = join(directory, "outbox");
    const trusted = state !== undefined && current !== undefined && state.role === "writer" && state.epoch === current.manifest.epoch && (state.clean || state.durability === "local");
    let outbox: Outbox | undefined;
    if (trusted && existsSync(outboxPath)) {
      outbox = new Outbox(outboxPath);
      const left = outbox.entries();
      if (left.length > 0 && left[0]!.epoch !== current.manifest.epoch) {
        await outbox.close();
        throw new SilkError("writer_fenced", `${directory}/outbox holds ${left.length} records of writer epoch ${left[0]!.epoch} that never reached ${where(storage)}, and another writer (epoch ${current.manifest.epoch}) has written since: they are left there for an operator`);
      }
    }
    let claimed: ManifestVersion;
    try {
      claimed = await claimWriter(store, partitions ?? current?.manifest.partitions ?? 1, now);
      if (outbox !== undefined) await shipOutbox(store, outbox);
    } catch (cause) {
      await outbox?.close();
      throw cause;
    }
    if (!trusted) {
      emptyCache(directory);
      if (claimed.manifest.snapshotFolder !== undefined) await downloadSnapshot(store, claimed.manifest.snapshotFolder, directory);
    }
    if (storage.durability === "local" && outbox === undefined) outbox = new Outbox(outboxPath);
    const position = trusted ? state.position : claimed.manifest.snapshot;
    writeCacheState(directory, { bucket: storage.bucket, prefix: storage.prefix, role: "writer", epoch: claimed.manifest.epoch, clean: false, position, durability: storage.durability });
    return { store, manifest: claimed, partitions: claimed.manifest.partitions, position, outbox, restored: !trusted };
  } catch (cause) {
    store.close();
    throw cause;
  }
}

/**
 * A writer, its partitions open: applies the segments after the cache's position, then puts its fence segment (no
 * records, its epoch) at the next free number. A number taken meanwhile by an older writer is applied and the next one
 * tried; one taken by a newer epoch means this writer was deposed already. Answers the first number after the fence.
 */
export async function catchUpAndFence(prepared: PreparedCache, stores: readonly PartitionStore[], decisions: DecisionStore): Promise<number> {
  const { store } = prepared;
  const epoch = prepared.manifest!.manifest.epoch;
  let position = prepared.position;
  for (const segment of await readSegmentsAfter(store, position)) {
    await applySegment(segment, stores, decisions);
    position = segment.seq;
  }
  for (;;) {
    const seq = position + 1;
    const answer = await store.putIfAbsent(segmentName(seq), encodeSegment(epoch, seq, []));
    if (answer.outcome === "written") return seq + 1;
    const segment = await readSegment(store, seq);
    if (segment === undefined) continue;
    if (segment.epoch > epoch) throw new SilkError("writer_fenced", `a writer of epoch ${segment.epoch} wrote ${segmentName(seq)} while this one (epoch ${epoch}) opened: it was deposed before it served`);
    await applySegment(segment, stores, decisions);
    position = seq;
  }
}

/** A writer's cache.json: `clean` once it closed with everything it applied in the bucket. */
export function writerCacheState(storage: CheckedS3Storage, epoch: number, position: number, clean: boolean): Parameters<typeof writeCacheState>[1] {
  return { bucket: storage.bucket, prefix: storage.prefix, role: "writer", epoch, clean, position, durability: storage.durability };
}

/**
 * A writer's close, after its partitions closed and its snapshotter stopped: marks the cache clean once everything it
 * applied is stored (what the shipper could not store is not committed), uploads a snapshot of the closed files when
 * `snapshotEverySegments` passed since the manifest's, and applies retention.
 */
export async function closeWriter(storage: CheckedS3Storage, prepared: PreparedCache, shipper: SegmentShipper, snapshotter: BucketSnapshotter, directory: string, shipped: boolean, now: Date): Promise<void> {
  if (!shipped) return;
  let manifest = snapshotter.current();
  const stored = shipper.storedSegment();
  writeCacheState(directory, writerCacheState(storage, manifest.manifest.epoch, stored, true));
  if (stored - manifest.manifest.snapshot >= storage.snapshotEverySegments) manifest = await uploadSnapshot(prepared.store, directory, stored, manifest, now, storage.snapshotPartBytes);
  await snapshotter.retain(manifest);
}
