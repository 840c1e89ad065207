/**
 * bench-text's verdict (bench/text.ts): correctness decides the exit status, speed is reported against its target and
 * never fails a run (a benchmark's figures swing with the machine's load; a test of speed would be flaky or
 * meaningless). Pure, so that a test holds the rule.
 */

/** What a run measured that the verdict looks at. */
export interface TextBenchOutcome {
  readonly ndcg: number;
  readonly ndcgTarget: number;
  /** Queries whose top k equals the in-memory BM25's, out of `queries`. */
  readonly sameRankings: number;
  readonly queries: number;
  readonly k: number;
  /** Silk's queries/s over the in-memory side's, and the target for it. */
  readonly queryRatio: number;
  readonly queryRatioTarget: number;
}

/** The verdict's lines, and the exit status: 1 on a correctness failure only. */
export function textBenchVerdict(outcome: TextBenchOutcome): { readonly lines: string[]; readonly exitCode: 0 | 1 } {
  const ndcgPass = outcome.ndcg >= outcome.ndcgTarget;
  const answersPass = outcome.sameRankings === outcome.queries;
  const met = outcome.queryRatio >= outcome.queryRatioTarget;
  return {
    lines: [
      `nDCG@10 >= ${outcome.ndcgTarget} (an exact BM25 here; BEIR's BM25 0.665): ${ndcgPass ? "PASS" : "FAIL"}`,
      `top-${outcome.k} equal to the in-memory BM25's: ${outcome.sameRankings}/${outcome.queries} ${answersPass ? "PASS" : "FAIL"}`,
      `queries/s target (issue 22) >= ${outcome.queryRatioTarget}x the in-memory BM25's: ${outcome.queryRatio.toFixed(2)}x, ${met ? "met" : "not met"} (reported, not a failure)`,
    ],
    exitCode: ndcgPass && answersPass ? 0 : 1,
  };
}
