/**
 * The upgrade of a partition's adjacency from one LMDB entry per edge (data format 2 and before: sub-databases `out`
 * and `in`, `owner(8) | label | 0x00 | edge(8) → other(8) | kind(1)`) to packed blocks (format 3, adjacency.ts), run
 * by a writer's open before anything else reads or writes the partition.
 *
 * It moves entries in chunks, each chunk one write transaction that deletes up to `chunkEntries` old entries and
 * writes them into the packed lists (through the write path's own AdjacencyWriter): at every commit each edge is in
 * exactly one of the two layouts, so a crash between chunks leaves a consistent partition whose next writer open
 * moves the rest. The last transaction records the layout in `meta`; until then readers are kept away by the
 * directory's manifest (a read-only open of a format-2 directory is refused). Chunks bound what one transaction
 * dirties (one transaction over a large partition would hold every page it rewrote until it commits).
 */
import type { Database } from "lmdb";
import type { Direction } from "../../protocol/records.js";
import { AdjacencyWriter } from "./adjacency.js";
import { ID_BYTES } from "../keys.js";

/** The `meta` key recording the adjacency layout; absent before format 3. */
export const META_ADJACENCY_LAYOUT = "adjacency_layout";
export const ADJACENCY_LAYOUT_PACKED = "packed";
/** Old entries moved per transaction: about 0.5 MB of old entries, a few MB of pages dirtied. */
export const ADJACENCY_UPGRADE_CHUNK_ENTRIES = 20_000;

export interface AdjacencyUpgradeOptions {
  /** Old entries moved per transaction (ADJACENCY_UPGRADE_CHUNK_ENTRIES unless a test sets fewer). */
  readonly chunkEntries?: number;
  /** Called after each chunk committed, with the number of chunks so far: tests crash the process here. */
  readonly afterChunk?: (chunks: number) => void;
}

export interface AdjacencyUpgradeStore {
  readonly meta: Database;
  /** The old sub-databases, when the environment has them (a partition created by format 3 has none). */
  readonly legacy: Partial<Record<Direction, Database<Buffer, Buffer>>>;
  readonly packed: Record<Direction, Database<Buffer, Buffer>>;
  /** Runs `body` as one write transaction of the partition. */
  readonly transact: (body: () => void) => void;
}

/** Whether the partition's adjacency is already packed (a writer opened it since format 3, or created it). */
export function adjacencyPacked(meta: Database): boolean {
  return meta.get(META_ADJACENCY_LAYOUT) === ADJACENCY_LAYOUT_PACKED;
}

/** Converts every old entry to the packed layout, then records the layout; does nothing when it is recorded. */
export function upgradeAdjacency(store: AdjacencyUpgradeStore, options: AdjacencyUpgradeOptions = {}): void {
  if (adjacencyPacked(store.meta)) return;
  const chunkEntries = options.chunkEntries ?? ADJACENCY_UPGRADE_CHUNK_ENTRIES;
  let chunks = 0;
  for (const direction of ["out", "in"] as const) {
    const legacy = store.legacy[direction];
    if (legacy === undefined) continue;
    for (;;) {
      let moved = 0;
      store.transact(() => {
        moved = moveChunk(legacy, new AdjacencyWriter(store.packed), direction, chunkEntries);
      });
      if (moved === 0) break;
      chunks += 1;
      options.afterChunk?.(chunks);
    }
  }
  store.transact(() => store.meta.putSync(META_ADJACENCY_LAYOUT, ADJACENCY_LAYOUT_PACKED));
}

/** Moves the first `limit` old entries of one direction into `writer`'s lists; returns how many it moved. */
function moveChunk(legacy: Database<Buffer, Buffer>, writer: AdjacencyWriter, direction: Direction, limit: number): number {
  const keys: Buffer[] = [];
  for (const { key, value } of legacy.getRange({ limit })) {
    // An old entry: owner(8) | label | 0x00 | edge(8) → other(8) | kind(1). The key and the value are laid side by
    // side so that the writer reads every ID from one buffer.
    const labelEnd = key.length - ID_BYTES - 1;
    const ids = Buffer.concat([key, value]);
    writer.put(direction, ids, 0, ids.subarray(ID_BYTES, labelEnd), labelEnd + 1, key.length, value[ID_BYTES]);
    keys.push(key);
  }
  writer.flush();
  for (const key of keys) legacy.removeSync(key);
  return keys.length;
}
