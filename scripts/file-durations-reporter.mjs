// A vitest reporter that writes each test file's wall time to the JSON file named by SILK_FILE_DURATIONS, for
// scripts/run-tests.mjs's "slowest test files" list. The JSON reporter's testResults[].startTime/endTime span only
// from the first test's start to the last test's end: they leave out beforeAll/afterAll, where the suites that start
// a server, a cluster or the S3 gateway spend most of their time. diagnostic() counts the import and every hook.
import { writeFileSync } from "node:fs";

export default class FileDurationsReporter {
  onTestRunEnd(testModules) {
    const outputPath = process.env.SILK_FILE_DURATIONS;
    if (outputPath === undefined) return;
    const files = testModules.map((testModule) => {
      const diagnostic = testModule.diagnostic();
      const ms = diagnostic.prepareDuration + diagnostic.environmentSetupDuration + diagnostic.setupDuration + diagnostic.collectDuration + diagnostic.duration;
      return { file: testModule.relativeModuleId, ms };
    });
    writeFileSync(outputPath, JSON.stringify(files));
  }
}
