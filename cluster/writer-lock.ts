/**
 * One writer per database directory. LMDB itself would let two processes write (it serializes them), but two Silk
 * writers would each hand out IDs from the same ranges, so a second writer is refused. The lock is a file created
 * exclusively, holding the owner's PID; a lock whose process is gone (a crash) is taken over.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { SilkError } from "../protocol/errors.js";

export interface WriterLock {
  release(): void;
}

const LOCK_FILE = "writer.lock";
const heldInThisProcess = new Set<string>();

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function acquireWriterLock(directory: string): WriterLock {
  const path = join(directory, LOCK_FILE);
  if (heldInThisProcess.has(path)) throw new SilkError("writer_locked", `${directory} is already open as a writer in this process`);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(path, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      heldInThisProcess.add(path);
      return {
        release: () => {
          heldInThisProcess.delete(path);
          rmSync(path, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number.parseInt(readFileSync(path, "utf8"), 10);
      if (Number.isInteger(owner) && owner !== process.pid && processAlive(owner)) {
        throw new SilkError("writer_locked", `${directory} is open as a writer by process ${owner}`);
      }
      rmSync(path, { force: true }); // the owner is gone: a stale lock from a crash
    }
  }
  throw new SilkError("writer_locked", `could not take the writer lock of ${directory}`);
}
