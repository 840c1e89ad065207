/**
 * GT, GTE, LT, LTE and between on String fields (SPEC: range indexes cover strings), on every backend: through an
 * INDEX and by scan they answer the same records, and both equal a plain model that orders the strings by their
 * UTF-8 bytes. JavaScript's `<` on strings orders UTF-16 units instead, which puts U+E000..U+FFFF after astral
 * characters; the strings here mix both, NULs, and long strings (beyond what an index key keeps of them, and beyond
 * LMDB's key limit), where the index widens a bound to the strings sharing its first bytes.
 */
import fc from "fast-check";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { BACKENDS, TestDatabase, removeTempDirs } from "../helpers/engine.js";
import { addN, and, between, entry, eq, gt, gte, lt, lte, nodesWhere, param, prop, readOne, write, type TreeNode } from "../helpers/tree.js";

afterAll(removeTempDirs);

const SCHEMA = "N::Word { INDEX text: String, plain: String, flag: Boolean }";

const LONG_PREFIX = "x".repeat(600);
/** Short pieces whose UTF-8 order differs from their UTF-16 order (U+E000 and U+FFFF against an emoji), with a NUL. */
const PIECES = ["a", "b", "Z", "\0", "é", "\ue000", "\uffff", "😀"];
const piece = fc.constantFrom(...PIECES);
const short = fc.array(piece, { maxLength: 4 }).map((parts) => parts.join(""));
/** A short string, or one after 600 or 2,000 shared bytes (over the 512 an index key keeps; over LMDB's key limit). */
const word = fc.oneof(short, short.map((tail) => LONG_PREFIX + tail), short.map((tail) => LONG_PREFIX.repeat(4) + tail));

const WORDS = [
  ...PIECES,
  "", "ab", "a\0b", "😀a", "\ue000a",
  ...["", "a", "b", "\0", "😀", "\ue000"].flatMap((tail) => [LONG_PREFIX + tail, LONG_PREFIX.repeat(4) + tail]),
];

/** The model: UTF-8 byte order. */
function utf8Order(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

type Op = "gt" | "gte" | "lt" | "lte";
const COMPARISONS = { gt, gte, lt, lte } as const;
const HOLDS: Record<Op, (order: number) => boolean> = { gt: (o) => o > 0, gte: (o) => o >= 0, lt: (o) => o < 0, lte: (o) => o <= 0 };

describe.each(BACKENDS)("string ranges ($name)", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend, { schema: SCHEMA });
    await t.run(write(WORDS.map((text, i) => entry(`w${i}`, addN("Word", { text, plain: text, flag: i % 2 === 0 }))), []));
  });
  afterEach(async () => t.destroy());

  const words = (...predicates: TreeNode[]): TreeNode => nodesWhere(and(eq(prop("$label"), "Word"), ...predicates));

  /** The texts a predicate selects, sorted by the model's order, and how the source step found its candidates. */
  async function texts(predicate: (field: string) => TreeNode, field: "text" | "plain", parameters: Record<string, unknown> = {}): Promise<{ texts: string[]; access: unknown }> {
    const result = (await t.run({ ...readOne(words(predicate(field)), parameters), explain: true })) as { r: { text: string }[]; $explain: { access: unknown }[] };
    return { texts: result.r.map((row) => row.text).sort(utf8Order), access: result.$explain[0].access };
  }

  it("orders by UTF-8 bytes by index and by scan, and both agree with the model", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<Op>("gt", "gte", "lt", "lte"), word, async (op, bound) => {
        const expected = WORDS.filter((text) => HOLDS[op](utf8Order(text, bound))).sort(utf8Order);
        const byIndex = await texts((field) => COMPARISONS[op](prop(field), param("bound")), "text", { bound });
        const byScan = await texts((field) => COMPARISONS[op](prop(field), bound), "plain");
        expect(byIndex).toEqual({ texts: expected, access: "index" });
        expect(byScan).toEqual({ texts: expected, access: "label_scan" });
      }),
      { numRuns: 60 },
    );
  });

  it("answers between, inclusive at both ends, by index and by scan", async () => {
    await fc.assert(
      fc.asyncProperty(word, word, async (low, high) => {
        const expected = WORDS.filter((text) => utf8Order(text, low) >= 0 && utf8Order(text, high) <= 0).sort(utf8Order);
        expect((await texts((field) => between(prop(field), low, high), "text")).texts).toEqual(expected);
        expect((await texts((field) => between(prop(field), low, high), "plain")).texts).toEqual(expected);
      }),
      { numRuns: 40 },
    );
  });

  it("puts U+E000 before an astral character, where UTF-16 order puts it after", async () => {
    expect("\ue000" < "😀").toBe(false); // JavaScript's own order, which Silk does not follow
    expect((await texts((field) => lt(prop(field), "😀"), "text")).texts).toContain("\ue000");
    expect((await texts((field) => gt(prop(field), "\ue000"), "plain")).texts).toContain("😀");
  });

  it("orders no booleans, and no string against a number, by index or by scan: nothing matches (HelixDB v3's rule)", async () => {
    expect(await t.run(readOne(words(gt(prop("flag"), true))))).toEqual({ r: [] });
    expect(await t.run(readOne(words(gte(prop("flag"), false))))).toEqual({ r: [] });
    expect(await texts(() => gt(prop("text"), 3), "text")).toEqual({ texts: [], access: "label_scan" });
    expect(await texts(() => lt(prop("plain"), 3), "plain")).toEqual({ texts: [], access: "label_scan" });
  });
});
