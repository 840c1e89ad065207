/**
 * UNIQUE index builds over several partitions. Each partition builds and checks its own records only, so on several
 * partitions a UNIQUE build ends `validating` (node/index-catalog.ts) and this watcher, run by the writing
 * coordinator, finishes it: once no partition is still constructing the index, it reads every partition's entries
 * (`index_entries`, value order), looks for one value held by two records, and sends every partition the verdict
 * (`index_validated`): active, or blocked with `unique_violation` naming the two records. It holds the coordinator's
 * write lock from reading the entries to the verdict, so no write slips a duplicate in between.
 *
 * It looks while any UNIQUE index is constructing or validating somewhere, every UNIQUE_WATCH_INTERVAL_MS, and stops
 * when none is; the coordinator starts it when it opens and after index operations. A failed look (a partition out of
 * reach) is tried again at the next interval.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { SilkError } from "../protocol/errors.js";
import type { IndexStatus } from "../protocol/indexes.js";
import type { PartitionReplyBody } from "../protocol/messages.js";
import { ID_BYTES } from "../node/keys.js";
import { partitionIndexStatuses } from "./index-operations.js";
import type { PartitionMap } from "./partition-map.js";
import type { Transport } from "./transport.js";

/** How often the watcher looks while a UNIQUE build is under way. */
export const UNIQUE_WATCH_INTERVAL_MS = 100;

export interface UniqueBuildContext {
  readonly transport: Transport;
  /** The partition map in force. */
  map(): PartitionMap;
  /** The coordinator's write lock; resolves with its release. */
  exclusive(): Promise<() => void>;
}

export class UniqueBuildWatcher {
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly stopping = new AbortController();

  constructor(private readonly context: UniqueBuildContext) {}

  /** Starts looking, unless it is already (idempotent). */
  watch(): void {
    if (this.running === undefined && !this.stopped) this.running = this.loop();
  }

  /** Stops looking; resolves once the current look ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    try {
      for (;;) {
        let underWay: boolean;
        try {
          underWay = await this.finishBuilds();
        } catch {
          underWay = true; // a partition out of reach: look again
        }
        if (!underWay || this.stopped) return;
        await sleep(UNIQUE_WATCH_INTERVAL_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
        if (this.stopped) return;
      }
    } finally {
      this.running = undefined;
    }
  }

  /** Finishes every UNIQUE build no partition is still constructing; true while some build is still under way. */
  private async finishBuilds(): Promise<boolean> {
    let underWay = false;
    for (const [, statuses] of uniqueIndexes(await partitionIndexStatuses({ transport: this.context.transport, map: this.context.map(), schema: undefined }))) {
      if (statuses.some((status) => status.state === "constructing")) underWay = true;
      else if (statuses.some((status) => status.state === "validating")) await this.finish(statuses[0]);
    }
    return underWay;
  }

  /** The verdict on one index, under the write lock, after checking again that it still waits for one. */
  private async finish(index: IndexStatus): Promise<void> {
    const release = await this.context.exclusive();
    try {
      const { transport } = this.context;
      const map = this.context.map();
      const statuses = (await partitionIndexStatuses({ transport, map, schema: undefined }))
        .map((list) => list.find((status) => status.kind === index.kind && status.name === index.name));
      if (statuses.some((status) => status === undefined || status.state === "constructing")) return;
      if (!statuses.some((status) => status?.state === "validating")) return;
      const blockedHere = statuses.find((status) => status?.state === "blocked");
      let blocked = blockedHere === undefined ? undefined : { reason: blockedHere.reason ?? "unique_violation", message: blockedHere.message ?? `${index.name} is blocked on a partition` };
      if (blocked === undefined) {
        const replies = await Promise.all(map.partitions.map((partition) => transport.request(partition, { type: "index_entries", kind: index.kind, name: index.name })));
        const duplicate = firstDuplicate(replies.flatMap((reply) => expectEntries(reply)));
        if (duplicate !== undefined) {
          blocked = { reason: "unique_violation", message: `${index.name} must be unique, but records ${duplicate[0]} and ${duplicate[1]} share a value` };
        }
      }
      const verdict = { type: "index_validated", kind: index.kind, name: index.name, ...(blocked === undefined ? {} : { blocked }) } as const;
      await Promise.all(map.partitions.map((partition) => transport.request(partition, verdict)));
    } finally {
      release();
    }
  }
}

/** The UNIQUE secondary indexes, each with its status on every partition (in partition order). */
function uniqueIndexes(perPartition: readonly (readonly IndexStatus[])[]): Map<string, IndexStatus[]> {
  const indexes = new Map<string, IndexStatus[]>();
  for (const statuses of perPartition) {
    for (const status of statuses) {
      if (status.family !== "secondary" || !status.unique) continue;
      const key = `${status.kind}:${status.name}`;
      const list = indexes.get(key);
      if (list === undefined) indexes.set(key, [status]);
      else list.push(status);
    }
  }
  return indexes;
}

function expectEntries(body: PartitionReplyBody): readonly Uint8Array[] {
  if (body.type !== "index_entries") throw new SilkError("internal", `expected an index_entries reply, got ${body.type} (a protocol bug)`);
  return body.entries;
}

/**
 * Two records holding one value, from entries `encoded value | id` of every partition: sorted, a repeated value is
 * in neighbouring entries (the encoding is prefix-free, so equal values are equal bytes before the ID).
 */
export function firstDuplicate(entries: readonly Uint8Array[]): [bigint, bigint] | undefined {
  const sorted = entries.map((entry) => Buffer.from(entry.buffer, entry.byteOffset, entry.byteLength)).sort(Buffer.compare);
  for (let i = 1; i < sorted.length; i++) {
    const [previous, entry] = [sorted[i - 1], sorted[i]];
    if (previous.length === entry.length && previous.compare(entry, 0, entry.length - ID_BYTES, 0, previous.length - ID_BYTES) === 0) {
      return [previous.readBigUInt64BE(previous.length - ID_BYTES), entry.readBigUInt64BE(entry.length - ID_BYTES)];
    }
  }
  return undefined;
}
