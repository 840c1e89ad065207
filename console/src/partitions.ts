/**
 * The partition page, on `silk serve --cluster` only: the cluster's map version and, for each partition, its leader
 * and the lease's term, its log, latest snapshot and ID ranges, and each replica's applied sequence and lag behind
 * the log (what `silk cluster status` prints). It reads `GET /console/api/partitions` when shown, then every
 * POLL_MS while it stays shown, and on Refresh.
 */
import { ApiError, clusterStatus, type ClusterStatus, type PartitionStatus } from "./api";
import { byTestId, element } from "./dom";
import { pollWhileShown } from "./poll";

/** How often the page reads the status again while it is shown. */
const POLL_MS = 2_000;

/** Whether the server is a cluster's: the partition tab is shown only then. */
export async function isCluster(): Promise<boolean> {
  try {
    await clusterStatus();
    return true;
  } catch (cause) {
    if (cause instanceof ApiError && cause.code === "unsupported_operation") return false;
    throw cause;
  }
}

function row(partition: PartitionStatus): HTMLTableRowElement {
  const line = element("tr");
  line.dataset.partition = String(partition.partition);
  const cell = (text: string, className?: string): HTMLTableCellElement => {
    const made = element("td", text, className);
    line.appendChild(made);
    return made;
  };
  cell(`p${partition.partition}`);
  cell(partition.leader ?? "none", partition.leader === null ? "warn" : undefined);
  cell(partition.term === null ? "" : String(partition.term));
  const { log, snapshot } = partition;
  cell(log === null ? "no answer" : `${log.first}..${log.last} (${log.entries} entries, ${log.bytes} bytes)`);
  cell(snapshot === null ? "none" : `at ${snapshot.sequence} (${snapshot.bytes} bytes)`);
  cell(partition.ranges.map((range) => `${range.first}..${range.last}`).join(" "));
  const replicas = cell("");
  for (const replica of partition.replicas) {
    const lag = replica.lag === null ? "" : `, lag ${replica.lag}`;
    const label = `${replica.replica}${replica.replica === partition.leader ? " (leader)" : ""}: ${replica.applied ?? "not on this machine"}${lag}`;
    const item = element("div", label, replica.lag !== null && replica.lag > 0 ? "warn" : undefined);
    item.dataset.replica = replica.replica;
    replicas.appendChild(item);
  }
  return line;
}

function table(status: ClusterStatus): HTMLTableElement {
  const made = element("table");
  const head = made.createTHead().insertRow();
  for (const column of ["partition", "leader", "term", "log", "latest snapshot", "ranges", "replicas: applied, lag"]) head.appendChild(element("th", column));
  const body = made.createTBody();
  for (const partition of status.partitions) body.appendChild(row(partition));
  return made;
}

export function startPartitions(): { show(): void } {
  const container = byTestId<HTMLDivElement>("partition-table");
  const summary = byTestId<HTMLSpanElement>("partitions-status");
  // Polled as long as the page is shown, whether it answered or not (NATS may come back).
  const refresh = async (): Promise<boolean> => {
    try {
      const status = await clusterStatus();
      container.replaceChildren(table(status));
      const pending = status.pending === null ? "" : `, partition ${status.pending} being added`;
      summary.textContent = `cluster ${status.cluster}: map version ${status.mapVersion}${pending}, ${status.partitions.length} partitions, at ${new Date().toLocaleTimeString()}`;
      summary.className = "status";
    } catch (cause) {
      summary.textContent = cause instanceof ApiError ? `${cause.code}: ${cause.message}` : String(cause);
      summary.className = "status error";
    }
    return true;
  };
  byTestId<HTMLButtonElement>("refresh-partitions").addEventListener("click", () => void refresh());
  return { show: () => pollWhileShown(byTestId<HTMLElement>("partitions-page"), refresh, POLL_MS) };
}
