// Runs the whole vitest suite and ends with the plain "N passed, N failed" line CI reads (vitest's own summary
// line is not in that form). The exit code is vitest's.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const reportPath = join(tmpdir(), `silk-vitest-${process.pid}.json`);
const result = spawnSync(
  "npx",
  ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${reportPath}`, ...process.argv.slice(2)],
  { stdio: "inherit" },
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
console.log(`${passed} passed, ${failed} failed`);
process.exit(result.status ?? 1);
