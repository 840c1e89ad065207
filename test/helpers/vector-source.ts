/**
 * IndexRecordSource.vectorInto over an in-memory map of committed records, for family tests whose record source is
 * such a map (the store reads LMDB: node/store/partition-store.ts committedVectorInto).
 */
import type { IndexedRecord, IndexRecordSource } from "../../node/index-family.js";
import { indexVector } from "../../node/indexes/vector-math.js";
import { VECTOR_FIELD } from "../../protocol/indexes.js";

export function mapVectorInto(records: ReadonlyMap<bigint, IndexedRecord>): IndexRecordSource["vectorInto"] {
  return (_kind, id, field, into) => {
    const record = records.get(id);
    const vector = record === undefined ? undefined : indexVector(field === VECTOR_FIELD ? record.vector : record.props[field]);
    if (vector === undefined || vector.length !== into.length) return false;
    into.set(vector);
    return true;
  };
}
