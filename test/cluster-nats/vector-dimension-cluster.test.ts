/**
 * One vector dimension per index across a cluster's partitions (cluster/vector-dimensions.ts; the embedded cases are
 * test/engine/vector-dimension-partitions.test.ts): on three partitions over NATS, a 2-d vector after a 4-d one is
 * `vector_dimension_mismatch` whichever partition its ID lands on, from AddV and from importBatch, and nothing of it
 * is written.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { expectCode } from "../helpers/engine.js";
import { leftovers, startTestCluster, startTestNats, stopTestNats, type TestCluster, type TestNats } from "../helpers/cluster.js";

const PARTITIONS = 3;
const SCHEMA = `
V::Loose(metric: euclidean) { n: I64 }
QUERY AddLoose(v: [F64], n: I64) =>
    x <- AddV<Loose>(v, {n: n})
    RETURN x
QUERY NearLoose(v: [F64]) =>
    hits <- SearchV<Loose>(v, 10)
    RETURN hits::{n}
`;

let nats: TestNats | undefined;
let cluster: TestCluster | undefined;

beforeAll(async () => {
  nats = await startTestNats(1);
  cluster = await startTestCluster(nats, { partitions: PARTITIONS, replicas: 1, schema: SCHEMA });
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  if (nats !== undefined) await stopTestNats(nats);
  expect(leftovers()).toEqual([]);
}, 30_000);

it("refuses a vector of another length on every partition of a cluster, from AddV and importBatch", async () => {
  const db = cluster!.database;
  await db.query("AddLoose", { v: [1, 1, 1, 1], n: 1 });
  // New records' IDs take the partitions in turn: three tries land on each partition once, two of them empty.
  for (let attempt = 0; attempt < PARTITIONS; attempt += 1) {
    await expectCode(db.query("AddLoose", { v: [2, 2], n: 9 }), "vector_dimension_mismatch");
  }
  const rows = [1, 2, 3].map((n) => ({ label: "Loose", vector: [n, n], props: { n: 9 } }));
  await expectCode(db.importBatch({ nodes: [], vectors: rows, edges: [] }), "vector_dimension_mismatch");
  await db.query("AddLoose", { v: [2, 2, 2, 2], n: 2 });
  expect(await db.query("NearLoose", { v: [0, 0, 0, 0] })).toEqual({ hits: [{ n: 1 }, { n: 2 }] });
}, 60_000);
