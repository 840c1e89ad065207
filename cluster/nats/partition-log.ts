/**
 * A partition's replicated log on JetStream (docs/REPLICATION.md): the stream `subjects.logStream` holding
 * node/store/log-entry.ts entries (msgpack, cluster/nats/wire.ts) on the one subject `subjects.log`, replicated by the NATS
 * servers' own Raft.
 *
 * - `PartitionLog`: creates the stream if absent (idempotent across replicas), reads its last sequence and single
 *   entries, and follows it in order from a sequence with an ordered consumer.
 * - `LeaderWriteLog`: the WriteLog a leader's PartitionActor appends through. Every append carries the guard
 *   "the stream's last sequence is the last one this replica appended or applied", so an append of a deposed
 *   leader (another leader appended since) fails.
 *
 * Invariants (the retry rules): `append` throws `not_leader` only when the entry certainly is not in the log (the
 * replica may not lead, so nothing was published; or JetStream refused the guard). When the outcome is unknown (a
 * timeout, a lost connection, any other failure) it throws `partition_unavailable` and reports itself unsure, so the
 * replica stops leading and re-reads the log. A duplicate (the request id was appended before) is caught up here:
 * every entry up to the original's sequence is applied before `append` returns "duplicate".
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { nanos } from "@nats-io/nats-core";
import {
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import type { Logger } from "pino";
import { SilkError } from "../../protocol/errors.js";
import { backoffMs, type Backoff } from "../../platform/backoff.js";
import { realClock, sleep, type CancelTimer, type Clock } from "../../platform/clock.js";
import { applyLogEntry, type LogEntry } from "../../node/store/log-entry.js";
import type { WriteLog } from "../../node/actor/partition-actor.js";
import type { PartitionStore } from "../../node/store/partition-store.js";
import { decodeLogEntry, encodeLogEntry } from "./wire.js";
import { subjects } from "./subjects.js";
import { checkMessageSize, messageBytesMax } from "./message-size.js";

/** How long JetStream remembers a message id (a retried request within it applies once). */
export const DUPLICATE_WINDOW_MS = 120_000;
/** How long a leader waits for JetStream's acknowledgement of an append before it calls the outcome unknown. */
export const APPEND_TIMEOUT_MS = 5_000;
/**
 * The wait between publishes of an append nobody received (the stream has no leader yet): 20 ms, doubling up to
 * 250 ms, without jitter (one leader appends; there is no crowd to spread).
 */
const PUBLISH_BACKOFF: Backoff = { firstMs: 20, maxMs: 250, jitter: "none" };

export interface PartitionLogOptions {
  readonly nc: NatsConnection;
  readonly cluster: string;
  readonly partition: number;
  /** The stream's num_replicas: 1 on one NATS server, 3 in a cluster. */
  readonly replicas: number;
  /** Time, timers and randomness for the follow loop and the leader's appends; default realClock. */
  readonly clock?: Clock;
}

export class PartitionLog {
  readonly stream: string;
  readonly subject: string;
  readonly clock: Clock;

  private constructor(
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    private readonly nc: NatsConnection,
    options: PartitionLogOptions,
  ) {
    this.stream = subjects.logStream(options.cluster, options.partition);
    this.subject = subjects.log(options.cluster, options.partition);
    this.clock = options.clock ?? realClock;
  }

  /**
   * Binds to the partition's stream, creating it when absent (every replica may race to: the loser finds it).
   * Retries for up to `STARTUP_TIMEOUT_MS` while JetStream does not answer (its meta leader is being elected).
   */
  static async open(options: PartitionLogOptions): Promise<PartitionLog> {
    const clock = options.clock ?? realClock;
    const jsm = await whileUnanswered(() => jetstreamManager(options.nc), clock); // it asks JetStream for the account first
    const log = new PartitionLog(jetstream(options.nc), jsm, options.nc, options);
    await creatingRacing(async () => {
      try {
        await jsm.streams.info(log.stream);
      } catch (cause) {
        if (!(cause instanceof JetStreamApiError && cause.code === JetStreamApiCodes.StreamNotFound)) throw cause;
        try {
          await jsm.streams.add({
            name: log.stream,
            subjects: [log.subject],
            num_replicas: options.replicas,
            storage: StorageType.File,
            retention: RetentionPolicy.Limits,
            discard: DiscardPolicy.Old,
            duplicate_window: nanos(DUPLICATE_WINDOW_MS),
          });
        } catch (raced) {
          await jsm.streams.info(log.stream).catch(() => {
            throw raced;
          });
        }
      }
    }, CREATE_PAUSE_MS, clock);
    return log;
  }

  /** The stream's last sequence (0 when empty). */
  async lastSequence(): Promise<number> {
    return (await this.jsm.streams.info(this.stream)).state.last_seq;
  }

  /** The entry at `sequence` (undefined when the stream has none there). */
  async entryAt(sequence: number): Promise<LogEntry | undefined> {
    const message = await this.jsm.streams.getMessage(this.stream, { seq: sequence });
    return message === null ? undefined : decodeLogEntry(message.data);
  }

  /**
   * Publishes `entry` if the stream's last sequence is `expectedLast`. Returns the entry's sequence and whether
   * JetStream saw its message id before (then the sequence is the original's).
   */
  async publish(entry: LogEntry, expectedLast: number, msgID: string | undefined): Promise<{ sequence: number; duplicate: boolean }> {
    const bytes = encodeLogEntry(entry);
    checkMessageSize("the write's log entry", bytes.length, messageBytesMax(this.nc));
    const ack = await this.js.publish(this.subject, bytes, {
      expect: { lastSubjectSequence: expectedLast },
      timeout: APPEND_TIMEOUT_MS,
      ...(msgID === undefined ? {} : { msgID }),
    });
    return { sequence: ack.seq, duplicate: ack.duplicate };
  }

  /**
   * Delivers every entry from `fromSequence` on, in order, to `onEntry` (synchronous: the next is delivered after it
   * returns), until the follower is stopped. An entry `onEntry` throws on ends the follow with that failure (`done`
   * rejects), and so does a gap: an entry after `fromSequence`'s successors were purged (the log was truncated below a
   * snapshot past this replica) ends it with `log_truncated`, never skipping an entry. NATS trouble does not: the follower pulls batches through an ordered consumer and, when a pull fails or
   * comes back empty while the stream holds more, makes a new consumer from the next sequence it needs.
   *
   * `onCurrent(asOf)` (an instant of the log's `clock.monotonicMs()`) is called when the follower knows it applied every entry the
   * log held at `asOf`: after applying an entry delivered with nothing pending behind it (`asOf` = when the pull that
   * brought it was sent; the server counted "nothing pending" after it received that pull), or after a pull came back
   * empty and the stream's last sequence, asked at `asOf`, was already applied.
   */
  follow(fromSequence: number, onEntry: (sequence: number, entry: LogEntry) => void, logger: Logger, onCurrent: (asOf: number) => void = () => undefined): LogFollower {
    const clock = this.clock;
    const follower = new LogFollower(clock);
    let next = Math.max(1, fromSequence);
    follower.done = (async () => {
      while (!follower.stopped) {
        try {
          const consumer = await this.js.consumers.get(this.stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: next });
          while (!follower.stopped) {
            const pulledAt = clock.monotonicMs();
            const batch = await consumer.fetch({ max_messages: FOLLOW_BATCH, expires: FOLLOW_EXPIRES_MS });
            // A pull whose server died may never end by itself: it is stopped after its expiry and a grace period.
            const cancelGuard = clock.setTimer(FOLLOW_EXPIRES_MS + FOLLOW_GRACE_MS, () => batch.stop());
            follower.batch = batch;
            let delivered = 0;
            try {
              for await (const message of batch) {
                if (follower.stopped) break;
                if (message.seq > next) {
                  // JetStream starts a consumer at the stream's first entry when the one asked for was purged.
                  throw new EntryFailure(new SilkError("log_truncated", `the log was truncated past this replica: it needs entry ${next}, the log starts at ${message.seq}; start it again to bootstrap from the latest snapshot`));
                }
                if (message.seq === next) {
                  try {
                    onEntry(message.seq, decodeLogEntry(message.data));
                  } catch (cause) {
                    throw new EntryFailure(cause);
                  }
                  next = message.seq + 1;
                  delivered++;
                }
                if (message.info.pending === 0) onCurrent(pulledAt);
              }
            } finally {
              cancelGuard();
              follower.batch = undefined;
            }
            if (delivered === 0 && !follower.stopped) {
              const askedAt = clock.monotonicMs();
              if ((await this.lastSequence()) >= next) break; // a stalled consumer
              if (!follower.stopped) onCurrent(askedAt);
            }
          }
        } catch (cause) {
          if (cause instanceof EntryFailure) throw cause.cause;
          if (follower.stopped) break;
          logger.warn({ stream: this.stream, next, err: String(cause) }, "log follow interrupted; resuming");
          await follower.pause(FOLLOW_RETRY_MS);
        }
      }
    })();
    follower.done.catch(() => undefined);
    return follower;
  }
}

/** Entries a follower pulls at a time, and how long a pull waits for the first. */
const FOLLOW_BATCH = 512;
const FOLLOW_EXPIRES_MS = 1_000;
const FOLLOW_RETRY_MS = 200;
const FOLLOW_GRACE_MS = 2_000;

class EntryFailure extends Error {
  constructor(override readonly cause: unknown) {
    super("log entry failed");
  }
}

/** A running follow of the log. */
export class LogFollower {
  stopped = false;
  /** Settles when the follow ends: after `stop()`, or rejected with what the entry handler threw. */
  done: Promise<void> = Promise.resolve();
  private wake: (() => void) | undefined;
  /** The pull in flight, stopped by `stop()`. */
  batch: { stop(): void } | undefined;

  constructor(private readonly clock: Clock) {}

  /** Waits `ms`, or less if stopped meanwhile. */
  pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel: CancelTimer = this.clock.setTimer(ms, resolve);
      this.wake = () => (cancel(), resolve());
    });
  }

  /** Stops delivering; resolves when no entry is being delivered any more (a pull in flight ends by its expiry). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    this.batch?.stop();
    await this.done.catch(() => undefined);
  }
}

/**
 * Applies one log entry at its sequence unless already applied. A user-error outcome is the entry's outcome on every
 * replica (recorded as applied by atLogSequence) and is returned; anything else throws (the replica must stop).
 */
export function applyAt(store: PartitionStore, sequence: number, entry: LogEntry): SilkError | undefined {
  if (sequence <= store.appliedLogSequence()) return undefined;
  try {
    applyLogEntry(store, entry, sequence);
    return undefined;
  } catch (cause) {
    if (cause instanceof SilkError && cause.kind === "user") return cause;
    throw cause;
  }
}

export interface LeaderWriteLogOptions {
  readonly log: PartitionLog;
  readonly store: PartitionStore;
  /** The last sequence this replica applied when it became leader. */
  readonly lastSequence: number;
  /** Whether this replica may append now (it holds a live lease and has not stepped down). */
  readonly mayAppend: () => boolean;
  /** Called when an append's outcome is unknown or refused: the replica must stop leading and re-read the log. */
  readonly onUnsure: (reason: string) => void;
  readonly logger: Logger;
}

/** The WriteLog of a leader's actor (see the module comment for its guarantees). */
export class LeaderWriteLog implements WriteLog {
  private last: number;

  constructor(private readonly options: LeaderWriteLogOptions) {
    this.last = options.lastSequence;
  }

  /** The last sequence this leader appended or applied. */
  get lastSequence(): number {
    return this.last;
  }

  async append(entry: LogEntry, requestId?: string): Promise<number | "duplicate"> {
    const { mayAppend, onUnsure, logger } = this.options;
    if (!mayAppend()) throw new SilkError("not_leader", "this replica no longer leads its partition (its lease is gone)");
    let outcome: { sequence: number; duplicate: boolean };
    try {
      outcome = await this.publish(entry, requestId);
    } catch (cause) {
      if (cause instanceof SilkError) throw cause;
      if (cause instanceof JetStreamApiError && (cause.code === JetStreamApiCodes.StreamWrongLastSequence || cause.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)) {
        onUnsure(`another leader appended after sequence ${this.last}`);
        throw new SilkError("not_leader", `this replica is no longer its partition's leader (the log moved past sequence ${this.last})`);
      }
      const message = cause instanceof Error ? cause.message : String(cause);
      logger.warn({ err: message, entry: entry.type, requestId }, "append outcome unknown");
      onUnsure(`append outcome unknown: ${message}`);
      throw new SilkError("partition_unavailable", `the partition's log did not confirm the write (${message}); its outcome is unknown`);
    }
    if (!outcome.duplicate) {
      this.last = outcome.sequence;
      return outcome.sequence;
    }
    await this.catchUpTo(outcome.sequence);
    return "duplicate";
  }

  /**
   * Publishes, again while nobody received it ("no responders": the stream's subject has no leader yet, right after
   * the stream was created or while it elects one), for at most APPEND_TIMEOUT_MS.
   */
  private async publish(entry: LogEntry, requestId: string | undefined): Promise<{ sequence: number; duplicate: boolean }> {
    const { log } = this.options;
    const deadline = log.clock.monotonicMs() + APPEND_TIMEOUT_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        return await log.publish(entry, this.last, requestId);
      } catch (cause) {
        if (!isNoResponders(cause) || log.clock.monotonicMs() > deadline) throw cause;
        if (!this.options.mayAppend()) throw new SilkError("not_leader", "this replica no longer leads its partition (its lease is gone)");
        await sleep(log.clock, backoffMs(PUBLISH_BACKOFF, attempt, () => log.clock.random()));
      }
    }
  }

  /** A duplicate's original may be beyond what this replica applied: apply the log up to it. */
  private async catchUpTo(sequence: number): Promise<void> {
    const { log, store, logger } = this.options;
    for (let next = store.appliedLogSequence() + 1; next <= sequence; next++) {
      const entry = await log.entryAt(next);
      if (entry === undefined) throw new SilkError("partition_unavailable", `log entry ${next} is missing`);
      const refused = applyAt(store, next, entry);
      if (refused !== undefined) logger.warn({ sequence: next, code: refused.code }, "log entry refused (applied as a no-op)");
    }
    if (sequence > this.last) this.last = sequence;
  }
}

/** How long a replica's start waits for JetStream to answer. */
export const STARTUP_TIMEOUT_MS = 30_000;

/**
 * Runs `work` again while JetStream does not answer it (a timeout, no responders), for up to STARTUP_TIMEOUT_MS:
 * only for idempotent work (creating what may exist, reading).
 */
export async function whileUnanswered<T>(work: () => Promise<T>, clock: Clock = realClock): Promise<T> {
  const deadline = clock.monotonicMs() + STARTUP_TIMEOUT_MS;
  for (;;) {
    try {
      return await work();
    } catch (cause) {
      const unanswered = isNoResponders(cause) || (cause instanceof Error && (cause.name === "TimeoutError" || cause.name === "RequestError"));
      if (!unanswered || clock.monotonicMs() > deadline) throw cause;
      await sleep(clock, 200);
    }
  }
}

/** How many times a replica's start tries to create what the partition's other replicas may be creating too. */
const CREATE_ATTEMPTS = 5;
/** The pause after the first refused create; the n-th waits n times it. */
const CREATE_PAUSE_MS = 100;

/**
 * Creates what every replica of a partition may create at the same moment (its log stream, its lease bucket).
 * JetStream can refuse the loser of that race with an error of its own ("subjects overlap with an existing stream",
 * "error creating store for stream") before the winner's stream is visible to it; creating is idempotent, so it is
 * tried again, CREATE_ATTEMPTS times in all, before such an error counts. Otherwise as whileUnanswered.
 */
export async function creatingRacing<T>(create: () => Promise<T>, pauseMs = CREATE_PAUSE_MS, clock: Clock = realClock): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await whileUnanswered(create, clock);
    } catch (cause) {
      if (!(cause instanceof JetStreamApiError) || attempt === CREATE_ATTEMPTS) throw cause;
      await sleep(clock, pauseMs * attempt);
    }
  }
}

/** The client's error for a JetStream request nobody received (it is not exported by name). */
function isNoResponders(cause: unknown): boolean {
  return cause instanceof Error && cause.name === "JetStreamNotEnabled";
}
