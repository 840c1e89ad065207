/**
 * What flows between the steps of a plan: streams of record references (loaded lazily, in batches), of JSON values,
 * or one scalar; and the context every step runs in. Shared by the executor and the modules it delegates to, so none
 * of them imports another's step logic.
 */
import { SilkError, unreachable } from "../../protocol/errors.js";
import { andThen, ready, wait, type Maybe, type Op } from "./ops.js";
import { RESULT_ELEMENTS_MAX } from "../../protocol/limits.js";
import { idOf, idToString, parseId, type IdRenderer } from "../../protocol/ids.js";
import type { Embedder } from "../../protocol/embedding.js";
import type { RuntimeIndexLookup } from "../../protocol/indexes.js";
import type { AdjacencyEntry, Direction, RecordKind, StoredRecord } from "../../protocol/records.js";
import type { Schema } from "../../protocol/schema.js";
import { getPath, isPlainObject, valueToJson, type Properties, type Value } from "../../protocol/values.js";
import type { Deadline } from "./deadline.js";
import type { ExplainLog } from "./planner.js";
import { VECTOR_NOT_LOADED } from "../record-codec.js";
import { rowToJson, showsRow, type RowState } from "./rows.js";
import type { TxnView } from "./txn-view.js";

/** One element of a stream: a record reference, loaded lazily. */
export interface Element {
  readonly kind: RecordKind;
  readonly id: bigint;
  record?: StoredRecord;
  /** For an edge reached by `out_e`, `in_e` or `both_e`: the node (or vector) it was reached from (`other_n`). */
  readonly via?: bigint;
  /** For a search result, until a step leaves the hit stream: which search found it, where and how (search.ts). */
  readonly hit?: SearchTag;
  /** HelixDB's row state (bindings, path, sack) once a step gave the element one (rows.ts). */
  readonly row?: RowState;
}

/**
 * A search result's provenance: rerankers fuse rankings by `search` (one number per search step run) and MMR
 * compares records by the vectors of `field`. `score` is a distance for vector searches (rendered `$distance`) and a
 * relevance for text searches and rerankers (rendered `$score`).
 */
export interface SearchTag {
  readonly search: number;
  /** 1-based position in its search's ranking. */
  readonly rank: number;
  readonly score: number;
  readonly measure: "distance" | "relevance";
  /** The vector search's index field (a property or VECTOR_FIELD), for RerankMMR; absent for text searches. */
  readonly field?: string;
}

export type Stream =
  | { readonly kind: "elements"; readonly items: Element[] }
  /**
   * `answer`: what the stream answers when an entry returns it, where that differs from `items` (a `values` step:
   * one object per element, as HelixDB v3 answers, while its items stay the flat values expressions read). A step
   * that makes a new values stream from this one answers its own items.
   */
  | { readonly kind: "values"; readonly items: unknown[]; readonly answer?: readonly unknown[] }
  | { readonly kind: "scalar"; readonly value: unknown };

export interface ExecutionContext {
  readonly view: TxnView;
  readonly schema: Schema | undefined;
  readonly now: () => Date;
  readonly writable: boolean;
  /** When the invocation must be done by: steps and long loops check it (deadline.ts). */
  readonly deadline: Deadline;
  /** Present when the request asked for `"explain": true`: source steps record their access path in it. */
  readonly explain?: ExplainLog;
  /** Indexes created by index operations, which the planner uses and the UNIQUE check enforces as the schema's. */
  readonly runtimeIndex?: RuntimeIndexLookup;
  /** Turns `Embed(text)` into vectors; absent, Embed is `embedding_not_configured`. */
  readonly embedder?: Embedder;
  /**
   * How rendered JSON writes IDs (records, rows, `id`, paths): decimal strings, or JsonId for a plan that asks for
   * `idsAsNumbers` (`/v2/query`). Expressions read IDs as bigints (recordField) and never through this.
   */
  readonly renderId: IdRenderer;
}

export function elementsOf(stream: Stream, op: string): Element[] {
  if (stream.kind !== "elements") throw new SilkError("malformed_tree", `step ${op} needs a stream of records, not of values`);
  return stream.items;
}

/** The limit_exceeded of a step whose stream would hold more than RESULT_ELEMENTS_MAX records. */
export function tooManyElements(): SilkError {
  return new SilkError("limit_exceeded", `a step produced more than ${RESULT_ELEMENTS_MAX} elements`);
}

export function elements(items: Element[]): Stream {
  if (items.length > RESULT_ELEMENTS_MAX) throw tooManyElements();
  return { kind: "elements", items };
}

export function valuesStream(items: unknown[], answer?: readonly unknown[]): Stream {
  if (items.length > RESULT_ELEMENTS_MAX) throw new SilkError("limit_exceeded", `a step produced more than ${RESULT_ELEMENTS_MAX} values`);
  return answer === undefined ? { kind: "values", items } : { kind: "values", items, answer };
}

/** Loads the records of the given elements; elements whose record no longer exists are dropped. */
export function* loaded(view: TxnView, items: Element[]): Op<Element[]> {
  const read = loadedNow(view, items);
  return ready(read) ? read : yield* wait(read);
}

/** `loaded` as a plain function: the elements when no read had to wait (no generator is built), else an op. */
export function loadedNow(view: TxnView, items: Element[]): Maybe<Element[]> {
  // Sources by ID whose consumer reads records arrive loaded (evalStep's withRecords): nothing to group then.
  if (items.every(isLoaded)) return items.slice();
  return loadKinds(view, items, [...unloadedByKind(items)], 0);
}

function isLoaded(item: Element): boolean {
  return item.record !== undefined;
}

function loadKinds(view: TxnView, items: Element[], kinds: readonly [RecordKind, Element[]][], from: number): Maybe<Element[]> {
  for (let i = from; i < kinds.length; i++) {
    const list = kinds[i][1];
    const read = view.records(kinds[i][0], list.map((item) => item.id));
    if (!ready(read)) {
      return andThen(read, (records) => {
        list.forEach((item, j) => (item.record = records[j]));
        return loadKinds(view, items, kinds, i + 1);
      });
    }
    list.forEach((item, j) => (item.record = read[j]));
  }
  return withRecordsOnly(items);
}

function withRecordsOnly(items: Element[]): Element[] {
  return items.filter((item) => item.record !== undefined);
}

/** The elements whose record is not loaded yet, by kind: one batched read per kind loads them (`loaded`). */
export function unloadedByKind(items: readonly Element[]): Map<RecordKind, Element[]> {
  const byKind = new Map<RecordKind, Element[]>();
  for (const item of items) {
    if (item.record !== undefined) continue;
    const list = byKind.get(item.kind);
    if (list) list.push(item);
    else byKind.set(item.kind, [item]);
  }
  return byKind;
}

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * A request parameter by name. A name with a dot that names no parameter itself walks into an object parameter
 * (`row.name` is field `name` of parameter `row`), which is how a `for_each ... as row` body reads its row.
 */
export function lookupParameter(name: string, parameters: Readonly<Record<string, unknown>>, where: string): unknown {
  if (hasOwn.call(parameters, name)) return parameters[name];
  const dot = name.indexOf(".");
  if (dot > 0 && hasOwn.call(parameters, name.slice(0, dot))) {
    const head = parameters[name.slice(0, dot)];
    const value = isPlainObject(head) ? getPath(head as Properties, name.slice(dot + 1)) : undefined;
    if (value !== undefined) return value;
  }
  throw new SilkError("missing_parameter", `${where}: parameter ${JSON.stringify(name)} was not supplied`);
}

/** The records of one kind in an earlier entry's stream (a `var` reference); `unknown_variable` when none defines it. */
export function variableElements(variables: ReadonlyMap<string, Stream>, name: string, kind: RecordKind, where: string): Element[] {
  const stream = variables.get(name);
  if (stream === undefined) throw new SilkError("unknown_variable", `${where}: no earlier entry defines ${JSON.stringify(name)}`);
  return elementsOf(stream, where).filter((item) => item.kind === kind);
}

/** The IDs a `param` reference names: one ID or an array of them, each checked (`invalid_id`). */
export function parameterIds(parameters: Readonly<Record<string, unknown>>, name: string, where: string): bigint[] {
  const raw = lookupParameter(name, parameters, where);
  const list = Array.isArray(raw) ? raw : [raw];
  return list.map((id, i) => idOf(id) ?? parseId(id, `parameter ${name}[${i}]`));
}

/**
 * Elements for the IDs that name a record of this kind. Records load later, only if a step needs them; with
 * `withRecords` (the consumer reads them: a returned stream, `value_map`, `label`...) they are read now instead of
 * the existence, one read where there would be two.
 */
export function existing(view: TxnView, kind: RecordKind, ids: readonly bigint[], withRecords = false): Maybe<Element[]> {
  if (withRecords) {
    const records = view.records(kind, ids);
    return ready(records) ? existingRecords(kind, ids, records) : andThen(records, (value) => existingRecords(kind, ids, value));
  }
  const found = view.exists(kind, ids);
  return ready(found) ? existingOf(kind, ids, found) : andThen(found, (value) => existingOf(kind, ids, value));
}

function existingRecords(kind: RecordKind, ids: readonly bigint[], records: readonly (StoredRecord | undefined)[]): Element[] {
  const items: Element[] = [];
  for (let i = 0; i < ids.length; i++) {
    const record = records[i];
    if (record !== undefined) items.push({ kind, id: ids[i], record });
  }
  return items;
}

function existingOf(kind: RecordKind, ids: readonly bigint[], found: readonly boolean[]): Element[] {
  const items: Element[] = [];
  ids.forEach((id, i) => {
    if (found[i]) items.push({ kind, id });
  });
  return items;
}

/** A vector record's vector; `internal` for one read without it (vector-reads.ts), which no plan should render. */
export function loadedVector(record: Extract<StoredRecord, { kind: "vector" }>): Float64Array {
  if (record.vector === VECTOR_NOT_LOADED) {
    throw new SilkError("internal", `internal error (a bug in Silk): vector ${idToString(record.id)} was read without its vector`);
  }
  return record.vector;
}

/**
 * A stored record's field as expressions and rows read it: `$id`, `$label`, `$from` and `$to` (edges only), `$vector`
 * (vectors only: the vector itself, so a plan reading it is one vector-reads.ts lets read vectors), or a stored property
 * (a dotted path reaches into objects); undefined when the record has none.
 */
export function recordField(record: StoredRecord, path: string): Value | undefined {
  switch (path) {
    case "$id":
      return record.id;
    case "$label":
      return record.label;
    case "$from":
      return record.kind === "edge" ? record.from : undefined;
    case "$to":
      return record.kind === "edge" ? record.to : undefined;
    case "$vector":
      return record.kind === "vector" ? loadedVector(record) : undefined;
    default:
      return getPath(record.props, path);
  }
}

/**
 * A record in its JSON form: `$id`, `$label`, `$from`/`$to` for edges, `$vector` for vectors, then properties; its
 * IDs as `renderId` writes them (ExecutionContext).
 */
export function recordToJson(record: StoredRecord, renderId: IdRenderer): Record<string, unknown> {
  const json: Record<string, unknown> = { $id: renderId(record.id), $label: record.label };
  if (record.kind === "edge") {
    json.$from = renderId(record.from);
    json.$to = renderId(record.to);
  }
  if (record.kind === "vector") json.$vector = Array.from(loadedVector(record));
  // Decoded properties are plain objects, so for-in sees exactly their own keys.
  const { props } = record;
  for (const key in props) json[key] = valueToJson(props[key]);
  return json;
}

/** A stream in its JSON form: records as `recordToJson` objects, values as they are, a scalar as its JSON value. */
export function* streamToJson(stream: Stream, view: TxnView, renderId: IdRenderer): Op<unknown> {
  const json = streamToJsonNow(stream, view, renderId);
  return ready(json) ? json : yield* wait(json);
}

/** `streamToJson` as a plain function: the JSON when no read had to wait, else an op. */
export function streamToJsonNow(stream: Stream, view: TxnView, renderId: IdRenderer): Maybe<unknown> {
  if (stream.kind === "scalar") return valueToJson(stream.value as Value);
  if (stream.kind === "values") return stream.items;
  return andThen(loadedNow(view, stream.items), (items) =>
    items.map((item) => {
      if (showsRow(item.row)) return rowToJson(item, item.row, renderId);
      return item.hit === undefined ? recordToJson(item.record!, renderId) : hitToJson(item.record!, item.hit, renderId);
    }),
  );
}

/** A search result in JSON form: the record, and its `$distance` (vector searches) or `$score` (text, rerankers). */
export function hitToJson(record: StoredRecord, hit: SearchTag, renderId: IdRenderer): Record<string, unknown> {
  return { ...recordToJson(record, renderId), [hit.measure === "distance" ? "$distance" : "$score"]: hit.score };
}

/**
 * `$id`, `$label`, and an edge's `$from` and `$to` (and `$from.$id`, `$to.$id`: its endpoints' IDs, the same), of a
 * record in JSON form, IDs as the answer writes them (`renderId`); undefined for anything else.
 */
export function virtualPropertyJson(record: StoredRecord, name: string, renderId: IdRenderer): unknown {
  switch (name) {
    case "$id":
      return renderId(record.id);
    case "$label":
      return record.label;
    case "$from":
    case "$from.$id":
      return record.kind === "edge" ? renderId(record.from) : undefined;
    case "$to":
    case "$to.$id":
      return record.kind === "edge" ? renderId(record.to) : undefined;
    default:
      return undefined;
  }
}

/** The adjacency of the node and vector elements (edges have none), in one or both directions, one list per owner. */
export function* adjacencyOf(view: TxnView, items: Element[], directions: Direction[], label: string | undefined): Op<AdjacencyEntry[][]> {
  const ids = items.filter((item) => item.kind !== "edge").map((item) => item.id);
  if (directions.length === 1) {
    const read = view.adjacency(ids, directions[0], label);
    return ready(read) ? read : yield* wait(read);
  }
  // Both reads start before either is waited for: a remote base answers them at the same time.
  const reads = directions.map((direction) => view.adjacency(ids, direction, label));
  const perDirection: AdjacencyEntry[][][] = [];
  for (const read of reads) perDirection.push(ready(read) ? read : yield* wait(read));
  return ids.map((_, i) => perDirection.flatMap((lists) => lists[i]));
}

/** A stream cut into one-element streams: the units branching steps run their sub-traversals from. */
export function unitsOf(stream: Stream): Stream[] {
  switch (stream.kind) {
    case "elements":
      return stream.items.map((item) => ({ kind: "elements", items: [item] }));
    case "values":
      return stream.items.map((item) => ({ kind: "values", items: [item] }));
    case "scalar":
      return [stream];
    default:
      return unreachable(stream, "stream");
  }
}

/** Whether a stream holds anything: records or values, or a scalar other than null. */
export function yieldsSomething(stream: Stream): boolean {
  return stream.kind === "scalar" ? stream.value !== null && stream.value !== undefined : stream.items.length > 0;
}

/**
 * Streams one after another: records stay records when every piece is records; otherwise every piece becomes
 * values (records in their JSON form, a scalar as one value), so a mix still renders as one array.
 */
export function* concatStreams(pieces: readonly Stream[], view: TxnView, renderId: IdRenderer): Op<Stream> {
  if (pieces.every((piece) => piece.kind === "elements")) return elements(pieces.flatMap((piece) => (piece as { items: Element[] }).items));
  const items: unknown[] = [];
  for (const piece of pieces) {
    const json = yield* streamToJson(piece, view, renderId);
    if (piece.kind === "scalar") items.push(json);
    // One push per value: spreading a piece of a million values into push's arguments overflows the stack.
    else for (const value of json as unknown[]) items.push(value);
  }
  return valuesStream(items);
}
