/**
 * Small files replaced so that a crash leaves the old text or the new one, never half of one or nothing: written to
 * a uniquely named file beside the target, flushed, renamed over it, and the directory flushed (a rename is durable
 * only then). The database manifest (embedded.ts) and the hosted gateway's files (gateway/hosted/tenant-files.ts)
 * are written this way.
 */
import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/** Writes `path` through a uniquely named file beside it, flushed, then renamed over it. */
export function writeFileAtomic(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const aside = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  writeFlushed(aside, text);
  renameSync(aside, path);
  flushDirectory(dirname(path));
}

/** Creates `path` (it must not exist) holding `text`, flushed to disk. */
export function writeFlushed(path: string, text: string): void {
  const fd = openSync(path, "wx");
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A rename is durable only once the directory is flushed. */
export function flushDirectory(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
