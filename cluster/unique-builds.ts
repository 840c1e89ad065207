/**
 * UNIQUE index builds over several partitions. Each partition builds and checks its own records only, so on several
 * partitions a UNIQUE build ends `validating` (node/indexes/index-catalog.ts) and this watcher, run by the writing
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
import type { IndexStatus } from "../protocol/indexes.js";
import { duplicateProblem, firstRepeatedValue } from "../node/indexes/secondary-index.js";
import { partitionIndexStatuses } from "./index-operations.js";
import type { PartitionMap } from "./partition-map.js";
import { expect } from "./scatter-reader.js";
import type { Transport } from "./transport.js";

/** How often the watcher looks while a UNIQUE build is under way. */
export const UNIQUE_WATCH_INTERVAL_MS = 100;

/** Where a verdict stands: checked and about to be sent, or applied by the first partition only (a test hook). */
export type ValidationPhase = "checked" | "verdict_first";

export interface UniqueBuildContext {
  readonly transport: Transport;
  /** Called at each ValidationPhase (crash tests kill the process there). */
  readonly onPhase?: (phase: ValidationPhase) => void;
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
    for (const statuses of uniqueIndexes(await partitionIndexStatuses({ transport: this.context.transport, map: this.context.map(), schema: undefined }))) {
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
        // Each partition's entries are in value order; together they are sorted again before neighbours are compared.
        const entries = replies.flatMap((reply) => expect(reply, "index_entries").entries.map((entry) => Buffer.from(entry.buffer, entry.byteOffset, entry.byteLength)));
        blocked = duplicateProblem(index.name, firstRepeatedValue(entries.sort(Buffer.compare)));
      }
      const verdict = { type: "index_validated", kind: index.kind, name: index.name, ...(blocked === undefined ? {} : { blocked }) } as const;
      this.context.onPhase?.("checked");
      // One partition after the other. A crash in between leaves some with the verdict and the rest validating, and
      // the next writer's watcher checks again and sends the verdict to all (applying one twice changes nothing).
      for (const [i, partition] of map.partitions.entries()) {
        await transport.request(partition, verdict);
        if (i === 0) this.context.onPhase?.("verdict_first");
      }
    } finally {
      release();
    }
  }
}

/** The UNIQUE secondary indexes, each as its status on every partition (in partition order). */
function uniqueIndexes(perPartition: readonly (readonly IndexStatus[])[]): Iterable<IndexStatus[]> {
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
  return indexes.values();
}
