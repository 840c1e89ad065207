/**
 * A cluster's state as `silk cluster status` prints it and the web console's partition page shows it
 * (`GET /console/api/partitions` on `silk serve --cluster`): the partition map (version, the partition being added,
 * the ID ranges each partition owns), and for each partition its leader and term (from its lease), its log (first
 * and last sequence, entries, bytes: JetStream's stream state), its latest snapshot, and each replica's applied
 * sequence and lag behind the log.
 *
 * A replica's applied sequence is read from its LMDB, opened read-only as a second reader and closed again, where
 * the replica's store directory is on this machine (cluster.json's `stores` or DIR/partitions/p<I>/r<R>); elsewhere
 * (another machine's pod) it is null. Each read that does not answer (NATS out of reach, a bucket not made yet)
 * leaves its part null rather than failing the whole status: the status is what an operator looks at when something
 * is wrong.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { PartitionStore } from "../../node/store/partition-store.js";
import { PartitionMap } from "../partition-map.js";
import { replicaDirectories, streamReplicas, type ClusterManifest } from "./manifest.js";
import { MapStore } from "./map-store.js";
import { latestSnapshot } from "./snapshots.js";
import { subjects } from "./subjects.js";
import type { LeaseValue } from "./lease.js";

/** How long the status waits for the map bucket before it falls back to the manifest's default map. */
const MAP_DEADLINE_MS = 3_000;

export interface ReplicaStatus {
  /** `r0`, `r1`, ... */
  readonly replica: string;
  /** The last log sequence its LMDB applied; null where its store is not on this machine (or not made yet). */
  readonly applied: number | null;
  /** Log entries it has yet to apply (the log's last sequence minus `applied`); null where either is unknown. */
  readonly lag: number | null;
}

export interface PartitionStatus {
  readonly partition: number;
  /** The replica holding the partition's lease, and the lease's term; both null while none holds it. */
  readonly leader: string | null;
  readonly term: number | null;
  /** The log's stream state (truncation below a snapshot moves `first`); null when JetStream did not answer. */
  readonly log: { readonly first: number; readonly last: number; readonly entries: number; readonly bytes: number } | null;
  /** The partition's latest snapshot in the object store; null when it has none. */
  readonly snapshot: { readonly sequence: number; readonly bytes: number } | null;
  /** The ID ranges it owns, ascending, as decimal strings (IDs are 64-bit). */
  readonly ranges: readonly { readonly first: string; readonly last: string }[];
  readonly replicas: readonly ReplicaStatus[];
}

export interface ClusterStatus {
  readonly cluster: string;
  /** The partition map's version (0: the manifest's default map, never changed or not readable). */
  readonly mapVersion: number;
  /** The partition being added (it has a log and replicas, and serves nothing yet); null when none is. */
  readonly pending: number | null;
  /** Every serving partition, in order. */
  readonly partitions: readonly PartitionStatus[];
}

/** Each partition's lease holder, undefined where none holds it (or the bucket does not exist yet). */
export async function leaseHolders(nc: NatsConnection, cluster: string, partitions: number): Promise<(LeaseValue | undefined)[]> {
  let kv;
  try {
    kv = await new Kvm(nc).open(subjects.leaseBucket(cluster));
  } catch {
    return new Array<undefined>(partitions).fill(undefined);
  }
  return Promise.all(
    Array.from({ length: partitions }, async (_, partition) => {
      const entry = await kv.get(subjects.leaseKey(partition)).catch(() => null);
      return entry === null || entry.operation !== "PUT" ? undefined : (JSON.parse(new TextDecoder().decode(entry.value)) as LeaseValue);
    }),
  );
}

/** The cluster's status, read over `nc` and from the replicas' stores under `directory` (see the module comment). */
export async function readClusterStatus(nc: NatsConnection, directory: string, manifest: ClusterManifest): Promise<ClusterStatus> {
  // No API check: it is one more request that can time out while JetStream elects a leader (a NATS server just
  // died), and the status then failed as a whole; each read below is null for what does not answer.
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const stored = await MapStore.open({ nc, cluster: manifest.name, replicas: streamReplicas(manifest), deadlineMs: MAP_DEADLINE_MS })
    .then((maps) => maps.read())
    .catch(() => undefined);
  const map = stored?.value ?? new PartitionMap(manifest.partitions);
  const holders = await leaseHolders(nc, manifest.name, map.count);
  const partitions = await Promise.all(
    map.ranges.map(async (range): Promise<PartitionStatus> => {
      const [state, snapshot] = await Promise.all([
        jsm.streams.info(subjects.logStream(manifest.name, range.index)).then((info) => info.state, () => undefined),
        latestSnapshot(nc, manifest.name, range.index).catch(() => undefined),
      ]);
      const log = state === undefined ? null : { first: state.first_seq, last: state.last_seq, entries: state.messages, bytes: state.bytes };
      const replicas = Array.from({ length: manifest.replicas }, (_, replica): ReplicaStatus => {
        const applied = appliedSequence(directory, manifest, range, replica);
        return { replica: `r${replica}`, applied, lag: applied === null || log === null ? null : Math.max(0, log.last - applied) };
      });
      const holder = holders[range.index];
      return {
        partition: range.index,
        leader: holder?.replica ?? null,
        term: holder?.term ?? null,
        log,
        snapshot: snapshot === undefined ? null : { sequence: snapshot.sequence, bytes: snapshot.bytes },
        ranges: map.rangesOf(range.index).map(({ first, last }) => ({ first: String(first), last: String(last) })),
        replicas,
      };
    }),
  );
  return { cluster: manifest.name, mapVersion: map.version, pending: map.pending ?? null, partitions };
}

/** A replica's applied sequence, from its LMDB opened read-only; null where its store is not here. */
function appliedSequence(directory: string, manifest: ClusterManifest, range: { index: number; first: bigint; last: bigint }, replica: number): number | null {
  const path = replicaDirectories(directory, manifest, range.index, replica).store;
  if (!existsSync(join(path, "data.mdb"))) return null;
  const store = PartitionStore.open({ path, readOnly: true, noSync: false, idFirst: range.first, idLast: range.last });
  try {
    return store.appliedLogSequence();
  } finally {
    void store.close();
  }
}
