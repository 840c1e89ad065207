/**
 * A database whose truth is a bucket (docs/STORAGE.md): the option `storage: { s3 }` checked, the local cache
 * (`cacheDir`) judged and restored, segments replayed into it, snapshots taken and downloaded. The writer's shipping
 * is segment-shipper.ts; the follow loop of a read-only handle is bucket-follower.ts; runtime/embedded.ts puts them
 * together at open.
 *
 * The cache is an ordinary database directory (`silk.json`, `partitions/p<i>/`, `coordinator/`) plus `cache.json`,
 * which says whose cache it is (bucket and prefix), which writer epoch last wrote it, whether that writer closed it
 * cleanly, and the last segment it holds whole. A cache is used as it is only when it cannot hold a change the bucket
 * lacks: a follower's (it applies only what it read from the bucket), a writer's closed cleanly with the epoch the
 * bucket still names, or a `local`-durability writer's of that epoch (its outbox holds whatever it applied and did not
 * ship). Any other cache is emptied and restored from the latest snapshot plus the segments after it.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { SilkError } from "../protocol/errors.js";
import { writeFileAtomic } from "../platform/durable-files.js";
import { applyLogEntry } from "../node/store/log-entry.js";
import type { PartitionStore } from "../node/store/partition-store.js";
import type { DecisionStore } from "../cluster/decision-log.js";
import { RETENTION_MS, SNAPSHOT_EVERY_BYTES, SNAPSHOT_EVERY_SEGMENTS, SNAPSHOT_SCRATCH } from "./bucket-snapshots.js";
import { OBJECT_PART_BYTES, OBJECT_PART_BYTES_MIN, ObjectStore } from "./object-store.js";
import { decodeSegment, recordSequence, segmentName, type Segment } from "./segment-log.js";
import type { Durability } from "./segment-shipper.js";

export interface S3Storage {
  readonly bucket: string;
  /** The database's key prefix in the bucket ("" or absent: the bucket's root); no leading or trailing `/`. */
  readonly prefix?: string;
  /** An S3-compatible endpoint (path-style), e.g. http://127.0.0.1:7480; absent: AWS S3 in `region`. */
  readonly endpoint?: string;
  /** Absent: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1. */
  readonly region?: string;
  /** Absent: the AWS SDK's default chain (environment variables, ~/.aws/config and ~/.aws/credentials). */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string };
  /** The local working copy; absent: a folder under the OS temporary directory named after endpoint, bucket, prefix and mode. */
  readonly cacheDir?: string;
  /** A writer's: `object` (default) acknowledges once the commit's segment is in the bucket; `local` once it is on local disk. */
  readonly durability?: Durability;
  /** A writer snapshots (while it serves, and at close) once this many segments were stored since the last snapshot (default 1,000). */
  readonly snapshotEverySegments?: number;
  /** ... or once this many bytes of segments were (default 64 MiB), whichever comes first. */
  readonly snapshotEveryBytes?: number;
  /**
   * How long a superseded snapshot, and the segments a newer snapshot covers, stay in the bucket (default 24 h; 0:
   * deleted as soon as a newer snapshot is in). A follower less than this far behind never needs to restore again.
   */
  readonly retentionMs?: number;
  /** A follower's poll interval (default 1,000 ms). */
  readonly followIntervalMs?: number;
  /**
   * How long one request to the store may take, its retries included, before it fails `storage_unavailable` (default
   * 10,000 ms). A write waiting for its segment waits at most this long per PUT.
   */
  readonly requestDeadlineMs?: number;
  /** Tries of one request (the first and its retries) for retryable failures: 500, 503, throttling, dropped connections (default 5). */
  readonly maxAttempts?: number;
  /**
   * A snapshot file larger than this is uploaded in parts of this size (S3 multipart upload: one part in memory at a
   * time, each part its own request); default 64 MiB, at least 5 MiB (S3's smallest part).
   */
  readonly snapshotPartBytes?: number;
}

export const FOLLOW_INTERVAL_MS = 1_000;
const S3_KEYS = new Set(["bucket", "prefix", "endpoint", "region", "credentials", "cacheDir", "durability", "snapshotEverySegments", "snapshotEveryBytes", "retentionMs", "followIntervalMs", "requestDeadlineMs", "maxAttempts", "snapshotPartBytes"]);
const CACHE_STATE = "cache.json";
/** What a cache holds besides its state file: everything a restore replaces. */
const CACHE_ENTRIES = ["silk.json", "partitions", "coordinator", "outbox", SNAPSHOT_SCRATCH];
/** Segments fetched at once while replaying. */
const FETCH_AHEAD = 8;

/** Checks `storage.s3` and answers it with its defaults; every refusal is `invalid_option` naming the field. */
export function checkS3Storage(
  value: unknown,
  mode: "writer" | "readonly",
): Required<Pick<S3Storage, "bucket" | "prefix" | "cacheDir" | "durability" | "snapshotEverySegments" | "snapshotEveryBytes" | "retentionMs" | "followIntervalMs" | "snapshotPartBytes">> & S3Storage {
  const refuse = (message: string): never => {
    throw new SilkError("invalid_option", `storage.s3.${message}`);
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new SilkError("invalid_option", "storage.s3 must be an object: { bucket, prefix?, endpoint?, region?, credentials?, cacheDir?, durability? }");
  }
  const s3 = value as Record<string, unknown>;
  for (const key of Object.keys(s3)) if (!S3_KEYS.has(key)) refuse(`${key} is not an option (the options: ${[...S3_KEYS].join(", ")})`);
  // S3's bucket naming rules: 3 to 63 lower-case letters, digits, dots and hyphens, beginning and ending with a letter or digit.
  if (typeof s3.bucket !== "string" || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(s3.bucket)) refuse("bucket must be an S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens)");
  const prefix = s3.prefix ?? "";
  if (typeof prefix !== "string" || /^\/|\/$|\/\//.test(prefix)) refuse("prefix must be a key prefix without a leading or trailing / (\"\" for the bucket's root)");
  if (s3.endpoint !== undefined) {
    let url: URL | undefined;
    try {
      url = typeof s3.endpoint === "string" ? new URL(s3.endpoint) : undefined;
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) refuse(`endpoint must be an http:// or https:// URL (got ${JSON.stringify(s3.endpoint)})`);
  }
  if (s3.region !== undefined && (typeof s3.region !== "string" || s3.region === "")) refuse("region must be a region name such as us-east-1");
  if (s3.credentials !== undefined) {
    const credentials = s3.credentials as Record<string, unknown> | null;
    if (typeof credentials !== "object" || credentials === null || typeof credentials.accessKeyId !== "string" || typeof credentials.secretAccessKey !== "string" || (credentials.sessionToken !== undefined && typeof credentials.sessionToken !== "string")) {
      refuse("credentials must be { accessKeyId, secretAccessKey, sessionToken? } (strings); leave it out to use the AWS environment variables and config files");
    }
  }
  if (s3.cacheDir !== undefined && (typeof s3.cacheDir !== "string" || s3.cacheDir === "")) refuse("cacheDir must be a directory path");
  if (s3.durability !== undefined && s3.durability !== "object" && s3.durability !== "local") refuse('durability must be "object" or "local"');
  if (s3.durability !== undefined && mode === "readonly") refuse("durability is a writer's option; a read-only handle writes nothing");
  for (const key of ["snapshotEverySegments", "snapshotEveryBytes", "followIntervalMs", "requestDeadlineMs", "maxAttempts"] as const) {
    const number = s3[key];
    if (number !== undefined && (!Number.isSafeInteger(number) || (number as number) < 1)) refuse(`${key} must be a positive integer`);
  }
  if (s3.snapshotPartBytes !== undefined && (!Number.isSafeInteger(s3.snapshotPartBytes) || (s3.snapshotPartBytes as number) < OBJECT_PART_BYTES_MIN)) {
    refuse(`snapshotPartBytes must be a whole number of bytes, at least ${OBJECT_PART_BYTES_MIN} (5 MiB, S3's smallest part)`);
  }
  if (s3.retentionMs !== undefined && (!Number.isSafeInteger(s3.retentionMs) || (s3.retentionMs as number) < 0)) refuse("retentionMs must be a whole number of milliseconds, 0 or more");
  const storage = s3 as unknown as S3Storage;
  const identity = createHash("sha256").update(`${storage.endpoint ?? "aws"}\n${storage.bucket}\n${prefix}`).digest("hex").slice(0, 16);
  return {
    ...storage,
    prefix: prefix as string,
    cacheDir: storage.cacheDir ?? join(tmpdir(), "silk-s3", `${identity}-${mode}`),
    durability: storage.durability ?? "object",
    snapshotEverySegments: storage.snapshotEverySegments ?? SNAPSHOT_EVERY_SEGMENTS,
    snapshotEveryBytes: storage.snapshotEveryBytes ?? SNAPSHOT_EVERY_BYTES,
    retentionMs: storage.retentionMs ?? RETENTION_MS,
    followIntervalMs: storage.followIntervalMs ?? FOLLOW_INTERVAL_MS,
    snapshotPartBytes: storage.snapshotPartBytes ?? OBJECT_PART_BYTES,
  };
}

export function objectStoreOf(storage: S3Storage): ObjectStore {
  return new ObjectStore({
    bucket: storage.bucket,
    prefix: storage.prefix ?? "",
    ...(storage.endpoint === undefined ? {} : { endpoint: storage.endpoint }),
    ...(storage.region === undefined ? {} : { region: storage.region }),
    ...(storage.credentials === undefined ? {} : { credentials: storage.credentials }),
    ...(storage.requestDeadlineMs === undefined ? {} : { requestDeadlineMs: storage.requestDeadlineMs }),
    ...(storage.maxAttempts === undefined ? {} : { maxAttempts: storage.maxAttempts }),
  });
}

/** cache.json. */
export interface CacheState {
  readonly bucket: string;
  readonly prefix: string;
  readonly role: "writer" | "follower";
  /** The writer epoch that last wrote it (a writer's cache). */
  readonly epoch: number;
  /** A writer's: it closed and everything it applied is in the bucket. */
  readonly clean: boolean;
  /** The last segment the cache holds whole (0: none). */
  readonly position: number;
  /** A writer's durability: a `local` writer's outbox holds what it applied and did not ship. */
  readonly durability?: Durability;
}

export function readCacheState(directory: string): CacheState | undefined {
  const path = join(directory, CACHE_STATE);
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, "utf8")) as CacheState;
  } catch {
    return undefined;
  }
}

export function writeCacheState(directory: string, state: CacheState): void {
  writeFileAtomic(join(directory, CACHE_STATE), JSON.stringify(state, null, 2) + "\n");
}

/**
 * Refuses a cacheDir that holds something other than a Silk cache of this bucket and prefix: a restore empties it, and
 * Silk deletes only what it wrote.
 */
export function checkCacheOwner(directory: string, storage: S3Storage, state: CacheState | undefined): void {
  if (!existsSync(directory)) return;
  const entries = readdirSync(directory).filter((name) => name !== "writer.lock");
  if (entries.length === 0) return;
  if (state === undefined) {
    throw new SilkError("invalid_option", `storage.s3.cacheDir ${directory} is not empty and is no Silk cache (it has no ${CACHE_STATE}): give an empty or new directory`);
  }
  if (state.bucket !== storage.bucket || state.prefix !== (storage.prefix ?? "")) {
    throw new SilkError("invalid_option", `storage.s3.cacheDir ${directory} is the cache of s3://${state.bucket}/${state.prefix}, not of s3://${storage.bucket}/${storage.prefix ?? ""}: give each database its own cacheDir`);
  }
}

/** Empties the cache of everything a restore replaces. */
export function emptyCache(directory: string): void {
  for (const entry of [...CACHE_ENTRIES, CACHE_STATE]) rmSync(join(directory, entry), { recursive: true, force: true });
}

/** Downloads the manifest's snapshot into `directory` (written beside it, then moved into place). */
export async function downloadSnapshot(store: ObjectStore, folder: string, directory: string): Promise<void> {
  const list = await store.get(`${folder}/files.json`);
  if (list === undefined) throw new SilkError("storage_unavailable", `the snapshot ${folder} named by the manifest in bucket ${JSON.stringify(store.bucket)} has no files.json: the bucket is damaged`);
  const files = JSON.parse(new TextDecoder().decode(list.body)) as string[];
  const staging = `${directory}.restore-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  for (const file of files) {
    const object = await store.get(`${folder}/${file}`);
    if (object === undefined) throw new SilkError("storage_unavailable", `the snapshot ${folder} in bucket ${JSON.stringify(store.bucket)} lacks ${file}: the bucket is damaged`);
    const path = join(staging, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, object.body);
  }
  mkdirSync(directory, { recursive: true });
  for (const entry of readdirSync(staging)) renameSync(join(staging, entry), join(directory, entry));
  rmSync(staging, { recursive: true, force: true });
}

/** Reads segment `seq`; undefined when it is not (yet) in the bucket. */
export async function readSegment(store: ObjectStore, seq: number): Promise<Segment | undefined> {
  const object = await store.get(segmentName(seq));
  return object === undefined ? undefined : decodeSegment(object.body, seq, store.bucket);
}

/**
 * Applies a segment's records to the cache, each partition's entries with their log position so that a partition
 * that already holds one skips it; decisions go to the local decision log (written once: a repeat is no change).
 */
export async function applySegment(segment: Segment, stores: readonly PartitionStore[], decisions: DecisionStore | undefined): Promise<void> {
  for (const [index, record] of segment.records.entries()) {
    if ("decision" in record) {
      if (decisions !== undefined) await decisions.decide(record.decision.txid, record.decision.outcome, record.decision.participants);
      continue;
    }
    const store = stores[record.partition];
    if (store === undefined) throw new SilkError("storage_unavailable", `${segmentName(segment.seq)} names partition ${record.partition}, which this database does not have: the bucket is damaged`);
    const sequence = recordSequence(segment.seq, index);
    if (sequence <= store.appliedLogSequence()) continue;
    try {
      applyLogEntry(store, record.entry, sequence);
    } catch (cause) {
      // A user error was the entry's outcome on the writer too (no effect; its position is recorded).
      if (!(cause instanceof SilkError && cause.kind === "user")) throw cause;
    }
  }
}

/**
 * The segments after `after` that the bucket holds, in order, read a few at a time (a segment that is not there
 * ends the run: segments are written one at a time, in order, so the log has no gaps).
 */
export async function readSegmentsAfter(store: ObjectStore, after: number, limit = Number.MAX_SAFE_INTEGER): Promise<Segment[]> {
  const segments: Segment[] = [];
  for (let next = after + 1; segments.length < limit; next += FETCH_AHEAD) {
    const window = await Promise.all(Array.from({ length: FETCH_AHEAD }, (_, i) => readSegment(store, next + i)));
    for (const segment of window) {
      if (segment === undefined) return segments;
      segments.push(segment);
    }
  }
  return segments;
}
