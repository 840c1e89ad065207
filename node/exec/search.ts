/**
 * The search steps: `vector_search` (the k nearest records of a vector index) and `text_search` (the k best BM25
 * matches of a text index), as sources or, with an input, restricted to the input's records (the `_within` forms:
 * the result's membership is exactly among them; an input the secondary indexes answer exactly gives its IDs without
 * its records: search-candidates.ts). Hits are loaded from the invocation's view, best first, each
 * tagged with its search, rank and score (streams.ts SearchTag) for the rerankers and the `$distance`/`$score` of
 * its JSON form.
 *
 * Invariant: a hit whose record the view no longer holds (dropped by this invocation) is left out, never rendered.
 */
import { SilkError } from "../../protocol/errors.js";
import { wait, type Op } from "./ops.js";
import { SEARCH_K_MAX } from "../../protocol/limits.js";
import { tenantKey, VECTOR_FIELD } from "../../protocol/indexes.js";
import type { Step } from "../../protocol/tree.js";
import type { Value } from "../../protocol/values.js";
import { evalInput } from "./mutations.js";
import { rerankMmr, rerankRrf } from "./rerank.js";
import { indexedCandidates } from "./search-candidates.js";
import type { EvalScope } from "./predicates.js";
import { elements, elementsOf, loaded, loadedVector, type Element, type ExecutionContext, type Stream } from "./streams.js";
import { indexVector } from "../indexes/vector-math.js";

type SearchStep = Extract<Step, { op: "vector_search" | "text_search" }>;

/** Each search step run by an invocation gets its own number, so rerankers can tell rankings apart. */
const searchCounters = new WeakMap<ExecutionContext, number>();

export function nextSearchNumber(context: ExecutionContext): number {
  const next = (searchCounters.get(context) ?? 0) + 1;
  searchCounters.set(context, next);
  return next;
}

function numbersOnly(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i += 1) if (typeof value[i] !== "number") return false;
  return true;
}

export function* search(step: SearchStep, scope: EvalScope): Op<Stream> {
  const { view } = scope.context;
  const k = searchSize(yield* evalInput(step.k, scope));
  const tenantValue = step.tenant === undefined ? undefined : yield* evalInput(step.tenant, scope);
  const tenant = tenantValue === undefined || tenantValue === null ? undefined : tenantKey(tenantValue as Value);
  let candidates: bigint[] | undefined;
  if (step.input !== undefined) {
    candidates = yield* indexedCandidates(step.input, step.kind, scope);
    if (candidates === undefined) {
      const input = elementsOf(yield* wait(scope.evalStep(step.input, scope)), step.op);
      candidates = [...new Set(input.filter((item) => item.kind === step.kind).map((item) => item.id))];
    }
    if (candidates.length === 0) return elements([]);
  }
  const number = nextSearchNumber(scope.context);
  const query = yield* evalInput(step.query, scope);
  const base = { kind: step.kind, label: step.label, k, ...(tenant === undefined ? {} : { tenant }), ...(candidates === undefined ? {} : { candidates }) };
  let items: Element[];
  if (step.op === "vector_search") {
    const vector = indexVector(query as Value | undefined);
    if (vector === undefined) throw new SilkError("invalid_type", `${step.op}: the query vector is missing (null)`);
    const components = numbersOnly(query) ? query : undefined;
    const hits = yield* wait(view.vectorSearch({ ...base, field: step.property, vector, ...(components === undefined ? {} : { components }), ...(step.ef === undefined ? {} : { ef: step.ef }) }));
    items = hits.map((hit, i) => ({ kind: step.kind, id: hit.id, hit: { search: number, rank: i + 1, score: hit.score, measure: "distance", field: step.property } }));
  } else {
    if (typeof query !== "string") throw new SilkError("invalid_type", `${step.op}: the query is a text (a string), not ${query === null || query === undefined ? "null" : typeof query}`);
    const hits = yield* wait(view.textSearch({ ...base, ...(step.property === undefined ? {} : { field: step.property }), text: query }));
    items = hits.map((hit, i) => ({ kind: step.kind, id: hit.id, hit: { search: number, rank: i + 1, score: hit.score, measure: "relevance" } }));
  }
  return elements(yield* loaded(view, items));
}

/** k: a whole number from 1 to SEARCH_K_MAX. */
function searchSize(raw: unknown): number {
  const k = typeof raw === "bigint" ? Number(raw) : raw;
  if (typeof k !== "number" || !Number.isInteger(k) || k < 1 || k > SEARCH_K_MAX) {
    throw new SilkError("invalid_value", `k must be a whole number from 1 to ${SEARCH_K_MAX}, not ${JSON.stringify(typeof raw === "bigint" ? raw.toString() : raw) ?? String(raw)}`);
  }
  return k;
}

/** The vector a result is compared by (RerankMMR): its search's index field, a `V::` record's own vector by default. */
export function vectorOfHit(element: Element): Float32Array | undefined {
  const record = element.record;
  if (record === undefined) return undefined;
  const field = element.hit?.field ?? VECTOR_FIELD;
  const value = field === VECTOR_FIELD ? (record.kind === "vector" ? loadedVector(record) : undefined) : record.props[field];
  try {
    return indexVector(value);
  } catch {
    return undefined; // a property that holds no vector: MMR treats the record as unlike every other
  }
}

/** RerankRRF (fusion of the stream's rankings) and RerankMMR (diversification), over the input's loaded records. */
export function* rerank(step: Extract<Step, { op: "rerank_rrf" | "rerank_mmr" }>, scope: EvalScope): Op<Stream> {
  const input = yield* loaded(scope.context.view, elementsOf(yield* wait(scope.evalStep(step.input, scope)), step.op));
  if (step.op === "rerank_rrf") {
    const k = step.k === undefined ? RRF_K_DEFAULT : numberOf(yield* evalInput(step.k, scope), "RerankRRF's k");
    return elements(rerankRrf(input, k, nextSearchNumber(scope.context)));
  }
  const lambda = numberOf(yield* evalInput(step.lambda, scope), "RerankMMR's lambda");
  return elements(rerankMmr(input, lambda, step.distance, vectorOfHit, nextSearchNumber(scope.context)));
}

/** RRF's k when a query names none (Cormack et al.; HelixDB's default too). */
export const RRF_K_DEFAULT = 60;

function numberOf(raw: unknown, what: string): number {
  const value = typeof raw === "bigint" ? Number(raw) : raw;
  if (typeof value !== "number" || !Number.isFinite(value)) throw new SilkError("invalid_type", `${what} is a number, not ${JSON.stringify(raw) ?? String(raw)}`);
  return value;
}
