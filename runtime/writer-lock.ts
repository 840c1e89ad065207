/**
 * One writer per database directory. LMDB itself would let two processes write (it serializes them), but two Silk
 * writers would each hand out IDs from the same ranges, so a second writer is refused.
 *
 * The lock is an exclusive `flock` on `writer.lock`, held for the writer's whole life. The operating system drops it
 * when the process dies, however it dies, so a crash leaves no lock to take over and there is no staleness to
 * judge: whatever the file holds (a dead PID, nothing), only the flock counts, and taking it is atomic. The file
 * holds the owner's PID only to name it in the refusal.
 *
 * The file is deleted on release so a cleanly closed directory carries no lock file. Deleting is what makes one
 * more check necessary: a racer may open the file, the owner deletes it and lets go, and the racer then locks a file
 * no longer at that path while a third process creates and locks a new one. So a lock counts only if, once taken,
 * the path still names the locked file; otherwise the racer lets go and tries again. The owner deletes the file
 * before it lets go, so no process can hold the lock of a file that the path names but another process deleted.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { SilkError } from "../protocol/errors.js";

/** fs-ext's native flock (a CommonJS package without typings). `exnb`: exclusive, failing with EAGAIN when held. */
const { flockSync } = createRequire(import.meta.url)("fs-ext") as { flockSync(fd: number, flags: "exnb"): void };

export interface WriterLock {
  release(): void;
}

const LOCK_FILE = "writer.lock";
/**
 * How many times a racer starts again after locking a file that its owner had just deleted. Each retry means
 * another process took and released the lock meanwhile; after this many the directory is too busy to call it free.
 */
const ATTEMPTS_MAX = 16;
/** Lock paths this process holds, for a refusal that says the other writer is this process itself. */
const heldInThisProcess = new Set<string>();

export function acquireWriterLock(directory: string): WriterLock {
  const path = join(directory, LOCK_FILE);
  if (heldInThisProcess.has(path)) throw new SilkError("writer_locked", `${directory} is already open as a writer in this process; close that handle first, or open this one with mode "readonly"`);
  for (let attempt = 0; attempt < ATTEMPTS_MAX; attempt += 1) {
    const fd = openSync(path, "a+");
    if (!tryLock(fd)) {
      closeSync(fd);
      throw new SilkError("writer_locked", `${directory} is open as a writer by ${ownerOf(path)}; stop that writer, or open this database with mode "readonly"`);
    }
    if (!namesFile(path, fd)) {
      closeSync(fd); // locked a file its owner deleted on release: the lock now lives in a new file at the path
      continue;
    }
    // Only the holder writes, after taking the lock, so the PID in the file never comes from a racer.
    ftruncateSync(fd, 0);
    writeSync(fd, String(process.pid), 0);
    heldInThisProcess.add(path);
    return {
      release: () => {
        heldInThisProcess.delete(path);
        rmSync(path, { force: true }); // before closing, which lets go of the lock (see the module comment)
        closeSync(fd);
      },
    };
  }
  throw new SilkError("writer_locked", `${directory}: the writer lock changed hands ${ATTEMPTS_MAX} times while this process tried to take it; retry when the other writers are done`);
}

/** Takes the exclusive lock without waiting; false when another open file holds it. */
function tryLock(fd: number): boolean {
  try {
    flockSync(fd, "exnb");
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EAGAIN" || code === "EWOULDBLOCK") return false;
    throw error;
  }
}

/** Whether `path` still names the file open as `fd` (it was not deleted and replaced since it was opened). */
function namesFile(path: string, fd: number): boolean {
  try {
    const atPath = statSync(path);
    const open = fstatSync(fd);
    return atPath.ino === open.ino && atPath.dev === open.dev;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/** The holder as its lock file names it; the holder may not have written its PID yet. */
function ownerOf(path: string): string {
  try {
    const text = readFileSync(path, "utf8");
    return /^[0-9]+$/.test(text) ? `process ${text}` : "another process";
  } catch {
    return "another process"; // the file went away: its owner is releasing it
  }
}
