/** The actor-message codec: round trips, and its buffer policy after a big message. */
import { describe, expect, it } from "vitest";
import { decodeMessage, encodeMessage, type PartitionRequest } from "../../protocol/messages.js";

describe("encodeMessage", () => {
  it("round-trips requests with bigints, strings and bytes", () => {
    const message: PartitionRequest = { type: "read_records", kind: "node", ids: [1n, 2n ** 64n - 1n] };
    expect(decodeMessage(encodeMessage(message))).toEqual(message);
  });

  it("after a big message, small ones are packed into a small buffer again, and the big one's bytes stay intact", () => {
    const batch = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 251);
    const big = encodeMessage({ type: "apply", batch });
    const small = encodeMessage({ type: "allocate_ids", count: 3 });
    expect(small.buffer.byteLength).toBeLessThanOrEqual(64 * 1024);
    for (let i = 0; i < 1_000; i += 1) encodeMessage({ type: "allocate_ids", count: i });
    const decoded = decodeMessage<PartitionRequest>(big);
    expect(decoded.type).toBe("apply");
    expect(Buffer.compare(Buffer.from((decoded as { batch: Uint8Array }).batch), Buffer.from(batch))).toBe(0);
    expect(decodeMessage(small)).toEqual({ type: "allocate_ids", count: 3 });
  });
});
