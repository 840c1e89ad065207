/**
 * Group commit on a single server: the write invocations waiting in a partition's write queue run one after another,
 * each against the state the ones before it left, and commit together in one LMDB transaction (one fsync); each is
 * answered only once that transaction is on disk (docs/ISOLATION.md, "Group commit").
 *
 * A group holds one snapshot and one overlay of its members' changes (a TxnView nobody reads directly). A member's
 * own view reads through a GroupLayer: the group's overlay over the snapshot, so every read path that sees an
 * invocation's own writes sees its predecessors' too (records, adjacency, labels, secondary indexes, UNIQUE checks,
 * vector search). Text search reads the committed index only: a member that searches text while the group holds
 * changes stops (GroupFlushNeeded), the group commits what it has, and the member runs again first in a new group.
 * A member that fails leaves nothing in the overlay; one that succeeds gives it its changes (TxnView `absorb`).
 */
import { Deadline } from "../exec/deadline.js";
import type { AdjacencyEntry, Direction, IndexRange, RecordKind, SearchHit, StoredRecord, TextSearchRequest, VectorSearchRequest } from "../../protocol/records.js";
import type { BaseReader, Neighbour } from "../exec/txn-view.js";
import { TxnView } from "../exec/txn-view.js";
import { settle } from "../exec/ops.js";

/**
 * The most invocations one group commits: enough that the fsync is a small part of each write, few enough that a
 * failed commit (every member answered the error, or run again alone) stays cheap.
 */
export const WRITE_GROUP_INVOCATIONS_MAX = 64;

/** The most bytes of encoded mutation lists one group commits; a member that alone exceeds it commits alone. */
export const WRITE_GROUP_BYTES_MAX = 8 * 1024 * 1024;

/** How large a partition's write groups may grow (the options of PartitionActor and of runtime's open). */
export interface WriteGroupBounds {
  /** At most this many invocations per group; 1 commits every invocation alone (benchmarks' baseline). */
  readonly invocations: number;
  /** The group closes once its members' mutation lists reach this many bytes. */
  readonly bytes: number;
}

export const DEFAULT_WRITE_GROUP_BOUNDS: WriteGroupBounds = { invocations: WRITE_GROUP_INVOCATIONS_MAX, bytes: WRITE_GROUP_BYTES_MAX };

/**
 * Thrown by a member's read that cannot see the group's pending changes (text search): the actor commits the group
 * without the member and runs it again in a new one. Never a SilkError, so no step takes it for the query's own.
 */
export class GroupFlushNeeded extends Error {
  constructor() {
    super("a read that cannot see the write group's pending changes: the group commits first");
  }
}

/**
 * A member's base: the group's pending changes over the group's snapshot, read through the member's snapshot reader
 * (which loads vectors or not, as the member's plan needs) and paced by the member's deadline.
 */
export class GroupLayer implements BaseReader {
  private readonly pending: TxnView;

  constructor(
    group: TxnView,
    private readonly snapshot: BaseReader,
    deadline: Deadline,
  ) {
    this.pending = group.over(snapshot, deadline);
  }

  records(kind: RecordKind, ids: readonly bigint[]): (StoredRecord | undefined)[] | Promise<(StoredRecord | undefined)[]> {
    return settle(this.pending.records(kind, ids));
  }

  exists(kind: RecordKind, ids: readonly bigint[]): boolean[] | Promise<boolean[]> {
    return settle(this.pending.exists(kind, ids));
  }

  adjacency(owners: readonly bigint[], direction: Direction, label?: string): AdjacencyEntry[][] | Promise<AdjacencyEntry[][]> {
    return settle(this.pending.adjacency(owners, direction, label));
  }

  neighbours(owners: readonly bigint[], direction: Direction, label?: string): Neighbour[] | Promise<Neighbour[]> {
    return settle(this.pending.neighbours(owners, direction, label));
  }

  idsOfLabel(kind: RecordKind, label: string): bigint[] | Promise<bigint[]> {
    return settle(this.pending.idsOfLabel(kind, label));
  }

  allIds(kind: RecordKind): bigint[] | Promise<bigint[]> {
    return settle(this.pending.allIds(kind));
  }

  /** The snapshot's scan while the group changed nothing; then undefined (the caller takes the merged list). */
  scanIds(kind: RecordKind, label?: string): Iterable<bigint> | undefined {
    return this.pending.hasWrites ? undefined : this.snapshot.scanIds?.(kind, label);
  }

  /** The snapshot's count while the group changed nothing; then undefined (the caller counts what it reads). */
  countIds(kind: RecordKind, label?: string): number | undefined | Promise<number | undefined> {
    return settle(this.pending.countIds(kind, label));
  }

  indexIds(kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): bigint[] | undefined | Promise<bigint[] | undefined> {
    return settle(this.pending.indexIds(kind, label, field, ranges));
  }

  /** The committed index merged with the group's changes and the member's own (TxnView merges both overlays). */
  vectorSearch(request: VectorSearchRequest): SearchHit[] | Promise<SearchHit[]> {
    return settle(this.pending.vectorSearch(request));
  }

  textSearch(request: TextSearchRequest): SearchHit[] | Promise<SearchHit[]> {
    if (this.pending.hasWrites) throw new GroupFlushNeeded();
    return this.snapshot.textSearch(request);
  }
}
