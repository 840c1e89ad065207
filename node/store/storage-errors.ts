/**
 * Failures of the storage itself — a full disk, a quota, a read-only file system, an I/O error — as `storage_error`
 * with a message that names the cause and says what to do. lmdb-js throws them as plain errors whose `code` is a
 * number (an errno, or one of LMDB's own codes) and whose message is only `strerror`'s text, which reached callers as
 * `internal` "Input/output error" (issue 20). Node's file functions throw the same causes with a string code.
 *
 * A full disk often shows as EIO, not ENOSPC: LMDB writes pages with `pwrite`, and a write cut short by a full disk
 * returns fewer bytes without an errno, which LMDB reports as EIO. So for EIO the message says how much space the
 * file system has left, and calls the disk full when that is almost nothing.
 */
import { statfsSync } from "node:fs";
import { SilkError, unreachable } from "../../protocol/errors.js";

/** Below this much free space, an I/O error while writing is a full disk. */
const DISK_FULL_FREE_BYTES_MAX = 1 << 20;

/** The causes this module names, by errno and by LMDB code; lmdb-js gives the number, Node's fs the name. */
const CAUSES = {
  EIO: 5,
  ENOSPC: 28,
  EROFS: 30,
  EDQUOT: 122,
  /** LMDB's MDB_MAP_FULL: the environment reached its map size (lmdb-js grows the map, so this is rare). */
  MDB_MAP_FULL: -30792,
} as const;
type Cause = keyof typeof CAUSES;

const CAUSE_OF_NUMBER: ReadonlyMap<number, Cause> = new Map(Object.entries(CAUSES).map(([name, value]) => [value, name as Cause]));

/**
 * The storage failure `cause` is, as a `storage_error` about `path` (the directory written to), or undefined when
 * it is not one (our own errors and bugs pass through unchanged).
 */
export function storageFailure(cause: unknown, path: string): SilkError | undefined {
  if (cause instanceof SilkError || !(cause instanceof Error)) return undefined;
  const code = (cause as { code?: unknown }).code;
  const named = typeof code === "number" ? CAUSE_OF_NUMBER.get(code) : typeof code === "string" && code in CAUSES ? (code as Cause) : undefined;
  if (named !== undefined) return new SilkError("storage_error", describe(named, path));
  // Any other LMDB code (MDB_CORRUPTED, MDB_PANIC, ...) or errno from lmdb-js is still the storage failing.
  if (typeof code === "number") return new SilkError("storage_error", `storage failed writing ${path}: ${cause.message} (code ${code}); the transaction was rolled back. Check the system log and the disk`);
  return undefined;
}

function describe(cause: Cause, path: string): string {
  const rolledBack = "the transaction was rolled back";
  switch (cause) {
    case "ENOSPC":
      return `the disk is full: no space left on the file system of ${path} (ENOSPC); ${rolledBack}. Free space there, then retry`;
    case "EDQUOT":
      return `the disk quota is exhausted for ${path} (EDQUOT); ${rolledBack}. Free space or raise the quota, then retry`;
    case "EROFS":
      return `the file system of ${path} is read-only (EROFS); ${rolledBack}. Remount it read-write, or open the database with mode "readonly"`;
    case "MDB_MAP_FULL":
      return `the LMDB map of ${path} is full (MDB_MAP_FULL); ${rolledBack}. Reopen the database with a larger cache.mapSizeBytes`;
    case "EIO": {
      const free = freeBytes(path);
      if (free === undefined) return `an I/O error writing ${path} (EIO); ${rolledBack}. Check free space on its disk and the system log`;
      if (free < DISK_FULL_FREE_BYTES_MAX) {
        return `the disk is full: an I/O error writing ${path} (EIO) with ${free} bytes free on its file system; ${rolledBack}. Free space there, then retry`;
      }
      return `an I/O error writing ${path} (EIO) with ${(free / (1 << 20)).toFixed(1)} MiB free on its file system: a transaction larger than that, or a failing disk; ${rolledBack}. Check the system log`;
    }
    default:
      return unreachable(cause, "storage failure");
  }
}

/** Free space for unprivileged writers on the file system holding `path`; undefined when it cannot be read. */
function freeBytes(path: string): number | undefined {
  try {
    const stats = statfsSync(path);
    return stats.bavail * stats.bsize;
  } catch {
    return undefined; // the path is gone or unreadable: the message goes without the figure
  }
}
