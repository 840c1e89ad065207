/**
 * The UNIQUE INDEX check of a transaction, run when its plan has executed and before anything commits: no two
 * records of a label may share a value of a UNIQUE INDEX field. It reads through the view's base reader, so on
 * several partitions it asks every partition's index (under the coordinator's lock, nothing changes meanwhile); each
 * partition's store keeps a second, local guard (secondary-index.ts `flush`).
 *
 * Values are told apart by their exact index encoding (no length bound, so a long string is its whole self, not the
 * prefix and hash its index key holds).
 *
 * UNIQUE is enforced once the index is active: while it is constructing, duplicates are allowed, and its build
 * ends `blocked` if any remain. A record without the field (or with an unindexed value, such as null) holds nothing.
 * A schemaless database declares no fields: there the fields checked are the written records' own properties that
 * a `create_index` made unique.
 */
import { SilkError } from "../../protocol/errors.js";
import { wait, type Op } from "./ops.js";
import type { RuntimeIndexLookup } from "../../protocol/indexes.js";
import type { IndexRange, RecordKind, StoredRecord } from "../../protocol/records.js";
import type { Schema } from "../../protocol/schema.js";
import { valueToJson, type Value } from "../../protocol/values.js";
import { encodeIndexValue } from "../indexes/index-encoding.js";
import type { TxnView } from "./txn-view.js";

export function checkUniqueWrites(view: TxnView, schema: Schema | undefined, runtimeIndex: RuntimeIndexLookup | undefined): Op<void> {
  return checkUniqueRecords(view.writtenRecords(), view, schema, runtimeIndex);
}

/** The UNIQUE INDEX fields of a label: the schema's, and those an index operation made unique. */
export function uniqueFields(schema: Schema, runtimeIndex: RuntimeIndexLookup | undefined, kind: RecordKind, label: string): string[] {
  const declared = kind === "node" ? schema.nodes.get(label) : kind === "edge" ? schema.edges.get(label) : schema.vectors.get(label);
  const fields: string[] = [];
  for (const field of declared?.fields.values() ?? []) {
    const unique = field.index === "unique" || runtimeIndex?.(kind, label, field.name)?.unique === true;
    if (unique && field.type.kind === "scalar") fields.push(field.name);
  }
  return fields;
}

/**
 * `records` (new or changed, of one transaction) against each other and against the committed holders `view` reads
 * (records the view changed excepted); `unique_violation` for the first value two records would share.
 */
export function* checkUniqueRecords(records: Iterable<StoredRecord>, view: TxnView, schema: Schema | undefined, runtimeIndex: RuntimeIndexLookup | undefined): Op<void> {
  const byLabel = new Map<string, StoredRecord[]>();
  for (const record of records) {
    const key = `${record.kind}:${record.label}`;
    const list = byLabel.get(key);
    if (list) list.push(record);
    else byLabel.set(key, [record]);
  }
  for (const labelled of byLabel.values()) {
    const { kind, label } = labelled[0];
    const fields = schema === undefined ? schemalessUniqueFields(runtimeIndex, kind, label, labelled) : uniqueFields(schema, runtimeIndex, kind, label);
    for (const field of fields) yield* checkField(view, kind, label, field, labelled);
  }
}

/**
 * The UNIQUE fields a schemaless write can break: the properties the written records of one label hold that a
 * `create_index` made unique (a record without the field holds nothing, so no other index can be broken).
 */
function schemalessUniqueFields(runtimeIndex: RuntimeIndexLookup | undefined, kind: RecordKind, label: string, records: readonly StoredRecord[]): string[] {
  if (runtimeIndex === undefined) return [];
  const held = new Set<string>();
  for (const record of records) for (const field of Object.keys(record.props)) held.add(field);
  return [...held].filter((field) => runtimeIndex(kind, label, field)?.unique === true);
}

function* checkField(view: TxnView, kind: RecordKind, label: string, field: string, records: readonly StoredRecord[]): Op<void> {
  const holders = new Map<string, StoredRecord>();
  const ranges: IndexRange[] = [];
  let duplicate: [StoredRecord, StoredRecord] | undefined;
  for (const record of records) {
    const value = record.props[field];
    const encoded = value === undefined ? undefined : encodeIndexValue(value);
    if (encoded === undefined) continue;
    const key = encoded.toString("latin1");
    const earlier = holders.get(key);
    if (earlier !== undefined) duplicate ??= [earlier, record];
    else {
      holders.set(key, record);
      ranges.push({ low: value, lowInclusive: true, high: value, highInclusive: true });
    }
  }
  if (ranges.length === 0) return;
  const committed = yield* wait(view.committedIndexIds(kind, label, field, ranges));
  if (committed === undefined) return; // not active yet: see the module comment
  if (duplicate !== undefined) throw violation(label, field, duplicate[1].props[field], duplicate[0].id);
  // A committed holder this transaction did not touch keeps its value. The index may name a few records that hold
  // another value (long strings are found by their first bytes, index-encoding.ts), so each one's value is compared
  // with the written ones, by its exact encoding.
  const others = committed.filter((id) => !view.isChanged(id));
  if (others.length === 0) return;
  for (const holder of yield* wait(view.records(kind, others))) {
    const value = holder?.props[field];
    const encoded = value === undefined ? undefined : encodeIndexValue(value);
    if (holder !== undefined && encoded !== undefined && holders.has(encoded.toString("latin1"))) throw violation(label, field, value ?? null, holder.id);
  }
}

function violation(label: string, field: string, value: Value, holder: bigint): SilkError {
  return new SilkError("unique_violation", `${label}.${field} is a UNIQUE INDEX: record ${holder} already holds ${JSON.stringify(valueToJson(value))}; nothing was written`);
}
