/**
 * creatingRacing (cluster/nats/partition-log.ts): the replicas of a partition create its log stream and lease bucket at
 * the same moment, and JetStream can refuse the loser with an API error before the winner's stream is visible to it.
 * Such errors are tried again a few times; any other error ends the attempt at once.
 */
import { JetStreamApiError } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { creatingRacing } from "../../cluster/nats/partition-log.js";

const overlap = (): JetStreamApiError => new JetStreamApiError({ code: 400, err_code: 10065, description: "subjects overlap with an existing stream" });

describe("creatingRacing", () => {
  it("tries a creation refused by JetStream again until it succeeds", async () => {
    let calls = 0;
    const created = await creatingRacing(async () => {
      calls += 1;
      if (calls < 3) throw overlap();
      return "bucket";
    }, 1);
    expect(created).toBe("bucket");
    expect(calls).toBe(3);
  });

  it("gives up after five attempts with JetStream's error", async () => {
    let calls = 0;
    await expect(creatingRacing(async () => {
      calls += 1;
      throw overlap();
    }, 1)).rejects.toThrow("subjects overlap with an existing stream");
    expect(calls).toBe(5);
  });

  it("does not try again after any other error", async () => {
    let calls = 0;
    await expect(creatingRacing(async () => {
      calls += 1;
      throw new Error("bad config");
    }, 1)).rejects.toThrow("bad config");
    expect(calls).toBe(1);
  });
});
