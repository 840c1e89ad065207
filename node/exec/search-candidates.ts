/**
 * The candidates of a restricted search (`vector_search` or `text_search` with an input, HelixQL's
 * `V<T>::WHERE(...)::SearchV<T>(v, k)`) straight from the secondary indexes, without reading a record per candidate.
 *
 * A source step (`nodes_where`, `vectors_where`; the decoder folds a WHERE on a source into its predicate) normally
 * takes its candidates from one index (planner.ts) and then evaluates its whole predicate on each candidate's record:
 * with thousands of candidates that read and evaluation cost far more than the search itself (issue 22: 4,437
 * candidates, ~11 ms a query, against ~0.3 ms for hnswlib's filtered search). Here, when every conjunct of the
 * predicate besides the label pin is a comparison an active index answers exactly, the candidates are the
 * intersection of those indexes' hits and no committed record is read; the search family turns them into a
 * membership filter once per query (vector-index.ts `restricted`).
 *
 * Exact means the index's hits are precisely the records the scan's comparison would keep:
 * - a typed schema field (a schemaless index keys values by their own kind and hands out other kinds too);
 * - numbers (every numeric type), booleans (equality only, as the planner plans them), and strings in equality or
 *   IS_IN whose UTF-8 fits the index's kept prefix (a longer string's lookup widens to every string sharing the
 *   prefix: index-encoding.ts); dates and string ranges are left to the record path;
 * - the invocation's own writes of the label (created or updated records, whose committed entries are stale) are
 *   evaluated on their current form; its drops are already gone from the hits (txn-view.ts `indexIds`).
 * Anything else answers undefined and the caller evaluates the input as any step.
 */
import type { ScalarTypeName } from "../../protocol/schema.js";
import type { IndexRange, RecordKind } from "../../protocol/records.js";
import type { Predicate, Step } from "../../protocol/tree.js";
import { indexPrefix, ID_BYTES, KEY_BYTES_MAX } from "../keys.js";
import { longStringPrefixBytes } from "../indexes/index-encoding.js";
import { chooseIndex, labelOfPredicate, type IndexLookup } from "./planner.js";
import { evaluatePredicate, type EvalScope } from "./predicates.js";
import type { Op } from "./ops.js";

/** Field types whose index entries are exact for every comparison the planner plans on them. */
const EXACT_TYPES: ReadonlySet<ScalarTypeName> = new Set<ScalarTypeName>(["F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "U128", "ID", "Boolean"]);

/**
 * The IDs of the records `input` would give, of `kind`, or undefined when the indexes do not answer its
 * predicate exactly (then evaluate `input`). An empty list: no record matches.
 */
export function* indexedCandidates(input: Step, kind: RecordKind, scope: EvalScope): Op<bigint[] | undefined> {
  if (input.op !== "nodes_where" && input.op !== "vectors_where") return undefined;
  if ((input.op === "nodes_where" ? "node" : "vector") !== kind) return undefined;
  const { schema, view, explain } = scope.context;
  const predicate = input.predicate;
  const label = labelOfPredicate(predicate);
  if (schema === undefined || label === undefined) return undefined;
  const declared = kind === "node" ? schema.nodes.get(label) : schema.vectors.get(label);
  if (declared === undefined) return undefined;
  const lookups: IndexLookup[] = [];
  for (const conjunct of conjuncts(predicate)) {
    if (labelOfPredicate(conjunct) === label) continue;
    const lookup = chooseIndex(schema, kind, label, conjunct, scope);
    if (lookup === undefined) return undefined;
    const type = declared.fields.get(lookup.field)?.type;
    if (type?.kind !== "scalar" || !exactLookup(type.name, lookup.ranges, kind, label, lookup.field)) return undefined;
    lookups.push(lookup);
  }
  if (lookups.length === 0) return undefined; // the label alone: a label scan, as the source step does
  let ids: bigint[] | undefined;
  for (const lookup of lookups) {
    const hits = yield* view.indexIds(kind, label, lookup.field, lookup.ranges);
    if (hits === undefined) return undefined; // an index not active: the record path
    ids = ids === undefined ? hits : intersect(ids, hits);
  }
  const result = yield* withoutStaleWrites(ids!, kind, label, predicate, scope);
  explain?.record({ step: input.op, access: "index", index: lookups.map((lookup) => `${label}.${lookup.field}`).join(" & "), candidates: result.length, recordsRead: false });
  return result;
}

function conjuncts(predicate: Predicate): Predicate[] {
  return predicate.kind === "and" ? predicate.predicates.flatMap(conjuncts) : [predicate];
}

function exactLookup(type: ScalarTypeName, ranges: readonly IndexRange[], kind: RecordKind, label: string, field: string): boolean {
  if (EXACT_TYPES.has(type)) return true;
  if (type !== "String") return false;
  const kept = longStringPrefixBytes(KEY_BYTES_MAX - indexPrefix(kind, label, field).length - ID_BYTES);
  return ranges.every((range) => typeof range.low === "string" && range.low === range.high && range.lowInclusive && range.highInclusive && Buffer.byteLength(range.low, "utf8") <= kept);
}

/** The IDs of `a` that `b` holds too (a list with the invocation's created records appended is not in ID order). */
function intersect(a: readonly bigint[], b: readonly bigint[]): bigint[] {
  const inB = new Set(b);
  return a.filter((id) => inB.has(id));
}

/**
 * The hits less the records this invocation wrote whose current form fails the predicate (their committed entries
 * are stale; indexIds lists every written record of the label, so the matching ones are already among the hits).
 */
function* withoutStaleWrites(ids: bigint[], kind: RecordKind, label: string, predicate: Predicate, scope: EvalScope): Op<bigint[]> {
  const failing = new Set<bigint>();
  for (const record of scope.context.view.writtenRecords()) {
    if (record.kind !== kind || record.label !== label) continue;
    if (!(yield* evaluatePredicate(predicate, { kind, id: record.id, record }, scope))) failing.add(record.id);
  }
  return failing.size === 0 ? ids : ids.filter((id) => !failing.has(id));
}
