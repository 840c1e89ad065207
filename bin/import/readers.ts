/**
 * File readers of `silk import`: each turns one input file into a stream of rows with their 1-based line numbers,
 * reading line by line (readline over a file stream) so that a file of any size is parsed in constant memory.
 * Formats are chosen by extension: `.jsonl`/`.ndjson` (one JSON row per line), `.csv` (a header line, then node
 * or edge records), `.txt`/`.tsv` (SNAP-style whitespace-separated edge lists). docs/IMPORT.md describes them.
 */
import { createReadStream, type ReadStream } from "node:fs";
import { basename, extname } from "node:path";
import { createInterface } from "node:readline";
import { SilkError, unreachable } from "../../protocol/errors.js";
import type { FieldDecl, Schema } from "../../protocol/schema.js";
import { CsvRecordParser } from "./csv.js";
import { badRow, cellValue, checkLabelText, declaredFields, LABEL_PATTERN, parseJsonRow, RowError, type ImportRow } from "./rows.js";

export type FileFormat = "jsonl" | "csv" | "edge_list";

export interface ReaderOptions {
  readonly schema: Schema | undefined;
  /** `--label`: the label of CSV files that have no `label` column (otherwise the file name gives it). */
  readonly csvLabel?: string;
  /** `--edge-list`: the edge label of `.txt`/`.tsv` edge lists. */
  readonly edgeListLabel?: string;
  /** `--node-label`: the label of nodes an edge list creates on first sight. */
  readonly nodeLabel?: string;
}

export interface ReadRow {
  readonly line: number;
  readonly row: ImportRow;
}

const FORMATS: Readonly<Record<string, FileFormat>> = {
  ".jsonl": "jsonl",
  ".ndjson": "jsonl",
  ".csv": "csv",
  ".txt": "edge_list",
  ".tsv": "edge_list",
};

/** The format of a file from its extension; throws invalid_option for an extension the importer does not read. */
export function formatOf(path: string, options: ReaderOptions): FileFormat {
  const format = FORMATS[extname(path).toLowerCase()];
  if (format === undefined) {
    throw new SilkError("invalid_option", `${path}: unknown file type; silk import reads .jsonl, .ndjson, .csv, and .txt/.tsv edge lists`);
  }
  if (format === "edge_list" && (options.edgeListLabel === undefined || options.nodeLabel === undefined)) {
    throw new SilkError("invalid_option", `${path} is an edge list: give its edge label with --edge-list LABEL and its node label with --node-label LABEL`);
  }
  for (const [option, label] of [["--edge-list", options.edgeListLabel], ["--node-label", options.nodeLabel]] as const) {
    if (label !== undefined && !LABEL_PATTERN.test(label)) {
      throw new SilkError("invalid_option", `${option} ${JSON.stringify(label)} is not an identifier (letters, digits and _, not starting with a digit)`);
    }
  }
  return format;
}

/** Rows of one file, in file order. Row problems are thrown as RowError with the file and line. */
export function readRows(path: string, format: FileFormat, options: ReaderOptions, onStream: (stream: ReadStream) => void): AsyncGenerator<ReadRow> {
  const lines = readLines(path, onStream);
  switch (format) {
    case "jsonl":
      return jsonlRows(path, lines);
    case "csv":
      return csvRows(path, lines, options);
    case "edge_list":
      return edgeListRows(path, lines, options.edgeListLabel ?? "", options.nodeLabel ?? "");
    default:
      return unreachable(format, "file format");
  }
}

interface Line {
  readonly number: number;
  readonly text: string;
}

async function* readLines(path: string, onStream: (stream: ReadStream) => void): AsyncGenerator<Line> {
  const stream = createReadStream(path);
  onStream(stream);
  // readline treats \r\n as one break (crlfDelay), so CRLF files read the same as LF files.
  const reader = createInterface({ input: stream, crlfDelay: Infinity });
  let number = 0;
  try {
    for await (const text of reader) {
      number += 1;
      yield { number, text: number === 1 && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text };
    }
  } catch (cause) {
    throw new SilkError("invalid_option", `cannot read ${path}: ${(cause as Error).message}`);
  } finally {
    reader.close();
    stream.destroy();
  }
}

function located(path: string, line: number, cause: unknown): unknown {
  return cause instanceof SilkError ? new RowError(path, line, cause) : cause;
}

async function* jsonlRows(path: string, lines: AsyncGenerator<Line>): AsyncGenerator<ReadRow> {
  for await (const { number, text } of lines) {
    if (text.trim() === "") continue;
    try {
      yield { line: number, row: parseJsonRow(text) };
    } catch (cause) {
      throw located(path, number, cause);
    }
  }
}

async function* edgeListRows(path: string, lines: AsyncGenerator<Line>, label: string, nodeLabel: string): AsyncGenerator<ReadRow> {
  for await (const { number, text } of lines) {
    const trimmed = text.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    // Columns after the second (weights, timestamps) are ignored: the edge list gives structure only.
    const [from, to] = trimmed.split(/\s+/, 2);
    if (to === undefined) throw new RowError(path, number, badRow("an edge list line needs two node keys separated by whitespace"));
    yield { line: number, row: { kind: "edge", label, from: { key: from }, to: { key: to }, props: {}, createNodeLabel: nodeLabel } };
  }
}

/** What a CSV header says about its file. */
interface CsvLayout {
  readonly kind: "node" | "edge";
  readonly width: number;
  /** `key` for node files; `from` and `to` for edge files. */
  readonly keyColumn: number;
  readonly fromColumn: number;
  readonly toColumn: number;
  /** The `label` column, or -1 when every row takes `fixedLabel`. */
  readonly labelColumn: number;
  readonly fixedLabel: string;
  readonly properties: readonly { readonly column: number; readonly name: string }[];
}

/** The label of a CSV file without a `label` column: `--label`, else the file name up to its first dot. */
export function csvFileLabel(path: string, csvLabel: string | undefined): string {
  if (csvLabel !== undefined) return csvLabel;
  const name = basename(path);
  const dot = name.indexOf(".");
  return dot < 0 ? name : name.slice(0, dot);
}

function csvLayout(header: readonly string[], path: string, csvLabel: string | undefined): CsvLayout {
  const names = header.map((name) => name.trim());
  const seen = new Set<string>();
  for (const name of names) {
    if (name === "") throw badRow("the header has an empty column name");
    if (seen.has(name)) throw badRow(`the header names column ${JSON.stringify(name)} twice`);
    seen.add(name);
  }
  const fromColumn = names.indexOf("from");
  const toColumn = names.indexOf("to");
  const kind = fromColumn >= 0 && toColumn >= 0 ? "edge" : "node";
  const keyColumn = kind === "node" ? names.indexOf("key") : -1;
  if (kind === "node" && keyColumn < 0) {
    throw badRow("the header has neither a key column (a node file) nor from and to columns (an edge file)");
  }
  const labelColumn = names.indexOf("label");
  const fixedLabel = csvFileLabel(path, csvLabel);
  if (labelColumn < 0) {
    const source = csvLabel === undefined ? "the label taken from the file name (add a label column or give --label)" : "--label";
    checkLabelText(fixedLabel, source);
  }
  const structural = new Set(kind === "node" ? ["key", "label"] : ["from", "to", "label"]);
  return {
    kind,
    width: names.length,
    keyColumn,
    fromColumn,
    toColumn,
    labelColumn,
    fixedLabel,
    properties: names.flatMap((name, column) => (structural.has(name) ? [] : [{ column, name }])),
  };
}

async function* csvRows(path: string, lines: AsyncGenerator<Line>, options: ReaderOptions): AsyncGenerator<ReadRow> {
  const parser = new CsvRecordParser();
  let layout: CsvLayout | undefined;
  const fieldsByLabel = new Map<string, ReadonlyMap<string, FieldDecl> | undefined>();
  let recordLine = 0;
  for await (const { number, text } of lines) {
    if (!parser.pending) recordLine = number;
    try {
      const cells = parser.pushLine(text);
      if (cells === undefined) continue;
      if (layout === undefined) {
        layout = csvLayout(cells, path, options.csvLabel);
        continue;
      }
      // A blank line between records is not a record with one empty cell.
      if (cells.length === 1 && cells[0] === "" && layout.width > 1) continue;
      yield { line: recordLine, row: csvRow(cells, layout, options.schema, fieldsByLabel) };
    } catch (cause) {
      throw located(path, recordLine, cause);
    }
  }
  if (parser.pending) throw new RowError(path, recordLine, badRow("a quoted field is not closed before the end of the file"));
  if (layout === undefined) throw new RowError(path, 1, badRow("the file is empty: a CSV file starts with a header line"));
}

function csvRow(
  cells: readonly string[],
  layout: CsvLayout,
  schema: Schema | undefined,
  fieldsByLabel: Map<string, ReadonlyMap<string, FieldDecl> | undefined>,
): ImportRow {
  if (cells.length !== layout.width) throw badRow(`the record has ${cells.length} fields, the header ${layout.width}`);
  const label = layout.labelColumn >= 0 ? cells[layout.labelColumn].trim() : layout.fixedLabel;
  if (label === "") throw badRow("the label column is empty");
  let fields = fieldsByLabel.get(label);
  if (fields === undefined && !fieldsByLabel.has(label)) {
    checkLabelText(label, "the label column");
    fields = declaredFields(schema, layout.kind, label);
    fieldsByLabel.set(label, fields);
  }
  // Empty cells are absent properties: CSV cannot tell an empty string from a missing value.
  const props: Record<string, unknown> = {};
  for (const { column, name } of layout.properties) {
    const cell = cells[column];
    if (cell !== "") props[name] = cellValue(cell, fields?.get(name));
  }
  if (layout.kind === "node") {
    const key = cells[layout.keyColumn];
    if (key === "") throw badRow("the key column is empty");
    return { kind: "node", label, key, keyValue: key, props };
  }
  const from = cells[layout.fromColumn];
  const to = cells[layout.toColumn];
  if (from === "" || to === "") throw badRow(`the ${from === "" ? "from" : "to"} column is empty`);
  return { kind: "edge", label, from: { key: from }, to: { key: to }, props };
}
