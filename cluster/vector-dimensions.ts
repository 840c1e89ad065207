/**
 * One dimension per vector index across the partitions of a database. A partition fixes an undeclared index's
 * dimension from the first vector it indexes (node/indexes/vector-index.ts) and sees only its own records, so
 * without this check a 2-d vector landing on a partition that holds none yet would be accepted beside 4-d ones
 * committed on the others. The coordinator, which sees every write of a database whole, checks the vectors of a
 * transaction's new and changed records against the dimension the partitions report (their `index_statuses`), and
 * against each other, before anything is sent to a partition: a vector of another length is
 * `vector_dimension_mismatch` and nothing of the transaction is written.
 *
 * Nothing new is stored: the dimension stays persisted where it was, in the `meta` of each partition that indexed a
 * vector, so a reopened coordinator (or a cluster's new writer) learns it from the partitions again.
 *
 * Architecture invariant: `check` runs under the coordinator's write lock, which every write on several partitions
 * and every import batch holds until its commit ended, and index operations hold too: no other write can fix a
 * dimension between the check and the commit. What is cached is refreshed from the partitions whenever it does not
 * settle a record (an index with no dimension known yet, a length the cache refuses), so a stale cache (an index
 * dropped and created again by another coordinator) costs a round trip, never a wrong answer; `forget` drops it after
 * index operations.
 */
import type { SilkError } from "../protocol/errors.js";
import type { IndexStatus, VectorIndexDefinition } from "../protocol/indexes.js";
import type { StoredRecord } from "../protocol/records.js";
import { dimensionMismatch, indexedLength } from "../node/indexes/vector-index.js";

/** A vector index some partition maintains, and every dimension the partitions fixed for it. */
interface KnownIndex {
  readonly definition: VectorIndexDefinition;
  /**
   * Normally none or one. Several only in a database written before this check existed, whose partitions fixed
   * different dimensions: a vector of any of them is let through here (its partition still checks its own), so such
   * a database keeps working and gets no further dimension.
   */
  readonly dimensions: ReadonlySet<number>;
}

/** The vector indexes the partitions maintain, by `kind:label`. */
type Catalog = ReadonlyMap<string, readonly KnownIndex[]>;

function catalogOf(partitions: readonly (readonly IndexStatus[])[]): Catalog {
  const byName = new Map<string, { definition: VectorIndexDefinition; dimensions: Set<number> }>();
  for (const statuses of partitions) {
    for (const status of statuses) {
      if (status.family !== "vector" || status.state === "blocked") continue;
      const key = `${status.kind}:${status.name}`;
      let known = byName.get(key);
      if (known === undefined) byName.set(key, (known = { definition: status, dimensions: new Set() }));
      if (status.dimension !== undefined) known.dimensions.add(status.dimension);
    }
  }
  const catalog = new Map<string, KnownIndex[]>();
  for (const known of byName.values()) {
    const key = `${known.definition.kind}:${known.definition.label}`;
    catalog.set(key, [...(catalog.get(key) ?? []), known]);
  }
  return catalog;
}

/** What a check found wrong: the record's place in the list checked, and the error. */
export interface DimensionMismatch {
  readonly index: number;
  readonly error: SilkError;
}

export class VectorDimensions {
  private catalog: Catalog | undefined;

  /** `statuses`: every partition's index statuses (cluster/index-operations.ts partitionIndexStatuses). */
  constructor(private readonly statuses: () => Promise<IndexStatus[][]>) {}

  /** Forgets what the partitions said (after index operations: an index created, dropped or rebuilt). */
  forget(): void {
    this.catalog = undefined;
  }

  /**
   * The first of `records` (new or changed, in the transaction's order) whose vector contradicts its index's
   * dimension across partitions, or an earlier record of the list in the same index; undefined when none does.
   * Values that are no vectors (or hold components that are no finite numbers) are left to the partitions, which
   * refuse them with their own code.
   */
  async firstMismatch(records: readonly StoredRecord[]): Promise<DimensionMismatch | undefined> {
    if (records.length === 0) return undefined;
    let catalog = this.catalog ?? (this.catalog = catalogOf(await this.statuses()));
    let found = this.scan(catalog, records);
    if (found.settled) return found.mismatch;
    catalog = this.catalog = catalogOf(await this.statuses());
    found = this.scan(catalog, records);
    return found.mismatch;
  }

  /**
   * Checks `records` against `catalog`; `settled` false when the catalog could not decide: an index with no dimension
   * known took its first vector from the list, or a record was refused (the partitions are asked again before either
   * stands).
   */
  private scan(catalog: Catalog, records: readonly StoredRecord[]): { settled: boolean; mismatch?: DimensionMismatch } {
    if (catalog.size === 0) return { settled: true };
    /** Dimensions this list fixes, by index, where the partitions know none. */
    const fixing = new Map<string, number>();
    for (let i = 0; i < records.length; i += 1) {
      const record = records[i];
      if (record.kind === "edge") continue;
      const indexes = catalog.get(`${record.kind}:${record.label}`);
      if (indexes === undefined) continue;
      for (const { definition, dimensions } of indexes) {
        const length = indexedLength(definition, record);
        if (length === undefined || length === 0) continue; // an empty vector is the partition's to refuse
        if (dimensions.size > 0) {
          if (dimensions.has(length)) continue;
          return { settled: false, mismatch: { index: i, error: dimensionMismatch(definition, record.id, length, Math.min(...dimensions)) } };
        }
        const key = `${definition.kind}:${definition.name}`;
        const fixed = fixing.get(key);
        if (fixed === undefined) fixing.set(key, length);
        else if (fixed !== length) return { settled: false, mismatch: { index: i, error: dimensionMismatch(definition, record.id, length, fixed) } };
      }
    }
    return { settled: fixing.size === 0 };
  }
}
