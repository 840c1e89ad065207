/**
 * Persisted vector graphs (node/indexes/vector-graph-files.ts) and the change log (node/indexes/vector-changes.ts), through the vector
 * family (node/indexes/vector-index.ts) on a real LMDB `meta` and a real graph folder, with a record source that counts its
 * label scans (a scan is a rebuild): an open reads the file instead of rebuilding, for every metric and with tenants;
 * a file older than the data is brought up to date from the log; a stale file the log cannot reach, a truncated or
 * altered one, one from another database and one newer than the data all fall back to the rebuild, with the right
 * answers; a follower replays its writer's changes, and rebuilds across a drop or past the log; the writer's
 * schedule writes files in the background, and a drop deletes its file.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import { afterEach, describe, expect, it } from "vitest";
import type { IndexedRecord, IndexRecordSource, ScannedRecord } from "../../node/index-family.js";
import { mapVectorInto } from "../helpers/vector-source.js";
import { readId } from "../../node/keys.js";
import { changesBetween, CHANGE_LOG_VERSIONS_MAX, listChanges, openChangeEntry } from "../../node/indexes/vector-changes.js";
import { graphFilePath, readGraphFile } from "../../node/indexes/vector-graph-files.js";
import { VectorIndexes, type GraphFileOptions } from "../../node/indexes/vector-index.js";
import type { VectorIndexDefinition, VectorMetric } from "../../protocol/indexes.js";
import type { SearchHit } from "../../protocol/records.js";
import { seededRandom } from "../../protocol/random.js";
import type { Properties } from "../../protocol/values.js";

function definition(metric: VectorMetric, extra: Partial<VectorIndexDefinition> = {}): VectorIndexDefinition {
  return { family: "vector", kind: "node", label: "Doc", field: "embedding", name: "Doc.embedding", metric, ...extra };
}

function items(count: number, dimension: number, seed: number, first = 1n, props: Properties = {}) {
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => ({ id: first + BigInt(i), props: { ...props, embedding: Array.from({ length: dimension }, () => random() * 2 - 1) } as Properties }));
}

/** One partition's `meta` and records, with a family that writes graph files into `folder` (a writer) or reads them. */
class Partition {
  readonly records = new Map<bigint, IndexedRecord>();
  readonly folder: string;
  env!: RootDatabase;
  meta!: Database;
  scans = 0;

  constructor(readonly path: string) {
    this.folder = join(path, "vector-graphs");
    this.env = open({ path });
    this.meta = this.env.openDB({ name: "meta" });
    this.env.transactionSync(() => this.family(true).identify());
  }

  source(): IndexRecordSource {
    const records = this.records;
    return {
      record: (_kind, key) => records.get(readId(key)),
      scan: (_kind, _label, after, limit) => {
        this.scans += 1;
        const ids = [...records.keys()].filter((id) => after === undefined || id > after).sort((a, b) => (a < b ? -1 : 1));
        const taken: ScannedRecord[] = ids.slice(0, limit).map((id) => ({ ...records.get(id)!, bytes: 1 }));
        return { records: taken, last: taken.at(-1)?.id, done: ids.length <= limit };
      },
      hasLabel: () => records.size > 0,
      vectorInto: mapVectorInto(records),
    };
  }

  family(writer: boolean, options: Partial<GraphFileOptions> = {}): VectorIndexes {
    return new VectorIndexes(this.meta, this.source(), { folder: this.folder, writer, active: () => true, ...options });
  }

  /** One write transaction through `indexes` (records put, or deleted when `props` is null), then commit. */
  write(indexes: VectorIndexes, index: VectorIndexDefinition, changes: readonly { id: bigint; props: Properties | null }[]): void {
    this.env.transactionSync(() => {
      for (const { id, props } of changes) {
        const old = this.records.get(id);
        if (props === null) indexes.delete(index, old!);
        else indexes.put(index, { id, props }, old);
      }
      indexes.flush();
    });
    for (const { id, props } of changes) {
      if (props === null) this.records.delete(id);
      else this.records.set(id, { id, props });
    }
    indexes.commit();
  }

  /** A search as a reader runs it: in a snapshot of the committed state. */
  search(indexes: VectorIndexes, index: VectorIndexDefinition, query: readonly number[], k: number, tenant?: string): SearchHit[] {
    const transaction = this.env.useReadTransaction();
    try {
      return indexes.search(index, Float32Array.from(query), k, { transaction, tenant });
    } finally {
      transaction.done();
    }
  }
}

const made: Partition[] = [];
function partition(): Partition {
  const at = new Partition(mkdtempSync(join(tmpdir(), "silk-graph-files-")));
  made.push(at);
  return at;
}
afterEach(() => {
  for (const at of made.splice(0)) {
    at.env.close();
    rmSync(at.path, { recursive: true, force: true });
  }
});

const ids = (hits: readonly SearchHit[]) => hits.map((hit) => hit.id);
const version = (at: Partition, index: VectorIndexDefinition) => at.meta.get(`vindex-version:${index.kind}:${index.name}`) as number;

/** Writes `count` records in transactions of 50 through a fresh writer family, persists its graphs, and returns it. */
function persisted(at: Partition, index: VectorIndexDefinition, count: number, dimension: number): VectorIndexes {
  const writer = at.family(true);
  writer.load(index, "active");
  const all = items(count, dimension, 7);
  for (let i = 0; i < all.length; i += 50) at.write(writer, index, all.slice(i, i + 50));
  at.write(writer, index, [{ id: 3n, props: null }, { id: 4n, props: { embedding: all[0].props.embedding } }]);
  writer.persistGraphs();
  return writer;
}

describe("graph files", () => {
  for (const metric of ["cosine", "euclidean", "manhattan"] as const) {
    it(`${metric}: an open reads the file (no rebuild) and answers as the graphs it was written from, then keeps growing`, () => {
      const at = partition();
      const index = definition(metric);
      const writer = persisted(at, index, 300, 8);
      expect(existsSync(graphFilePath(at.folder, index))).toBe(true);
      at.scans = 0;
      const opened = at.family(true);
      opened.load(index, "active");
      expect(at.scans).toBe(0);
      expect(opened.dimensionOf(index)).toBe(8);
      const random = seededRandom(11);
      for (let q = 0; q < 20; q++) {
        const query = Array.from({ length: 8 }, () => random() * 2 - 1);
        expect(at.search(opened, index, query, 10)).toEqual(at.search(writer, index, query, 10));
      }
      expect(ids(at.search(opened, index, items(300, 8, 7)[2].props.embedding as number[], 300))).not.toContain(3n);
      const added = items(20, 8, 13, 1_000n);
      at.write(opened, index, added);
      expect(ids(at.search(opened, index, added[5].props.embedding as number[], 1))).toEqual([1_005n]);
      expect(at.scans).toBe(0);
    });
  }

  it("tenants: every tenant's graph is in the file and answers alone", () => {
    const at = partition();
    const index = definition("euclidean", { tenant: "org" });
    const writer = at.family(true);
    writer.load(index, "active");
    at.write(writer, index, [...items(40, 4, 21, 1n, { org: "a" }), ...items(40, 4, 22, 100n, { org: "b" })]);
    writer.persistGraphs();
    at.scans = 0;
    const opened = at.family(false);
    opened.load(index, "active");
    expect(at.scans).toBe(0);
    const query = items(40, 4, 22, 100n)[3].props.embedding as number[];
    expect(ids(at.search(opened, index, query, 1, "b"))).toEqual([103n]);
    expect(ids(at.search(opened, index, query, 40, "a")).every((id) => id < 100n)).toBe(true);
    expect(at.search(opened, index, query, 40, "a")).toEqual(at.search(writer, index, query, 40, "a"));
  });

  it("a file older than the data is brought up to date from the change log, without a rebuild", () => {
    const at = partition();
    const index = definition("cosine");
    const writer = persisted(at, index, 100, 6);
    const fileVersion = version(at, index);
    const later = items(30, 6, 31, 500n);
    at.write(writer, index, later.slice(0, 15));
    at.write(writer, index, [...later.slice(15), { id: 1n, props: null }]);
    at.scans = 0;
    const opened = at.family(true);
    opened.load(index, "active");
    expect(at.scans).toBe(0);
    expect(readGraphFile(at.folder, at.meta.get("vindex-identity") as string, index)?.version).toBe(fileVersion);
    expect(ids(at.search(opened, index, later[20].props.embedding as number[], 1))).toEqual([520n]);
    expect(ids(at.search(opened, index, items(100, 6, 7)[0].props.embedding as number[], 200))).not.toContain(1n);
  });

  /** Reopens after `spoil` and expects a rebuild (one scan or more) that answers with the data's own records. */
  function expectRebuild(at: Partition, index: VectorIndexDefinition, spoil: () => void): void {
    spoil();
    at.scans = 0;
    const opened = at.family(false);
    opened.load(index, "active");
    expect(at.scans).toBeGreaterThan(0);
    const truth = at.family(false);
    truth.load(index, "active"); // rebuilt too: the reference
    const random = seededRandom(5);
    for (let q = 0; q < 5; q++) {
      const query = Array.from({ length: 6 }, () => random() * 2 - 1);
      expect(at.search(opened, index, query, 10)).toEqual(at.search(truth, index, query, 10));
    }
    expect(ids(at.search(opened, index, items(1, 6, 7)[0].props.embedding as number[], 500)).sort()).toEqual([...at.records.keys()].sort());
  }

  it("a stale file the change log cannot reach falls back to the rebuild", () => {
    const at = partition();
    const index = definition("euclidean");
    const writer = persisted(at, index, 100, 6);
    at.write(writer, index, items(10, 6, 41, 700n));
    expectRebuild(at, index, () => {
      // The log entry since the file is gone (trimmed, or written by a Silk that kept none).
      at.env.transactionSync(() => at.meta.removeSync(`vindex-changes:node:Doc.embedding:${String(version(at, index)).padStart(16, "0")}`));
    });
  });

  it("a truncated file, and one with a byte changed, fall back to the rebuild", () => {
    const at = partition();
    const index = definition("euclidean");
    persisted(at, index, 100, 6);
    const path = graphFilePath(at.folder, index);
    const whole = readFileSync(path);
    expectRebuild(at, index, () => truncateSync(path, Math.floor(whole.byteLength / 2)));
    const altered = Buffer.from(whole);
    altered[Math.floor(altered.byteLength * 0.7)] ^= 0x40;
    expectRebuild(at, index, () => writeFileSync(path, altered));
    expectRebuild(at, index, () => writeFileSync(path, whole.subarray(0, 3)));
  });

  it("another database's file (same index, same counter) is never used", () => {
    const mine = partition();
    const theirs = partition();
    const index = definition("manhattan");
    persisted(mine, index, 100, 6);
    const writer = theirs.family(true);
    writer.load(index, "active");
    for (let i = 0; i < 3; i++) theirs.write(writer, index, items(34, 6, 50 + i, BigInt(1 + 34 * i)));
    writer.persistGraphs();
    expect(version(theirs, index)).toBe(version(mine, index));
    expectRebuild(mine, index, () => copyFileSync(graphFilePath(theirs.folder, index), graphFilePath(mine.folder, index)));
  });

  it("a file newer than the data (the counter went back) is never used", () => {
    const at = partition();
    const index = definition("cosine");
    persisted(at, index, 100, 6);
    expectRebuild(at, index, () => at.env.transactionSync(() => at.meta.putSync("vindex-version:node:Doc.embedding", version(at, index) - 1)));
  });

  it("a writer rebuilds rather than load graphs with more dead slots than live records (a reader takes them)", () => {
    const at = partition();
    const index = definition("manhattan");
    const writer = at.family(true);
    writer.load(index, "active");
    for (let round = 0; round < 25; round++) at.write(writer, index, items(50, 4, 90 + round));
    writer.persistGraphs();
    at.scans = 0;
    const reader = at.family(false);
    reader.load(index, "active");
    expect(at.scans).toBe(0);
    const compacted = at.family(true);
    compacted.load(index, "active");
    expect(at.scans).toBeGreaterThan(0);
    const query = items(50, 4, 114)[9].props.embedding as number[];
    expect(ids(at.search(compacted, index, query, 1))).toEqual([10n]);
    expect(at.search(reader, index, query, 5)).toEqual(at.search(compacted, index, query, 5));
  });

  it("a file of another definition under the same name is never used", () => {
    const at = partition();
    persisted(at, definition("cosine"), 100, 6);
    at.scans = 0;
    const opened = at.family(false);
    opened.load(definition("euclidean"), "active");
    expect(at.scans).toBeGreaterThan(0);
  });
});

describe("following a writer and the writer's schedule", () => {
  it("a follower replays its writer's changes; across a drop, or past the log, it loads the file or rebuilds", () => {
    const at = partition();
    const index = definition("euclidean");
    const writer = persisted(at, index, 100, 6);
    const follower = at.family(false);
    follower.load(index, "active");
    at.scans = 0;
    at.write(writer, index, [{ id: 2n, props: null }, ...items(5, 6, 61, 900n)]);
    expect(ids(at.search(follower, index, items(5, 6, 61, 900n)[4].props.embedding as number[], 1))).toEqual([904n]);
    expect(ids(at.search(follower, index, items(100, 6, 7)[1].props.embedding as number[], 500))).not.toContain(2n);
    expect(at.scans).toBe(0);
    // The log is trimmed past the follower: it loads the file and replays what the log still holds (nothing here).
    at.write(writer, index, items(1, 6, 62, 950n));
    writer.persistGraphs();
    at.env.transactionSync(() => at.meta.removeSync(`vindex-changes:node:Doc.embedding:${String(version(at, index)).padStart(16, "0")}`));
    expect(ids(at.search(follower, index, items(1, 6, 62, 950n)[0].props.embedding as number[], 1))).toEqual([950n]);
    expect(at.scans).toBe(0);
    // A drop: its entry is not listed and its file is deleted; the follower rebuilds across it.
    at.env.transactionSync(() => writer.remove(index));
    writer.commit();
    expect(existsSync(graphFilePath(at.folder, index))).toBe(false);
    at.records.clear();
    at.write(writer, index, items(3, 6, 63, 2_000n));
    expect(ids(at.search(follower, index, items(3, 6, 63, 2_000n)[0].props.embedding as number[], 10)).sort()).toEqual([2_000n, 2_001n, 2_002n]);
    expect(at.scans).toBeGreaterThan(0);
  });

  it("the writer writes a new index's file at the next turn, later changes after its delay, and all at close", async () => {
    const at = partition();
    const index = definition("euclidean");
    const writer = at.family(true, { persistAfterMs: 40 });
    writer.load(index, "active");
    const identity = at.meta.get("vindex-identity") as string;
    const fileVersion = () => readGraphFile(at.folder, identity, index)?.version;
    at.write(writer, index, items(10, 4, 71));
    expect(fileVersion()).toBeUndefined(); // never on the commit's path
    await new Promise((resolve) => setImmediate(resolve));
    expect(fileVersion()).toBe(1);
    at.write(writer, index, items(10, 4, 72, 100n));
    await new Promise((resolve) => setImmediate(resolve));
    expect(fileVersion()).toBe(1); // a small change waits for the delay
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(fileVersion()).toBe(2);
    at.write(writer, index, items(10, 4, 73, 200n));
    writer.close();
    expect(fileVersion()).toBe(3);
    // A read-only family never writes.
    const reader = at.family(false);
    reader.load(index, "active");
    at.write(writer, index, items(1, 4, 74, 300n));
    reader.close();
    expect(fileVersion()).toBe(3);
  });

  it("changes to as many records as the minimum (1,000) are written at the next turn, not after the delay", async () => {
    const at = partition();
    const index = definition("euclidean");
    const writer = at.family(true); // the default delay, a minute: only the change count can make it due sooner
    writer.load(index, "active");
    const identity = at.meta.get("vindex-identity") as string;
    const fileVersion = () => readGraphFile(at.folder, identity, index)?.version;
    at.write(writer, index, items(10, 4, 75));
    await new Promise((resolve) => setImmediate(resolve));
    expect(fileVersion()).toBe(1);
    at.write(writer, index, items(999, 4, 76, 100n));
    await new Promise((resolve) => setImmediate(resolve));
    expect(fileVersion()).toBe(1);
    at.write(writer, index, items(1, 4, 77, 5_000n));
    await new Promise((resolve) => setImmediate(resolve));
    expect(fileVersion()).toBe(3);
    writer.close();
  });

  it("a writer's open deletes what a writer that died while writing left beside the files; a reader's does not", () => {
    const at = partition();
    const index = definition("euclidean");
    persisted(at, index, 60, 4);
    const leftover = `${graphFilePath(at.folder, index)}.4242.deadbeef.tmp`;
    writeFileSync(leftover, "half a graph");
    at.family(false).load(index, "active");
    expect(existsSync(leftover)).toBe(true);
    at.family(true).load(index, "active");
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(graphFilePath(at.folder, index))).toBe(true);
  });

  it("a writer writes only active indexes' files", () => {
    const at = partition();
    const index = definition("euclidean");
    const writer = at.family(true, { active: () => false });
    writer.load(index, "constructing");
    at.write(writer, index, items(10, 4, 81));
    writer.persistGraphs();
    expect(existsSync(graphFilePath(at.folder, index))).toBe(false);
  });
});

describe("the change log", () => {
  it("lists each transaction's IDs, keeps the last CHANGE_LOG_VERSIONS_MAX versions, and cannot tell across a gap", () => {
    const at = partition();
    const key = "node:Doc.embedding";
    at.env.transactionSync(() => {
      for (let version = 1; version <= 4; version++) {
        openChangeEntry(at.meta, key, version);
        if (version !== 3) listChanges(at.meta, key, version, [BigInt(version), 10n]);
      }
    });
    expect(changesBetween(at.meta, key, 0, 2)).toEqual([1n, 10n, 2n]);
    expect(changesBetween(at.meta, key, 1, 1)).toEqual([]);
    expect(changesBetween(at.meta, key, 2, 4)).toBeUndefined(); // version 3 was never listed
    expect(changesBetween(at.meta, key, 3, 4)).toEqual([4n, 10n]);
    expect(changesBetween(at.meta, key, 3, 5)).toBeUndefined(); // version 5 has no entry
    at.env.transactionSync(() => openChangeEntry(at.meta, key, CHANGE_LOG_VERSIONS_MAX + 2));
    expect(changesBetween(at.meta, key, 1, 2)).toBeUndefined(); // version 2 fell out of the log
    expect(changesBetween(at.meta, key, 0, 1)).toEqual([1n, 10n]);
    expect(changesBetween(at.meta, key, 0, CHANGE_LOG_VERSIONS_MAX + 1)).toBeUndefined();
  });
});
