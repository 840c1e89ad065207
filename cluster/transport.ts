/**
 * How the coordinator reaches partition actors: in-process calls here, NATS messages in a cluster
 * (nats/transport.ts), both behind the same interface and carrying the same messages.
 */
import { SilkError } from "../protocol/errors.js";
import type { PartitionReply, PartitionReplyBody, PartitionRequest, QueryResult } from "../protocol/messages.js";
import type { PartitionActor } from "../node/actor/partition-actor.js";

/** How one request may be answered. */
export interface RequestOptions {
  /** A read that must see everything the partition acknowledged: the leader answers it even when reads may be stale. */
  readonly leader?: boolean;
}

export interface Transport {
  request(partition: number, message: PartitionRequest, options?: RequestOptions): Promise<PartitionReplyBody>;
  /**
   * In-process only: the result of a prepared read the partition answers synchronously (one whose run needs no wait:
   * PartitionActor `readPreparedNow`), or undefined, and the request goes through `request`. Throws what that
   * request would fail with.
   */
  readNow?(partition: number, message: Extract<PartitionRequest, { type: "execute_prepared" }>): QueryResult | undefined;
}

/** Unwraps a reply, turning a remote failure back into the SilkError it was. */
export function unwrap(reply: PartitionReply): PartitionReplyBody {
  if (reply.ok) return reply.body;
  throw new SilkError(reply.code, reply.message);
}

/**
 * Hands each message to its actor as the object it is. Nothing is encoded: a msgpack round trip of every request
 * and reply was a quarter of a point read's cost. Neither side keeps or changes what it is handed (a registered
 * plan is only read; every reply is built for its request), and the cluster suites run the same messages through
 * the msgpack codec over NATS, so a message that could not cross a network still fails a test.
 */
export class InProcessTransport implements Transport {
  constructor(private readonly actors: readonly PartitionActor[]) {}

  async request(partition: number, message: PartitionRequest): Promise<PartitionReplyBody> {
    const actor = this.actors[partition];
    if (actor === undefined) throw new SilkError("internal", `no partition ${partition} (a routing bug)`);
    return unwrap(await actor.handle(message));
  }

  readNow(partition: number, message: Extract<PartitionRequest, { type: "execute_prepared" }>): QueryResult | undefined {
    const actor = this.actors[partition];
    if (actor === undefined) throw new SilkError("internal", `no partition ${partition} (a routing bug)`);
    return actor.readPreparedNow(message);
  }
}
