/**
 * The cluster's replicated KV buckets (decisions, the partition map): opening one, and retrying a call while NATS has
 * no answer (a server down, a stream leader being elected). Reads go to the stream leader (`allow_direct: false`),
 * so no replica that is catching up answers a stale value.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { SilkError } from "../../protocol/errors.js";

const RETRY_MS = 200;

/** Runs `work` until it succeeds, a SilkError ends it, or the deadline passes (then `partition_unavailable`). */
export async function retrying<T>(service: string, what: string, deadline: number, work: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await work();
    } catch (cause) {
      if (cause instanceof SilkError) throw cause;
      if (Date.now() + RETRY_MS > deadline) {
        throw new SilkError("partition_unavailable", `${service} did not answer ${what}: ${cause instanceof Error ? cause.message : String(cause)}`);
      }
      await sleep(RETRY_MS);
    }
  }
}

/** Opens a bucket with one value per key, creating it if absent (idempotent across processes). */
export function openBucket(nc: NatsConnection, name: string, replicas: number, deadline: number): Promise<KV> {
  return retrying(`the bucket ${name}`, "when opened", deadline, () => new Kvm(nc).create(name, { replicas, history: 1, allow_direct: false }));
}
