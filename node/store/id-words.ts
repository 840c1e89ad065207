/**
 * Record IDs as two 32-bit words (high, low), for the write path of node/store/partition-store.ts: a mutation list holds
 * IDs as 8 big-endian bytes, and reading them as two numbers costs no BigInt per record. IDs are unsigned 64-bit, so
 * comparing (high, low) pairs in order compares IDs.
 */

/** An ID as its two 32-bit words, high first. */
export function idWords(id: bigint): [number, number] {
  return [Number(id >> 32n), Number(id & 0xffff_ffffn)];
}

/** Whether the ID (high, low) lies in the range of four words at `words[at]` (first high, first low, last high, last low). */
export function wordsWithin(high: number, low: number, words: readonly number[], at: number): boolean {
  const firstHigh = words[at];
  const lastHigh = words[at + 2];
  const atOrAfterFirst = high > firstHigh || (high === firstHigh && low >= words[at + 1]);
  const atOrBeforeLast = high < lastHigh || (high === lastHigh && low <= words[at + 3]);
  return atOrAfterFirst && atOrBeforeLast;
}

/**
 * The highest record ID a write transaction wrote inside the partition's allocation range (records a rebalance
 * brings from other ranges do not move the counter), kept as two 32-bit words so that a record costs no BigInt.
 */
export class IdCounter {
  private high: number;
  private low: number;

  constructor(
    highest: bigint,
    private readonly allocation: readonly number[],
  ) {
    [this.high, this.low] = idWords(highest);
  }

  /** Notes the ID at `at` in `bytes`. */
  saw(bytes: Buffer, at: number): void {
    const high = bytes.readUInt32BE(at);
    const low = bytes.readUInt32BE(at + 4);
    if (high < this.high || (high === this.high && low <= this.low)) return;
    if (!wordsWithin(high, low, this.allocation, 0)) return;
    this.high = high;
    this.low = low;
  }

  /** The ID after the highest one noted (or after the starting one). */
  next(): bigint {
    return ((BigInt(this.high) << 32n) | BigInt(this.low)) + 1n;
  }
}
