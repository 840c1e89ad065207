/**
 * Snapshots of a partition and the truncation of its log (docs/CLUSTER.md, "Snapshots and log truncation").
 *
 * - A snapshot is a consistent copy of one replica's store (node/store/partition-store.ts `backup`: its vector graph files,
 *   then LMDB's compacted copy from one read transaction) and the log sequence S that copy applied, packed as one
 *   object `p<i>/<S>` of the cluster's JetStream Object Store bucket (cluster/nats/object-store.ts): the magic
 *   `SILKSNP1`, a u32 header length, the header (JSON: format, cluster, partition, sequence, each file's path and
 *   size), the files' bytes. The object store's SHA-256 digest covers it all.
 * - The leader takes them (cluster/nats/replica.ts), when the log grew by `everyEntries` entries or about
 *   `everyBytes` bytes since the latest one. After a snapshot it keeps the `keep` newest of its partition, deletes
 *   older ones, and, once `keep` exist, purges the log below the oldest one kept (never its last entry: a leader's
 *   append is guarded by the stream's last sequence).
 * - A replica whose directory holds no store, or a store the log no longer reaches (applied + 1 below the log's first
 *   sequence), is bootstrapped before its store opens (`bootstrapReplica`): the latest snapshot is downloaded,
 *   checked (digest, format, partition, the sequence its LMDB holds) and put in place; the replica then follows the
 *   log from S + 1.
 *
 * Invariants: a snapshot holds only committed entries (a replica applies only entries JetStream stored), whole (LMDB
 * applies an entry in one transaction, with its sequence). Prepared two-phase-commit intents live in the store's
 * `intents` database, so an intent prepared at or before S is in the snapshot and its decision (after S) in the
 * log. The log always holds every entry after the newest snapshot: it is purged only below a snapshot kept, and a
 * snapshot is deleted only once `keep` newer ones exist.
 */
import { createReadStream, existsSync, mkdirSync, openSync, closeSync, readSync, renameSync, rmSync, statSync, writeSync, mkdtempSync, readdirSync } from "node:fs";
import { open as openFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { dirname, join } from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from "@nats-io/jetstream";
import type { Logger } from "pino";
import { SilkError } from "../../protocol/errors.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { GRAPH_FOLDER, isGraphFileName } from "../../node/indexes/vector-graph-files.js";
import { ObjectBucket } from "./object-store.js";
import { whileUnanswered } from "./partition-log.js";
import { subjects } from "./subjects.js";

/** When the leader snapshots, and how many snapshots it keeps (the log is kept from the oldest of them). */
export interface SnapshotPolicy {
  /** Log entries since the latest snapshot that make the next one due. */
  readonly everyEntries: number;
  /** Log bytes (estimated from the stream's mean entry size) since the latest snapshot that make the next one due. */
  readonly everyBytes: number;
  /** Snapshots kept per partition (at least 1); the log is purged below the oldest of them. */
  readonly keep: number;
}

export const DEFAULT_SNAPSHOT_POLICY: SnapshotPolicy = { everyEntries: 50_000, everyBytes: 256 * 1024 * 1024, keep: 2 };

const SNAPSHOT_MAGIC = Buffer.from("SILKSNP1", "latin1");
const SNAPSHOT_FORMAT = 1;
const HEADER_LENGTH_BYTES = 4;
/** The files of a store a snapshot carries: LMDB's data file and the vector graph files. */
const DATA_FILE = "data.mdb";
/** Where a bootstrap unpacks, inside the replica's directory, before the files move into place. */
const RESTORE_FOLDER = "snapshot-restore";
/** How many times a bootstrap takes the latest snapshot again when the log moved past the one it downloaded. */
const RESTORE_ATTEMPTS = 3;
const RESTORE_RETRY_MS = 1_000;
const COPY_BYTES = 1024 * 1024;

/** Checks a policy given in cluster.json or an option: positive integers, `keep` from 1 to 16. */
export function checkSnapshotPolicy(value: unknown, source: string): SnapshotPolicy {
  const bad = (why: string): never => {
    throw new SilkError("invalid_option", `${source}: ${why}`);
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) return bad("snapshots must be an object of everyEntries, everyBytes and keep");
  const given = value as Record<string, unknown>;
  for (const key of Object.keys(given)) if (!["everyEntries", "everyBytes", "keep"].includes(key)) bad(`snapshots has no option ${JSON.stringify(key)} (everyEntries, everyBytes, keep)`);
  const policy = { ...DEFAULT_SNAPSHOT_POLICY, ...given } as Record<keyof SnapshotPolicy, unknown>;
  for (const key of ["everyEntries", "everyBytes"] as const) {
    if (!Number.isSafeInteger(policy[key]) || (policy[key] as number) < 1) bad(`snapshots.${key} must be a positive integer, not ${JSON.stringify(policy[key])}`);
  }
  if (!Number.isInteger(policy.keep) || (policy.keep as number) < 1 || (policy.keep as number) > 16) bad(`snapshots.keep must be an integer from 1 to 16, not ${JSON.stringify(policy.keep)}`);
  return policy as unknown as SnapshotPolicy;
}

/** One snapshot of a partition in the bucket. */
export interface SnapshotRecord {
  readonly name: string;
  readonly partition: number;
  readonly sequence: number;
  readonly bytes: number;
}

interface SnapshotHeader {
  readonly format: number;
  readonly cluster: string;
  readonly partition: number;
  readonly sequence: number;
  readonly files: readonly { readonly path: string; readonly bytes: number }[];
}

const objectName = (partition: number, sequence: number): string => `p${partition}/${sequence}`;

function recordOf(name: string, bytes: number): SnapshotRecord | undefined {
  const match = /^p([0-9]+)\/([0-9]+)$/.exec(name);
  return match === null ? undefined : { name, partition: Number(match[1]), sequence: Number(match[2]), bytes };
}

/** How long a snapshot took and what it holds. */
export interface SnapshotTaken extends SnapshotRecord {
  /** Copying the store (graph files and LMDB), packing excluded. */
  readonly copyMs: number;
  /** Packing and uploading. */
  readonly uploadMs: number;
  /** Log entries purged after it. */
  readonly purged: number;
}

export interface PartitionSnapshotsOptions {
  readonly nc: NatsConnection;
  readonly cluster: string;
  readonly partition: number;
  /** The bucket's num_replicas (as the log's). */
  readonly replicas: number;
  /** Where copies are made before they are packed (default: the system's temporary folder). */
  readonly scratch?: string;
}

/** A partition's snapshots in the cluster's bucket, and its log's truncation. */
export class PartitionSnapshots {
  private constructor(
    private readonly options: PartitionSnapshotsOptions,
    private readonly bucket: ObjectBucket,
  ) {}

  static async open(options: PartitionSnapshotsOptions): Promise<PartitionSnapshots> {
    return new PartitionSnapshots(options, await ObjectBucket.open(options.nc, subjects.snapshotBucket(options.cluster), options.replicas));
  }

  /** This partition's snapshots, oldest first. */
  async list(): Promise<SnapshotRecord[]> {
    return listSnapshots(this.bucket, this.options.partition);
  }

  /**
   * Copies `store`, uploads the copy (unless a snapshot at its sequence exists), keeps the `keep` newest snapshots and
   * purges the log below the oldest of them. Undefined when the copy's sequence already has a snapshot.
   */
  async take(store: PartitionStore, policy: SnapshotPolicy, shouldStop: () => boolean = () => false): Promise<SnapshotTaken | undefined> {
    const { cluster, partition } = this.options;
    const scratch = mkdtempSync(join(this.options.scratch ?? tmpdir(), "silk-snapshot-"));
    try {
      const started = performance.now();
      const copy = join(scratch, "store");
      mkdirSync(copy);
      const sequence = await store.backup(copy);
      const copied = performance.now();
      const existing = await this.list();
      if (existing.some((snapshot) => snapshot.sequence === sequence)) return undefined;
      const files = [DATA_FILE, ...(existsSync(join(copy, GRAPH_FOLDER)) ? readdirSync(join(copy, GRAPH_FOLDER)).map((name) => `${GRAPH_FOLDER}/${name}`) : [])];
      const header: SnapshotHeader = { format: SNAPSHOT_FORMAT, cluster, partition, sequence, files: files.map((path) => ({ path, bytes: statSync(join(copy, path)).size })) };
      const info = await this.bucket.put(objectName(partition, sequence), packed(copy, header, shouldStop), `silk partition ${partition} at log sequence ${sequence}`);
      const uploaded = performance.now();
      const kept = await this.prune(policy.keep);
      // Only once `keep` snapshots exist: the first snapshots leave the log whole, so a follower a few entries behind
      // the leader's copy is never cut off by it (it has everyEntries × (keep − 1) entries of slack).
      const purged = kept.length === policy.keep ? await this.truncate(kept[0]!.sequence) : 0;
      return { name: info.name, partition, sequence, bytes: info.size, copyMs: copied - started, uploadMs: uploaded - copied, purged };
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  /** Deletes all but the `keep` newest snapshots; answers those kept, oldest first. */
  private async prune(keep: number): Promise<SnapshotRecord[]> {
    const all = await this.list();
    const cut = Math.max(0, all.length - keep);
    for (const old of all.slice(0, cut)) await this.bucket.delete(old.name);
    return all.slice(cut);
  }

  /** Purges the log's entries below `sequence` + 1, keeping its last entry; answers how many went. */
  private async truncate(sequence: number): Promise<number> {
    const jsm = await jetstreamManager(this.options.nc);
    const stream = subjects.logStream(this.options.cluster, this.options.partition);
    const { first_seq: first, last_seq: last } = (await jsm.streams.info(stream)).state;
    const upTo = Math.min(sequence + 1, last);
    if (upTo <= first) return 0;
    return (await jsm.streams.purge(stream, { seq: upTo })).purged;
  }
}

async function listSnapshots(bucket: ObjectBucket, partition: number): Promise<SnapshotRecord[]> {
  const records: SnapshotRecord[] = [];
  for (const info of await bucket.list()) {
    const record = recordOf(info.name, info.size);
    if (record !== undefined && record.partition === partition) records.push(record);
  }
  return records.sort((a, b) => a.sequence - b.sequence);
}

/** The snapshot object's bytes: magic, header length, header, files (stopped between pieces when `shouldStop`). */
async function* packed(folder: string, header: SnapshotHeader, shouldStop: () => boolean): AsyncGenerator<Uint8Array> {
  const headerBytes = Buffer.from(JSON.stringify(header), "utf8");
  const length = Buffer.alloc(HEADER_LENGTH_BYTES);
  length.writeUInt32LE(headerBytes.byteLength);
  yield Buffer.concat([SNAPSHOT_MAGIC, length, headerBytes]);
  for (const file of header.files) {
    for await (const piece of createReadStream(join(folder, file.path), { highWaterMark: COPY_BYTES })) {
      if (shouldStop()) throw new SilkError("partition_unavailable", "the replica stopped while it uploaded a snapshot");
      yield piece as Buffer;
    }
  }
}

/** What `bootstrapReplica` did. */
export type BootstrapOutcome =
  /** The directory's store is kept: the log reaches it (or there is no log yet). */
  | { readonly kind: "kept"; readonly applied: number | undefined }
  /** The store was replaced by (or created from) snapshot `sequence`. */
  | { readonly kind: "restored"; readonly sequence: number; readonly bytes: number; readonly downloadMs: number; readonly replaced: boolean };

export interface BootstrapOptions {
  readonly nc: NatsConnection;
  readonly cluster: string;
  readonly partition: number;
  /** The replica's store directory (it may not exist yet); no store may be open on it. */
  readonly path: string;
  readonly logger: Logger;
}

/**
 * Before a replica opens its store: an empty directory gets the partition's latest snapshot, when there is one; a
 * store the log no longer reaches is replaced by it (see the module comment). A store the log reaches is kept.
 */
export async function bootstrapReplica(options: BootstrapOptions): Promise<BootstrapOutcome> {
  const { nc, cluster, partition, path, logger } = options;
  mkdirSync(path, { recursive: true });
  rmSync(join(path, RESTORE_FOLDER), { recursive: true, force: true }); // a bootstrap that died half-way
  const applied = PartitionStore.appliedLogSequenceAt(path);
  for (let attempt = 1; ; attempt += 1) {
    const first = await logFirstSequence(nc, cluster, partition);
    if (first === undefined) return { kind: "kept", applied };
    if (applied !== undefined && applied + 1 >= first) return { kind: "kept", applied };
    const bucket = await ObjectBucket.bind(nc, subjects.snapshotBucket(cluster));
    const latest = bucket === undefined ? undefined : (await listSnapshots(bucket, partition)).at(-1);
    if (latest === undefined || bucket === undefined) {
      if (first <= 1) return { kind: "kept", applied };
      throw new SilkError("log_truncated", `partition ${partition}'s log starts at sequence ${first} and no snapshot of it exists: this replica (applied ${applied ?? "nothing"}) cannot catch up`);
    }
    if (latest.sequence + 1 < first) {
      if (attempt < RESTORE_ATTEMPTS) {
        await sleep(RESTORE_RETRY_MS); // a snapshot listed before the newer one it was pruned for
        continue;
      }
      throw new SilkError("log_truncated", `partition ${partition}'s log starts at sequence ${first}, past its latest snapshot (${latest.sequence})`);
    }
    const started = performance.now();
    await restore(bucket, cluster, partition, latest, path);
    const outcome = { kind: "restored", sequence: latest.sequence, bytes: latest.bytes, downloadMs: performance.now() - started, replaced: applied !== undefined } as const;
    logger.info({ partition, snapshot: latest.sequence, bytes: latest.bytes, applied }, "store bootstrapped from a snapshot");
    return outcome;
  }
}

async function logFirstSequence(nc: NatsConnection, cluster: string, partition: number): Promise<number | undefined> {
  const jsm = await whileUnanswered(() => jetstreamManager(nc));
  try {
    return (await whileUnanswered(() => jsm.streams.info(subjects.logStream(cluster, partition)))).state.first_seq;
  } catch (cause) {
    if (cause instanceof JetStreamApiError && cause.code === JetStreamApiCodes.StreamNotFound) return undefined;
    throw cause;
  }
}

/** Downloads and checks a snapshot, then puts its files in place of the directory's store (see the module comment). */
async function restore(bucket: ObjectBucket, cluster: string, partition: number, snapshot: SnapshotRecord, path: string): Promise<void> {
  const unpacked = join(path, RESTORE_FOLDER);
  mkdirSync(unpacked, { recursive: true });
  const download = join(unpacked, "snapshot.bin");
  const file = await openFile(download, "w");
  let info;
  try {
    info = await bucket.read(snapshot.name, async (chunk) => {
      await file.write(chunk);
    });
  } finally {
    await file.close();
  }
  if (info === undefined) throw new SilkError("snapshot_invalid", `snapshot ${snapshot.name} was deleted while it was downloaded; start the replica again`);
  const header = unpack(download, unpacked, `snapshot ${snapshot.name}`);
  if (header.cluster !== cluster || header.partition !== partition || header.sequence !== snapshot.sequence) {
    throw new SilkError("snapshot_invalid", `snapshot ${snapshot.name} holds cluster ${header.cluster} partition ${header.partition} at ${header.sequence}`);
  }
  rmSync(download);
  const sequence = PartitionStore.appliedLogSequenceAt(unpacked);
  if (sequence !== snapshot.sequence) throw new SilkError("snapshot_invalid", `snapshot ${snapshot.name}'s store applied sequence ${sequence ?? "nothing"}`);
  // Out with the old store (a crash from here leaves no data.mdb: the next start bootstraps again), in with the new.
  for (const name of [DATA_FILE, "lock.mdb", GRAPH_FOLDER]) rmSync(join(path, name), { recursive: true, force: true });
  rmSync(join(unpacked, "lock.mdb"), { force: true });
  if (existsSync(join(unpacked, GRAPH_FOLDER))) renameSync(join(unpacked, GRAPH_FOLDER), join(path, GRAPH_FOLDER));
  renameSync(join(unpacked, DATA_FILE), join(path, DATA_FILE));
  rmSync(unpacked, { recursive: true, force: true });
}

/** Writes a downloaded snapshot's files under `into` and answers its header; `snapshot_invalid` for a bad one. */
function unpack(download: string, into: string, what: string): SnapshotHeader {
  const fd = openSync(download, "r");
  try {
    const total = statSync(download).size;
    const start = Buffer.alloc(SNAPSHOT_MAGIC.byteLength + HEADER_LENGTH_BYTES);
    if (readSync(fd, start, 0, start.byteLength, 0) !== start.byteLength || !start.subarray(0, SNAPSHOT_MAGIC.byteLength).equals(SNAPSHOT_MAGIC)) {
      throw new SilkError("snapshot_invalid", `${what} is not a Silk snapshot`);
    }
    const headerBytes = Buffer.alloc(start.readUInt32LE(SNAPSHOT_MAGIC.byteLength));
    if (readSync(fd, headerBytes, 0, headerBytes.byteLength, start.byteLength) !== headerBytes.byteLength) throw new SilkError("snapshot_invalid", `${what} is cut short`);
    let header: SnapshotHeader;
    try {
      header = JSON.parse(headerBytes.toString("utf8")) as SnapshotHeader;
    } catch {
      throw new SilkError("snapshot_invalid", `${what} has a header that is not JSON`);
    }
    if (header.format !== SNAPSHOT_FORMAT || !Array.isArray(header.files)) throw new SilkError("snapshot_invalid", `${what} has format ${String(header.format)}; this Silk reads ${SNAPSHOT_FORMAT}`);
    let at = start.byteLength + headerBytes.byteLength;
    if (header.files.reduce((sum, entry) => sum + entry.bytes, at) !== total) throw new SilkError("snapshot_invalid", `${what}'s files do not add up to its size`);
    const buffer = Buffer.alloc(COPY_BYTES);
    for (const entry of header.files) {
      const [folder, name, ...rest] = entry.path.split("/");
      const graphFile = folder === GRAPH_FOLDER && name !== undefined && rest.length === 0 && isGraphFileName(name) && !name.startsWith(".");
      if (entry.path !== DATA_FILE && !graphFile) throw new SilkError("snapshot_invalid", `${what} holds an unexpected file ${JSON.stringify(entry.path)}`);
      const target = join(into, entry.path);
      mkdirSync(dirname(target), { recursive: true });
      const out = openSync(target, "w");
      try {
        for (let left = entry.bytes; left > 0; ) {
          const read = readSync(fd, buffer, 0, Math.min(left, buffer.byteLength), at);
          if (read === 0) throw new SilkError("snapshot_invalid", `${what} is cut short`);
          for (let written = 0; written < read; ) written += writeSync(out, buffer, written, read - written);
          at += read;
          left -= read;
        }
      } finally {
        closeSync(out);
      }
    }
    return header;
  } finally {
    closeSync(fd);
  }
}

/** The latest snapshot of a partition, for `silk cluster status`; undefined when there is none (or no bucket). */
export async function latestSnapshot(nc: NatsConnection, cluster: string, partition: number): Promise<SnapshotRecord | undefined> {
  const bucket = await ObjectBucket.bind(nc, subjects.snapshotBucket(cluster));
  return bucket === undefined ? undefined : (await listSnapshots(bucket, partition)).at(-1);
}
