/**
 * The partition map: which partition owns which ID. The u64 ID space is cut into N contiguous ranges of equal
 * width, so an ID names its owner without a lookup. N is fixed when a database is created.
 */
import { SilkError } from "../protocol/errors.js";

export const PARTITIONS_MAX = 256;
const ID_SPACE = 2n ** 64n;

export interface PartitionRange {
  readonly index: number;
  readonly first: bigint;
  readonly last: bigint;
}

export class PartitionMap {
  readonly ranges: readonly PartitionRange[];
  private readonly width: bigint;

  constructor(readonly count: number) {
    if (!Number.isInteger(count) || count < 1 || count > PARTITIONS_MAX) {
      throw new SilkError("invalid_option", `partitions must be an integer from 1 to ${PARTITIONS_MAX}, not ${count}`);
    }
    this.width = ID_SPACE / BigInt(count);
    this.ranges = Array.from({ length: count }, (_, index) => ({
      index,
      first: BigInt(index) * this.width,
      last: index === count - 1 ? ID_SPACE - 1n : BigInt(index + 1) * this.width - 1n,
    }));
  }

  partitionOf(id: bigint): number {
    const index = Number(id / this.width);
    return index >= this.count ? this.count - 1 : index;
  }
}
