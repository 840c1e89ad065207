/**
 * The HelixQL conformance suite: every case of `cases/*.hxt` (format: README.md) runs in each mode — `embedded`
 * (`open({storage: "memory"})` and `db.query`) and `http` (a real server from buildGateway on 127.0.0.1, port 0,
 * and real `fetch`, asserting status and body); a file's cases may also run in their other variant, schemaless or
 * with a schema (case-file.ts, `-- declare` and `-- schemaless`). A case whose sources do not check runs once, in mode `load`:
 * no server can start on such a project. The load must give exactly the case's `-- warning`s. Each case gets a fresh database, so the IDs it expects are those of an
 * empty database. `CONFORMANCE_UPDATE=1` records the answers instead of checking them and rewrites the files.
 * The case runner lives in runner.ts (shared with the cluster mode, test/cluster-nats/conformance-cluster.test.ts).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, it } from "vitest";
import { open } from "../../runtime/embedded.js";
import { type Answer, type CheckedCall, parseCaseFile, rewriteCaseFile } from "./case-file.js";
import { CASES_DIRECTORY, caseFiles, checkWarnings, embeddedSession, httpSession, recorded, runCalls, runLoad, UPDATE } from "./runner.js";

const MODES = { embedded: embeddedSession, http: httpSession } as const;

for (const file of caseFiles()) {
  const path = join(CASES_DIRECTORY, file);
  const cases = parseCaseFile(readFileSync(path, "utf8"));
  describe(file, () => {
    for (const testCase of cases) {
      const title = testCase.bug === undefined ? testCase.name : `${testCase.name} (bug: ${testCase.bug})`;
      const { loadError } = testCase;
      if (loadError !== undefined) {
        it(`${title} [load]`, () => runLoad(file, testCase, loadError));
        continue;
      }
      for (const [mode, start] of Object.entries(MODES)) {
        it(`${title} [${mode}]`, async () => {
          // A case without HelixQL sources opens schemaless, as HelixDB v3 databases are (its /v2/query calls).
          const database = await open({ storage: "memory", schema: testCase.sources.length === 0 ? undefined : testCase.sources });
          const session = await start(database);
          try {
            checkWarnings(file, testCase, database);
            await runCalls(file, testCase, session, testCase.variant === undefined ? mode : `${mode}, ${testCase.variant}`);
          } finally {
            await session.close();
          }
        });
      }
    }
  });
}

afterAll(() => {
  if (!UPDATE) return;
  for (const [file, answers] of recorded) {
    const path = join(CASES_DIRECTORY, file);
    // Every mode must agree before its answer becomes the expectation.
    const byCall = new Map<CheckedCall, Answer>();
    for (const { checked, answer, mode } of answers) {
      const earlier = byCall.get(checked);
      if (earlier !== undefined && JSON.stringify(earlier) !== JSON.stringify(answer)) {
        throw new Error(`${file}:${checked.call.line}: the modes disagree (${mode}: ${JSON.stringify(answer)}, before: ${JSON.stringify(earlier)})`);
      }
      byCall.set(checked, answer);
    }
    const text = readFileSync(path, "utf8");
    writeFileSync(path, rewriteCaseFile(text, [...byCall].map(([checked, answer]) => ({ checked, answer }))));
  }
});
