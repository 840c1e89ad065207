/**
 * `silk partition`'s `GET /metrics` (docs/CLUSTER.md, "Replica metrics") scraped from real replica processes: two
 * partitions × two replicas on a real nats-server, each `silk partition --health-port 0`, written to through a
 * coordinator in this process (connectCluster). The text is parsed as Prometheus' text format: every line a comment
 * or `name{labels} value`. Before any write, every series exists on every replica; a write of two nodes (one per
 * partition, so a two-phase commit) moves the log and applied sequences of every replica, the leaders' prepared and
 * committed counts, and the followers catch up to lag 0; the leaders renew their leases and count having taken the
 * lead, and report the lease's term.
 */
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLUSTER_FORMAT, writeClusterManifest } from "../../cluster/nats/manifest.js";
import { connectCluster } from "../../runtime/remote.js";
import { addUser, REPO, removeTemporaryDirectories, spawnSilk, temporaryDirectory, write } from "../cli/helpers.js";
import { freshClusterName, startTestNats, stopTestNats, type TestNats } from "../helpers/cluster.js";

let nats: TestNats;

beforeAll(async () => {
  nats = await startTestNats(1);
}, 30_000);

afterAll(async () => {
  if (nats !== undefined) await stopTestNats(nats);
  removeTemporaryDirectories();
});

/** One sample of the text format: its metric name, labels and value. */
interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses Prometheus' text exposition format (version 0.0.4); a line that is neither a comment nor a sample fails. */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g)) labels[pair[1]] = pair[2];
    const value = match[3] === "+Inf" ? Infinity : match[3] === "-Inf" ? -Infinity : Number(match[3]);
    if (Number.isNaN(value) && match[3] !== "NaN") throw new Error(`not a sample value: ${line}`);
    samples.push({ name: match[1], labels, value });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when there is none. */
function valueOf(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

interface Replica {
  readonly partition: number;
  readonly replica: string;
  readonly process: ReturnType<typeof spawnSilk>;
  readonly base: string;
}

async function startReplica(dir: string, partition: number, replica: number): Promise<Replica> {
  const child = spawnSilk(["partition", "--dir", dir, "--partition", String(partition), "--replica", String(replica), "--health-port", "0"]);
  let printed = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (printed += chunk));
  const pattern = /health on (http:\/\/[0-9.]+:[0-9]+)\/health/;
  while (!pattern.test(printed)) {
    if (child.exitCode !== null) throw new Error(`replica ${partition}/${replica} exited (${child.exitCode})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { partition, replica: `r${replica}`, process: child, base: pattern.exec(printed)![1] };
}

async function scrape(replica: Replica): Promise<Sample[]> {
  const response = await fetch(`${replica.base}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(await response.text());
}

/** Scrapes `replica` until `accept` holds of its samples (a replica applies, renews and elects on its own time). */
async function scrapeUntil(replica: Replica, what: string, accept: (samples: readonly Sample[]) => boolean): Promise<Sample[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const samples = await scrape(replica);
    if (accept(samples)) return samples;
    if (Date.now() > deadline) throw new Error(`${replica.partition}/${replica.replica}: ${what} did not happen within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("silk partition GET /metrics", () => {
  it("reports every replica's log and applied sequence, lag, term, leadership, lease renewals and transaction steps, and they move after a write", async () => {
    const dir = temporaryDirectory();
    const name = freshClusterName();
    writeClusterManifest(dir, { format: CLUSTER_FORMAT, name, nats: nats.urls, partitions: 2, replicas: 2, project: join(REPO, "examples"), port: 0 });
    const replicas: Replica[] = [];
    const schema = { file: "examples/schema.hx", text: readFileSync(join(REPO, "examples", "schema.hx"), "utf8") };
    let database: Awaited<ReturnType<typeof connectCluster>> | undefined;
    try {
      for (const [partition, replica] of [[0, 0], [0, 1], [1, 0], [1, 1]]) replicas.push(await startReplica(dir, partition, replica));
      const labelsOf = (replica: Replica): Record<string, string> => ({ partition: String(replica.partition), replica: replica.replica });
      const isLeader = (replica: Replica, samples: readonly Sample[]): boolean => valueOf(samples, "silk_replica_leader", labelsOf(replica)) === 1;

      // Each partition gets a leader; then every series is there on every replica, with its labels.
      const leaders: Replica[] = [];
      for (const partition of [0, 1]) {
        const deadline = Date.now() + 30_000;
        for (;;) {
          const own = replicas.filter((replica) => replica.partition === partition);
          const leading = [];
          for (const replica of own) if (isLeader(replica, await scrape(replica))) leading.push(replica);
          if (leading.length === 1) {
            leaders.push(leading[0]);
            break;
          }
          if (Date.now() > deadline) throw new Error(`partition ${partition} has ${leading.length} leaders after 30 s`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      const before = new Map<Replica, Sample[]>();
      for (const replica of replicas) {
        const labels = labelsOf(replica);
        const samples = await scrapeUntil(replica, "a lag of 0", (found) => valueOf(found, "silk_replica_lag_entries", labels) === 0);
        before.set(replica, samples);
        for (const series of ["silk_replica_applied_sequence", "silk_replica_log_sequence", "silk_partition_transactions_in_doubt", "silk_lmdb_map_size_bytes", "silk_lmdb_readers"]) {
          expect(valueOf(samples, series, labels), series).toEqual(expect.any(Number));
        }
        expect(valueOf(samples, "silk_replica_lease_term", labels)).toBeGreaterThanOrEqual(1);
        for (const outcome of ["prepared", "committed", "aborted", "applied"]) {
          expect(valueOf(samples, "silk_partition_transactions_total", { ...labels, outcome }), outcome).toEqual(expect.any(Number));
        }
        for (const change of ["taken", "ended"]) expect(valueOf(samples, "silk_replica_leader_changes_total", { ...labels, change })).toEqual(expect.any(Number));
        for (const outcome of ["renewed", "failed"]) expect(valueOf(samples, "silk_replica_lease_renewals_total", { ...labels, outcome })).toEqual(expect.any(Number));
        expect(valueOf(samples, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
        expect(valueOf(samples, "nodejs_eventloop_lag_seconds")).toEqual(expect.any(Number));
        const leading = leaders.includes(replica);
        expect(valueOf(samples, "silk_replica_leader_changes_total", { ...labels, change: "taken" })).toBe(leading ? 1 : 0);
      }
      // Both partitions' terms agree between their replicas: they read the same lease.
      for (const partition of [0, 1]) {
        const terms = replicas.filter((replica) => replica.partition === partition).map((replica) => valueOf(before.get(replica)!, "silk_replica_lease_term", labelsOf(replica)));
        expect(new Set(terms).size).toBe(1);
      }

      // Two users in one write: one per partition, so a two-phase commit across both.
      database = await connectCluster({ cluster: name, servers: nats.urls, partitions: 2, decisionReplicas: 1, schema });
      await database.run(write({ a: addUser("Ada", "ada"), b: addUser("Bo", "bo") }));

      for (const replica of replicas) {
        const labels = labelsOf(replica);
        const earlier = before.get(replica)!;
        const logBefore = valueOf(earlier, "silk_replica_log_sequence", labels)!;
        const after = await scrapeUntil(replica, "applying the write", (found) =>
          valueOf(found, "silk_replica_lag_entries", labels) === 0 && valueOf(found, "silk_replica_log_sequence", labels)! > logBefore,
        );
        expect(valueOf(after, "silk_replica_applied_sequence", labels)).toBe(valueOf(after, "silk_replica_log_sequence", labels));
        expect(valueOf(after, "silk_replica_applied_sequence", labels)).toBeGreaterThan(valueOf(earlier, "silk_replica_applied_sequence", labels)!);
        expect(valueOf(after, "silk_partition_transactions_in_doubt", labels)).toBe(0);
        const moved = (outcome: string): number =>
          valueOf(after, "silk_partition_transactions_total", { ...labels, outcome })! - valueOf(earlier, "silk_partition_transactions_total", { ...labels, outcome })!;
        const leading = leaders.includes(replica);
        // The leader answered the prepare and the commit; a follower answers none (it applied them from the log).
        expect([moved("prepared"), moved("committed"), moved("aborted")]).toEqual(leading ? [1, 1, 0] : [0, 0, 0]);
      }
      for (const leader of leaders) {
        const labels = labelsOf(leader);
        await scrapeUntil(leader, "a lease renewal", (found) => valueOf(found, "silk_replica_lease_renewals_total", { ...labels, outcome: "renewed" })! > 0);
      }
    } finally {
      await database?.close();
      for (const replica of replicas) {
        replica.process.kill("SIGTERM");
        if (replica.process.exitCode === null) await once(replica.process, "exit");
      }
    }
  }, 120_000);
});
