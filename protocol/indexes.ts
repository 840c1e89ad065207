/**
 * The shapes of secondary indexes that cross the transport (partition replies) and reach callers (`db.indexes()`,
 * the index operations of the operation tree). Storage and builds are node/secondary-index.ts; see docs/INDEXES.md.
 */
import type { RecordKind } from "./records.js";
import type { ScalarTypeName } from "./schema.js";

export interface IndexDefinition {
  readonly kind: RecordKind;
  readonly label: string;
  readonly field: string;
  readonly unique: boolean;
  /** The field's declared type: a changed type is a different index, rebuilt. */
  readonly type: ScalarTypeName;
  /** `User.age`: the name explain output and `db.indexes()` show. */
  readonly name: string;
}

export type IndexStateName = "constructing" | "active" | "blocked";

/** Who declared an index: the schema (it lives and dies with the declaration) or an index operation (`create_index`). */
export type IndexOrigin = "schema" | "runtime";

/** One index as a partition persists it: its definition, state and monotonic build counters. */
export interface IndexStatus extends IndexDefinition {
  readonly state: IndexStateName;
  readonly origin: IndexOrigin;
  /** Records the build has scanned. */
  readonly entities: number;
  /** Stored bytes of those records. */
  readonly bytes: number;
  /** Index entries the build has written. */
  readonly operations: number;
  /** Why a `blocked` index is blocked: an error code, and a message naming the value. */
  readonly reason?: string;
  readonly message?: string;
}

/** The index an index operation created on a kind, label and field, if any (the schema's are in the schema). */
export type RuntimeIndexLookup = (kind: RecordKind, label: string, field: string) => IndexDefinition | undefined;

/** A database's index is as far along as its least advanced partition. */
const STATE_RANK: Record<IndexStateName, number> = { active: 0, constructing: 1, blocked: 2 };

/** One status per index over every partition's: the least advanced partition's state, counters summed. */
export function mergeIndexStatuses(perPartition: readonly (readonly IndexStatus[])[]): IndexStatus[] {
  const merged = new Map<string, IndexStatus>();
  for (const statuses of perPartition) {
    for (const own of statuses) {
      const key = `${own.kind}:${own.name}`;
      const earlier = merged.get(key);
      if (earlier === undefined) merged.set(key, own);
      else {
        const worse = STATE_RANK[own.state] > STATE_RANK[earlier.state] ? own : earlier;
        merged.set(key, {
          ...worse,
          entities: earlier.entities + own.entities,
          bytes: earlier.bytes + own.bytes,
          operations: earlier.operations + own.operations,
        });
      }
    }
  }
  return [...merged.values()];
}
