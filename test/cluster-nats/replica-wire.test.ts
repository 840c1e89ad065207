/**
 * The cluster's bytes on NATS (cluster/nats/wire.ts): request envelopes, replies and log entries round-trip exactly
 * (bigints, byte arrays); what is not an envelope is refused with a stable code.
 */
import { describe, expect, it } from "vitest";
import { decodeLogEntry, decodeReply, decodeRequest, encodeLogEntry, encodeReply, encodeRequest } from "../../cluster/nats/wire.js";
import { encodeMessage } from "../../protocol/messages.js";
import { SilkError } from "../../protocol/errors.js";

describe("the NATS wire envelope", () => {
  it("round-trips requests with and without a request id, replies and log entries", () => {
    const batch = new Uint8Array([1, 2, 3, 250]);
    expect(decodeRequest(encodeRequest({ type: "apply", batch }, "r-1"))).toEqual({ requestId: "r-1", request: { type: "apply", batch } });
    expect(decodeRequest(encodeRequest({ type: "read_records", kind: "node", ids: [1n, 2n ** 63n] }))).toEqual({ request: { type: "read_records", kind: "node", ids: [1n, 2n ** 63n] } });
    expect(decodeReply(encodeReply({ ok: true, body: { type: "id", id: 4097n } }))).toEqual({ ok: true, body: { type: "id", id: 4097n } });
    expect(decodeReply(encodeReply({ ok: false, code: "not_leader", message: "gone" }))).toEqual({ ok: false, code: "not_leader", message: "gone" });
    expect(decodeLogEntry(encodeLogEntry({ type: "reserve_ids", upTo: 8192n }))).toEqual({ type: "reserve_ids", upTo: 8192n });
    expect(decodeLogEntry(encodeLogEntry({ type: "prepare", txid: "t", batch }))).toEqual({ type: "prepare", txid: "t", batch });
  });

  it("refuses what is not an envelope with the internal code", () => {
    for (const bytes of [new Uint8Array([0xc1]), encodeMessage({ ok: true, body: { type: "done" } }), encodeMessage({ requestId: 5, request: { type: "read_all", kind: "node" } } as never)]) {
      let caught: unknown;
      try {
        decodeRequest(bytes);
      } catch (cause) {
        caught = cause;
      }
      expect(caught).toBeInstanceOf(SilkError);
      expect((caught as SilkError).code).toBe("internal");
    }
  });
});
