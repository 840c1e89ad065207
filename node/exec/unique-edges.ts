/**
 * UNIQUE edge types (`E::Follows UNIQUE {..}`, as in HelixDB): at most one edge of such a type from one record to
 * another. The pair is directed: a to b and b to a are two pairs, each allowed one edge.
 *
 * The check runs on a transaction's created edges once its plan has executed and before anything commits, like the
 * UNIQUE INDEX check (unique.ts). It reads the source's out-adjacency of the label through the view, so it sees the
 * committed edges and the transaction's own creates and drops: two creates of one pair in a query are a violation, a
 * drop of the pair's edge followed by a create is not. An edge lives with its source's partition, so on one
 * partition the check is local; on several, the coordinator runs it under its write lock (nothing commits between
 * the check and the commit). The partition store keeps a second, local guard on every list it applies or
 * rehearses (partition-store.ts), which covers bulk import too.
 *
 * Only created edges are checked: an update never changes an edge's endpoints, and edges written before the type was
 * declared UNIQUE stay as they are (a new one of such a pair is refused).
 */
import type { AdjacencyEntry, EdgeRecord } from "../../protocol/records.js";
import { wait, type Op } from "./ops.js";
import type { Schema } from "../../protocol/schema.js";
import type { TxnView } from "./txn-view.js";
import { uniqueEdgeViolation } from "../unique-edge-violation.js";

/** The edge types a schema declares UNIQUE (none for a schemaless database). */
export function uniqueEdgeLabels(schema: Schema | undefined): string[] {
  const labels: string[] = [];
  for (const edge of schema?.edges.values() ?? []) if (edge.unique) labels.push(edge.name);
  return labels;
}

/** The transaction's created edges of UNIQUE types against the out-adjacency of their sources, as the view reads it. */
export function* checkUniqueEdges(view: TxnView, schema: Schema | undefined): Op<void> {
  if (schema === undefined) return;
  const byLabel = new Map<string, EdgeRecord[]>();
  for (const edge of view.createdEdges()) {
    if (schema.edges.get(edge.label)?.unique !== true) continue;
    const list = byLabel.get(edge.label);
    if (list) list.push(edge);
    else byLabel.set(edge.label, [edge]);
  }
  for (const [label, edges] of byLabel) {
    const sources = [...new Set(edges.map((edge) => edge.from))];
    const lists = yield* wait(view.adjacency(sources, "out", label));
    const outOf = new Map<bigint, AdjacencyEntry[]>();
    sources.forEach((source, i) => outOf.set(source, lists[i]));
    // The last create first: its holder is then the committed edge, or the pair's first create (adjacency lists
    // hold committed entries first, then creates in order), which is the one a reader would call "already there".
    for (const edge of edges.reverse()) {
      const other = outOf.get(edge.from)?.find((entry) => entry.other === edge.to && entry.edge !== edge.id);
      if (other !== undefined) throw uniqueEdgeViolation(label, edge.from, edge.to, other.edge);
    }
  }
}

