/**
 * `count`, `limit` and `range` pushed down to the partitions (issue 16, node/exec/pushdown.ts): a coordinator over three
 * partitions asks each partition for a number (one `execute` of `count`), or for its first `end` IDs, instead of
 * fetching every ID and record, whenever the stream is partition-local and the invocation has written nothing yet.
 * Every count, errors included, equals a single-partition database's; every page equals the same database's answer
 * through the fetch path (a `dedup` step, which is not partition-local, forces it; IDs differ between databases of
 * different partition counts). A partition counts a whole label or kind from its keys, without reading a record.
 */
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { Coordinator } from "../../cluster/coordinator.js";
import { LmdbDecisionLog } from "../../cluster/decision-log.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { InProcessTransport, type RequestOptions, type Transport } from "../../cluster/transport.js";
import { PartitionActor } from "../../node/actor/partition-actor.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { Snapshot } from "../../node/store/snapshot.js";
import { SilkError } from "../../protocol/errors.js";
import type { PartitionReplyBody, PartitionRequest, QueryResult } from "../../protocol/messages.js";
import { decodeRequest } from "../../protocol/tree.js";
import { Database } from "../../runtime/embedded.js";
import { removeTempDirs, tempDir } from "../helpers/engine.js";
import {
  addE,
  addN,
  allEdges,
  allNodes,
  and,
  between,
  count,
  drop as dropStep,
  edgesOf,
  entry,
  existsP,
  expr,
  forEach,
  gt,
  isIn,
  limit,
  lt,
  range,
  skip,
  dedup,
  nodesOf,
  nodesWhere,
  not,
  or,
  out,
  context,
  param,
  prop,
  read,
  readOne,
  where,
  write,
  type Json,
  type Request,
  type TreeNode,
} from "../helpers/tree.js";

/** Every request a coordinator sends, with its options and the reply it got. */
class RecordingTransport implements Transport {
  readonly seen: { type: string; options: RequestOptions | undefined; reply: PartitionReplyBody | undefined }[] = [];

  constructor(private readonly inner: Transport) {}

  async request(partition: number, message: PartitionRequest, options?: RequestOptions): Promise<PartitionReplyBody> {
    const seen: (typeof this.seen)[number] = { type: message.type, options, reply: undefined };
    this.seen.push(seen);
    seen.reply = await this.inner.request(partition, message, options);
    return seen.reply;
  }
}

interface Partitioned {
  readonly transport: RecordingTransport;
  run(request: Request): Promise<QueryResult>;
  close(): Promise<void>;
}

/** A schemaless database of three in-process partitions whose coordinator's requests are recorded. */
function openPartitioned(): Partitioned {
  const directory = tempDir("silk-count-");
  const map = new PartitionMap(3);
  const stores = map.ranges.map((range) =>
    PartitionStore.open({ path: join(directory, `p${range.index}`), readOnly: false, noSync: true, idFirst: range.first, idLast: range.last, uniqueAcrossPartitions: true }),
  );
  const now = (): Date => new Date();
  const actors = stores.map((store) => new PartitionActor({ store, schema: undefined, writable: true, now }));
  const decisions = new LmdbDecisionLog(join(directory, "coordinator"), { readOnly: false, noSync: true });
  const transport = new RecordingTransport(new InProcessTransport(actors));
  const coordinator = new Coordinator({ transport, map, decisions, schema: undefined, writable: true, now });
  return {
    transport,
    run: (request) => coordinator.run(decodeRequest(request as never)),
    close: async () => {
      await coordinator.settle();
      await decisions.close();
      await Promise.all(stores.map((store) => store.close()));
    },
  };
}

const USERS = Array.from({ length: 60 }, (_, i) => ({ name: `user${i}`, age: 18 + (i % 40) }));
const load = write(
  [
    forEach("users", [entry(undefined, addN("User", { name: param("name"), age: param("age") }))]),
    forEach("admins", [entry(undefined, addN("Admin", { name: param("name") }))]),
    entry("u", nodesOf("User")),
    entry(undefined, addE(nodesOf("Admin"), "Follows", { var: "u" })),
  ],
  [],
  { users: USERS, admins: [{ name: "root" }, { name: "ops" }] },
);

/** Outcome of a request: its answer, or its error's code and message. */
async function outcome(run: () => Promise<QueryResult>): Promise<unknown> {
  try {
    return await run();
  } catch (cause) {
    if (cause instanceof SilkError) return { code: cause.code, message: cause.message };
    throw cause;
  }
}

let partitioned: Partitioned;
let single: Database;

async function both(request: Request): Promise<{ cluster: unknown; single: unknown }> {
  partitioned.transport.seen.length = 0;
  const cluster = await outcome(() => partitioned.run(request));
  return { cluster, single: await outcome(() => single.run(request)) };
}

const sentTypes = (): string[] => [...new Set(partitioned.transport.seen.map((request) => request.type))];

describe("count pushed down to the partitions", async () => {
  partitioned = openPartitioned();
  single = await Database.open({ storage: "memory" });
  await partitioned.run(load);
  await single.run(load);

  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    await partitioned.close();
    await single.close();
    removeTempDirs();
  });

  const pushed: [string, Request][] = [
    ["a label", readOne(count(nodesOf("User")))],
    ["a label with a filter and a parameter", readOne(count(where(nodesOf("User"), gt(prop("age"), param("a")))), { a: 40 })],
    ["a predicate source", readOne(count(nodesWhere(and(gt(prop("age"), 30), lt(prop("age"), 50)))))],
    ["or, not, is_in, between, contains", readOne(count(nodesWhere(or(not(isIn(prop("age"), param("ages"))), between(prop("age"), 20, 25), { contains: { value: { property: "name" }, substring: { constant: { string: "ser1" } } } }))), { ages: [18, 19, 20] })],
    ["every node", readOne(count(allNodes()))],
    ["every edge", readOne(count(allEdges()))],
    ["an edge label", readOne(count(edgesOf("Follows")))],
    ["a label nobody has", readOne(count(nodesOf("Nobody")))],
  ];
  for (const [what, request] of pushed) {
    it(`counts ${what} where the records are, with the single partition's answer`, async () => {
      const answers = await both(request);
      expect(answers.cluster).toEqual(answers.single);
      // One execute per partition, each answered with a number; no ID list and no record crossed.
      expect(sentTypes()).toEqual(["execute"]);
      expect(partitioned.transport.seen).toHaveLength(3);
      for (const { reply } of partitioned.transport.seen) expect(reply).toEqual({ type: "result", result: { count: expect.any(Number) } });
    });
  }

  it("answers 60 users, 62 nodes and 120 edges (the fixture, as both count it)", async () => {
    expect((await both(readOne(count(nodesOf("User"))))).cluster).toEqual({ r: 60 });
    expect((await both(readOne(count(allNodes())))).cluster).toEqual({ r: 62 });
    expect((await both(readOne(count(allEdges())))).cluster).toEqual({ r: 120 });
  });

  it("counts a whole label on a partition from the label index's keys", async () => {
    const counted = vi.spyOn(Snapshot.prototype, "countIds");
    const records = vi.spyOn(Snapshot.prototype, "record");
    expect(await single.run(readOne(count(nodesOf("User"))))).toEqual({ r: 60 });
    expect(counted).toHaveBeenCalledWith("node", "User");
    expect(records).not.toHaveBeenCalled();
  });

  it("fetches the stream when the predicate reads other records (a traversal), with the same answer", async () => {
    const answers = await both(readOne(count(where(nodesOf("Admin"), existsP(out(context, "Follows"))))));
    expect(answers.cluster).toEqual({ r: 2 });
    expect(answers.cluster).toEqual(answers.single);
    expect(sentTypes()).toContain("read_label");
  });

  it("sees the invocation's own writes: a count after a write fetches the stream", async () => {
    const request = write([entry(undefined, addN("User", { name: "new", age: 1 })), entry("n", count(nodesOf("User")))], ["n"]);
    partitioned.transport.seen.length = 0;
    expect(await partitioned.run(request)).toEqual({ n: 61 });
    expect(sentTypes()).toContain("read_label");
    expect(await single.run(request)).toEqual({ n: 61 });
    // Back to the fixture for the other cases.
    const drop = write([entry(undefined, dropStep(nodesWhere(lt(prop("age"), 2))))], []);
    await partitioned.run(drop);
    await single.run(drop);
  });

  it("asks the leaders for a count inside a write invocation before its first write", async () => {
    const request = write([entry("n", count(nodesOf("User"))), entry(undefined, addN("Other", {}))], ["n"]);
    partitioned.transport.seen.length = 0;
    expect(await partitioned.run(request)).toEqual({ n: 60 });
    const executes = partitioned.transport.seen.filter((request) => request.type === "execute");
    expect(executes).toHaveLength(3);
    for (const { options } of executes) expect(options?.leader).toBe(true);
  });

  it("refuses a predicate the records fail with the single partition's error", async () => {
    const answers = await both(readOne(count(nodesWhere(gt(expr({ call: { fn: "abs", args: [{ property: "name" }] } }), 3)))));
    expect(answers.cluster).toMatchObject({ code: "invalid_type" });
    expect(answers.cluster).toEqual(answers.single);
  });

  it("refuses a parameter not supplied as the single partition does", async () => {
    const answers = await both(readOne(count(where(nodesOf("User"), gt(prop("age"), param("missing"))))));
    expect(answers.cluster).toMatchObject({ code: "missing_parameter" });
    expect(answers.cluster).toEqual(answers.single);
  });

  it("builds the stream under explain, whose access paths list every source step", async () => {
    const request = { ...read([entry("n", count(nodesOf("User")))], ["n"]), explain: true };
    const answers = await both(request as Request);
    expect(answers.cluster).toEqual(answers.single);
    expect(sentTypes()).toContain("read_label");
  });

  /** A page of `input` pushed down, and the same page through the fetch path on the same database. */
  async function paged(wrap: (input: TreeNode) => TreeNode, input: TreeNode, parameters: Record<string, unknown> = {}): Promise<{ pushed: unknown; fetched: unknown }> {
    partitioned.transport.seen.length = 0;
    const pushed = await outcome(() => partitioned.run(readOne(wrap(input), parameters)));
    const seen = [...partitioned.transport.seen];
    const fetched = await outcome(() => partitioned.run(readOne(wrap(dedup(input)), parameters)));
    partitioned.transport.seen.splice(0, partitioned.transport.seen.length, ...seen);
    return { pushed, fetched };
  }

  const pages: [string, (input: TreeNode) => TreeNode, TreeNode, Record<string, unknown>][] = [
    ["limit of a label", (input) => limit(input, 5), nodesOf("User"), {}],
    ["range of a filtered label", (input) => range(input, 3, 8), where(nodesOf("User"), gt(prop("age"), param("a"))), { a: 30 }],
    ["limit by a parameter", (input) => ({ limit: { input: input as Json, count: { expr: { param: "n" } } } }), nodesWhere(lt(prop("age"), 40)), { n: 7 }],
    ["limit of every edge", (input) => limit(input, 4), allEdges(), {}],
    ["limit past the end", (input) => limit(input, 1_000), nodesOf("Admin"), {}],
  ];
  for (const [what, wrap, input, parameters] of pages) {
    it(`pages ${what} from each partition's first IDs, as the fetch path does`, async () => {
      const answers = await paged(wrap, input, parameters);
      expect(answers.pushed).toEqual(answers.fetched);
      expect(Object.values(answers.pushed as QueryResult)[0]).not.toEqual([]);
      // One execute per partition, each answering at most `end` IDs; then only the page's own records are read.
      expect(sentTypes().filter((type) => type !== "read_records")).toEqual(["execute"]);
      for (const { reply } of partitioned.transport.seen.filter((request) => request.type === "execute")) {
        const result = (reply as Extract<PartitionReplyBody, { type: "result" }>).result;
        expect((result.ids as string[]).length).toBeLessThanOrEqual(8);
        expect(result.count).toEqual(expect.any(Number));
      }
    });
  }

  it("answers a bound the page refuses as the fetch path does", async () => {
    const answers = await paged((input) => ({ limit: { input: input as Json, count: { expr: { param: "n" } } } }), nodesOf("User"), { n: -1 });
    expect(answers.pushed).toMatchObject({ code: "invalid_type" });
    expect(answers.pushed).toEqual(answers.fetched);
  });

  it("fetches the stream for skip, which keeps everything after its count", async () => {
    const answers = await paged((input) => skip(input, 58), nodesOf("User"));
    expect(answers.pushed).toEqual(answers.fetched);
    expect(sentTypes()).toContain("read_label");
  });

  it("pages the invocation's own writes: a limit after a write fetches the stream", async () => {
    const request = write([entry(undefined, addN("User", { name: "fresh", age: 0 })), entry("r", limit(where(nodesOf("User"), lt(prop("age"), 1)), 5))], ["r"]);
    partitioned.transport.seen.length = 0;
    const answer = (await partitioned.run(request)) as { r: { name: string }[] };
    expect(answer.r.map((user) => user.name)).toEqual(["fresh"]);
    expect(sentTypes()).toContain("read_label");
    await partitioned.run(write([entry(undefined, dropStep(nodesWhere(lt(prop("age"), 1))))], []));
  });

  it("pages a whole label on one partition from the first keys of its label index", async () => {
    const records = vi.spyOn(Snapshot.prototype, "record");
    const pushed = await single.run(readOne(range(nodesOf("User"), 2, 6)));
    // Only the page's four records are read (to answer them), not the label's sixty.
    expect(records.mock.calls.length).toBe(4);
    expect(pushed).toEqual(await single.run(readOne(range(dedup(nodesOf("User")), 2, 6))));
    expect(await single.run(readOne(limit(allEdges(), 3)))).toEqual(await single.run(readOne(limit(dedup(allEdges()), 3))));
  });
});
