/**
 * Versioned schemas and their MIGRATIONs (HelixDB v2.3.5's `schema::N { .. }` and
 * `MIGRATION schema::A => schema::B { .. }`).
 *
 * A project may declare its types in version blocks; types outside any block belong to version 1. Each version is
 * checked as a schema of its own (schema-check.ts) and the highest is the project's schema, the one queries and
 * writes use. Between each two consecutive declared versions there must be one MIGRATION saying how a record of the
 * older version becomes a record of the newer one. This module checks those migrations against the two schemas and
 * compiles each into a plan of explicit field moves (`..` and the types a migration does not name expanded), so that
 * applying one to a record (`migrateProperties`) needs no schema and no decision: the writer that opens an older
 * database applies the plans in order (node/store/schema-migration.ts).
 *
 * What the checker refuses is what would lose or corrupt data silently: a type of the older version that the newer
 * one does not declare and the migration does not map (its records would be orphaned), a field whose type changes
 * without an `AS` cast, a cast between types no value converts between, a REQUIRED field of the newer version that
 * nothing fills.
 */
import type { RecordKind } from "../records.js";
import type { FieldDecl, FieldType, Schema, SchemaSource } from "../schema.js";
import { SilkError, unreachable } from "../errors.js";
import type { Properties, Value } from "../values.js";
import type { MigrationAst, MigrationFieldAst, SourceFileAst, SourceLocation, TypeAst, TypeDeclAst, VersionAst } from "./ast.js";
import { fieldTypeToString } from "./coerce.js";
import { convertDefault, type Reporter } from "./field-rules.js";
import { coerceScalar, isIntegerTypeName } from "./scalars.js";

/** The highest schema version a project may declare. */
export const SCHEMA_VERSION_MAX = 1_000_000;

/** The type declarations of one version in one file. */
export interface VersionDeclarations {
  readonly fileIndex: number;
  readonly declarations: readonly TypeDeclAst[];
}

type FileReporter = (fileIndex: number, loc: SourceLocation, message: string) => void;

interface Located<T> {
  readonly fileIndex: number;
  readonly ast: T;
}

export interface SplitVersions {
  /** Each declared version's declarations, in ascending version order; version 1 holds the types outside blocks. */
  readonly versions: ReadonlyMap<number, readonly VersionDeclarations[]>;
  /** Where each version was first written (its block, or the file of its first unversioned type). */
  readonly firstSeen: ReadonlyMap<number, Located<SourceLocation>>;
  readonly migrations: readonly Located<MigrationAst>[];
}

/** Sorts a project's type declarations into versions; a bad version number is reported and its block skipped. */
export function splitVersions(parsed: readonly { fileIndex: number; ast: SourceFileAst }[], report: FileReporter): SplitVersions {
  const buckets = new Map<number, VersionDeclarations[]>();
  const firstSeen = new Map<number, Located<SourceLocation>>();
  const migrations: Located<MigrationAst>[] = [];
  const add = (version: number, fileIndex: number, loc: SourceLocation, declarations: readonly TypeDeclAst[]): void => {
    const bucket = buckets.get(version) ?? [];
    bucket.push({ fileIndex, declarations });
    buckets.set(version, bucket);
    if (!firstSeen.has(version)) firstSeen.set(version, { fileIndex, ast: loc });
  };
  for (const { fileIndex, ast } of parsed) {
    const loose: TypeDeclAst[] = [];
    for (const declaration of ast.declarations) {
      switch (declaration.kind) {
        case "node":
        case "edge":
        case "vector":
          loose.push(declaration);
          break;
        case "schema_version": {
          const version = versionNumber(declaration.version, (loc, message) => report(fileIndex, loc, message));
          if (version !== undefined) add(version, fileIndex, declaration.loc, declaration.declarations);
          break;
        }
        case "migration":
          migrations.push({ fileIndex, ast: declaration });
          break;
        case "query":
          break;
        default:
          unreachable(declaration, "declaration");
      }
    }
    if (loose.length > 0) add(1, fileIndex, loose[0].name.loc, loose);
  }
  if (buckets.size === 0) buckets.set(1, []);
  const versions = new Map([...buckets].sort(([a], [b]) => a - b));
  return { versions, firstSeen, migrations };
}

function versionNumber(ast: VersionAst, report: Reporter): number | undefined {
  const value = Number(ast.text);
  if (!Number.isSafeInteger(value) || value < 1 || value > SCHEMA_VERSION_MAX) {
    report(ast.loc, `schema::${ast.text}: a schema version is an integer from 1 to ${SCHEMA_VERSION_MAX}`);
    return undefined;
  }
  return value;
}

/** What becomes of one field of a migrated record. */
export type FieldMove =
  /** The older record's field `source`, converted to `cast` when given; absent stays absent. */
  | { readonly kind: "copy"; readonly target: string; readonly source: string; readonly cast?: FieldType }
  /** A literal of the migration. */
  | { readonly kind: "value"; readonly target: string; readonly value: Value }
  /** `NOW`: when the migration runs. */
  | { readonly kind: "now"; readonly target: string };

/** A DEFAULT of the newer type, for a field the moves left absent. */
export type DefaultFill = Exclude<FieldMove, { kind: "copy" }>;

/** How the records of one type of the older version become records of the newer one. */
export interface MigrationPlanItem {
  readonly kind: RecordKind;
  /** The type's name in the older version. */
  readonly from: string;
  /** Its name in the newer version (the same unless renamed; edges keep theirs). */
  readonly to: string;
  /** Every field the migrated record gets, explicitly (`..` expanded). */
  readonly moves: readonly FieldMove[];
  /** The newer type's DEFAULTs, for the fields the moves left absent. */
  readonly defaults: readonly DefaultFill[];
  /** The newer type's REQUIRED fields: a migrated record without one is refused (`invalid_value`). */
  readonly required: readonly string[];
}

export interface CompiledMigration {
  readonly from: number;
  readonly to: number;
  /** One per type of the older version that needs rewriting (a type that stays as it was has none). */
  readonly items: readonly MigrationPlanItem[];
}

/** A project's schema versions: where a database stands is recorded with it, and these plans bring it forward. */
export interface SchemaHistory {
  /** The highest version: the schema queries and writes use. */
  readonly version: number;
  /** The lowest declared version: where a database that never recorded one is taken to be. */
  readonly first: number;
  /** One per two consecutive declared versions, in order. */
  readonly migrations: readonly CompiledMigration[];
}

/**
 * Checks the migrations between a project's versions and compiles them; undefined when any check failed (each
 * failure is reported).
 */
export function checkMigrations(
  split: SplitVersions,
  versions: ReadonlyMap<number, Schema>,
  files: readonly SchemaSource[],
  convertType: (ast: TypeAst, report: Reporter) => FieldType | undefined,
  report: FileReporter,
): SchemaHistory | undefined {
  const numbers = [...versions.keys()];
  let failed = false;
  const fail: FileReporter = (fileIndex, loc, message) => {
    failed = true;
    report(fileIndex, loc, message);
  };
  const byFrom = new Map<number, Located<MigrationAst>>();
  for (const migration of split.migrations) {
    const { fileIndex, ast } = migration;
    const at: Reporter = (loc, message) => fail(fileIndex, loc, message);
    const from = versionNumber(ast.from, at);
    const to = versionNumber(ast.to, at);
    if (from === undefined || to === undefined) {
      failed = true;
      continue;
    }
    if (!versions.has(from)) at(ast.from.loc, `MIGRATION from schema::${from}: no such version is declared (declared: ${numbers.map((n) => `schema::${n}`).join(", ")})`);
    else if (!versions.has(to)) at(ast.to.loc, `MIGRATION to schema::${to}: no such version is declared (declared: ${numbers.map((n) => `schema::${n}`).join(", ")})`);
    else if (to <= from) at(ast.to.loc, `MIGRATION schema::${from} => schema::${to} goes backwards: a migration goes to a higher version`);
    else {
      const next = numbers[numbers.indexOf(from) + 1];
      if (next !== to) at(ast.to.loc, `MIGRATION schema::${from} => schema::${to} skips schema::${next}: write one MIGRATION per step, schema::${from} => schema::${next}`);
      else if (byFrom.has(from)) {
        const first = byFrom.get(from)!;
        at(ast.loc, `a second MIGRATION schema::${from} => schema::${to}; the first is at ${files[first.fileIndex].file}:${first.ast.loc.line}:${first.ast.loc.column}`);
      } else byFrom.set(from, migration);
    }
  }
  const migrations: CompiledMigration[] = [];
  for (let i = 1; i < numbers.length; i++) {
    const [older, newer] = [numbers[i - 1], numbers[i]];
    const migration = byFrom.get(older);
    if (migration === undefined) {
      const seen = split.firstSeen.get(newer)!;
      fail(seen.fileIndex, seen.ast, `schema::${newer} has no MIGRATION schema::${older} => schema::${newer}: write one, saying how records of schema::${older} become records of schema::${newer}`);
      continue;
    }
    const at: Reporter = (loc, message) => fail(migration.fileIndex, loc, message);
    migrations.push(compileMigration(migration.ast, older, newer, versions.get(older)!, versions.get(newer)!, convertType, at));
  }
  if (failed) return undefined;
  return { version: numbers[numbers.length - 1], first: numbers[0], migrations };
}

const PREFIX: Record<RecordKind, string> = { node: "N", edge: "E", vector: "V" };

function typesOf(schema: Schema, kind: RecordKind): ReadonlyMap<string, { readonly fields: ReadonlyMap<string, FieldDecl> }> {
  return kind === "node" ? schema.nodes : kind === "edge" ? schema.edges : schema.vectors;
}

function compileMigration(
  ast: MigrationAst,
  older: number,
  newer: number,
  from: Schema,
  to: Schema,
  convertType: (ast: TypeAst, report: Reporter) => FieldType | undefined,
  report: Reporter,
): CompiledMigration {
  const items: MigrationPlanItem[] = [];
  const mappedSources = new Set<string>();
  const mappedTargets = new Set<string>();
  for (const item of ast.items) {
    const kind = item.source.kind;
    const name = item.source.name.text;
    const written = `${PREFIX[kind]}::${name}`;
    const source = typesOf(from, kind).get(name);
    if (source === undefined) {
      report(item.source.name.loc, `schema::${older} has no ${written}`);
      continue;
    }
    // Marked as soon as it is known, so that a refused mapping is not reported again as a type left unmapped.
    if (mappedSources.has(`${kind}:${name}`)) {
      report(item.source.loc, `${written} is mapped twice in MIGRATION schema::${older} => schema::${newer}`);
      continue;
    }
    mappedSources.add(`${kind}:${name}`);
    if (item.target !== null && item.target.kind !== kind) {
      report(item.target.loc, `${written} cannot become ${PREFIX[item.target.kind]}::${item.target.name.text}: a record keeps its kind`);
      continue;
    }
    const targetName = item.target?.name.text ?? name;
    const target = typesOf(to, kind).get(targetName);
    if (target === undefined) {
      report((item.target ?? item.source).name.loc, `schema::${newer} has no ${PREFIX[kind]}::${targetName}`);
      continue;
    }
    if (kind === "edge" && targetName !== name) {
      report(item.target!.name.loc, `${written} => E::${targetName}: renaming an edge type in a MIGRATION is not supported; keep the name (${written} => _::{ Properties: {..} })`);
      continue;
    }
    if ((kind === "edge") !== item.properties) {
      report(item.loc, kind === "edge" ? `${written}: an edge type's fields are mapped inside { Properties: {..} }` : `${written}: only an edge type's fields sit in { Properties: {..} }; map a ${kind} type's fields in {..}`);
      continue;
    }
    if (mappedTargets.has(`${kind}:${targetName}`)) {
      report((item.target ?? item.source).loc, `two types of schema::${older} become ${PREFIX[kind]}::${targetName}`);
      continue;
    }
    mappedTargets.add(`${kind}:${targetName}`);
    const moves = fieldMoves(item.fields, source.fields, target.fields, `${written} (schema::${older})`, `${PREFIX[kind]}::${targetName} (schema::${newer})`, convertType, report, item.loc);
    if (moves !== undefined) items.push(planItem(kind, name, targetName, moves, target.fields));
  }
  // A type the migration does not name keeps its name: the newer version must declare it, its fields keep their
  // values where the newer type declares them with the same type, and the others are dropped.
  for (const kind of ["node", "edge", "vector"] as const) {
    for (const [name, source] of typesOf(from, kind)) {
      if (mappedSources.has(`${kind}:${name}`)) continue;
      const written = `${PREFIX[kind]}::${name}`;
      const target = typesOf(to, kind).get(name);
      if (target === undefined || mappedTargets.has(`${kind}:${name}`)) {
        report(ast.loc, `schema::${newer} has no ${written} of its own and MIGRATION schema::${older} => schema::${newer} does not map it: its records would be lost; map it to a type of schema::${newer} (${written} => ${PREFIX[kind]}::Other {..})`);
        continue;
      }
      const spread: MigrationFieldAst[] = [{ kind: "spread", loc: ast.loc }];
      const moves = fieldMoves(spread, source.fields, target.fields, `${written} (schema::${older})`, `${written} (schema::${newer})`, convertType, report, ast.loc);
      if (moves === undefined) continue;
      const unchanged = moves.length === source.fields.size && moves.length === target.fields.size && moves.every((move) => move.kind === "copy" && move.cast === undefined);
      if (!unchanged) items.push(planItem(kind, name, name, moves, target.fields));
    }
  }
  return { from: older, to: newer, items };
}

function planItem(kind: RecordKind, from: string, to: string, moves: FieldMove[], fields: ReadonlyMap<string, FieldDecl>): MigrationPlanItem {
  const targets = new Set(moves.map((move) => move.target));
  const defaults: DefaultFill[] = [];
  for (const field of fields.values()) {
    if (field.default === undefined || targets.has(field.name)) continue;
    defaults.push(field.default.kind === "now" ? { kind: "now", target: field.name } : { kind: "value", target: field.name, value: field.default.value });
  }
  const required = [...fields.values()].filter((field) => field.required).map((field) => field.name);
  return { kind, from, to, moves, defaults, required };
}

/** The moves of one mapping; undefined when any field is refused (reported). */
function fieldMoves(
  fields: readonly MigrationFieldAst[],
  source: ReadonlyMap<string, FieldDecl>,
  target: ReadonlyMap<string, FieldDecl>,
  sourceName: string,
  targetName: string,
  convertType: (ast: TypeAst, report: Reporter) => FieldType | undefined,
  report: Reporter,
  itemLoc: SourceLocation,
): FieldMove[] | undefined {
  let ok = true;
  const fault: Reporter = (loc, message) => {
    ok = false;
    report(loc, message);
  };
  const moves: FieldMove[] = [];
  const targets = new Set<string>();
  let spread = false;
  for (const field of fields) {
    if (field.kind === "spread") {
      spread = true;
      continue;
    }
    const name = field.name.text;
    const declared = target.get(name);
    if (declared === undefined) {
      fault(field.name.loc, `${targetName} has no field ${name}`);
      continue;
    }
    if (targets.has(name)) {
      fault(field.name.loc, `${targetName}'s field ${name} is given twice`);
      continue;
    }
    targets.add(name);
    const value = field.value;
    if (value.kind === "literal") {
      const converted = convertDefault(declared.type, value.literal, `field ${declared.name}`, fault);
      if (converted !== undefined) moves.push(converted.kind === "now" ? { kind: "now", target: name } : { kind: "value", target: name, value: converted.value });
      continue;
    }
    const from = source.get(value.name.text);
    if (from === undefined) {
      fault(value.name.loc, `${sourceName} has no field ${value.name.text}`);
      continue;
    }
    if (value.cast === undefined) {
      if (!sameType(from.type, declared.type)) {
        fault(value.name.loc, `${name}: ${value.name.text} changes type from ${fieldTypeToString(from.type)} to ${fieldTypeToString(declared.type)}; convert it with ${value.name.text} AS ${fieldTypeToString(declared.type)}`);
        continue;
      }
      moves.push({ kind: "copy", target: name, source: value.name.text });
      continue;
    }
    const cast = convertType(value.cast, fault);
    if (cast === undefined) continue;
    if (!sameType(cast, declared.type)) {
      fault(value.cast.loc, `${name}: AS ${fieldTypeToString(cast)} is not the type of ${targetName}'s field ${name}, ${fieldTypeToString(declared.type)}`);
      continue;
    }
    if (from.type.kind !== "scalar" || cast.kind !== "scalar" || !castable(from.type.name, cast.name)) {
      fault(value.cast.loc, `${name}: no value converts from ${fieldTypeToString(from.type)} to ${fieldTypeToString(cast)} (AS converts between scalars: numbers, and String to and from any scalar)`);
      continue;
    }
    moves.push(sameType(from.type, cast) ? { kind: "copy", target: name, source: value.name.text } : { kind: "copy", target: name, source: value.name.text, cast });
  }
  if (spread) {
    for (const [name, declared] of target) {
      if (targets.has(name)) continue;
      const from = source.get(name);
      if (from === undefined) continue;
      if (!sameType(from.type, declared.type)) {
        fault(itemLoc, `${sourceName}'s field ${name} changes type from ${fieldTypeToString(from.type)} to ${fieldTypeToString(declared.type)} in ${targetName}; map it in the MIGRATION: ${name}: ${name} AS ${fieldTypeToString(declared.type)}`);
        continue;
      }
      targets.add(name);
      moves.push({ kind: "copy", target: name, source: name });
    }
  }
  for (const declared of target.values()) {
    if (declared.required && declared.default === undefined && !targets.has(declared.name)) {
      fault(itemLoc, `${targetName}'s field ${declared.name} is REQUIRED and nothing in the MIGRATION fills it: map it, or give it a DEFAULT`);
    }
  }
  return ok ? moves : undefined;
}

function sameType(a: FieldType, b: FieldType): boolean {
  switch (a.kind) {
    case "scalar":
      return b.kind === "scalar" && a.name === b.name;
    case "array":
      return b.kind === "array" && sameType(a.element, b.element);
    case "object":
      return b.kind === "object" && a.fields.size === b.fields.size && [...a.fields].every(([name, field]) => b.fields.has(name) && sameType(field.type, b.fields.get(name)!.type));
    default:
      return unreachable(a, "field type");
  }
}

type ScalarName = Extract<FieldType, { kind: "scalar" }>["name"];

const NUMERIC = (name: ScalarName): boolean => name === "F32" || name === "F64" || name === "ID" || isIntegerTypeName(name);

/** Whether `AS` converts values of `from` to `to`: numbers among numbers, and String to and from any scalar. */
function castable(from: ScalarName, to: ScalarName): boolean {
  if (from === to || from === "String" || to === "String") return true;
  return NUMERIC(from) && NUMERIC(to);
}

/**
 * The properties a record of the older type has as a record of the newer one. Throws `invalid_value` (naming
 * `where`) for a value a cast cannot convert, or a REQUIRED field left without a value.
 */
export function migrateProperties(item: MigrationPlanItem, props: Properties, now: Date, where: string): Properties {
  const out: Properties = {};
  for (const move of item.moves) {
    if (move.kind === "value") out[move.target] = move.value;
    else if (move.kind === "now") out[move.target] = now;
    else {
      const value = props[move.source];
      if (value === undefined) continue;
      out[move.target] = move.cast === undefined || value === null ? value : castValue(value, move.cast, `${where}, field ${move.source}`);
    }
  }
  for (const fill of item.defaults) {
    if (out[fill.target] !== undefined) continue;
    out[fill.target] = fill.kind === "now" ? now : fill.value;
  }
  for (const name of item.required) {
    if (out[name] === undefined || out[name] === null) throw new SilkError("invalid_value", `${where}: the REQUIRED field ${name} gets no value from the migration; map it or give it a DEFAULT`);
  }
  return out;
}

function castValue(value: Value, type: FieldType, where: string): Value {
  const name = (type as Extract<FieldType, { kind: "scalar" }>).name;
  try {
    if (name === "String") return typeof value === "string" ? value : value instanceof Date ? value.toISOString() : String(value);
    if (typeof value === "string") {
      if (name === "Boolean") {
        if (value === "true" || value === "false") return value === "true";
      } else if (name === "Date") return coerceScalar("Date", value, where);
      else if (name === "F32" || name === "F64") {
        if (/^\s*-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?\s*$/.test(value)) return coerceScalar(name, Number(value), where);
      } else if (/^\s*-?[0-9]+\s*$/.test(value)) return coerceScalar(name, BigInt(value.trim()), where);
      throw new SilkError("invalid_value", `${where}: "${value.length > 40 ? `${value.slice(0, 40)}...` : value}" is not a ${name}`);
    }
    return coerceScalar(name, value, where);
  } catch (cause) {
    if (cause instanceof SilkError && cause.code !== "invalid_value") throw new SilkError("invalid_value", `${where}: AS ${name}: ${cause.message}`);
    throw cause;
  }
}
