/**
 * The cluster's partition map (cluster/partition-map.ts) in the NATS KV bucket `SILK_<CLUSTER>_MAP` (replicated
 * like the decision bucket, allow_direct false so every read goes to the stream leader and never answers stale):
 *
 * - key `map`: the map's JSON (bigints as strings). Created from the manifest's partition count by the first
 *   process that needs it (KV create: every process creates the same default map, one wins, the rest read it);
 *   afterwards changed only by compare-and-set on its revision (`replace`), so two writers cannot both move it.
 * - key `move`: the progress of a range move in flight (cluster/nats/rebalance.ts): absent when none runs.
 *
 * Read-only coordinators follow the map with `watch` (a KV watch of key `map`), so a partition added or a range
 * moved reaches them without a restart.
 *
 * Invariant: a write whose acknowledgement was lost is recognised by reading the key back: if it holds what was
 * written, the write happened; if another value, it is a conflict (`transaction_conflict`); otherwise it is tried
 * again until the deadline (`partition_unavailable`).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { KV, KvWatchEntry } from "@nats-io/kv";
import { backoffMs, type Backoff } from "../../platform/backoff.js";
import type { NatsConnection, QueuedIterator } from "@nats-io/transport-node";
import { SilkError } from "../../protocol/errors.js";
import type { IdRange } from "../../protocol/records.js";
import { PartitionMap } from "../partition-map.js";
import { subjects } from "./subjects.js";
import { openBucket, retrying } from "./kv-buckets.js";

export const MAP_KEY = "map";
export const MOVE_KEY = "move";
const DEADLINE_MS_DEFAULT = 20_000;
/** The wait before a map watch that ended or failed (NATS unreachable, the bucket's stream leader moving) is opened again. */
const WATCH_RETRY: Backoff = { firstMs: 100, maxMs: 5_000, jitter: "equal" };

/** A range move in flight: the chunks still to move from `from` to `to`, in order (the first is under way). */
export interface MoveProgress {
  readonly from: number;
  readonly to: number;
  readonly chunks: readonly IdRange[];
}

export interface Versioned<T> {
  readonly value: T;
  readonly revision: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function moveJson(move: MoveProgress): string {
  return JSON.stringify({ from: move.from, to: move.to, chunks: move.chunks.map((c) => ({ first: String(c.first), last: String(c.last) })) });
}

function parseMove(text: string): MoveProgress {
  const value = JSON.parse(text) as { from: unknown; to: unknown; chunks: { first: string; last: string }[] };
  if (!Number.isInteger(value.from) || !Number.isInteger(value.to) || !Array.isArray(value.chunks)) throw new SilkError("internal", `the stored move is malformed: ${text}`);
  return { from: value.from as number, to: value.to as number, chunks: value.chunks.map((c) => ({ first: BigInt(c.first), last: BigInt(c.last) })) };
}

export interface MapStoreOptions {
  readonly nc: NatsConnection;
  readonly cluster: string;
  readonly replicas: number;
  readonly deadlineMs?: number;
}

export class MapStore {
  private constructor(
    private readonly kv: KV,
    private readonly deadlineMs: number,
  ) {}

  /** Opens the bucket, creating it if absent. */
  static async open(options: MapStoreOptions): Promise<MapStore> {
    const deadlineMs = options.deadlineMs ?? DEADLINE_MS_DEFAULT;
    const name = subjects.mapBucket(options.cluster);
    const kv = await openBucket(options.nc, name, options.replicas, Date.now() + deadlineMs);
    return new MapStore(kv, deadlineMs);
  }

  /** The stored map; created as the default map of `partitions` equal ranges when there is none yet. */
  async load(partitions: number): Promise<Versioned<PartitionMap>> {
    const initial = new PartitionMap(partitions);
    return retrying("the map bucket", "loading the partition map", Date.now() + this.deadlineMs, async () => {
      const held = await this.read();
      if (held !== undefined) return held;
      await this.kv.create(MAP_KEY, encoder.encode(JSON.stringify(initial))).catch(() => undefined); // another may have won
      const created = await this.read();
      if (created === undefined) throw new Error("the map was not created");
      return created;
    });
  }

  /** The stored map, or undefined when none was created yet. */
  async read(): Promise<Versioned<PartitionMap> | undefined> {
    const entry = await this.kv.get(MAP_KEY);
    if (entry === null || entry.operation !== "PUT") return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(decoder.decode(entry.value));
    } catch {
      throw new SilkError("internal", "the stored partition map is not JSON");
    }
    return { value: PartitionMap.fromJSON(parsed), revision: entry.revision };
  }

  /**
   * Calls `onChange` with each stored map of a revision above `revision`, in revision order, until `stop()`. A watch
   * that ends or fails is opened again (with backoff) from the stored value, so a change may be seen late, never
   * missed, and the newest map is always the last one passed. `onChange` is awaited before the next change.
   */
  watch(revision: number, onChange: (map: Versioned<PartitionMap>) => Promise<void> | void): { stop(): Promise<void> } {
    let stopped = false;
    let seen = revision;
    let iterator: QueuedIterator<KvWatchEntry> | undefined;
    const stopping = new AbortController();
    const follow = async (): Promise<void> => {
      for (let attempt = 0; !stopped; attempt++) {
        try {
          // Delivers the stored value first, then every later one.
          iterator = await this.kv.watch({ key: MAP_KEY });
          if (stopped) {
            iterator.stop();
            break;
          }
          for await (const entry of iterator) {
            attempt = 0;
            if (entry.operation !== "PUT" || entry.revision <= seen) continue;
            seen = entry.revision;
            await onChange({ value: PartitionMap.fromJSON(JSON.parse(decoder.decode(entry.value))), revision: entry.revision });
          }
        } catch {
          // Opened again below: NATS unreachable, or the watch's consumer lost.
        }
        if (!stopped) await sleep(backoffMs(WATCH_RETRY, attempt), undefined, { signal: stopping.signal }).catch(() => undefined);
      }
    };
    const following = follow();
    return {
      stop: async () => {
        stopped = true;
        stopping.abort();
        iterator?.stop();
        await following;
      },
    };
  }

  /** Replaces the map held at `revision` with `map`; transaction_conflict when another write came first. */
  async replace(map: PartitionMap, revision: number): Promise<number> {
    return this.compareAndSet(MAP_KEY, JSON.stringify(map), revision);
  }

  async readMove(): Promise<Versioned<MoveProgress> | undefined> {
    const entry = await retrying("the map bucket", "reading the move in progress", Date.now() + this.deadlineMs, () => this.kv.get(MOVE_KEY));
    if (entry === null || entry.operation !== "PUT") return undefined;
    return { value: parseMove(decoder.decode(entry.value)), revision: entry.revision };
  }

  /** Records a move's progress: `revision` undefined creates it (none may be in flight). */
  async writeMove(move: MoveProgress, revision: number | undefined): Promise<number> {
    return this.compareAndSet(MOVE_KEY, moveJson(move), revision);
  }

  async clearMove(): Promise<void> {
    await retrying("the map bucket", "clearing the finished move", Date.now() + this.deadlineMs, () => this.kv.delete(MOVE_KEY));
  }

  private async compareAndSet(key: string, text: string, revision: number | undefined): Promise<number> {
    const bytes = encoder.encode(text);
    return retrying("the map bucket", `writing ${key}`, Date.now() + this.deadlineMs, async () => {
      try {
        return revision === undefined ? await this.kv.create(key, bytes) : await this.kv.update(key, bytes, revision);
      } catch (cause) {
        const entry = await this.kv.get(key);
        const held = entry === null || entry.operation !== "PUT" ? undefined : decoder.decode(entry.value);
        if (held === text) return entry!.revision; // the write happened; its acknowledgement was lost
        if ((revision === undefined && held !== undefined) || (revision !== undefined && entry !== null && entry.revision !== revision)) {
          throw new SilkError("transaction_conflict", `the cluster's ${key} changed meanwhile (another coordinator or move): retry`);
        }
        throw cause;
      }
    });
  }
}

