/**
 * The HelixQL conformance suite against a cluster (issue 6: "the conformance suite passes against the cluster,
 * unchanged"): every case of test/conformance/cases/*.hxt, the same files and expected answers as the embedded and
 * http modes (test/conformance/runner.ts runs them), in mode `cluster`:
 *
 * - Each case gets a fresh database: a fresh cluster name on one long-lived nats-server (streams of one replica),
 *   one partition × one in-process PartitionReplica (its own LMDB), and connectCluster as the coordinator; calls go
 *   through db.query (mode `cluster`) and, on another fresh cluster, through a real gateway over it (buildGateway
 *   on loopback, `POST /<query>` with fetch, status and body checked: mode `cluster http`). One partition, because
 *   the cases' expected IDs are those of the embedded suite's single partition (1, 2, 3...; with two, new records
 *   alternate between the partitions' ID ranges).
 * - A case whose project does not check: connectCluster must refuse it with the expected error (mode `cluster load`).
 * - Two partitions × three replicas on three nats-servers, for a fixed subset (every case of traversals.hxt and
 *   mutations.hxt): every answer (value, or error code, status and message) must equal the answer of an embedded
 *   database with two partitions, run in the same test; that run crosses partitions (2PC, edges between them).
 *
 * The cases of a file run concurrently, five at a time (vitest's maxConcurrency; each on its own cluster name, so
 * they cannot see each other). The whole file takes about a minute on two cores. Everything stops in
 * afterAll, which also checks that no nats-server process it started is left.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../runtime/embedded.js";
import { parseCaseFile, type Case } from "../conformance/case-file.js";
import { answersOf, CASES_DIRECTORY, caseFiles, checkWarnings, embeddedSession, httpSession, runCalls, runLoad, type Session } from "../conformance/runner.js";
import { leftovers, startTestCluster, startTestNats, stopTestNats, type TestCluster, type TestNats } from "../helpers/cluster.js";

/** The files whose every case also runs on 2 partitions × 3 replicas, compared with a 2-partition embedded database. */
const REPLICATED_FILES = new Set(["traversals.hxt", "mutations.hxt"]);
const CASE_TIMEOUT_MS = 60_000;

let single: TestNats | undefined;
let three: TestNats | undefined;
const suiteStartedMs = Date.now();
/** The partitions whose log held entries in some 2 × 3 case: both must, or the subset never crossed partitions. */
const partitionsWithEntries = new Set<number>();
let ranReplicated = false;

beforeAll(async () => {
  [single, three] = await Promise.all([startTestNats(1), startTestNats(3)]);
}, 60_000);

afterAll(async () => {
  await Promise.all([single, three].map((nats) => (nats === undefined ? undefined : stopTestNats(nats))));
  expect(leftovers()).toEqual([]);
  if (ranReplicated) expect([...partitionsWithEntries].sort()).toEqual([0, 1]);
  if (process.env.SILK_TIMINGS === "1") process.stdout.write(`conformance-cluster: ${Date.now() - suiteStartedMs} ms\n`);
}, 30_000);

/** A session over a cluster's database (db.query, or a real gateway over it) whose close() stops the whole cluster. */
async function clusterSession(cluster: TestCluster, over: typeof embeddedSession = embeddedSession): Promise<Session> {
  const session = await over(cluster.database);
  return {
    run: session.run,
    close: async () => {
      await session.close();
      await cluster.close();
    },
  };
}

/** The modes of the one-partition run: db.query on the cluster's Database, and POST /<query> to a gateway over it. */
const CLUSTER_MODES = { cluster: embeddedSession, "cluster http": httpSession } as const;

/**
 * Every replica of each partition reaches the same applied log sequence (the leader's), and some log holds entries
 * (a case may write on one partition only): the answers came through replicated logs, applied on every replica.
 */
async function expectReplicasConverge(cluster: TestCluster): Promise<void> {
  const sequences = (): number[][] => [0, 1].map((partition) => cluster.replicas.filter((r) => r.partition === partition).map((r) => r.replica.appliedSequence()));
  const deadline = Date.now() + 10_000;
  while (sequences().some((applied) => new Set(applied).size !== 1) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const final = sequences();
  for (const applied of final) expect(new Set(applied).size, `applied sequences ${JSON.stringify(final)}`).toBe(1);
  expect(Math.max(...final.flat()), `applied sequences ${JSON.stringify(final)}`).toBeGreaterThan(0);
  final.forEach((applied, partition) => {
    if (applied[0] > 0) partitionsWithEntries.add(partition);
  });
}

async function withSession<T>(start: () => Promise<Session>, use: (session: Session) => Promise<T>): Promise<T> {
  const session = await start();
  try {
    return await use(session);
  } finally {
    await session.close();
  }
}

/** A case's project; without HelixQL sources the database is schemaless (conformance.test.ts does the same). */
function schemaOf(testCase: Case): Case["sources"] | undefined {
  return testCase.sources.length === 0 ? undefined : testCase.sources;
}

/** connectCluster for a project that must not load; a cluster that did start anyway is stopped again. */
async function clusterOpener(sources: Case["sources"]): Promise<Database> {
  const cluster = await startTestCluster(single!, { partitions: 1, replicas: 1, schema: sources });
  await cluster.close();
  return cluster.database;
}

for (const file of caseFiles()) {
  const cases = parseCaseFile(readFileSync(join(CASES_DIRECTORY, file), "utf8"));
  describe.concurrent(file, () => {
    for (const testCase of cases) {
      const title = testCase.bug === undefined ? testCase.name : `${testCase.name} (bug: ${testCase.bug})`;
      const { loadError } = testCase;
      if (loadError !== undefined) {
        it(`${title} [cluster load]`, () => runLoad(file, testCase, loadError, clusterOpener, "cluster load", false), CASE_TIMEOUT_MS);
        continue;
      }
      for (const [mode, over] of Object.entries(CLUSTER_MODES)) {
        it(`${title} [${mode}]`, async () => {
          const cluster = await startTestCluster(single!, { partitions: 1, replicas: 1, schema: schemaOf(testCase) });
          await withSession(
            () => clusterSession(cluster, over),
            async (session) => {
              checkWarnings(file, testCase, cluster.database);
              await runCalls(file, testCase, session, mode, false);
            },
          );
        }, CASE_TIMEOUT_MS);
      }
      if (!REPLICATED_FILES.has(file)) continue;
      it(`${title} [cluster 2x3 = embedded 2 partitions]`, async () => {
        const embedded = await withSession(async () => embeddedSession(await open({ storage: "memory", partitions: 2, schema: schemaOf(testCase) })), (session) => answersOf(testCase, session));
        ranReplicated = true;
        const cluster = await startTestCluster(three!, { partitions: 2, replicas: 3, schema: schemaOf(testCase) });
        const clustered = await withSession(() => clusterSession(cluster), async (session) => {
          const answers = await answersOf(testCase, session);
          await expectReplicasConverge(cluster);
          return answers;
        });
        expect(clustered, `${file}: ${testCase.name}`).toStrictEqual(embedded);
      }, CASE_TIMEOUT_MS);
    }
  });
}
