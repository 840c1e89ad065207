/**
 * Shared set-up for the suites that drive Silk with HelixDB's own v3 TypeScript SDK, the built package in
 * ../shared/clients/helix-v3-sdk-ts/ (see that folder's README; its code is never copied into this repository, only
 * imported here by relative URL). It starts a schemaless `silk serve` or `silk gateway` as a real child process over
 * a fresh data directory and hands back the SDK's own `Client` for it, so a suite sends exactly what a HelixDB user's
 * application sends.
 *
 * Typical use, one server per suite file:
 *
 *   let server: SdkServer;
 *   beforeAll(async () => (server = await startSchemalessServe()));
 *   afterAll(() => server.stop());
 *   const { g, writeBatch } = server.sdk;
 *   await server.client.query(writeBatch().varAs("ann", g().addN("User", { name: "Ann" })).returning(["ann"]).toQueryRequest()).send();
 *
 * `treeRequest` sends an operation tree the SDK cannot build (or cannot build yet in the form Silk takes) through the
 * same client, so its errors arrive as the SDK's `HelixError` too; `remoteError` unwraps one for assertions.
 */
import { rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { open } from "../../runtime/embedded.js";
import { createKey } from "../../gateway/hosted/key-store.js";
import { stringifyAnswer } from "../../gateway/json.js";
import { parseJsonExact } from "../../sdk/json.js";
import { temporaryDirectory } from "../cli/helpers.js";
import { startServer, type StartedServer } from "../gateway/serve-process.js";
import type * as HelixSdk from "../../../shared/clients/helix-v3-sdk-ts/dist/index.js";

/** The SDK's module: `Client`, `g`, `readBatch`, `writeBatch`, `Predicate`, `IndexSpec`, `HelixError`, ... */
export type Sdk = typeof HelixSdk;
export type SdkClient = HelixSdk.Client;
export type SdkRequest = HelixSdk.QueryRequest;

/** Where the built SDK lives, relative to this file: /work/main/test/v3-sdk → /work/shared/clients. */
const SDK_MODULE_URL = new URL("../../../shared/clients/helix-v3-sdk-ts/dist/index.js", import.meta.url).href;

let loaded: Promise<Sdk> | undefined;

/** The SDK's module, imported once per test process. */
export function loadSdk(): Promise<Sdk> {
  loaded ??= import(SDK_MODULE_URL) as Promise<Sdk>;
  return loaded;
}

/** A Silk process serving a database (schemaless, or with a schema: startServeWithSchema), and the SDK client pointed at it. */
export interface SdkServer {
  readonly sdk: Sdk;
  readonly client: SdkClient;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The database directory (created by the server). */
  readonly data: string;
  readonly process: StartedServer;
  /** SIGTERM, then the exit code once the process is gone (0 when it closed cleanly). */
  stop(): Promise<number | null>;
}

/** An SdkServer of `silk gateway`: its client sends `key` on every request. */
export interface SdkGateway extends SdkServer {
  readonly key: string;
}

function started(sdk: Sdk, running: StartedServer, data: string, client: SdkClient): SdkServer {
  return {
    sdk,
    client,
    url: running.url,
    data,
    process: running,
    stop: async () => {
      if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill("SIGTERM");
      return running.exited;
    },
  };
}

/**
 * `silk serve --data <fresh dir> --port 0` without `--project`: a schemaless database, no per-query routes. `data`
 * serves a database directory made beforehand instead (one created with several partitions, say).
 */
export async function startSchemalessServe(extra: readonly string[] = [], data = join(temporaryDirectory(), "data")): Promise<SdkServer> {
  const sdk = await loadSdk();
  const running = await startServer(["serve", "--data", data, "--port", "0", ...extra]);
  return started(sdk, running, data, sdk.Client.server(running.url));
}

/**
 * `silk serve --project <dir> --data <fresh dir> --port 0` over a project whose one file holds `schema`: a database
 * with a schema, driven by the same SDK client (its `/v2/query` only; the project's QUERYs are not used).
 */
export async function startServeWithSchema(schema: string): Promise<SdkServer> {
  const sdk = await loadSdk();
  const project = temporaryDirectory();
  writeFileSync(join(project, "schema.hx"), schema);
  const data = join(project, "data");
  const running = await startServer(["serve", "--project", project, "--data", data, "--port", "0"]);
  return started(sdk, running, data, sdk.Client.server(running.url));
}

/**
 * `silk gateway --data <fresh dir> --port 0` without `--project`, with one live key made beforehand; `extra` adds
 * options such as `--rate`/`--burst`. The client sends the key as `Authorization: Bearer <key>` (the SDK's way).
 */
export async function startSchemalessGateway(extra: readonly string[] = []): Promise<SdkGateway> {
  const sdk = await loadSdk();
  const data = join(temporaryDirectory(), "data");
  const key = createKey(data, "sdk-test", Date.now()).key;
  const running = await startServer(["gateway", "--data", data, "--port", "0", ...extra]);
  return { ...started(sdk, running, data, sdk.Client.server(running.url).withApiKey(key)), key };
}

/**
 * A `/v2/query` body given as a plain operation tree, sent through the SDK's client: the client needs only
 * `toJsonString()` of what it is handed, so the cast is what lets a suite send a tree the builders do not make.
 */
export function treeRequest(tree: unknown): SdkRequest {
  return { toJsonString: () => JSON.stringify(tree) } as unknown as SdkRequest;
}

/** What a failed `send()` carried: the HTTP status and the error code of Silk's `{"error", "msg"}` body. */
export interface RemoteFailure {
  readonly status: number | undefined;
  readonly code: string | undefined;
  readonly message: string | undefined;
}

/**
 * Awaits a `send()` that must fail and answers its status and code; a success, or a failure that is not the SDK's
 * remote error (a network error, say), fails the test with what happened instead.
 */
export async function remoteError(sdk: Sdk, sending: Promise<unknown>): Promise<RemoteFailure> {
  let answer: unknown;
  try {
    answer = await sending;
  } catch (cause) {
    if (cause instanceof sdk.HelixError && cause.kind === "Remote") return { status: cause.statusCode, code: cause.code, message: cause.serverMessage };
    throw cause;
  }
  throw new Error(`expected the request to fail, but it answered ${JSON.stringify(answer, (_key, value: unknown) => (typeof value === "bigint" ? `${value}n` : value))}`);
}

/** The two kinds of database the embedded SDK suites run against: HelixDB v3's schemaless one, and one with a schema. */
export const DATABASE_VARIANTS = ["schemaless", "with a schema"] as const;

/** The schema of the Knows graph's database "with a schema": every label and property the suites write, declared. */
const KNOWS_SCHEMA = "N::User { name: String, age: I64, seen: Date }\nE::Knows { From: User, To: User, Properties: { weight: F64 } }\n";

/**
 * The Knows graph's seed, through the SDK, what describeOnKnowsGraph writes first: Ann (30), Bob (25) and Cy (no age),
 * and Knows edges Ann → Bob (weight 2), Bob → Cy (0.5), Cy → Ann (1); their IDs are 1, 2, 3 and 4, 5, 6.
 */
function knowsSeed(sdk: Sdk): HelixSdk.WriteBatch {
  const { g, writeBatch, NodeRef } = sdk;
  return writeBatch()
    .varAs("ann", g().addN("User", { name: "Ann", age: 30 }))
    .varAs("bob", g().addN("User", { name: "Bob", age: 25 }))
    .varAs("cy", g().addN("User", { name: "Cy" }))
    .varAs("ab", g().n(NodeRef.var("ann")).addE("Knows", NodeRef.var("bob"), { weight: 2 }))
    .varAs("bc", g().n(NodeRef.var("bob")).addE("Knows", NodeRef.var("cy"), { weight: 0.5 }))
    .varAs("ca", g().n(NodeRef.var("cy")).addE("Knows", NodeRef.var("ann"), { weight: 1 }))
    .returning(["ann", "bob", "cy"]);
}

/**
 * Where describeOnKnowsGraph runs its cases: embedded (`Database.runV2`, schemaless and with KNOWS_SCHEMA), and over
 * HTTP through the SDK's own `Client.server(url)` against a schemaless `silk serve` and a schemaless `silk gateway`
 * (with an API key).
 */
export const KNOWS_GRAPH_TARGETS = ["embedded schemaless", "embedded with a schema", "silk serve (schemaless, HTTP)", "silk gateway (schemaless, HTTP, API key)"] as const;
export type KnowsGraphTarget = (typeof KNOWS_GRAPH_TARGETS)[number];

/**
 * The seeded Knows graph as a case sees it, wherever it runs: every answer is in the `/v2/query` wire form, as the
 * SDK's client reads it (IDs as JSON numbers, bigints beyond 2^53; parseJsonExact), so one expectation holds for all.
 */
export interface KnowsGraph {
  readonly sdk: Sdk;
  readonly target: KnowsGraphTarget;
  /** Sends a request the SDK built (`batch.toQueryRequest(...)`), answering what the SDK's `send()` answers. */
  send(request: SdkRequest): Promise<Record<string, unknown>>;
  /** `send(batch.toQueryRequest())`. */
  run(batch: HelixSdk.ReadBatch | HelixSdk.WriteBatch): Promise<Record<string, unknown>>;
}

interface OpenedKnowsGraph {
  send(request: SdkRequest): Promise<Record<string, unknown>>;
  close(): Promise<unknown>;
}

/**
 * An embedded memory database (with `schema`'s text as its one schema file, when given) answering as
 * `POST /v2/query` does: runV2, its answer's text read back exactly.
 */
async function embeddedKnowsGraph(schema: string | undefined): Promise<OpenedKnowsGraph> {
  const db = await open({ storage: "memory", ...(schema === undefined ? {} : { schema: [{ file: "schema.hx", text: schema }] }) });
  return {
    send: async (request) => parseJsonExact(stringifyAnswer(await db.runV2(parseJsonExact(request.toJsonString())))) as Record<string, unknown>,
    close: () => db.close(),
  };
}

/** A schemaless `silk serve` or `silk gateway` child process, sent to through the SDK's client; closing removes its data. */
async function servedKnowsGraph(server: SdkServer): Promise<OpenedKnowsGraph> {
  return {
    send: async (request) => (await server.client.query(request).send()) as Record<string, unknown>,
    close: async () => {
      expect(await server.stop()).toBe(0);
      rmSync(dirname(server.data), { recursive: true, force: true });
    },
  };
}

async function openKnowsGraph(target: KnowsGraphTarget, schema: string): Promise<OpenedKnowsGraph> {
  switch (target) {
    case "embedded schemaless":
      return embeddedKnowsGraph(undefined);
    case "embedded with a schema":
      return embeddedKnowsGraph(schema);
    case "silk serve (schemaless, HTTP)":
      return servedKnowsGraph(await startSchemalessServe());
    case "silk gateway (schemaless, HTTP, API key)":
      // A bucket the suites' bursts of requests fit in: the token bucket itself is schemaless-gateway.test.ts's.
      return servedKnowsGraph(await startSchemalessGateway(["--rate", "1000", "--burst", "1000"]));
    default:
      throw new Error(`unknown target ${JSON.stringify(target satisfies never)}`);
  }
}

/**
 * For each of KNOWS_GRAPH_TARGETS, a describe block whose tests share one graph, written by `seed` (through the
 * block's `send`) in the block's beforeAll: one database or server per target and file. The target "embedded with a
 * schema" opens with `schema`; the others are schemaless. `graph` is for use inside tests; its answers are the wire
 * form's.
 */
export function describeOnGraph(schema: string, seed: (graph: KnowsGraph) => Promise<void>, body: (graph: KnowsGraph) => void): void {
  describe.each(KNOWS_GRAPH_TARGETS)("%s", (target) => {
    let sdk: Sdk | undefined;
    let opened: OpenedKnowsGraph | undefined;
    const ready = (): { sdk: Sdk; opened: OpenedKnowsGraph } => {
      if (sdk === undefined || opened === undefined) throw new Error("the graph is opened in beforeAll: use it inside tests");
      return { sdk, opened };
    };
    const send = (request: SdkRequest) => ready().opened.send(request);
    const graph: KnowsGraph = {
      get sdk() {
        return ready().sdk;
      },
      target,
      send,
      run: (batch) => send(batch.toQueryRequest()),
    };
    beforeAll(async () => {
      sdk = await loadSdk();
      opened = await openKnowsGraph(target, schema);
      await seed(graph);
    });
    afterAll(() => opened?.close());
    body(graph);
  });
}

/**
 * describeOnGraph over the Knows graph, seeded by knowsSeed (IDs 1, 2, 3 for Ann, Bob, Cy and 4, 5, 6 for the
 * edges), KNOWS_SCHEMA its schema.
 */
export function describeOnKnowsGraph(body: (graph: KnowsGraph) => void): void {
  describeOnGraph(
    KNOWS_SCHEMA,
    async (graph) => expect(await graph.run(knowsSeed(graph.sdk))).toMatchObject({ ann: [{ $id: 1 }], bob: [{ $id: 2 }], cy: [{ $id: 3 }] }),
    body,
  );
}
