/**
 * The data of an ID range as mutations, for rebalancing (docs/CLUSTER.md): what a giving partition exports and what it
 * deletes when it stops owning the range, and the arithmetic of sets of ranges. Out-adjacency lives with the edge's
 * source wherever the edge record is (put_out/delete_out when the two are apart).
 */
import { type Database, type Transaction } from "lmdb";
import type { AdjacencyEntry, Direction, IdRange, Mutation, RecordKind } from "../../protocol/records.js";
import { adjacencyBlockLabel, readBlockEntries } from "./adjacency.js";
import { idKey, readId } from "../keys.js";
import { decodeRecord } from "../record-codec.js";

/**
 * Every record with an ID in `range`, every in-adjacency entry whose target is in it and every out-adjacency entry
 * whose source is in it (and whose edge is not: an edge record's own write carries its out-adjacency when its
 * partition owns the source), as `put` or `delete` mutations. Deleting an edge of the range whose source stays
 * (`stillOwned`) puts its out-adjacency back after the delete.
 */
export function rangeMutationsOf(
  records: Record<RecordKind, Database<Buffer, Buffer>>,
  adjacency: Record<Direction, Database<Buffer, Buffer>>,
  range: IdRange,
  op: "put" | "delete",
  transaction: Transaction | undefined,
  stillOwned: (id: bigint) => boolean = () => false,
): Mutation[] {
  const mutations: Mutation[] = [];
  const start = idKey(range.first);
  const end = range.last === 2n ** 64n - 1n ? undefined : idKey(range.last + 1n);
  const inRange = (id: bigint): boolean => id >= range.first && id <= range.last;
  /** Out-adjacency entries the edge records' own writes do not carry (their edge or their source is on the other side). */
  const keptOut: Mutation[] = [];
  for (const kind of ["node", "vector", "edge"] as const) {
    for (const { key, value } of records[kind].getRange({ start, end, transaction })) {
      const record = decodeRecord(kind, readId(key), value);
      mutations.push(op === "put" ? { op: "put_record", record } : { op: "delete_record", record });
      // Deleting an edge record here deletes its out-adjacency too; a source that stays here keeps it.
      if (op === "delete" && record.kind === "edge" && !inRange(record.from) && stillOwned(record.from)) {
        keptOut.push({ op: "put_out", source: record.from, label: record.label, edge: record.id, target: record.to, targetKind: record.toKind });
      }
    }
  }
  for (const { owner: target, entry } of entriesOf(adjacency.in, start, end, transaction)) {
    const { label, edge } = entry;
    mutations.push(op === "put" ? { op: "put_in", target, label, edge, source: entry.other, sourceKind: entry.otherKind } : { op: "delete_in", target, label, edge });
  }
  // Out-adjacency of sources in the range whose edge records are not: it moves with the source.
  for (const { owner: source, entry } of entriesOf(adjacency.out, start, end, transaction)) {
    const { label, edge } = entry;
    if (inRange(edge)) continue;
    mutations.push(op === "put" ? { op: "put_out", source, label, edge, target: entry.other, targetKind: entry.otherKind } : { op: "delete_out", source, label, edge });
  }
  return [...mutations, ...keptOut];
}

/** The adjacency entries of the owners in [start, end), with their owner, in key order. */
function* entriesOf(database: Database<Buffer, Buffer>, start: Buffer, end: Buffer | undefined, transaction: Transaction | undefined): Generator<{ owner: bigint; entry: AdjacencyEntry }> {
  for (const { key, value } of database.getRange({ start, end, transaction })) {
    const entries: AdjacencyEntry[] = [];
    readBlockEntries(value, adjacencyBlockLabel(key), entries);
    const owner = readId(key);
    for (const entry of entries) yield { owner, entry };
  }
}

/** Ascending, disjoint, adjacent ranges joined. */
export function mergeRanges(ranges: readonly IdRange[]): IdRange[] {
  const sorted = [...ranges].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  const merged: IdRange[] = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && range.first <= last.last + 1n) merged[merged.length - 1] = { first: last.first, last: range.last > last.last ? range.last : last.last };
    else merged.push(range);
  }
  return merged;
}

/** `ranges` without the IDs of `removed`. */
export function subtractRange(ranges: readonly IdRange[], removed: IdRange): IdRange[] {
  const result: IdRange[] = [];
  for (const range of ranges) {
    if (removed.last < range.first || removed.first > range.last) result.push(range);
    else {
      if (range.first < removed.first) result.push({ first: range.first, last: removed.first - 1n });
      if (range.last > removed.last) result.push({ first: removed.last + 1n, last: range.last });
    }
  }
  return result;
}

