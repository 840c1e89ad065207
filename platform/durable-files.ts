/**
 * Small files replaced so that a crash leaves the old text or the new one, never half of one or nothing: written to
 * a uniquely named file beside the target, flushed, renamed over it, and the directory flushed (a rename is durable
 * only then). The database manifest (runtime/embedded.ts) and the hosted gateway's files (gateway/hosted/tenant-files.ts)
 * are written this way. A replacement alone does not make a read-modify-write safe: two processes that read the
 * same old text each rename their own new text over it, and one change is lost. withFileLock serializes them.
 */
import { randomBytes } from "node:crypto";
import { closeSync, fchmodSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { SilkError } from "../protocol/errors.js";

/**
 * fs-ext's native flock (a CommonJS package without typings). `exnb`: exclusive, failing with EAGAIN (EWOULDBLOCK)
 * when another process holds it. Closing the descriptor releases it.
 */
const { flockSync } = createRequire(import.meta.url)("fs-ext") as { flockSync(fd: number, flags: "exnb"): void };

/** How long a process waiting for a file lock sleeps between attempts, in milliseconds. */
const FILE_LOCK_RETRY_MS = 5;

export interface WriteOptions {
  /** The new file's permission bits, exactly (the umask does not widen or narrow them); default 0o666 less the umask. */
  readonly mode?: number;
}

/** Writes `path` through a uniquely named file beside it, flushed, then renamed over it. */
export function writeFileAtomic(path: string, text: string, options: WriteOptions = {}): void {
  mkdirSync(dirname(path), { recursive: true });
  const aside = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  writeFlushed(aside, text, options);
  renameSync(aside, path);
  flushDirectory(dirname(path));
}

/** Creates `path` (it must not exist) holding `text`, flushed to disk. */
export function writeFlushed(path: string, text: string, options: WriteOptions = {}): void {
  const fd = openSync(path, "wx", options.mode ?? 0o666);
  try {
    // Set before any byte is written, so a secret never sits in a file that others may read.
    if (options.mode !== undefined) fchmodSync(fd, options.mode);
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

/**
 * Runs `change` while this process holds an exclusive OS lock (flock) on `lockPath`, which is created (mode 0600) if
 * absent and never deleted, so every process locks the same file. The kernel drops the lock when its holder exits,
 * however it exits: a crash leaves nothing to clean up. Waits up to `waitMs` for another holder, then throws.
 * Synchronous, for short command-line changes; a server must not block its event loop on it.
 */
export function withFileLock<T>(lockPath: string, waitMs: number, change: () => T): T {
  mkdirSync(dirname(lockPath), { recursive: true });
  const fd = openSync(lockPath, "a", 0o600);
  try {
    const giveUpAt = performance.now() + waitMs;
    while (!tryLock(fd)) {
      if (performance.now() >= giveUpAt) {
        throw new SilkError("lock_timeout", `another process has held ${lockPath} for over ${waitMs} ms; wait for it to finish and retry, or stop it if it is stuck`);
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, FILE_LOCK_RETRY_MS);
    }
    return change();
  } finally {
    closeSync(fd);
  }
}

function tryLock(fd: number): boolean {
  try {
    flockSync(fd, "exnb");
    return true;
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    if (code === "EAGAIN" || code === "EWOULDBLOCK") return false;
    throw cause;
  }
}
