/**
 * Shared fixtures of the engine suites: the storage backends every engine test runs against, temporary
 * directories that are removed afterwards, a whole-database snapshot for "the data is unchanged" checks, and an
 * assertion on stable error codes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect } from "vitest";
import { Database, type InternalOpenOptions, type OpenOptions } from "../../runtime/embedded.js";
import { SilkError, type ErrorCode } from "../../protocol/errors.js";
import { allEdges, allNodes, entry, inE, outE, read, type Request } from "./tree.js";

export interface Backend {
  readonly name: string;
  readonly storage: "memory" | "disk";
  readonly partitions: number;
}

/** One engine suite, every backend (STYLE.md, "Tests"): memory, disk, and disk over three partitions (2PC). */
export const BACKENDS: readonly Backend[] = [
  { name: "memory", storage: "memory", partitions: 1 },
  { name: "disk", storage: "disk", partitions: 1 },
  { name: "disk, 3 partitions", storage: "disk", partitions: 3 },
];

export const DISK_BACKENDS: readonly Backend[] = BACKENDS.filter((backend) => backend.storage === "disk");

/** A fresh temporary directory; `removeTempDirs()` deletes every one made so far. */
const made: string[] = [];
export function tempDir(prefix = "silk-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

type ExtraOptions = Omit<OpenOptions, "storage" | "partitions">;

/** A database on one backend that can be closed and opened again (disk) and cleaned up afterwards. */
export class TestDatabase {
  private constructor(
    readonly backend: Backend,
    readonly options: OpenOptions,
    public db: Database,
    private readonly internal: InternalOpenOptions,
  ) {}

  /** `internal` (small index build chunks, say) applies to every open of this database, reopens included. */
  static async open(backend: Backend, extra: ExtraOptions = {}, internal: InternalOpenOptions = {}): Promise<TestDatabase> {
    const storage: OpenOptions["storage"] = backend.storage === "memory" ? "memory" : { disk: join(tempDir(), "db") };
    const options: OpenOptions = { ...extra, storage, partitions: backend.partitions };
    return new TestDatabase(backend, options, await Database.open(options, internal), internal);
  }

  /** The directory of a disk database. */
  get directory(): string {
    const storage = this.options.storage;
    if (storage === "memory" || !("disk" in storage)) throw new Error("only a disk database has a directory");
    return storage.disk;
  }

  run(request: Request | unknown): Promise<Record<string, unknown>> {
    return this.db.run(request);
  }

  /** Closes and opens the same directory again (disk only: a memory database would start empty). */
  async reopen(extra: Partial<ExtraOptions> = {}): Promise<void> {
    await this.db.close();
    this.db = await Database.open({ ...this.options, ...extra }, this.internal);
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  /** Closes the handle and deletes a disk database's files. */
  async destroy(): Promise<void> {
    await this.db.close();
    if (this.options.storage !== "memory" && "disk" in this.options.storage) rmSync(dirname(this.options.storage.disk), { recursive: true, force: true });
  }
}

/** Everything a database holds, as the engine reports it: records, and both sides of every adjacency. */
export interface Contents {
  nodes: unknown[];
  edges: unknown[];
  outEdges: unknown[];
  inEdges: unknown[];
}

export const SNAPSHOT_REQUEST = read(
  [entry("nodes", allNodes()), entry("edges", allEdges()), entry("outEdges", outE(allNodes())), entry("inEdges", inE(allNodes()))],
  ["nodes", "edges", "outEdges", "inEdges"],
);

export async function snapshot(db: Pick<Database, "run">): Promise<Contents> {
  return (await db.run(SNAPSHOT_REQUEST)) as unknown as Contents;
}

/**
 * Structural invariants of any database state: every edge joins two existing records, and the out- and
 * in-adjacency of all nodes list exactly the existing edges (no dangling edge, no orphaned adjacency entry).
 */
export function expectConsistent(contents: Contents): void {
  const nodeIds = new Set(ids(contents.nodes));
  for (const edge of contents.edges as { $id: string; $from: string; $to: string }[]) {
    expect(nodeIds.has(edge.$from) && nodeIds.has(edge.$to), `edge ${edge.$id} ${edge.$from}->${edge.$to} joins existing nodes`).toBe(true);
  }
  const edgeIds = sorted(ids(contents.edges));
  expect(sorted(ids(contents.outEdges))).toEqual(edgeIds);
  expect(sorted(ids(contents.inEdges))).toEqual(edgeIds);
}

/** Asserts that `request` fails with `code` and that nothing at all changed in the database. Returns the error. */
export async function expectRefused(t: TestDatabase, request: unknown, code: ErrorCode): Promise<SilkError> {
  const before = await snapshot(t.db);
  const error = await expectCode(t.run(request), code);
  expect(await snapshot(t.db)).toEqual(before);
  return error;
}

/** Awaits `work` and asserts it failed with a SilkError of the given stable code. Returns the error. */
export async function expectCode(work: Promise<unknown> | (() => unknown), code: ErrorCode): Promise<SilkError> {
  let outcome: unknown;
  try {
    const value = await (typeof work === "function" ? work() : work);
    outcome = { resolved: value };
  } catch (error) {
    outcome = error;
  }
  expect(outcome, `expected a SilkError ${code}`).toBeInstanceOf(SilkError);
  const error = outcome as SilkError;
  expect({ code: error.code, message: error.message }).toMatchObject({ code });
  return error;
}

/** The `$id`s of result rows. */
export function ids(rows: unknown): string[] {
  return (rows as { $id: string }[]).map((row) => row.$id);
}

/** The values of one property of result rows. */
export function pluck(rows: unknown, key: string): unknown[] {
  return (rows as Record<string, unknown>[]).map((row) => row[key]);
}

/** Sorted copy, for comparing sets of results whose order the engine does not promise. */
export function sorted<T>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => (String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0));
}

/** The partition that owns an ID in a database of `partitions` partitions (equal contiguous ranges). */
export function partitionOf(id: string | bigint, partitions: number): number {
  const width = 2n ** 64n / BigInt(partitions);
  const index = Number(BigInt(id) / width);
  return Math.min(index, partitions - 1);
}
