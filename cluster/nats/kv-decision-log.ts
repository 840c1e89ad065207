/**
 * The cluster's replicated two-phase-commit decision log (cluster/decision-log.ts's DecisionStore) on the NATS KV
 * bucket subjects.decisionBucket(cluster), one key per transaction, replicated over `replicas` servers (3 in a
 * three-server cluster).
 *
 * Invariant: a decision, once written, never changes, not even after it is forgotten. `decide` is a put that the
 * server refuses unless the key never held anything (expected last subject sequence 0), then, whatever happened
 * (refused, timed out, connection lost), a read of the key: the value that is there is the decision that holds,
 * whoever wrote it. So a coordinator finishing its commit and another resolving the same transaction cannot both
 * win, and a put whose acknowledgement was lost is still seen. `forget` marks the decision forgotten in place (the
 * key keeps its outcome; decision() and all() then skip it), so a late `decide` (a coordinator whose `decide(commit)`
 * was held while recovery aborted and forgot its transaction) gets the old outcome back instead of writing a new one.
 * Not KV `create`: it writes over a delete marker, which would let that late commit win over an abort already
 * applied. A key whose last entry is a delete marker (forgotten by an older Silk) counts as decided abort.
 *
 * Bound: a forgotten marker (or an old delete marker) older than `forgottenHorizonMs` (default one hour) is purged
 * from the bucket's stream, so the bucket holds the decisions not yet forgotten plus at most an hour's forgotten
 * ones. Safe because a late `decide` can only come from a call that started before its key was forgotten: a key is
 * forgotten once every participant applied its outcome, so no partition holds its intent any more and neither
 * recovery nor an intent resolver decides it again (they decide only intents a partition holds); what remains is the
 * coordinator's own `decide(commit)` of that transaction, which retries for at most `deadlineMs` (20 s) after it
 * started. A horizon far longer than that (it must exceed `deadlineMs`) leaves no such call alive. Decisions not yet
 * forgotten are never purged, however old (a partition may need one after a long outage). And a partition refuses a
 * commit of an intent it aborted (node/actor/partition-actor.ts), so even a commit written on a purged key would
 * be refused, not acknowledged.
 */
import { DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { SilkError } from "../../protocol/errors.js";
import type { Decision, DecisionStore, Outcome } from "../decision-log.js";
import { subjects } from "./subjects.js";
import { openBucket, retrying } from "./kv-buckets.js";

/** How long decide() keeps trying (a stream leader's failover takes about 5 s, DESIGN.md). */
export const DECISION_DEADLINE_MS_DEFAULT = 20_000;
/** How long a forgotten decision's marker stays before it is purged (see the bound above). */
export const FORGOTTEN_HORIZON_MS_DEFAULT = 60 * 60_000;
/** The most a sweep of old forgotten markers waits after the last: a quarter of the horizon, at most 5 minutes. */
const SWEEP_INTERVAL_MS_MAX = 5 * 60_000;
/** Messages a sweep pulls at a time. */
const SWEEP_BATCH = 512;
/** What NATS KV accepts as a key; the coordinator's txids (`<hex>-<n>`) always are. */
const TXID = /^[-/_=.a-zA-Z0-9]{1,256}$/;

function checkTxid(txid: string): string {
  if (!TXID.test(txid)) throw new SilkError("internal", `internal error (a bug in Silk): ${JSON.stringify(txid)} is not a transaction id`);
  return txid;
}

export interface KvDecisionLogOptions {
  readonly nc: NatsConnection;
  readonly cluster: string;
  /** The bucket's replicas: 3 on a three-server cluster, 1 on a single server. */
  readonly replicas: number;
  readonly deadlineMs?: number;
  /** How long a forgotten decision stays marked before a sweep purges it; more than deadlineMs (default one hour). */
  readonly forgottenHorizonMs?: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** What a key holds: a decision, marked `forgotten` once every participant applied it. */
interface StoredDecision extends Decision {
  readonly forgotten?: true;
}

function parseDecision(txid: string, bytes: Uint8Array): StoredDecision {
  const parsed = JSON.parse(decoder.decode(bytes)) as Partial<StoredDecision>;
  if (parsed.outcome !== "commit" && parsed.outcome !== "abort") throw new SilkError("internal", `the decision of ${txid} is not a decision: ${decoder.decode(bytes)}`);
  const decision = { outcome: parsed.outcome, participants: Array.isArray(parsed.participants) ? parsed.participants : [] };
  return parsed.forgotten === true ? { ...decision, forgotten: true } : decision;
}

/** A message of the bucket's stream that a sweep may purge once old: a forgotten decision, or a delete marker. */
function isForgotten(message: JsMsg): boolean {
  const operation = message.headers?.get("KV-Operation") ?? "";
  if (operation === "DEL" || operation === "PURGE") return true;
  try {
    return (JSON.parse(decoder.decode(message.data)) as Partial<StoredDecision>).forgotten === true;
  } catch {
    return false; // not a decision: left for decision() to report
  }
}

/** What a key holds now: nothing, a decision (`revision`: the entry's, for a conditional update), or a delete marker. */
type Held = { readonly kind: "none" } | { readonly kind: "decision"; readonly decision: StoredDecision; readonly revision: number } | { readonly kind: "deleted" };

export class KvDecisionLog implements DecisionStore {
  /** When the last sweep of old forgotten markers started (0: none yet), and the one running. */
  private sweptAt = 0;
  private sweeping: Promise<number> | undefined;

  private constructor(
    private readonly kv: KV,
    private readonly deadlineMs: number,
    private readonly nc: NatsConnection,
    private readonly bucket: string,
    private readonly forgottenHorizonMs: number,
  ) {}

  /** Opens the bucket, creating it if absent (idempotent across coordinators). */
  static async open(options: KvDecisionLogOptions): Promise<KvDecisionLog> {
    const deadlineMs = options.deadlineMs ?? DECISION_DEADLINE_MS_DEFAULT;
    const horizonMs = options.forgottenHorizonMs ?? FORGOTTEN_HORIZON_MS_DEFAULT;
    if (!Number.isSafeInteger(horizonMs) || horizonMs <= deadlineMs) {
      throw new SilkError("invalid_option", `the decision log's forgotten horizon must be an integer number of milliseconds above its deadline (${deadlineMs} ms), not ${horizonMs}`);
    }
    const name = subjects.decisionBucket(options.cluster);
    const kv = await openBucket(options.nc, name, options.replicas, Date.now() + deadlineMs);
    return new KvDecisionLog(kv, deadlineMs, options.nc, name, horizonMs);
  }

  async decide(txid: string, outcome: Outcome, participants: readonly number[]): Promise<Outcome> {
    checkTxid(txid);
    const value = encoder.encode(JSON.stringify({ outcome, participants: [...participants] } satisfies Decision));
    const deadline = Date.now() + this.deadlineMs;
    return retrying("the decision log", `deciding ${txid}`, deadline, async () => {
      try {
        await this.kv.put(txid, value, { previousSeq: 0 });
        return outcome;
      } catch (cause) {
        // Refused (a decision holds, forgotten or not) or unknown (the ack was lost): what the key holds is the answer.
        const held = await this.held(txid);
        if (held.kind === "decision") return held.decision.outcome;
        if (held.kind === "deleted") return "abort";
        throw cause;
      }
    });
  }

  async decision(txid: string): Promise<Outcome | undefined> {
    checkTxid(txid);
    return (await retrying("the decision log", `reading the decision of ${txid}`, Date.now() + this.deadlineMs, () => this.read(txid)))?.outcome;
  }

  private async held(txid: string): Promise<Held> {
    const entry = await this.kv.get(txid);
    if (entry === null) return { kind: "none" };
    if (entry.operation !== "PUT") return { kind: "deleted" };
    return { kind: "decision", decision: parseDecision(txid, entry.value), revision: entry.revision };
  }

  /** The decision that holds and is not forgotten. */
  private async read(txid: string): Promise<Decision | undefined> {
    const held = await this.held(txid);
    return held.kind === "decision" && held.decision.forgotten !== true ? held.decision : undefined;
  }

  /** Marks the decision forgotten, at the revision read (a decision never changes, so a refusal means it is already). */
  async forget(txid: string): Promise<void> {
    checkTxid(txid);
    await retrying("the decision log", `forgetting ${txid}`, Date.now() + this.deadlineMs, async () => {
      const held = await this.held(txid);
      if (held.kind !== "decision" || held.decision.forgotten === true) return;
      const { outcome, participants } = held.decision;
      await this.kv.update(txid, encoder.encode(JSON.stringify({ outcome, participants: [...participants], forgotten: true } satisfies StoredDecision)), held.revision);
    });
    this.sweepWhenDue();
  }

  /** Starts a sweep in the background when the last one started long enough ago (forgetting is what adds markers). */
  private sweepWhenDue(): void {
    if (this.sweeping !== undefined || Date.now() - this.sweptAt < Math.min(this.forgottenHorizonMs / 4, SWEEP_INTERVAL_MS_MAX)) return;
    this.sweeping = this.sweepForgotten()
      .catch(() => 0) // tried again after the next interval
      .finally(() => (this.sweeping = undefined));
  }

  /**
   * Purges every forgotten marker (and old delete marker) written more than the horizon ago; resolves to how many.
   * The stream is read in order from its first message up to the first one younger than the horizon (a stream's
   * messages are in the order they were written), and each old marker is purged by its subject up to its own
   * sequence only, so nothing written to that key later would go with it.
   */
  async sweepForgotten(): Promise<number> {
    this.sweptAt = Date.now();
    const cutoffMs = this.sweptAt - this.forgottenHorizonMs;
    const stream = `KV_${this.bucket}`;
    const jsm = await jetstreamManager(this.nc);
    const old: { subject: string; seq: number }[] = [];
    const consumer = await jetstream(this.nc).consumers.get(stream, { deliver_policy: DeliverPolicy.All });
    try {
      for (let done = false; !done; ) {
        const batch = await consumer.fetch({ max_messages: SWEEP_BATCH, expires: 2_000 });
        let delivered = 0;
        for await (const message of batch) {
          delivered += 1;
          if (message.time.getTime() >= cutoffMs) done = true;
          else if (isForgotten(message)) old.push({ subject: message.subject, seq: message.seq });
          if (done || message.info.pending === 0) {
            done = true;
            batch.stop();
            break;
          }
        }
        if (delivered === 0) done = true;
      }
    } finally {
      await consumer.delete().catch(() => false);
    }
    for (const { subject, seq } of old) await jsm.streams.purge(stream, { filter: subject, seq: seq + 1 });
    return old.length;
  }

  async all(): Promise<string[]> {
    return retrying("the decision log", "listing decisions", Date.now() + this.deadlineMs, async () => {
      // The stream leader's own list of subjects (a keys() consumer may be placed on a replica still catching up
      // after a restart, and miss keys); a subject whose last message is a delete marker is read away below.
      const jsm = await jetstreamManager(this.nc);
      const info = await jsm.streams.info(`KV_${this.bucket}`, { subjects_filter: ">" });
      const prefix = `$KV.${this.bucket}.`;
      const keys = Object.keys(info.state.subjects ?? {}).filter((subject) => subject.startsWith(prefix)).map((subject) => subject.slice(prefix.length));
      const held = await Promise.all(keys.map(async (key) => ((await this.read(key)) === undefined ? undefined : key)));
      return held.filter((key): key is string => key !== undefined).sort();
    });
  }

  async close(): Promise<void> {
    // The connection belongs to the caller; only a sweep under way is waited for.
    await this.sweeping;
  }
}

