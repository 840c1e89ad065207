/**
 * The coordinator's transport over NATS: a PartitionRequest goes to partition i's leader subject (or, for reads when
 * the caller allows bounded staleness, to the replicas' stale subject) as the cluster/nats/wire.ts envelope, and the
 * PartitionReply comes back. Which leader holds the lease is NATS's business: only the lease holder subscribes.
 *
 * Bounded staleness (`staleReads: { maxStalenessMs }`, `true` = DEFAULT_MAX_STALENESS_MS): a read goes to the stale
 * subject carrying the bound; a replica too far behind answers `not_leader`, and the read goes to the leader subject
 * at once (no backoff, same request id). With `readYourWrites`, a read of a partition this transport sent a write to
 * less than maxStalenessMs ago goes to the leader, so it sees that write (cluster/nats/replica.ts states the guarantee).
 * A read sent with `{ leader: true }` (one that must be current: a read inside a write invocation) always goes to
 * the leader.
 *
 * Retry rules (docs/CLUSTER.md; the leader's side is cluster/nats/replica.ts):
 * - A request that provably reached no leader is retried until the overall deadline, with jittered exponential
 *   backoff: "no responders" (no leader subscribed yet, e.g. during a failover) and a `not_leader` reply (the
 *   replica knows nothing was appended).
 * - After a timeout (or a lost connection) the outcome is unknown. Only requests that are safe to repeat are sent
 *   again: reads, `commit`, `abort`, `pending_intents`, `index_statuses`, `allocate_ids` (a repeat only skips IDs)
 *   and `apply`/`prepare` (the leader uses the request's id as the JetStream message id, so a repeat is a
 *   duplicate). A write `execute` (or a failed index operation) is never repeated: it answers `partition_unavailable`.
 * - Every attempt of one request carries the same random request id.
 * - A leader that dies with a request in flight (SIGKILL) never replies, and NATS cannot say so: the request would
 *   wait out its whole attempt. So while an attempt on the leader subject waits longer than LEADER_PROBE_INTERVAL_MS,
 *   the transport asks that subject again with a cheap read (`index_statuses`) every interval; "no responders" means
 *   no replica serves the partition any more (a dead process's subscription goes with its connection), and the
 *   attempt ends there as unknown and is repeated, instead of after its timeout: a failover then costs the lease's
 *   move, not the attempt timeout. Only requests safe to repeat are probed: a leader that steps down alive still
 *   answers what it was running, and a write `execute` keeps waiting for that answer.
 *
 * Prepared plans: `register_plan` / `release_plan` are kept here, and `execute_prepared` is sent as an `execute` of
 * the kept plan with the run's parameters (exactly what the actor does with a registered plan), so a prepared
 * query keeps working when the leader changes (a new leader has no plans registered with the old one).
 *
 * Invariant: a request answers either the leader's reply or a SilkError; after `deadlineMs` it is
 * `partition_unavailable` naming the partition and the last thing that happened.
 */
import { randomUUID } from "node:crypto";
import { NoRespondersError, RequestError, TimeoutError, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { SilkError, unreachable } from "../../protocol/errors.js";
import { PREPARED_PLANS_MAX } from "../../protocol/limits.js";
import { backoffMs, type Backoff } from "../../platform/backoff.js";
import { realClock, sleep, type CancelTimer, type Clock } from "../../platform/clock.js";
import { isReadRequest, type PartitionReplyBody, type PartitionRequest } from "../../protocol/messages.js";
import type { Plan } from "../../protocol/tree.js";
import { DEFAULT_MAX_STALENESS_MS, MAX_STALENESS_MS_LIMIT, decodeReply, encodeRequest, isStalenessBound } from "./wire.js";
import { subjects } from "./subjects.js";
import { checkMessageSize, messageBytesMax, PARTS_COUNT_HEADER, PARTS_GONE_HEADER, PARTS_ID_HEADER, PARTS_SUBJECT_HEADER } from "./message-size.js";
import { unwrap, type Transport } from "../transport.js";

export const TRANSPORT_ATTEMPT_TIMEOUT_MS_DEFAULT = 5_000;
export const TRANSPORT_DEADLINE_MS_DEFAULT = 15_000;
/**
 * Backoff between attempts: the first wait is up to 25 ms, doubling up to 1 s, each between half its ceiling and the
 * ceiling (so the many requests a failover refuses at once come back spread, none of them almost at once).
 */
const ATTEMPT_BACKOFF: Backoff = { firstMs: 25, maxMs: 1_000, jitter: "equal" };
/** What a plan's own deadline is given on top, for the leader to answer after it (an execute's attempt timeout). */
const REPLY_MARGIN_MS = 2_000;
/** How often an attempt waiting on the leader subject checks that a leader still serves it (module comment). */
export const LEADER_PROBE_INTERVAL_MS = 500;

export interface NatsTransportOptions {
  readonly nc: NatsConnection;
  readonly cluster: string;
  /** How long one attempt waits for its reply (an execute waits at least its plan's timeout plus a margin). */
  readonly timeoutMs?: number;
  /** How long a request may take over all its attempts (default 15 s). */
  readonly deadlineMs?: number;
  /** Reads may go to any replica (the stale subject) within a staleness bound; see StaleReads. Default false. */
  readonly staleReads?: StaleReads;
  /** Time, timers and the backoff's jitter (tests pass a manual one); default realClock. */
  readonly clock?: Clock;
}

/**
 * Follower reads: false (every request to the leader), `{ maxStalenessMs }` (a positive integer ≤ 1 hour; reads may be
 * answered by a replica that applied every entry the log held maxStalenessMs before), or `true` for
 * `{ maxStalenessMs: DEFAULT_MAX_STALENESS_MS }`. `readYourWrites` (default false): see the module comment.
 */
export type StaleReads = boolean | { readonly maxStalenessMs: number; readonly readYourWrites?: boolean };

/** The validated bound and read-your-writes flag of a StaleReads option (undefined: no stale reads). */
export function staleReadsOption(value: StaleReads | undefined): { readonly maxStalenessMs: number; readonly readYourWrites: boolean } | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { maxStalenessMs: DEFAULT_MAX_STALENESS_MS, readYourWrites: false };
  if (typeof value !== "object" || value === null) throw new SilkError("invalid_option", `staleReads is false, true or { maxStalenessMs }, not ${String(value)}`);
  if (!isStalenessBound(value.maxStalenessMs)) {
    throw new SilkError("invalid_option", `staleReads.maxStalenessMs must be a positive integer of milliseconds up to ${MAX_STALENESS_MS_LIMIT}, not ${String(value.maxStalenessMs)}`);
  }
  if (value.readYourWrites !== undefined && typeof value.readYourWrites !== "boolean") throw new SilkError("invalid_option", "staleReads.readYourWrites is a boolean");
  return { maxStalenessMs: value.maxStalenessMs, readYourWrites: value.readYourWrites ?? false };
}

type Outcome =
  | { readonly kind: "reply"; readonly body: PartitionReplyBody }
  | { readonly kind: "retry"; readonly what: string; readonly refused?: true }
  | { readonly kind: "unknown"; readonly what: string };

/** Requests whose repetition changes nothing a caller can observe (see the module comment). */
export function safeToRepeat(request: PartitionRequest): boolean {
  if (isReadRequest(request)) return true;
  switch (request.type) {
    case "execute":
      return false;
    case "read_records":
    case "read_adjacency":
    case "read_label":
    case "read_all":
    case "read_index":
    case "vector_search":
    case "text_search":
    case "index_statuses":
    case "versioned":
    case "validate":
    case "allocate_ids":
    case "apply":
    case "prepare":
    case "commit":
    case "abort":
    case "pending_intents":
    case "owned_ranges":
    case "export_range":
    case "add_ranges": // owning a range twice is owning it once
    case "drop_range": // a dropped range has nothing left to delete
    case "index_entries":
    case "index_validated": // a verdict applies once; a repeat finds the index no longer validating
      return true;
    case "register_plan":
    case "execute_prepared":
    case "release_plan":
    case "index_create":
    case "index_drop":
    case "index_retry":
      return false;
    default:
      return unreachable(request, "request");
  }
}

export class NatsTransport implements Transport {
  private readonly plans = new Map<number, Plan>();
  private readonly attemptTimeoutMs: number;
  private readonly deadlineMs: number;
  private readonly stale: ReturnType<typeof staleReadsOption>;
  /** Per partition, when this transport's last write to it ended (`clock.monotonicMs()`; for readYourWrites). */
  private readonly wroteAt = new Map<number, number>();
  /** The leader probe: the cheapest read a partition answers, outside its write queue. */
  private readonly probe = encodeRequest({ type: "index_statuses" }, randomUUID());

  private readonly clock: Clock;

  constructor(private readonly options: NatsTransportOptions) {
    this.clock = options.clock ?? realClock;
    this.stale = staleReadsOption(options.staleReads);
    this.attemptTimeoutMs = options.timeoutMs ?? TRANSPORT_ATTEMPT_TIMEOUT_MS_DEFAULT;
    this.deadlineMs = options.deadlineMs ?? TRANSPORT_DEADLINE_MS_DEFAULT;
    for (const [name, value] of [["timeoutMs", this.attemptTimeoutMs], ["deadlineMs", this.deadlineMs]] as const) {
      if (!Number.isSafeInteger(value) || value < 1) throw new SilkError("invalid_option", `${name} must be a positive integer of milliseconds, not ${value}`);
    }
  }

  /**
   * `options.leader`: this read must see the partition's current state (a read inside a write invocation): it goes
   * to the leader even when stale reads are allowed.
   */
  async request(partition: number, message: PartitionRequest, options?: { readonly leader?: boolean }): Promise<PartitionReplyBody> {
    switch (message.type) {
      case "register_plan":
        if (this.plans.size >= PREPARED_PLANS_MAX) throw new SilkError("limit_exceeded", `a coordinator keeps at most ${PREPARED_PLANS_MAX} prepared plans`);
        this.plans.set(message.planId, message.plan);
        return { type: "done" };
      case "release_plan":
        this.plans.delete(message.planId);
        return { type: "done" };
      case "execute_prepared": {
        const plan = this.plans.get(message.planId);
        if (plan === undefined) throw new SilkError("internal", `no prepared plan ${message.planId} (it was released)`);
        return this.send(partition, { type: "execute", plan: { ...plan, parameters: message.parameters, timeoutMs: message.timeoutMs } }, options?.leader === true);
      }
      default:
        return this.send(partition, message, options?.leader === true);
    }
  }

  private async send(partition: number, message: PartitionRequest, leader: boolean): Promise<PartitionReplyBody> {
    const stale = this.stale;
    // Versioned reads and validations are answered by the leader only (it alone keeps the versions).
    if (stale === undefined || (leader && isReadRequest(message)) || message.type === "versioned" || message.type === "validate") return this.sendTo(partition, message, undefined);
    if (!isReadRequest(message)) {
      try {
        return await this.sendTo(partition, message, undefined);
      } finally {
        if (stale.readYourWrites) this.wroteAt.set(partition, this.clock.monotonicMs());
      }
    }
    const wrote = this.wroteAt.get(partition);
    const ownWriteTooRecent = wrote !== undefined && this.clock.monotonicMs() - wrote < stale.maxStalenessMs;
    return this.sendTo(partition, message, ownWriteTooRecent ? undefined : stale.maxStalenessMs);
  }

  /** Sends to the leader, or with a bound to the stale subject (then to the leader if the replica refuses). */
  private async sendTo(partition: number, message: PartitionRequest, maxStalenessMs: number | undefined): Promise<PartitionReplyBody> {
    const { nc, cluster } = this.options;
    let subject = maxStalenessMs !== undefined ? subjects.stale(cluster, partition) : subjects.leader(cluster, partition);
    const planTimeoutMs = message.type === "execute" ? message.plan.timeoutMs : undefined;
    const attemptTimeoutMs = planTimeoutMs === undefined ? this.attemptTimeoutMs : Math.max(this.attemptTimeoutMs, planTimeoutMs + REPLY_MARGIN_MS);
    const started = this.clock.monotonicMs();
    const deadline = started + Math.max(this.deadlineMs, attemptTimeoutMs);
    const requestId = randomUUID();
    let payload = encodeRequest(message, requestId, maxStalenessMs);
    checkMessageSize(`the ${message.type} request to partition ${partition}`, payload.length, messageBytesMax(nc));
    const repeatable = safeToRepeat(message);
    let what = "no attempt was made";
    /** Whether an earlier attempt's outcome is unknown (it may have taken effect). */
    let unsure = false;
    for (let attempt = 0; ; attempt++) {
      // Whole milliseconds: NATS refuses a request timeout under 1 ms (a monotonic clock's remainder is fractional).
      const remainingMs = Math.floor(deadline - this.clock.monotonicMs());
      if (remainingMs < 1) break;
      let outcome: Outcome;
      try {
        outcome = await this.attempt(subject, payload, Math.min(attemptTimeoutMs, remainingMs), repeatable && subject === subjects.leader(cluster, partition));
      } catch (cause) {
        // A validated apply refused after an attempt of unknown outcome: that attempt may have been appended (and
        // changed what the repeat validates) at a leader that no longer serves, so the refusal says nothing.
        if (unsure && message.type === "apply" && cause instanceof SilkError && cause.code === "transaction_conflict") {
          throw new SilkError("partition_unavailable", `partition ${partition} of cluster ${cluster}: ${what}; the apply may or may not have taken effect (its repeat was refused as a conflict)`);
        }
        throw cause;
      }
      if (outcome.kind === "reply") return outcome.body;
      what = outcome.what;
      if (outcome.kind === "unknown") unsure = true;
      if (outcome.kind === "retry" && outcome.refused && maxStalenessMs !== undefined && subject !== subjects.leader(cluster, partition)) {
        // The replica is too far behind for the bound (or not a reader): the leader answers, without waiting.
        subject = subjects.leader(cluster, partition);
        payload = encodeRequest(message, requestId);
        continue;
      }
      if (outcome.kind === "unknown" && !repeatable) {
        throw new SilkError("partition_unavailable", `partition ${partition} of cluster ${cluster}: ${what}; the ${message.type} may or may not have taken effect (it is not repeated)`);
      }
      if (nc.isClosed()) break;
      await sleep(this.clock, Math.min(Math.max(0, deadline - this.clock.monotonicMs()), backoffMs(ATTEMPT_BACKOFF, attempt, () => this.clock.random())));
    }
    throw new SilkError("partition_unavailable", `partition ${partition} of cluster ${cluster} did not answer within ${Math.round(this.clock.monotonicMs() - started)} ms: ${what}`);
  }

  /** One request and its reply; `probeLeader`: end early when no leader serves the subject any more (module comment). */
  private async attempt(subject: string, payload: Uint8Array, timeoutMs: number, probeLeader: boolean): Promise<Outcome> {
    const { nc } = this.options;
    let message: Msg;
    try {
      const request = nc.request(subject, payload, { timeout: timeoutMs });
      const answer = probeLeader && timeoutMs > LEADER_PROBE_INTERVAL_MS ? await this.unlessLeaderGone(subject, request) : await request;
      if (answer === "leader_gone") return { kind: "unknown", what: "the leader stopped serving the partition while the request was in flight (no responders to a probe)" };
      message = answer;
    } catch (cause) {
      if (isNoResponders(cause)) return { kind: "retry", what: "no leader is serving it (no responders)" };
      if (isTimeout(cause)) return { kind: "unknown", what: `no reply within ${timeoutMs} ms` };
      return { kind: "unknown", what: `the request failed: ${cause instanceof Error ? cause.message : String(cause)}` };
    }
    let data = message.data;
    const parts = message.headers?.get(PARTS_COUNT_HEADER);
    if (parts !== undefined && parts !== "") {
      try {
        data = await this.fetchParts(message, parts, timeoutMs);
      } catch (cause) {
        // The request ran: only its reply is lost, as after a timeout.
        return { kind: "unknown", what: `the reply's parts could not be fetched (${cause instanceof Error ? cause.message : String(cause)})` };
      }
    }
    const reply = decodeReply(data);
    if (!reply.ok && reply.code === "not_leader") return { kind: "retry", what: `a replica answered not_leader (${reply.message})`, refused: true };
    // The leader could not tell whether its append took effect (and stopped leading): as unknown as a timeout.
    if (!reply.ok && reply.code === "partition_unavailable") return { kind: "unknown", what: `the leader answered partition_unavailable (${reply.message})` };
    return { kind: "reply", body: unwrap(reply) };
  }

  /**
   * The request's reply, or "leader_gone" as soon as a probe of the subject finds no responders. The probe's own
   * reply or timeout means nothing here (a busy leader may be slow to answer it too); only its absence does.
   */
  private async unlessLeaderGone(subject: string, request: Promise<Msg>): Promise<Msg | "leader_gone"> {
    const { nc } = this.options;
    let cancel: CancelTimer | undefined;
    const gone = new Promise<"leader_gone">((resolve) => {
      let probing = false;
      // A tick while the last probe is still out (it times out after one interval) sends none.
      cancel = this.clock.every(LEADER_PROBE_INTERVAL_MS, () => {
        if (probing) return;
        probing = true;
        nc.request(subject, this.probe, { timeout: LEADER_PROBE_INTERVAL_MS })
          .then(
            () => undefined,
            (cause: unknown) => {
              if (isNoResponders(cause)) resolve("leader_gone");
            },
          )
          .finally(() => (probing = false));
      });
    });
    // A request abandoned to a probe still settles later (its timeout): that rejection is expected, not unhandled.
    request.catch(() => undefined);
    try {
      return await Promise.race([request, gone]);
    } finally {
      cancel?.();
    }
  }

  /** The rest of a reply sent as parts (cluster/nats/message-size.ts), fetched in order from the replica that answered. */
  private async fetchParts(first: Msg, countHeader: string, timeoutMs: number): Promise<Uint8Array> {
    const count = Number(countHeader);
    const subject = first.headers?.get(PARTS_SUBJECT_HEADER) ?? "";
    const id = first.headers?.get(PARTS_ID_HEADER) ?? "";
    if (!Number.isInteger(count) || count < 2 || subject === "" || id === "") throw new Error(`malformed parts headers (${countHeader} parts, subject ${JSON.stringify(subject)})`);
    const parts = [first.data];
    for (let index = 1; index < count; index++) {
      const part = await this.options.nc.request(subject, new TextEncoder().encode(`${id} ${index}`), { timeout: timeoutMs });
      if (part.headers?.get(PARTS_GONE_HEADER) === "1") throw new Error(`part ${index} of ${count} is no longer held by the replica`);
      parts.push(part.data);
    }
    return Buffer.concat(parts);
  }
}

function isNoResponders(cause: unknown): boolean {
  return cause instanceof NoRespondersError || (cause instanceof RequestError && cause.isNoResponders());
}

function isTimeout(cause: unknown): boolean {
  return cause instanceof TimeoutError || (cause instanceof Error && cause.cause instanceof TimeoutError);
}
