/**
 * `silk check`: parses and checks a project's `.hx` files — schema declarations and QUERY definitions — and prints
 * every diagnostic and warning, each with its file, line, column, source line and caret
 * (protocol/helixql/diagnostics.ts), like a compiler. Exit code 1 when there is any error; warnings (constructs
 * HelixDB accepts that Silk loads its own way, protocol/warnings.ts) leave it 0 unless `--strict` makes them errors.
 */
import { checkProject } from "../protocol/helixql/query-check.js";
import { formatDiagnostics, type Diagnostic, type SchemaSource, type Warning } from "../protocol/schema.js";
import type { ProgressOutput } from "./import/progress.js";
import { loadSchemaSources } from "./schema-files.js";

const plural = (count: number, one: string, many: string): string => `${count} ${count === 1 ? one : many}`;

export interface CheckOptions {
  /** Warnings count as errors: exit code 1 when there is any. */
  readonly strict?: boolean;
}

export function runCheck(path: string, output: { readonly stdout: ProgressOutput; readonly stderr: ProgressOutput }, options: CheckOptions = {}): number {
  const sources = loadSchemaSources(path);
  const { schema, queries, diagnostics, warnings } = checkProject(sources);
  const files = plural(sources.length, "file", "files");
  const found = inFileOrder([...diagnostics, ...warnings], sources);
  if (found.length > 0) output.stdout.write(`${formatDiagnostics(found, sources)}\n`);
  const warned = plural(warnings.length, "warning", "warnings");
  if (schema === undefined || diagnostics.length > 0) {
    const also = warnings.length === 0 ? "" : ` and ${warned}`;
    output.stderr.write(`silk check: ${plural(diagnostics.length, "error", "errors")}${also} in ${files}\n`);
    return 1;
  }
  if (options.strict === true && warnings.length > 0) {
    output.stderr.write(`silk check: ${warned} in ${files}, errors under --strict\n`);
    return 1;
  }
  output.stdout.write(
    `ok: ${files}, ${schema.nodes.size} node, ${schema.edges.size} edge and ${schema.vectors.size} vector types, ` +
      `${plural(queries.length, "query", "queries")}${warnings.length === 0 ? "" : `, ${warned}`}\n`,
  );
  return 0;
}

/** Errors and warnings together, by file (in the order the sources were read), then line and column. */
function inFileOrder(found: readonly (Diagnostic | Warning)[], sources: readonly SchemaSource[]): (Diagnostic | Warning)[] {
  const order = new Map(sources.map((source, index) => [source.file, index]));
  return [...found].sort((a, b) => (order.get(a.file) ?? 0) - (order.get(b.file) ?? 0) || a.line - b.line || a.column - b.column);
}
