/**
 * `silk backup` and `silk restore` (docs/STORAGE.md, "Backup and restore"): a database directory on disk copied into
 * a bucket prefix as a bucket database (a snapshot and a manifest that `open({ storage: { s3 } })` opens), and a bucket
 * database copied into a fresh directory that `open({ storage: { disk } })` opens.
 *
 * Backup copies a directory that a server may be running on: each LMDB environment is copied from one read
 * transaction of its own (lmdb-js `backup`, as the bucket writer's snapshots are), the vector graph files before their
 * partition. The partitions are copied one after another, so beside a writer a transaction across partitions could
 * be missing from one copy (copied before it prepared there) and applied in another (copied after it committed), and
 * nothing in the copies tells it: a database of several partitions is copied under its writer lock, and refused with
 * `writer_locked` while a writer runs. A database of one partition has no such transactions and backs up while it
 * runs.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { open as openLmdb } from "lmdb";
import { SilkError } from "../protocol/errors.js";
import { PartitionStore } from "../node/store/partition-store.js";
import { GRAPH_FOLDER, isGraphFileName } from "../node/indexes/vector-graph-files.js";
import { LmdbDecisionLog } from "../cluster/decision-log.js";
import { createManifest, MANIFEST_FORMAT, readManifest } from "./bucket-manifest.js";
import { snapshotFiles, snapshotFolder } from "./bucket-snapshots.js";
import { checkS3Storage, objectStoreOf, type S3Storage } from "./bucket-storage.js";
import { Database } from "./embedded.js";
import { acquireWriterLock, type WriterLock } from "./writer-lock.js";
import { segmentOf } from "./segment-log.js";
import type { ObjectStore } from "./object-store.js";

export interface BackupReport {
  /** The segment the snapshot stands for: a writer that opens the prefix ships from the next one. */
  readonly snapshot: number;
  readonly files: number;
  readonly bytes: number;
  readonly partitions: number;
}

function where(storage: S3Storage): string {
  return `s3://${storage.bucket}/${storage.prefix ?? ""}`;
}

/** Refuses a prefix that holds anything Silk would write (a manifest, segments, snapshots). */
async function refuseNonEmptyPrefix(store: ObjectStore, storage: S3Storage): Promise<void> {
  const taken = (await readManifest(store)) !== undefined || (await store.list("segments", undefined, 1)).length > 0 || (await store.list("snapshots", undefined, 1)).length > 0;
  if (taken) throw new SilkError("target_not_empty", `${where(storage)} already holds a Silk database (or part of one): back up into a new prefix`);
}

/** Copies one LMDB environment (another process may be writing it) from one read transaction. */
async function copyEnvironment(from: string, into: string): Promise<void> {
  mkdirSync(into, { recursive: true });
  const root = openLmdb({ path: from, readOnly: true, maxDbs: 16 });
  try {
    await root.backup(into, true);
  } finally {
    await root.close();
  }
}

/** One copy of the database directory into `into`: its partitions, then the decision log. */
async function copyDatabase(data: string, partitions: number, into: string): Promise<void> {
  copyFileSync(join(data, "silk.json"), join(into, "silk.json"));
  for (let partition = 0; partition < partitions; partition += 1) {
    const from = join(data, "partitions", `p${partition}`);
    const to = join(into, "partitions", `p${partition}`);
    const graphs = join(from, GRAPH_FOLDER);
    if (existsSync(graphs)) {
      mkdirSync(join(to, GRAPH_FOLDER), { recursive: true });
      for (const name of readdirSync(graphs)) if (isGraphFileName(name)) copyFileSync(join(graphs, name), join(to, GRAPH_FOLDER, name));
    }
    await copyEnvironment(from, to);
  }
  const coordinator = join(into, "coordinator");
  if (existsSync(join(data, "coordinator", "data.mdb"))) await copyEnvironment(join(data, "coordinator"), coordinator);
  // A database that never ran a transaction across partitions may have no decision log yet: the copy gets an empty one.
  if (!existsSync(join(coordinator, "data.mdb"))) await new LmdbDecisionLog(coordinator, { readOnly: false, noSync: false }).close();
}

/** The writer lock of a database of several partitions, held while it is copied (the module comment says why). */
function lockForCopy(data: string, partitions: number): WriterLock {
  try {
    return acquireWriterLock(data);
  } catch (cause) {
    if (!(cause instanceof SilkError) || cause.code !== "writer_locked") throw cause;
    throw new SilkError(
      "writer_locked",
      `${data} has ${partitions} partitions and a writer runs on it: stop it to back the database up (a copy taken beside it could hold a transaction across partitions half-way; a database of one partition backs up while it runs)`,
    );
  }
}

/**
 * Copies the database in `data` (a server may be running on it) into the empty prefix `storage` names, as a bucket
 * database whose snapshot is the copy: its manifest is created last, with `If-None-Match`.
 */
export async function backupToBucket(data: string, s3: S3Storage, now: Date): Promise<BackupReport> {
  const storage = checkS3Storage(s3, "writer");
  const manifestPath = join(data, "silk.json");
  if (!existsSync(manifestPath)) throw new SilkError("invalid_option", `${data} holds no Silk database (no silk.json)`);
  const { partitions } = JSON.parse(readFileSync(manifestPath, "utf8")) as { partitions: number };
  const store = objectStoreOf(storage);
  const scratch = mkdtempSync(join(tmpdir(), "silk-backup-"));
  try {
    await refuseNonEmptyPrefix(store, storage);
    const copy = join(scratch, "copy");
    mkdirSync(copy);
    const lock = partitions > 1 ? lockForCopy(data, partitions) : undefined;
    try {
      await copyDatabase(data, partitions, copy);
    } finally {
      lock?.release();
    }
    // A directory that was itself a bucket database's cache holds log positions: the new log starts after them.
    let snapshot = 0;
    for (let partition = 0; partition < partitions; partition += 1) {
      snapshot = Math.max(snapshot, segmentOf(PartitionStore.appliedLogSequenceAt(join(copy, "partitions", `p${partition}`)) ?? 0));
    }
    const folder = snapshotFolder(snapshot, 0);
    const files = snapshotFiles(copy);
    let bytes = 0;
    for (const file of files) {
      bytes += statSync(join(copy, file)).size;
      const answer = await store.putFile(`${folder}/${file}`, join(copy, file), storage.snapshotPartBytes);
      if (answer.outcome === "precondition_failed") throw new SilkError("target_not_empty", `another backup or writer is writing ${where(storage)}: back up into a new prefix`);
    }
    await store.putIfAbsent(`${folder}/files.json`, new TextEncoder().encode(JSON.stringify(files)));
    const takenAt = now.toISOString();
    try {
      await createManifest(store, { format: MANIFEST_FORMAT, partitions, epoch: 0, snapshot, snapshotFolder: folder, snapshots: [{ seq: snapshot, folder, takenAt }], retainFrom: snapshot + 1, updatedAt: takenAt });
    } catch (cause) {
      if (cause instanceof SilkError && cause.code === "writer_fenced") throw new SilkError("target_not_empty", `a writer created a database in ${where(storage)} while the backup uploaded: back up into a new prefix`);
      throw cause;
    }
    return { snapshot, files: files.length, bytes, partitions };
  } finally {
    store.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

export interface RestoreReport {
  /** The last segment the restored directory holds. */
  readonly position: number;
  readonly partitions: number;
}

/**
 * Copies the bucket database `storage` names (its newest snapshot and every segment after it, up to a point where no
 * transaction is half-applied) into `data`, which must be empty or absent. The copy is made beside it by a read-only
 * handle, then renamed into place: a failed restore leaves `data` as it was.
 */
export async function restoreFromBucket(s3: S3Storage, data: string): Promise<RestoreReport> {
  if (existsSync(data) && (!statSync(data).isDirectory() || readdirSync(data).length > 0)) {
    throw new SilkError("target_not_empty", `${data} is not an empty directory: restore into a new one (Silk never overwrites a database)`);
  }
  const staging = join(dirname(data), `.${basename(data)}.restore-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  try {
    const db = await Database.open({ storage: { s3: { ...s3, cacheDir: staging } }, mode: "readonly" });
    const status = db.status();
    await db.close();
    const position = status.storage === "s3" && status.mode === "readonly" ? status.s3.position : 0;
    // What makes it a bucket cache; the rest is an ordinary database directory.
    rmSync(join(staging, "cache.json"), { force: true });
    rmSync(join(staging, "writer.lock"), { force: true });
    const { partitions } = JSON.parse(readFileSync(join(staging, "silk.json"), "utf8")) as { partitions: number };
    if (existsSync(data)) rmSync(data, { recursive: true });
    renameSync(staging, data);
    return { position, partitions };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

