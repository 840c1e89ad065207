/**
 * The BM25 text index family (node/indexes/text-index.ts) on a real LMDB environment in a temporary directory: exact BM25
 * scores, ordering, updates and deletes, failed transactions, bad values, tenant partitions, candidates,
 * [String] values, positions, builds and remove().
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import type { TextIndexDefinition } from "../../protocol/indexes.js";
import type { Properties } from "../../protocol/values.js";
import type { IndexedRecord } from "../../node/index-family.js";
import { indexPrefix } from "../../node/keys.js";
import { decodeStatistics, partitionPrefix, statisticsKey, statisticsVersion } from "../../node/indexes/text-encoding.js";
import { QUERY_TERMS_MAX } from "../../protocol/limits.js";
import { ABSENT, BM25_B, BM25_K1, TermCache, TextIndexes } from "../../node/indexes/text-index.js";
import type { TermBlocks } from "../../node/indexes/text-search.js";

const BODY: TextIndexDefinition = { family: "text", kind: "node", label: "Doc", field: "body", name: "Doc.body", analyzer: "whitespace_lowercase", positions: false };
const TITLE: TextIndexDefinition = { ...BODY, field: "title", name: "Doc.title", positions: true };
const TENANTED: TextIndexDefinition = { ...BODY, label: "Note", name: "Note.body", tenant: "tenant_id" };

/** Records by ID, as a store would hold them after its transactions committed. */
class Fixture {
  readonly records = new Map<bigint, IndexedRecord>();
  readonly text: TextIndexes;

  constructor(
    readonly env: RootDatabase,
    readonly entries: Database<Buffer, Buffer>,
  ) {
    this.text = new TextIndexes(entries);
  }

  /** Writes records in one transaction, maintaining `definitions` as the catalog would. */
  put(definitions: readonly TextIndexDefinition[], writes: readonly [bigint, Properties][]): void {
    const staged = new Map(this.records);
    this.env.transactionSync(() => {
      for (const [id, props] of writes) {
        for (const definition of definitions) this.text.put(definition, { id, props }, staged.get(id));
        staged.set(id, { id, props });
      }
      this.text.flush();
    });
    for (const [id, props] of writes) this.records.set(id, { id, props });
  }

  delete(definitions: readonly TextIndexDefinition[], id: bigint): void {
    const old = this.records.get(id)!;
    this.env.transactionSync(() => {
      for (const definition of definitions) this.text.delete(definition, old);
      this.text.flush();
    });
    this.records.delete(id);
  }

  search(definition: TextIndexDefinition, query: string, k = 10, options: { tenant?: string; candidates?: readonly bigint[] } = {}): [bigint, number][] {
    return this.text.search(undefined, definition, query, k, options).map((hit) => [hit.id, hit.score]);
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
}

let directory: string;
let env: RootDatabase;
let fixture: Fixture;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), "silk-text-index-"));
  env = open({ path: join(directory, "data.mdb") });
  fixture = new Fixture(env, env.openDB<Buffer, Buffer>({ name: "text", keyEncoding: "binary", encoding: "binary" }));
});

afterEach(async () => {
  await env.close();
  rmSync(directory, { recursive: true, force: true });
});

function expectSilkError(action: () => unknown, code: string, ...fragments: string[]): void {
  let caught: unknown;
  try {
    action();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(SilkError);
  expect((caught as SilkError).code).toBe(code);
  for (const fragment of fragments) expect((caught as SilkError).message).toContain(fragment);
}

/** Hits equal in IDs and order, scores equal to 12 decimal places (the summation order may differ by one ulp). */
function expectHits(actual: [bigint, number][], expected: [bigint, number][]): void {
  expect(actual.map(([id]) => id)).toEqual(expected.map(([id]) => id));
  actual.forEach(([, score], at) => expect(score).toBeCloseTo(expected[at][1], 12));
}

/** BM25 with k1 = 1.2, b = 0.75, written out by hand for the tests' numbers. */
function bm25(tf: number, length: number, averageLength: number, documents: number, frequency: number): number {
  const idf = Math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5));
  return (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * length) / averageLength));
}

const THREE_DOCS: [bigint, Properties][] = [
  [1n, { body: "the quick brown fox" }],
  [2n, { body: "quick quick dog" }],
  [3n, { body: "lazy dog sleeps" }],
];

describe("BM25 scores", () => {
  it("match a hand-computed example exactly", () => {
    fixture.put([BODY], THREE_DOCS);
    // N = 3, average length 10/3, df(quick) = 2: idf = ln(1.6).
    expectHits(fixture.search(BODY, "quick"), [
      [2n, 0.6649569031129378],
      [1n, 0.4344571362775707],
    ]);
    const [[top, score]] = fixture.search(BODY, "quick dog");
    expect(top).toBe(2n);
    expect(score).toBeCloseTo(bm25(2, 3, 10 / 3, 3, 2) + bm25(1, 3, 10 / 3, 3, 2), 12);
    expect(score).toBeCloseTo(1.1550080805255531, 12);
    expect(fixture.search(BODY, "quick dog").map(([id]) => id)).toEqual([2n, 3n, 1n]);
  });

  it("count a repeated query term once, and answer [] for unknown terms and empty queries", () => {
    fixture.put([BODY], THREE_DOCS);
    expect(fixture.search(BODY, "quick quick QUICK")).toEqual(fixture.search(BODY, "quick"));
    expect(fixture.search(BODY, "unicorn")).toEqual([]);
    expect(fixture.search(BODY, "   ")).toEqual([]);
  });

  it("order ties by ascending ID and cut at k", () => {
    fixture.put([BODY], [[9n, { body: "same words" }], [4n, { body: "same words" }], [7n, { body: "same words" }], [5n, { body: "other" }]]);
    expect(fixture.search(BODY, "same").map(([id]) => id)).toEqual([4n, 7n, 9n]);
    expect(fixture.search(BODY, "same", 2).map(([id]) => id)).toEqual([4n, 7n]);
  });

  it("give the first k of the full ranking for every k, IDs beyond 2^53 included", () => {
    const big = 2n ** 64n - 1n;
    const writes: [bigint, Properties][] = Array.from({ length: 40 }, (_, at) => [
      at % 3 === 0 ? big - BigInt(at) : BigInt(at + 1),
      { body: `${"word ".repeat((at % 7) + 1)}${"filler ".repeat(at % 5)}` },
    ]);
    fixture.put([BODY], writes);
    const full = fixture.search(BODY, "word", 40);
    expect(full).toHaveLength(40);
    for (let at = 1; at < full.length; at += 1) {
      const [[previousId, previous], [id, score]] = [full[at - 1], full[at]];
      expect(previous > score || (previous === score && previousId < id)).toBe(true);
    }
    for (const k of [1, 2, 5, 13, 39]) expect(fixture.search(BODY, "word", k)).toEqual(full.slice(0, k));
    expect(full.map(([id]) => id)).toContain(big);
  });

  it("refuse a k that is not a positive integer (any larger k gives every match) and a query of too many terms", () => {
    fixture.put([BODY], THREE_DOCS);
    for (const k of [0, -1, 1.5, Number.NaN]) expectSilkError(() => fixture.search(BODY, "quick", k), "invalid_value", "k");
    expectHits(fixture.search(BODY, "quick", Number.MAX_SAFE_INTEGER), fixture.search(BODY, "quick"));
    const many = Array.from({ length: QUERY_TERMS_MAX + 1 }, (_, at) => `t${at}`).join(" ");
    expectSilkError(() => fixture.search(BODY, many), "limit_exceeded", String(QUERY_TERMS_MAX));
    expect(fixture.search(BODY, `${Array.from({ length: QUERY_TERMS_MAX - 1 }, (_, at) => `t${at}`).join(" ")} quick`)).toHaveLength(2);
  });

  it("analyse the query with the index's analyzer (Unicode and stemming)", () => {
    const stemmed: TextIndexDefinition = { ...BODY, field: "abstract", name: "Doc.abstract", analyzer: "standard_stem_en" };
    fixture.put([stemmed], [[1n, { abstract: "Running studies of CAFÉ connections" }], [2n, { abstract: "東京 tower" }]]);
    expect(fixture.search(stemmed, "the runs studied connected café").map(([id]) => id)).toEqual([1n]);
    expect(fixture.search(stemmed, "京").map(([id]) => id)).toEqual([2n]);
  });
});

describe("maintenance", () => {
  it("moves postings on an update and updates the statistics", () => {
    fixture.put([BODY], THREE_DOCS);
    fixture.put([BODY], [[1n, { body: "slow green turtle dog" }]]);
    expect(fixture.search(BODY, "fox")).toEqual([]);
    expect(fixture.search(BODY, "turtle").map(([id]) => id)).toEqual([1n]);
    // N = 3, lengths 4 + 3 + 3, df(quick) = 1 now.
    expectHits(fixture.search(BODY, "quick"), [[2n, bm25(2, 3, 10 / 3, 3, 1)]]);
  });

  it("sees its own writes within one transaction: a create then an update of one record", () => {
    fixture.put([BODY], [[1n, { body: "first words" }], [2n, { body: "other words" }], [1n, { body: "second words" }]]);
    expect(fixture.search(BODY, "first")).toEqual([]);
    // N = 2, lengths 2 + 2: the replaced text left no statistics behind.
    expectHits(fixture.search(BODY, "second"), [[1n, bm25(1, 2, 2, 2, 1)]]);
  });

  it("leaves every entry as it was when the text did not change", () => {
    fixture.put([BODY], THREE_DOCS);
    const before = fixture.dump();
    fixture.put([BODY], [[1n, { body: "the quick brown fox", other: 5 }]]);
    expect(fixture.dump()).toEqual(before);
  });

  it("deletes every entry of deleted records, and an absent field removes the document", () => {
    fixture.put([BODY], THREE_DOCS);
    fixture.delete([BODY], 1n);
    fixture.delete([BODY], 3n);
    expectHits(fixture.search(BODY, "quick dog"), [[2n, bm25(2, 3, 3, 1, 1) + bm25(1, 3, 3, 1, 1)]]);
    fixture.put([BODY], [[2n, { title: "no body now" }]]);
    expect(fixture.dump()).toEqual([]);
  });

  it("leaves nothing behind when the transaction fails after a put", () => {
    fixture.put([BODY], THREE_DOCS);
    const before = fixture.dump();
    expect(() =>
      env.transactionSync(() => {
        fixture.text.put(BODY, { id: 4n, props: { body: "quick zebra" } }, undefined);
        fixture.text.put(BODY, { id: 2n, props: { body: "replaced" } }, fixture.records.get(2n));
        fixture.text.delete(BODY, fixture.records.get(3n)!);
        throw new Error("the store failed");
      }),
    ).toThrow("the store failed");
    // The store discards after a failed transaction; the next transaction's flush writes nothing of the failed one.
    fixture.text.discard();
    expect(fixture.dump()).toEqual(before);
    expectHits(fixture.search(BODY, "quick"), [
      [2n, 0.6649569031129378],
      [1n, 0.4344571362775707],
    ]);
    fixture.put([BODY], [[5n, { body: "slow turtle" }]]);
    expect(fixture.search(BODY, "quick").map(([id]) => id)).toEqual([2n, 1n]);
    expect(fixture.search(BODY, "zebra")).toEqual([]);
    expect(fixture.search(BODY, "replaced")).toEqual([]);
  });

  it("writes nothing of a transaction's postings before flush, and each touched term once at flush", () => {
    fixture.put([BODY], THREE_DOCS);
    const before = fixture.dump();
    const statistics = before.filter((line) => line.includes("53="));
    env.transactionSync(() => {
      fixture.text.put(BODY, { id: 4n, props: { body: "quick zebra" } }, undefined);
      fixture.text.delete(BODY, fixture.records.get(3n)!);
      const noted = fixture.dump();
      // The document entries change at once; no term entry, block or statistics does until flush.
      expect(noted.filter((line) => !before.includes(line)).every((line) => line.includes("44"))).toBe(true);
      expect(noted.filter((line) => line.includes("53="))).toEqual(statistics);
      fixture.text.flush();
    });
    fixture.records.set(4n, { id: 4n, props: { body: "quick zebra" } });
    fixture.records.delete(3n);
    const reference = new Fixture(env, env.openDB<Buffer, Buffer>({ name: "reference", keyEncoding: "binary", encoding: "binary" }));
    reference.put([BODY], [...fixture.records].sort(([left], [right]) => (left < right ? -1 : 1)).map(([id, record]) => [id, record.props]));
    expect(fixture.dump()).toEqual(reference.dump());
  });

  it("indexes a record written twice in one transaction as its last value (an update reads the entry the first wrote)", () => {
    fixture.put([BODY], THREE_DOCS);
    env.transactionSync(() => {
      fixture.text.put(BODY, { id: 4n, props: { body: "first zebra" } }, undefined);
      fixture.text.put(BODY, { id: 4n, props: { body: "second turtle" } }, { id: 4n, props: { body: "first zebra" } });
      fixture.text.put(BODY, { id: 1n, props: { body: "quick again" } }, fixture.records.get(1n));
      fixture.text.put(BODY, { id: 1n, props: { body: "quick once more" } }, { id: 1n, props: { body: "quick again" } });
      fixture.text.flush();
    });
    const reference = new Fixture(env, env.openDB<Buffer, Buffer>({ name: "reference", keyEncoding: "binary", encoding: "binary" }));
    reference.put([BODY], [
      [1n, { body: "quick once more" }],
      [2n, { body: "quick quick dog" }],
      [3n, { body: "lazy dog sleeps" }],
      [4n, { body: "second turtle" }],
    ]);
    expect(fixture.dump()).toEqual(reference.dump());
    expect(fixture.search(BODY, "zebra again first")).toEqual([]);
  });

  it("does not store terms over 255 bytes (whitespace_lowercase keeps them, keys stay under LMDB's limit)", () => {
    const long = "x".repeat(256);
    fixture.put([BODY], [[1n, { body: `${long} short` }], [2n, { body: "short words" }]]);
    expect(fixture.search(BODY, long)).toEqual([]);
    // Document 1 counts one term: N = 2, lengths 1 + 2.
    expectHits(fixture.search(BODY, "short"), [[1n, bm25(1, 1, 1.5, 2, 2)], [2n, bm25(1, 2, 1.5, 2, 2)]]);
  });

  it("refuses with limit_exceeded an index whose keys could not fit LMDB's key size", () => {
    const huge: TextIndexDefinition = { ...BODY, label: "L".repeat(1_800), name: "huge.body" };
    expectSilkError(() => fixture.put([huge], [[1n, { body: "text" }]]), "limit_exceeded", "huge.body");
    expect(fixture.dump()).toEqual([]);
  });

  it("does not index a record without the field or a text without terms", () => {
    fixture.put([BODY], [[1n, { title: "x" }], [2n, { body: "" }], [3n, { body: [] }]]);
    expect(fixture.dump()).toEqual([]);
  });

  it("reads one snapshot through the given read transaction", () => {
    fixture.put([BODY], THREE_DOCS);
    const snapshot = env.useReadTransaction();
    fixture.put([BODY], [[4n, { body: "quick quick quick" }]]);
    expect(fixture.text.search(snapshot, BODY, "quick", 10, {}).map((hit) => hit.id)).toEqual([2n, 1n]);
    snapshot.done();
    expect(fixture.search(BODY, "quick").map(([id]) => id)).toEqual([4n, 2n, 1n]);
  });
});

describe("bad values", () => {
  const bad: [string, Properties["body"], string][] = [
    ["null", null, "null"],
    ["a number", 42, "number"],
    ["a boolean", true, "boolean"],
    ["an array holding a number", ["text", 3], "array"],
    ["an array holding null", [null], "array"],
    ["an object", { text: "x" }, "object"],
  ];
  for (const [what, value, fragment] of bad) {
    it(`refuses ${what} with invalid_type naming the record and field, writing nothing of the transaction`, () => {
      fixture.put([BODY], THREE_DOCS);
      const before = fixture.dump();
      expectSilkError(() => fixture.put([BODY], [[8n, { body: "fine text" }], [7n, { body: value }]]), "invalid_type", "record 7", "body", fragment);
      expect(fixture.dump()).toEqual(before);
      expectSilkError(() => env.transactionSync(() => fixture.text.build(BODY, { id: 7n, props: { body: value } })), "invalid_type", "record 7");
      expect(fixture.dump()).toEqual(before);
    });
  }
});

describe("tenant partitions", () => {
  const NOTES: [bigint, Properties][] = [
    [1n, { tenant_id: "a", body: "quick fox" }],
    [2n, { tenant_id: "a", body: "slow fox" }],
    [3n, { tenant_id: "b", body: "fox fox fox hunt" }],
    [4n, { body: "fox without tenant" }],
  ];

  it("requires a tenant, answers [] for an unknown one, and keeps statistics per partition", () => {
    fixture.put([TENANTED], NOTES);
    expectSilkError(() => fixture.search(TENANTED, "fox"), "tenant_required", "tenant_id");
    expect(fixture.search(TENANTED, "fox", 10, { tenant: "zzz" })).toEqual([]);
    // Partition a: N = 2, average length 2, df(fox) = 2; record 3 (tenant b) and 4 (no tenant) do not count.
    expectHits(fixture.search(TENANTED, "fox", 10, { tenant: "a" }), [
      [1n, 0.1823215567939546],
      [2n, 0.1823215567939546],
    ]);
    expectHits(fixture.search(TENANTED, "fox", 10, { tenant: "b" }), [[3n, bm25(3, 4, 4, 1, 1)]]);
    expect(fixture.search(TENANTED, "without", 10, { tenant: "a" })).toEqual([]);
  });

  it("moves a record to its new partition when its tenant changes, and names partitions by tenantKey", () => {
    fixture.put([TENANTED], NOTES);
    fixture.put([TENANTED], [[2n, { tenant_id: "b", body: "slow fox" }], [5n, { tenant_id: 7, body: "numbered tenant" }]]);
    expect(fixture.search(TENANTED, "fox", 10, { tenant: "a" }).map(([id]) => id)).toEqual([1n]);
    expect(fixture.search(TENANTED, "slow", 10, { tenant: "b" }).map(([id]) => id)).toEqual([2n]);
    expect(fixture.search(TENANTED, "numbered", 10, { tenant: "7" }).map(([id]) => id)).toEqual([5n]);
    fixture.put([TENANTED], [[1n, { body: "quick fox" }]]);
    expect(fixture.search(TENANTED, "fox", 10, { tenant: "a" })).toEqual([]);
  });

  it("refuses a tenant value over 512 bytes on a write, and lets a record that has one be deleted", () => {
    fixture.put([TENANTED], NOTES);
    const before = fixture.dump();
    const long = "t".repeat(513);
    expectSilkError(() => fixture.put([TENANTED], [[6n, { tenant_id: long, body: "text" }]]), "limit_exceeded", "record 6", "tenant_id");
    expect(fixture.dump()).toEqual(before);
    // Written before the index existed: never indexed, so its delete has nothing to remove and must not fail.
    fixture.records.set(6n, { id: 6n, props: { tenant_id: long, body: "text" } });
    fixture.delete([TENANTED], 6n);
    expect(fixture.search(TENANTED, "text", 10, { tenant: long })).toEqual([]);
    expect(fixture.dump()).toEqual(before);
  });

  it("ignores a tenant given to an index without tenants", () => {
    fixture.put([BODY], THREE_DOCS);
    expect(fixture.search(BODY, "quick", 10, { tenant: "a" })).toEqual(fixture.search(BODY, "quick"));
  });
});

describe("candidates", () => {
  it("scores exactly the candidates, with statistics of the whole partition", () => {
    fixture.put([BODY], THREE_DOCS);
    const all = new Map(fixture.search(BODY, "quick dog"));
    const some = fixture.search(BODY, "quick dog", 10, { candidates: [1n, 3n, 99n] });
    expect(some.map(([id]) => id)).toEqual([3n, 1n]);
    for (const [id, score] of some) expect(score).toBe(all.get(id));
    expect(fixture.search(BODY, "quick dog", 10, { candidates: [] })).toEqual([]);
    expect(fixture.search(BODY, "quick", 10, { candidates: [3n] })).toEqual([]);
  });
});

describe("[String] values and positions", () => {
  it("indexes every element, positions continuing, when positions are enabled", () => {
    fixture.put([TITLE, BODY], [[1n, { title: ["Quick fox", "lazy dog", "quick"], body: "quick" }]]);
    expect(fixture.text.positions(undefined, TITLE, "quick", 1n)).toEqual([0, 4]);
    expect(fixture.text.positions(undefined, TITLE, "dog", 1n)).toEqual([3]);
    expect(fixture.text.positions(undefined, BODY, "quick", 1n)).toEqual([]);
    expectHits(fixture.search(TITLE, "lazy"), [[1n, bm25(1, 5, 5, 1, 1)]]);
  });

  it("stores large positions intact", () => {
    const words = Array.from({ length: 300 }, (_, at) => (at % 150 === 149 ? "needle" : "hay"));
    fixture.put([TITLE], [[1n, { title: words.join(" ") }]]);
    expect(fixture.text.positions(undefined, TITLE, "needle", 1n)).toEqual([149, 299]);
  });
});

describe("builds and remove", () => {
  it("build returns postings written, replaces what a write indexed, and finish has nothing to report", () => {
    fixture.put([BODY], THREE_DOCS);
    const after = fixture.dump();
    env.transactionSync(() => {
      expect(fixture.text.build(BODY, { id: 1n, props: { body: "the quick brown fox" } })).toBe(4);
      expect(fixture.text.build(BODY, { id: 2n, props: { body: "quick quick dog" } })).toBe(2);
      expect(fixture.text.build(BODY, { id: 5n, props: { title: "no body" } })).toBe(0);
    });
    expect(fixture.dump()).toEqual(after);
    expect(fixture.text.finish()).toBeUndefined();
  });

  it("remove in a transaction that wrote to the index leaves nothing of it for flush to write", () => {
    fixture.put([BODY, TITLE], [[1n, { body: "quick fox", title: "fox story" }]]);
    env.transactionSync(() => {
      fixture.text.put(BODY, { id: 2n, props: { body: "slow dog" } }, undefined);
      fixture.text.put(TITLE, { id: 2n, props: { title: "dog story" } }, undefined);
      fixture.text.remove(BODY);
      fixture.text.flush();
    });
    expect(fixture.search(BODY, "quick slow fox dog")).toEqual([]);
    expect(fixture.dump().every((line) => line.startsWith(indexPrefix("node", "Doc", "title").toString("hex")))).toBe(true);
    expect(fixture.search(TITLE, "story").map(([id]) => id)).toEqual([1n, 2n]);
  });

  it("remove deletes every key of one index and nothing of another", () => {
    fixture.put([BODY, TITLE], [[1n, { body: "quick fox", title: "fox story" }], [2n, { body: "dog", title: "dog story" }]]);
    const titleOnly = new TextIndexes(fixture.entries);
    env.transactionSync(() => titleOnly.remove(BODY));
    expect(fixture.search(BODY, "quick fox dog")).toEqual([]);
    expect(fixture.search(TITLE, "story").map(([id]) => id)).toEqual([1n, 2n]);
    env.transactionSync(() => fixture.text.remove(TITLE));
    expect(fixture.dump()).toEqual([]);
  });
});

describe("the partition's version and the cache of terms read", () => {
  const statisticsOf = (entries: Database<Buffer, Buffer>) => {
    const stored = entries.get(statisticsKey(partitionPrefix(indexPrefix("node", "Doc", "body"), "")));
    return stored === undefined ? undefined : decodeStatistics(stored);
  };

  it("counts every write transaction that changes a partition, and draws a new epoch when an emptied one is written again", () => {
    let drawn = 0;
    const text = new TextIndexes(fixture.entries, undefined, () => Buffer.alloc(8, ++drawn));
    const write = (body: (text: TextIndexes) => void) => env.transactionSync(() => (body(text), text.flush()));
    write((text) => text.put(BODY, { id: 1n, props: { body: "quick fox" } }, undefined));
    expect(statisticsVersion(statisticsOf(fixture.entries)!)).toBe(`${"01".repeat(8)}:1`);
    // Same documents and total length, other terms: still a change.
    write((text) => text.put(BODY, { id: 1n, props: { body: "slow dog" } }, { id: 1n, props: { body: "quick fox" } }));
    expect(statisticsVersion(statisticsOf(fixture.entries)!)).toBe(`${"01".repeat(8)}:2`);
    write(() => undefined);
    expect(statisticsOf(fixture.entries)!.changes).toBe(2);
    write((text) => text.delete(BODY, { id: 1n, props: { body: "slow dog" } }));
    expect(statisticsOf(fixture.entries)).toBeUndefined();
    write((text) => text.put(BODY, { id: 2n, props: { body: "quick fox" } }, undefined));
    expect(statisticsVersion(statisticsOf(fixture.entries)!)).toBe(`${"02".repeat(8)}:1`);
  });

  it("serves a search from the terms it read only while the partition is unchanged, whoever wrote it", () => {
    let drawn = 0;
    const newEpoch = () => Buffer.alloc(8, ++drawn);
    const writer = new TextIndexes(fixture.entries, undefined, newEpoch);
    const reader = new TextIndexes(fixture.entries, undefined, newEpoch);
    const write = (body: (text: TextIndexes) => void) => env.transactionSync(() => (body(writer), writer.flush()));
    const ids = (query: string) => {
      const snapshot = env.useReadTransaction();
      const hits = reader.search(snapshot, BODY, query, 10, {}).map((hit) => hit.id);
      snapshot.done();
      return hits;
    };
    write((text) => text.put(BODY, { id: 1n, props: { body: "quick fox" } }, undefined));
    expect(ids("quick zebra")).toEqual([1n]);
    expect(ids("quick zebra")).toEqual([1n]);
    write((text) => text.put(BODY, { id: 2n, props: { body: "zebra quick quick" } }, undefined));
    expect(ids("quick zebra")).toEqual([2n, 1n]);
    // Emptied and refilled to the count of changes the cached terms were read at (2), with other texts: a new epoch, so nothing stale is served.
    write((text) => {
      text.delete(BODY, { id: 1n, props: { body: "quick fox" } });
      text.delete(BODY, { id: 2n, props: { body: "zebra quick quick" } });
    });
    write((text) => text.put(BODY, { id: 3n, props: { body: "zebra" } }, undefined));
    write((text) => text.put(BODY, { id: 5n, props: { body: "lazy" } }, undefined));
    expect(statisticsOf(fixture.entries)!.changes).toBe(2);
    expect(ids("quick zebra")).toEqual([3n]);
    // A snapshot read before a write keeps its own version: the older snapshot and the newer each see their own.
    const before = env.useReadTransaction();
    write((text) => text.put(BODY, { id: 4n, props: { body: "quick" } }, undefined));
    expect(reader.search(before, BODY, "quick zebra", 10, {}).map((hit) => hit.id)).toEqual([3n]);
    expect(ids("quick zebra")).toEqual([3n, 4n]);
    expect(reader.search(before, BODY, "quick zebra", 10, {}).map((hit) => hit.id)).toEqual([3n]);
    before.done();
  });
});

describe("the term cache and write transactions", () => {
  it("keeps nothing a search inside a write transaction read (its version may be rolled back and named again)", () => {
    const text = new TextIndexes(fixture.entries, undefined, () => Buffer.alloc(8, 9));
    const read = (query: string) => {
      const snapshot = env.useReadTransaction();
      const hits = text.search(snapshot, BODY, query, 10, {}).map((hit) => hit.id);
      snapshot.done();
      return hits;
    };
    env.transactionSync(() => (text.put(BODY, { id: 1n, props: { body: "quick" } }, undefined), text.flush()));
    expect(read("quick zebra")).toEqual([1n]);
    expect(() =>
      env.transactionSync(() => {
        text.put(BODY, { id: 2n, props: { body: "quick zebra" } }, undefined);
        text.flush();
        expect(text.search(undefined, BODY, "quick zebra", 10, {}).map((hit) => hit.id)).toEqual([2n, 1n]);
        throw new Error("rolled back");
      }),
    ).toThrow("rolled back");
    text.discard();
    // Committed with the version the rolled-back transaction had (same epoch, 2 changes), other texts.
    env.transactionSync(() => (text.put(BODY, { id: 3n, props: { body: "zebra" } }, undefined), text.flush()));
    expect(read("quick zebra")).toEqual([1n, 3n]);
  });
});

describe("the term cache's bound", () => {
  const blocksOf = (frequency: number): TermBlocks => ({ weight: 1, frequency, keys: [], values: [], decoded: [] });

  it("drops the least recently searched partitions first, then the current one's terms, and a partition at another version", () => {
    const cache = new TermCache(10);
    const first = cache.partition("a", "v1");
    cache.add(first, "x", blocksOf(4));
    const second = cache.partition("b", "v1");
    cache.add(second, "y", blocksOf(4));
    cache.add(second, "missing", ABSENT);
    expect(cache.partition("a", "v1").terms.get("x")).toBeDefined();
    // 4 + 4 + 1 + 3 = 12 > 10: "b" (searched less recently than "a") goes.
    cache.add(cache.partition("a", "v1"), "z", blocksOf(3));
    expect(cache.partition("b", "v1").terms.size).toBe(0);
    expect(cache.partition("a", "v1").terms.size).toBe(2);
    // A term alone past the bound: the current partition's terms go too.
    const current = cache.partition("a", "v1");
    cache.add(current, "huge", blocksOf(11));
    expect(current.terms.size).toBe(0);
    cache.add(cache.partition("c", "v1"), "w", blocksOf(2));
    expect(cache.partition("c", "v2").terms.size).toBe(0);
  });
});

describe("top-k against scoring every posting", () => {
  /** A small deterministic generator (xorshift32), so a failure replays. */
  function random(seed: number): () => number {
    let state = seed;
    return () => {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return (state >>> 0) / 2 ** 32;
    };
  }

  it("gives the exhaustive scoring's hits, scores bit for bit and ties by ascending ID, over IDs spanning many batches", () => {
    const next = random(22);
    const vocabulary = Array.from({ length: 40 }, (_, at) => `w${at}`);
    // Zipf-like: low words are common, so some terms turn non-essential as the threshold rises.
    const word = () => vocabulary[Math.floor(vocabulary.length * next() ** 2.5)];
    const records: [bigint, Properties][] = [];
    let id = 0n;
    for (let at = 0; at < 3_000; at += 1) {
      id += BigInt(1 + Math.floor(next() * 4));
      records.push([id, { body: Array.from({ length: 1 + Math.floor(next() * 12) }, word).join(" ") }]);
    }
    for (let at = 0; at < records.length; at += 700) fixture.put([BODY], records.slice(at, at + 700));

    const documents = records.map(([id, props]) => ({ id, terms: (props.body as string).split(" ") }));
    const averageLength = documents.reduce((sum, document) => sum + document.terms.length, 0) / documents.length;
    const exhaustive = (query: string, k: number): [bigint, number][] => {
      const terms = [...new Set(query.split(" "))].sort();
      const weights = terms.map((term) => {
        const frequency = documents.filter((document) => document.terms.includes(term)).length;
        return Math.log(1 + (documents.length - frequency + 0.5) / (frequency + 0.5)) * (BM25_K1 + 1);
      });
      const hits: [bigint, number][] = [];
      for (const document of documents) {
        let total = 0;
        let matched = false;
        terms.forEach((term, at) => {
          const tf = document.terms.filter((candidate) => candidate === term).length;
          if (tf === 0) return;
          matched = true;
          total += weights[at] * (tf / (tf + BM25_K1 * (1 - BM25_B + (BM25_B * document.terms.length) / averageLength)));
        });
        if (matched) hits.push([document.id, total]);
      }
      return hits.sort(([leftId, left], [rightId, right]) => right - left || (leftId < rightId ? -1 : 1)).slice(0, k);
    };
    for (let query = 0; query < 60; query += 1) {
      const text = Array.from({ length: 1 + Math.floor(next() * 8) }, word).join(" ");
      for (const k of [1, 3, 10, 200]) expect(fixture.search(BODY, text, k)).toEqual(exhaustive(text, k));
    }
  });
});
