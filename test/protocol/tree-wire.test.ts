/**
 * The wire JSON types of the operation tree (protocol/tree-wire.ts), which the HelixQL compiler builds its trees as.
 * The `@ts-expect-error` lines are checked by `npx tsc -p test/tsconfig.json`: each is a tree the compiler could not
 * write, since tsc refuses it (a misspelled step, a misspelled key, a value of the wrong type, a missing key); were
 * one of them accepted, the unused directive would fail the type check. At run time, the decoder agrees: the
 * well-typed trees decode, and each refused one is malformed_tree. The decoder's list of each step's fields is made
 * from a `WireFieldSet` of the step's wire type, which tsc holds to the type both ways; the last tests show it.
 */
import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { decodeRequest } from "../../protocol/tree.js";
import {
  WIRE_EXPR_FIELDS,
  WIRE_FIELDS,
  WIRE_PREDICATE_FIELDS,
  WIRE_STEP_FIELDS,
  WIRE_STEP_FORM_FIELDS,
  type WireEntry,
  type WireExpr,
  type WireBatch,
  type WireFieldSet,
  type WirePredicate,
  type WirePredicateBodies,
  type WireRequest,
  type WireStep,
  type WireStepBodies,
  type WireStepForms,
} from "../../protocol/tree-wire.js";

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

  it("tie the decoder's list of a step's fields to the step's type, both ways", () => {
    // @ts-expect-error: `out` has a `label` the decoder's list would leave out
    const missing: WireFieldSet<WireStepBodies["out"]> = { input: true };
    // @ts-expect-error: `out` has no `lable` for the decoder to accept
    const surplus: WireFieldSet<WireStepBodies["out"]> = { input: true, label: true, lable: true };
    // @ts-expect-error: HelixDB's shortest path has no `to` (Silk's form has)
    const mixed: WireFieldSet<WireStepForms["shortest_path"]["helix"]> = { source: true, target: true, label: true, direction: true, max_depth: true, to: true };
    const exact: WireFieldSet<WireStepBodies["out"]> = { input: true, label: true };
    expect([missing, surplus, mixed].every((set) => typeof set === "object")).toBe(true);
    expect(Object.keys(exact)).toEqual(WIRE_STEP_FIELDS.out);
    expect(WIRE_STEP_FORM_FIELDS.shortest_path.helix).toEqual(["source", "target", "label", "direction", "max_depth"]);
  });

  it("refuse a field a step does not have, naming the step's fields from the same list, for every step", () => {
    for (const [tag, fields] of Object.entries(WIRE_STEP_FIELDS)) {
      const error = refusal(request({ [tag]: { surplus: 1 } } as unknown as WireStep));
      expect(error.code).toBe("malformed_tree");
      expect(error.message).toContain(`root.${tag}.surplus: unknown field (expected ${fields.join(", ")})`);
    }
    for (const [form, fields] of [
      [{ group_count: { properties: ["a"], surplus: 1 } }, WIRE_STEP_FORM_FIELDS.group_count.silk],
      [{ group_count: { property: "a", surplus: 1 } }, WIRE_STEP_FORM_FIELDS.group_count.helix],
      [{ aggregate_by: { properties: ["a"], surplus: 1 } }, WIRE_STEP_FORM_FIELDS.aggregate_by.silk],
      [{ aggregate_by: { function: "sum", property: "a", surplus: 1 } }, WIRE_STEP_FORM_FIELDS.aggregate_by.helix],
      [{ shortest_path: { to: "all", surplus: 1 } }, WIRE_STEP_FORM_FIELDS.shortest_path.silk],
      [{ shortest_path: { source: "all", target: "all", surplus: 1 } }, WIRE_STEP_FORM_FIELDS.shortest_path.helix],
    ] as const) {
      const error = refusal(request({ where: { input: users, predicate: { exists: { traversal: form as unknown as WireStep } } } }));
      expect(error.message).toContain(`.surplus: unknown field (expected ${fields.join(", ")})`);
    }
  });

  it("tie the lists of predicates', expressions' and the other objects' fields to their types the same way", () => {
    // @ts-expect-error: is_in compares a `value` with `values`; a list without `values` would refuse it
    const partial: WireFieldSet<WirePredicateBodies["is_in"]> = { value: true };
    // @ts-expect-error: a batch has `entries` and `returns`, nothing else
    const batch: WireFieldSet<WireBatch> = { entries: true, returns: true, limit: true };
    expect([partial, batch].every((set) => typeof set === "object")).toBe(true);
    for (const [tag, fields] of Object.entries(WIRE_PREDICATE_FIELDS)) {
      const error = refusal(request({ where: { input: users, predicate: { [tag]: { surplus: 1 } } as unknown as WirePredicate } }));
      expect(error.message).toContain(`.predicate.${tag}.surplus: unknown field (expected ${fields.join(", ")})`);
    }
    for (const [tag, fields] of Object.entries(WIRE_EXPR_FIELDS)) {
      const error = refusal(request({ order_by: { input: users, expr: { [tag]: { surplus: 1 } } as unknown as WireExpr } }));
      expect(error.message).toContain(`.expr.${tag}.surplus: unknown field (expected ${fields.join(", ")})`);
    }
    const error = refusal({ ...request(users), surplus: 1 });
    expect(error.message).toContain(`$.surplus: unknown field (expected ${WIRE_FIELDS.request.join(", ")})`);
  });
});
