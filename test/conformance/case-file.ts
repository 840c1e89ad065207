/**
 * The `.hxt` case format of the HelixQL conformance suite (README.md in this folder describes it): parsing a file
 * into cases, and rewriting the expectations of a file from recorded answers (`CONFORMANCE_UPDATE=1`). Nothing here
 * runs a query; conformance.test.ts does, in every mode.
 */
import { mayHoldUnsafeInteger, parseLossless } from "../../gateway/request-json.js";

/** One call of a query: its name and its parameters (JSON, with `$n.path` strings naming earlier answers). */
export interface Call {
  readonly name: string;
  readonly parameters: unknown;
  /** 1-based line of the call in the case file. */
  readonly line: number;
}

export type Expectation =
  | { readonly kind: "value"; readonly value: unknown }
  | { readonly kind: "error"; readonly code: string; readonly status?: number; readonly at?: string; readonly message?: string };

/** A checked call and what it must answer; `lines` is where its expectation is written (for rewriting). */
export interface CheckedCall {
  readonly call: Call;
  readonly expect: Expectation;
  readonly lines: { readonly first: number; readonly last: number };
}

export interface Case {
  readonly name: string;
  readonly line: number;
  /** The HelixQL sources the database opens with: the file's (or the case's own) schema, then the case's queries. */
  readonly sources: readonly { readonly file: string; readonly text: string }[];
  readonly setup: readonly Call[];
  readonly calls: readonly CheckedCall[];
  /** A load-time error (the sources do not check); such a case has no calls. */
  readonly loadError?: CheckedCall;
  /** Why the recorded answer is believed wrong (`-- bug:`); the case asserts the current answer until it is fixed. */
  readonly bug?: string;
  /** The warnings loading the project gives, as `code file:line:column` (`-- warning CODE [FILE:]LINE:COL`), in order. */
  readonly warnings: readonly string[];
  /** Calls run before `setup` (not counted by `$n` references): the file's `-- schemaless` index DDL in that variant. */
  readonly prelude: readonly Call[];
  /** The other variant of a case written for one (README.md, "Schemaless and with a schema"); absent for the case as written. */
  readonly variant?: "schemaless" | "with a schema";
  /** `-- single REASON`: the case runs only as written, not in its file's other variant. */
  readonly single?: string;
}

/** The names diagnostics give the two sources of a case; `-- at L:C` points into QUERY_FILE. */
export const SCHEMA_FILE = "schema.hx";
export const QUERY_FILE = "query.hx";

interface Section {
  readonly header: string;
  readonly argument: string;
  readonly line: number;
  readonly body: { readonly text: string; readonly line: number }[];
}

/** Splits lines into `=== case` groups of `-- section` blocks; `#` lines are comments, blank lines end nothing. */
function sections(lines: readonly string[], from: number, to: number): Section[] {
  const found: Section[] = [];
  for (let index = from; index < to; index++) {
    const text = lines[index];
    if (text.startsWith("#")) continue;
    const header = /^-- ([a-z]+):?(?: (.*))?$/.exec(text);
    if (header !== null) found.push({ header: header[1], argument: (header[2] ?? "").trim(), line: index + 1, body: [] });
    else if (found.length > 0) found[found.length - 1].body.push({ text, line: index + 1 });
    else if (text.trim() !== "") throw new Error(`line ${index + 1}: text outside any section: ${text}`);
  }
  return found;
}

function bodyText(section: Section): string {
  return section.body.map((line) => line.text).join("\n").trim();
}

/** The name of a call that sends its JSON as a whole `/v2/query` request (an operation tree), not a QUERY's parameters. */
export const TREE_CALL = "/v2/query";

/**
 * `Name` or `Name {json}` (or `/v2/query {tree}`); the JSON may continue on the following lines of the section. A
 * tree is read as the gateway reads a body, so an integer beyond 2^53 in it stays exact (a bigint).
 */
function parseCall(text: string, line: number): Call {
  const match = /^([A-Za-z_][A-Za-z0-9_]*|\/v2\/query)(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (match === null) throw new Error(`line ${line}: a call is a query name (or /v2/query) and optional JSON parameters: ${text}`);
  try {
    const json = match[2];
    if (json === undefined) return { name: match[1], parameters: {}, line };
    return { name: match[1], parameters: match[1] === TREE_CALL && mayHoldUnsafeInteger(json) ? parseLossless(json) : JSON.parse(json), line };
  } catch (cause) {
    throw new Error(`line ${line}: the parameters are not JSON: ${(cause as Error).message}`);
  }
}

function parseError(section: Section): { code: string; status?: number } {
  const match = /^([a-z_]+)(?: ([0-9]{3}))?$/.exec(section.argument);
  if (match === null) throw new Error(`line ${section.line}: write -- error <code> [status]`);
  return match[2] === undefined ? { code: match[1] } : { code: match[1], status: Number(match[2]) };
}

/** Parses one case from its sections; `schema` is the file's shared schema section, if any. */
function parseCase(name: string, line: number, parts: readonly Section[], schema: string | undefined): Case {
  let caseSchema = schema;
  let query = "";
  let bug: string | undefined;
  let single: string | undefined;
  const setup: Call[] = [];
  const calls: CheckedCall[] = [];
  let pending: Call | undefined;
  let loadError: CheckedCall | undefined;
  const warnings: string[] = [];
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index];
    const where = `line ${part.line}`;
    switch (part.header) {
      case "schema":
        caseSchema = bodyText(part);
        break;
      case "query":
        query = part.body.map((l) => l.text).join("\n");
        break;
      case "bug":
        bug = part.argument;
        break;
      case "single":
        if (part.argument === "") throw new Error(`${where}: write -- single <why the case runs in one variant only>`);
        single = part.argument;
        break;
      case "warning": {
        const match = /^([a-z_]+) ((?:[A-Za-z0-9_.-]+\.hx:)?[0-9]+:[0-9]+)$/.exec(part.argument);
        if (match === null) throw new Error(`${where}: write -- warning <code> [FILE:]LINE:COL`);
        warnings.push(`${match[1]} ${match[2].includes(".hx:") ? match[2] : `${QUERY_FILE}:${match[2]}`}`);
        break;
      }
      case "setup":
        for (const l of part.body) if (l.text.trim() !== "" && !l.text.startsWith("#")) setup.push(parseCall(l.text, l.line));
        break;
      case "call":
        if (pending !== undefined) throw new Error(`${where}: the call before has no -- expect or -- error`);
        pending = parseCall(bodyText(part), part.line + 1);
        break;
      case "expect": {
        if (pending === undefined) throw new Error(`${where}: -- expect without a -- call before it`);
        const last = part.body.length === 0 ? part.line : part.body[part.body.length - 1].line;
        calls.push({ call: pending, expect: { kind: "value", value: JSON.parse(bodyText(part)) }, lines: { first: part.line, last } });
        pending = undefined;
        break;
      }
      case "error": {
        let expect: Expectation = { kind: "error", ...parseError(part) };
        let last = part.line;
        while (parts[index + 1]?.header === "at" || parts[index + 1]?.header === "message") {
          const detail = parts[++index];
          expect = { ...expect, [detail.header]: detail.argument };
          last = detail.line;
        }
        const checked: CheckedCall = { call: pending ?? { name: "", parameters: {}, line: part.line }, expect, lines: { first: part.line, last } };
        if (pending === undefined) loadError = checked;
        else calls.push(checked);
        pending = undefined;
        break;
      }
      default:
        throw new Error(`${where}: unknown section -- ${part.header}`);
    }
  }
  if (pending !== undefined) throw new Error(`case ${name}: the last call has no -- expect or -- error`);
  if (loadError !== undefined && (calls.length > 0 || setup.length > 0)) throw new Error(`case ${name}: a load-time error case has no calls`);
  if (loadError === undefined && calls.length === 0) throw new Error(`case ${name}: nothing is checked`);
  const sources = [
    ...(caseSchema === undefined || caseSchema === "" ? [] : [{ file: SCHEMA_FILE, text: caseSchema + "\n" }]),
    ...(query.trim() === "" ? [] : [{ file: QUERY_FILE, text: query.replace(/^\n+/, "") + "\n" }]),
  ];
  return {
    name, line, sources, setup, calls, warnings, prelude: [],
    ...(loadError === undefined ? {} : { loadError }), ...(bug === undefined ? {} : { bug }), ...(single === undefined ? {} : { single }),
  };
}

/** The file-level sections that give a file's cases their other variant (README.md, "Schemaless and with a schema"). */
interface Variants {
  /** `-- declare`: HelixQL declarations; every schemaless case also runs against a database opened with them. */
  readonly declare?: string;
  /** `-- schemaless`: calls (index DDL); every case of a file with a `-- schema` also runs schemaless after them. */
  readonly schemaless?: readonly Call[];
}

/**
 * A case's run in its file's other variant, when it has one: with the file's declarations (a schemaless case), or
 * schemaless after the file's `-- schemaless` calls (a case whose calls are all trees: a QUERY needs its schema).
 */
function otherVariant(testCase: Case, variants: Variants): Case | undefined {
  if (testCase.single !== undefined || testCase.loadError !== undefined) return undefined;
  if (variants.declare !== undefined && testCase.sources.length === 0) {
    return { ...testCase, name: `${testCase.name} (with a schema)`, sources: [{ file: SCHEMA_FILE, text: variants.declare + "\n" }], variant: "with a schema" };
  }
  const trees = [...testCase.setup, ...testCase.calls.map((checked) => checked.call)].every((call) => call.name === TREE_CALL);
  if (variants.schemaless !== undefined && testCase.sources.length > 0 && trees && testCase.warnings.length === 0) {
    return { ...testCase, name: `${testCase.name} (schemaless)`, sources: [], prelude: variants.schemaless, variant: "schemaless" };
  }
  return undefined;
}

/** Parses a whole `.hxt` file. Errors name the line at fault. */
export function parseCaseFile(text: string): Case[] {
  const lines = text.split("\n");
  const starts: number[] = [];
  lines.forEach((l, index) => {
    if (l.startsWith("=== ")) starts.push(index);
  });
  const preamble = sections(lines, 0, starts[0] ?? lines.length);
  const unexpected = preamble.find((part) => !["schema", "declare", "schemaless"].includes(part.header));
  if (unexpected !== undefined) throw new Error(`line ${unexpected.line}: before the first case only -- schema, -- declare and -- schemaless are allowed`);
  const section = (header: string): Section | undefined => preamble.find((part) => part.header === header);
  const schemaSection = section("schema");
  const schema = schemaSection === undefined ? undefined : bodyText(schemaSection);
  const declareSection = section("declare");
  const schemalessSection = section("schemaless");
  if (declareSection !== undefined && schemaSection !== undefined) throw new Error(`line ${declareSection.line}: -- declare is for a schemaless file; a file with a -- schema takes -- schemaless`);
  if (schemalessSection !== undefined && schemaSection === undefined) throw new Error(`line ${schemalessSection.line}: -- schemaless is for a file with a -- schema; a schemaless file takes -- declare`);
  const variants: Variants = {
    ...(declareSection === undefined ? {} : { declare: bodyText(declareSection) }),
    ...(schemalessSection === undefined
      ? {}
      : { schemaless: schemalessSection.body.filter((l) => l.text.trim() !== "" && !l.text.startsWith("#")).map((l) => parseCall(l.text, l.line)) }),
  };
  const cases: Case[] = [];
  const names = new Set<string>();
  starts.forEach((start, index) => {
    const name = lines[start].slice(4).trim();
    if (names.has(name)) throw new Error(`line ${start + 1}: duplicate case name ${name}`);
    names.add(name);
    const parts = sections(lines, start + 1, starts[index + 1] ?? lines.length);
    const testCase = parseCase(name, start + 1, parts, schema);
    cases.push(testCase);
    const other = otherVariant(testCase, variants);
    if (other !== undefined) cases.push(other);
  });
  return cases;
}

// ---- Rewriting expectations (CONFORMANCE_UPDATE=1) ----------------------------------------------------------------

/** What a call answered: a JSON value, or an error code with its status. */
export type Answer = { readonly kind: "value"; readonly value: unknown } | { readonly kind: "error"; readonly code: string; readonly status: number };

const LINE_WIDTH_MAX = 110;

/** JSON on one line, spaced the way the cases are written by hand: `{"a": 1, "b": [1, 2]}`. */
function flatJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(flatJson).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    return `{${Object.entries(value).map(([key, member]) => `${JSON.stringify(key)}: ${flatJson(member)}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}

/** JSON on one line when it fits, else one element or member per line, indented by two spaces per level. */
export function formatJson(value: unknown, indent = ""): string {
  const flat = flatJson(value);
  if (flat.length + indent.length <= LINE_WIDTH_MAX || value === null || typeof value !== "object") return flat;
  const inner = indent + "  ";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((element) => inner + formatJson(element, inner)).join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  return `{\n${entries.map(([key, member]) => `${inner}${JSON.stringify(key)}: ${formatJson(member, inner)}`).join(",\n")}\n${indent}}`;
}

function answerLines(answer: Answer, expect: Expectation): string[] {
  if (answer.kind === "value") return ["-- expect", ...formatJson(answer.value).split("\n")];
  const details = expect.kind === "error" ? [expect.at === undefined ? [] : [`-- at ${expect.at}`], expect.message === undefined ? [] : [`-- message ${expect.message}`]].flat() : [];
  return [`-- error ${answer.code}${answer.status === 0 ? "" : ` ${answer.status}`}`, ...details];
}

/** The file's text with each recorded call's expectation replaced by its answer (status 0: a load-time error). */
export function rewriteCaseFile(text: string, answers: readonly { readonly checked: CheckedCall; readonly answer: Answer }[]): string {
  const lines = text.split("\n");
  const ordered = [...answers].sort((a, b) => b.checked.lines.first - a.checked.lines.first);
  for (const { checked, answer } of ordered) {
    const { first, last } = checked.lines;
    // Keep the blank lines that separate this expectation from the next case.
    let end = last;
    while (end > first && lines[end - 1].trim() === "") end--;
    lines.splice(first - 1, end - first + 1, ...answerLines(answer, checked.expect));
  }
  return lines.join("\n");
}
