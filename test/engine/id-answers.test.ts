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
});
