/**
 * The graph explorer: start from a node ID, or from the nodes of a label whose property has a value (an index lookup
 * where the property is indexed: the planner picks the index, docs/INDEXES.md), click a node to see its properties and the labels of its edges (out and
 * in, with counts), and expand one label to add those edges and the nodes at their other ends. Reads go through
 * `POST /v2/query` (operation trees, docs/OPERATION_TREE.md), as any client's would; cytoscape draws the graph with
 * its force-directed layout (cose; graph.ts).
 */
import type { Core } from "cytoscape";
import { ApiError, runTree } from "./api";
import { byTestId, cellText, element, isRecordLike } from "./dom";
import { addElements, edgeElement, newGraph, nodeElement, showCounts, TREE_KEYS, type GraphRecord } from "./graph";

type Direction = "out" | "in";

/** A read request of named entries, each a step; answered as `{name: result}`. */
function readRequest(entries: Readonly<Record<string, unknown>>): unknown {
  return {
    request_type: "read",
    query_name: "console.explorer",
    query: { read: { entries: Object.entries(entries).map(([name, root]) => ({ query: { name, root } })), returns: Object.keys(entries) } },
  };
}

/** The node of `id` as a source step; the ID goes as its digits, which the tree takes for any u64. */
const nodeStep = (id: string): unknown => ({ nodes: { reference: { ids: [id] } } });

/** The most nodes a Find adds to the graph. */
const FOUND_MAX = 50;

/**
 * The tree literal of a value typed in the Find form: JSON numbers and booleans as themselves (integers as i64), a
 * quoted JSON string as that string, anything else as the text typed.
 */
function literalOf(text: string): unknown {
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {
    // Not JSON: the text itself, a string.
  }
  if (typeof value === "number") return Number.isSafeInteger(value) ? { i64: value } : { f64: value };
  if (typeof value === "boolean") return { bool: value };
  return { string: typeof value === "string" ? value : text };
}

/** The nodes of `label` whose `property` equals the typed value, at most FOUND_MAX of them. */
function findStep(label: string, property: string, value: string): unknown {
  const eq = (left: unknown, right: unknown): unknown => ({ eq: { left, right } });
  const predicate = { and: { predicates: [eq({ property: "$label" }, { constant: { string: label } }), eq({ property }, { constant: literalOf(value) })] } };
  return { limit: { input: { nodes_where: { predicate } }, count: { literal: FOUND_MAX } } };
}

/** How many edges of each label an array of labels holds, by label. */
function countLabels(labels: unknown): Map<string, number> {
  const counts = new Map<string, number>();
  for (const label of Array.isArray(labels) ? labels : []) counts.set(String(label), (counts.get(String(label)) ?? 0) + 1);
  return counts;
}

export function startExplorer(): { show(): void } {
  const form = byTestId<HTMLFormElement>("explorer-form");
  const input = byTestId<HTMLInputElement>("node-id");
  const status = byTestId<HTMLSpanElement>("explorer-status");
  const inspector = byTestId<HTMLElement>("inspector");
  const container = byTestId<HTMLDivElement>("graph");
  let cy: Core | undefined;

  const graph = (): Core => {
    cy ??= newGraph(container);
    cy.on("tap", "node", (event) => void inspect(String(event.target.id())));
    return cy;
  };

  /** Marks the node inspected, and it alone (cytoscape's select adds to the selection). */
  const selectOnly = (id: string): void => {
    graph().elements().unselect();
    graph().getElementById(id).select();
  };

  const fail = (cause: unknown): void => {
    status.textContent = cause instanceof ApiError ? `${cause.code}: ${cause.message}` : String(cause);
    status.className = "status error";
  };

  const expand = async (id: string, direction: Direction, label: string): Promise<void> => {
    try {
      const edgeStep = direction === "out" ? "out_e" : "in_e";
      const answer = await runTree(readRequest({ edges: { [edgeStep]: { input: nodeStep(id), label } }, nodes: { [direction]: { input: nodeStep(id), label } } }));
      const nodes = (answer.nodes as GraphRecord[]).map((record) => nodeElement(record, TREE_KEYS));
      const edges = (answer.edges as GraphRecord[]).map((record) => edgeElement(record, TREE_KEYS));
      addElements(graph(), container, [...nodes, ...edges]);
      status.textContent = `${edges.length} ${label} edge${edges.length === 1 ? "" : "s"} ${direction === "out" ? "from" : "to"} ${id}`;
      status.className = "status";
    } catch (cause) {
      fail(cause);
    }
  };

  const inspect = async (id: string): Promise<void> => {
    try {
      const answer = await runTree(readRequest({ node: nodeStep(id), out: { label: { input: { out_e: { input: nodeStep(id) } } } }, in: { label: { input: { in_e: { input: nodeStep(id) } } } } }));
      const record = (answer.node as GraphRecord[])[0];
      inspector.replaceChildren();
      if (record === undefined) {
        inspector.appendChild(element("p", `no node has ID ${id}`, "error"));
        return;
      }
      inspector.appendChild(element("h3", `${String(record.$label)} ${id}`));
      const properties = element("table");
      properties.dataset.testid = "properties";
      for (const [key, value] of Object.entries(record)) {
        const row = properties.insertRow();
        row.insertCell().textContent = key;
        row.insertCell().textContent = isRecordLike(value) || Array.isArray(value) ? JSON.stringify(value) : cellText(value);
      }
      inspector.appendChild(properties);
      for (const direction of ["out", "in"] as const) {
        const counts = countLabels(answer[direction]);
        inspector.appendChild(element("h4", direction === "out" ? "Edges out" : "Edges in"));
        if (counts.size === 0) inspector.appendChild(element("p", "none", "hint"));
        for (const [label, count] of counts) {
          const button = element("button", `${direction === "out" ? "→" : "←"} ${label} (${count})`, "expand");
          button.type = "button";
          button.dataset.testid = `expand-${direction}-${label}`;
          button.addEventListener("click", () => void expand(id, direction, label));
          inspector.appendChild(button);
        }
      }
      addElements(graph(), container, [nodeElement(record, TREE_KEYS)]);
    } catch (cause) {
      fail(cause);
    }
  };

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const id = input.value.trim();
    if (!/^[0-9]+$/.test(id)) return fail("a node ID is a non-negative integer");
    status.textContent = "";
    void inspect(id).then(() => selectOnly(id));
  });
  byTestId<HTMLButtonElement>("find").addEventListener("click", () => {
    const [label, property, value] = ["find-label", "find-property", "find-value"].map((id) => byTestId<HTMLInputElement>(id).value.trim());
    if (label === "" || property === "") return fail("Find needs a label and a property");
    void (async () => {
      try {
        const found = (await runTree(readRequest({ found: findStep(label, property, value) }))).found as GraphRecord[];
        status.textContent = `${found.length} ${label} node${found.length === 1 ? "" : "s"} with ${property} = ${value}`;
        status.className = "status";
        if (found.length === 0) return;
        addElements(graph(), container, found.map((record) => nodeElement(record, TREE_KEYS)));
        const first = String(found[0].$id);
        await inspect(first);
        selectOnly(first);
      } catch (cause) {
        fail(cause);
      }
    })();
  });
  byTestId<HTMLButtonElement>("clear-graph").addEventListener("click", () => {
    graph().elements().remove();
    inspector.replaceChildren();
    showCounts(graph(), container);
  });
  // cytoscape measures its container when drawn: a graph made while its page was hidden is resized when shown.
  return { show: () => cy?.resize() };
}
