/**
 * Schema migrations at open: a writer that opens a partition whose records have an older schema version than the
 * project's applies the project's MIGRATIONs in order (protocol/helixql/schema-versions.ts compiled them into
 * explicit field moves), then records the new version.
 *
 * Each migration runs as one LMDB transaction per partition (`PartitionStore.migrate`): every record of every type it
 * rewrites is read in chunks and written back under its new type and properties, indexes maintained by the same
 * writes. So a crash, a value no cast converts (`invalid_value`) or a write an index refuses (`unique_violation`)
 * leaves the partition exactly at its old version, and the open fails saying why; nothing is half-migrated. The cost
 * is one transaction as large as the rewritten records (LMDB spills its dirty pages to the file as it grows).
 *
 * A partition that holds no record takes the project's version at once; one that holds records but never recorded a
 * version (written before versions existed, or by a project without them) is taken to be at the project's first
 * version.
 */
import { SilkError } from "../../protocol/errors.js";
import type { CompiledMigration, SchemaHistory } from "../../protocol/helixql/schema-versions.js";
import { migrateProperties } from "../../protocol/helixql/schema-versions.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { Mutation, StoredRecord } from "../../protocol/records.js";
import type { PartitionStore } from "./partition-store.js";

/** Records read and written back per list inside a migration's transaction. */
export const MIGRATION_CHUNK_RECORDS = 1_000;

export interface MigrationOptions {
  /** Records per list (MIGRATION_CHUNK_RECORDS). */
  readonly chunkRecords?: number;
  /** Called after each list is written, inside the transaction (the crash tests kill the process there). */
  readonly onChunk?: () => void;
}

/** The version a partition's records have: recorded, or the project's first when it has records but no record. */
export function storedVersion(store: PartitionStore, history: SchemaHistory): number {
  return store.schemaVersion() ?? (store.isEmpty() ? history.version : history.first);
}

/** Brings one partition to the project's schema version. `now` is the value of a NOW literal or DEFAULT. */
export function migratePartition(store: PartitionStore, history: SchemaHistory, now: Date, options: MigrationOptions = {}): void {
  const chunkRecords = options.chunkRecords ?? MIGRATION_CHUNK_RECORDS;
  const recorded = store.schemaVersion();
  const version = storedVersion(store, history);
  if (version > history.version) {
    throw new SilkError("schema_invalid", `the database's records are at schema version ${version}, and this project declares versions up to ${history.version}: open it with the project it was migrated with (or a newer one)`);
  }
  if (version === history.version) {
    if (recorded === undefined) store.migrate(version, () => undefined);
    return;
  }
  const start = history.migrations.findIndex((migration) => migration.from === version);
  if (start < 0) {
    const declared = [history.first, ...history.migrations.map((migration) => migration.to)].map((n) => `schema::${n}`).join(", ");
    throw new SilkError("schema_invalid", `the database's records are at schema version ${version}, which this project does not declare (it declares ${declared}): a migration needs the version it starts from`);
  }
  for (const migration of history.migrations.slice(start)) {
    store.migrate(migration.to, (write) => rewrite(store, migration, now, chunkRecords, (batch) => (write(batch), options.onChunk?.())));
  }
}

/** Rewrites every record the migration's items name. */
function rewrite(store: PartitionStore, migration: CompiledMigration, now: Date, chunkRecords: number, write: (batch: Uint8Array) => void): void {
  for (const item of migration.items) {
    const type = `${{ node: "N", edge: "E", vector: "V" }[item.kind]}::${item.from}`;
    const step = `(MIGRATION schema::${migration.from} => schema::${migration.to})`;
    let after: bigint | undefined;
    for (;;) {
      const chunk = store.labelRecords(item.kind, item.from, after, chunkRecords);
      const mutations: Mutation[] = [];
      for (const record of chunk.records) {
        const migrated = { ...record, label: item.to, props: migrateProperties(item, record.props, now, `${type} ${record.id} ${step}`) } as StoredRecord;
        // A renamed type's record leaves its old label (the label index keys the label) before it is put again.
        if (item.to !== item.from) mutations.push({ op: "delete_record", record });
        mutations.push({ op: "put_record", record: migrated });
      }
      if (mutations.length > 0) write(encodeMutations(mutations));
      if (chunk.done || chunk.last === undefined) break;
      after = chunk.last;
    }
  }
}
