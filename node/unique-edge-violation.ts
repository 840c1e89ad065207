/**
 * The error of a second edge of a UNIQUE edge type (`E::Follows UNIQUE {..}`) between one pair. Three places refuse
 * such an edge and must say it the same way: the executor's check of a transaction's created edges through its view
 * (node/exec/unique-edges.ts), the partition store's local guard on every list it applies or rehearses
 * (node/store/partition-store.ts), and the bulk import's check of a batch (cluster/bulk-import.ts). It sits at the bottom
 * of node/ because the store and the executor may not import each other.
 */
import { SilkError } from "../protocol/errors.js";
import { idToString } from "../protocol/ids.js";

/** The error of a second edge of a UNIQUE type between one pair; `holder` is the edge that joins them already. */
export function uniqueEdgeViolation(label: string, from: bigint, to: bigint, holder: bigint): SilkError {
  return new SilkError(
    "unique_violation",
    `${label} is a UNIQUE edge type: edge ${idToString(holder)} already joins ${idToString(from)} to ${idToString(to)}; nothing was written`,
  );
}
