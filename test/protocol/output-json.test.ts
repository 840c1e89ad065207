/**
 * The JSON text of a HelixQL response (protocol/helixql/output.ts `renderOutputJson`) must be exactly the text of
 * the answer's values (`renderOutput`, the same walk into the other sink) given to JSON.stringify with bigints as
 * decimal strings, which is what the server answered before it wrote the text directly: checked on random results
 * and return shapes, and on the strings and numbers JSON escapes or cannot write.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { renderOutput, renderOutputJson } from "../../protocol/helixql/output.js";
import type { QueryOutput, ReturnShape } from "../../protocol/helixql/query.js";

function viaObjects(output: QueryOutput, result: Record<string, unknown>): string {
  return JSON.stringify(renderOutput(output, result), (_key, value: unknown) => (typeof value === "bigint" ? value.toString(10) : value)) ?? "null";
}

const ENTRIES = ["a", "b", "c"] as const;
/** Keys as results carry them: the tree's record keys, plain names, and names JSON must escape. */
const key = fc.oneof(fc.constantFrom("$id", "$label", "$from", "$to", "$vector", "$distance", "$score", "name", "é", 'q"uote', "0", "10"), fc.string({ maxLength: 6 }));
const text = fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: "binary", maxLength: 20 }), fc.constantFrom("", "\u2028", "\ud800", "a\\b", "\u0000\u001f", "x".repeat(70)));
const scalar = fc.oneof(
  text,
  fc.double(),
  fc.integer(),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0),
);
const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, fc.array(tie("value"), { maxLength: 5 }), fc.dictionary(key, tie("value"), { maxKeys: 5 })),
}));
const { shape } = fc.letrec<{ shape: ReturnShape }>((tie) => ({
  shape: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.record({ kind: fc.constant("entry" as const), entry: fc.constantFrom(...ENTRIES), cardinality: fc.constantFrom("one" as const, "many" as const, "scalar" as const) }),
    fc.record({ kind: fc.constant("literal" as const), value: fc.oneof(scalar, fc.dictionary(key, scalar, { maxKeys: 3 })) }),
    fc.record({ kind: fc.constant("object" as const), fields: fc.uniqueArray(fc.tuple(key, tie("shape")), { maxLength: 4, selector: ([name]) => name }) }),
    fc.record({ kind: fc.constant("array" as const), elements: fc.array(tie("shape"), { maxLength: 3 }) }),
  ),
}));
const output: fc.Arbitrary<QueryOutput> = fc.oneof(
  fc.record({ kind: fc.constant("keyed" as const), fields: fc.uniqueArray(fc.tuple(fc.constantFrom(...ENTRIES), shape), { maxLength: 3, selector: ([name]) => name }) }),
  fc.record({ kind: fc.constant("value" as const), shape }),
);
const result = fc.record({ a: value, b: value, c: value }, { requiredKeys: [] });

describe("a response's JSON text", () => {
  it("is JSON.stringify of the answer's objects, on random results and return shapes", () => {
    fc.assert(
      fc.property(output, result, (out, res) => {
        expect(renderOutputJson(out, res)).toBe(viaObjects(out, res));
      }),
      { numRuns: 2_000 },
    );
  });

  it("renames record keys at every depth, and writes what JSON cannot hold as JSON.stringify does", () => {
    const out: QueryOutput = { kind: "keyed", fields: [["users", { kind: "entry", entry: "users", cardinality: "many" }], ["first", { kind: "entry", entry: "users", cardinality: "one" }]] };
    const users = [
      { $id: "1", $label: "User", name: 'A "quoted"\nname', nested: { $from: "1", $to: "2", list: [Number.NaN, undefined, 18446744073709551615n] }, gone: undefined },
      { $id: "2", $label: "User", name: "\ud83d\ude00 and a lone \udc00" },
    ];
    const written = renderOutputJson(out, { users });
    expect(written).toBe(viaObjects(out, { users }));
    expect(JSON.parse(written)).toEqual({
      users: [
        { id: "1", label: "User", name: 'A "quoted"\nname', nested: { from_node: "1", to_node: "2", list: [null, null, "18446744073709551615"] } },
        { id: "2", label: "User", name: "\ud83d\ude00 and a lone \udc00" },
      ],
      first: { id: "1", label: "User", name: 'A "quoted"\nname', nested: { from_node: "1", to_node: "2", list: [null, null, "18446744073709551615"] } },
    });
  });

  it("answers null for a one-record entry that found nothing, and a literal body as it is", () => {
    expect(renderOutputJson({ kind: "keyed", fields: [["user", { kind: "entry", entry: "user", cardinality: "one" }]] }, { user: [] })).toBe('{"user":null}');
    expect(renderOutputJson({ kind: "value", shape: { kind: "literal", value: "ok" } }, {})).toBe('"ok"');
  });
});
