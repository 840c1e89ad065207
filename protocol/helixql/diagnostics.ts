/**
 * Rendering of HelixQL diagnostics in the compiler style: `file:line:column: message [code]` (a warning:
 * `file:line:column: warning: message [code]`), then the source line and a caret under the column. Shared by the
 * schema checker and the query checker, so every HelixQL error and warning reads the same way.
 */

import type { ErrorCode } from "../errors.js";
import type { Diagnostic, SchemaSource, Warning } from "../schema.js";
import type { SourceLocation } from "./ast.js";

/** How a checker reports an error it found at a place in a file, and carries on (every diagnostic is reported). */
export type Report = (code: ErrorCode, loc: SourceLocation, message: string) => void;

/** One diagnostic or warning, with its source line and caret when `text` (the file's content) is given. */
export function formatDiagnostic(diagnostic: Diagnostic | Warning, text?: string): string {
  // The stable code goes last, in brackets (as linters print rule names), so the message reads first.
  const severity = "severity" in diagnostic ? `${diagnostic.severity}: ` : "";
  const head = `${diagnostic.file}:${diagnostic.line}:${diagnostic.column}: ${severity}${diagnostic.message} [${diagnostic.code}]`;
  if (text === undefined) return head;
  const sourceLine = lineAt(text, diagnostic.line);
  if (sourceLine === undefined) return head;
  // Keep tabs in the caret line's padding so the caret lines up with the source however tabs are displayed.
  const padding = sourceLine.slice(0, Math.max(0, diagnostic.column - 1)).replace(/[^\t]/g, " ");
  return `${head}\n${sourceLine}\n${padding}^`;
}

/** Every diagnostic (or warning) in order, each with its source line and caret, separated by newlines. */
export function formatDiagnostics(diagnostics: readonly (Diagnostic | Warning)[], sources: readonly SchemaSource[]): string {
  const texts = new Map<string, string>();
  for (const source of sources) texts.set(source.file, source.text);
  return diagnostics.map((d) => formatDiagnostic(d, texts.get(d.file))).join("\n");
}

function lineAt(text: string, line: number): string | undefined {
  let start = 0;
  for (let current = 1; current < line; current++) {
    const newline = text.indexOf("\n", start);
    if (newline < 0) return undefined;
    start = newline + 1;
  }
  const end = text.indexOf("\n", start);
  return text.slice(start, end < 0 ? text.length : end).replace(/\r$/, "");
}
