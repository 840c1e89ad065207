/**
 * `silk check`: parses and checks a project's `.hx` files and prints every diagnostic, each with its file, line,
 * column, source line and caret (protocol/helixql/diagnostics.ts), like a compiler. Exit code 1 when there is any.
 */
import { checkSchema, formatDiagnostics } from "../protocol/schema.js";
import type { ProgressOutput } from "./import/progress.js";
import { loadSchemaSources } from "./schema-files.js";

export function runCheck(path: string, output: { readonly stdout: ProgressOutput; readonly stderr: ProgressOutput }): number {
  const sources = loadSchemaSources(path);
  const { schema, diagnostics } = checkSchema(sources);
  if (schema === undefined || diagnostics.length > 0) {
    output.stdout.write(`${formatDiagnostics(diagnostics, sources)}\n`);
    const count = diagnostics.length;
    output.stderr.write(`silk check: ${count} ${count === 1 ? "error" : "errors"} in ${sources.length} ${sources.length === 1 ? "file" : "files"}\n`);
    return 1;
  }
  output.stdout.write(
    `ok: ${sources.length} ${sources.length === 1 ? "file" : "files"}, ${schema.nodes.size} node, ${schema.edges.size} edge and ` +
      `${schema.vectors.size} vector types\n`,
  );
  return 0;
}
