/**
 * How the coordinator reaches partition actors. Every message crosses as msgpackr bytes, also in-process, so what
 * works here works over NATS (the cluster issue adds that transport behind the same interface).
 */
import { SilkError } from "../protocol/errors.js";
import { decodeMessage, encodeMessage, type PartitionReply, type PartitionReplyBody, type PartitionRequest } from "../protocol/messages.js";
import type { PartitionActor } from "../node/partition-actor.js";

/** How one request may be answered. */
export interface RequestOptions {
  /** A read that must see everything the partition acknowledged: the leader answers it even when reads may be stale. */
  readonly leader?: boolean;
}

export interface Transport {
  request(partition: number, message: PartitionRequest, options?: RequestOptions): Promise<PartitionReplyBody>;
}

/** Unwraps a reply, turning a remote failure back into the SilkError it was. */
export function unwrap(reply: PartitionReply): PartitionReplyBody {
  if (reply.ok) return reply.body;
  throw new SilkError(reply.code, reply.message);
}

export class InProcessTransport implements Transport {
  constructor(private readonly actors: readonly PartitionActor[]) {}

  async request(partition: number, message: PartitionRequest): Promise<PartitionReplyBody> {
    const actor = this.actors[partition];
    if (actor === undefined) throw new SilkError("internal", `no partition ${partition} (a routing bug)`);
    const reply = await actor.handle(decodeMessage<PartitionRequest>(encodeMessage(message)));
    return unwrap(decodeMessage<PartitionReply>(encodeMessage(reply)));
  }
}
