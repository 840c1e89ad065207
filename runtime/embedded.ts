/**
 * The embedded runtime: the whole engine (coordinator, partition actors, in-process transport) inside the
 * application's process. `open()` checks its options strictly: storage, mode and cache are fixed for the life of
 * the handle, and gateway headers or routing options are refused (they belong to the hosted gateway). The project's
 * QUERY definitions are checked at open and run by name with `query()`.
 *
 * Storage: `{ disk: path }` is durable LMDB under that directory; `"memory"` is LMDB in a private temporary
 * directory (on /dev/shm when the machine has it) without fsync. That directory is deleted as soon as its LMDB
 * environments are open: their files live on through the open descriptors and memory maps until the handle closes
 * or the process ends, so a process that dies before `close()` leaves nothing behind.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SilkError } from "../protocol/errors.js";
import { checkProject } from "../protocol/helixql/query-check.js";
import { renderOutput, renderOutputJson } from "../protocol/helixql/output.js";
import { bindParameters, type CompiledQuery } from "../protocol/helixql/query.js";
import { formatDiagnostics, type Schema, type SchemaSource, type Warning } from "../protocol/schema.js";
import { decodeRequest } from "../protocol/tree.js";
import type { WireRequest } from "../protocol/tree-wire.js";
import type { ClockMs } from "../node/exec/deadline.js";
import type { QueryResult } from "../protocol/messages.js";
import type { ExplainStep } from "../node/exec/planner.js";
import { PartitionActor } from "../node/actor/partition-actor.js";
import type { WriteGroupBounds } from "../node/actor/write-group.js";
import { PartitionStore, type StorageStatus } from "../node/store/partition-store.js";
import { storageFailure } from "../node/store/storage-errors.js";
import { migratePartition, storedVersion, type MigrationOptions } from "../node/store/schema-migration.js";
import type { SchemaHistory } from "../protocol/helixql/schema-versions.js";
import type { Embedder } from "../protocol/embedding.js";
import { schemaIndexDefinitions } from "../protocol/schema-indexes.js";
import { uniqueEdgeLabels } from "../node/exec/unique-edges.js";
import { mergeIndexStatuses, type IndexStatus } from "../protocol/indexes.js";
import type { ImportBatch, ImportResult } from "../cluster/bulk-import.js";
import { Coordinator, type CommitPhase, type TransactionCounts } from "../cluster/coordinator.js";
import type { ValidationPhase } from "../cluster/unique-builds.js";
import { LmdbDecisionLog } from "../cluster/decision-log.js";
import { embedderFromEnvironment } from "../embedders/index.js";
import { writeFileAtomic } from "../platform/durable-files.js";
import { PartitionMap } from "../cluster/partition-map.js";
import { InProcessTransport } from "../cluster/transport.js";
import { acquireWriterLock, type WriterLock } from "./writer-lock.js";
import { checkS3Storage, downloadSnapshot, writeCacheState, type S3Storage } from "./bucket-storage.js";
import { catchUpAndFence, closeWriter, moveCopyIntoCache, prepareCache, restoredCopyFolder, retireReplacedCache, type CheckedS3Storage, type PreparedCache } from "./bucket-database.js";
import { BucketFollower, type FollowerStatus, type RestoredCopy } from "./bucket-follower.js";
import { readManifest as readBucketManifest } from "./bucket-manifest.js";
import { SegmentShipper, ShippedDecisionLog } from "./segment-shipper.js";
import { BucketSnapshotter, type SnapshotterStatus } from "./bucket-snapshots.js";

export type Storage = "memory" | { readonly disk: string } | { readonly s3: S3Storage };

/** Where a handle's data lives and how far it is (`Database.status()`). */
export type DatabaseStatus =
  | { readonly storage: "memory" | "disk" | "cluster"; readonly mode: "writer" | "readonly" }
  | { readonly storage: "s3"; readonly mode: "writer"; readonly s3: BucketWriterStatus }
  | { readonly storage: "s3"; readonly mode: "readonly"; readonly s3: BucketFollowerStatus };

export interface BucketWriterStatus extends SnapshotterStatus {
  readonly bucket: string;
  readonly prefix: string;
  /** This writer's epoch (the fence). */
  readonly epoch: number;
  readonly durability: "object" | "local";
  /** The last segment this writer stored. */
  readonly position: number;
  /** Bytes staged and not yet in the bucket. */
  readonly unshippedBytes: number;
}

export interface BucketFollowerStatus extends FollowerStatus {
  readonly bucket: string;
  readonly prefix: string;
}

export interface OpenOptions {
  readonly storage: Storage;
  /** Default "writer". A read-only handle refuses every write with `read_only`. */
  readonly mode?: "writer" | "readonly";
  /** Fixed at open. `mapSizeBytes` is LMDB's initial map size per partition (it grows by itself when needed). */
  readonly cache?: { readonly mapSizeBytes?: number };
  /**
   * The project's HelixQL text (or files): schema declarations and QUERY definitions, which `query()` runs. Without
   * one the database is schemaless: any label, any properties, no queries.
   */
  readonly schema?: string | SchemaSource | readonly SchemaSource[];
  /** Partition actors (default 1). Fixed when the database is created; reopening must give the same number. */
  readonly partitions?: number;
  /**
   * What `Embed(text)` calls: one of the providers the package exports (`OpenAiCompatibleEmbedder`,
   * `LocalModelEmbedder`, `FeatureHashingEmbedder`) or any object with `embed(texts)`. Without it, the provider the
   * `SILK_EMBED_*` environment variables choose, as for the servers (docs/EMBEDDING.md); with neither, Embed is
   * `embedding_not_configured`.
   */
  readonly embedder?: Embedder;
}

/**
 * Internal options for tests, tools and the servers: clocks, fault injection, index build chunks, the default
 * deadline. Not part of the public API.
 */
export interface InternalOpenOptions {
  readonly now?: () => Date;
  /** The monotonic clock execution deadlines and the partitions' reader checks are measured on (tests pass a fake one). */
  readonly clockMs?: ClockMs;
  /** The deadline of every request that sets no `timeout_ms`, in milliseconds (the servers' `--timeout-ms`). */
  readonly defaultTimeoutMs?: number;
  readonly onCommitPhase?: (phase: CommitPhase, txid: string) => void;
  readonly onValidationPhase?: (phase: ValidationPhase) => void;
  readonly indexBuildChunkEntities?: number;
  /** A schema migration's list size and a hook after each list (node/store/schema-migration.ts). */
  readonly migration?: MigrationOptions;
  /** How often each partition's writer clears dead readers' slots, at most (node/store/partition-store.ts). */
  readonly readerCheckIntervalMs?: number;
  /**
   * How large a partition's write groups may grow (node/actor/write-group.ts); `{ invocations: 1 }` commits every write
   * invocation alone (the commit benchmark's baseline).
   */
  readonly writeGroup?: Partial<WriteGroupBounds>;
}

/**
 * One index of the database, of any family (see docs/INDEXES.md): over every partition, counters summed. A union on
 * `family`: `unique` and `type` (the field's scalar type) exist on secondary entries only, so narrow on `family`
 * before reading a family's options; vector and text entries carry no `type` key at all.
 */
export type IndexInfo = IndexStatus;

/** One in-process partition's LMDB environment, as the servers' `/metrics` reports it. */
export interface PartitionStorageStatistics {
  /** The partition's number (`partitions/p<i>`). */
  readonly partition: number;
  /** LMDB's map size: how large the file may grow before lmdb-js enlarges the map. */
  readonly mapSizeBytes: number;
  /** Pages up to the highest one ever used, in bytes: how much of the map is in use. */
  readonly usedBytes: number;
  /** Of the used pages, those on LMDB's free list (reused by later commits once no snapshot needs them). */
  readonly freePages: number;
  /** Live reader slots of the environment, every process's (dead processes' slots are cleared first). */
  readonly readers: number;
}

/**
 * What a Database reports about itself for monitoring (the servers' `GET /metrics`): its write transactions since it
 * opened, by outcome, and the storage of the partitions this process holds.
 */
export interface DatabaseStatistics {
  readonly transactions: TransactionCounts;
  /** Empty when the partitions live in other processes (a cluster's database): they report their own. */
  readonly partitions: readonly PartitionStorageStatistics[];
}

const OPTION_KEYS = new Set(["storage", "mode", "cache", "schema", "partitions", "embedder"]);
/** Options of the hosted gateway that an embedded handle must refuse, by name, with a clear message. */
const GATEWAY_OPTION_KEYS = new Set([
  "headers", "apiKey", "api_key", "authorization", "databaseId", "database_id", "tenantId", "tenant_id",
  "routing", "route", "replica", "readReplica", "staleness", "maxStalenessMs", "region", "warm", "requireWriter",
]);
const MANIFEST = "silk.json";
/**
 * The data format this Silk writes. 2 keeps each vector record's label and properties apart as well (node/actor/vector-reads.ts);
 * 3 stores adjacency packed (node/store/adjacency.ts). A writer opens format 1 and 2 directories: each partition store
 * converts its adjacency at open (node/store/adjacency-upgrade.ts; a vector record without its props value is read whole),
 * and only then is the directory marked 3, so an older Silk refuses it. A read-only open of a directory below 3 is
 * refused: its adjacency is not in the layout this Silk reads.
 */
const FORMAT_VERSION = 3;
const FORMATS_READ: ReadonlySet<number> = new Set([1, 2, FORMAT_VERSION]);

interface Manifest {
  readonly format: number;
  readonly partitions: number;
}

function checkOptions(options: OpenOptions): void {
  if (typeof options !== "object" || options === null) throw new SilkError("invalid_option", "open() takes an options object");
  for (const key of Object.keys(options)) {
    if (GATEWAY_OPTION_KEYS.has(key)) {
      throw new SilkError("invalid_option", `${key} is a gateway header or routing option; the embedded runtime does not take it`);
    }
    if (!OPTION_KEYS.has(key)) throw new SilkError("invalid_option", `unknown option ${JSON.stringify(key)}`);
  }
  const { storage, mode, cache } = options;
  const disk = typeof storage === "object" && storage !== null && Object.keys(storage).length === 1 && "disk" in storage && typeof storage.disk === "string" && storage.disk !== "";
  const s3 = typeof storage === "object" && storage !== null && Object.keys(storage).length === 1 && "s3" in storage;
  if (storage !== "memory" && !disk && !s3) {
    throw new SilkError("invalid_option", 'storage must be "memory", { disk: "<directory>" } or { s3: { bucket, prefix, endpoint?, region?, credentials?, cacheDir? } }');
  }
  if (mode !== undefined && mode !== "writer" && mode !== "readonly") throw new SilkError("invalid_option", 'mode must be "writer" or "readonly"');
  if (options.embedder !== undefined && typeof (options.embedder as Partial<Embedder> | null)?.embed !== "function") {
    throw new SilkError("invalid_option", "embedder must be an object with an embed(texts) method (see embedders/index.ts)");
  }
  if (options.schema !== undefined && !validSchemaOption(options.schema)) {
    throw new SilkError("invalid_option", "schema must be HelixQL text, a { file, text } source (both strings) or a list of them");
  }
  if (mode === "readonly" && storage === "memory") throw new SilkError("invalid_option", "a memory database cannot be opened read-only: it starts empty");
  if (cache !== undefined) {
    for (const key of Object.keys(cache)) if (key !== "mapSizeBytes") throw new SilkError("invalid_option", `unknown cache option ${JSON.stringify(key)}`);
    const size = cache.mapSizeBytes;
    if (size !== undefined && (!Number.isSafeInteger(size) || size < 1 << 20)) throw new SilkError("invalid_option", "cache.mapSizeBytes must be an integer of at least 1 MiB");
  }
}

function validSchemaOption(schema: unknown): boolean {
  const source = (item: unknown): boolean => typeof item === "object" && item !== null && typeof (item as SchemaSource).file === "string" && typeof (item as SchemaSource).text === "string";
  return typeof schema === "string" || (Array.isArray(schema) ? schema.every(source) : source(schema));
}

/**
 * A writer without a schema would drop a schema's indexes (a writer's open reconciles them with its schema) and write
 * what the schema refuses: a database that recorded a schema version (every writer with a project records one) is
 * refused before any partition opens as a writer. Its partitions are looked at read-only.
 */
async function refuseSchemaDatabase(directory: string, map: PartitionMap): Promise<void> {
  for (const range of map.ranges) {
    const path = join(directory, "partitions", `p${range.index}`);
    if (!existsSync(join(path, "data.mdb"))) continue;
    const probe = PartitionStore.open({ path, readOnly: true, noSync: false, idFirst: range.first, idLast: range.last });
    const version = probe.schemaVersion();
    await probe.close();
    if (version !== undefined) {
      throw new SilkError("invalid_option", `${directory} holds a database with a schema (version ${version}): open it with its project's schema (open({ schema }), --project or --schema), or read-only; a writer without it would drop the schema's indexes and stop checking writes`);
    }
  }
}

interface Project {
  readonly schema: Schema | undefined;
  /** The schema's versions and MIGRATIONs (protocol/helixql/schema-versions.ts); undefined without a schema. */
  readonly history?: SchemaHistory;
  readonly queries: readonly CompiledQuery[];
  readonly warnings: readonly Warning[];
}

/**
 * Checks the project's `.hx` sources (schema declarations and QUERY definitions). Any diagnostic refuses the open
 * with all of them in the message: `schema_syntax` when any is a syntax error (the others may be its echoes),
 * else the first one's code.
 */
function loadProject(schema: OpenOptions["schema"]): Project {
  if (schema === undefined) return { schema: undefined, queries: [], warnings: [] };
  const sources = typeof schema === "string" ? [{ file: "<schema>", text: schema }] : Array.isArray(schema) ? [...schema] : [schema as SchemaSource];
  const checked = checkProject(sources);
  const first = checked.diagnostics[0];
  if (first !== undefined) {
    const code = checked.diagnostics.some((d) => d.code === "schema_syntax") ? "schema_syntax" : first.code;
    throw new SilkError(code, formatDiagnostics(checked.diagnostics, sources));
  }
  if (checked.schema === undefined) throw new SilkError("internal", "internal error (a bug in Silk): the project checked without diagnostics but has no schema");
  return { schema: checked.schema, history: checked.history, queries: checked.queries, warnings: checked.warnings };
}

/**
 * The directory's manifest, created for a new database. `durable` false (memory storage, a temporary directory that
 * dies with the handle) writes it without flushing.
 */
function readManifest(directory: string, partitions: number | undefined, create: boolean, durable: boolean): Manifest {
  const path = join(directory, MANIFEST);
  if (existsSync(path)) {
    const manifest = JSON.parse(readFileSync(path, "utf8")) as Manifest;
    if (!FORMATS_READ.has(manifest.format)) {
      throw new SilkError("invalid_option", `${directory} holds data format ${manifest.format}; this Silk reads ${[...FORMATS_READ].slice(0, -1).join(", ")} and ${FORMAT_VERSION}`);
    }
    if (partitions !== undefined && partitions !== manifest.partitions) {
      throw new SilkError("invalid_option", `${directory} was created with ${manifest.partitions} partitions, not ${partitions}`);
    }
    return manifest;
  }
  if (!create) throw new SilkError("invalid_option", `${directory} holds no Silk database`);
  const manifest: Manifest = { format: FORMAT_VERSION, partitions: partitions ?? 1 };
  new PartitionMap(manifest.partitions); // validates the count before anything is written
  mkdirSync(directory, { recursive: true });
  const text = JSON.stringify(manifest, null, 2) + "\n";
  if (durable) writeFileAtomic(path, text);
  else writeFileSync(path, text);
  return manifest;
}

/**
 * What a Database runs on: the coordinator, the partitions' index statuses, and how to close the partitions. The
 * embedded runtime's engine holds the actors and stores in-process; a cluster's (runtime/remote.ts) holds a NATS
 * connection. Closing the Database releases its prepared queries first, then the engine.
 */
export interface DatabaseEngine {
  readonly coordinator: Coordinator;
  /** Every partition's index statuses merged (synchronous: in-process partitions only; a cluster's throws). */
  indexes(): IndexInfo[];
  indexStatuses(): Promise<IndexInfo[]>;
  /** The storage of the partitions in this process (none for a cluster's). */
  partitionStorage(): PartitionStorageStatistics[];
  /** Makes the next reads of the partitions in this process start from the newest commit (see Database.refresh). */
  renewReads(): void;
  /** Where the data lives and, for a bucket database, how far this handle is. */
  status(): DatabaseStatus;
  /**
   * A bucket writer's: settles when a write that has returned may be acknowledged (its segment stored, or on local
   * disk within the backlog's bounds: runtime/segment-shipper.ts); rejects when it never will be.
   */
  readonly acknowledged?: () => Promise<void>;
  close(): Promise<void>;
}

/** A prepared operation tree (see Database.prepare). */
export interface PreparedQuery {
  run(parameters?: Readonly<Record<string, unknown>>): Promise<QueryResult>;
  release(): Promise<void>;
}

export class Database {
  private closed = false;
  readonly schema: Schema | undefined;
  /** The project's QUERY definitions, in the order of their files. */
  readonly queries: readonly CompiledQuery[];
  /**
   * What the project's check warned about (protocol/warnings.ts): constructs HelixDB accepts that Silk loads its
   * own way. An embedded open prints nothing; the servers log these when they start. Empty without a project.
   */
  readonly warnings: readonly Warning[];
  private readonly queryByName: ReadonlyMap<string, CompiledQuery>;
  /** Each query's tree, prepared on its first call and released on close. */
  private readonly preparedQueries = new Map<string, Promise<PreparedQuery>>();
  /** The prepared queries whose preparation finished (a subset of preparedQueries). */
  private readonly readyQueries = new Map<string, PreparedQuery>();

  private readonly coordinator: Coordinator;

  private constructor(
    private readonly engine: DatabaseEngine,
    project: Project,
    readonly mode: "writer" | "readonly",
  ) {
    this.coordinator = engine.coordinator;
    this.schema = project.schema;
    this.queries = project.queries;
    this.warnings = project.warnings;
    this.queryByName = new Map(project.queries.map((query) => [query.name, query]));
  }

  /**
   * A database over a coordinator whose partitions live elsewhere (runtime/remote.ts): the project is checked like
   * open() does, then `engineOf` builds the engine for its schema (recovered, its index catalog loaded).
   */
  static async fromEngine(
    schema: OpenOptions["schema"],
    mode: "writer" | "readonly",
    engineOf: (schema: Schema | undefined) => Promise<DatabaseEngine>,
  ): Promise<Database> {
    const project = loadProject(schema);
    return new Database(await engineOf(project.schema), project, mode);
  }

  static async open(options: OpenOptions, internal: InternalOpenOptions = {}): Promise<Database> {
    checkOptions(options);
    const embedder = options.embedder ?? embedderFromEnvironment(process.env);
    const project = loadProject(options.schema);
    const schema = project.schema;
    const mode = options.mode ?? "writer";
    const memory = options.storage === "memory";
    const s3 = typeof options.storage === "object" && "s3" in options.storage ? checkS3Storage(options.storage.s3, mode) : undefined;
    const directory = memory ? mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "silk-")) : s3 !== undefined ? s3.cacheDir : (options.storage as { disk: string }).disk;
    let lock: WriterLock | undefined;
    // LMDB environments opened so far; a failed open closes them, or lmdb-js's per-path env cache breaks later opens.
    const opened: { close(): Promise<void> }[] = [];
    let bucket: PreparedCache | undefined;
    const release = (): void => {
      lock?.release();
      bucket?.store.close();
      if (memory) rmSync(directory, { recursive: true, force: true });
    };
    try {
      const now = internal.now ?? (() => new Date());
      if (s3 !== undefined) {
        // A bucket database's cache is written by its follower too: one handle per cacheDir, whatever its mode.
        mkdirSync(directory, { recursive: true });
        lock = acquireWriterLock(directory);
        bucket = await prepareCache(s3, mode, directory, options.partitions, now());
        if (bucket.outbox !== undefined) opened.push(bucket.outbox);
      } else if (mode === "writer" && !memory) {
        // The lock first: only the writer may create the manifest or mark it with a newer format. A memory database's
        // directory is its own (mkdtemp) and deleted once open: there is no other writer to keep out.
        mkdirSync(directory, { recursive: true });
        lock = acquireWriterLock(directory);
      }
      const manifest = readManifest(directory, bucket?.partitions ?? options.partitions, mode === "writer" || bucket !== undefined, !memory);
      const map = new PartitionMap(manifest.partitions);
      const readOnly = mode === "readonly";
      // A follower applies the bucket's segments to its cache: its LMDB environments are written, by it alone.
      const storesReadOnly = readOnly && bucket === undefined;
      if (readOnly && manifest.format !== FORMAT_VERSION) {
        throw new SilkError("invalid_option", `${directory} holds data format ${manifest.format}, which this Silk reads only after converting it: open it once as a writer (mode "writer"), which upgrades it to format ${FORMAT_VERSION}, then read-only`);
      }
      if (schema === undefined && !readOnly && !memory) await refuseSchemaDatabase(directory, map);
      const openStore = (folder: string, range: (typeof map.ranges)[number]): PartitionStore =>
        PartitionStore.open({
          path: join(folder, "partitions", `p${range.index}`),
          readOnly: storesReadOnly,
          noSync: memory,
          idFirst: range.first,
          idLast: range.last,
          mapSizeBytes: options.cache?.mapSizeBytes,
          indexes: schemaIndexDefinitions(schema),
          uniqueAcrossPartitions: map.count > 1,
          uniqueEdgeLabels: uniqueEdgeLabels(schema),
          readerCheckIntervalMs: internal.readerCheckIntervalMs,
          clockMs: internal.clockMs,
        });
      // A follower that restores itself while it serves replaces these in place (bucket-follower.ts).
      const stores = map.ranges.map((range) => openStore(directory, range));
      opened.push(...stores);
      // Every store converted its partition at open: only now may the directory say so.
      if (manifest.format !== FORMAT_VERSION) writeFileAtomic(join(directory, MANIFEST), JSON.stringify({ ...manifest, format: FORMAT_VERSION }, null, 2) + "\n");
      const history = project.history;
      // A follower's records are the writer's, at whatever schema version the writer migrated them to.
      if (history !== undefined && !(readOnly && bucket !== undefined)) {
        if (readOnly) {
          const behind = stores.map((store) => storedVersion(store, history)).find((version) => version !== history.version);
          if (behind !== undefined) {
            throw new SilkError("invalid_option", `${directory} holds records of schema version ${behind} and the project is at schema::${history.version}: open it once as a writer, which migrates them`);
          }
        } else {
          for (const store of stores) migratePartition(store, history, now(), internal.migration);
        }
      }
      const decisions = new LmdbDecisionLog(join(directory, "coordinator"), { readOnly: storesReadOnly, noSync: memory, clockMs: internal.clockMs });
      opened.push(decisions);
      let shipper: SegmentShipper | undefined;
      let snapshotter: BucketSnapshotter | undefined;
      if (bucket !== undefined && s3 !== undefined && !readOnly) {
        const nextSeq = await catchUpAndFence(bucket, stores, decisions);
        shipper = new SegmentShipper({
          store: bucket.store,
          epoch: bucket.manifest!.manifest.epoch,
          nextSeq,
          durability: s3.durability,
          outbox: bucket.outbox,
          clockMs: internal.clockMs,
          onShipped: (seq, bytes) => snapshotter?.shipped(seq, bytes),
        });
        snapshotter = new BucketSnapshotter({
          store: bucket.store,
          directory,
          stores,
          decisions,
          shipper,
          manifest: bucket.manifest!,
          everySegments: s3.snapshotEverySegments,
          everyBytes: s3.snapshotEveryBytes,
          retentionMs: s3.retentionMs,
          partBytes: s3.snapshotPartBytes,
          now,
          clockMs: internal.clockMs,
        });
      }
      const actors = stores.map(
        (store, partition) => new PartitionActor({
            store,
            shipping: shipper?.logFor(partition),
            schema,
            writable: !readOnly,
            now,
            clockMs: internal.clockMs,
            indexBuildChunkEntities: internal.indexBuildChunkEntities,
            embedder,
            writeGroup: internal.writeGroup,
          }),
      );
      // Nothing opens a memory database's files by name again (it has no writer lock and no other handle), so they
      // can go now and die with the process: a crash before close() leaked the whole directory (73 MB, issue 20).
      if (memory) rmSync(directory, { recursive: true, force: true });
      const coordinator = new Coordinator({
        transport: new InProcessTransport(actors),
        map,
        decisions: shipper === undefined ? decisions : new ShippedDecisionLog(decisions, shipper),
        schema,
        writable: !readOnly,
        now,
        clockMs: internal.clockMs,
        defaultTimeoutMs: internal.defaultTimeoutMs,
        onCommitPhase: internal.onCommitPhase,
        onValidationPhase: internal.onValidationPhase,
        embedder,
      });
      let follower: BucketFollower | undefined;
      // Where a follower's data is: the cache, or the copy it restored beside it while serving (moved in at close).
      let served = directory;
      if (bucket !== undefined && s3 !== undefined && readOnly) {
        const followerState = (folder: string, position: number): void =>
          writeCacheState(folder, { bucket: s3.bucket, prefix: s3.prefix, role: "follower", epoch: 0, clean: false, position });
        const objects = bucket.store;
        let copies = 0;
        const restore = async (): Promise<RestoredCopy> => {
          copies += 1;
          const folder = restoredCopyFolder(directory, copies);
          rmSync(folder, { recursive: true, force: true });
          const current = await readBucketManifest(objects);
          if (current?.manifest.snapshotFolder === undefined) throw new SilkError("storage_unavailable", `${directory}: the bucket's retention deleted segments this follower needs, and its manifest names no snapshot: the bucket is damaged`);
          await downloadSnapshot(objects, current.manifest.snapshotFolder, folder);
          const fresh = map.ranges.map((range) => openStore(folder, range));
          const replaced: PartitionStore[] = [];
          let retiring = served;
          return {
            stores: fresh,
            position: current.manifest.snapshot,
            install: (position) => {
              followerState(folder, position);
              actors.forEach((actor, partition) => replaced.push(actor.replaceStore(fresh[partition]!)));
              stores.splice(0, stores.length, ...fresh);
              [retiring, served] = [served, folder];
            },
            retire: async () => {
              await Promise.all(replaced.map((store) => store.close()));
              if (retiring === directory) retireReplacedCache(s3, directory);
              else rmSync(retiring, { recursive: true, force: true });
              await coordinator.loadIndexCatalog();
            },
            discard: async () => {
              await Promise.all(fresh.map((store) => store.close()));
              rmSync(folder, { recursive: true, force: true });
            },
          };
        };
        follower = new BucketFollower({
          store: objects,
          stores,
          position: bucket.position,
          intervalMs: s3.followIntervalMs,
          exclusive: (work) => coordinator.exclusive(work),
          onApplied: (position) => followerState(served, position),
          restore,
          clockMs: internal.clockMs,
        });
        await follower.poll();
        follower.start();
      }
      if (readOnly) {
        // A follower holds a transaction in doubt only until the segment that decides it arrives (bucket-follower.ts).
        if (bucket === undefined && stores.some((store) => store.pendingIntents().length > 0)) {
          throw new SilkError("invalid_option", `${directory} has transactions awaiting recovery; open it once as a writer first`);
        }
      } else await coordinator.recover();
      await coordinator.loadIndexCatalog();
      for (const actor of actors) actor.startIndexBuilds();
      const engine: DatabaseEngine = {
        coordinator,
        indexes: () => mergeIndexStatuses(actors.map((actor) => actor.indexStatuses())),
        indexStatuses: async () => mergeIndexStatuses(actors.map((actor) => actor.indexStatuses())),
        partitionStorage: () => stores.map((store, partition) => storageStatistics(partition, store)),
        renewReads: () => {
          for (const store of stores) store.renewReads();
        },
        ...(shipper === undefined ? {} : { acknowledged: () => shipper.acknowledged() }),
        status: (): DatabaseStatus => {
          if (s3 !== undefined && follower !== undefined) return { storage: "s3", mode: "readonly", s3: { bucket: s3.bucket, prefix: s3.prefix, ...follower.status() } };
          if (s3 !== undefined && shipper !== undefined && snapshotter !== undefined) {
            return {
              storage: "s3",
              mode: "writer",
              s3: { bucket: s3.bucket, prefix: s3.prefix, epoch: shipper.epoch, durability: s3.durability, position: shipper.storedSegment(), unshippedBytes: shipper.unshipped(), ...snapshotter.status() },
            };
          }
          return { storage: memory ? "memory" : "disk", mode };
        },
        close: async () => {
          await follower?.stop();
          await Promise.all(actors.map((actor) => actor.stop()));
          await coordinator.settle();
          // What the shipper could not store was never acknowledged (object durability) or stays in the outbox (local).
          const shipped = shipper === undefined || (await shipper.flush().then(() => true, () => false));
          // A snapshot copies the stores: it finishes before they close.
          await snapshotter?.stop();
          await Promise.all(stores.map((store) => store.close()));
          await decisions.close();
          await bucket?.outbox?.close();
          try {
            if (shipper !== undefined && snapshotter !== undefined && bucket !== undefined && s3 !== undefined) await closeWriter(s3, bucket, shipper, snapshotter, directory, shipped, now());
            if (served !== directory) moveCopyIntoCache(served, directory);
          } finally {
            release();
          }
        },
      };
      return new Database(engine, project, mode);
    } catch (cause) {
      await Promise.all(opened.map((handle) => handle.close()));
      release();
      throw storageFailure(cause, directory) ?? cause;
    }
  }

  /**
   * Runs one `/v2/query` request body (the operation tree) as one transaction. `options` exists only to refuse
   * gateway headers and routing options with a clear error.
   */
  async run(tree: unknown, options?: Record<string, unknown>): Promise<QueryResult> {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    if (options !== undefined && Object.keys(options).length > 0) {
      throw new SilkError("invalid_option", `the embedded runtime takes no request options (got ${Object.keys(options).join(", ")}): gateway headers and routing options are refused`);
    }
    const plan = decodeRequest(tree);
    return this.acknowledge(plan.requestType, this.coordinator.run(plan));
  }

  /** A write's answer once the engine may acknowledge it (a bucket writer's shipper); a read's at once. */
  private acknowledge<T>(requestType: "read" | "write", answer: Promise<T>): Promise<T> {
    const acknowledged = this.engine.acknowledged;
    if (requestType === "read" || acknowledged === undefined) return answer;
    return answer.then(async (value) => {
      await acknowledged();
      return value;
    });
  }

  /**
   * Runs a `/v2/query` body as that route answers it, HelixDB v3's wire: as `run` does, but the answer's IDs are
   * JsonId (protocol/ids.ts), which the route writes as JSON numbers. `run` keeps decimal strings: an application
   * in the same process gets IDs it can hold in JavaScript without losing digits.
   */
  async runV2(tree: unknown): Promise<QueryResult> {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    const plan = decodeRequest(tree);
    return this.acknowledge(plan.requestType, this.coordinator.run({ ...plan, idsAsNumbers: true }));
  }

  /**
   * Decodes and checks a tree once for many runs; each `run(parameters)` is one transaction with the tree's
   * parameters overridden by the given ones. This is how repeated queries avoid re-sending and re-decoding the
   * tree (HelixQL endpoints are prepared this way). Call `release()` when done with it.
   */
  async prepare(tree: unknown): Promise<PreparedQuery> {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    const plan = decodeRequest(tree);
    if (plan.requestType === "write" && this.mode === "readonly") throw new SilkError("read_only", "this database was opened read-only");
    const prepared = await this.coordinator.prepare(plan);
    return {
      run: (parameters = {}) => {
        // Not async, for the reason runQuery gives; a failure is still a rejection.
        if (this.closed) return Promise.reject(new SilkError("closed", "this database handle was closed"));
        if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) {
          return Promise.reject(new SilkError("invalid_type", "parameters must be an object"));
        }
        return this.acknowledge(plan.requestType, prepared.run(parameters));
      },
      release: () => prepared.release(),
    };
  }

  /**
   * Runs the project's QUERY `name` as one transaction and answers what its RETURN clause builds (the body of
   * `POST /<name>`). `parameters` are checked and coerced against the query's declaration before anything runs.
   * The query's tree is decoded and sent to the partitions once, on its first call, and kept until close().
   */
  query(name: string, parameters: Readonly<Record<string, unknown>> = {}): Promise<unknown> {
    return this.runQuery(name, parameters, renderOutput);
  }

  /**
   * What query() answers, as JSON text (bigints as decimal strings): the body of `POST /<name>`, written straight
   * from the results by the same walk that builds query()'s answer (protocol/helixql/output.ts), without its objects.
   */
  queryJson(name: string, parameters: Readonly<Record<string, unknown>> = {}): Promise<string> {
    return this.runQuery(name, parameters, renderOutputJson);
  }

  /**
   * Runs the project's read QUERY `name` once and answers the access path of each source step it ran: whether its
   * candidates came from an index (which one), a scan of one label, or a scan of every record, and how many there
   * were (the `$explain` of a `/v2/query` request with `"explain": true`; docs/HELIXQL.md). A write QUERY is refused
   * (`unsupported_operation`): explaining runs the query, and would write.
   */
  async explainQuery(name: string, parameters: Readonly<Record<string, unknown>> = {}): Promise<readonly ExplainStep[]> {
    const query = this.projectQuery(name);
    if (query.requestType === "write") throw new SilkError("unsupported_operation", `${name} writes: explainQuery runs the query, so it explains read queries only`);
    const bound = bindParameters(query, parameters);
    if (query.tree === undefined) return [];
    const prepared = await this.prepare({ ...query.tree, explain: true });
    try {
      return ((await prepared.run(bound)).$explain ?? []) as readonly ExplainStep[];
    } finally {
      prepared.release();
    }
  }

  /** The project's QUERY `name` on an open handle (`closed`, `query_not_found` otherwise). */
  private projectQuery(name: string): CompiledQuery {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    const query = this.queryByName.get(name);
    if (query === undefined) throw new SilkError("query_not_found", `no QUERY named ${JSON.stringify(name)} is defined in the project's .hx files`);
    return query;
  }

  /**
   * Checks, binds, runs and renders one call. Not an async function: a query's cost is a few microseconds, and each
   * async layer adds a promise and its turns; every failure still arrives as a rejection.
   */
  private runQuery<T>(name: string, parameters: Readonly<Record<string, unknown>>, render: (output: CompiledQuery["output"], result: QueryResult) => T): Promise<T> {
    try {
      const query = this.projectQuery(name);
      // Refused before its parameters are looked at: no parameters could make it run here.
      if (query.requestType === "write" && this.mode === "readonly") throw new SilkError("read_only", `${name} writes, and this database was opened read-only`);
      const bound = bindParameters(query, parameters);
      if (query.tree === undefined) return Promise.resolve(render(query.output, {}));
      const tree = query.tree;
      const ready = this.readyQueries.get(query.name);
      const result = ready !== undefined ? ready.run(bound) : this.preparedQuery(query.name, tree).then((prepared) => prepared.run(bound));
      return result.then((answer) => render(query.output, answer));
    } catch (cause) {
      return Promise.reject(cause);
    }
  }

  private preparedQuery(name: string, tree: WireRequest): Promise<PreparedQuery> {
    let prepared = this.preparedQueries.get(name);
    if (prepared === undefined) {
      // The promise is kept, not its result, so that concurrent first calls prepare the tree once; once it resolved,
      // later calls take the query from readyQueries without waiting on it.
      prepared = this.prepare(tree);
      this.preparedQueries.set(name, prepared);
      prepared.then((ready) => this.readyQueries.set(name, ready)).catch(() => this.preparedQueries.delete(name));
    }
    return prepared;
  }

  /** Writes a batch of nodes and edges as one transaction (bulk import); see cluster/bulk-import.ts. */
  async importBatch(batch: ImportBatch): Promise<ImportResult> {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    if (this.mode === "readonly") throw new SilkError("read_only", "this database was opened read-only");
    return this.acknowledge("write", this.coordinator.importBatch(batch));
  }

  /**
   * Every secondary index (the schema's and those index operations created), with its state (`active`, `constructing`, `blocked`), monotonic build
   * counters (entities and bytes scanned, entries written) and, when blocked, the reason. See docs/INDEXES.md.
   */
  indexes(): IndexInfo[] {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    return this.engine.indexes();
  }

  /** The same as indexes(), asked of the partitions through the coordinator (what a cluster's handle answers). */
  async indexStatuses(): Promise<IndexInfo[]> {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    return this.engine.indexStatuses();
  }

  /** Write transactions since this handle opened, and the storage of its in-process partitions (docs/SERVER.md#metrics). */
  async statistics(): Promise<DatabaseStatistics> {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    return { transactions: this.coordinator.transactionCounts(), partitions: this.engine.partitionStorage() };
  }

  /**
   * Makes every read that starts after this call see every commit made before it, another process's too (a
   * read-only handle beside its writer, `silk serve --workers`: docs/SERVER.md). Without it a read may, until this
   * process's next timer callback, still run on a read transaction begun before such a commit. Reads in progress keep
   * their snapshots.
   */
  refresh(): void {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    this.engine.renewReads();
  }

  /**
   * Where this handle's data lives; on S3 storage, the writer's epoch, last stored segment and unshipped bytes, or the
   * follower's applied segment and lag (docs/STORAGE.md).
   */
  status(): DatabaseStatus {
    if (this.closed) throw new SilkError("closed", "this database handle was closed");
    return this.engine.status();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const prepared = await Promise.allSettled(this.preparedQueries.values());
    await Promise.all(prepared.map((outcome) => (outcome.status === "fulfilled" ? outcome.value.release() : undefined)));
    this.preparedQueries.clear();
    this.readyQueries.clear();
    await this.engine.close();
  }
}

/** A partition store's figures for `/metrics` (the servers' and `silk partition`'s), read once per scrape. */
export function storageStatistics(partition: number, store: PartitionStore): PartitionStorageStatistics {
  const status = store.pageStatus();
  return {
    partition,
    mapSizeBytes: status.mapSizeBytes,
    usedBytes: status.usedPages * status.pageSize,
    freePages: status.freePages,
    readers: status.readers.length,
  };
}

/**
 * The storage status of every partition of a disk database (`silk status`): readers, pages, sizes. It opens each
 * partition read-only beside whatever writer or readers hold the directory, which clears dead readers' slots.
 */
export async function storageStatus(directory: string): Promise<StorageStatus[]> {
  const manifest = readManifest(directory, undefined, false, false);
  const statuses: StorageStatus[] = [];
  for (const range of new PartitionMap(manifest.partitions).ranges) {
    const store = PartitionStore.open({ path: join(directory, "partitions", `p${range.index}`), readOnly: true, noSync: false, idFirst: range.first, idLast: range.last });
    try {
      statuses.push(store.storageStatus());
    } finally {
      await store.close();
    }
  }
  return statuses;
}

/** Opens a database in this process. See OpenOptions. */
export function open(options: OpenOptions): Promise<Database> {
  return Database.open(options);
}
