/**
 * `count` and `range` pushed down to the partitions over NATS (issue 16; test/cluster/count-pushdown.test.ts shows
 * the requests in process): on 3 partitions, each an in-process replica behind a real nats-server, the partitions'
 * counts travel as `execute` replies through the msgpack codec and add up to what an embedded single-partition
 * database answers, for a whole label, a filter with a parameter, a count after the invocation's own write, and a
 * predicate the records refuse; a page equals the same cluster's answer through the fetch path (a `dedup` forces it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../runtime/embedded.js";
import { SilkError } from "../../protocol/errors.js";
import { count, dedup, expr, gt, nodesOf, nodesWhere, prop, range, readOne, where } from "../helpers/tree.js";
import { startTestCluster, startTestNats, stopTestNats, type TestCluster, type TestNats } from "../helpers/cluster.js";

const SCHEMA = [
  "N::User { name: String, age: I32 }",
  "QUERY Add(name: String, age: I32) => u <- AddN<User>({name: name, age: age}) RETURN u::ID",
  "QUERY Count() => n <- N<User>::COUNT RETURN n",
  "QUERY Older(a: I32) => n <- N<User>::WHERE(_::{age}::GT(a))::COUNT RETURN n",
  "QUERY AddThenCount(name: String) => u <- AddN<User>({name: name, age: 1}) n <- N<User>::COUNT RETURN n",
].join("\n");

let nats: TestNats;
let cluster: TestCluster;
let single: Database;

beforeAll(async () => {
  nats = await startTestNats(1);
  cluster = await startTestCluster(nats, { partitions: 3, replicas: 1, schema: SCHEMA });
  single = await open({ storage: "memory", schema: SCHEMA });
  for (let i = 0; i < 30; i += 1) {
    for (const db of [cluster.database, single]) await db.query("Add", { name: `u${i}`, age: 18 + i });
  }
}, 60_000);

afterAll(async () => {
  await single?.close();
  await cluster?.close();
  if (nats !== undefined) await stopTestNats(nats);
});

async function answer(db: Database, query: string, parameters: Record<string, unknown>): Promise<unknown> {
  try {
    return await db.query(query, parameters);
  } catch (cause) {
    if (cause instanceof SilkError) return { code: cause.code, message: cause.message };
    throw cause;
  }
}

describe("count over three partitions on NATS", () => {
  it.each([
    ["Count", {}],
    ["Older", { a: 30 }],
    ["Older", { a: 100 }],
  ] as const)("%s %j answers what one partition answers", async (query, parameters) => {
    const expected = await answer(single, query, parameters);
    expect(await answer(cluster.database, query, parameters)).toEqual(expected);
  });

  it("counts the invocation's own write", async () => {
    expect(await answer(cluster.database, "AddThenCount", { name: "new" })).toEqual({ n: 31 });
    expect(await answer(single, "AddThenCount", { name: "new" })).toEqual({ n: 31 });
    expect(await answer(cluster.database, "Count", {})).toEqual({ n: 31 });
  });

  it("answers a predicate the records refuse with one partition's error", async () => {
    const request = readOne(count(nodesWhere(gt(expr({ call: { fn: "abs", args: [{ property: "name" }] } }), 3))));
    const outcome = async (db: Database): Promise<unknown> => db.run(request).catch((cause: SilkError) => ({ code: cause.code, message: cause.message }));
    const expected = await outcome(single);
    expect(expected).toMatchObject({ code: "invalid_type" });
    expect(await outcome(cluster.database)).toEqual(expected);
  });

  it("pages a filtered label from each partition's first IDs, as the fetch path does", async () => {
    const older = where(nodesOf("User"), gt(prop("age"), 20));
    const pushed = (await cluster.database.run(readOne(range(older, 2, 7)))) as { r: { name: string }[] };
    expect(pushed.r).toHaveLength(5);
    expect(pushed).toEqual(await cluster.database.run(readOne(range(dedup(older), 2, 7))));
  });
});
