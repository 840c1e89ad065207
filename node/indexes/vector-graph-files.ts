/**
 * Persisted vector graphs (node/indexes/vector-index.ts): one file per vector index in the partition's `vector-graphs/`
 * folder, holding every tenant partition's graph with its label maps (node/indexes/vector-graphs.ts encode), so that opening a
 * partition reads its graphs instead of rebuilding them from the records.
 *
 * A graph file is a cache, never the truth: it is used only when it is whole and is the graph of this data. Layout:
 * the magic `SILKVGF1`, a u32 header length, the header (msgpack: format, the data's identity, the index's definition,
 * the change counter its graphs reflect, the dimension, each tenant partition's name and byte count), the graphs'
 * bytes, and a CRC-32 of everything before it. `readGraphFile` answers undefined — and the caller rebuilds — for a
 * missing, cut short or altered file (length, magic, checksum), another format, another database's file (the
 * identity: a random value each partition's `meta` holds from its writer's first open), another definition under
 * the same name, or graphs that do not decode. Whether the counter fits the data is the caller's check.
 *
 * Architecture invariant: a file is replaced whole (written beside its place, flushed, renamed over it, the folder
 * flushed), so a reader or a crash finds the old file or the new one, never a mix. Only a writer writes them.
 */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import type { VectorIndexDefinition } from "../../protocol/indexes.js";
import { decodeGraph, type PartitionGraph } from "./vector-graphs.js";
import { packr } from "../record-codec.js";

/** The folder of a partition's graph files, inside its LMDB environment's folder. */
export const GRAPH_FOLDER = "vector-graphs";
const MAGIC = Buffer.from("SILKVGF1", "latin1");
/** 2 since hnswlib's graphs are stored without a second copy of their vectors; a format 1 file is rebuilt once. */
const GRAPH_FILE_FORMAT = 2;
const TEMPORARY_SUFFIX = ".tmp";
const GRAPH_SUFFIX = ".graph";
const HEADER_LENGTH_BYTES = 4;
const CHECKSUM_BYTES = 4;

/** What a graph file holds: an index's graphs, tagged with the data's identity and the change counter they reflect. */
export interface GraphFileContents {
  readonly identity: string;
  readonly definition: VectorIndexDefinition;
  readonly version: number;
  readonly dimension: number | undefined;
  readonly graphs: ReadonlyMap<string, PartitionGraph>;
}

interface GraphFileHeader {
  readonly format: number;
  readonly identity: string;
  readonly definition: DefinitionFields;
  readonly version: number;
  readonly dimension: number | null;
  readonly partitions: readonly { readonly name: string; readonly bytes: number }[];
}

/** The parts of a definition that decide what its graphs hold. */
interface DefinitionFields {
  readonly kind: string;
  readonly name: string;
  readonly label: string;
  readonly field: string;
  readonly metric: string;
  readonly tenant: string | null;
  readonly dimension: number | null;
}

function fieldsOf(definition: VectorIndexDefinition): DefinitionFields {
  const { kind, name, label, field, metric } = definition;
  return { kind, name, label, field, metric, tenant: definition.tenant ?? null, dimension: definition.dimension ?? null };
}

function sameFields(a: DefinitionFields, b: DefinitionFields): boolean {
  return a.kind === b.kind && a.name === b.name && a.label === b.label && a.field === b.field && a.metric === b.metric && a.tenant === b.tenant && a.dimension === b.dimension;
}

/** The file of an index (names may hold any character: the file is named by a hash of the kind and name). */
export function graphFilePath(folder: string, definition: VectorIndexDefinition): string {
  const digest = createHash("sha256").update(`${definition.kind}:${definition.name}`).digest("hex").slice(0, 32);
  return join(folder, `${digest}${GRAPH_SUFFIX}`);
}

/** Writes an index's graphs to its file, replacing the file whole (see the module comment). */
export function writeGraphFile(folder: string, contents: GraphFileContents): void {
  mkdirSync(folder, { recursive: true });
  const path = graphFilePath(folder, contents.definition);
  const aside = `${path}.${process.pid}.${randomBytes(4).toString("hex")}${TEMPORARY_SUFFIX}`;
  const scratch = mkdtempSync(join(tmpdir(), "silk-graph-"));
  const fd = openSync(aside, "wx");
  try {
    const sections: Uint8Array[][] = [];
    const partitions: { name: string; bytes: number }[] = [];
    for (const [name, graph] of contents.graphs) {
      const chunks = graph.encode(scratch);
      sections.push(chunks);
      partitions.push({ name, bytes: chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0) });
    }
    const header: GraphFileHeader = { format: GRAPH_FILE_FORMAT, identity: contents.identity, definition: fieldsOf(contents.definition), version: contents.version, dimension: contents.dimension ?? null, partitions };
    const headerBytes = packr.pack(header);
    const headerLength = Buffer.alloc(HEADER_LENGTH_BYTES);
    headerLength.writeUInt32LE(headerBytes.byteLength);
    let checksum = 0;
    const write = (chunk: Uint8Array) => {
      checksum = crc32(chunk, checksum);
      for (let at = 0; at < chunk.byteLength; ) at += writeSync(fd, chunk, at);
    };
    for (const chunk of [MAGIC, headerLength, headerBytes, ...sections.flat()]) write(chunk);
    const trailer = Buffer.alloc(CHECKSUM_BYTES);
    trailer.writeUInt32LE(checksum >>> 0);
    writeSync(fd, trailer);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(aside, { force: true });
    throw error;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  closeSync(fd);
  renameSync(aside, path);
  flushFolder(folder);
}

/** A rename is durable only once its folder is flushed. */
function flushFolder(folder: string): void {
  const fd = openSync(folder, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The graphs of an index's file, or undefined when there is none that serves (the module comment lists why). */
export function readGraphFile(folder: string, identity: string, definition: VectorIndexDefinition): Omit<GraphFileContents, "identity" | "definition"> | undefined {
  const path = graphFilePath(folder, definition);
  if (!existsSync(path)) return undefined;
  const bytes = readFileSync(path);
  const body = bytes.byteLength - CHECKSUM_BYTES;
  if (body < MAGIC.byteLength + HEADER_LENGTH_BYTES || !bytes.subarray(0, MAGIC.byteLength).equals(MAGIC)) return undefined;
  if (crc32(bytes.subarray(0, body)) >>> 0 !== bytes.readUInt32LE(body)) return undefined;
  const headerAt = MAGIC.byteLength + HEADER_LENGTH_BYTES;
  const headerEnd = headerAt + bytes.readUInt32LE(MAGIC.byteLength);
  if (headerEnd > body) return undefined;
  let header: GraphFileHeader;
  try {
    header = packr.unpack(bytes.subarray(headerAt, headerEnd)) as GraphFileHeader;
  } catch {
    return undefined;
  }
  if (typeof header !== "object" || header === null || header.format !== GRAPH_FILE_FORMAT || header.identity !== identity) return undefined;
  if (!sameFields(header.definition, fieldsOf(definition)) || !Array.isArray(header.partitions)) return undefined;
  if (header.partitions.reduce((sum, partition) => sum + partition.bytes, headerEnd) !== body) return undefined;
  const dimension = header.dimension ?? undefined;
  if (dimension === undefined && header.partitions.length > 0) return undefined;
  const graphs = new Map<string, PartitionGraph>();
  const scratch = mkdtempSync(join(tmpdir(), "silk-graph-"));
  try {
    let at = headerEnd;
    for (const { name, bytes: length } of header.partitions) {
      graphs.set(name, decodeGraph(definition.metric, dimension!, bytes.subarray(at, at + length), scratch));
      at += length;
    }
  } catch {
    return undefined; // bytes that passed the checksum but do not decode (RangeError), or hnswlib refusing its file
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return { version: header.version, dimension, graphs };
}

/** Whether a name in the graph folder is a whole graph file (not one a writer is still writing beside its place). */
export function isGraphFileName(name: string): boolean {
  return name.endsWith(GRAPH_SUFFIX);
}

/** Deletes an index's file (a drop); a missing one is fine. */
export function removeGraphFile(folder: string, definition: VectorIndexDefinition): void {
  rmSync(graphFilePath(folder, definition), { force: true });
}

/** Deletes the files a writer that died while writing left beside their places (a writer's open). */
export function removeTemporaryGraphFiles(folder: string): void {
  if (!existsSync(folder)) return;
  for (const name of readdirSync(folder)) if (name.endsWith(TEMPORARY_SUFFIX)) rmSync(join(folder, name), { force: true });
}
