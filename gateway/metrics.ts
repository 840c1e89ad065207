/**
 * `GET /metrics`: what the server has done and holds, in Prometheus' text format, on `silk serve`, `silk dev` and
 * `silk gateway` alike (docs/SERVER.md#metrics lists every metric). Each server owns a registry of its own rather than
 * prom-client's global one, so several servers in one process (the tests) keep their counts apart.
 *
 * Three sources feed it:
 * - the requests themselves, counted by an `onRequest` hook installed on the root before any other (the hosted
 *   checks included, so a request they refuse is counted with its status): in flight while the response is open,
 *   then counted and timed once its socket's response closes, finished or not;
 * - the hosted gateway's admission decisions, counted as they are taken (hosted/access.ts);
 * - the database (its write transactions and the storage of its partitions) and the process (prom-client's default
 *   metrics: heap, event-loop delay, ...), both read when the metrics are scraped, not kept up to date in between.
 *
 * Errors of Node's HTTP parser (bad framing, oversized headers, requests that arrive too late) are answered before
 * fastify sees a request (errors.ts) and are not counted here.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from "fastify";
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from "prom-client";
import type { CompiledQuery } from "../protocol/helixql/query.js";
import type { DatabaseStatistics } from "../runtime/embedded.js";

/** What the metrics read from the database on each scrape (runtime/embedded.ts Database.statistics). */
export interface StatisticsSource {
  statistics(): Promise<DatabaseStatistics>;
}

/** The outcomes of the hosted gateway's token bucket (hosted/access.ts), one label value each. */
export type AdmissionDecision = "admitted" | "rate_limited" | "unavailable";

/** The route label of a request no route matched (404 route_not_found): one value, whatever its path. */
const UNMATCHED_ROUTE = "unmatched";
/** The status label of a request whose client closed the connection before its answer was written. */
const ABORTED_STATUS = "aborted";
/** The per-query route (query-routes.ts), whose `name` parameter becomes the `query` label. */
const QUERY_ROUTE = "/:name";

/**
 * Latency buckets in seconds: from a point read over HTTP (about 0.2 ms here) up to the default execution deadline
 * (30 s, `--timeout-ms`); prom-client's defaults start at 5 ms, which would put every fast request in one bucket.
 */
const REQUEST_DURATION_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

type RequestLabel = "method" | "route" | "query";

/** One series of requests: its labels, and those of its counter by status, made once and reused. */
interface RequestSeries {
  readonly labels: Record<RequestLabel, string>;
  readonly byStatus: Map<string, Record<RequestLabel | "status", string>>;
}

/** One server's registry and the metrics it counts itself; the database's and the process's are read on scrape. */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter<RequestLabel | "status">({
    name: "silk_http_requests_total",
    help: "HTTP requests answered, by method, route, query (per-query routes) and status",
    labelNames: ["method", "route", "query", "status"],
    registers: [this.registry],
  });
  private readonly durations = new Histogram<RequestLabel>({
    name: "silk_http_request_duration_seconds",
    help: "time from a request's routing to the end of its answer, by method, route and query",
    labelNames: ["method", "route", "query"],
    buckets: REQUEST_DURATION_BUCKETS_SECONDS,
    registers: [this.registry],
  });
  private readonly inFlight = new Gauge({
    name: "silk_http_requests_in_flight",
    help: "HTTP requests routed and not yet answered",
    registers: [this.registry],
  });
  private readonly admissions = new Counter<"database" | "decision">({
    name: "silk_rate_limit_decisions_total",
    help: "token-bucket decisions on POST /v2/query of the hosted gateway, by database id and decision",
    labelNames: ["database", "decision"],
    registers: [this.registry],
  });
  private readonly transactions = new Counter<"outcome">({
    name: "silk_transactions_total",
    help: "write transactions since the database opened, by outcome (committed, aborted)",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  private readonly commitAnomalies = new Counter({
    name: "silk_commit_anomalies_total",
    help: "two-phase commits a cluster partition refused as intent_not_prepared (it aborted or never held the intent): a bug signal, each answered as that error",
    registers: [this.registry],
  });
  private readonly mapSize = partitionGauge(this.registry, "silk_lmdb_map_size_bytes", "LMDB map size of each in-process partition");
  private readonly usedBytes = partitionGauge(this.registry, "silk_lmdb_used_bytes", "bytes of each in-process partition's map in use (its pages up to the highest used)");
  private readonly freePages = partitionGauge(this.registry, "silk_lmdb_free_pages", "pages on each in-process partition's LMDB free list");
  private readonly readers = partitionGauge(this.registry, "silk_lmdb_readers", "live LMDB reader slots of each in-process partition, of every process");
  /** Requests routed and not yet answered; the gauge is set from it on scrape, so a request costs no gauge update. */
  private requestsInFlight = 0;
  /**
   * The label objects of each series seen, reused: prom-client hashes the labels it is given on every update, and a
   * fresh object per request (with its spread for the status) cost about three times the update itself.
   */
  private readonly seriesLabels = new Map<string, RequestSeries>();
  /** The query names of the project last seen, rebuilt when `silk dev` swaps in new queries. */
  private queryNames: { readonly queries: readonly CompiledQuery[]; readonly names: ReadonlySet<string> } = { queries: [], names: new Set() };

  constructor(private readonly database: StatisticsSource & { readonly queries: readonly CompiledQuery[] }) {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Counts the hosted gateway's decision on one `POST /v2/query`. */
  countAdmission(databaseId: string, decision: AdmissionDecision): void {
    this.admissions.inc({ database: databaseId, decision });
  }

  /** Installs the request hook; on the root, before any other hook, so that every request is counted. */
  install(app: FastifyInstance): void {
    // A callback hook, not an async one: it runs on every request and needs no promise.
    app.addHook("onRequest", (request, reply, done) => {
      const startedMs = performance.now();
      this.requestsInFlight += 1;
      // `close` comes once per response, whether it finished or its client went away, where fastify's onResponse
      // misses a request whose client left first.
      reply.raw.once("close", () => {
        this.requestsInFlight -= 1;
        const status = reply.raw.writableFinished ? String(reply.raw.statusCode) : ABORTED_STATUS;
        const series = this.series(request);
        let labels = series.byStatus.get(status);
        if (labels === undefined) {
          labels = { ...series.labels, status };
          series.byStatus.set(status, labels);
        }
        this.requests.inc(labels);
        this.durations.observe(series.labels, (performance.now() - startedMs) / 1000);
      });
      done();
    });
  }

  /** The registry's text, with the database's counters and storage read now. */
  async scrape(): Promise<string> {
    await this.readDatabase();
    return this.registry.metrics();
  }

  /**
   * The same metrics as prom-client's JSON, what `aggregateMetrics` adds up: a read worker of `silk serve --workers`
   * hands its own to the process that answers the scrape (bin/serve-workers.ts).
   */
  async json(): Promise<MetricsJson> {
    await this.readDatabase();
    return this.registry.getMetricsAsJSON();
  }

  /** Sets the gauges read on scrape: requests in flight, and the database's transaction counts and storage. */
  private async readDatabase(): Promise<void> {
    this.inFlight.set(this.requestsInFlight);
    const statistics = await this.database.statistics();
    this.transactions.reset();
    this.transactions.inc({ outcome: "committed" }, statistics.transactions.committed);
    this.transactions.inc({ outcome: "aborted" }, statistics.transactions.aborted);
    this.commitAnomalies.reset();
    this.commitAnomalies.inc(statistics.transactions.commitAnomalies);
    for (const gauge of [this.mapSize, this.usedBytes, this.freePages, this.readers]) gauge.reset();
    for (const storage of statistics.partitions) {
      const partition = { partition: String(storage.partition) };
      this.mapSize.set(partition, storage.mapSizeBytes);
      this.usedBytes.set(partition, storage.usedBytes);
      this.freePages.set(partition, storage.freePages);
      this.readers.set(partition, storage.readers);
    }
  }

  /**
   * A request's labels. The route is the pattern the router matched, never the path, and the query label is set only
   * for a query the project has: an unknown name (404 query_not_found) would otherwise add a series per name sent.
   */
  private series(request: FastifyRequest): RequestSeries {
    const { method } = request;
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    let query = "";
    if (route === QUERY_ROUTE) {
      const name = (request.params as { readonly name?: unknown }).name;
      if (typeof name === "string" && this.projectQueryNames().has(name)) query = name;
    }
    // A space cannot be in a method or a route pattern, so the key names one series.
    const key = `${method} ${route} ${query}`;
    let series = this.seriesLabels.get(key);
    if (series === undefined) {
      series = { labels: { method, route, query }, byStatus: new Map() };
      this.seriesLabels.set(key, series);
    }
    return series;
  }

  private projectQueryNames(): ReadonlySet<string> {
    const queries = this.database.queries;
    if (this.queryNames.queries !== queries) this.queryNames = { queries, names: new Set(queries.map((query) => query.name)) };
    return this.queryNames.names;
  }
}

/** One registry's metrics as prom-client's JSON (Registry.getMetricsAsJSON). */
export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/**
 * The metrics of several processes as one text: each series summed over the processes that report it, except where
 * prom-client's default metrics name another aggregation (event-loop lag averaged or its min and max kept, the
 * process start time left out, the Node version's first kept).
 */
export async function aggregateMetrics(sets: readonly MetricsJson[]): Promise<string> {
  return AggregatorRegistry.aggregate([...sets]).metrics();
}

/** The content type of `GET /metrics`: Prometheus' text format, as every prom-client registry writes it. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

function partitionGauge(registry: Registry, name: string, help: string): Gauge<"partition"> {
  return new Gauge({ name, help, labelNames: ["partition"], registers: [registry] });
}

export interface MetricsRoutesOptions {
  /** The text a scrape answers: this server's registry (ServerMetrics.scrape), or every read worker's together. */
  readonly scrape: () => Promise<string>;
}

/** `GET /metrics`, under the access rules of every other route (open on `silk serve`, an API key on `silk gateway`). */
export const metricsRoutes: FastifyPluginAsync<MetricsRoutesOptions> = async (app, options) => {
  const { scrape } = options;
  app.get("/metrics", async (_request, reply) => reply.type(METRICS_CONTENT_TYPE).send(await scrape()));
};
