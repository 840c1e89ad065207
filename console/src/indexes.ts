/** The index page: every index of the database with its state and build counters (what `silk index status` shows). */
import { ApiError, indexStatuses } from "./api";
import { byTestId, rowsTable } from "./dom";

export function startIndexes(): { show(): void } {
  const table = byTestId<HTMLDivElement>("index-table");
  const status = byTestId<HTMLSpanElement>("indexes-status");
  const refresh = async (): Promise<void> => {
    try {
      const indexes = await indexStatuses();
      table.replaceChildren(rowsTable(indexes));
      status.textContent = `${indexes.length} index${indexes.length === 1 ? "" : "es"} at ${new Date().toLocaleTimeString()}`;
      status.className = "status";
    } catch (cause) {
      status.textContent = cause instanceof ApiError ? `${cause.code}: ${cause.message}` : String(cause);
      status.className = "status error";
    }
  };
  byTestId<HTMLButtonElement>("refresh-indexes").addEventListener("click", () => void refresh());
  return { show: () => void refresh() };
}
