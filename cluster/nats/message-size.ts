/**
 * NATS bounds every message by its server's `max_payload` (1 MiB unless configured). Silk's cluster messages live
 * within it as follows (docs/CLUSTER.md, "Message sizes"):
 *
 * - A partition's reply of any size reaches the coordinator: a reply larger than one message goes as parts (the first
 *   with the reply, the rest fetched by the coordinator from the answering replica's parts subject), so no answer is
 *   bounded by the message size.
 * - A request to a partition and a log entry must each fit in one message: one that does not is refused before it is
 *   sent, with `payload_too_large` (nothing is written), naming the sizes and how to raise the limit.
 *
 * MESSAGE_MARGIN_BYTES is left for the headers NATS and JetStream add (message id, expected sequence, reply parts).
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { SilkError } from "../../protocol/errors.js";

/** Bytes kept free in each message for headers. */
export const MESSAGE_MARGIN_BYTES = 4 * 1024;
/** NATS's own default, for a connection that has not received the server's INFO yet. */
const NATS_MAX_PAYLOAD_DEFAULT = 1024 * 1024;

/** The most payload bytes one message of this connection may carry, headers' margin taken off. */
export function messageBytesMax(nc: NatsConnection): number {
  return (nc.info?.max_payload ?? NATS_MAX_PAYLOAD_DEFAULT) - MESSAGE_MARGIN_BYTES;
}

/** `payload_too_large` for a message of `bytes` where at most `limit` fit; `what` names it ("the request"). */
export function checkMessageSize(what: string, bytes: number, limit: number): void {
  if (bytes <= limit) return;
  throw new SilkError(
    "payload_too_large",
    `${what} is ${bytes} bytes, and the cluster's NATS servers carry at most ${limit} in one message (their max_payload, less ${MESSAGE_MARGIN_BYTES} for headers); nothing was written: split the write into smaller invocations, or raise max_payload in the NATS servers' configuration`,
  );
}

/** Headers of the first message of a reply sent as parts: how many, where to fetch the rest, under which id. */
export const PARTS_COUNT_HEADER = "Silk-Parts";
export const PARTS_SUBJECT_HEADER = "Silk-Parts-Subject";
export const PARTS_ID_HEADER = "Silk-Parts-Id";
/** Set on the answer to a fetch of a part the replica no longer holds (expired, or never kept). */
export const PARTS_GONE_HEADER = "Silk-Parts-Gone";
/** How long a replica keeps the rest of a reply for the coordinator to fetch. */
export const PENDING_REPLY_TTL_MS = 30_000;
/** The most bytes of replies a replica keeps waiting to be fetched; a reply that would pass it is refused. */
export const PENDING_REPLY_BYTES_MAX = 512 * 1024 * 1024;

/** `bytes` cut into pieces of at most `limit` bytes (views, not copies). */
export function splitParts(bytes: Uint8Array, limit: number): Uint8Array[] {
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += limit) parts.push(bytes.subarray(at, Math.min(at + limit, bytes.length)));
  return parts;
}

/**
 * The parts of large replies a replica keeps until the coordinator fetched them (the last fetch forgets a reply) or
 * PENDING_REPLY_TTL_MS passed; at most PENDING_REPLY_BYTES_MAX bytes in all (`keep` refuses more: `limit_exceeded`).
 */
export class PendingReplies {
  private readonly replies = new Map<string, { readonly parts: readonly Uint8Array[]; readonly bytes: number; readonly timer: NodeJS.Timeout }>();
  private bytes = 0;
  private next = 0;

  constructor(
    private readonly ttlMs = PENDING_REPLY_TTL_MS,
    private readonly bytesMax = PENDING_REPLY_BYTES_MAX,
  ) {}

  /** Keeps the parts after the first (which goes with the reply); answers the id to fetch them by. */
  keep(parts: readonly Uint8Array[]): string {
    const rest = parts.slice(1);
    const bytes = rest.reduce((sum, part) => sum + part.length, 0);
    if (this.bytes + bytes > this.bytesMax) {
      throw new SilkError("limit_exceeded", `the partition's replies waiting to be fetched would hold ${this.bytes + bytes} bytes, more than ${this.bytesMax}; narrow the query or try again`);
    }
    const id = String(this.next++);
    const timer = setTimeout(() => this.forget(id), this.ttlMs);
    timer.unref();
    this.replies.set(id, { parts: [new Uint8Array(0), ...rest], bytes, timer });
    this.bytes += bytes;
    return id;
  }

  /** Part `index` (1 or more) of reply `id`; the last part forgets the reply. Undefined when it is not held. */
  take(id: string, index: number): Uint8Array | undefined {
    const reply = this.replies.get(id);
    if (reply === undefined || !Number.isInteger(index) || index < 1 || index >= reply.parts.length) return undefined;
    if (index === reply.parts.length - 1) this.forget(id);
    return reply.parts[index];
  }

  /** Bytes held now. */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Forgets every reply (the replica stops). */
  clear(): void {
    for (const id of [...this.replies.keys()]) this.forget(id);
  }

  private forget(id: string): void {
    const reply = this.replies.get(id);
    if (reply === undefined) return;
    clearTimeout(reply.timer);
    this.bytes -= reply.bytes;
    this.replies.delete(id);
  }
}
