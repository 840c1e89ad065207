import { describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { emptySchema, parseSchema, schemaFromJson, schemaToJson } from "../../protocol/schema.js";

const text = `
N::User {
  INDEX name: String,
  UNIQUE INDEX email: String,
  REQUIRED handle: String,
  age: U32 DEFAULT 0,
  big: U128 DEFAULT 340282366920938463463374607431768211455,
  created_at: Date DEFAULT NOW,
  born: Date DEFAULT "1990-05-17",
  dates: [Date] DEFAULT ["2000-01-01T00:00:00Z"],
  ratio: F32 DEFAULT 0.5,
  address: { REQUIRED city: String, geo: { lat: F64, lon: F64 }, tags: [[String]] },
  ids: [ID] DEFAULT [18446744073709551615],
}
E::Follows { From: User, To: User, Properties: { since: Date, weight: F64 DEFAULT 1.5 } }
E::Embeds { From: User, To: Doc }
E::Best UNIQUE { From: User, To: User }
V::Doc { content: String }
V::Empty {}
`;

describe("schemaToJson / schemaFromJson", () => {
  const schema = parseSchema({ file: "s.hx", text });

  it("round-trips through JSON text to an equal schema", () => {
    const json = JSON.parse(JSON.stringify(schemaToJson(schema)));
    const back = schemaFromJson(json);
    expect(back).toEqual(schema);
    expect(schemaToJson(back)).toEqual(json);
  });

  it("writes a readable JSON shape", () => {
    const json = schemaToJson(schema) as { version: number; nodes: { fields: unknown[] }[]; edges: unknown[] };
    expect(json.version).toBe(1);
    expect(json.nodes[0].fields.slice(0, 5)).toEqual([
      { name: "name", type: "String", required: false, index: "index" },
      { name: "email", type: "String", required: false, index: "unique" },
      { name: "handle", type: "String", required: true },
      { name: "age", type: "U32", required: false, default: { kind: "value", value: 0 } },
      { name: "big", type: "U128", required: false, default: { kind: "value", value: "340282366920938463463374607431768211455" } },
    ]);
    expect(json.edges[0]).toEqual({
      name: "Follows",
      from: "User",
      to: "User",
      fields: [
        { name: "since", type: "Date", required: false },
        { name: "weight", type: "F64", required: false, default: { kind: "value", value: 1.5 } },
      ],
    });
  });

  it("writes unique: true for a UNIQUE edge type only, and reads a stored edge without it as not unique", () => {
    const json = schemaToJson(schema) as { edges: { name: string; unique?: boolean }[] };
    expect(json.edges.map((edge) => [edge.name, edge.unique])).toEqual([["Follows", undefined], ["Embeds", undefined], ["Best", true]]);
    expect(schemaFromJson(json).edges.get("Best")?.unique).toBe(true);
    expect(schemaFromJson(json).edges.get("Follows")?.unique).toBe(false);
  });

  it("restores bigints and Dates in DEFAULTs exactly", () => {
    const back = schemaFromJson(JSON.parse(JSON.stringify(schemaToJson(schema))));
    const user = back.nodes.get("User");
    expect(user?.fields.get("big")?.default).toEqual({ kind: "value", value: 2n ** 128n - 1n });
    expect(user?.fields.get("born")?.default).toEqual({ kind: "value", value: new Date(Date.UTC(1990, 4, 17)) });
    expect(user?.fields.get("ids")?.default).toEqual({ kind: "value", value: [2n ** 64n - 1n] });
    expect(user?.fields.get("created_at")?.default).toEqual({ kind: "now" });
  });

  it("round-trips the empty schema", () => {
    expect(schemaToJson(emptySchema())).toEqual({ version: 1, nodes: [], edges: [], vectors: [] });
    expect(schemaFromJson(schemaToJson(emptySchema()))).toEqual(emptySchema());
  });

  it.each([
    ["not an object", [], "$"],
    ["a wrong version", { version: 2, nodes: [], edges: [], vectors: [] }, "$.version"],
    ["nodes not a list", { version: 1, nodes: {}, edges: [], vectors: [] }, "$.nodes"],
    ["an unknown scalar", { version: 1, nodes: [{ name: "A", fields: [{ name: "a", type: "Int", required: false }] }], edges: [], vectors: [] }, "$.nodes[0].fields[0].type"],
    ["a reserved field name", { version: 1, nodes: [{ name: "A", fields: [{ name: "id", type: "ID", required: false }] }], edges: [], vectors: [] }, "$.nodes[0].fields[0].name"],
    ["an edge's unique flag that is not a boolean", { version: 1, nodes: [{ name: "A", fields: [] }], edges: [{ name: "E", from: "A", to: "A", unique: "yes", fields: [] }], vectors: [] }, "$.edges[0].unique"],
    ["a duplicate type", { version: 1, nodes: [{ name: "A", fields: [] }, { name: "A", fields: [] }], edges: [], vectors: [] }, "$.nodes[1].name"],
    ["a missing required flag", { version: 1, nodes: [{ name: "A", fields: [{ name: "a", type: "U8" }] }], edges: [], vectors: [] }, "$.nodes[0].fields[0].required"],
    ["a default of the wrong type", { version: 1, nodes: [{ name: "A", fields: [{ name: "a", type: "U8", required: false, default: { kind: "value", value: 300 } }] }], edges: [], vectors: [] }, "$.nodes[0].fields[0].default.value"],
    ["NOW on a non-Date", { version: 1, nodes: [{ name: "A", fields: [{ name: "a", type: "U8", required: false, default: { kind: "now" } }] }], edges: [], vectors: [] }, "$.nodes[0].fields[0].default"],
    ["an index on a nested field", { version: 1, nodes: [{ name: "A", fields: [{ name: "o", type: { object: [{ name: "k", type: "U8", required: false, index: "index" }] }, required: false }] }], edges: [], vectors: [] }, "$.nodes[0].fields[0].type.object[0].index"],
    ["an edge to an unknown type", { version: 1, nodes: [{ name: "A", fields: [] }], edges: [{ name: "E", from: "A", to: "B", fields: [] }], vectors: [] }, "$.edges[0].to"],
  ])("rejects %s with schema_invalid naming the JSON path", (_label, json, path) => {
    let error: unknown;
    try {
      schemaFromJson(json);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SilkError);
    expect((error as SilkError).code).toBe("schema_invalid");
    expect((error as SilkError).message).toContain(`at ${path}:`);
  });
});
