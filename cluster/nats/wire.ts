/**
 * The bytes a cluster puts on NATS (docs/REPLICATION.md), all through the protocol/messages.ts msgpack codec:
 *
 * - a request to a partition (leader subject or stale subject) is an envelope `{ requestId?, maxStalenessMs?, request }`;
 *   the requestId names a request across the transport's retries (the leader uses it as the JetStream message id, so
 *   a repeated append is a duplicate and applies once); `maxStalenessMs` is the staleness bound of a read sent to the
 *   stale subject (cluster/nats/replica.ts; absent there: DEFAULT_MAX_STALENESS_MS), ignored by a leader;
 * - a reply is a PartitionReply (errors are `{ ok: false, code, message }`);
 * - an entry of a partition's log stream is a node/store/log-entry.ts LogEntry.
 *
 * Invariant: decoding never throws on a well-formed message of the codec; a payload that is not an envelope (a
 * foreign publisher) is reported as SilkError `invalid_request`, which the receiver answers instead of crashing.
 */
import { SilkError } from "../../protocol/errors.js";
import { decodeMessage, encodeMessage, type PartitionReply, type PartitionRequest } from "../../protocol/messages.js";
import type { LogEntry } from "../../node/store/log-entry.js";

export interface RequestEnvelope {
  readonly requestId?: string;
  /** A stale read's bound: how far behind the log the answering replica may be (positive integer ms ≤ 1 hour). */
  readonly maxStalenessMs?: number;
  readonly request: PartitionRequest;
}

/** The bound `staleReads: true` stands for, and the one a stale request without `maxStalenessMs` gets. */
export const DEFAULT_MAX_STALENESS_MS = 5_000;
/** The largest staleness bound accepted. */
export const MAX_STALENESS_MS_LIMIT = 3_600_000;

/** Whether `value` is an acceptable staleness bound: a positive integer of milliseconds, at most one hour. */
export function isStalenessBound(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 1 && value <= MAX_STALENESS_MS_LIMIT;
}

// The codec is typed for requests and replies; envelopes and log entries are plain maps of the same kinds of values.
type Wire = PartitionRequest | PartitionReply;

export function encodeRequest(request: PartitionRequest, requestId?: string, maxStalenessMs?: number): Buffer {
  const envelope: RequestEnvelope = {
    ...(requestId === undefined ? {} : { requestId }),
    ...(maxStalenessMs === undefined ? {} : { maxStalenessMs }),
    request,
  };
  return encodeMessage(envelope as unknown as Wire);
}

export function decodeRequest(bytes: Uint8Array): RequestEnvelope {
  let envelope: unknown;
  try {
    envelope = decodeMessage(toBuffer(bytes));
  } catch (cause) {
    throw new SilkError("internal", `not a partition request envelope: ${(cause as Error).message}`);
  }
  if (typeof envelope !== "object" || envelope === null) throw new SilkError("internal", "not a partition request envelope");
  const { requestId, maxStalenessMs, request } = envelope as { requestId?: unknown; maxStalenessMs?: unknown; request?: unknown };
  if (requestId !== undefined && typeof requestId !== "string") throw new SilkError("internal", "a request envelope's requestId is a string");
  if (maxStalenessMs !== undefined && !isStalenessBound(maxStalenessMs)) {
    throw new SilkError("invalid_option", `maxStalenessMs must be a positive integer of milliseconds up to ${MAX_STALENESS_MS_LIMIT}, not ${String(maxStalenessMs)}`);
  }
  if (typeof request !== "object" || request === null || typeof (request as { type?: unknown }).type !== "string") {
    throw new SilkError("internal", "a request envelope carries a request with a type");
  }
  return {
    ...(requestId === undefined ? {} : { requestId }),
    ...(maxStalenessMs === undefined ? {} : { maxStalenessMs }),
    request: request as PartitionRequest,
  };
}

export function encodeReply(reply: PartitionReply): Buffer {
  return encodeMessage(reply);
}

export function decodeReply(bytes: Uint8Array): PartitionReply {
  return decodeMessage<PartitionReply>(toBuffer(bytes));
}

export function encodeLogEntry(entry: LogEntry): Buffer {
  return encodeMessage(entry as unknown as Wire);
}

export function decodeLogEntry(bytes: Uint8Array): LogEntry {
  return decodeMessage(toBuffer(bytes)) as unknown as LogEntry;
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
