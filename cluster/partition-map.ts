/**
 * The partition map: which partition owns which ID, and which ID range each partition allocates new IDs from.
 *
 * - `entries`: ascending, contiguous {first, last, partition} ranges covering the whole u64 space; `partitionOf`
 *   finds an ID's owner by binary search. A new map (`new PartitionMap(n)`, what every embedded database and a new
 *   cluster use) cuts the space into n equal ranges, entry i owned by partition i, so embedded databases are
 *   unchanged. Rebalancing (cluster/nats/rebalance.ts) reassigns ranges, so a partition may own several entries.
 * - `partitions`: the serving partitions, always 0..count-1. Code that must reach every partition iterates these,
 *   never `entries`.
 * - allocation ranges: each partition's idFirst..idLast (its store hands out IDs only there). A partition being added
 *   has an allocation range but no entry and is not among `partitions` yet (`pending`), so nothing routes to it
 *   before its replicas run.
 * - `version` grows by one with every change; the cluster stores the map in NATS KV (cluster/nats/map-store.ts) and
 *   updates it only by compare-and-set. `toJSON`/`fromJSON` carry bigints as decimal strings.
 *
 * Invariants (checked by `PartitionMap.of`): entries cover 0..2^64-1 without gap or overlap, adjacent entries of one
 * partition are merged, every entry's partition serves, partitions are 0..count-1 (a pending one is `count`).
 * Allocation ranges may overlap: a donor keeps its idFirst..idLast when a new partition's range is carved from it
 * (its store never changes bounds under a running replica), because a store hands out IDs only inside the ranges it
 * owns, and the donor dropped the carved one (cluster/nats/rebalance.ts).
 */
import { SilkError } from "../protocol/errors.js";
import type { IdRange } from "../protocol/records.js";

export const PARTITIONS_MAX = 256;
export const ID_SPACE = 2n ** 64n;
const ID_MAX = ID_SPACE - 1n;

/** One partition's allocation range (`index` is the partition); `ranges` lists them for the serving partitions. */
export interface PartitionRange {
  readonly index: number;
  readonly first: bigint;
  readonly last: bigint;
}

export interface MapEntry {
  readonly first: bigint;
  readonly last: bigint;
  readonly partition: number;
}

export interface PartitionMapState {
  readonly version: number;
  readonly entries: readonly MapEntry[];
  /** Allocation range of partition i at index i: the serving ones, then at most one pending. */
  readonly allocations: readonly IdRange[];
  readonly count: number;
}

/** The JSON form stored in KV. */
export interface PartitionMapJson {
  readonly version: number;
  readonly count: number;
  readonly entries: readonly { first: string; last: string; partition: number }[];
  readonly allocations: readonly { first: string; last: string }[];
}

function checkCount(count: number): void {
  if (!Number.isInteger(count) || count < 1 || count > PARTITIONS_MAX) {
    throw new SilkError("invalid_option", `partitions must be an integer from 1 to ${PARTITIONS_MAX}, not ${count}`);
  }
}

function defaultState(count: number): PartitionMapState {
  checkCount(count);
  const width = ID_SPACE / BigInt(count);
  const allocations = Array.from({ length: count }, (_, index) => ({
    first: BigInt(index) * width,
    last: index === count - 1 ? ID_MAX : BigInt(index + 1) * width - 1n,
  }));
  return { version: 0, count, allocations, entries: allocations.map((range, partition) => ({ ...range, partition })) };
}

export class PartitionMap {
  readonly version: number;
  readonly count: number;
  readonly entries: readonly MapEntry[];
  readonly partitions: readonly number[];
  /** The serving partitions' allocation ranges, in partition order (what each partition's store is opened with). */
  readonly ranges: readonly PartitionRange[];
  private readonly allocations: readonly IdRange[];
  /** Whether listing entries in ID order lists partitions in non-decreasing order (concatenation keeps ID order). */
  readonly idOrderFollowsPartitions: boolean;
  private readonly starts: bigint[];

  /** The default map of `count` equal ranges (version 0). */
  constructor(count: number);
  constructor(count: number, state: PartitionMapState);
  constructor(count: number, state?: PartitionMapState) {
    const checked = state ?? defaultState(count);
    checkState(checked);
    this.version = checked.version;
    this.count = checked.count;
    this.entries = checked.entries.map((entry) => ({ ...entry }));
    this.allocations = checked.allocations.map((range) => ({ first: range.first, last: range.last }));
    this.partitions = Array.from({ length: this.count }, (_, index) => index);
    this.ranges = this.partitions.map((index) => ({ index, ...this.allocations[index] }));
    this.starts = this.entries.map((entry) => entry.first);
    this.idOrderFollowsPartitions = this.entries.every((entry, i) => i === 0 || entry.partition >= this.entries[i - 1].partition);
  }

  /** A map from explicit state, checked (see the module comment). */
  static of(state: PartitionMapState): PartitionMap {
    return new PartitionMap(state.count, state);
  }

  /** The partition owning `id`. */
  partitionOf(id: bigint): number {
    let low = 0;
    let high = this.starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.starts[middle] <= id) low = middle;
      else high = middle - 1;
    }
    return this.entries[low].partition;
  }

  /** A partition's allocation range (also a pending partition's); undefined for an unknown partition. */
  allocationOf(partition: number): IdRange | undefined {
    return this.allocations[partition];
  }

  /** The partition being added (it has an allocation range, no entries, and does not serve yet), if any. */
  get pending(): number | undefined {
    return this.allocations.length > this.count ? this.count : undefined;
  }

  /** The entries (ID ranges) a partition owns, ascending. */
  rangesOf(partition: number): IdRange[] {
    return this.entries.filter((entry) => entry.partition === partition).map(({ first, last }) => ({ first, last }));
  }

  /** The next version with a partition pending, allocating from `allocation` (rebalance: after its donor dropped it). */
  withPending(allocation: IdRange): PartitionMap {
    if (this.pending !== undefined) throw new SilkError("invalid_option", `partition ${this.pending} is already being added`);
    if (this.count >= PARTITIONS_MAX) throw new SilkError("limit_exceeded", `a cluster has at most ${PARTITIONS_MAX} partitions`);
    return PartitionMap.of({ version: this.version + 1, count: this.count, entries: this.entries, allocations: [...this.allocations, allocation] });
  }

  /** The next version with the pending partition serving, owning its allocation range. */
  withPendingServing(): PartitionMap {
    const partition = this.pending;
    if (partition === undefined) throw new SilkError("invalid_option", "no partition is being added");
    const moved = this.reassigned(this.allocations[partition], partition);
    return PartitionMap.of({ version: this.version + 1, count: this.count + 1, entries: moved, allocations: this.allocations });
  }

  /** The next version with `range` owned by `partition`. */
  withRange(range: IdRange, partition: number): PartitionMap {
    if (partition < 0 || partition >= this.count || !Number.isInteger(partition)) throw new SilkError("invalid_option", `no partition ${partition}`);
    return PartitionMap.of({ version: this.version + 1, count: this.count, entries: this.reassigned(range, partition), allocations: this.allocations });
  }

  private reassigned(range: IdRange, partition: number): MapEntry[] {
    if (range.first > range.last || range.first < 0n || range.last > ID_MAX) throw new SilkError("invalid_option", `bad ID range ${range.first}..${range.last}`);
    const result: MapEntry[] = [{ first: range.first, last: range.last, partition }];
    for (const entry of this.entries) {
      if (entry.last < range.first || entry.first > range.last) result.push(entry);
      else {
        if (entry.first < range.first) result.push({ first: entry.first, last: range.first - 1n, partition: entry.partition });
        if (entry.last > range.last) result.push({ first: range.last + 1n, last: entry.last, partition: entry.partition });
      }
    }
    result.sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
    return merged(result);
  }

  toJSON(): PartitionMapJson {
    return {
      version: this.version,
      count: this.count,
      entries: this.entries.map((entry) => ({ first: String(entry.first), last: String(entry.last), partition: entry.partition })),
      allocations: this.allocations.map((range) => ({ first: String(range.first), last: String(range.last) })),
    };
  }

  static fromJSON(value: unknown): PartitionMap {
    const bad = (why: string): never => {
      throw new SilkError("internal", `the stored partition map is malformed: ${why}`);
    };
    if (typeof value !== "object" || value === null) return bad("not an object");
    const json = value as Partial<PartitionMapJson>;
    const id = (text: unknown): bigint => (typeof text === "string" && /^[0-9]{1,20}$/.test(text) ? BigInt(text) : bad(`${JSON.stringify(text)} is not an ID`));
    if (!Number.isInteger(json.version) || json.version! < 0) bad("version");
    if (!Array.isArray(json.entries) || !Array.isArray(json.allocations) || typeof json.count !== "number") bad("entries, allocations or count missing");
    try {
      return PartitionMap.of({
        version: json.version!,
        count: json.count!,
        entries: json.entries!.map((entry) => ({ first: id(entry.first), last: id(entry.last), partition: entry.partition })),
        allocations: json.allocations!.map((range) => ({ first: id(range.first), last: id(range.last) })),
      });
    } catch (cause) {
      if (cause instanceof SilkError && cause.code === "internal") throw cause;
      return bad((cause as Error).message);
    }
  }
}

/** Adjacent entries of one partition joined. */
function merged(entries: readonly MapEntry[]): MapEntry[] {
  const result: MapEntry[] = [];
  for (const entry of entries) {
    const last = result[result.length - 1];
    if (last !== undefined && last.partition === entry.partition && last.last + 1n === entry.first) result[result.length - 1] = { ...last, last: entry.last };
    else result.push(entry);
  }
  return result;
}

function checkState(state: PartitionMapState): void {
  checkCount(state.count);
  const bad = (why: string): never => {
    throw new SilkError("invalid_option", `invalid partition map: ${why}`);
  };
  if (!Number.isInteger(state.version) || state.version < 0) bad("version must be a non-negative integer");
  if (state.entries.length === 0) bad("no entries");
  let next = 0n;
  state.entries.forEach((entry, i) => {
    if (entry.first !== next) bad(`entry ${i} starts at ${entry.first}, not ${next}`);
    if (entry.last < entry.first) bad(`entry ${i} ends before it starts`);
    if (!Number.isInteger(entry.partition) || entry.partition < 0 || entry.partition >= state.count) bad(`entry ${i} names partition ${entry.partition}, which does not serve`);
    if (i > 0 && state.entries[i - 1].partition === entry.partition) bad(`entries ${i - 1} and ${i} of partition ${entry.partition} are not merged`);
    next = entry.last + 1n;
  });
  if (next !== ID_SPACE) bad("the entries do not cover the ID space");
  if (state.allocations.length !== state.count && state.allocations.length !== state.count + 1) bad("one allocation range per partition (and at most one pending)");
  for (const range of state.allocations) {
    if (range.first > range.last || range.last > ID_MAX || range.first < 0n) bad(`allocation range ${range.first}..${range.last}`);
  }
}
