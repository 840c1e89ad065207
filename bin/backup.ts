/**
 * `silk backup --data <dir> --to s3://bucket/prefix` and `silk restore --from s3://bucket/prefix --data <dir>`
 * (docs/STORAGE.md, "Backup and restore"): a disk database copied into an empty bucket prefix as a bucket database
 * (a server may be running on the directory), and a bucket database copied into an empty directory. Credentials and
 * region come from the AWS environment variables and config files, as for `silk serve --storage`.
 */
import { backupToBucket, restoreFromBucket } from "../runtime/bucket-backup.js";
import type { S3Storage } from "../runtime/bucket-storage.js";
import { storageOf, type StorageFlags } from "./serve-settings.js";

export interface BackupIo {
  readonly stdout: NodeJS.WritableStream;
}

/** The bucket database a `--to` / `--from` URI names (its cache, where one is needed, is chosen by the command). */
function bucketOf(uri: string, flags: Omit<StorageFlags, "storage">): S3Storage {
  const storage = storageOf({ ...flags, storage: uri }, "", "");
  const { cacheDir: _unused, ...s3 } = (storage as { s3: S3Storage }).s3;
  return s3;
}

export async function runBackup(flags: { readonly data: string; readonly to: string } & Omit<StorageFlags, "storage">, io: BackupIo): Promise<void> {
  const started = performance.now();
  const report = await backupToBucket(flags.data, bucketOf(flags.to, flags), new Date());
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  io.stdout.write(`silk backup: ${flags.data} -> ${flags.to}: ${report.partitions} partitions, ${report.files} files, ${report.bytes} bytes in ${seconds} s (snapshot at segment ${report.snapshot})\n`);
}

export async function runRestore(flags: { readonly from: string; readonly data: string } & Omit<StorageFlags, "storage">, io: BackupIo): Promise<void> {
  const started = performance.now();
  const report = await restoreFromBucket(bucketOf(flags.from, flags), flags.data);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  io.stdout.write(`silk restore: ${flags.from} -> ${flags.data}: ${report.partitions} partitions, up to segment ${report.position}, in ${seconds} s\n`);
}
