/**
 * NATS carries at most max_payload bytes per message (1 MiB on the test servers). A partition's reply of any size
 * reaches the coordinator as parts (issue 16: a read of two records of ~0.9 MB each answered partition_unavailable
 * after 15 s, the leader's reply refused by NATS); a request or a log entry that cannot fit is refused before it is
 * sent, payload_too_large, with nothing written and the leader still serving (a 2 MB write answered a raw NATS error
 * saying it "may or may not have taken effect").
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PendingReplies, splitParts } from "../../cluster/nats/message-size.js";
import { startTestCluster, startTestNats, stopTestNats, type TestCluster, type TestNats } from "../helpers/cluster.js";
import { expectCode } from "../helpers/engine.js";

const SCHEMA = [
  "N::User { name: String, bio: String }",
  'QUERY Add(name: String, bio: String) => u <- AddN<User>({name: name, bio: bio}) RETURN u::ID',
  "QUERY All() => users <- N<User>::{name, bio} RETURN users",
  "QUERY Count() => n <- N<User>::COUNT RETURN n",
  "QUERY SetAll(bio: String) => users <- N<User>::UPDATE({bio: bio}) RETURN NONE",
].join("\n");

let nats: TestNats;
let cluster: TestCluster;

beforeAll(async () => {
  nats = await startTestNats(1);
  cluster = await startTestCluster(nats, { partitions: 1, replicas: 1, schema: SCHEMA });
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  if (nats !== undefined) await stopTestNats(nats);
});

describe("message sizes in a cluster", () => {
  it("answers a reply many times larger than one message, byte for byte", async () => {
    const db = cluster.database;
    const bios = ["a", "b", "c"].map((letter, i) => letter.repeat(900_000 + i));
    for (const [i, bio] of bios.entries()) await db.query("Add", { name: `u${i}`, bio });
    const answer = (await db.query("All", {})) as { users: { name: string; bio: string }[] };
    expect(answer.users.map((user) => user.name)).toEqual(["u0", "u1", "u2"]);
    expect(answer.users.map((user) => user.bio)).toEqual(bios);
  }, 60_000);

  it("refuses a request that cannot fit in one message, writing nothing, and serves on", async () => {
    const db = cluster.database;
    const before = (await db.query("Count", {})) as { n: number };
    await expectCode(db.query("Add", { name: "big", bio: "x".repeat(2_000_000) }), "payload_too_large");
    expect(await db.query("Count", {})).toEqual(before);
    await db.query("Add", { name: "small", bio: "s" });
    expect(await db.query("Count", {})).toEqual({ n: before.n + 1 });
  }, 60_000);

  it("refuses a write whose log entry cannot fit although its request does, writing nothing, and serves on", async () => {
    const db = cluster.database;
    const before = (await db.query("All", {})) as { users: { bio: string }[] };
    expect(before.users.length).toBeGreaterThanOrEqual(3);
    // One 500 kB value in the request; the log entry holds it once per updated record.
    await expectCode(db.query("SetAll", { bio: "y".repeat(500_000) }), "payload_too_large");
    expect(await db.query("All", {})).toEqual(before);
    await db.query("Add", { name: "after", bio: "t" });
    expect(((await db.query("Count", {})) as { n: number }).n).toBe(before.users.length + 1);
  }, 60_000);
});

describe("PendingReplies", () => {
  const parts = splitParts(new Uint8Array(10).map((_, i) => i), 4);

  it("splits into pieces of at most the limit, and hands the kept parts out once, in any order", () => {
    expect(parts.map((part) => [...part])).toEqual([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]);
    const pending = new PendingReplies(60_000, 100);
    const id = pending.keep(parts);
    expect(pending.heldBytes).toBe(6);
    expect([...pending.take(id, 1)!]).toEqual([4, 5, 6, 7]);
    expect(pending.take(id, 0)).toBeUndefined(); // the first part went with the reply
    expect(pending.take(id, 3)).toBeUndefined();
    expect([...pending.take(id, 2)!]).toEqual([8, 9]); // the last part forgets the reply
    expect(pending.take(id, 1)).toBeUndefined();
    expect(pending.heldBytes).toBe(0);
  });

  it("refuses more than its byte limit with limit_exceeded, and forgets replies after their time", async () => {
    const pending = new PendingReplies(20, 8);
    const id = pending.keep(parts);
    expect(() => pending.keep(parts)).toThrow(expect.objectContaining({ code: "limit_exceeded" }));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(pending.take(id, 1)).toBeUndefined();
    expect(pending.heldBytes).toBe(0);
    pending.keep(parts);
  });
});
