/**
 * Online rebalancing on a real NATS server (cluster/nats/rebalance.ts, cluster/nats/map-store.ts): a 2-partition cluster
 * (2 in-process replicas each) with people, cross-partition edges and a secondary index; a partition is added
 * (carved from the one with the most free IDs) and half of partition 0's IDs move to it while a writer loop and a
 * reader loop run. Afterwards every acknowledged record is readable exactly once (by ID, label scan, index lookup),
 * traversals both ways match an oracle, IDs are unique, the loops saw no error, the map in KV is the coordinator's.
 * A read-only coordinator opened before the partition was added follows every map change (a KV watch) and reads the
 * same. Then moves interrupted at each step (after the copy, after the map flip) by a coordinator "crash" (the move stops
 * there; the database is closed and reopened) resume when the coordinator starts again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MapStore } from "../../cluster/nats/map-store.js";
import { PartitionMap } from "../../cluster/partition-map.js";
import { openCluster, type OpenedCluster } from "../../runtime/remote.js";
import { PartitionReplica } from "../../cluster/nats/replica.js";
import type { Database } from "../../runtime/embedded.js";
import { PartitionStore } from "../../node/store/partition-store.js";
import { checkProject } from "../../protocol/helixql/query-check.js";
import type { IdRange } from "../../protocol/records.js";
import { schemaIndexDefinitions } from "../../protocol/schema-indexes.js";
import { freshClusterName, leftovers, startTestNats, stopTestNats, type TestNats } from "../helpers/cluster.js";

const SCHEMA = `
N::Person {
    INDEX tag: String,
    name: String,
}
E::Knows {
    From: Person,
    To: Person,
}
QUERY AddPerson(name: String, tag: String) =>
    p <- AddN<Person>({name: name, tag: tag})
    RETURN p
QUERY Link(a: ID, b: ID) =>
    AddE<Knows>::From(a)::To(b)
    RETURN "ok"
QUERY People() =>
    people <- N<Person>
    RETURN people
QUERY Tagged(tag: String) =>
    people <- N<Person>::WHERE(_::{tag}::EQ(tag))
    RETURN people
QUERY Get(id: ID) =>
    p <- N<Person>(id)
    RETURN p
QUERY Friends(id: ID) =>
    f <- N<Person>(id)::Out<Knows>
    RETURN f
QUERY Fans(id: ID) =>
    f <- N<Person>(id)::In<Knows>
    RETURN f
`;
const schemaSource = { file: "<rebalance>", text: SCHEMA };
const schema = checkProject([schemaSource]).schema;
const logger = pino({ level: process.env.SILK_LOG_LEVEL ?? "silent" });
const TAGS = ["red", "green", "blue"];
const CHUNK_IDS = 16;

interface Person {
  id: string;
  name: string;
  tag: string;
}

interface Replica {
  partition: number;
  path: string;
  nc: NatsConnection;
  store: PartitionStore;
  replica: PartitionReplica;
}

let nats: TestNats | undefined;
const cluster = freshClusterName();
const replicas: Replica[] = [];
let opened: OpenedCluster | undefined;
/** Which step of which chunk (1-based, counted per move) makes the coordinator "crash". */
let crashAt: { step: "copied" | "flipped"; chunk: number } | undefined;
let chunkSteps = 0;

async function startReplica(partition: number, range: IdRange, index: number): Promise<Replica> {
  const path = mkdtempSync(join(tmpdir(), "silk-rebalance-"));
  const store = PartitionStore.open({ path, readOnly: false, noSync: true, idFirst: range.first, idLast: range.last, indexes: schemaIndexDefinitions(schema) });
  const nc = await connect({ servers: nats!.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const replica = await PartitionReplica.start({
    nc, cluster, partition, replica: `r${index}`, replicas: nats!.streamReplicas, store, schema, now: () => new Date(), leaseTtlMs: 1_500, logger,
    onFatal: (cause) => logger.error({ err: cause }, "replica stopped"),
  });
  const handle = { partition, path, nc, store, replica };
  replicas.push(handle);
  return handle;
}

async function open(): Promise<OpenedCluster> {
  return openCluster({
    cluster, servers: nats!.urls, partitions: 2, decisionReplicas: nats!.streamReplicas, schema: schemaSource,
    rebalance: {
      chunkIds: CHUNK_IDS,
      onMoveStep: (step) => {
        if (step === "copied") chunkSteps += 1;
        if (crashAt !== undefined && crashAt.step === step && crashAt.chunk === chunkSteps) throw new Error(`crash at ${step} of chunk ${chunkSteps}`);
      },
    },
  });
}

const db = (): Database => opened!.database;
const sortedIds = (people: Person[]): string[] => people.map((p) => p.id).sort();

/** The records of a label a replica's store holds (its IDs), for checking where data lives. */
function storedIds(store: PartitionStore): bigint[] {
  const snapshot = store.snapshot();
  try {
    return snapshot.idsOfLabel("node", "Person");
  } finally {
    snapshot.close();
  }
}

const people = new Map<string, Person>();
const links: [string, string][] = [];

async function addPerson(n: number): Promise<Person> {
  const { p } = (await db().query("AddPerson", { name: `person-${n}`, tag: TAGS[n % TAGS.length] })) as { p: Person };
  people.set(p.id, { id: p.id, name: p.name, tag: p.tag });
  return p;
}

async function link(a: string, b: string): Promise<void> {
  await db().query("Link", { a, b });
  links.push([a, b]);
}

const pick = (): string => [...people.keys()][Math.floor(Math.random() * people.size)];

/** Every acknowledged record readable exactly once, by every path, as the oracle says. */
async function checkEverything(database: Database = db()): Promise<void> {
  const { people: all } = (await database.query("People")) as { people: Person[] };
  expect(sortedIds(all)).toEqual([...people.keys()].sort());
  expect(new Set(all.map((p) => p.id)).size).toBe(all.length);
  for (const tag of TAGS) {
    const { people: tagged } = (await database.query("Tagged", { tag })) as { people: Person[] };
    expect(sortedIds(tagged)).toEqual([...people.values()].filter((p) => p.tag === tag).map((p) => p.id).sort());
  }
  for (const person of people.values()) {
    expect(((await database.query("Get", { id: person.id })) as { p: Person }).p).toMatchObject(person);
    const friends = ((await database.query("Friends", { id: person.id })) as { f: Person[] }).f;
    const fans = ((await database.query("Fans", { id: person.id })) as { f: Person[] }).f;
    expect(sortedIds(friends)).toEqual(links.filter(([a]) => a === person.id).map(([, b]) => b).sort());
    expect(sortedIds(fans)).toEqual(links.filter(([, b]) => b === person.id).map(([a]) => a).sort());
  }
}

/** A read-only coordinator, opened before the first move: it must follow the map to read what checkEverything reads. */
let follower: Database | undefined;

/**
 * Waits until the read-only coordinator reads everything the writer does (the map change reaches it through its KV
 * watch a moment after the writer stored it), then checks once more, failing with what differs. Without following the
 * map it never would: the added partition's records are missing from its scans and moved IDs from its lookups.
 */
async function checkFollower(): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && !(await checkEverything(follower).then(() => true, () => false))) await new Promise((resolve) => setTimeout(resolve, 100));
  await checkEverything(follower);
}

/** Every replica holds only records its partition's map entries give it, and each record lives on one partition. */
async function checkPlacement(map: PartitionMap): Promise<void> {
  const seen = new Map<bigint, number>();
  for (const r of replicas) {
    for (const id of storedIds(r.store)) {
      expect(map.partitionOf(id)).toBe(r.partition);
      seen.set(id, r.partition);
    }
  }
  expect([...seen.keys()].map(String).sort()).toEqual([...people.keys()].sort());
}

beforeAll(async () => {
  nats = await startTestNats(1);
  for (const range of new PartitionMap(2).ranges) for (const index of [0, 1]) await startReplica(range.index, range, index);
  opened = await open();
}, 60_000);

afterAll(async () => {
  await follower?.close();
  await opened?.database.close();
  for (const r of replicas) {
    await r.replica.stop();
    await r.nc.close();
    await r.store.close();
    rmSync(r.path, { recursive: true, force: true });
  }
  if (nats !== undefined) await stopTestNats(nats);
  expect(leftovers()).toEqual([]);
}, 30_000);

describe("rebalancing a cluster online", () => {
  it("adds a partition and moves half of partition 0's IDs to it while writes and reads go on", async () => {
    for (let n = 0; n < 60; n++) await addPerson(n);
    for (let n = 0; n < 40; n++) await link(pick(), pick());
    await checkEverything();

    let running = true;
    const errors: string[] = [];
    let writes = 0;
    let reads = 0;
    const writer = (async () => {
      for (let n = 1_000; running; n++) {
        try {
          const person = await addPerson(n);
          await link(pick(), person.id);
          await link(person.id, pick());
          writes += 1;
        } catch (cause) {
          errors.push(`write: ${String(cause)}`);
        }
      }
    })();
    const reader = (async () => {
      while (running) {
        try {
          const known = [...people.values()];
          const { people: all } = (await db().query("People")) as { people: Person[] };
          const ids = new Set(all.map((p) => p.id));
          if (ids.size !== all.length) errors.push("read: a person listed twice");
          for (const person of known) if (!ids.has(person.id)) errors.push(`read: acknowledged ${person.id} missing from the scan`);
          const sample = known[Math.floor(Math.random() * known.length)];
          const got = ((await db().query("Get", { id: sample.id })) as { p: Person | null }).p;
          if (got?.name !== sample.name) errors.push(`read: ${sample.id} read as ${JSON.stringify(got)}`);
          const { people: tagged } = (await db().query("Tagged", { tag: sample.tag })) as { people: Person[] };
          if (!tagged.some((p) => p.id === sample.id)) errors.push(`read: ${sample.id} missing from its index lookup`);
          reads += 1;
        } catch (cause) {
          errors.push(`read: ${String(cause)}`);
        }
      }
    })();

    follower = (await openCluster({ cluster, servers: nats!.urls, partitions: 2, decisionReplicas: nats!.streamReplicas, schema: schemaSource, mode: "readonly" })).database;
    const rebalancer = opened!.rebalancer!;
    const { partition, range } = await rebalancer.carvePartition();
    expect(partition).toBe(2);
    const maps = await MapStore.open({ nc: replicas[0].nc, cluster, replicas: nats!.streamReplicas });
    expect((await maps.read())!.value.allocationOf(2)).toEqual(range);
    for (const index of [0, 1]) await startReplica(2, range, index);
    await rebalancer.activatePartition();
    const p0Before = (await maps.read())!.value.rangesOf(0);
    const result = await rebalancer.move({ from: 0, to: 2 });
    expect(result.chunks).toBeGreaterThan(2);
    running = false;
    await Promise.all([writer, reader]);
    expect(errors).toEqual([]);
    expect(writes).toBeGreaterThan(0);
    expect(reads).toBeGreaterThan(0);

    const map = (await maps.read())!.value;
    expect(map.version).toBe(result.version);
    expect(map.count).toBe(3);
    expect(map.rangesOf(2).length).toBeGreaterThan(0);
    expect(map.rangesOf(0)).not.toEqual(p0Before);
    expect(await maps.readMove()).toBeUndefined();
    await checkEverything();
    // Replicas apply the log asynchronously: wait until each follower caught up before reading its store.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await checkPlacement(map);
    expect(replicas.filter((r) => r.partition === 2).every((r) => storedIds(r.store).length > 0)).toBe(true);

    // New writes after the move: IDs stay unique and everything stays readable.
    for (let n = 2_000; n < 2_020; n++) await link(pick(), (await addPerson(n)).id);
    await checkEverything();
    await checkFollower();
  }, 120_000);

  it("refuses bad moves with invalid_option and changes nothing", async () => {
    const rebalancer = opened!.rebalancer!;
    const maps = await MapStore.open({ nc: replicas[0].nc, cluster, replicas: 1 });
    const before = (await maps.read())!.revision;
    for (const request of [{ from: 0, to: 0 }, { from: 0, to: 7 }, { from: 9, to: 1 }, { from: 0, to: 2, ids: 0 }, { from: 0, to: 2, ids: 10 ** 12 }]) {
      await expect(rebalancer.move(request)).rejects.toMatchObject({ code: "invalid_option" });
    }
    await expect(rebalancer.activatePartition()).rejects.toMatchObject({ code: "invalid_option" });
    expect((await maps.read())!.revision).toBe(before);
    await checkEverything();
  }, 60_000);

  for (const step of ["copied", "flipped"] as const) {
    it(`resumes a move whose coordinator crashed after a chunk was ${step}`, async () => {
      chunkSteps = 0;
      crashAt = { step, chunk: 2 };
      await expect(opened!.rebalancer!.move({ from: 0, to: 2, ids: 3 * CHUNK_IDS })).rejects.toThrow(/crash at/);
      crashAt = undefined;
      const maps = await MapStore.open({ nc: replicas[0].nc, cluster, replicas: 1 });
      const recorded = await maps.readMove();
      // The crashed chunk (the second) and those after it are still to move.
      expect(recorded?.value.chunks.length).toBeGreaterThanOrEqual(2);
      await opened!.database.close(); // the crashed coordinator is gone; a new one starts and resumes
      opened = await open();
      expect(await maps.readMove()).toBeUndefined();
      const map = (await maps.read())!.value;
      expect(map.rangesOf(2).length).toBeGreaterThan(0);
      await checkEverything();
      await new Promise((resolve) => setTimeout(resolve, 500));
      await checkPlacement(map);
    }, 60_000);
  }

  it("moves a range back to a partition whose own IDs lie below it, and moves received ranges on", async () => {
    const rebalancer = opened!.rebalancer!;
    const maps = await MapStore.open({ nc: replicas[0].nc, cluster, replicas: 1 });
    // Partition 2 holds ranges received from 0 and IDs of its own; partition 1's own IDs lie above 0's.
    await rebalancer.move({ from: 2, to: 0, ids: 2 * CHUNK_IDS });
    await rebalancer.move({ from: 1, to: 0, ids: CHUNK_IDS });
    for (let n = 3_000; n < 3_020; n++) await link(pick(), (await addPerson(n)).id);
    const map = (await maps.read())!.value;
    await checkEverything();
    await checkFollower();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await checkPlacement(map);
  }, 60_000);
});

