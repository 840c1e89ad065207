/**
 * A fluent builder for `/v2/query` requests that produces exactly the JSON of docs/OPERATION_TREE.md:
 *
 *   read().entry("u", nodes.byIds(["1"]).out("Follows").where(gt(prop("age"), lit.i64(18)))).returns("u").build()
 *
 * Traversals are immutable: every step method returns a new Traversal wrapping the previous step in `input`, so a
 * prefix can be shared between entries. The builder checks only what it must to produce well-formed JSON (a
 * parameter's type given for all or none); the server's decoder checks the rest and names the JSON path of a fault.
 */
import type { Json } from "./client.js";
import {
  type Condition, type Literal, type ParameterType, type Predicate, type PropertyValue, type Ref, type StepJson,
  type Expr, propertyPairs, propertyValueJson, ref,
} from "./builder-values.js";

export * from "./builder-values.js";

/** A paging bound: a non-negative integer, or an expression (a parameter, say). */
export type Bound = number | Expr;

function boundJson(bound: Bound): Json {
  return typeof bound === "number" ? { literal: bound } : { expr: bound.json };
}

export interface ProjectOptions {
  /** Each row starts as the whole record. */
  readonly all?: boolean;
  /** Fields left out of the whole record (implies `all`). */
  readonly exclude?: readonly string[];
}

/** A projection column: a property (optionally renamed) or a computed expression under an alias. */
export type Projection = { readonly property: string; readonly alias?: string } | { readonly alias: string; readonly expr: Expr };

export interface ShortestPathOptions {
  readonly label?: string;
  readonly direction?: "out" | "in" | "both";
  /**
   * Dijkstra needs a weight expression evaluated on each edge; A* the same plus a numeric property of each record
   * that estimates the cost still to go (`heuristic`); BFS counts hops.
   */
  readonly algorithm?: { readonly bfs: true } | { readonly dijkstra: Expr } | { readonly astar: { readonly weight: Expr; readonly heuristic: string } };
}

export class Traversal implements StepJson {
  constructor(readonly step: Json) {}

  private wrap(op: string, fields: Record<string, Json | undefined> = {}): Traversal {
    const body: Record<string, Json> = { input: this.step };
    for (const [key, value] of Object.entries(fields)) if (value !== undefined) body[key] = value;
    return new Traversal({ [op]: body });
  }

  // Traversals: node → node, node → edge, edge → node.
  out(label?: string): Traversal { return this.wrap("out", { label }); }
  in(label?: string): Traversal { return this.wrap("in", { label }); }
  both(label?: string): Traversal { return this.wrap("both", { label }); }
  outE(label?: string): Traversal { return this.wrap("out_e", { label }); }
  inE(label?: string): Traversal { return this.wrap("in_e", { label }); }
  bothE(label?: string): Traversal { return this.wrap("both_e", { label }); }
  outN(): Traversal { return this.wrap("out_n"); }
  inN(): Traversal { return this.wrap("in_n"); }
  otherN(): Traversal { return this.wrap("other_n"); }

  // Filters.
  has(property: string, value: Literal): Traversal { return this.wrap("has", { property, value: value.json }); }
  hasLabel(label: string): Traversal { return this.wrap("has_label", { label }); }
  hasKey(property: string): Traversal { return this.wrap("has_key", { property }); }
  where(predicate: Predicate): Traversal { return this.wrap("where", { predicate: predicate.json }); }
  dedup(): Traversal { return this.wrap("dedup"); }
  within(variable: string): Traversal { return this.wrap("within", { variable }); }
  without(variable: string): Traversal { return this.wrap("without", { variable }); }

  // Paging and order.
  limit(count: Bound): Traversal { return this.wrap("limit", { count: boundJson(count) }); }
  skip(count: Bound): Traversal { return this.wrap("skip", { count: boundJson(count) }); }
  range(start: Bound, end: Bound): Traversal { return this.wrap("range", { start: boundJson(start), end: boundJson(end) }); }
  orderBy(property: string, order: "asc" | "desc" = "asc"): Traversal { return this.wrap("order_by", { property, order }); }

  // Terminals.
  count(): Traversal { return this.wrap("count"); }
  exists(): Traversal { return this.wrap("exists"); }
  id(): Traversal { return this.wrap("id"); }
  label(): Traversal { return this.wrap("label"); }
  values(properties: readonly string[]): Traversal { return this.wrap("values", { properties: [...properties] }); }
  valueMap(properties?: readonly string[]): Traversal { return this.wrap("value_map", { properties: properties === undefined ? undefined : [...properties] }); }
  project(projections: readonly Projection[], options: ProjectOptions = {}): Traversal {
    return this.wrap("project", {
      projections: projections.map((p): Json =>
        "expr" in p ? { expr: { alias: p.alias, expr: p.expr.json } } : { property: { source: p.property, alias: p.alias ?? p.property } },
      ),
      all: options.all,
      exclude: options.exclude === undefined ? undefined : [...options.exclude],
    });
  }

  // Aggregates and paths.
  aggregate(fn: "sum" | "avg" | "min" | "max", property?: string): Traversal { return this.wrap("aggregate", { fn, property }); }
  groupCount(properties: readonly string[]): Traversal { return this.wrap("group_count", { properties: [...properties] }); }
  aggregateBy(properties: readonly string[]): Traversal { return this.wrap("aggregate_by", { properties: [...properties] }); }
  shortestPath(to: Ref, options: ShortestPathOptions = {}): Traversal {
    const algorithm = options.algorithm;
    const weighted =
      algorithm === undefined || "bfs" in algorithm
        ? undefined
        : "dijkstra" in algorithm
          ? { algorithm: "dijkstra", weight: algorithm.dijkstra.json }
          : { algorithm: "astar", weight: algorithm.astar.weight.json, heuristic: algorithm.astar.heuristic };
    return this.wrap("shortest_path", {
      to: to.json,
      label: options.label,
      direction: options.direction,
      algorithm: algorithm === undefined ? undefined : (weighted?.algorithm ?? "bfs"),
      weight: weighted?.weight,
      heuristic: weighted?.heuristic,
    });
  }

  // Mutations (a read batch refuses them with write_in_read).
  /** Edges from every input record to the `to` records. */
  addE(label: string, to: Ref, properties: Readonly<Record<string, PropertyValue>> = {}): Traversal {
    return this.wrap("add_e", { label, to: to.json, properties: propertyPairs(properties) });
  }
  setProperty(name: string, value: PropertyValue): Traversal { return this.wrap("set_property", { name, value: propertyValueJson(value) }); }
  update(properties: Readonly<Record<string, PropertyValue>>): Traversal { return this.wrap("update", { properties: propertyPairs(properties) }); }
  removeProperty(name: string): Traversal { return this.wrap("remove_property", { name }); }
  drop(): Traversal { return this.wrap("drop"); }
  upsertN(label: string, properties: Readonly<Record<string, PropertyValue>> = {}): Traversal {
    return this.wrap("upsert_n", { label, properties: propertyPairs(properties) });
  }
  upsertV(label: string, properties: Readonly<Record<string, PropertyValue>> = {}, vector?: PropertyValue): Traversal {
    return this.wrap("upsert_v", { label, vector: vector === undefined ? undefined : propertyValueJson(vector), properties: propertyPairs(properties) });
  }
  upsertE(label: string, from: Ref, to: Ref, properties: Readonly<Record<string, PropertyValue>> = {}): Traversal {
    return this.wrap("upsert_e", { label, from: from.json, to: to.json, properties: propertyPairs(properties) });
  }
}

/** The sources of one record kind: `nodes.all()`, `nodes.byIds([..])`, `nodes.byVar("x")`, `nodes.where(p)`. */
function sources(kind: "nodes" | "edges" | "vectors") {
  const from = (reference: Ref): Traversal => new Traversal({ [kind]: { reference: reference.json } });
  return {
    all: (): Traversal => from(ref.all()),
    byIds: (ids: readonly (string | number | bigint)[]): Traversal => from(ref.ids(ids)),
    byVar: (name: string): Traversal => from(ref.var(name)),
    byParam: (name: string): Traversal => from(ref.param(name)),
    /** A scan filtered by a predicate; an `eq` on `$label` uses the label index. */
    where: (predicate: Predicate): Traversal => new Traversal({ [`${kind}_where`]: { predicate: predicate.json } }),
  };
}

export const nodes = sources("nodes");
export const edges = sources("edges");
export const vectors = sources("vectors");
/** The current element, to start sub-traversals of `exists`, `countOf`, `firstOf`, `traversalOf`. */
export const context = (): Traversal => new Traversal("context");

export function addN(label: string, properties: Readonly<Record<string, PropertyValue>> = {}): Traversal {
  return new Traversal({ add_n: { label, properties: propertyPairs(properties) } });
}

export function addV(label: string, vector: PropertyValue, properties: Readonly<Record<string, PropertyValue>> = {}): Traversal {
  return new Traversal({ add_v: { label, vector: propertyValueJson(vector), properties: propertyPairs(properties) } });
}

/** The entries of a batch, or of a `forEach` body. */
export class Entries {
  protected readonly entries: Json[] = [];

  /** A named entry: its result can be returned and referred to by later entries (`nodes.byVar(name)`). */
  entry(name: string, traversal: Traversal, condition?: Condition): this {
    this.entries.push({ query: { name, root: traversal.step, ...(condition === undefined ? {} : { condition: condition.json }) } });
    return this;
  }

  /** An unnamed entry, run for its effect (a mutation). */
  run(traversal: Traversal, condition?: Condition): this {
    this.entries.push({ query: { root: traversal.step, ...(condition === undefined ? {} : { condition: condition.json }) } });
    return this;
  }

  /**
   * Runs `body` once per element of the array parameter `param`. With `as`, each element is bound as that
   * parameter; without, each element is an object whose fields become parameters.
   */
  forEach(param: string, body: (entries: Entries) => void, as?: string): this {
    const inner = new Entries();
    body(inner);
    this.entries.push({ for_each: { param, ...(as === undefined ? {} : { as }), body: inner.entries } });
    return this;
  }
}

/** One request: a read or a write batch, its returns, parameters and (optionally) their types. */
export class Batch extends Entries {
  private readonly returned: string[] = [];
  private readonly parameters: Record<string, Json> = {};
  private readonly parameterTypes: Record<string, Json> = {};
  private queryName: string | undefined;

  constructor(readonly requestType: "read" | "write") {
    super();
  }

  returns(...names: string[]): this {
    this.returned.push(...names);
    return this;
  }

  /** A parameter value; with a type, the server checks it before anything runs (then every parameter needs one). */
  parameter(name: string, value: Json, type?: ParameterType): this {
    this.parameters[name] = value;
    if (type !== undefined) this.parameterTypes[name] = type;
    return this;
  }

  /** A label for the server's logs. */
  name(queryName: string): this {
    this.queryName = queryName;
    return this;
  }

  build(): { [key: string]: Json } {
    const names = Object.keys(this.parameters);
    const typed = Object.keys(this.parameterTypes);
    // The server requires parameter_types to name exactly the parameters, so a partial declaration cannot be sent.
    if (typed.length > 0 && typed.length !== names.length) {
      const untyped = names.filter((name) => !(name in this.parameterTypes));
      throw new TypeError(`parameter_types must cover every parameter; missing: ${untyped.join(", ")}`);
    }
    return {
      request_type: this.requestType,
      ...(this.queryName === undefined ? {} : { query_name: this.queryName }),
      query: { [this.requestType]: { entries: this.entries, returns: this.returned } },
      ...(names.length === 0 ? {} : { parameters: this.parameters }),
      ...(typed.length === 0 ? {} : { parameter_types: this.parameterTypes }),
    };
  }
}

export const read = (): Batch => new Batch("read");
export const write = (): Batch => new Batch("write");
