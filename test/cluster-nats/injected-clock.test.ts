/**
 * The replication code's injected clock (platform/clock.ts): a lease's expiry and a leader's publish retry driven
 * by a manual clock (test/helpers/manual-clock.ts), with no real sleep deciding the outcome. The instants asserted
 * are the modules' own rules: a lease counts as held until LEASE_VALID_FRACTION of its TTL after the last renewal
 * sent; a publish nobody received is sent again after the PUBLISH_BACKOFF waits (20 ms doubling to 250 ms) until
 * APPEND_TIMEOUT_MS.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import pino from "pino";
import { LEASE_VALID_FRACTION, PartitionLease } from "../../cluster/nats/lease.js";
import { APPEND_TIMEOUT_MS, LeaderWriteLog, type PartitionLog } from "../../cluster/nats/partition-log.js";
import { SilkError } from "../../protocol/errors.js";
import { ManualClock } from "../helpers/manual-clock.js";
import { startTestNats, stopTestNats, type TestNats } from "../helpers/cluster.js";

const logger = pino({ level: "silent" });

describe("a leader's publish retry on a manual clock", () => {
  /** A log whose first `failures` publishes reach no stream leader (JetStream's "no responders"). */
  function flakyLog(clock: ManualClock, failures: number): { log: PartitionLog; attempts: () => number } {
    let attempts = 0;
    const log = {
      clock,
      publish: async () => {
        attempts += 1;
        if (attempts <= failures) throw Object.assign(new Error("no responders"), { name: "JetStreamNotEnabled" });
        return { sequence: 8, duplicate: false };
      },
    };
    return { log: log as unknown as PartitionLog, attempts: () => attempts };
  }

  it("publishes again after 20 ms, then 40 ms, and returns the sequence once one is received", async () => {
    const clock = new ManualClock();
    const { log, attempts } = flakyLog(clock, 2);
    const unsure: string[] = [];
    const writeLog = new LeaderWriteLog({ log, store: undefined as never, lastSequence: 7, mayAppend: () => true, onUnsure: (reason) => unsure.push(reason), logger });
    const appended = writeLog.append({ type: "reserve_ids", upTo: 10n });
    await clock.advance(19);
    expect(attempts()).toBe(1);
    await clock.advance(1);
    expect(attempts()).toBe(2);
    await clock.advance(39);
    expect(attempts()).toBe(2);
    await clock.advance(1);
    expect(attempts()).toBe(3);
    expect(await appended).toBe(8);
    expect(writeLog.lastSequence).toBe(8);
    expect(unsure).toEqual([]);
  });

  it("gives up after APPEND_TIMEOUT_MS of no responders: partition_unavailable, and the leader is told it is unsure", async () => {
    const clock = new ManualClock();
    const { log, attempts } = flakyLog(clock, Infinity);
    const unsure: string[] = [];
    const writeLog = new LeaderWriteLog({ log, store: undefined as never, lastSequence: 7, mayAppend: () => true, onUnsure: (reason) => unsure.push(reason), logger });
    const outcome = writeLog.append({ type: "reserve_ids", upTo: 10n }).then(
      () => "appended",
      (cause: unknown) => cause,
    );
    await clock.advance(APPEND_TIMEOUT_MS - 1);
    expect(unsure).toEqual([]);
    await clock.advance(APPEND_TIMEOUT_MS);
    const error = await outcome;
    expect(error).toBeInstanceOf(SilkError);
    expect((error as SilkError).code).toBe("partition_unavailable");
    expect(unsure).toHaveLength(1);
    // At 0, 20, 60 and 140, then every 250 ms from 300: the one at 5,050 (past 5,000) is the last.
    expect(attempts()).toBe(4 + (5_050 - 300) / 250 + 1);
  });
});

describe("a lease on a manual clock", () => {
  let nats: TestNats;
  beforeAll(async () => {
    nats = await startTestNats(1);
  }, 60_000);
  afterAll(async () => {
    if (nats !== undefined) await stopTestNats(nats);
  });

  it("cut off from NATS, counts as held until 75% of the TTL after the renewal sent, and is lost at the first renewal tick after it", async () => {
    const ttlMs = 2_000;
    const clock = new ManualClock();
    const nc: NatsConnection = await connect({ servers: nats.urls });
    const lost: string[] = [];
    const lease = await PartitionLease.open({ nc, cluster: `clock${process.pid}`, partition: 0, replica: "r1", replicas: 1, ttlMs, logger, clock, onLost: (reason) => lost.push(reason) });
    await clock.advance(100);
    expect(await lease.tryAcquire()).toBe(true); // acquired at instant 100
    await nc.close(); // every renewal from now on fails at once
    await clock.advance(ttlMs * LEASE_VALID_FRACTION - 1);
    expect(lease.held()).toBe(true);
    expect(lost).toEqual([]);
    await clock.advance(1);
    expect(lease.held()).toBe(false); // at 1,600: 100 + 75% of 2,000
    // The loss is acted on at the next renewal tick (every ttl/10 from the acquisition: 1,500, then 1,700).
    expect(lost).toEqual([]);
    await clock.advance(99);
    expect(lost).toEqual([]);
    await clock.advance(1);
    expect(lost).toEqual([`no renewal succeeded within ${ttlMs * LEASE_VALID_FRACTION} ms`]);
    expect(clock.pending).toBe(0); // a lost lease stops its renewal ticks
  }, 30_000);
});
