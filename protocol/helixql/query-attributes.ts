/**
 * The attributes written before a QUERY, HelixDB's built-in macros, and the query's doc comment:
 * - `#[mcp]`: the server offers the query as a Model Context Protocol tool (gateway/mcp.ts, docs/MCP.md);
 * - `#[model("name")]` (or `#[model(name)]`): every `Embed` of the query uses that model of the configured embedding
 *   provider (docs/EMBEDDING.md);
 * - the `//` lines just above the QUERY (and its attributes) describe it: an MCP tool's description.
 * Each attribute is checked where it is written; a wrong one is a diagnostic, never a syntax error, so that every
 * problem of the file is reported together.
 */
import { embedModelNameProblem } from "../embedding.js";
import type { QueryDeclAst } from "./ast.js";
import type { Report } from "./diagnostics.js";

/** What a QUERY's attributes ask for. */
export interface QueryAttributes {
  /** `#[mcp]`: offered as an MCP tool. */
  readonly mcp: boolean;
  /** `#[model("name")]`: the embedding model of every Embed in the query. */
  readonly embeddingModel?: string;
}

/** The attributes a QUERY may carry, as diagnostics spell them. */
const KNOWN_ATTRIBUTES = '#[mcp] and #[model("name")]';

/**
 * The attributes of a QUERY, each checked: a known name (`mcp`, `model`), the arguments it takes, given once.
 * Problems are reported (`query_invalid`) at the attribute, and what is wrong is left out of the answer.
 */
export function checkQueryAttributes(decl: QueryDeclAst, report: Report): QueryAttributes {
  let mcp = false;
  let embeddingModel: string | undefined;
  const seen = new Set<string>();
  for (const attribute of decl.attributes ?? []) {
    const name = attribute.name.text;
    if (name !== "mcp" && name !== "model") {
      report("query_invalid", attribute.name.loc, `unknown attribute #[${name}]; a QUERY takes ${KNOWN_ATTRIBUTES}`);
      continue;
    }
    if (seen.has(name)) {
      report("query_invalid", attribute.loc, `#[${name}] is given twice on QUERY ${decl.name.text}`);
      continue;
    }
    seen.add(name);
    if (name === "mcp") {
      if (attribute.args === undefined) mcp = true;
      else report("query_invalid", attribute.loc, "#[mcp] takes no arguments; write #[mcp]");
      continue;
    }
    const args = attribute.args ?? [];
    const [model] = args;
    if (args.length !== 1 || (model.kind !== "string" && model.kind !== "name")) {
      report("query_invalid", args.length === 1 ? model.loc : attribute.loc, '#[model] takes one model name, as in #[model("text-embedding-3-small")]');
      continue;
    }
    const text = model.kind === "string" ? model.value : model.text;
    const problem = embedModelNameProblem(text);
    if (problem === undefined) embeddingModel = text;
    else report("query_invalid", model.loc, `#[model(${JSON.stringify(text)})]: ${problem}`);
  }
  return embeddingModel === undefined ? { mcp } : { mcp, embeddingModel };
}

/**
 * The doc comment of a QUERY: the `//` lines directly above it, attribute lines among them skipped, up to the first
 * line that is neither (a blank line ends it too). Each line loses its `//` and surrounding spaces; undefined when
 * there is no such line or all are empty.
 */
export function queryDocComment(text: string, decl: QueryDeclAst): string | undefined {
  const lines = text.slice(0, decl.loc.offset).split("\n");
  // The QUERY keyword's own line up to the keyword: nothing or attributes (`#[mcp] QUERY ..`); anything else, such as
  // the end of another declaration, means no comment belongs to this query.
  const head = lines.pop()!.trim();
  if (head !== "" && !head.startsWith("#[")) return undefined;
  const comment: string[] = [];
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    const line = lines[i].trim();
    if (line.startsWith("#[")) continue;
    if (!line.startsWith("//")) break;
    comment.unshift(line.slice(2).trim());
  }
  const joined = comment.join("\n").trim();
  return joined === "" ? undefined : joined;
}
