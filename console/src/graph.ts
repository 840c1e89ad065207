/**
 * Records drawn as a graph with cytoscape, shared by the explorer and the playground's Graph view. Records come in
 * two key sets: `/v2/query`'s (`$id`, `$label`, `$from`, `$to`) and HelixQL answers' (`id`, `label`, `from_node`,
 * `to_node`); a record with both ends is an edge, any other one a node.
 */
import cytoscape, { type Core, type ElementDefinition } from "cytoscape";

export type GraphRecord = Readonly<Record<string, unknown>>;

/** The keys of one record form. */
export interface RecordKeys {
  readonly id: string;
  readonly label: string;
  readonly from: string;
  readonly to: string;
}

export const TREE_KEYS: RecordKeys = { id: "$id", label: "$label", from: "$from", to: "$to" };
export const HELIXQL_KEYS: RecordKeys = { id: "id", label: "label", from: "from_node", to: "to_node" };

/** The properties a node is named by on the canvas, the first it has; else its ID. */
const NAME_PROPERTIES = ["name", "title", "handle"];

export function isEdge(record: GraphRecord, keys: RecordKeys): boolean {
  return record[keys.from] !== undefined && record[keys.to] !== undefined;
}

export function nodeElement(record: GraphRecord, keys: RecordKeys): ElementDefinition {
  const id = String(record[keys.id]);
  const name = NAME_PROPERTIES.map((key) => record[key]).find((value) => typeof value === "string");
  return { group: "nodes", data: { id, label: `${String(record[keys.label])} ${name ?? id}`, record } };
}

export function edgeElement(record: GraphRecord, keys: RecordKeys): ElementDefinition {
  const data = { id: `e${String(record[keys.id])}`, source: String(record[keys.from]), target: String(record[keys.to]), label: String(record[keys.label]), record };
  return { group: "edges", data };
}

/** A node for an edge's end that the records do not hold: its ID only, drawn grey. */
export function endElement(id: string): ElementDefinition {
  return { group: "nodes", data: { id, label: id }, classes: "end" };
}

export function newGraph(container: HTMLElement): Core {
  return cytoscape({
    container,
    // A few nodes fitted to the canvas would be drawn huge.
    maxZoom: 2,
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 10, "background-color": "#3b6ea5", color: "#1b2733", "text-valign": "bottom", "text-margin-y": 4 } },
      { selector: "node.end", style: { "background-color": "#c9d4df" } },
      { selector: "node:selected", style: { "background-color": "#e07a1f" } },
      { selector: "edge", style: { label: "data(label)", "font-size": 8, width: 1.5, "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "#9aa7b4", "target-arrow-color": "#9aa7b4" } },
    ],
  });
}

/**
 * Adds the elements the graph does not hold yet, lays it out again (cose, force-directed) and records on the
 * container what is drawn, for a reader of the page that cannot see the canvas (the browser test, assistive tools).
 */
export function addElements(graph: Core, container: HTMLElement, elements: readonly ElementDefinition[]): void {
  const fresh = elements.filter((definition) => graph.getElementById(String(definition.data.id)).empty());
  graph.add(fresh);
  graph.layout({ name: "cose", animate: false, fit: true, padding: 30 }).run();
  showCounts(graph, container);
}

export function showCounts(graph: Core, container: HTMLElement): void {
  container.dataset.nodes = String(graph.nodes().length);
  container.dataset.edges = String(graph.edges().length);
}

/**
 * Every record of a HelixQL answer, at any depth (a record's own properties are not searched: a property holding
 * an object is data, not a record), as graph elements: its nodes, its edges, and a grey node for each edge end the
 * answer does not hold.
 */
export function answerElements(answer: unknown): ElementDefinition[] {
  const nodes = new Map<string, ElementDefinition>();
  const edges: ElementDefinition[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== "object" || value === null) return;
    const record = value as GraphRecord;
    if (record[HELIXQL_KEYS.id] !== undefined && typeof record[HELIXQL_KEYS.label] === "string") {
      if (isEdge(record, HELIXQL_KEYS)) edges.push(edgeElement(record, HELIXQL_KEYS));
      else nodes.set(String(record[HELIXQL_KEYS.id]), nodeElement(record, HELIXQL_KEYS));
      return;
    }
    Object.values(record).forEach(visit);
  };
  visit(answer);
  for (const edge of edges) {
    for (const end of [String(edge.data.source), String(edge.data.target)]) if (!nodes.has(end)) nodes.set(end, endElement(end));
  }
  return [...nodes.values(), ...edges];
}
