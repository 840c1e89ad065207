/**
 * The text layout upgrade (node/indexes/text-upgrade.ts): a `text` sub-database written in layout 1 (one entry per posting,
 * as Silk wrote before blocks; `writeLayout1` below writes its keys) becomes exactly what indexing the same records
 * writes today; a crash mid-upgrade (its transaction aborted) leaves layout 1 as it was and a later upgrade converts
 * it; a read-only handle refuses text searches on layout 1 with invalid_option; a writer's open of a database
 * directory upgrades it, after which read-only handles search it. Also: blocks split at 128 postings, and a
 * partition's IDs spanning more than 2^52 (several search windows).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open, type Database as LmdbDatabase, type RootDatabase } from "lmdb";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { SilkError } from "../../protocol/errors.js";
import type { TextIndexDefinition } from "../../protocol/indexes.js";
import type { Properties } from "../../protocol/values.js";
import { idKey, indexPrefix } from "../../node/keys.js";
import { analyzeAll } from "../../node/indexes/text-analyzers.js";
import { decodeStatistics, documentKey, encodeDocument, partitionPrefix, statisticsKey, statisticsVersion, termKey } from "../../node/indexes/text-encoding.js";
import { TextIndexes } from "../../node/indexes/text-index.js";
import { TEXT_LAYOUT, TEXT_LAYOUT_KEY, textLayout, upgradeTextLayout } from "../../node/indexes/text-upgrade.js";
import { expectCode, removeTempDirs, tempDir } from "../helpers/engine.js";

afterAll(removeTempDirs);

const BODY: TextIndexDefinition = { family: "text", kind: "node", label: "Doc", field: "body", name: "Doc.body", analyzer: "whitespace_lowercase", positions: false };
const TITLE: TextIndexDefinition = { ...BODY, field: "title", name: "Doc.title", positions: true };
const TENANTED: TextIndexDefinition = { ...BODY, label: "Note", name: "Note.body", tenant: "tenant_id" };

/** Writes records' postings, document entries and statistics in layout 1, as Silk did before blocks. */
function writeLayout1(entries: LmdbDatabase<Buffer, Buffer>, definition: TextIndexDefinition, records: readonly [bigint, Properties][]): void {
  const statistics = new Map<string, { part: Buffer; documents: number; length: number }>();
  for (const [id, props] of records) {
    const value = props[definition.field];
    const tenant = definition.tenant === undefined ? "" : String(props[definition.tenant]);
    const part = partitionPrefix(indexPrefix(definition.kind, definition.label, definition.field), tenant);
    const terms = analyzeAll(definition.analyzer, typeof value === "string" ? [value] : (value as string[]));
    const occurrences = new Map<string, number[]>();
    terms.forEach((term, position) => occurrences.set(term, [...(occurrences.get(term) ?? []), position]));
    const termBytes: Buffer[] = [];
    for (const [term, positions] of occurrences) {
      const bytes = Buffer.from(term, "utf8");
      termBytes.push(bytes);
      const key = Buffer.concat([part, Buffer.from([0x50, bytes.length >> 8, bytes.length & 0xff]), bytes, idKey(id)]);
      const head = Buffer.alloc(8);
      head.writeUInt32BE(positions.length, 0);
      head.writeUInt32BE(terms.length, 4);
      const deltas = positions.map((position, at) => position - (at === 0 ? 0 : positions[at - 1]));
      entries.putSync(key, definition.positions ? Buffer.concat([head, Buffer.from(deltas.flatMap(varint))]) : head);
    }
    entries.putSync(documentKey(part, idKey(id)), encodeDocument(terms.length, termBytes.map((bytes) => bytes.toString("utf8"))));
    const partition = statistics.get(tenant) ?? { part, documents: 0, length: 0 };
    statistics.set(tenant, { part, documents: partition.documents + 1, length: partition.length + terms.length });
  }
  for (const { part, documents, length } of statistics.values()) {
    // Layout 1's statistics: documents and total length, no epoch.
    const value = Buffer.alloc(16);
    value.writeDoubleBE(documents, 0);
    value.writeDoubleBE(length, 8);
    entries.putSync(statisticsKey(part), value);
  }
}

function varint(value: number): number[] {
  const bytes: number[] = [];
  for (; value >= 0x80; value >>>= 7) bytes.push((value & 0x7f) | 0x80);
  return [...bytes, value];
}

class Environment {
  readonly env: RootDatabase;
  readonly entries: LmdbDatabase<Buffer, Buffer>;
  readonly meta: LmdbDatabase;
  readonly text: TextIndexes;

  constructor(readonly directory: string) {
    this.env = open({ path: join(directory, "data.mdb") });
    this.entries = this.env.openDB<Buffer, Buffer>({ name: "text", keyEncoding: "binary", encoding: "binary" });
    this.meta = this.env.openDB({ name: "meta", encoding: "msgpack" });
    this.text = new TextIndexes(this.entries);
  }

  /** Indexes new records, `perTransaction` at a time (all in one transaction by default). */
  index(definition: TextIndexDefinition, records: readonly [bigint, Properties][], perTransaction = records.length): void {
    for (let at = 0; at < records.length; at += perTransaction) {
      this.env.transactionSync(() => {
        for (const [id, props] of records.slice(at, at + perTransaction)) this.text.put(definition, { id, props }, undefined);
        this.text.flush();
      });
    }
  }

  /** Deletes indexed records, `perTransaction` at a time. */
  unindex(definition: TextIndexDefinition, records: readonly [bigint, Properties][], perTransaction: number): void {
    for (let at = 0; at < records.length; at += perTransaction) {
      this.env.transactionSync(() => {
        for (const [id, props] of records.slice(at, at + perTransaction)) this.text.delete(definition, { id, props });
        this.text.flush();
      });
    }
  }

  /**
   * Every key and value of the `text` sub-database, in hex; statistics as documents and length only (their epoch is
   * random and their count of changes counts transactions: the keys' IDs here never end in 0x53, 'S').
   */
  dump(): string[] {
    return [...this.entries.getRange({})].map(({ key, value }) => {
      const statistics = key[key.length - 1] === 0x53 && value.length === 32;
      return `${key.toString("hex")}=${(statistics ? value.subarray(0, 16) : value).toString("hex")}`;
    });
  }

  search(definition: TextIndexDefinition, query: string, k = 1_000, tenant?: string): [bigint, number][] {
    return this.text.search(undefined, definition, query, k, { tenant }).map((hit) => [hit.id, hit.score]);
  }
}

const DOCS: [bigint, Properties][] = [
  [1n, { title: ["Quick fox", "lazy dog"], body: "the quick brown fox" }],
  [2n, { title: "dog days", body: "quick quick dog" }],
  [5n, { title: "fox fox", body: "lazy dog sleeps" }],
];
const NOTES: [bigint, Properties][] = [
  [3n, { tenant_id: "a", body: "quick fox" }],
  [4n, { tenant_id: "b", body: "fox fox hunt" }],
];

let directories: string[];
let environments: Environment[];
beforeEach(() => {
  directories = [];
  environments = [];
});
afterEach(async () => {
  for (const environment of environments) await environment.env.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function environment(): Environment {
  const directory = mkdtempSync(join(tmpdir(), "silk-text-upgrade-"));
  directories.push(directory);
  const created = new Environment(directory);
  environments.push(created);
  return created;
}

describe("upgrade of layout 1", () => {
  it("writes exactly what indexing the records writes today, positions and tenant partitions included", () => {
    const old = environment();
    old.env.transactionSync(() => {
      writeLayout1(old.entries, BODY, DOCS);
      writeLayout1(old.entries, TITLE, DOCS);
      writeLayout1(old.entries, TENANTED, NOTES);
    });
    expect(textLayout(old.meta, old.entries)).toBe(1);
    expect(old.env.transactionSync(() => upgradeTextLayout(old.meta, old.entries))).toBe(20);
    expect(textLayout(old.meta, old.entries)).toBe(TEXT_LAYOUT);
    expect(old.meta.get(TEXT_LAYOUT_KEY)).toBe(TEXT_LAYOUT);

    const today = environment();
    today.index(BODY, DOCS);
    today.index(TITLE, DOCS);
    today.index(TENANTED, NOTES);
    expect(old.dump()).toEqual(today.dump());
    expect(old.text.positions(undefined, TITLE, "dog", 1n)).toEqual([3]);
    expect(old.env.transactionSync(() => upgradeTextLayout(old.meta, old.entries))).toBe(0);
    expect(old.dump()).toEqual(today.dump());

    // Upgraded statistics carry no version (searches keep nothing of the partition) until a write gives them one.
    const statistics = () => decodeStatistics(old.entries.get(statisticsKey(partitionPrefix(indexPrefix("node", "Doc", "body"), "")))!);
    expect(statisticsVersion(statistics())).toBeUndefined();
    old.index(BODY, [[9n, { body: "new words" }]]);
    expect(statistics()).toMatchObject({ documents: DOCS.length + 1, changes: 1 });
    expect(statisticsVersion(statistics())).toMatch(/^[0-9a-f]{16}:1$/);
  });

  it("regroups a term's 300 postings into blocks of at most 128 that answer every search as indexing today does", () => {
    const records: [bigint, Properties][] = Array.from({ length: 300 }, (_, at) => [BigInt(at * 3 + 1), { body: `common ${"word ".repeat(at % 9)}w${at % 17}` }]);
    const old = environment();
    old.env.transactionSync(() => writeLayout1(old.entries, BODY, records));
    old.env.transactionSync(() => upgradeTextLayout(old.meta, old.entries));
    const today = environment();
    today.index(BODY, records);
    for (const query of ["common", "word w3", "common word w16 w0", "absent"]) {
      expect(old.search(BODY, query)).toEqual(today.search(BODY, query));
      expect(old.search(BODY, query, 7)).toEqual(today.search(BODY, query).slice(0, 7));
    }
    // The term entry and blocks of "common": 128 + 128 + 44 postings.
    const common = termKey(partitionPrefix(indexPrefix("node", "Doc", "body"), ""), "common")!.toString("hex");
    const entries = old.dump().filter((line) => line.startsWith(common));
    expect(entries.map((line) => line.indexOf("=") - common.length)).toEqual([0, 16, 16, 16]);
    expect(entries.slice(1).map((line) => line.slice(line.indexOf("=") + 1, line.indexOf("=") + 5))).toEqual(["0080", "0080", "002c"]);
  });

  it("leaves layout 1 as it was when its transaction is aborted mid-upgrade, and converts it on the next try", () => {
    const old = environment();
    old.env.transactionSync(() => writeLayout1(old.entries, BODY, DOCS));
    const before = old.dump();
    expect(() =>
      old.env.transactionSync(() => {
        upgradeTextLayout(old.meta, old.entries);
        throw new Error("the process died before the commit");
      }),
    ).toThrow("the process died");
    expect(old.dump()).toEqual(before);
    expect(textLayout(old.meta, old.entries)).toBe(1);
    old.env.transactionSync(() => upgradeTextLayout(old.meta, old.entries));
    const today = environment();
    today.index(BODY, DOCS);
    expect(old.dump()).toEqual(today.dump());
  });

  it("refuses a read-only handle's text search and positions on layout 1 with invalid_option, and serves them once upgraded", () => {
    const old = environment();
    old.env.transactionSync(() => writeLayout1(old.entries, BODY, DOCS));
    const readOnly = new TextIndexes(old.entries, (transaction) => textLayout(old.meta, old.entries, transaction));
    for (const read of [() => readOnly.search(undefined, BODY, "quick", 10, {}), () => readOnly.positions(undefined, BODY, "quick", 1n)]) {
      let caught: unknown;
      try {
        read();
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(SilkError);
      expect((caught as SilkError).code).toBe("invalid_option");
      expect((caught as SilkError).message).toContain("open it once as a writer");
    }
    old.env.transactionSync(() => upgradeTextLayout(old.meta, old.entries));
    expect(readOnly.search(undefined, BODY, "quick", 10, {}).map((hit) => hit.id)).toEqual([2n, 1n]);
  });

  it("reports an empty text sub-database without the mark as current (nothing to convert)", () => {
    const fresh = environment();
    expect(textLayout(fresh.meta, fresh.entries)).toBe(TEXT_LAYOUT);
  });
});

describe("blocks", () => {
  it("split past 128 postings, stay exact through inserts and deletes in any order, and drop every key when the last posting goes", () => {
    const fresh = environment();
    const ids = Array.from({ length: 400 }, (_, at) => BigInt(((at * 7919) % 400) + 1));
    const records: [bigint, Properties][] = ids.map((id) => [id, { body: `shared t${id % 5n} ${"pad ".repeat(Number(id % 4n))}` }]);
    // Transactions of 37 records in scattered ID order: inserts before, inside and after existing blocks.
    fresh.index(BODY, records, 37);
    const reference = environment();
    reference.index(BODY, [...records].sort(([left], [right]) => (left < right ? -1 : 1)));
    for (const query of ["shared", "t1 pad", "shared t4"]) expect(fresh.search(BODY, query)).toEqual(reference.search(BODY, query));
    fresh.unindex(BODY, records.filter(([id]) => id % 3n !== 0n), 41);
    const kept = records.filter(([id]) => id % 3n === 0n).sort(([left], [right]) => (left < right ? -1 : 1));
    const small = environment();
    small.index(BODY, kept);
    for (const query of ["shared", "t1 pad", "shared t4"]) {
      const [expected, actual] = [small.search(BODY, query), fresh.search(BODY, query)];
      expect(actual.map(([id]) => id)).toEqual(expected.map(([id]) => id));
      actual.forEach(([, score], at) => expect(score).toBe(expected[at][1]));
    }
    fresh.unindex(BODY, kept, 50);
    expect(fresh.dump()).toEqual([]);
  });

  it("rank IDs that span more than 2^52 in one partition (several search windows) exactly, ties by ascending ID", () => {
    const fresh = environment();
    const ids = [1n, 2n, 2n ** 52n + 5n, 2n ** 53n + 1n, 2n ** 60n, 2n ** 63n + 7n, 2n ** 64n - 2n, 2n ** 64n - 1n];
    const records: [bigint, Properties][] = ids.map((id, at) => [id, { body: at % 2 === 0 ? "same text" : "same text here" }]);
    fresh.index(BODY, records);
    const hits = fresh.search(BODY, "same text");
    expect(hits.map(([id]) => id)).toEqual([1n, 2n ** 52n + 5n, 2n ** 60n, 2n ** 64n - 2n, 2n, 2n ** 53n + 1n, 2n ** 63n + 7n, 2n ** 64n - 1n]);
    expect(fresh.search(BODY, "here", 2).map(([id]) => id)).toEqual([2n, 2n ** 53n + 1n]);
    expect(fresh.search(BODY, "same", 3).map(([id]) => id)).toEqual([1n, 2n ** 52n + 5n, 2n ** 60n]);
  });
});

const SCHEMA = `
N::Doc { TEXT INDEX body: String }

QUERY AddDoc(body: String) =>
    d <- AddN<Doc>({body: body})
    RETURN d
QUERY Find(q: String, k: I64) =>
    docs <- SearchBM25<Doc>(q, k)
    RETURN docs
`;

describe("a database directory in layout 1", () => {
  it("is refused by read-only text searches until a writer's open upgrades it; then every handle finds the same", async () => {
    const directory = tempDir("silk-text-layout-");
    const writer = await Database.open({ storage: { disk: directory }, mode: "writer", schema: SCHEMA });
    const bodies = ["quick brown fox", "lazy dog", "quick quick dog"];
    const records: [bigint, Properties][] = [];
    for (const body of bodies) {
      const { d } = (await writer.query("AddDoc", { body })) as { d: { id: string } };
      records.push([BigInt(d.id), { body }]);
    }
    const find = async (db: Database): Promise<string[]> => ((await db.query("Find", { q: "quick dog", k: 10 })) as { docs: { id: string }[] }).docs.map((doc) => doc.id);
    const expected = await find(writer);
    expect(expected).toHaveLength(3);
    await writer.close();

    // Rewrite partition 0's text entries as an older Silk wrote them, without the layout mark.
    const env = open({ path: join(directory, "partitions", "p0"), maxDbs: 16 });
    const entries = env.openDB<Buffer, Buffer>({ name: "text", keyEncoding: "binary", encoding: "binary" });
    const meta = env.openDB({ name: "meta", encoding: "msgpack" });
    env.transactionSync(() => {
      for (const key of [...entries.getKeys({})]) entries.removeSync(key);
      writeLayout1(entries, { ...BODY, analyzer: "standard" }, records);
      meta.removeSync(TEXT_LAYOUT_KEY);
    });
    await env.close();

    const reader = await Database.open({ storage: { disk: directory }, mode: "readonly", schema: SCHEMA });
    await expectCode(find(reader), "invalid_option");
    await reader.close();
    const upgraded = await Database.open({ storage: { disk: directory }, mode: "writer", schema: SCHEMA });
    expect(await find(upgraded)).toEqual(expected);
    const later = await Database.open({ storage: { disk: directory }, mode: "readonly", schema: SCHEMA });
    expect(await find(later)).toEqual(expected);
    await later.close();
    await upgraded.close();
  });
});
