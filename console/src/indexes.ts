/**
 * The index page: every index of the database with its state and build counters (what `silk index status` shows).
 * It reads them when shown and on Refresh; while an index is being built (state `constructing`) and the page is
 * shown, it reads them again every POLL_MS, so its counters move as the build goes, and stops once none is.
 */
import { ApiError, indexStatuses } from "./api";
import { byTestId, rowsTable } from "./dom";
import { pollWhileShown } from "./poll";

/** How often the page reads the indexes again while one is being built. */
const POLL_MS = 500;

export function startIndexes(): { show(): void } {
  const page = byTestId<HTMLElement>("indexes-page");
  const table = byTestId<HTMLDivElement>("index-table");
  const status = byTestId<HTMLSpanElement>("indexes-status");
  /** Reads the indexes; true while one is being built (so the page reads them again). */
  const refresh = async (): Promise<boolean> => {
    try {
      const indexes = await indexStatuses();
      table.replaceChildren(rowsTable(indexes));
      const building = indexes.filter((index) => index.state === "constructing").length;
      const live = building === 0 ? "" : `, ${building} being built (reading again every ${POLL_MS / 1000} s)`;
      status.textContent = `${indexes.length} index${indexes.length === 1 ? "" : "es"}${live} at ${new Date().toLocaleTimeString()}`;
      status.className = "status";
      return building > 0;
    } catch (cause) {
      status.textContent = cause instanceof ApiError ? `${cause.code}: ${cause.message}` : String(cause);
      status.className = "status error";
      return false;
    }
  };
  const poll = (): void => pollWhileShown(page, refresh, POLL_MS);
  byTestId<HTMLButtonElement>("refresh-indexes").addEventListener("click", poll);
  return { show: poll };
}
