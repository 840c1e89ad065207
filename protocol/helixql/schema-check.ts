/**
 * The schema checker: parses `.hx` files with the generated HelixQL parser and turns their declarations into a
 * Schema, reporting every problem it can find rather than stopping at the first. A file that does not parse
 * contributes one schema_syntax diagnostic (a PEG parser cannot resume) and the other files are still checked;
 * everything else (duplicates, unknown types, bad DEFAULTs, reserved names, unknown edge endpoints) is a
 * schema_invalid diagnostic at the place it was written.
 */

import { SilkError, unreachable } from "../errors.js";
import type { Diagnostic, EdgeTypeDecl, FieldDecl, FieldType, NodeTypeDecl, Schema, SchemaSource, VectorTypeDecl, Warning } from "../schema.js";
import type { WarningCode } from "../warnings.js";
import type { EdgeDeclAst, FieldAst, ModifierAst, NameAst, SourceFileAst, SourceLocation, TypeAst, TypeDeclAst } from "./ast.js";
import { formatDiagnostics } from "./diagnostics.js";
import { checkFieldName, convertDefault, FIELD_TYPE_DEPTH_MAX, unknownTypeMessage, type Reporter } from "./field-rules.js";
import { parse, SyntaxError as ParserSyntaxError } from "./generated/parser.js";
import { scalarTypeOf } from "./scalars.js";
import { checkMigrations, splitVersions, type SchemaHistory, type VersionDeclarations } from "./schema-versions.js";
import { checkIndexFieldType, checkTenants, textIndexOptions, vectorIndexOptions, type TenantUse } from "./schema-index-options.js";

/** Parses and checks schema files; the schema is present exactly when there are no diagnostics. */
export function checkSchema(sources: SchemaSource | SchemaSource[]): { schema?: Schema; diagnostics: Diagnostic[] } {
  const analysis = analyseSchema(Array.isArray(sources) ? sources : [sources]);
  const diagnostics = analysis.diagnostics();
  return diagnostics.length === 0 ? { schema: analysis.schema, diagnostics } : { diagnostics };
}

/**
 * The schema of a project and what the query checker needs to go on from it: the parsed files (for their QUERY
 * definitions), whether any failed to parse, a way to report more diagnostics in the same order, and the type
 * converter for parameter types (the schema's own type syntax).
 */
export interface SchemaAnalysis {
  /** The declared types; with diagnostics it holds what could be built. */
  readonly schema: Schema;
  /** The versions and MIGRATIONs of a versioned schema (`schema::N`); undefined when it has none. */
  readonly history?: SchemaHistory;
  readonly parsed: readonly { readonly fileIndex: number; readonly ast: SourceFileAst }[];
  readonly syntaxErrors: number;
  report(code: Diagnostic["code"], fileIndex: number, loc: SourceLocation, message: string): void;
  /** Records a warning (protocol/warnings.ts): the project still loads. */
  warn(code: WarningCode, fileIndex: number, loc: SourceLocation, message: string): void;
  convertType(ast: TypeAst, reporter: Reporter): FieldType | undefined;
  /** Every diagnostic so far, by file and then position. */
  diagnostics(): Diagnostic[];
  /** Every warning so far, by file and then position. */
  warnings(): Warning[];
}

export function analyseSchema(files: readonly SchemaSource[]): SchemaAnalysis {
  const checker = new SchemaChecker();
  const parsed: { fileIndex: number; ast: SourceFileAst }[] = [];
  files.forEach((source, fileIndex) => {
    const ast = checker.parseFile(source, fileIndex);
    if (ast !== undefined) parsed.push({ fileIndex, ast });
  });
  const report = (code: Diagnostic["code"], fileIndex: number, loc: SourceLocation, message: string): void =>
    checker.add(code, files[fileIndex].file, fileIndex, loc, message);
  // Each version's types are checked as a schema of their own; the highest is the project's schema.
  const split = splitVersions(parsed, (fileIndex, loc, message) => report("schema_invalid", fileIndex, loc, message));
  const versions = new Map<number, Schema>();
  for (const [version, declarations] of split.versions) versions.set(version, checker.build(declarations, files));
  const current = Math.max(...versions.keys());
  const schema = versions.get(current)!;
  const history = checker.syntaxErrors === 0 ? checkMigrations(split, versions, files, (ast, reporter) => checker.typeOf(ast, reporter), (fileIndex, loc, message) => report("schema_invalid", fileIndex, loc, message)) : undefined;
  return {
    schema,
    history,
    parsed,
    syntaxErrors: checker.syntaxErrors,
    report,
    warn: (code, fileIndex, loc, message) => checker.addWarning(code, files[fileIndex].file, fileIndex, loc, message),
    convertType: (ast, reporter) => checker.typeOf(ast, reporter),
    diagnostics: () => checker.sortedDiagnostics(),
    warnings: () => checker.sortedWarnings(),
  };
}

/**
 * Parses and checks schema files, throwing one SilkError that lists every diagnostic with its source line and
 * caret: schema_syntax when any file fails to parse, schema_invalid otherwise.
 */
export function parseSchema(sources: SchemaSource | SchemaSource[]): Schema {
  const files = Array.isArray(sources) ? sources : [sources];
  const result = checkSchema(files);
  if (result.schema !== undefined) return result.schema;
  const code = result.diagnostics.some((d) => d.code === "schema_syntax") ? "schema_syntax" : "schema_invalid";
  throw new SilkError(code, formatDiagnostics(result.diagnostics, files));
}

type SchemaDeclarationAst = TypeDeclAst;

interface Located<T> {
  readonly diagnostic: T;
  readonly fileIndex: number;
  readonly offset: number;
}

function byPlace<T>(found: readonly Located<T>[]): T[] {
  return [...found].sort((a, b) => a.fileIndex - b.fileIndex || a.offset - b.offset).map((located) => located.diagnostic);
}

interface Declared<T> {
  readonly decl: T;
  readonly file: string;
  readonly loc: SourceLocation;
}

class SchemaChecker {
  private readonly found: Located<Diagnostic>[] = [];
  private readonly warned: Located<Warning>[] = [];
  syntaxErrors = 0;

  parseFile(source: SchemaSource, fileIndex: number): SourceFileAst | undefined {
    try {
      return parse(source.text, { grammarSource: source.file });
    } catch (error) {
      this.syntaxErrors++;
      if (error instanceof ParserSyntaxError) {
        const message = error.message.replace(/\.$/, "");
        const text = `syntax error: ${message.charAt(0).toLowerCase()}${message.slice(1)}`;
        this.add("schema_syntax", source.file, fileIndex, error.location.start, text);
        return undefined;
      }
      // A recursive-descent parser overflows the stack on absurdly deep nesting; that is the text's fault.
      if (error instanceof RangeError) {
        this.add("schema_syntax", source.file, fileIndex, { line: 1, column: 1, offset: 0 }, "syntax error: nesting too deep to parse");
        return undefined;
      }
      throw error;
    }
  }

  build(parsed: readonly VersionDeclarations[], files: readonly SchemaSource[]): Schema {
    const nodes = new Map<string, NodeTypeDecl>();
    const edges = new Map<string, EdgeTypeDecl>();
    const vectors = new Map<string, VectorTypeDecl>();
    const seen: Record<SchemaDeclarationAst["kind"], Map<string, Declared<SchemaDeclarationAst>>> = {
      node: new Map(),
      edge: new Map(),
      vector: new Map(),
    };
    const pendingEdges: { ast: EdgeDeclAst; report: Reporter }[] = [];
    for (const { fileIndex, declarations } of parsed) {
      const file = files[fileIndex].file;
      const report = this.reporter(file, fileIndex);
      for (const declaration of declarations) {
        // A duplicate is reported and left out of the schema, but its body is still checked for errors of its own.
        const fresh = this.registerName(seen[declaration.kind], declaration, file, report);
        const name = declaration.name.text;
        switch (declaration.kind) {
          case "node": {
            const fields = this.typeFields(declaration.fields, report, []);
            if (fresh) nodes.set(name, { kind: "node", name, fields });
            break;
          }
          case "vector": {
            const tenants: TenantUse[] = [];
            const index = vectorIndexOptions(declaration.options ?? [], `V::${name}`, report, tenants);
            const fields = this.typeFields(declaration.fields, report, tenants);
            if (fresh) vectors.set(name, { kind: "vector", name, fields, index });
            break;
          }
          case "edge": {
            const decl = this.edge(declaration, report);
            if (fresh) edges.set(name, decl);
            pendingEdges.push({ ast: declaration, report });
            break;
          }
          default:
            unreachable(declaration, "syntax node");
        }
      }
    }
    // Endpoints may be declared in any file, so they are resolved once every file is in. After a syntax error
    // some declarations are missing, and "unknown type" errors would only be echoes of it.
    if (this.syntaxErrors === 0) {
      for (const { ast, report } of pendingEdges) resolveEndpoints(ast, report, nodes, vectors);
    }
    return { nodes, edges, vectors };
  }

  sortedDiagnostics(): Diagnostic[] {
    return byPlace(this.found);
  }

  sortedWarnings(): Warning[] {
    return byPlace(this.warned);
  }

  add(code: Diagnostic["code"], file: string, fileIndex: number, loc: SourceLocation, message: string): void {
    this.found.push({ diagnostic: { code, file, line: loc.line, column: loc.column, message }, fileIndex, offset: loc.offset });
  }

  addWarning(code: WarningCode, file: string, fileIndex: number, loc: SourceLocation, message: string): void {
    this.warned.push({ diagnostic: { severity: "warning", code, file, line: loc.line, column: loc.column, message }, fileIndex, offset: loc.offset });
  }

  private reporter(file: string, fileIndex: number): Reporter {
    return (loc, message) => this.add("schema_invalid", file, fileIndex, loc, message);
  }

  /** Records a type name; a second declaration of the same name within a kind is reported and skipped. */
  private registerName(seen: Map<string, Declared<SchemaDeclarationAst>>, decl: SchemaDeclarationAst, file: string, report: Reporter): boolean {
    const first = seen.get(decl.name.text);
    if (first !== undefined) {
      const prefix = { node: "N", edge: "E", vector: "V" }[decl.kind];
      report(decl.name.loc, `duplicate type ${prefix}::${decl.name.text}; first declared at ${first.file}:${first.loc.line}:${first.loc.column}`);
      return false;
    }
    seen.set(decl.name.text, { decl, file, loc: decl.name.loc });
    return true;
  }

  private edge(ast: EdgeDeclAst, report: Reporter): EdgeTypeDecl {
    let from: NameAst | undefined;
    let to: NameAst | undefined;
    let fields: ReadonlyMap<string, FieldDecl> | undefined;
    for (const item of ast.items) {
      const label = { from: "From", to: "To", properties: "Properties" }[item.kind];
      const repeated = item.kind === "from" ? from : item.kind === "to" ? to : fields;
      if (repeated !== undefined) {
        report(item.loc, `E::${ast.name.text} gives ${label} more than once`);
        continue;
      }
      if (item.kind === "from") from = item.target;
      else if (item.kind === "to") to = item.target;
      else fields = this.typeFields(item.fields, report, []);
    }
    if (from === undefined) report(ast.name.loc, `E::${ast.name.text} has no From: every edge type names its source type`);
    if (to === undefined) report(ast.name.loc, `E::${ast.name.text} has no To: every edge type names its target type`);
    return { kind: "edge", name: ast.name.text, from: from?.text ?? "", to: to?.text ?? "", unique: ast.unique, fields: fields ?? new Map() };
  }

  /** A type's own fields, then the tenant fields its index options name (which must be among them). */
  private typeFields(asts: readonly FieldAst[], report: Reporter, tenants: TenantUse[]): Map<string, FieldDecl> {
    this.tenants = tenants;
    const fields = this.fields(asts, report, 0);
    checkTenants(tenants, fields, report);
    return fields;
  }

  /** Where the index options of the type being checked record the tenant fields they name. */
  private tenants: TenantUse[] = [];

  /** Converts a field list; `depth` is 0 for a type's own fields and grows inside inline objects. */
  private fields(asts: readonly FieldAst[], report: Reporter, depth: number): Map<string, FieldDecl> {
    const out = new Map<string, FieldDecl>();
    const firstAt = new Map<string, SourceLocation>();
    for (const ast of asts) {
      const name = ast.name.text;
      const nameOk = checkFieldName(ast.name, depth === 0, report);
      const first = firstAt.get(name);
      if (first !== undefined) {
        report(ast.name.loc, `duplicate field ${name}; first declared at line ${first.line}, column ${first.column}`);
        continue;
      }
      firstAt.set(name, ast.name.loc);
      const decl = this.field(ast, report, depth);
      if (nameOk && decl !== undefined) out.set(name, decl);
    }
    return out;
  }

  private field(ast: FieldAst, report: Reporter, depth: number): FieldDecl | undefined {
    const decl: FieldDecl = { name: ast.name.text, type: { kind: "scalar", name: "String" }, required: false };
    let indexed: ModifierAst | undefined;
    for (const modifier of ast.modifiers) {
      const keyword = MODIFIER_KEYWORDS[modifier.kind];
      if (modifier.kind === "required") {
        if (decl.required) report(modifier.loc, `REQUIRED is given twice on ${decl.name}`);
        decl.required = true;
      } else if (depth > 0) {
        report(modifier.loc, `${keyword} is only allowed on top-level fields (nested paths are scan-only): ${decl.name}`);
      } else if (indexed !== undefined) {
        report(modifier.loc, `${decl.name} has more than one index modifier (${MODIFIER_KEYWORDS[indexed.kind]}, then ${keyword}); a field takes one of INDEX, UNIQUE INDEX, VECTOR INDEX, TEXT INDEX`);
      } else {
        indexed = modifier;
        this.indexModifier(decl, modifier, report);
      }
    }
    const type = this.type(ast.type, report, depth);
    if (type === undefined) return undefined;
    decl.type = type;
    if (indexed !== undefined && depth === 0) checkIndexFieldType(indexed, decl.name, type, report);
    if (ast.default !== undefined) {
      if (depth > 0) report(ast.default.loc, `DEFAULT is only allowed on top-level fields: ${decl.name}`);
      else decl.default = convertDefault(type, ast.default, decl.name, report);
    }
    return decl;
  }

  private indexModifier(decl: FieldDecl, modifier: ModifierAst, report: Reporter): void {
    const where = `${MODIFIER_KEYWORDS[modifier.kind]} on ${decl.name}`;
    switch (modifier.kind) {
      case "index":
      case "unique":
        decl.index = modifier.kind;
        return;
      case "vector_index":
        decl.vectorIndex = vectorIndexOptions(modifier.options, where, report, this.tenants);
        return;
      case "text_index":
        decl.textIndex = textIndexOptions(modifier.options, where, report, this.tenants);
        return;
      case "required":
        return;
      default:
        unreachable(modifier, "syntax node");
    }
  }

  /** A type written outside a declaration (a QUERY parameter's); modifiers and DEFAULTs cannot occur there. */
  typeOf(ast: TypeAst, report: Reporter): FieldType | undefined {
    return this.type(ast, report, 1);
  }

  private type(ast: TypeAst, report: Reporter, depth: number): FieldType | undefined {
    if (depth >= FIELD_TYPE_DEPTH_MAX) {
      report(ast.loc, `field types may nest at most ${FIELD_TYPE_DEPTH_MAX} levels deep`);
      return undefined;
    }
    switch (ast.kind) {
      case "named": {
        const name = scalarTypeOf(ast.name);
        if (name !== undefined) return { kind: "scalar", name };
        report(ast.loc, unknownTypeMessage(ast.name));
        return undefined;
      }
      case "array": {
        const element = this.type(ast.element, report, depth + 1);
        return element === undefined ? undefined : { kind: "array", element };
      }
      case "object":
        return { kind: "object", fields: this.fields(ast.fields, report, depth + 1) };
      default:
        return unreachable(ast, "syntax node");
    }
  }
}

const MODIFIER_KEYWORDS: Record<ModifierAst["kind"], string> = {
  index: "INDEX",
  unique: "UNIQUE INDEX",
  required: "REQUIRED",
  vector_index: "VECTOR INDEX",
  text_index: "TEXT INDEX",
};

/** From and To name a node type or a vector type; a name declared as both would be ambiguous. */
function resolveEndpoints(ast: EdgeDeclAst, report: Reporter, nodes: ReadonlyMap<string, unknown>, vectors: ReadonlyMap<string, unknown>): void {
  for (const item of ast.items) {
    if (item.kind === "properties") continue;
    const role = item.kind === "from" ? "From" : "To";
    const name = item.target.text;
    const isNode = nodes.has(name);
    const isVector = vectors.has(name);
    if (isNode && isVector) {
      report(item.target.loc, `E::${ast.name.text}: ${role} type ${name} is ambiguous: it is declared both as N::${name} and V::${name}`);
    } else if (!isNode && !isVector) {
      report(item.target.loc, `E::${ast.name.text}: ${role} names ${name}, which is not a declared node (N::) or vector (V::) type`);
    }
  }
}
