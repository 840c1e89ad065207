/**
 * The HelixQL playground: QUERY definitions in an editor, checked by the server as you type (the checker `silk check`
 * runs, against the served project's schema) with each diagnostic underlined where it is and marked in the gutter,
 * and run against the live database: the answer as tables (one per returned name), as JSON, and as a graph of the
 * records it holds.
 */
import { ApiError, checkText, runText, type CheckAnswer, type CheckedQuery, type Diagnostic, type Project } from "./api";
import type { Core } from "cytoscape";
import { byTestId, element, showTables } from "./dom";
import { addElements, answerElements, newGraph } from "./graph";

/** Milliseconds of no typing before the text is checked: one request per pause, not per key. */
const CHECK_DELAY_MS = 250;

/** The first text of a new console: a read of the project's first node type, or a note that there is no project. */
function exampleText(project: Project): string {
  if (!project.hasSchema) return "// This server has no project (silk serve without --project): HelixQL needs a schema to check against.\n// The graph explorer works without one.\n";
  const label = project.nodeTypes[0] ?? "User";
  return `// QUERY definitions, checked against the served project's schema as you type.
// Pick one below, give its parameters as JSON, and run it (read queries only).
QUERY First${label}s(count: I64) =>
    rows <- N<${label}>::RANGE(0, count)
    RETURN rows
`;
}

const STORED_TEXT_KEY = "silk-console-text";

export function startPlayground(project: Project): void {
  const editor = byTestId<HTMLTextAreaElement>("editor");
  const gutter = byTestId<HTMLPreElement>("gutter");
  const backdrop = byTestId<HTMLPreElement>("editor-marks");
  const list = byTestId<HTMLUListElement>("diagnostics");
  const select = byTestId<HTMLSelectElement>("query-select");
  const parameters = byTestId<HTMLInputElement>("parameters");
  const runButton = byTestId<HTMLButtonElement>("run");
  const status = byTestId<HTMLSpanElement>("run-status");
  const table = byTestId<HTMLDivElement>("result-table");
  const json = byTestId<HTMLPreElement>("result-json");
  const graphView = byTestId<HTMLDivElement>("result-graph");
  let graph: Core | undefined;
  let lastAnswer: unknown;

  let marked = new Map<number, "error" | "warning">();
  let found: readonly Diagnostic[] = [];
  let timer: number | undefined;
  let checking = 0;

  const drawGutter = (): void => {
    const lines = editor.value.split("\n").length;
    gutter.replaceChildren();
    for (let line = 1; line <= lines; line++) {
      const severity = marked.get(line);
      gutter.appendChild(element("span", `${line}\n`, severity === undefined ? undefined : `marked-${severity}`));
    }
    gutter.scrollTop = editor.scrollTop;
  };

  /**
   * Underlines each diagnostic in the text: from its column to the end of the word there (one character where no
   * word starts). Drawn in the backdrop under the text area, whose characters it repeats invisibly.
   */
  const drawMarks = (): void => {
    const lines = editor.value.split("\n");
    const starts: number[] = [];
    let offset = 0;
    for (const line of lines) {
      starts.push(offset);
      offset += line.length + 1;
    }
    const spans = found
      .filter((diagnostic) => diagnostic.line <= lines.length)
      .map((diagnostic) => {
        const line = lines[diagnostic.line - 1];
        const column = Math.min(diagnostic.column - 1, line.length);
        const word = /^[A-Za-z0-9_]+/.exec(line.slice(column))?.[0].length ?? 1;
        const start = starts[diagnostic.line - 1] + column;
        return { start, end: Math.min(start + word, editor.value.length), severity: diagnostic.severity };
      })
      .sort((a, b) => a.start - b.start);
    backdrop.replaceChildren();
    let at = 0;
    for (const span of spans) {
      if (span.start < at) continue;
      backdrop.append(editor.value.slice(at, span.start));
      // A mark at the end of the text (a missing token) underlines a space, so that it shows.
      backdrop.appendChild(element("mark", span.end > span.start ? editor.value.slice(span.start, span.end) : " ", span.severity));
      at = Math.max(span.end, span.start);
    }
    // A trailing newline needs a character after it to take its line in a <pre>.
    backdrop.append(`${editor.value.slice(at)} `);
    backdrop.scrollTop = editor.scrollTop;
    backdrop.scrollLeft = editor.scrollLeft;
  };

  const moveTo = (line: number, column: number): void => {
    const lines = editor.value.split("\n");
    let offset = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) offset += lines[i].length + 1;
    editor.focus();
    editor.setSelectionRange(offset + column - 1, offset + column - 1);
  };

  const showQueries = (queries: readonly CheckedQuery[]): void => {
    const chosen = select.value;
    select.replaceChildren(...queries.map((query) => {
      const option = element("option", `${query.name}${query.request_type === "write" ? " (writes)" : ""}`);
      option.value = query.name;
      return option;
    }));
    if (queries.some((query) => query.name === chosen)) select.value = chosen;
  };

  const showCheck = (answer: CheckAnswer): void => {
    marked = new Map();
    found = answer.diagnostics;
    list.replaceChildren();
    for (const diagnostic of answer.diagnostics) {
      if (marked.get(diagnostic.line) !== "error") marked.set(diagnostic.line, diagnostic.severity);
      const item = element("li", undefined, diagnostic.severity);
      item.dataset.line = String(diagnostic.line);
      item.append(element("span", `${diagnostic.line}:${diagnostic.column}`, "place"), element("span", diagnostic.code, "code"), element("span", diagnostic.message, "message"));
      item.addEventListener("click", () => moveTo(diagnostic.line, diagnostic.column));
      list.appendChild(item);
    }
    if (answer.diagnostics.length === 0) list.appendChild(element("li", answer.queries.length === 0 ? "no QUERY yet" : "checks", "ok"));
    // A text that does not check keeps the queries of its last good state, so that the picker does not flicker.
    if (answer.diagnostics.every((diagnostic) => diagnostic.severity === "warning")) showQueries(answer.queries);
    drawGutter();
    drawMarks();
  };

  const check = async (): Promise<void> => {
    const ticket = ++checking;
    try {
      const answer = await checkText(editor.value);
      if (ticket === checking) showCheck(answer);
    } catch (cause) {
      if (ticket !== checking) return;
      list.replaceChildren(element("li", cause instanceof ApiError ? `${cause.code}: ${cause.message}` : String(cause), "error"));
    }
  };

  /** Draws the last answer's records; cytoscape measures its container, so only while the view is shown. */
  const drawGraph = (): void => {
    graph ??= newGraph(graphView);
    graph.elements().remove();
    graph.resize();
    addElements(graph, graphView, answerElements(lastAnswer));
  };

  const showAnswer = (answer: unknown): void => {
    lastAnswer = answer;
    if (!graphView.hidden) drawGraph();
    json.textContent = JSON.stringify(answer, null, 2);
    showTables(table, answer);
  };

  const run = async (): Promise<void> => {
    let given: unknown;
    try {
      given = parameters.value.trim() === "" ? {} : JSON.parse(parameters.value);
    } catch {
      status.textContent = "the parameters are not JSON";
      status.className = "status error";
      return;
    }
    status.textContent = "running…";
    status.className = "status";
    const started = performance.now();
    try {
      const answer = await runText(editor.value, select.value === "" ? undefined : select.value, given);
      showAnswer(answer);
      status.textContent = `ok in ${Math.round(performance.now() - started)} ms`;
    } catch (cause) {
      status.textContent = cause instanceof ApiError ? `${cause.code}: ${cause.message}` : String(cause);
      status.className = "status error";
    }
  };

  editor.value = localStorage.getItem(STORED_TEXT_KEY) ?? exampleText(project);
  if (project.hasSchema && project.nodeTypes.length > 0 && parameters.value === "{}") parameters.value = '{"count": 20}';
  editor.addEventListener("input", () => {
    localStorage.setItem(STORED_TEXT_KEY, editor.value);
    // Until the next check answers, the marks stay where they were: an edit may have moved them.
    drawGutter();
    drawMarks();
    window.clearTimeout(timer);
    timer = window.setTimeout(() => void check(), CHECK_DELAY_MS);
  });
  editor.addEventListener("scroll", () => {
    gutter.scrollTop = editor.scrollTop;
    backdrop.scrollTop = editor.scrollTop;
    backdrop.scrollLeft = editor.scrollLeft;
  });
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      void run();
    } else if (event.key === "Tab") {
      event.preventDefault();
      editor.setRangeText("    ", editor.selectionStart, editor.selectionEnd, "end");
      editor.dispatchEvent(new Event("input"));
    }
  });
  runButton.addEventListener("click", () => void run());
  for (const button of document.querySelectorAll<HTMLButtonElement>("[data-view]")) {
    button.addEventListener("click", () => {
      for (const other of document.querySelectorAll<HTMLButtonElement>("[data-view]")) other.classList.toggle("active", other === button);
      table.hidden = button.dataset.view !== "table";
      json.hidden = button.dataset.view !== "json";
      graphView.hidden = button.dataset.view !== "graph";
      if (!graphView.hidden) drawGraph();
    });
  }
  drawGutter();
  drawMarks();
  if (project.hasSchema) void check();
}
