/**
 * The changes of a partition as entries of its replicated log (cluster mode, docs/REPLICATION.md): every state change
 * of a partition store is one entry, and `applyLogEntry` is the one place that turns an entry into the store's change,
 * on the leader after it appended the entry and on every follower in log order. The single server has no log: its
 * actor applies the same entries directly.
 *
 * Architecture invariant: applying an entry is deterministic given the store's state (a write's IDs are in its
 * mutation list; an index build chunk scans the same records on every replica), and records the entry's sequence in
 * the same LMDB transaction as its effect, so replicas that applied the same prefix of the log hold the same data.
 */
import type { IndexDefinition, IndexStatus } from "../../protocol/indexes.js";
import type { IdRange } from "../../protocol/records.js";
import type { PartitionStore } from "./partition-store.js";
import { unreachable } from "../../protocol/errors.js";

export type LogEntry =
  /** A single-partition commit: an encoded mutation list (protocol/mutation-codec.ts). */
  | { readonly type: "apply"; readonly batch: Uint8Array }
  /** Two-phase commit: the durable intent, then the decision. */
  | { readonly type: "prepare"; readonly txid: string; readonly batch: Uint8Array }
  | { readonly type: "commit"; readonly txid: string }
  | { readonly type: "abort"; readonly txid: string }
  /** Index operations and one chunk of a background build (`key` is the index's meta key). */
  | { readonly type: "index_create"; readonly definition: IndexDefinition }
  /** `aborted`: an aborted build, kept as it was (node/store/partition-store.ts `abortedIndexes`) until created again. */
  | { readonly type: "index_drop"; readonly key: string; readonly aborted?: IndexStatus }
  | { readonly type: "index_retry"; readonly key: string }
  | { readonly type: "index_build"; readonly key: string; readonly chunkEntities: number }
  /** The coordinator's verdict on a `validating` UNIQUE index: active, or blocked by a duplicate across partitions. */
  | { readonly type: "index_validated"; readonly key: string; readonly blocked?: { readonly reason: string; readonly message: string } }
  /** IDs up to `upTo` belong to the leader that appended this (node/store/partition-store.ts `reserveIds`). */
  | { readonly type: "reserve_ids"; readonly upTo: bigint }
  /** Rebalancing: this partition starts owning `ranges`, or deletes a range's data and stops owning it. */
  | { readonly type: "add_ranges"; readonly ranges: readonly IdRange[] }
  | { readonly type: "drop_range"; readonly range: IdRange };

/** Applies one entry to the store; `sequence` is its place in the log, recorded with it (none: the single server). */
export function applyLogEntry(store: PartitionStore, entry: LogEntry, sequence?: number): void {
  const change = (): void => {
    switch (entry.type) {
      case "apply":
        return store.apply(entry.batch);
      case "prepare":
        return store.prepare(entry.txid, entry.batch);
      case "commit":
        return store.commitPrepared(entry.txid);
      case "abort":
        return store.abortPrepared(entry.txid);
      case "index_create":
        return store.createIndex(entry.definition);
      case "index_drop":
        return store.dropIndex(entry.key, entry.aborted);
      case "index_retry":
        return store.retryIndex(entry.key);
      case "index_build":
        return store.buildIndexChunk(entry.key, entry.chunkEntities);
      case "index_validated":
        return store.finishIndexValidation(entry.key, entry.blocked);
      case "reserve_ids":
        return store.reserveIds(entry.upTo);
      case "add_ranges":
        return store.addOwnedRanges(entry.ranges);
      case "drop_range":
        return store.dropRange(entry.range);
      default:
        return unreachable(entry, "log entry");
    }
  };
  if (sequence === undefined) change();
  else store.atLogSequence(sequence, change);
}
