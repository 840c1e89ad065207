/**
 * `silk dev`: `silk serve` for while a project is being written. It watches the project's `.hx` files and, a
 * moment after they change, checks them again: when they check, it swaps in the new schema and queries without
 * restarting the server (a new query's route answers, a removed one's is 404); when they do not, it prints the
 * diagnostics and keeps serving the last version that checked.
 *
 * A swap reopens the database on the same directory with the new project: the simplest way to take any schema
 * change, and cheap enough for development. Requests that arrive during a swap wait for it; the old handle closes
 * only once the requests running on it are done.
 */
import { statSync, watch, type FSWatcher } from "node:fs";
import type { Logger } from "pino";
import { Database, type DatabaseStatistics, type IndexInfo } from "../runtime/embedded.js";
import type { GatewayDatabase } from "../gateway/server.js";
import type { Embedder } from "../protocol/embedding.js";
import { asSilkError } from "../protocol/errors.js";
import { checkProject } from "../protocol/helixql/query-check.js";
import type { CompiledQuery } from "../protocol/helixql/query.js";
import { formatDiagnostics, type Schema, type SchemaSource, type Warning } from "../protocol/schema.js";
import { announceEmbedder, announceWarnings, closeOnSignals, listenGateway } from "./serve.js";
import { serveSettings, type ServeOptions } from "./serve-settings.js";
import { loadSchemaSources } from "./schema-files.js";

/** How long the files must be quiet before a reload: editors write a file in several steps. */
export const RELOAD_DEBOUNCE_MS = 100;

/**
 * The database the gateway serves in dev mode: it forwards every request to the handle opened on the last good
 * version of the project, and replaces that handle when a new version checks.
 */
class ReloadingDatabase implements GatewayDatabase {
  private requestsRunning = 0;
  private onIdle: (() => void) | undefined;
  private swap: Promise<void> | undefined;

  private constructor(
    private current: Database,
    private currentSources: readonly SchemaSource[],
    private readonly directory: string,
    private readonly timeoutMs: number,
    private readonly embedder: Embedder | undefined,
  ) {}

  static async open(directory: string, sources: readonly SchemaSource[], timeoutMs: number, embedder?: Embedder): Promise<ReloadingDatabase> {
    const database = await Database.open({ storage: { disk: directory }, schema: sources, embedder }, { defaultTimeoutMs: timeoutMs });
    return new ReloadingDatabase(database, sources, directory, timeoutMs, embedder);
  }

  get schema(): Schema | undefined {
    return this.current.schema;
  }

  get queries(): readonly CompiledQuery[] {
    return this.current.queries;
  }

  get warnings(): readonly Warning[] {
    return this.current.warnings;
  }

  get sources(): readonly SchemaSource[] {
    return this.currentSources;
  }

  run(tree: unknown): Promise<Record<string, unknown>> {
    return this.use((database) => database.run(tree));
  }

  runV2(tree: unknown): Promise<Record<string, unknown>> {
    return this.use((database) => database.runV2(tree));
  }

  queryJson(name: string, parameters: Readonly<Record<string, unknown>>): Promise<string> {
    return this.use((database) => database.queryJson(name, parameters));
  }

  indexStatuses(): Promise<IndexInfo[]> {
    return this.use((database) => database.indexStatuses());
  }

  /** The handle serving now: a reload starts its transaction counts again (Prometheus reads that as a reset). */
  statistics(): Promise<DatabaseStatistics> {
    return this.use((database) => database.statistics());
  }

  private async use<T>(work: (database: Database) => Promise<T>): Promise<T> {
    while (this.swap !== undefined) await this.swap;
    this.requestsRunning += 1;
    try {
      return await work(this.current);
    } finally {
      this.requestsRunning -= 1;
      if (this.requestsRunning === 0) this.onIdle?.();
    }
  }

  /**
   * Reopens the database with `sources`, which have checked. If that fails (an IO error), it reopens the last good
   * version and rethrows, so the server keeps answering.
   */
  async replace(sources: readonly SchemaSource[]): Promise<void> {
    let swapped!: () => void;
    this.swap = new Promise((done) => (swapped = done));
    try {
      if (this.requestsRunning > 0) await new Promise<void>((done) => (this.onIdle = done));
      this.onIdle = undefined;
      await this.current.close();
      try {
        this.current = await Database.open({ storage: { disk: this.directory }, schema: sources, embedder: this.embedder }, { defaultTimeoutMs: this.timeoutMs });
        this.currentSources = sources;
      } catch (cause) {
        this.current = await Database.open(
          { storage: { disk: this.directory }, schema: this.currentSources, embedder: this.embedder },
          { defaultTimeoutMs: this.timeoutMs },
        );
        throw cause;
      }
    } finally {
      this.swap = undefined;
      swapped();
    }
  }

  async close(): Promise<void> {
    while (this.swap !== undefined) await this.swap;
    await this.current.close();
  }
}

function sameSources(left: readonly SchemaSource[], right: readonly SchemaSource[]): boolean {
  return left.length === right.length && left.every((source, i) => source.file === right[i].file && source.text === right[i].text);
}

/** Checks the project again and swaps it in if it checks; reports either outcome. Never throws. */
async function reload(project: string, database: ReloadingDatabase, logger: Logger): Promise<void> {
  try {
    const sources = loadSchemaSources(project);
    if (sameSources(sources, database.sources)) return;
    const { diagnostics } = checkProject(sources);
    if (diagnostics.length > 0) {
      process.stdout.write(`${formatDiagnostics(diagnostics, sources)}\n`);
      const count = diagnostics.length;
      process.stderr.write(`silk dev: ${count} ${count === 1 ? "error" : "errors"}; still serving the last version that checked\n`);
      return;
    }
    await database.replace(sources);
    const count = database.queries.length;
    process.stdout.write(`silk dev: reloaded ${project}: ${count} ${count === 1 ? "query" : "queries"}\n`);
    announceWarnings(database.warnings, logger);
  } catch (cause) {
    const error = asSilkError(cause);
    if (error.kind !== "user") logger.error({ err: cause }, `reload failed: ${error.code}: ${error.message}`);
    process.stderr.write(`silk dev: ${error.code}: ${error.message}; still serving the last version that checked\n`);
  }
}

/**
 * Calls `onChange` once the project's `.hx` files have been quiet for RELOAD_DEBOUNCE_MS after a change. A
 * directory is watched recursively, as the project's files are found.
 */
function watchProject(project: string, onChange: () => void): { close(): void } {
  let timer: NodeJS.Timeout | undefined;
  const watcher: FSWatcher = watch(project, { recursive: statSync(project).isDirectory() }, (_event, file) => {
    // Some platforms do not say which file changed; then any change may matter.
    if (file !== null && !file.endsWith(".hx")) return;
    clearTimeout(timer);
    timer = setTimeout(onChange, RELOAD_DEBOUNCE_MS);
  });
  // A watcher fails when its directory goes away; the server keeps serving the last good version without it.
  watcher.on("error", (cause) => {
    process.stderr.write(`silk dev: stopped watching ${project}: ${cause.message}; still serving the last version that checked\n`);
  });
  return {
    close: () => {
      clearTimeout(timer);
      watcher.close();
    },
  };
}

/** Starts the server and the watcher; resolves once it listens. The process then lives until a signal closes it. */
export async function runDev(options: ServeOptions & { readonly project: string }): Promise<void> {
  const settings = serveSettings(options);
  const database = await ReloadingDatabase.open(settings.data, loadSchemaSources(options.project), settings.timeoutMs, settings.embedder);
  const server = await listenGateway(database, settings, options.project, () => database.close());
  announceEmbedder(settings);
  announceWarnings(database.warnings, settings.logger);
  // Reloads run one after another, so a change made during a reload is checked after it.
  let reloads = Promise.resolve();
  const watcher = watchProject(options.project, () => {
    reloads = reloads.then(() => reload(options.project, database, settings.logger));
  });
  process.stdout.write(`silk dev: watching ${options.project} for changes to .hx files\n`);
  closeOnSignals(
    server,
    async () => {
      watcher.close();
      await reloads;
      await database.close();
    },
    settings.logger,
  );
}
