/**
 * HelixDB's own v3 TypeScript SDK against a schemaless `silk serve` whose records hold values of several kinds in one
 * property (a number in one record, a string or a boolean in others), as a schemaless HelixDB v3 database may. Its
 * filters compare as HelixDB v3's interpreter does (`PropertyValue::compare` and `eq_value`): a value of another kind
 * does not match, NEQ does, and no request fails. The database has two partitions, so every other record's ID is beyond
 * 2^63: `fold`, the `{"var": x}` expression and the projected `id` expression answer those IDs as exact JSON numbers,
 * which the SDK reads as bigints.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open } from "../../runtime/embedded.js";
import { removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";
import { startSchemalessServe, treeRequest, type SdkRequest, type SdkServer } from "./harness.js";

let server: SdkServer;

beforeAll(async () => {
  // A database is given its partitions when it is created (`silk import --partitions`, or embedded `open`).
  const data = join(temporaryDirectory(), "data");
  await (await open({ storage: { disk: data }, partitions: 2 })).close();
  server = await startSchemalessServe([], data);
});

afterAll(async () => {
  expect(await server.stop()).toBe(0);
  removeTemporaryDirectories();
});

const send = async (request: SdkRequest): Promise<Record<string, unknown>> => (await server.client.query(request).send()) as Record<string, unknown>;

/** The first ID of the second partition (2^63): records written one after another alternate between the two. */
const SECOND_PARTITION = 2n ** 63n;

describe("a schemaless silk serve with mixed-type data, driven by HelixDB's v3 SDK", () => {
  beforeAll(async () => {
    const { g, writeBatch } = server.sdk;
    await send(
      writeBatch()
        .varAs("a", g().addN("Item", { name: "a", tag: 30 }))
        .varAs("b", g().addN("Item", { name: "b", tag: "31" }))
        .varAs("c", g().addN("Item", { name: "c", tag: true }))
        .varAs("d", g().addN("Item", { name: "d", tag: "abc" }))
        .returning([])
        .toQueryRequest(),
    );
  });

  it("filters as HelixDB v3 compares: a value of another kind does not match, NEQ does, and nothing fails", async () => {
    const { g, readBatch, Predicate } = server.sdk;
    const names = (predicate: ReturnType<typeof Predicate.eq>) => g().nWithLabel("Item").where(predicate).values(["name"]);
    const answer = await send(
      readBatch()
        .varAs("startsWith3", names(Predicate.startsWith("tag", "3")))
        .varAs("gt29", names(Predicate.gt("tag", 29)))
        .varAs("gteString3", names(Predicate.gte("tag", "3")))
        .varAs("eqTrue", names(Predicate.eq("tag", true)))
        .varAs("gteFalse", names(Predicate.gte("tag", false)))
        .varAs("neq30", names(Predicate.neq("tag", 30)))
        .varAs("eqString30", names(Predicate.eq("tag", "30")))
        .varAs("contains1", names(Predicate.contains("tag", "1")))
        .varAs("nameLt5", names(Predicate.lt("name", 5)))
        .varAs("between", names(Predicate.between("tag", 0, 100)))
        .returning(["startsWith3", "gt29", "gteString3", "eqTrue", "gteFalse", "neq30", "eqString30", "contains1", "nameLt5", "between"])
        .toQueryRequest(),
    );
    const rows = (...list: string[]) => list.map((name) => ({ name }));
    expect(answer).toEqual({
      startsWith3: rows("b"),
      gt29: rows("a"),
      gteString3: rows("b", "d"),
      eqTrue: rows("c"),
      gteFalse: rows(),
      neq30: rows("c", "b", "d"), // in ID order: c is 2, b 2^63
      eqString30: rows(),
      contains1: rows("b"),
      nameLt5: rows(),
      between: rows("a"),
    });
  });

  it("folds records as the stream answers them, IDs beyond 2^53 as exact numbers", async () => {
    const { g, readBatch } = server.sdk;
    const answer = await send(readBatch().varAs("stream", g().nWithLabel("Item")).varAs("folded", g().nWithLabel("Item").fold()).returning(["stream", "folded"]).toQueryRequest());
    expect(answer.folded).toEqual(answer.stream);
    expect((answer.folded as { $id: unknown; name: string }[]).map((record) => [record.$id, record.name])).toEqual([
      [1, "a"],
      [2, "c"],
      [SECOND_PARTITION, "b"],
      [SECOND_PARTITION + 1n, "d"],
    ]);
  });

  it("answers a var of records as their IDs, exact JSON numbers as every other ID of /v2/query, and matches them", async () => {
    const items = { query: { name: "items", root: { nodes_where: { predicate: { eq: { left: { property: "$label" }, right: { constant: { string: "Item" } } } } } } } };
    const answer = await send(
      treeRequest({
        request_type: "read",
        query: {
          read: {
            entries: [
              items,
              { query: { name: "ids", root: { project: { input: { nodes: { reference: { ids: [1] } } }, projections: [{ expr: { alias: "items", expr: { var: "items" } } }] } } } },
              { query: { name: "again", root: { count: { input: { where: { input: { nodes: { reference: "all" } }, predicate: { is_in: { value: { property: "$id" }, values: { var: "items" } } } } } } } } },
            ],
            returns: ["ids", "again"],
          },
        },
      }),
    );
    expect(answer).toEqual({ ids: [{ items: [1, 2, SECOND_PARTITION, SECOND_PARTITION + 1n] }], again: 4 });
  });
});

describe("the id expression on /v2/query of a two-partition schemaless silk serve", () => {
  it("projects an ID beyond 2^63 as an exact JSON number (HelixDB's i64), and the SDK reads it as a bigint", async () => {
    const { g, readBatch, Expr, Projection, Predicate } = server.sdk;
    const answer = await send(
      readBatch()
        .varAs("ids", g().nWithLabel("Item").where(Predicate.isIn("name", ["a", "b"])).project([Projection.expr("id", Expr.id()), Projection.property("name", "name")]))
        .returning(["ids"])
        .toQueryRequest(),
    );
    expect(answer).toEqual({ ids: [{ id: 1, name: "a" }, { id: SECOND_PARTITION, name: "b" }] });
  });
});
