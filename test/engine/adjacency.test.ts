/**
 * Packed adjacency (node/store/adjacency.ts) against a plain model: random lists of put_out/delete_out/put_in/delete_in
 * applied to a real partition store on disk, with lists long enough to split into many blocks and edge IDs in any
 * order (inserts in the middle, replacements, deletes of absent edges, a put and a delete of one edge in one list).
 * After each list every reader answers what the model does, in label then edge ID order, and the stored blocks keep
 * the layout's invariants (none larger than ADJACENCY_BLOCK_ENTRIES_MAX, no empty later block, the head's flag set
 * exactly when later blocks follow, entries ascending across blocks and each at or above its block's fence).
 */
import fc from "fast-check";
import { open as openLmdb } from "lmdb";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ADJACENCY_BLOCK_ENTRIES_MAX, ADJACENCY_ENTRY_BYTES, adjacencyBlockLabel, hasLaterBlocks } from "../../node/store/adjacency.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { encodeMutations } from "../../protocol/mutation-codec.js";
import type { AdjacencyEntry, Direction, Mutation } from "../../protocol/records.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";

afterAll(removeTempDirs);

const OWNERS = [1n, 2n, 3n];
const LABELS = ["A", "AB", "Knows"];

type Change =
  | { readonly put: true; readonly direction: Direction; readonly owner: bigint; readonly label: string; readonly edge: bigint; readonly other: bigint; readonly vector: boolean }
  | { readonly put: false; readonly direction: Direction; readonly owner: bigint; readonly label: string; readonly edge: bigint };

// Most changes go to one list (owner 1, out, Knows), so that it grows to several blocks within a run.
const direction = fc.oneof({ weight: 3, arbitrary: fc.constant<Direction>("out") }, { weight: 1, arbitrary: fc.constant<Direction>("in") });
const owner = fc.oneof({ weight: 4, arbitrary: fc.constant(1n) }, { weight: 1, arbitrary: fc.constantFrom(2n, 3n) });
const label = fc.oneof({ weight: 4, arbitrary: fc.constant("Knows") }, { weight: 1, arbitrary: fc.constantFrom("A", "AB") });
// Mostly small IDs (dense lists); a few at the word and u64 boundaries, where fences carry from the low word.
const edge = fc.oneof(
  { weight: 20, arbitrary: fc.bigInt({ min: 1n, max: 400n }) },
  { weight: 1, arbitrary: fc.constantFrom(2n ** 32n - 1n, 2n ** 32n, 2n ** 64n - 2n, 2n ** 64n - 1n) },
);
const change: fc.Arbitrary<Change> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ put: fc.constant(true as const), direction, owner, label, edge, other: fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }), vector: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ put: fc.constant(false as const), direction, owner, label, edge }) },
);

function mutationOf(c: Change): Mutation {
  if (c.put) {
    const kind = c.vector ? ("vector" as const) : ("node" as const);
    return c.direction === "out"
      ? { op: "put_out", source: c.owner, label: c.label, edge: c.edge, target: c.other, targetKind: kind }
      : { op: "put_in", target: c.owner, label: c.label, edge: c.edge, source: c.other, sourceKind: kind };
  }
  return c.direction === "out" ? { op: "delete_out", source: c.owner, label: c.label, edge: c.edge } : { op: "delete_in", target: c.owner, label: c.label, edge: c.edge };
}

/** The model: direction → owner → label → edge → entry. */
type Model = Map<string, Map<bigint, AdjacencyEntry>>;

function applyToModel(model: Model, c: Change): void {
  const name = `${c.direction}|${c.owner}|${c.label}`;
  let list = model.get(name);
  if (list === undefined) model.set(name, (list = new Map()));
  if (c.put) list.set(c.edge, { edge: c.edge, label: c.label, other: c.other, otherKind: c.vector ? "vector" : "node" });
  else list.delete(c.edge);
}

/** What a reader must answer: labels in byte order, then edges ascending. */
function expected(model: Model, direction: Direction, owner: bigint, label: string | undefined): AdjacencyEntry[] {
  const labels = label === undefined ? [...LABELS].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))) : [label];
  return labels.flatMap((name) => [...(model.get(`${direction}|${owner}|${name}`)?.values() ?? [])].sort((a, b) => (a.edge < b.edge ? -1 : 1)));
}

/** Reads every stored block of one direction and checks the layout's invariants. */
function checkBlocks(path: string, direction: Direction): void {
  const root = openLmdb({ path, maxDbs: 16, readOnly: true });
  try {
    const database = root.openDB<Buffer, Buffer>({ name: `adjacency_${direction}`, keyEncoding: "binary", encoding: "binary" });
    const lists = new Map<string, { key: Buffer; value: Buffer }[]>();
    for (const { key, value } of database.getRange({})) {
      const headLength = 8 + Buffer.byteLength(adjacencyBlockLabel(key)) + 1;
      const name = key.subarray(0, headLength).toString("hex");
      const blocks = lists.get(name) ?? [];
      blocks.push({ key: Buffer.from(key), value: Buffer.from(value) });
      lists.set(name, blocks);
    }
    for (const blocks of lists.values()) {
      const [head, ...later] = blocks;
      const headLength = 8 + Buffer.byteLength(adjacencyBlockLabel(head.key)) + 1;
      expect(head.key.length).toBe(headLength);
      expect(hasLaterBlocks(head.value)).toBe(later.length > 0);
      // Only a head with later blocks may be empty.
      if (later.length === 0) expect(head.value.length).toBeGreaterThan(1);
      let previous = 0n;
      for (const [i, block] of blocks.entries()) {
        expect((block.value.length - 1) % ADJACENCY_ENTRY_BYTES).toBe(0);
        const count = (block.value.length - 1) / ADJACENCY_ENTRY_BYTES;
        expect(count).toBeLessThanOrEqual(ADJACENCY_BLOCK_ENTRIES_MAX);
        if (i > 0) {
          expect(count).toBeGreaterThan(0);
          const fence = block.key.readBigUInt64BE(headLength);
          expect(fence).toBeGreaterThan(previous);
          expect(block.value.readBigUInt64BE(1)).toBeGreaterThanOrEqual(fence);
        }
        for (let at = 1; at < block.value.length; at += ADJACENCY_ENTRY_BYTES) {
          const edge = block.value.readBigUInt64BE(at);
          expect(edge).toBeGreaterThan(previous);
          previous = edge;
        }
      }
    }
  } finally {
    void root.close();
  }
}

describe("packed adjacency", () => {
  it("answers what a plain model does after random puts and deletes, in label then edge order, keeping the block invariants", { timeout: 120_000 }, () => {
    const path = join(tempDir("silk-adjacency-"), "p0");
    const store = PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: 0n, idLast: 2n ** 64n - 1n });
    let run = 0;
    try {
      fc.assert(
        fc.property(fc.array(fc.array(change, { minLength: 1, maxLength: 300, size: "max" }), { minLength: 1, maxLength: 4, size: "max" }), (lists) => {
          run += 1;
          // Each run starts from empty lists of its own owners' range: owners shift per run.
          const shift = BigInt(run) * 1000n;
          const model: Model = new Map();
          for (const list of lists) {
            const shifted = list.map((c) => ({ ...c, owner: c.owner + shift }));
            store.apply(encodeMutations(shifted.map(mutationOf)));
            for (const c of shifted) applyToModel(model, c);
            const snapshot = store.snapshot();
            try {
              for (const direction of ["out", "in"] as const) {
                for (const base of OWNERS) {
                  const owner = base + shift;
                  expect(snapshot.adjacency(owner, direction)).toEqual(expected(model, direction, owner, undefined));
                  for (const label of LABELS) {
                    const want = expected(model, direction, owner, label);
                    expect(snapshot.adjacency(owner, direction, label)).toEqual(want);
                    const neighbours: { kind: "node" | "vector"; id: bigint }[] = [];
                    snapshot.neighbours(owner, direction, label, neighbours);
                    expect(neighbours).toEqual(want.map((entry) => ({ kind: entry.otherKind, id: entry.other })));
                  }
                }
              }
            } finally {
              snapshot.close();
            }
          }
          checkBlocks(path, "out");
          checkBlocks(path, "in");
        }),
        { numRuns: 25 },
      );
    } finally {
      void store.close();
    }
  });

  it("keeps a block whose fence is the largest u64 writable", () => {
    const path = join(tempDir("silk-adjacency-"), "p0");
    const store = PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: 0n, idLast: 2n ** 64n - 1n });
    try {
      const last = 2n ** 64n - 1n;
      const put = (edge: bigint, target: bigint): Mutation => ({ op: "put_out", source: 7n, label: "L", edge, target, targetKind: "node" });
      // A full head, then the largest ID: it starts a later block of its own, whose fence has no successor.
      store.apply(encodeMutations(Array.from({ length: ADJACENCY_BLOCK_ENTRIES_MAX }, (_, i) => put(BigInt(i + 1), 1n))));
      store.apply(encodeMutations([put(last, 1n)]));
      store.apply(encodeMutations([put(last, 2n), put(last - 1n, 3n)]));
      const snapshot = store.snapshot();
      const entries = snapshot.adjacency(7n, "out", "L");
      snapshot.close();
      expect(entries.slice(-2).map((entry) => [entry.edge, entry.other])).toEqual([[last - 1n, 3n], [last, 2n]]);
      checkBlocks(path, "out");
    } finally {
      void store.close();
    }
  });

  it("removes emptied blocks, keeps an emptied head while later blocks follow, and clears its flag after the last", () => {
    const path = join(tempDir("silk-adjacency-"), "p0");
    const store = PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: 0n, idLast: 2n ** 64n - 1n });
    const blocks = (): number[] => {
      const root = openLmdb({ path, maxDbs: 16, readOnly: true });
      try {
        return [...root.openDB<Buffer, Buffer>({ name: "adjacency_out", keyEncoding: "binary", encoding: "binary" }).getRange({})].map(({ value }) => (value.length - 1) / ADJACENCY_ENTRY_BYTES);
      } finally {
        void root.close();
      }
    };
    const edges = (): bigint[] => {
      const snapshot = store.snapshot();
      const list = snapshot.adjacency(7n, "out", "L").map((entry) => entry.edge);
      snapshot.close();
      return list;
    };
    const put = (edge: bigint): Mutation => ({ op: "put_out", source: 7n, label: "L", edge, target: 1n, targetKind: "node" });
    const drop = (edge: bigint): Mutation => ({ op: "delete_out", source: 7n, label: "L", edge });
    const max = BigInt(ADJACENCY_BLOCK_ENTRIES_MAX);
    try {
      store.apply(encodeMutations(Array.from({ length: ADJACENCY_BLOCK_ENTRIES_MAX + 2 }, (_, i) => put(BigInt(i + 1)))));
      expect(blocks()).toEqual([ADJACENCY_BLOCK_ENTRIES_MAX, 2]);
      // The later block emptied: it goes, and the head's flag with it.
      store.apply(encodeMutations([drop(max + 1n), drop(max + 2n)]));
      expect(blocks()).toEqual([ADJACENCY_BLOCK_ENTRIES_MAX]);
      checkBlocks(path, "out");
      // The head emptied while a later block follows: it stays, empty and flagged; then the last edge goes, and the list.
      store.apply(encodeMutations([put(max + 5n)]));
      store.apply(encodeMutations([put(max + 6n)]));
      expect(blocks()).toEqual([ADJACENCY_BLOCK_ENTRIES_MAX, 2]);
      store.apply(encodeMutations(Array.from({ length: ADJACENCY_BLOCK_ENTRIES_MAX }, (_, i) => drop(BigInt(i + 1)))));
      expect(edges()).toEqual([max + 5n, max + 6n]);
      expect(blocks()[0]).toBe(0);
      checkBlocks(path, "out");
      store.apply(encodeMutations([drop(max + 5n), drop(max + 6n)]));
      expect({ edges: edges(), blocks: blocks() }).toEqual({ edges: [], blocks: [] });
    } finally {
      void store.close();
    }
  });

  it("splits a long list into blocks of at most ADJACENCY_BLOCK_ENTRIES_MAX and reads it back whole", () => {
    const path = join(tempDir("silk-adjacency-"), "p0");
    const store = PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: 0n, idLast: 2n ** 64n - 1n });
    try {
      const count = 10 * ADJACENCY_BLOCK_ENTRIES_MAX + 3;
      // Appends one edge per list, as edges created one at a time arrive: each write touches the last block only.
      for (let edge = 1n; edge <= BigInt(count); edge += 1n) store.apply(encodeMutations([{ op: "put_out", source: 7n, label: "L", edge, target: edge + 10_000n, targetKind: "node" }]));
      const snapshot = store.snapshot();
      expect(snapshot.adjacency(7n, "out", "L").map((entry) => entry.edge)).toEqual(Array.from({ length: count }, (_, i) => BigInt(i + 1)));
      snapshot.close();
      checkBlocks(path, "out");
      const root = openLmdb({ path, maxDbs: 16, readOnly: true });
      const blocks = [...root.openDB<Buffer, Buffer>({ name: "adjacency_out", keyEncoding: "binary", encoding: "binary" }).getRange({})];
      // Appends fill blocks: ten full ones and the rest.
      expect(blocks.map(({ value }) => (value.length - 1) / ADJACENCY_ENTRY_BYTES)).toEqual([...Array(10).fill(ADJACENCY_BLOCK_ENTRIES_MAX), 3]);
      void root.close();
    } finally {
      void store.close();
    }
  });
});
