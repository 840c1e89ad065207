/**
 * Crash tests of two-phase commit (STYLE.md, "Faults on purpose"). A child process (fixtures/crash-child.ts) runs a
 * write spanning two partitions of a three-partition disk database and kills itself with SIGKILL at one phase of
 * two-phase commit. The parent then checks, all-or-nothing:
 *
 * - a read-only open is refused (`invalid_option`) while prepared intents await recovery;
 * - reopening as a writer recovers: before the decision is logged the write is absent everywhere, from the decision
 *   on it is present everywhere (edge record, out-adjacency at the source, in-adjacency at the target);
 * - the raw partition stores agree (no intent left, no stray adjacency entry), and recovery is idempotent.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { CommitPhase } from "../../cluster/coordinator.js";
import { Database } from "../../runtime/embedded.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import type { Direction, RecordKind } from "../../protocol/records.js";
import { expectCode, ids, partitionOf, removeTempDirs, snapshot, tempDir } from "../helpers/engine.js";
import { addE, addN, edges, in_, inE, nodesById, out, outE, readOne, ref, writeOne, type TreeNode } from "../helpers/tree.js";

afterAll(removeTempDirs);

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const CHILD = fileURLToPath(new URL("./fixtures/crash-child.ts", import.meta.url));
const PARTITIONS = 3;

type Operation = "add_edge" | "drop_target";

interface Phase {
  readonly phase: CommitPhase;
  /** Whether the commit decision was durable when the process died, so recovery must commit. */
  readonly decided: boolean;
  /** Whether some participant still holds a prepared intent (only after the last commit is none left). */
  readonly pending: boolean;
}

const PHASES: readonly Phase[] = [
  { phase: "prepared_first", decided: false, pending: true },
  { phase: "prepared_all", decided: false, pending: true },
  { phase: "decided", decided: true, pending: true },
  { phase: "committed_first", decided: true, pending: true },
  { phase: "committed_all", decided: true, pending: false },
];

interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

function runChild(directory: string, phase: CommitPhase, operation: Operation): Promise<ChildExit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, directory, phase, operation], { cwd: REPO, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve({ code, signal, stderr }));
  });
}

/** What the raw partition stores hold, read without the engine: records, adjacency and prepared intents. */
async function inspectRaw<T>(directory: string, look: (raw: RawStores) => T): Promise<T> {
  const map = new PartitionMap(PARTITIONS);
  const stores = map.ranges.map((range) =>
    PartitionStore.open({ path: join(directory, "partitions", `p${range.index}`), readOnly: true, noSync: false, idFirst: range.first, idLast: range.last }),
  );
  try {
    return look(new RawStores(stores));
  } finally {
    await Promise.all(stores.map((store) => store.close()));
  }
}

class RawStores {
  constructor(private readonly stores: readonly PartitionStore[]) {}

  private read<T>(owner: string, work: (snapshot: ReturnType<PartitionStore["snapshot"]>) => T): T {
    const snapshot = this.stores[partitionOf(owner, PARTITIONS)].snapshot();
    try {
      return work(snapshot);
    } finally {
      snapshot.close();
    }
  }

  exists(kind: RecordKind, id: string): boolean {
    return this.read(id, (snapshot) => snapshot.exists(kind, BigInt(id)));
  }

  adjacency(owner: string, direction: Direction): string[] {
    return this.read(owner, (snapshot) => snapshot.adjacency(BigInt(owner), direction).map((entry) => entry.edge.toString()));
  }

  allIds(kind: RecordKind): string[] {
    return this.stores.flatMap((store) => {
      const snapshot = store.snapshot();
      try {
        return snapshot.allIds(kind).map(String);
      } finally {
        snapshot.close();
      }
    });
  }

  pendingIntents(): number {
    return this.stores.reduce((sum, store) => sum + store.pendingIntents().length, 0);
  }
}

async function rows(db: Database, root: TreeNode): Promise<{ $id: string; $from?: string; $to?: string }[]> {
  return (await db.run(readOne(root))).r as { $id: string; $from?: string; $to?: string }[];
}

async function idsOf(db: Database, root: TreeNode): Promise<string[]> {
  return (await rows(db, root)).map((row) => row.$id);
}

/** The edge a→b exists completely: record, out-adjacency of a, in-adjacency of b. Returns its id. */
async function expectEdgePresent(db: Database, a: string, b: string): Promise<string> {
  const all = await rows(db, edges(ref.all));
  expect(all).toHaveLength(1);
  expect(all[0]).toMatchObject({ $from: a, $to: b });
  const edge = all[0].$id;
  expect(await idsOf(db, out(nodesById(a), "Follows"))).toEqual([b]);
  expect(await idsOf(db, in_(nodesById(b), "Follows"))).toEqual([a]);
  expect(await idsOf(db, outE(nodesById(a)))).toEqual([edge]);
  expect(await idsOf(db, inE(nodesById(b)))).toEqual([edge]);
  return edge;
}

/** No edge exists anywhere: no record, no adjacency on either side. */
async function expectNoEdge(db: Database, a: string, b: string): Promise<void> {
  expect(await rows(db, edges(ref.all))).toEqual([]);
  expect(await idsOf(db, out(nodesById(a)))).toEqual([]);
  expect(await idsOf(db, in_(nodesById(b)))).toEqual([]);
  expect(await idsOf(db, outE(nodesById(a)))).toEqual([]);
  expect(await idsOf(db, inE(nodesById(b)))).toEqual([]);
  const contents = await snapshot(db);
  expect(contents.outEdges).toEqual([]);
  expect(contents.inEdges).toEqual([]);
}

describe.each(PHASES)("crash at $phase of two-phase commit", ({ phase, decided, pending }) => {
  it.each<Operation>(["add_edge", "drop_target"])("%s is all-or-nothing after recovery", async (operation) => {
    const directory = join(tempDir("silk-crash-"), "db");
    const exit = await runChild(directory, phase, operation);
    expect({ signal: exit.signal, code: exit.code, stderr: exit.stderr }).toMatchObject({ signal: "SIGKILL", code: null });
    const { a, b, edge: setupEdge } = JSON.parse(readFileSync(`${directory}.ids.json`, "utf8")) as { a: string; b: string; edge?: string };
    // The write under test really spans two partitions.
    expect(partitionOf(a, PARTITIONS)).not.toBe(partitionOf(b, PARTITIONS));

    // Before any writer has recovered the directory, a reader must not see (or guess at) a half-done transaction.
    expect(await inspectRaw(directory, (raw) => raw.pendingIntents() > 0)).toBe(pending);
    if (pending) await expectCode(Database.open({ storage: { disk: directory }, mode: "readonly" }), "invalid_option");

    // Opening as a writer runs recovery (the dead child's writer lock, an OS file lock, died with it).
    const db = await Database.open({ storage: { disk: directory } });
    let edgeId: string | undefined;
    try {
      if (operation === "add_edge") {
        expect(await idsOf(db, nodesById(a, b))).toEqual([a, b]);
        if (decided) edgeId = await expectEdgePresent(db, a, b);
        else await expectNoEdge(db, a, b);
      } else if (decided) {
        // Node b, the edge and both of its adjacency entries are gone.
        expect(await idsOf(db, nodesById(a, b))).toEqual([a]);
        await expectNoEdge(db, a, b);
      } else {
        expect(await idsOf(db, nodesById(a, b))).toEqual([a, b]);
        expect(await expectEdgePresent(db, a, b)).toBe(setupEdge);
      }
      // Recovered, the directory opens read-only beside the writer.
      const reader = await Database.open({ storage: { disk: directory }, mode: "readonly" });
      try {
        expect(await snapshot(reader)).toEqual(await snapshot(db));
      } finally {
        await reader.close();
      }
    } finally {
      await db.close();
    }

    // The raw stores agree: nothing pending, no stray record or adjacency entry on any partition.
    await inspectRaw(directory, (raw) => {
      expect(raw.pendingIntents()).toBe(0);
      const edgeExists = operation === "add_edge" ? decided : !decided;
      const expectedEdges = edgeExists ? [operation === "add_edge" ? edgeId! : setupEdge!] : [];
      expect(raw.allIds("edge")).toEqual(expectedEdges);
      expect(raw.adjacency(a, "out")).toEqual(expectedEdges);
      expect(raw.adjacency(b, "in")).toEqual(expectedEdges);
      expect(raw.exists("node", b)).toBe(operation === "add_edge" || !decided);
    });

    // Recovery is idempotent, and the database takes new cross-partition writes with fresh ids.
    const again = await Database.open({ storage: { disk: directory } });
    try {
      const before = await snapshot(again);
      if (operation === "drop_target" && decided) {
        expect(before.nodes).toHaveLength(1);
      } else {
        const added = (await again.run(writeOne(addE(nodesById(a), "Follows", ref.ids(b), { since: 2 })))).r as { $id: string }[];
        expect([edgeId, setupEdge]).not.toContain(added[0].$id);
        expect(await idsOf(again, in_(nodesById(b), "Follows"))).toHaveLength((before.edges as unknown[]).length + 1);
      }
    } finally {
      await again.close();
    }
  });
});

describe("writer lock across processes", () => {
  it("a live writer in another process refuses a second writer; once it is killed its stale lock is taken over", async () => {
    const directory = join(tempDir("silk-lock-"), "db");
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, directory, "none", "hold"], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    try {
      await new Promise<void>((resolve, reject) => {
        let stdout = "";
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes("ready")) resolve();
        });
        child.on("exit", () => reject(new Error("the holding child exited early")));
      });
      await expectCode(Database.open({ storage: { disk: directory } }), "writer_locked");
      const reader = await Database.open({ storage: { disk: directory }, mode: "readonly" });
      try {
        expect(await snapshot(reader)).toEqual({ nodes: [], edges: [], outEdges: [], inEdges: [] });
      } finally {
        await reader.close();
      }
    } finally {
      child.kill("SIGKILL");
    }
    expect(await exited).toBe("SIGKILL");
    const writer = await Database.open({ storage: { disk: directory } });
    try {
      expect(ids((await writer.run(writeOne(addN("User")))).r)).toHaveLength(1);
    } finally {
      await writer.close();
    }
  });
});

describe("crash-test child", () => {
  it("completes normally when the phase is never reached", async () => {
    const directory = join(tempDir("silk-crash-"), "db");
    const exit = await runChild(directory, "no_such_phase" as CommitPhase, "add_edge");
    expect({ code: exit.code, signal: exit.signal, stderr: exit.stderr }).toEqual({ code: 0, signal: null, stderr: "" });
    const db = await Database.open({ storage: { disk: directory }, mode: "readonly" });
    try {
      const { a, b } = JSON.parse(readFileSync(`${directory}.ids.json`, "utf8")) as { a: string; b: string };
      await expectEdgePresent(db, a, b);
    } finally {
      await db.close();
    }
  });
});
