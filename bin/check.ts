/**
 * `silk check`: parses and checks a project's `.hx` files — schema declarations and QUERY definitions — and prints
 * every diagnostic, each with its file, line, column, source line and caret (protocol/helixql/diagnostics.ts),
 * like a compiler. Exit code 1 when there is any.
 */
import { checkProject } from "../protocol/helixql/query-check.js";
import { formatDiagnostics } from "../protocol/schema.js";
import type { ProgressOutput } from "./import/progress.js";
import { loadSchemaSources } from "./schema-files.js";

const plural = (count: number, one: string, many: string): string => `${count} ${count === 1 ? one : many}`;

export function runCheck(path: string, output: { readonly stdout: ProgressOutput; readonly stderr: ProgressOutput }): number {
  const sources = loadSchemaSources(path);
  const { schema, queries, diagnostics } = checkProject(sources);
  const files = plural(sources.length, "file", "files");
  if (schema === undefined || diagnostics.length > 0) {
    output.stdout.write(`${formatDiagnostics(diagnostics, sources)}\n`);
    output.stderr.write(`silk check: ${plural(diagnostics.length, "error", "errors")} in ${files}\n`);
    return 1;
  }
  output.stdout.write(
    `ok: ${files}, ${schema.nodes.size} node, ${schema.edges.size} edge and ${schema.vectors.size} vector types, ` +
      `${plural(queries.length, "query", "queries")}\n`,
  );
  return 0;
}
