/**
 * The wire JSON types of the operation tree (protocol/tree-wire.ts), which the HelixQL compiler builds its trees as.
 * The `@ts-expect-error` lines are checked by `npx tsc -p test/tsconfig.json`: each is a tree the compiler could not
 * write, since tsc refuses it (a misspelled step, a misspelled key, a value of the wrong type, a missing key); were
 * one of them accepted, the unused directive would fail the type check. At run time, the decoder agrees: the
 * well-typed trees decode, and each refused one is malformed_tree.
 */
import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { decodeRequest } from "../../protocol/tree.js";
import type { WireEntry, WireExpr, WirePredicate, WireRequest, WireStep } from "../../protocol/tree-wire.js";

function request(root: WireStep): WireRequest {
  return { request_type: "read", query_name: "q", query: { read: { entries: [{ query: { name: "r", root } }], returns: ["r"] } } };
}

function refusal(body: unknown): SilkError {
  try {
    decodeRequest(body);
  } catch (error) {
    if (error instanceof SilkError) return error;
    throw error;
  }
  throw new Error("the decoder accepted the tree");
}

const users: WireStep = { nodes_where: { predicate: { eq: { left: { property: "$label" }, right: { constant: { string: "User" } } } } } };

describe("the operation tree's wire types", () => {
  it("type a tree the decoder accepts", () => {
    const older: WirePredicate = { gt: { left: { property: "age" }, right: { param: "age" } } };
    const count: WireExpr = { count: { traversal: { out: { input: "context", label: "Follows" } } } };
    const root: WireStep = {
      order_by: { input: { where: { input: { out: { input: users, label: "Follows" } }, predicate: older } }, expr: count, order: "desc", rule: "helixql" },
    };
    const plan = decodeRequest({ ...request(root), parameters: { age: 30 } });
    expect(plan.entries).toHaveLength(1);
    expect(plan.requestType).toBe("read");
  });

  it("refuse a misspelled step name, which the decoder refuses too", () => {
    // @ts-expect-error: `outt` is no step of the tree
    const root: WireStep = { outt: { input: users, label: "Follows" } };
    expect(refusal(request(root)).code).toBe("malformed_tree");
  });

  it("refuse a misspelled key inside a step, which the decoder refuses too", () => {
    // @ts-expect-error: `out` takes `input` and `label`, not `lable`
    const root: WireStep = { out: { input: users, lable: "Follows" } };
    const error = refusal(request(root));
    expect(error.code).toBe("malformed_tree");
    expect(error.message).toContain("root.out.lable: unknown field");
  });

  it("refuse a misspelled key deep in a tree", () => {
    // @ts-expect-error: a sub-traversal is `{"root": step}`, not `{"roots": ..}`
    const root: WireStep = { union: { input: users, traversals: [{ roots: "context" }] } };
    expect(refusal(request(root)).code).toBe("malformed_tree");
  });

  it("refuse a value of the wrong type and a missing key", () => {
    // @ts-expect-error: a label is a string
    const numbered: WireStep = { out: { input: users, label: 7 } };
    expect(refusal(request(numbered)).code).toBe("malformed_tree");
    // @ts-expect-error: `limit` needs its `count`
    const unbounded: WireStep = { limit: { input: users } };
    expect(refusal(request(unbounded)).code).toBe("malformed_tree");
    // @ts-expect-error: an order is "asc" or "desc"
    const sideways: WireStep = { order_by: { input: users, property: "age", order: "up" } };
    expect(refusal(request(sideways)).code).toBe("malformed_tree");
  });

  it("refuse a misspelled expression, predicate and entry", () => {
    // @ts-expect-error: the arithmetic expressions are add, sub, mul, div and mod
    const plus: WireExpr = { plus: { left: { param: "a" }, right: { param: "b" } } };
    // @ts-expect-error: is_null takes the `property` it checks
    const missing: WirePredicate = { is_null: { path: "age" } };
    // @ts-expect-error: an entry is a query or a for_each
    const entry: WireEntry = { for: { param: "rows", body: [] } };
    expect(refusal(request({ where: { input: users, predicate: { eq: { left: plus, right: { constant: { i64: 3 } } } } } })).code).toBe("malformed_tree");
    expect(refusal(request({ where: { input: users, predicate: missing } })).code).toBe("malformed_tree");
    expect(refusal({ request_type: "read", query: { read: { entries: [entry] } } }).code).toBe("malformed_tree");
  });
});
