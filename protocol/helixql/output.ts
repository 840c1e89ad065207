/**
 * A HelixQL response, built from the tree's named results through the query's RETURN shape (query.ts `QueryOutput`):
 * records' `$id`, `$label`... keys renamed at every depth (HelixDB's v1 record shape), a one-record entry's first
 * element or null. One walk does this and hands what it finds to a sink, so the two forms a response takes cannot
 * disagree: `renderOutput` builds the answer's values (the embedded `db.query`), `renderOutputJson` writes its JSON
 * text directly (`POST /<QueryName>`, bigints as decimal strings), exactly `JSON.stringify` of the values, which
 * test/protocol/output-json.test.ts checks on random results. Writing the text without building the renamed copy
 * first is why it exists: bench/output-json.ts measures it against the copy and `JSON.stringify`.
 */
import { unreachable } from "../errors.js";
import type { QueryOutput, ReturnShape } from "./query.js";

/**
 * What the walk builds a response with. `Item` is what one value becomes (undefined where JSON.stringify would leave
 * it out); arrays and objects are built in an accumulator, one element or field at a time, in the order JSON.stringify
 * writes them. The walk, not the sink, decides which keys are a record's (and so renamed). The two sinks are classes,
 * not object literals of one shape, so the walk's calls see two receiver maps and V8 can inline each sink's methods.
 */
interface OutputSink<Item, ArrayBuilder, ObjectBuilder> {
  /** A value of a result that is not an array or an object: a string, number, boolean, bigint, null or undefined. */
  scalar(value: unknown): Item | undefined;
  /** A RETURN literal, written as it is (its keys are the query's own, never renamed). */
  literal(value: unknown): Item | undefined;
  arrayStart(length: number): ArrayBuilder;
  arrayElement(array: ArrayBuilder, index: number, element: Item | undefined): ArrayBuilder;
  arrayEnd(array: ArrayBuilder): Item;
  objectStart(): ObjectBuilder;
  /** A field the query names (a RETURN object's or the body's): its key is written as it is. */
  objectField(object: ObjectBuilder, key: string, value: Item | undefined): ObjectBuilder;
  /** A field of a result's object: its key is the tree's, written as `renamedRecordKey` names it. */
  recordField(object: ObjectBuilder, key: string, value: Item | undefined): ObjectBuilder;
  objectEnd(object: ObjectBuilder): Item;
}

/** Record keys of the tree's JSON form and the names HelixQL responses give them (HelixDB's v1 record shape). */
const RECORD_KEYS: ReadonlyMap<string, string> = new Map([
  ["$id", "id"],
  ["$label", "label"],
  ["$from", "from_node"],
  ["$to", "to_node"],
  ["$vector", "data"],
]);

const DOLLAR = 36;

/** The name a HelixQL response gives a key of the tree's JSON form: `$id` is `id`, any other key stays. */
export function renamedRecordKey(key: string): string {
  return key.charCodeAt(0) === DOLLAR ? (RECORD_KEYS.get(key) ?? key) : key;
}

/** Builds the response body from the tree's result (keyed by entry name). */
export function renderOutput(output: QueryOutput, result: Readonly<Record<string, unknown>>): unknown {
  return walkOutput(VALUES, output, result);
}

/** `JSON.stringify(renderOutput(output, result))`, bigints as decimal strings, written in one pass. */
export function renderOutputJson(output: QueryOutput, result: Readonly<Record<string, unknown>>): string {
  return walkOutput(TEXT, output, result) ?? "null";
}

function walkOutput<Item, A, O>(sink: OutputSink<Item, A, O>, output: QueryOutput, result: Readonly<Record<string, unknown>>): Item | undefined {
  return output.kind === "value" ? walkShape(sink, output.shape, result) : walkFields(sink, output.fields, result);
}

type Fields = readonly (readonly [string, ReturnShape])[];

function walkShape<Item, A, O>(sink: OutputSink<Item, A, O>, shape: ReturnShape, result: Readonly<Record<string, unknown>>): Item | undefined {
  switch (shape.kind) {
    case "literal":
      return sink.literal(shape.value);
    case "object":
      return walkFields(sink, shape.fields, result);
    case "array": {
      let array = sink.arrayStart(shape.elements.length);
      for (let i = 0; i < shape.elements.length; i += 1) array = sink.arrayElement(array, i, walkShape(sink, shape.elements[i], result));
      return sink.arrayEnd(array);
    }
    case "entry": {
      const value = result[shape.entry];
      const chosen = shape.cardinality === "one" && Array.isArray(value) ? value[0] : value;
      return walkValue(sink, chosen ?? null);
    }
    default:
      return unreachable(shape, "return shape");
  }
}

function walkFields<Item, A, O>(sink: OutputSink<Item, A, O>, fields: Fields, result: Readonly<Record<string, unknown>>): Item {
  let object = sink.objectStart();
  for (const [name, shape] of inObjectOrder(fields)) object = sink.objectField(object, name, walkShape(sink, shape, result));
  return sink.objectEnd(object);
}

/** Renames the tree's `$id`, `$label`... keys at every depth; `$` cannot start a user property, so nothing else moves. */
function walkValue<Item, A, O>(sink: OutputSink<Item, A, O>, value: unknown): Item | undefined {
  if (typeof value !== "object" || value === null) return sink.scalar(value);
  if (Array.isArray(value)) {
    let array = sink.arrayStart(value.length);
    for (let i = 0; i < value.length; i += 1) array = sink.arrayElement(array, i, walkValue(sink, value[i]));
    return sink.arrayEnd(array);
  }
  // Results hold only JSON values (any other object is walked by its own keys); they are plain objects with no
  // inherited enumerable keys, so for-in visits exactly Object.entries' keys, in JSON.stringify's order.
  const record = value as Record<string, unknown>;
  let object = sink.objectStart();
  for (const key in record) {
    const inner = record[key];
    // Most fields are scalars: the sink takes them without a call of the walk.
    object = sink.recordField(object, key, typeof inner === "object" && inner !== null ? walkValue(sink, inner) : sink.scalar(inner));
  }
  return sink.objectEnd(object);
}

/** An array index as JavaScript orders an object's keys: these come first, ascending, before every other key. */
const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;
const ARRAY_INDEX_END = 2 ** 32 - 1;
const orderedFields = new WeakMap<Fields, Fields>();

/**
 * The fields in the order of the object built from them, which is the order JSON.stringify writes (a shape is
 * fixed: ordered once). The value sink would get this order from JavaScript anyway; the text sink needs it given.
 */
function inObjectOrder(fields: Fields): Fields {
  let ordered = orderedFields.get(fields);
  if (ordered === undefined) {
    const isIndex = ([name]: readonly [string, ReturnShape]): boolean => ARRAY_INDEX.test(name) && Number(name) < ARRAY_INDEX_END;
    const indices = fields.filter(isIndex).sort(([a], [b]) => Number(a) - Number(b));
    ordered = indices.length === 0 ? fields : [...indices, ...fields.filter((field) => !isIndex(field))];
    orderedFields.set(fields, ordered);
  }
  return ordered;
}

/** The answer as values: arrays and objects are new (renamed) copies, scalars and literals are the results' own. */
class ValueSink implements OutputSink<unknown, unknown[], Record<string, unknown>> {
  scalar(value: unknown): unknown {
    return value;
  }

  literal(value: unknown): unknown {
    return value;
  }

  arrayStart(length: number): unknown[] {
    return new Array<unknown>(length);
  }

  arrayElement(array: unknown[], index: number, element: unknown): unknown[] {
    array[index] = element;
    return array;
  }

  arrayEnd(array: unknown[]): unknown {
    return array;
  }

  objectStart(): Record<string, unknown> {
    return {};
  }

  objectField(object: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
    object[key] = value;
    return object;
  }

  recordField(object: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
    object[renamedRecordKey(key)] = value;
    return object;
  }

  objectEnd(object: Record<string, unknown>): unknown {
    return object;
  }
}

/** Strings without a character JSON escapes (quote, backslash, controls, any surrogate) are written as they are. */
const PLAIN_STRING = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;
/** Longer strings go to JSON.stringify, whose scan is native. */
const PLAIN_STRING_LENGTH_MAX = 64;
/** Keys whose JSON text (quoted, with its colon) is kept, a record's keyed by the tree's key; a schema's are few. */
const KEY_TEXTS_MAX = 4_096;
const keyTexts = new Map<string, string>();
const recordKeyTexts = new Map<string, string>();

function keyText(texts: Map<string, string>, key: string, name: string): string {
  let text = texts.get(key);
  if (text === undefined) {
    text = `${JSON.stringify(name)}:`;
    if (texts.size < KEY_TEXTS_MAX) texts.set(key, text);
  }
  return text;
}

function stringText(value: string): string {
  return value.length <= PLAIN_STRING_LENGTH_MAX && PLAIN_STRING.test(value) ? `"${value}"` : JSON.stringify(value);
}

/**
 * The answer as JSON text, what JSON.stringify writes of the values with bigints as decimal strings. Builders are the
 * text so far: an array's or object's opening bracket alone means nothing was written into it yet.
 */
class TextSink implements OutputSink<string, string, string> {
  scalar(value: unknown): string | undefined {
    switch (typeof value) {
      case "string":
        return stringText(value);
      case "number":
        return Number.isFinite(value) ? String(value) : "null";
      case "boolean":
        return value ? "true" : "false";
      case "bigint":
        return `"${value.toString(10)}"`;
      case "object":
        return "null";
      default:
        // undefined, functions and symbols: left out of objects, null in arrays, as JSON.stringify does.
        return undefined;
    }
  }

  literal(value: unknown): string | undefined {
    return JSON.stringify(value, (_key, inner: unknown) => (typeof inner === "bigint" ? inner.toString(10) : inner)) as string | undefined;
  }

  arrayStart(): string {
    return "[";
  }

  arrayElement(array: string, index: number, element: string | undefined): string {
    return (index === 0 ? array : `${array},`) + (element ?? "null");
  }

  arrayEnd(array: string): string {
    return `${array}]`;
  }

  objectStart(): string {
    return "{";
  }

  objectField(object: string, key: string, value: string | undefined): string {
    return value === undefined ? object : (object.length === 1 ? object : `${object},`) + keyText(keyTexts, key, key) + value;
  }

  recordField(object: string, key: string, value: string | undefined): string {
    return value === undefined ? object : (object.length === 1 ? object : `${object},`) + keyText(recordKeyTexts, key, renamedRecordKey(key)) + value;
  }

  objectEnd(object: string): string {
    return `${object}}`;
  }
}

const VALUES = new ValueSink();
const TEXT = new TextSink();
