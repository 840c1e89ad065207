/**
 * The project checker: a project's `.hx` files hold both schema declarations and QUERY definitions. It checks the
 * schema (schema-check.ts), then every QUERY against it, and compiles each query that checks into a CompiledQuery
 * (query.ts). Every diagnostic of every file is reported; queries are present exactly when there are none.
 * Warnings (protocol/warnings.ts) are reported beside them and never keep a project from loading.
 *
 * Silk has no build step, so "check passes, build fails" cannot happen by construction; as a second guard every
 * compiled tree is decoded here exactly as a run would decode it, and a tree the decoder refuses is reported as a
 * bug in Silk at the query's position instead of failing on the first call.
 */
import { asSilkError } from "../errors.js";
import type { Diagnostic, Schema, SchemaSource, Warning } from "../schema.js";
import { decodeRequest } from "../tree.js";
import type { CompiledQuery } from "./query.js";
import { queryDocComment } from "./query-attributes.js";
import { compileQuery } from "./query-compile.js";
import { analyseSchema, type SchemaAnalysis } from "./schema-check.js";
import type { SchemaHistory } from "./schema-versions.js";

export interface ProjectCheck {
  readonly schema?: Schema;
  /** The schema's versions and compiled MIGRATIONs (schema-versions.ts); present with the schema. */
  readonly history?: SchemaHistory;
  readonly queries: readonly CompiledQuery[];
  readonly diagnostics: readonly Diagnostic[];
  /** Constructs HelixDB accepts that Silk loads its own way; listed with or without diagnostics. */
  readonly warnings: readonly Warning[];
}

export function checkProject(sources: SchemaSource | readonly SchemaSource[]): ProjectCheck {
  const files = Array.isArray(sources) ? [...sources] : [sources as SchemaSource];
  const analysis = analyseSchema(files);
  // After a syntax error some declarations are missing; queries checked against the rest would only report echoes.
  const queries = analysis.syntaxErrors === 0 ? compileQueries(analysis, files, analysis.schema) : [];
  const diagnostics = analysis.diagnostics();
  const warnings = analysis.warnings();
  return diagnostics.length === 0 ? { schema: analysis.schema, history: analysis.history, queries, diagnostics, warnings } : { queries: [], diagnostics, warnings };
}

/**
 * The QUERY definitions of one text (the web console's editor, gateway/console.ts) checked against a schema that
 * is already loaded (the served project's): the same diagnostics, positions and compiled queries `silk check` gives
 * for a query written in one of the project's files. The text holds queries only: a type declaration in it is
 * schema_invalid at its name, since the types are the project's (a console cannot change a served schema).
 */
export function checkQueryText(source: SchemaSource, schema: Schema): Omit<ProjectCheck, "schema" | "history"> {
  const analysis = analyseSchema([source]);
  const queries = analysis.syntaxErrors === 0 ? compileQueries(analysis, [source], schema) : [];
  for (const { ast } of analysis.parsed) {
    for (const declaration of ast.declarations) {
      if (declaration.kind === "query") continue;
      const [loc, what] = "name" in declaration ? [declaration.name.loc, declaration.name.text] : [declaration.loc, declaration.kind === "migration" ? "MIGRATION" : "schema::"];
      analysis.report("schema_invalid", 0, loc, `${what}: only QUERY definitions are checked here; types are declared in the project's .hx files`);
    }
  }
  const diagnostics = analysis.diagnostics();
  return { queries: diagnostics.length === 0 ? queries : [], diagnostics, warnings: analysis.warnings() };
}

/**
 * Compiles every QUERY of the parsed files against `schema`, reporting into the analysis; the queries that
 * compiled and decode. Duplicate names are query_invalid at the second.
 */
function compileQueries(analysis: SchemaAnalysis, files: readonly SchemaSource[], schema: Schema): CompiledQuery[] {
  const queries: CompiledQuery[] = [];
  const seen = new Map<string, string>();
  for (const { fileIndex, ast } of analysis.parsed) {
    const file = files[fileIndex].file;
    for (const declaration of ast.declarations) {
      if (declaration.kind !== "query") continue;
      const name = declaration.name.text;
      const first = seen.get(name);
      if (first !== undefined) {
        analysis.report("query_invalid", fileIndex, declaration.name.loc, `duplicate QUERY ${name}; first defined at ${first}`);
        continue;
      }
      seen.set(name, `${file}:${declaration.name.loc.line}:${declaration.name.loc.column}`);
      const query = compileQuery(
        declaration,
        file,
        schema,
        { report: (code, loc, message) => analysis.report(code, fileIndex, loc, message), warn: (code, loc, message) => analysis.warn(code, fileIndex, loc, message) },
        (param) => analysis.convertType(param.type, (loc, message) => analysis.report("query_invalid", fileIndex, loc, message)),
      );
      if (query === undefined) continue;
      const fault = decodeFault(query);
      const description = queryDocComment(files[fileIndex].text, declaration);
      if (fault === undefined) queries.push(description === undefined ? query : { ...query, description });
      else analysis.report("internal", fileIndex, declaration.name.loc, `internal error (a bug in Silk): QUERY ${name} compiled to a tree that does not decode: ${fault}`);
    }
  }
  return queries;
}

/** Why the tree of a compiled query would not decode; steps that only a later release runs are not faults. */
function decodeFault(query: CompiledQuery): string | undefined {
  if (query.tree === undefined) return undefined;
  try {
    decodeRequest(query.tree);
    return undefined;
  } catch (cause) {
    const error = asSilkError(cause);
    return error.code === "unsupported_operation" ? undefined : `${error.code}: ${error.message}`;
  }
}
