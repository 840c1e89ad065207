/**
 * IDs in answers (issue 14): `Database.run` (the embedded API) answers decimal strings, `Database.runV2` (what
 * `POST /v2/query` runs) answers JsonId, which the route's serializer writes as bare JSON numbers digit for digit,
 * up to 2^64 - 1, and which crosses the coordinator ↔ partition wire (msgpack) as itself.
 */
import { describe, expect, it } from "vitest";
import { parse } from "lossless-json";
import { open } from "../../runtime/embedded.js";
import { stringifyAnswer, stringifyJson } from "../../gateway/json.js";
import { ID_MAX, JsonId } from "../../protocol/ids.js";
import { decodeMessage, encodeMessage, type PartitionReply } from "../../protocol/messages.js";

const U64_MAX_DIGITS = "18446744073709551615";

describe("IDs in answers", () => {
  it("writes a JsonId as a bare JSON number, exactly, and leaves strings that hold digits as strings", () => {
    const text = stringifyAnswer({ n: [{ $id: new JsonId(ID_MAX), $from: new JsonId(0n), name: "18446744073709551615", note: "\\ud8001" }] });
    expect(text).toBe(`{"n":[{"$id":${U64_MAX_DIGITS},"$from":0,"name":"${U64_MAX_DIGITS}","note":"\\\\ud8001"}]}`);
    expect(parse(text, null, (digits) => BigInt(digits))).toEqual({ n: [{ $id: ID_MAX, $from: 0n, name: U64_MAX_DIGITS, note: "\\ud8001" }] });
  });

  it("carries a JsonId across the partition wire", () => {
    const reply: PartitionReply = { ok: true, body: { type: "result", result: { ids: [new JsonId(ID_MAX)] } } };
    const decoded = decodeMessage<PartitionReply>(encodeMessage(reply));
    expect(decoded.ok && decoded.body.type === "result" && (decoded.body.result.ids as JsonId[])[0]).toEqual(new JsonId(ID_MAX));
  });

  it("answers strings from run and numbers from runV2, in every ID position", async () => {
    const db = await open({ storage: "memory" });
    try {
      const write = {
        request_type: "write",
        query: { write: { entries: [
          { query: { name: "a", root: { add_n: { label: "P", properties: [["code", { value: { string: "7" } }]] } } } },
          { query: { name: "b", root: { add_n: { label: "P", properties: [] } } } },
          { query: { name: "e", root: { add_e: { input: { nodes: { reference: { var: "a" } } }, label: "K", to: { var: "b" }, properties: [] } } } },
        ], returns: ["a", "e"] } },
      };
      expect(stringifyJson(await db.run(write))).toBe('{"a":[{"$id":"1","$label":"P","code":"7"}],"e":[{"$id":"3","$label":"K","$from":"1","$to":"2"}]}');
      const read = { request_type: "read", query: { read: { entries: [{ query: { name: "ids", root: { id: { input: { nodes: { reference: { ids: [1, "2"] } } } } } } }], returns: ["ids"] } } };
      expect(stringifyJson(await db.run(read))).toBe('{"ids":["1","2"]}');
      expect(stringifyAnswer(await db.runV2(read))).toBe('{"ids":[1,2]}');
    } finally {
      await db.close();
    }
  });

  it("renders a var of records, a fold and a first as the route renders IDs, and stores them as decimal strings from both", async () => {
    const db = await open({ storage: "memory", partitions: 2 });
    try {
      const seed = { request_type: "write", query: { write: { entries: [1, 2].map((i) => ({ query: { name: `n${i}`, root: { add_n: { label: "P", properties: [] } } } })), returns: [] } } };
      await db.run(seed);
      const big = "9223372036854775808"; // the second partition's first ID, beyond 2^53
      const all = { query: { name: "all", root: { nodes: { reference: "all" } } } };
      const read = {
        request_type: "read",
        query: { read: { entries: [
          all,
          { query: { name: "v", root: { project: { input: { nodes: { reference: { ids: [1] } } }, projections: [
            { expr: { alias: "var", expr: { var: "all" } } },
            { expr: { alias: "first", expr: { first: { nodes: { reference: { ids: [big] } } } } } },
          ] } } } },
          { query: { name: "f", root: { fold: { input: { nodes: { reference: { ids: [big] } } } } } } },
        ], returns: ["v", "f"] } },
      };
      expect(stringifyJson(await db.run(read))).toBe(`{"v":[{"var":["1","${big}"],"first":{"$id":"${big}","$label":"P"}}],"f":[{"$id":"${big}","$label":"P"}]}`);
      expect(stringifyAnswer(await db.runV2(read))).toBe(`{"v":[{"var":[1,${big}],"first":{"$id":${big},"$label":"P"}}],"f":[{"$id":${big},"$label":"P"}]}`);
      const store = (name: string) => ({ request_type: "write", query: { write: { entries: [all, { query: { root: { set_property: { input: { nodes: { reference: { ids: [1] } } }, name, value: { expr: { var: "all" } } } } } }], returns: [] } } });
      await db.run(store("fromRun"));
      await db.runV2(store("fromV2"));
      const stored = { request_type: "read", query: { read: { entries: [{ query: { name: "p", root: { value_map: { input: { nodes: { reference: { ids: [1] } } }, properties: ["fromRun", "fromV2"] } } } }], returns: ["p"] } } };
      expect(await db.run(stored)).toEqual({ p: [{ fromRun: ["1", big], fromV2: ["1", big] }] });
    } finally {
      await db.close();
    }
  });
});
