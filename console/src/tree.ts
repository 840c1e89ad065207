/**
 * The operation-tree playground: a `POST /v2/query` body (docs/OPERATION_TREE.md) written as JSON, sent as it is, and
 * its answer shown as tables (one per returned name) and as JSON. Writes run too: this is the route any client has.
 */
import { ApiError, runTree } from "./api";
import { byTestId, showTables } from "./dom";

const STORED_TREE_KEY = "silk-console-tree";

/** The first text of a new console: count every node, and list the first ten. */
const EXAMPLE_TREE = {
  request_type: "read",
  query: {
    read: {
      entries: [
        { query: { name: "count", root: { count: { input: { nodes: { reference: "all" } } } } } },
        { query: { name: "first", root: { limit: { input: { nodes: { reference: "all" } }, count: { literal: 10 } } } } },
      ],
      returns: ["count", "first"],
    },
  },
};

export function startTreePlayground(): void {
  const editor = byTestId<HTMLTextAreaElement>("tree-editor");
  const status = byTestId<HTMLSpanElement>("tree-status");
  const table = byTestId<HTMLDivElement>("tree-table");
  const json = byTestId<HTMLPreElement>("tree-json");

  const run = async (): Promise<void> => {
    let tree: unknown;
    try {
      tree = JSON.parse(editor.value);
    } catch (cause) {
      status.textContent = `not JSON: ${cause instanceof Error ? cause.message : String(cause)}`;
      status.className = "status error";
      return;
    }
    status.textContent = "running…";
    status.className = "status";
    const started = performance.now();
    try {
      const answer = await runTree(tree);
      json.textContent = JSON.stringify(answer, null, 2);
      showTables(table, answer);
      status.textContent = `ok in ${Math.round(performance.now() - started)} ms`;
    } catch (cause) {
      status.textContent = cause instanceof ApiError ? `${cause.code}: ${cause.message}` : String(cause);
      status.className = "status error";
    }
  };

  editor.value = localStorage.getItem(STORED_TREE_KEY) ?? JSON.stringify(EXAMPLE_TREE, null, 2);
  editor.addEventListener("input", () => localStorage.setItem(STORED_TREE_KEY, editor.value));
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      void run();
    }
  });
  byTestId<HTMLButtonElement>("tree-run").addEventListener("click", () => void run());
}
