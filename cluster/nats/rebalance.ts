/**
 * Online rebalancing, run by the coordinator (the `silk serve --cluster` process; docs/CLUSTER.md "Rebalancing"):
 *
 * - `carvePartition()`: the partition with the most free IDs (owned IDs above its next ID, found by allocating one)
 *   gives the upper half of its largest free range to a new partition N: it checks the range holds nothing, drops it
 *   through its log (drop_range), and the map records N as pending with that allocation range. N's replicas are then
 *   started with it as idFirst..idLast (bin/partition.ts reads it from the map).
 * - `activatePartition()`: once N's leader answers, the map makes N serve (it owns its allocation range) and N gets
 *   the runtime indexes the other partitions hold.
 * - `move({ from, to, ids })`: moves the upper `ids` of P's used IDs (default half) to Q in chunks of CHUNK_IDS.
 *   Each chunk runs under the coordinator's write lock (`Coordinator.exclusive`: no transaction in flight, so no
 *   2PC intent spans it): export from P's leader (a snapshot), add_ranges + apply on Q, flip the map (KV
 *   compare-and-set, version+1, then the coordinator's in-memory map), drop_range on P. Between chunks the lock is
 *   released, so reads and writes go on.
 *
 * Invariants:
 * - The map flip is a chunk's commit point. The progress (the chunks left) is in KV key `move` before the first
 *   chunk starts; a coordinator that starts with a move recorded resumes it (`resume`): a chunk the map already
 *   gives to Q only needs P's drop again (idempotent); one it does not is copied again after Q drops its partial copy.
 * - Only IDs below Q's next ID move (else Q's ID counter would jump into the moved range): such a move is refused.
 * - The admin requests arrive on NATS subject `silk.<cluster>.admin` (JSON), answered only by a writer coordinator.
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { asSilkError, SilkError } from "../../protocol/errors.js";
import type { PartitionReplyBody } from "../../protocol/messages.js";
import { decodeMutations } from "../../protocol/mutation-codec.js";
import type { IdRange } from "../../protocol/records.js";
import type { IndexDefinition, IndexStatus } from "../../protocol/indexes.js";
import type { Coordinator } from "../coordinator.js";
import { partitionIndexStatuses } from "../index-operations.js";
import type { MapStore } from "./map-store.js";
import type { PartitionMap } from "../partition-map.js";
import type { Transport } from "../transport.js";
import { subjects } from "./subjects.js";

/** IDs per chunk: each chunk is one pause of the coordinator's write lock. */
export const CHUNK_IDS = 1_024;

export interface RebalancerOptions {
  readonly coordinator: Coordinator;
  readonly transport: Transport;
  readonly maps: MapStore;
  /** The revision of the map the coordinator holds (map-store's load). */
  readonly revision: number;
  readonly chunkIds?: number;
  /** Fault-injection hook (tests): called as a chunk reaches each step; may throw to stop the move there. */
  readonly onMoveStep?: (step: "copied" | "flipped" | "dropped", chunk: IdRange) => void;
}

export interface MoveRequest {
  readonly from: number;
  readonly to: number;
  /** How many IDs to move (the upper ones of `from`'s used IDs); default half of them. */
  readonly ids?: number;
}

export interface MoveResult {
  readonly from: number;
  readonly to: number;
  readonly ids: string;
  readonly chunks: number;
  readonly version: number;
}

function expectBody<T extends PartitionReplyBody["type"]>(body: PartitionReplyBody, type: T): Extract<PartitionReplyBody, { type: T }> {
  if (body.type !== type) throw new SilkError("internal", `expected a ${type} reply, got ${body.type} (a protocol bug)`);
  return body as Extract<PartitionReplyBody, { type: T }>;
}

const size = (range: IdRange): bigint => range.last - range.first + 1n;

export class Rebalancer {
  private revision: number;
  /** One admin operation at a time. */
  private busy: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: RebalancerOptions) {
    this.revision = options.revision;
  }

  private get map(): PartitionMap {
    return this.options.coordinator.currentMap();
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.busy.then(work, work);
    this.busy = run.catch(() => undefined);
    return run;
  }

  /** Stores a new map version (compare-and-set) and swaps the coordinator's, under its write lock. */
  private async flip(next: PartitionMap, setMap: (map: PartitionMap) => void): Promise<void> {
    this.revision = await this.options.maps.replace(next, this.revision);
    setMap(next);
  }

  /** The first ID `partition` would hand out next (allocating it: an ID skipped, never reused). */
  private async nextId(partition: number): Promise<bigint> {
    return expectBody(await this.options.transport.request(partition, { type: "allocate_ids", count: 1 }), "id").id;
  }

  private async owned(partition: number): Promise<readonly IdRange[]> {
    return expectBody(await this.options.transport.request(partition, { type: "owned_ranges" }), "ranges").ranges;
  }

  /** Carves a new partition's allocation range (or returns the pending one a crashed attempt carved). */
  carvePartition(): Promise<{ partition: number; range: IdRange }> {
    return this.serial(() =>
      this.options.coordinator.exclusive(async ({ setMap }) => {
        const pending = this.map.pending;
        if (pending !== undefined) return { partition: pending, range: this.map.allocationOf(pending)! };
        let best: { partition: number; range: IdRange } | undefined;
        for (const partition of this.map.partitions) {
          const next = await this.nextId(partition);
          for (const range of await this.owned(partition)) {
            const free = range.last >= next ? { first: next > range.first ? next : range.first, last: range.last } : undefined;
            if (free !== undefined && (best === undefined || size(free) > size(best.range))) best = { partition, range: free };
          }
        }
        if (best === undefined || size(best.range) < 2n * BigInt(CHUNK_IDS)) throw new SilkError("limit_exceeded", "no partition has free IDs to give a new partition");
        const carved = { first: best.range.first + size(best.range) / 2n, last: best.range.last };
        const { transport } = this.options;
        const held = expectBody(await transport.request(best.partition, { type: "export_range", range: carved }), "batch").batch;
        if (decodeMutations(held).length > 0) throw new SilkError("internal", `internal error (a bug in Silk): partition ${best.partition} holds records above its next ID`);
        await transport.request(best.partition, { type: "drop_range", range: carved });
        await this.flip(this.map.withPending(carved), setMap);
        return { partition: this.map.pending!, range: carved };
      }),
    );
  }

  /** Makes the pending partition serve (its replicas run); it gets the runtime indexes the others hold. */
  activatePartition(): Promise<{ partition: number; version: number }> {
    return this.serial(() =>
      this.options.coordinator.exclusive(async ({ setMap }) => {
        const partition = this.map.pending;
        if (partition === undefined) throw new SilkError("invalid_option", "no partition is being added (run carve first)");
        const { transport } = this.options;
        const owned = await this.owned(partition);
        const allocation = this.map.allocationOf(partition)!;
        if (owned.length !== 1 || owned[0].first !== allocation.first || owned[0].last !== allocation.last) {
          throw new SilkError("internal", `partition ${partition}'s store does not own its allocation range ${allocation.first}..${allocation.last} (opened with another range?)`);
        }
        const runtime = new Map<string, IndexDefinition>();
        for (const statuses of await partitionIndexStatuses({ transport, map: this.map, schema: undefined })) {
          for (const status of statuses) if (status.origin === "runtime" && status.state !== "blocked") runtime.set(`${status.kind}:${status.name}`, definitionOf(status));
        }
        for (const definition of runtime.values()) await transport.request(partition, { type: "index_create", definition });
        await this.flip(this.map.withPendingServing(), setMap);
        return { partition, version: this.map.version };
      }),
    ).then(async (result) => (await this.options.coordinator.loadIndexCatalog(), result));
  }

  /** Plans and runs a move (see the module comment); refuses while another move is recorded. */
  move(request: MoveRequest): Promise<MoveResult> {
    return this.serial(async () => {
      const { from, to } = request;
      const map = this.map;
      for (const partition of [from, to]) if (!map.partitions.includes(partition)) throw new SilkError("invalid_option", `no serving partition ${partition}`);
      if (from === to) throw new SilkError("invalid_option", "--from and --to name the same partition");
      if (request.ids !== undefined && (!Number.isSafeInteger(request.ids) || request.ids < 1)) throw new SilkError("invalid_option", "--ids must be a positive integer");
      if ((await this.options.maps.readMove()) !== undefined) throw new SilkError("invalid_option", "a move is already in progress (it resumes when its coordinator restarts)");
      const chunks = await this.options.coordinator.exclusive(async () => {
        const next = await this.nextId(from);
        const allocation = map.allocationOf(from);
        const used = usedRanges(await this.owned(from), allocation, next);
        const total = used.reduce((sum, range) => sum + size(range), 0n);
        const wanted = request.ids === undefined ? total / 2n : BigInt(request.ids);
        if (wanted <= 0n) throw new SilkError("invalid_option", `partition ${from} has no used IDs to move`);
        if (wanted > total) throw new SilkError("invalid_option", `partition ${from} has ${total} used IDs, fewer than ${wanted}`);
        const planned = chunksOf(used, wanted, BigInt(this.options.chunkIds ?? CHUNK_IDS));
        return planned;
      });
      await this.options.maps.writeMove({ from, to, chunks }, undefined);
      const moved = await this.runMove();
      return { from, to, ids: String(chunks.reduce((sum, chunk) => sum + size(chunk), 0n)), chunks: moved, version: this.map.version };
    });
  }

  /** Finishes a move a crashed coordinator left recorded; resolves with the chunks moved (0: none was recorded). */
  resume(): Promise<number> {
    return this.serial(() => this.runMove());
  }

  private async runMove(): Promise<number> {
    const { maps, transport, onMoveStep } = this.options;
    let moved = 0;
    for (;;) {
      const progress = await maps.readMove();
      if (progress === undefined) return moved;
      const { from, to, chunks } = progress.value;
      if (chunks.length === 0) {
        await maps.clearMove();
        return moved;
      }
      const chunk = chunks[0];
      await this.options.coordinator.exclusive(async ({ setMap }) => {
        if (!this.flipped(chunk, to)) {
          // A copy a crash interrupted before its flip: Q drops whatever part of it arrived, then it is copied again.
          await transport.request(to, { type: "drop_range", range: chunk });
          const batch = expectBody(await transport.request(from, { type: "export_range", range: chunk }), "batch").batch;
          await transport.request(to, { type: "add_ranges", ranges: [chunk] });
          await transport.request(to, { type: "apply", batch });
          onMoveStep?.("copied", chunk);
          await this.flip(this.map.withRange(chunk, to), setMap);
          onMoveStep?.("flipped", chunk);
        }
        await transport.request(from, { type: "drop_range", range: chunk });
        onMoveStep?.("dropped", chunk);
      });
      await maps.writeMove({ from, to, chunks: chunks.slice(1) }, progress.revision);
      moved += 1;
    }
  }

  /** Whether the map gives every ID of `chunk` to `to` (the chunk's flip happened). */
  private flipped(chunk: IdRange, to: number): boolean {
    return this.map.entries.some((entry) => entry.partition === to && entry.first <= chunk.first && entry.last >= chunk.last);
  }

  /** Answers admin requests on `silk.<cluster>.admin` (JSON in, JSON out) until the subscription closes. */
  serveAdmin(nc: NatsConnection, cluster: string): Subscription {
    const subscription = nc.subscribe(subjects.admin(cluster));
    void (async () => {
      for await (const message of subscription) {
        void this.admin(message.data).then((reply) => message.respond(new TextEncoder().encode(JSON.stringify(reply))));
      }
    })();
    return subscription;
  }

  private async admin(data: Uint8Array): Promise<Record<string, unknown>> {
    try {
      const request = JSON.parse(new TextDecoder().decode(data)) as { action?: string; from?: number; to?: number; ids?: number };
      switch (request.action) {
        case "carve": {
          const { partition, range } = await this.carvePartition();
          return { ok: true, partition, first: String(range.first), last: String(range.last) };
        }
        case "activate":
          return { ok: true, ...(await this.activatePartition()) };
        case "move":
          return { ok: true, ...(await this.move({ from: Number(request.from), to: Number(request.to), ids: request.ids })) };
        case "map":
          return { ok: true, map: this.map.toJSON() };
        default:
          throw new SilkError("invalid_option", `unknown admin action ${JSON.stringify(request.action)}`);
      }
    } catch (cause) {
      const error = asSilkError(cause);
      return { ok: false, code: error.code, message: error.message };
    }
  }
}

/** The top `wanted` IDs of `used` (ascending ranges), as chunks of at most `chunk` IDs, highest first. */
/**
 * The IDs of a partition that can hold records: of its own allocation range, those below its next ID; every range
 * it owns outside it (brought by earlier moves) whole.
 */
export function usedRanges(owned: readonly IdRange[], allocation: IdRange | undefined, next: bigint): IdRange[] {
  const used: IdRange[] = [];
  for (const range of owned) {
    const inside = allocation !== undefined && range.first >= allocation.first && range.last <= allocation.last;
    if (!inside) used.push(range);
    else if (range.first < next) used.push({ first: range.first, last: range.last < next ? range.last : next - 1n });
  }
  return used;
}

export function chunksOf(used: readonly IdRange[], wanted: bigint, chunk: bigint): IdRange[] {
  const chunks: IdRange[] = [];
  let left = wanted;
  for (let i = used.length - 1; i >= 0 && left > 0n; i--) {
    let last = used[i].last;
    while (left > 0n && last >= used[i].first) {
      const take = [chunk, left, last - used[i].first + 1n].reduce((a, b) => (a < b ? a : b));
      chunks.push({ first: last - take + 1n, last });
      left -= take;
      last -= take;
    }
  }
  return chunks;
}

/** An index status without its progress fields: the definition `index_create` takes. */
function definitionOf(status: IndexStatus): IndexDefinition {
  const { state: _state, origin: _origin, entities: _entities, bytes: _bytes, operations: _operations, reason: _reason, message: _message, ...definition } = status;
  return definition as unknown as IndexDefinition;
}
