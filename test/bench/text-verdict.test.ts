/**
 * bench-text's verdict (bench/text-verdict.ts): a run fails on wrong answers or quality, never on speed.
 */
import { describe, expect, it } from "vitest";
import { textBenchVerdict, type TextBenchOutcome } from "../../bench/text-verdict.js";

const GOOD: TextBenchOutcome = { ndcg: 0.6869, ndcgTarget: 0.686, sameRankings: 300, queries: 300, k: 10, queryRatio: 0.32, queryRatioTarget: 0.5 };

describe("bench-text's verdict", () => {
  it("passes correct answers whatever the speed, and says whether the speed target is met", () => {
    const slow = textBenchVerdict(GOOD);
    expect(slow.exitCode).toBe(0);
    expect(slow.lines[2]).toContain("0.32x, not met");
    expect(textBenchVerdict({ ...GOOD, queryRatio: 0.61 }).lines[2]).toContain("0.61x, met");
  });

  it("fails on nDCG under its target or on any query whose top k differs from the in-memory BM25's", () => {
    expect(textBenchVerdict({ ...GOOD, ndcg: 0.6 }).exitCode).toBe(1);
    const differing = textBenchVerdict({ ...GOOD, sameRankings: 299, queryRatio: 0.9 });
    expect(differing.exitCode).toBe(1);
    expect(differing.lines[1]).toContain("299/300 FAIL");
  });
});
