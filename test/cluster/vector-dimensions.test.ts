/**
 * The coordinator's check of one vector dimension per index across partitions (cluster/vector-dimensions.ts), over
 * partitions' index statuses given by hand: what it refuses, and when it asks the partitions again (a cache that
 * does not settle a record is never trusted, so a stale one costs a round trip, never a wrong answer).
 */
import { describe, expect, it } from "vitest";
import type { IndexStatus } from "../../protocol/indexes.js";
import type { StoredRecord } from "../../protocol/records.js";
import { VectorDimensions } from "../../cluster/vector-dimensions.js";

function status(dimension: number | undefined, state: IndexStatus["state"] = "active"): IndexStatus {
  return {
    family: "vector", kind: "vector", label: "Doc", field: "$vector", name: "Doc.$vector", metric: "euclidean",
    state, origin: "schema", entities: 0, bytes: 0, operations: 0, ...(dimension === undefined ? {} : { dimension }),
  };
}

function vector(id: number, length: number, label = "Doc"): StoredRecord {
  return { kind: "vector", id: BigInt(id), label, vector: new Float64Array(length).fill(1), props: {} };
}

/** A check over partitions whose statuses `current` answers, counting how often it is asked. */
function checker(current: () => IndexStatus[][]): { dimensions: VectorDimensions; asked: () => number } {
  let asked = 0;
  const dimensions = new VectorDimensions(async () => {
    asked += 1;
    return current();
  });
  return { dimensions, asked: () => asked };
}

describe("VectorDimensions", () => {
  it("refuses a length other than the dimension any partition fixed, naming the record's place", async () => {
    const { dimensions } = checker(() => [[status(4)], [status(undefined)], [status(undefined)]]);
    expect(await dimensions.firstMismatch([vector(1, 4), vector(2, 4)])).toBeUndefined();
    const found = await dimensions.firstMismatch([vector(1, 4), vector(2, 2)]);
    expect(found?.index).toBe(1);
    expect(found?.error.code).toBe("vector_dimension_mismatch");
    expect(found?.error.message).toContain("has dimension 4");
  });

  it("refuses records of one list that disagree where no partition fixed a dimension", async () => {
    const { dimensions } = checker(() => [[status(undefined)], [status(undefined)]]);
    expect(await dimensions.firstMismatch([vector(1, 3), vector(2, 3)])).toBeUndefined();
    expect((await dimensions.firstMismatch([vector(1, 3), vector(2, 5)]))?.index).toBe(1);
  });

  it("ignores other labels, edges, blocked indexes and values that are no vectors (the partitions refuse those)", async () => {
    const note: IndexStatus = { ...status(4), kind: "node", label: "Note", field: "v", name: "Note.v" };
    const { dimensions } = checker(() => [[status(4), note], [{ ...status(2, "blocked"), label: "Other", name: "Other.$vector" }]]);
    const records: StoredRecord[] = [
      vector(1, 2, "Plain"),
      vector(2, 3, "Other"),
      { kind: "edge", id: 3n, label: "Doc", from: 1n, to: 2n, fromKind: "node", toKind: "node", props: {} },
      { kind: "node", id: 4n, label: "Doc", props: {} },
      { kind: "node", id: 5n, label: "Note", props: { v: "not a vector" } },
      { kind: "node", id: 6n, label: "Note", props: { v: [] } },
      { kind: "node", id: 7n, label: "Note", props: {} },
    ];
    expect(await dimensions.firstMismatch(records)).toBeUndefined();
    expect((await dimensions.firstMismatch([{ kind: "node", id: 8n, label: "Note", props: { v: [1, 2] } }]))?.index).toBe(0);
  });

  it("asks the partitions once while the cache settles every record, again when it does not", async () => {
    let fixed: number | undefined;
    const { dimensions, asked } = checker(() => [[status(fixed)], [status(undefined)]]);
    await dimensions.firstMismatch([vector(1, 4)]);
    expect(asked()).toBe(2); // no dimension known: asked again before the first vector stands
    fixed = 4; // that vector committed
    await dimensions.firstMismatch([vector(2, 4)]);
    expect(asked()).toBe(3);
    await dimensions.firstMismatch([vector(3, 4)]);
    await dimensions.firstMismatch([vector(4, 4)]);
    expect(asked()).toBe(3); // settled by the cache
    fixed = undefined; // the index was dropped and created again by someone else: the cache is stale
    expect(await dimensions.firstMismatch([vector(5, 2)])).toBeUndefined();
    expect(asked()).toBe(4);
    dimensions.forget(); // an index operation ran
    await dimensions.firstMismatch([]);
    expect(asked()).toBe(4); // nothing to check: nothing asked
    await dimensions.firstMismatch([vector(6, 2, "Plain")]);
    expect(asked()).toBe(5); // forgotten: asked again
  });

  it("accepts any dimension of a database whose partitions already disagree, and no other", async () => {
    const { dimensions } = checker(() => [[status(4)], [status(2)]]);
    expect(await dimensions.firstMismatch([vector(1, 4), vector(2, 2)])).toBeUndefined();
    expect((await dimensions.firstMismatch([vector(3, 3)]))?.index).toBe(0);
  });
});
