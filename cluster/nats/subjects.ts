/**
 * The names a cluster uses in NATS (docs/REPLICATION.md), all derived from the cluster's name, so several clusters
 * can share NATS servers. A cluster name is 1 to 32 characters of lowercase letters, digits and `-`.
 *
 * - `silk.<cluster>.p<i>`: requests to partition i's leader (PartitionRequest in, PartitionReply out, both the
 *   protocol/messages.ts codec). Only the replica holding the lease subscribes.
 * - `silk.<cluster>.p<i>.stale`: reads any replica may answer from its applied state (queue group `replicas`).
 * - `silk.<cluster>.p<i>.parts.<token>`: one replica's parts of replies too large for one message, fetched by the
 *   coordinator (cluster/nats/message-size.ts); the token is random per replica process.
 * - stream `SILK_<CLUSTER>_P<i>`, subject `silk.<cluster>.log.p<i>`: partition i's replicated log (node/store/log-entry.ts
 *   entries, msgpack).
 * - KV bucket `SILK_<CLUSTER>_LEASES`, key `p<i>`: partition i's leader lease; key `coordinator`: the writer
 *   coordinator's lease (one writer coordinator per cluster).
 * - KV bucket `SILK_<CLUSTER>_TERMS`, same keys: the last term each lease was taken with (no expiry, so a leader
 *   elected after its predecessor's entry expired still counts on from it; cluster/nats/lease.ts).
 * - KV bucket `SILK_<CLUSTER>_DECISIONS`, key = txid: two-phase-commit decisions.
 * - KV bucket `SILK_<CLUSTER>_MAP`, keys `map` and `move`: the partition map and a range move in flight.
 * - object store bucket `SILK_<CLUSTER>_SNAPSHOTS` (stream `OBJ_SILK_<CLUSTER>_SNAPSHOTS`), objects `p<i>/<sequence>`:
 *   partition i's snapshots (cluster/nats/snapshots.ts).
 * - `silk.<cluster>.admin`: rebalancing requests to the writer coordinator (JSON; cluster/nats/rebalance.ts).
 */
import { SilkError } from "../../protocol/errors.js";

const CLUSTER_NAME = /^[a-z0-9-]{1,32}$/;

export function checkClusterName(name: string): string {
  if (!CLUSTER_NAME.test(name)) throw new SilkError("invalid_option", `a cluster name is 1 to 32 lowercase letters, digits or "-", not ${JSON.stringify(name)}`);
  return name;
}

const upper = (cluster: string): string => cluster.toUpperCase().replaceAll("-", "_");

export const subjects = {
  leader: (cluster: string, partition: number): string => `silk.${cluster}.p${partition}`,
  stale: (cluster: string, partition: number): string => `silk.${cluster}.p${partition}.stale`,
  parts: (cluster: string, partition: number, replicaToken: string): string => `silk.${cluster}.p${partition}.parts.${replicaToken}`,
  log: (cluster: string, partition: number): string => `silk.${cluster}.log.p${partition}`,
  logStream: (cluster: string, partition: number): string => `SILK_${upper(cluster)}_P${partition}`,
  leaseBucket: (cluster: string): string => `SILK_${upper(cluster)}_LEASES`,
  leaseKey: (partition: number): string => `p${partition}`,
  coordinatorLeaseKey: "coordinator",
  termBucket: (cluster: string): string => `SILK_${upper(cluster)}_TERMS`,
  decisionBucket: (cluster: string): string => `SILK_${upper(cluster)}_DECISIONS`,
  mapBucket: (cluster: string): string => `SILK_${upper(cluster)}_MAP`,
  snapshotBucket: (cluster: string): string => `SILK_${upper(cluster)}_SNAPSHOTS`,
  admin: (cluster: string): string => `silk.${cluster}.admin`,
} as const;

/** The queue group of the replicas answering stale reads. */
export const STALE_QUEUE = "replicas";
