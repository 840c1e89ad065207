/**
 * `silk import`: bulk loads nodes, edges and `V::` vectors (JSONL) from JSONL, CSV and edge-list files into an on-disk database. Files
 * are read in the order given, row by row, and committed in batches (one transaction each); the first bad row
 * stops the import with `file:line: code: message`, leaving the earlier batches committed and nothing of its own.
 * The formats are described in docs/IMPORT.md.
 */
import { statSync } from "node:fs";
import { Database } from "../../runtime/embedded.js";
import { asSilkError, SilkError } from "../../protocol/errors.js";
import { loadSchemaSources } from "../schema-files.js";
import { ImportBatcher } from "./batcher.js";
import { formatBytes, formatCount, ImportProgress, type ProgressOutput } from "./progress.js";
import { formatOf, readRows, type FileFormat, type ReaderOptions } from "./readers.js";
import { RowError } from "./rows.js";

export interface ImportCommandOptions {
  readonly data: string;
  readonly schema?: string;
  readonly partitions?: number;
  readonly batchSize: number;
  readonly label?: string;
  readonly edgeList?: string;
  readonly nodeLabel?: string;
  readonly keyProperty?: string;
  readonly progress: boolean;
}

export interface CommandIo {
  readonly stdout: ProgressOutput;
  readonly stderr: ProgressOutput;
  readonly now: () => number;
}

/** Exit codes: 0 imported everything, 1 stopped at an error, 130 interrupted (SIGINT/SIGTERM). */
export async function runImport(files: readonly string[], options: ImportCommandOptions, io: CommandIo): Promise<number> {
  let database: Database | undefined;
  const interrupt = { requested: false };
  const onSignal = (): void => {
    interrupt.requested = true;
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let batcher: ImportBatcher | undefined;
  try {
    const inputs = checkInputs(files, options);
    database = await Database.open({
      storage: { disk: options.data },
      schema: options.schema === undefined ? undefined : loadSchemaSources(options.schema),
      partitions: options.partitions,
    });
    batcher = new ImportBatcher({ database, schema: database.schema, batchSize: options.batchSize, keyProperty: options.keyProperty });
    const totalBytes = inputs.reduce((sum, input) => sum + input.bytes, 0);
    const progress = new ImportProgress({ output: io.stderr, now: io.now, totalBytes });
    if (options.progress) progress.start();
    try {
      const readerOptions: ReaderOptions = { schema: database.schema, csvLabel: options.label, edgeListLabel: options.edgeList, nodeLabel: options.nodeLabel };
      await importFiles(inputs, readerOptions, batcher, progress, interrupt);
    } finally {
      progress.stop();
    }
    if (interrupt.requested) {
      io.stderr.write(`silk import: interrupted; ${committedText(batcher)}, nothing of the batch in progress was written\n`);
      return 130;
    }
    const seconds = progress.elapsedMs / 1000;
    const records = batcher.nodesCommitted + batcher.vectorsCommitted + batcher.edgesCommitted;
    io.stdout.write(
      `imported ${committedCounts(batcher)} ` +
        `(${formatBytes(totalBytes)}) in ${seconds.toFixed(2)} s: ${formatCount(Math.round(records / Math.max(seconds, 0.001)))} records/s\n`,
    );
    return 0;
  } catch (cause) {
    reportFailure(cause, batcher, io);
    return 1;
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
    await database?.close();
  }
}

interface Input {
  readonly path: string;
  readonly format: FileFormat;
  readonly bytes: number;
}

/** Checks every file before the database is opened, so a typo in the last file name costs nothing. */
function checkInputs(files: readonly string[], options: ImportCommandOptions): Input[] {
  if (files.length === 0) throw new SilkError("invalid_option", "give at least one file to import");
  const readerOptions = { schema: undefined, edgeListLabel: options.edgeList, nodeLabel: options.nodeLabel };
  return files.map((path) => {
    const format = formatOf(path, readerOptions);
    let bytes: number;
    try {
      const stats = statSync(path);
      if (!stats.isFile()) throw new Error("not a file");
      bytes = stats.size;
    } catch (cause) {
      throw new SilkError("invalid_option", `cannot read ${path}: ${(cause as Error).message}`);
    }
    return { path, format, bytes };
  });
}

async function importFiles(
  inputs: readonly Input[],
  readerOptions: ReaderOptions,
  batcher: ImportBatcher,
  progress: ImportProgress,
  interrupt: { readonly requested: boolean },
): Promise<void> {
  for (const input of inputs) {
    const file = batcher.addFile(input.path);
    const rows = readRows(input.path, input.format, readerOptions, (stream) => progress.track(stream));
    for await (const { line, row } of rows) {
      if (interrupt.requested) return;
      batcher.add(row, { file, line });
      progress.records += 1;
      if (batcher.full) await batcher.flush();
    }
    progress.finishFile();
  }
  if (!interrupt.requested) await batcher.flush();
}

function committedText(batcher: ImportBatcher | undefined): string {
  if (batcher === undefined) return "nothing was written";
  const batches = batcher.batchesCommitted;
  if (batches === 0) return "no earlier batch was committed";
  const counts = committedCounts(batcher);
  return `${counts} of ${batches} earlier ${batches === 1 ? "batch stay" : "batches stay"} committed`;
}

/** "N nodes and E edges", or with vectors "N nodes, V vectors and E edges". */
function committedCounts(batcher: ImportBatcher): string {
  const vectors = batcher.vectorsCommitted === 0 ? "" : `, ${formatCount(batcher.vectorsCommitted)} vectors`;
  return `${formatCount(batcher.nodesCommitted)} nodes${vectors} and ${formatCount(batcher.edgesCommitted)} edges`;
}

function reportFailure(cause: unknown, batcher: ImportBatcher | undefined, io: CommandIo): void {
  if (cause instanceof RowError) {
    io.stderr.write(`${cause.message}\n`);
    io.stderr.write(`silk import: stopped at this row; ${committedText(batcher)}, nothing of the failing batch was written\n`);
    return;
  }
  const error = asSilkError(cause);
  io.stderr.write(`silk import: ${error.code}: ${error.message}\n`);
  if (batcher !== undefined && batcher.batchesCommitted > 0) io.stderr.write(`silk import: ${committedText(batcher)}\n`);
}
