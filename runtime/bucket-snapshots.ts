/**
 * Snapshots and retention of a bucket database (docs/STORAGE.md, "Snapshots, compaction, retention").
 *
 * A writer snapshots while it serves, once `snapshotEverySegments` segments or `snapshotEveryBytes` bytes of log were
 * stored since the manifest's snapshot: every partition's LMDB environment and the decision log are copied from one
 * read transaction each (lmdb-js `backup`, off the event loop: writes go on meanwhile), the vector graph files with
 * them (PartitionStore.backup); the copy is uploaded under a folder of its own and the manifest advanced to name it
 * (`If-Match`: a deposed writer cannot). The copy is named by the last segment sealed before it began (every record of
 * it was applied), and may also hold records of later segments: a restore replays from the segment after it and each
 * partition skips the records it holds (their log positions). It is named in the manifest only once every record it
 * may hold is stored, so a snapshot never holds a commit the log lacks.
 *
 * Retention: a snapshot, and the segments up to a newer snapshot, are deleted once that newer snapshot is
 * `retentionMs` old. So a follower that is less than `retentionMs` behind the writer finds every segment it still
 * needs; one further behind restores from the newest snapshot (at its open, bucket-database.ts, or while it serves,
 * bucket-follower.ts).
 *
 * A failed snapshot is tried again when next due, but not before SNAPSHOT_RETRY_BACKOFF after the failure.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { SilkError, asSilkError } from "../protocol/errors.js";
import { backoffMs, type Backoff } from "../platform/backoff.js";
import type { PartitionStore } from "../node/store/partition-store.js";
import type { LmdbDecisionLog } from "../cluster/decision-log.js";
import { advanceManifest, snapshotsOf, type ManifestVersion } from "./bucket-manifest.js";
import type { ObjectStore } from "./object-store.js";
import { segmentName } from "./segment-log.js";
import type { SegmentShipper } from "./segment-shipper.js";

/** Defaults of the snapshot and retention options (storage.s3). */
export const SNAPSHOT_EVERY_SEGMENTS = 1_000;
export const SNAPSHOT_EVERY_BYTES = 64 * 1024 * 1024;
export const RETENTION_MS = 24 * 60 * 60 * 1000;
/** The cache's folder for a snapshot's copy on its way to the bucket. */
export const SNAPSHOT_SCRATCH = "snapshot-copy";
/**
 * How a snapshot that failed is tried again: not before this backoff after the failure (1 s, then twice as long after
 * each failure in a row, at most a minute; equal jitter, so never sooner than half). Without it a store that refuses
 * snapshots would get a whole snapshot's copy and upload after every stored segment.
 */
export const SNAPSHOT_RETRY_BACKOFF: Backoff = { firstMs: 1_000, maxMs: 60_000, jitter: "equal" };

/** The folder of a snapshot: its segment and the epoch of the writer that took it (two writers never share one). */
export function snapshotFolder(seq: number, epoch: number): string {
  return `snapshots/${String(seq).padStart(20, "0")}-e${epoch}`;
}

/** The segment of a snapshot folder's name; undefined for a name that is none. */
function folderSegment(name: string): number | undefined {
  const match = /^snapshots\/(\d{20})-e\d+\//.exec(name);
  return match === null ? undefined : Number(match[1]);
}

/** The files of a database directory that a snapshot holds, relative to it, with `/` separators. */
export function snapshotFiles(directory: string): string[] {
  const files: string[] = ["silk.json", join("coordinator", "data.mdb")];
  for (const partition of readdirSync(join(directory, "partitions"))) {
    const folder = join(directory, "partitions", partition);
    files.push(relative(directory, join(folder, "data.mdb")));
    const graphs = join(folder, "vector-graphs");
    if (existsSync(graphs)) for (const name of readdirSync(graphs)) if (name.endsWith(".graph")) files.push(relative(directory, join(graphs, name)));
  }
  return files.map((file) => file.split("\\").join("/"));
}

/**
 * Uploads a database directory that nothing writes (closed, or a copy) as the snapshot of segment `seq`, then names
 * it in the manifest. Answers the manifest as advanced; `writer_fenced` when another writer changed it.
 */
export async function uploadSnapshot(store: ObjectStore, directory: string, seq: number, manifest: ManifestVersion, now: Date, partBytes: number): Promise<ManifestVersion> {
  const folder = snapshotFolder(seq, manifest.manifest.epoch);
  const files = snapshotFiles(directory);
  for (const file of files) {
    // The folder is this writer's alone: a refusal is an earlier try of this very upload. A file over `partBytes` goes
    // up in parts (ObjectStore.putFile).
    await store.putFile(`${folder}/${file}`, join(directory, file), partBytes);
  }
  await store.putIfAbsent(`${folder}/files.json`, new TextEncoder().encode(JSON.stringify(files)));
  const takenAt = now.toISOString();
  const snapshots = [...snapshotsOf(manifest.manifest).filter((entry) => entry.folder !== folder), { seq, folder, takenAt }];
  return advanceManifest(store, manifest, { ...manifest.manifest, snapshot: seq, snapshotFolder: folder, snapshots, updatedAt: takenAt });
}

/**
 * Retention: once a snapshot is `retentionMs` old, the snapshots before it and the segments up to it go. The manifest
 * moves first (`retainFrom`, the snapshots left), then the objects are deleted; a crash between the two leaves
 * objects that the next pass finds by listing. Answers the manifest as it is now.
 */
export async function applyRetention(store: ObjectStore, manifest: ManifestVersion, now: Date, retentionMs: number): Promise<ManifestVersion> {
  const snapshots = snapshotsOf(manifest.manifest);
  let ripe = -1;
  snapshots.forEach((entry, index) => {
    if (Date.parse(entry.takenAt) + retentionMs <= now.getTime()) ripe = index;
  });
  if (ripe < 0) return manifest;
  const kept = snapshots[ripe]!;
  let current = manifest;
  if (ripe > 0 || current.manifest.retainFrom < kept.seq + 1) {
    current = await advanceManifest(store, current, { ...current.manifest, snapshots: snapshots.slice(ripe), retainFrom: Math.max(current.manifest.retainFrom, kept.seq + 1), updatedAt: now.toISOString() });
  }
  await store.delete(await namesBelow(store, "segments", segmentName(current.manifest.retainFrom)));
  // Strictly older than the snapshot kept: a folder at or after it may be a newer writer's upload in progress.
  const oldSnapshots: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = await store.list("snapshots", after);
    if (page.length === 0) break;
    for (const name of page) {
      const seq = folderSegment(name);
      if (seq !== undefined && seq < kept.seq) oldSnapshots.push(name);
    }
    if (page.some((name) => (folderSegment(name) ?? 0) >= kept.seq)) break;
    after = page[page.length - 1];
  }
  await store.delete(oldSnapshots);
  return current;
}

/** The names under `folder` that sort before `limit`, in order. */
async function namesBelow(store: ObjectStore, folder: string, limit: string): Promise<string[]> {
  const names: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = await store.list(folder, after);
    const below = page.filter((name) => name < limit);
    names.push(...below);
    if (below.length < page.length || page.length === 0) return names;
    after = page[page.length - 1];
  }
}

export interface BucketSnapshotterOptions {
  readonly store: ObjectStore;
  /** The cache: the copy is made in a folder of it. */
  readonly directory: string;
  readonly stores: readonly PartitionStore[];
  readonly decisions: LmdbDecisionLog;
  readonly shipper: SegmentShipper;
  /** The manifest the writer claimed at open. */
  readonly manifest: ManifestVersion;
  readonly everySegments: number;
  readonly everyBytes: number;
  readonly retentionMs: number;
  /** A snapshot file larger than this is uploaded in parts of this size. */
  readonly partBytes: number;
  readonly now: () => Date;
  /** The clock the retry backoff is measured on; default `performance.now`. */
  readonly clockMs?: () => number;
}

export interface SnapshotterStatus {
  /** The segment of the manifest's snapshot (0: none yet). */
  readonly snapshot: number;
  /** Whether a snapshot is being taken now. */
  readonly snapshotting: boolean;
  /** The last snapshot's or retention pass's failure; cleared by the next that succeeds. */
  readonly lastSnapshotError?: string;
  /** Snapshots (or retention passes) that failed in a row; the next is tried after SNAPSHOT_RETRY_BACKOFF. */
  readonly snapshotFailures: number;
}

/** A writer's snapshots while it serves, and retention after each. One at a time; a failed one is tried again when next due. */
export class BucketSnapshotter {
  private manifest: ManifestVersion;
  /** Bytes of segments stored since the manifest's snapshot was sealed. */
  private bytesSince = 0;
  private running: Promise<void> | undefined;
  private stopped = false;
  /** A deposed writer takes no more snapshots. */
  private fenced = false;
  private lastError: string | undefined;
  /** Failures in a row, and the instant (on `clockMs`) before which no snapshot starts after the last one. */
  private failures = 0;
  private retryAtMs = 0;
  private readonly clockMs: () => number;

  constructor(private readonly options: BucketSnapshotterOptions) {
    this.manifest = options.manifest;
    this.clockMs = options.clockMs ?? (() => performance.now());
  }

  /** The manifest as this writer last wrote it (its ETag is the one a further update must name). */
  current(): ManifestVersion {
    return this.manifest;
  }

  status(): SnapshotterStatus {
    return {
      snapshot: this.manifest.manifest.snapshot,
      snapshotting: this.running !== undefined,
      ...(this.lastError === undefined ? {} : { lastSnapshotError: this.lastError }),
      snapshotFailures: this.failures,
    };
  }

  /** The shipper stored a segment: a snapshot starts in the background when one is due and no failure's backoff runs. */
  shipped(seq: number, bytes: number): void {
    this.bytesSince += bytes;
    const due = seq - this.manifest.manifest.snapshot >= this.options.everySegments || this.bytesSince >= this.options.everyBytes;
    if (due && this.clockMs() >= this.retryAtMs) this.start();
  }

  /** Takes a snapshot now unless one is running (then waits for it); throws what it failed with. */
  async take(): Promise<void> {
    if (this.running !== undefined) return this.running;
    if (this.fenced) throw new SilkError("writer_fenced", "this writer was deposed: it takes no more snapshots");
    this.running = this.snapshot().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Waits for a snapshot in progress and starts no more (before the stores close). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running?.catch(() => undefined);
  }

  /** Closing writer, its stores closed: retention of what the close's snapshot (if any) made old. */
  async retain(manifest: ManifestVersion): Promise<void> {
    this.manifest = await applyRetention(this.options.store, manifest, this.options.now(), this.options.retentionMs);
  }

  private start(): void {
    if (this.running !== undefined || this.stopped || this.fenced) return;
    this.take().catch(() => undefined);
  }

  private async snapshot(): Promise<void> {
    const { store, directory, stores, decisions, shipper } = this.options;
    const seq = shipper.sealedSegment();
    const scratch = join(directory, SNAPSHOT_SCRATCH);
    try {
      if (seq > this.manifest.manifest.snapshot) {
        const bytesAtStart = this.bytesSince;
        rmSync(scratch, { recursive: true, force: true });
        mkdirSync(scratch, { recursive: true });
        copyFileSync(join(directory, "silk.json"), join(scratch, "silk.json"));
        for (const [partition, partitionStore] of stores.entries()) {
          const into = join(scratch, "partitions", `p${partition}`);
          mkdirSync(into, { recursive: true });
          await partitionStore.backup(into);
        }
        mkdirSync(join(scratch, "coordinator"));
        await decisions.backup(join(scratch, "coordinator"));
        // The copy may hold records staged after `seq`: it is named only once they are all in the bucket.
        await shipper.flush();
        this.manifest = await uploadSnapshot(store, scratch, seq, this.manifest, this.options.now(), this.options.partBytes);
        this.bytesSince = Math.max(0, this.bytesSince - bytesAtStart);
      }
      this.manifest = await applyRetention(store, this.manifest, this.options.now(), this.options.retentionMs);
      this.lastError = undefined;
      this.failures = 0;
      this.retryAtMs = 0;
    } catch (cause) {
      const failure = asSilkError(cause);
      if (failure.code === "writer_fenced") this.fenced = true;
      this.lastError = failure.message;
      this.retryAtMs = this.clockMs() + backoffMs(SNAPSHOT_RETRY_BACKOFF, this.failures);
      this.failures += 1;
      throw failure;
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
}
