/**
 * Data format 3 (packed adjacency) and the upgrade of format-2 directories (node/store/adjacency-upgrade.ts). A database
 * of two partitions is written, its answers kept, and its adjacency rewritten in the format-2 layout
 * (fixtures/format-2.ts). Then:
 *
 * - a read-only open of the format-2 directory is refused with `invalid_option`, saying to open it once as a writer;
 * - a writer's open converts it: every traversal answers as before (same records, same order), silk.json says 3, no
 *   old entry is left, and a read-only open now works;
 * - a writer killed (SIGKILL, in a child process) between two chunks of the upgrade leaves each edge in exactly one
 *   of the two layouts and the layout unmarked; the next writer's open finishes the upgrade with the same answers.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { open as openLmdb } from "lmdb";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { adjacencyBlockLabel, readBlockEntries } from "../../node/store/adjacency.js";
import { META_ADJACENCY_LAYOUT } from "../../node/store/adjacency-upgrade.js";
import type { AdjacencyEntry } from "../../protocol/records.js";
import { expectCode, removeTempDirs, snapshot, tempDir, type Contents } from "../helpers/engine.js";
import { nodesById, out, readOne } from "../helpers/tree.js";
import { downgradeToFormat2, format2Entry } from "./fixtures/format-2.js";

afterAll(removeTempDirs);

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const CHILD = fileURLToPath(new URL("./fixtures/adjacency-upgrade-child.ts", import.meta.url));
const PARTITIONS = 2;
const NODES = 160;

interface Built {
  readonly contents: Contents;
  /** The hub's Follows neighbours, in the order a traversal returns them (a list of several blocks). */
  readonly hubFollows: unknown;
  readonly hub: bigint;
}

/** A hub following every node, a chain of Knows, and some Likes; nodes spread over both partitions. */
async function build(directory: string): Promise<Built> {
  const db = await Database.open({ storage: { disk: directory }, partitions: PARTITIONS });
  try {
    const nodes = Array.from({ length: NODES }, (_, i) => ({ label: "User", props: { n: i } }));
    const edges = [
      ...Array.from({ length: NODES - 1 }, (_, i) => ({ label: "Follows", from: { batch: 0 }, to: { batch: i + 1 }, props: {} })),
      ...Array.from({ length: NODES - 1 }, (_, i) => ({ label: "Knows", from: { batch: i }, to: { batch: i + 1 }, props: { w: i } })),
      ...Array.from({ length: NODES / 4 }, (_, i) => ({ label: "Likes", from: { batch: 4 * i + 1 }, to: { batch: (28 * i) % NODES }, props: {} })),
    ];
    const { nodeIds } = await db.importBatch({ nodes, edges });
    // A second batch: the hub's later edges have higher IDs than other nodes' first ones, as in a growing graph.
    await db.importBatch({ nodes: [], edges: Array.from({ length: 80 }, (_, i) => ({ label: "Follows", from: { id: nodeIds[0] }, to: { id: nodeIds[(i * 3) % NODES] }, props: {} })) });
    const hub = nodeIds[0];
    return { contents: await snapshot(db), hubFollows: await db.run(readOne(out(nodesById(hub), "Follows"))), hub };
  } finally {
    await db.close();
  }
}

async function expectAnswers(directory: string, built: Built, mode: "writer" | "readonly"): Promise<void> {
  const db = await Database.open({ storage: { disk: directory }, mode });
  try {
    expect(await snapshot(db)).toEqual(built.contents);
    expect(await db.run(readOne(out(nodesById(built.hub), "Follows")))).toEqual(built.hubFollows);
  } finally {
    await db.close();
  }
}

function manifestFormat(directory: string): number {
  return (JSON.parse(readFileSync(join(directory, "silk.json"), "utf8")) as { format: number }).format;
}

/** Every adjacency entry of a partition in either layout, as `direction|owner|label|edge|other|kind` strings. */
function storedEntries(path: string): { legacy: string[]; packed: string[]; marked: boolean } {
  const root = openLmdb({ path, maxDbs: 16, readOnly: true, encoding: "binary" });
  try {
    const legacy: string[] = [];
    const packed: string[] = [];
    for (const direction of ["out", "in"] as const) {
      const old = root.openDB<Buffer, Buffer>({ name: direction, keyEncoding: "binary", encoding: "binary" });
      for (const { key, value } of old?.getRange({}) ?? []) {
        const labelEnd = key.length - 9;
        legacy.push(`${direction}|${key.readBigUInt64BE(0)}|${key.toString("utf8", 8, labelEnd)}|${key.readBigUInt64BE(labelEnd + 1)}|${value.readBigUInt64BE(0)}|${value[8]}`);
      }
      const blocks = root.openDB<Buffer, Buffer>({ name: `adjacency_${direction}`, keyEncoding: "binary", encoding: "binary" });
      for (const { key, value } of blocks.getRange({})) {
        const entries: AdjacencyEntry[] = [];
        readBlockEntries(value, adjacencyBlockLabel(key), entries);
        for (const entry of entries) {
          const old = format2Entry(key.readBigUInt64BE(0), entry);
          packed.push(`${direction}|${key.readBigUInt64BE(0)}|${entry.label}|${entry.edge}|${entry.other}|${old.value[8]}`);
        }
      }
    }
    const meta = root.openDB({ name: "meta", encoding: "msgpack" });
    return { legacy, packed, marked: meta.get(META_ADJACENCY_LAYOUT) !== undefined };
  } finally {
    void root.close();
  }
}

function runChild(args: readonly string[]): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { cwd: REPO, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (_code, signal) => resolve({ signal, stderr }));
  });
}

describe("adjacency upgrade from data format 2", () => {
  it("refuses a read-only open of a format-2 directory, and a writer's open converts it with every answer kept", { timeout: 60_000 }, async () => {
    const directory = tempDir("silk-upgrade-");
    const built = await build(directory);
    const partition = join(directory, "partitions", "p0");
    const before = storedEntries(partition);
    expect(before.marked).toBe(true);
    await downgradeToFormat2(directory);
    const downgraded = storedEntries(partition);
    expect({ packed: downgraded.packed, marked: downgraded.marked, format: manifestFormat(directory) }).toEqual({ packed: [], marked: false, format: 2 });
    expect(downgraded.legacy.sort()).toEqual([...before.packed].sort());

    const refused = await expectCode(Database.open({ storage: { disk: directory }, mode: "readonly" }), "invalid_option");
    expect(refused.message).toMatch(/holds data format 2.*open it once as a writer/);

    await expectAnswers(directory, built, "writer");
    expect(manifestFormat(directory)).toBe(3);
    for (const name of ["p0", "p1"]) {
      const after = storedEntries(join(directory, "partitions", name));
      expect({ legacy: after.legacy, marked: after.marked }).toEqual({ legacy: [], marked: true });
    }
    expect(storedEntries(partition).packed.sort()).toEqual([...before.packed].sort());
    await expectAnswers(directory, built, "readonly");
  });

  it("resumes an upgrade whose writer was killed between chunks, from a state where each edge is in one layout", { timeout: 60_000 }, async () => {
    const directory = tempDir("silk-upgrade-crash-");
    const built = await build(directory);
    const partition = join(directory, "partitions", "p0");
    const before = storedEntries(partition).packed.sort();
    await downgradeToFormat2(directory);
    const range = new PartitionMap(PARTITIONS).ranges[0];
    const chunkEntries = 20;
    // The partition has hundreds of entries: many chunks of 20, and the child dies after the third.
    expect(before.length).toBeGreaterThan(10 * chunkEntries);
    const exit = await runChild([partition, String(range.first), String(range.last), String(chunkEntries), "3"]);
    expect(exit.stderr).toBe("");
    expect(exit.signal).toBe("SIGKILL");

    const crashed = storedEntries(partition);
    expect(crashed.marked).toBe(false);
    expect(crashed.packed.length).toBe(3 * chunkEntries);
    expect([...crashed.legacy, ...crashed.packed].sort()).toEqual(before);
    expect(manifestFormat(directory)).toBe(2);

    await expectAnswers(directory, built, "writer");
    const after = storedEntries(partition);
    expect({ legacy: after.legacy, marked: after.marked, format: manifestFormat(directory) }).toEqual({ legacy: [], marked: true, format: 3 });
    expect(after.packed.sort()).toEqual(before);
  });
});
