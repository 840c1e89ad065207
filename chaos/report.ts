/**
 * report.html of a chaos run (docs/CHAOS.md): one self-contained page with no script: throughput (ok, fail and
 * unknown completions per second) and latency (each completed operation's, by completion time) over the run, the
 * fault windows shaded behind both, the checker's verdict and every anomaly with the operations it names.
 */
import type { Operation } from "./history.js";
import type { FaultEvent } from "./nemesis.js";
import type { ChaosSummary } from "./summary.js";

const WIDTH = 900;
const HEIGHT = 220;
const MARGIN = 40;
const COLOURS = { ok: "#2a7d2a", fail: "#b8860b", unknown: "#c0392b" } as const;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
}

/** An SVG chart of [seconds, value] series over [0, spanS], with the fault windows shaded. */
function chart(title: string, spanS: number, series: { colour: string; points: [number, number][]; dots: boolean }[], faults: readonly FaultEvent[], unit: string): string {
  const maxY = Math.max(1, ...series.flatMap((s) => s.points.map(([, y]) => y)));
  const x = (s: number): number => MARGIN + (s / spanS) * (WIDTH - 2 * MARGIN);
  const y = (v: number): number => HEIGHT - MARGIN - (v / maxY) * (HEIGHT - 2 * MARGIN);
  const windows = faults
    .filter((fault) => fault.skipped === undefined)
    .map((fault) => {
      const from = x(fault.start / 1000);
      const width = Math.max(1, x(fault.end / 1000) - from);
      return `<rect x="${from.toFixed(1)}" y="${MARGIN}" width="${width.toFixed(1)}" height="${HEIGHT - 2 * MARGIN}" fill="#f2c9c9"><title>${escapeHtml(`${fault.kind} ${fault.target}`)}</title></rect><text x="${from.toFixed(1)}" y="${MARGIN - 4}" font-size="9">${escapeHtml(fault.kind)}</text>`;
    })
    .join("");
  const drawn = series
    .map((s) =>
      s.dots
        ? s.points.map(([px, py]) => `<circle cx="${x(px).toFixed(1)}" cy="${y(py).toFixed(1)}" r="1.5" fill="${s.colour}"/>`).join("")
        : `<polyline fill="none" stroke="${s.colour}" stroke-width="1.5" points="${s.points.map(([px, py]) => `${x(px).toFixed(1)},${y(py).toFixed(1)}`).join(" ")}"/>`,
    )
    .join("");
  const axes = `<line x1="${MARGIN}" y1="${HEIGHT - MARGIN}" x2="${WIDTH - MARGIN}" y2="${HEIGHT - MARGIN}" stroke="#333"/><line x1="${MARGIN}" y1="${MARGIN}" x2="${MARGIN}" y2="${HEIGHT - MARGIN}" stroke="#333"/>`;
  const labels = `<text x="${MARGIN}" y="${MARGIN - 16}" font-size="12" font-weight="bold">${escapeHtml(title)}</text><text x="4" y="${MARGIN + 4}" font-size="10">${maxY.toFixed(0)} ${unit}</text><text x="${WIDTH - MARGIN - 30}" y="${HEIGHT - MARGIN + 14}" font-size="10">${spanS.toFixed(0)} s</text>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}">${windows}${axes}${drawn}${labels}</svg>`;
}

export function renderReport(summary: ChaosSummary, operations: readonly Operation[], faults: readonly FaultEvent[]): string {
  const clients = operations.filter((operation) => operation.process >= 0 && Number.isFinite(operation.end));
  const spanS = Math.max(1, summary.durationMs / 1000, ...clients.map((operation) => operation.end / 1000));
  const seconds = Math.ceil(spanS);
  const perSecond = (outcome: keyof typeof COLOURS): [number, number][] => {
    const counts = new Array<number>(seconds).fill(0);
    for (const operation of clients) if (operation.outcome === outcome) counts[Math.min(seconds - 1, Math.floor(operation.end / 1000))] += 1;
    return counts.map((count, second) => [second + 0.5, count]);
  };
  const throughput = chart("completions per second", spanS, (Object.keys(COLOURS) as (keyof typeof COLOURS)[]).map((outcome) => ({ colour: COLOURS[outcome], points: perSecond(outcome), dots: false })), faults, "op/s");
  const latency = chart(
    "latency by completion time",
    spanS,
    (Object.keys(COLOURS) as (keyof typeof COLOURS)[]).map((outcome) => ({
      colour: COLOURS[outcome],
      points: clients.filter((operation) => operation.outcome === outcome).map((operation) => [operation.end / 1000, operation.end - operation.start] as [number, number]),
      dots: true,
    })),
    faults,
    "ms",
  );
  const { verdict } = summary;
  const verdictText = verdict.valid === true ? "valid: no anomaly found" : verdict.valid === false ? `INVALID: ${verdict.anomalies.length} anomalies` : "unknown: the checker's search ran past its budget";
  const anomalies = verdict.anomalies.map((anomaly) => `<li><b>${escapeHtml(anomaly.kind)}</b>: ${escapeHtml(anomaly.message)} (ops ${anomaly.ops.join(", ")})</li>`).join("");
  const faultRows = faults
    .map((fault) => `<tr><td>${(fault.start / 1000).toFixed(1)} s</td><td>${(fault.end / 1000).toFixed(1)} s</td><td>${escapeHtml(fault.kind)}</td><td>${escapeHtml(fault.target)}</td><td>${escapeHtml(fault.skipped ?? "")}</td></tr>`)
    .join("");
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>silk chaos: ${escapeHtml(summary.workload)} seed ${summary.seed}</title>
<style>body{font-family:sans-serif;margin:2em;max-width:960px}td,th{padding:2px 8px;text-align:left}</style></head>
<body>
<h1>silk chaos run: ${escapeHtml(summary.workload)}, seed ${summary.seed}</h1>
<p>${(summary.durationMs / 1000).toFixed(0)} s at ${summary.rate} op/s with ${summary.concurrency} clients; operations ${summary.operations.total}: ok ${summary.operations.ok}, fail ${summary.operations.fail}, unknown ${summary.operations.unknown}; faults applied ${summary.faults.applied} of ${summary.faults.planned} planned.</p>
<h2>Verdict: ${escapeHtml(verdictText)}</h2>
<ul>${anomalies}</ul>
<p>Checker figures: ${escapeHtml(Object.entries(verdict.stats).map(([name, value]) => `${name} ${value}`).join(", "))}</p>
${throughput}
${latency}
<p>Green: ok; amber: failed; red: unknown. Shaded: a fault in effect.</p>
<h2>Faults</h2>
<table><tr><th>from</th><th>to</th><th>fault</th><th>target</th><th>skipped</th></tr>${faultRows}</table>
</body></html>
`;
}
