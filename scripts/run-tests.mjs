// Runs the whole vitest suite and ends with the plain "N passed, N failed" line CI reads (vitest's own summary
// line is not in that form). Just before it, the slowest test files with their wall times (import, hooks and tests;
// scripts/file-durations-reporter.mjs), so that every run says where `make test`'s time goes. The exit code is
// vitest's. `make test` builds dist/ first, so the suites' `silk` child processes run the compiled CLI
// (SILK_TEST_CLI=dist, test/cli/helpers.ts) rather than transforming the sources through tsx at every start.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SLOWEST_SHOWN = 15;

const reportPath = join(tmpdir(), `silk-vitest-${process.pid}.json`);
const durationsPath = join(tmpdir(), `silk-vitest-durations-${process.pid}.json`);
const result = spawnSync(
  "npx",
  [
    "vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${reportPath}`,
    "--reporter=./scripts/file-durations-reporter.mjs", ...process.argv.slice(2),
  ],
  { stdio: "inherit", env: { ...process.env, SILK_FILE_DURATIONS: durationsPath, SILK_TEST_CLI: "dist" } },
);
let passed = 0;
let failed = 0;
try {
  const report = JSON.parse(readFileSync(reportPath, "utf8"));
  passed = report.numPassedTests;
  // A file whose set-up failed (beforeAll, an import) fails without failing any test of it: count it too.
  const filesFailedOutsideTests = report.testResults.filter((file) => file.status === "failed" && !file.assertionResults.some((test) => test.status === "failed")).length;
  failed = report.numFailedTests + (report.numRuntimeErrors ?? 0) + filesFailedOutsideTests;
  rmSync(reportPath, { force: true });
} catch {
  failed += 1;
  console.error("run-tests: vitest wrote no JSON report");
}
try {
  const slowest = JSON.parse(readFileSync(durationsPath, "utf8")).sort((a, b) => b.ms - a.ms).slice(0, SLOWEST_SHOWN);
  rmSync(durationsPath, { force: true });
  console.log(`\nslowest ${slowest.length} test files (import, hooks and tests; other files ran beside them):`);
  for (const { file, ms } of slowest) console.log(`${(ms / 1000).toFixed(1).padStart(8)} s  ${file}`);
} catch {
  console.error("run-tests: no test file durations to show");
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(result.status ?? 1);
