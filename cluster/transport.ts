/**
 * How the coordinator reaches partition actors. Every message crosses as msgpackr bytes, also in-process, so what
 * works here works over NATS (the cluster issue adds that transport behind the same interface).
 */
import { SilkError } from "../protocol/errors.js";
import type { PartitionReply, PartitionReplyBody, PartitionRequest } from "../protocol/messages.js";
import type { PartitionActor } from "../node/partition-actor.js";
import { packr } from "../node/partition-store.js";

export interface Transport {
  request(partition: number, message: PartitionRequest): Promise<PartitionReplyBody>;
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
    const delivered = packr.unpack(packr.pack(message)) as PartitionRequest;
    const reply = await actor.handle(delivered);
    return unwrap(packr.unpack(packr.pack(reply)) as PartitionReply);
  }
}
