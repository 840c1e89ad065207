/**
 * The vector family's change log (node/indexes/vector-index.ts), in the partition's `meta`: for each change counter value
 * (`vindex-version:<kind>:<name>`) of an index, the IDs of the records that transaction changed in it, under
 * `vindex-changes:<kind>:<name>:<version, 16 digits>`, written in the same LMDB transaction as the counter. A
 * process whose graphs reflect an older counter (a read-only handle after its writer committed, a graph file older
 * than the data) reads the entries after its counter, then each listed record as committed now, and replays them
 * into its graphs instead of rebuilding every graph.
 *
 * Bounds: the log keeps the last CHANGE_LOG_VERSIONS_MAX counter values of each index (each transaction deletes the
 * entry that many versions older). An entry is UNLISTED until the transaction's end lists its IDs (`flush`); a
 * transaction that never lists them (a build chunk, a drop) leaves it so. A reader that finds an entry missing
 * (trimmed, or written by an older Silk that kept no log) or unlisted cannot replay across it and rebuilds instead.
 */
import type { Database } from "lmdb";

const CHANGES_PREFIX = "vindex-changes:";
/** Change counter values kept per index: a reader further behind than this rebuilds (or loads a graph file). */
export const CHANGE_LOG_VERSIONS_MAX = 8_192;
/** The value of an entry whose IDs were not listed. */
const UNLISTED = 0;
const VERSION_DIGITS = 16;
const ID_BYTES = 8;

function changeKey(indexKey: string, version: number): string {
  return `${CHANGES_PREFIX}${indexKey}:${String(version).padStart(VERSION_DIGITS, "0")}`;
}

/**
 * Opens the entry of a new counter value as unlisted and drops the one that falls out of the log (inside the write
 * transaction that counts `version`).
 */
export function openChangeEntry(meta: Database, indexKey: string, version: number): void {
  meta.putSync(changeKey(indexKey, version), UNLISTED);
  if (version > CHANGE_LOG_VERSIONS_MAX) meta.removeSync(changeKey(indexKey, version - CHANGE_LOG_VERSIONS_MAX));
}

/** Lists the IDs a transaction changed under its counter value (inside that transaction, at its end). */
export function listChanges(meta: Database, indexKey: string, version: number, ids: readonly bigint[]): void {
  const bytes = Buffer.allocUnsafe(ids.length * ID_BYTES);
  for (let i = 0; i < ids.length; i++) bytes.writeBigUInt64BE(ids[i], i * ID_BYTES);
  meta.putSync(changeKey(indexKey, version), bytes);
}

/** Forgets an index's whole log (a drop, inside its transaction; the drop's own entry is opened after). */
export function clearChanges(meta: Database, indexKey: string): void {
  const prefix = `${CHANGES_PREFIX}${indexKey}:`;
  // Read first, then removed: removing keys of the range being iterated would move its cursor.
  const keys = [...meta.getKeys({ start: prefix, end: `${prefix}\uffff` })];
  for (const key of keys) meta.removeSync(key);
}

/**
 * The IDs changed by the counter values after `after` up to `to`, each once, as committed in the current read
 * transaction; undefined when the log cannot tell (an entry missing or unlisted, or more than the log keeps).
 */
export function changesBetween(meta: Database, indexKey: string, after: number, to: number): bigint[] | undefined {
  if (to - after > CHANGE_LOG_VERSIONS_MAX) return undefined;
  const ids = new Set<bigint>();
  for (let version = after + 1; version <= to; version++) {
    const value = meta.get(changeKey(indexKey, version)) as Uint8Array | number | undefined;
    if (!(value instanceof Uint8Array) || value.byteLength % ID_BYTES !== 0) return undefined;
    const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
    for (let at = 0; at < value.byteLength; at += ID_BYTES) ids.add(view.getBigUint64(at));
  }
  return [...ids];
}
