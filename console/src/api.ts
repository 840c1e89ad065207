/**
 * The server's routes as the console calls them: its own (`/console/api/...`, gateway/console.ts) and
 * `POST /v2/query` (docs/OPERATION_TREE.md). Every answer is parsed so that an integer beyond 2^53 (an ID on
 * `/v2/query`, which writes IDs as JSON numbers) keeps its digits as a string instead of being rounded.
 */

/** A failed request: the server's stable error code and message (`{"error", "msg"}`). */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** A diagnostic of the editor's text, at its 1-based line and column. */
export interface Diagnostic {
  readonly severity: "error" | "warning";
  readonly code: string;
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

export interface CheckedQuery {
  readonly name: string;
  readonly request_type: "read" | "write";
  readonly parameters: readonly { readonly name: string; readonly optional: boolean }[];
}

export interface CheckAnswer {
  readonly diagnostics: readonly Diagnostic[];
  readonly queries: readonly CheckedQuery[];
}

/** One index as `db.indexes()` lists it; the console shows its fields as they come. */
export type IndexStatus = Readonly<Record<string, unknown>> & { readonly name: string; readonly state: string };

type Reviver = (this: unknown, key: string, value: unknown, context?: { source?: string }) => unknown;

/** JSON.parse, with integers beyond 2^53 kept as their digits (the reviver's `source`, where the browser gives it). */
export function parseExact(text: string): unknown {
  const reviver: Reviver = (_key, value, context) =>
    typeof value === "number" && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?[0-9]+$/.test(context.source) ? context.source : value;
  return JSON.parse(text, reviver as (key: string, value: unknown) => unknown);
}

async function request(path: string, body?: unknown): Promise<unknown> {
  const init: RequestInit = body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetch(path, init);
  const text = await response.text();
  const answer = text === "" ? null : parseExact(text);
  if (!response.ok) {
    const error = answer as { error?: string; msg?: string } | null;
    throw new ApiError(error?.error ?? "http_error", error?.msg ?? `HTTP ${response.status}`, response.status);
  }
  return answer;
}

export function checkText(text: string): Promise<CheckAnswer> {
  return request("/console/api/check", { text }) as Promise<CheckAnswer>;
}

export function runText(text: string, query: string | undefined, parameters: unknown): Promise<unknown> {
  return request("/console/api/run", { text, query, parameters });
}

export function runTree(tree: unknown): Promise<Record<string, unknown>> {
  return request("/v2/query", tree) as Promise<Record<string, unknown>>;
}

export async function indexStatuses(): Promise<readonly IndexStatus[]> {
  return ((await request("/console/api/indexes")) as { indexes: IndexStatus[] }).indexes;
}

/** What the console needs of `GET /introspect`: whether the server has a project, and its node types. */
export interface Project {
  readonly hasSchema: boolean;
  readonly nodeTypes: readonly string[];
}

export async function project(): Promise<Project> {
  const answer = (await request("/introspect")) as { schema: { nodes: { name: string }[] } | null };
  return { hasSchema: answer.schema !== null, nodeTypes: answer.schema?.nodes.map((node) => node.name) ?? [] };
}

/** A replica's applied sequence and lag behind its partition's log; null where its store is not on the server's machine. */
export interface ReplicaStatus {
  readonly replica: string;
  readonly applied: number | null;
  readonly lag: number | null;
}

/** One partition as `GET /console/api/partitions` answers it (cluster/nats/cluster-status.ts). */
export interface PartitionStatus {
  readonly partition: number;
  readonly leader: string | null;
  readonly term: number | null;
  readonly log: { readonly first: number; readonly last: number; readonly entries: number; readonly bytes: number } | null;
  readonly snapshot: { readonly sequence: number; readonly bytes: number } | null;
  readonly ranges: readonly { readonly first: string; readonly last: string }[];
  readonly replicas: readonly ReplicaStatus[];
}

export interface ClusterStatus {
  readonly cluster: string;
  readonly mapVersion: number;
  readonly pending: number | null;
  readonly partitions: readonly PartitionStatus[];
}

/** The cluster's status on `silk serve --cluster`; ApiError unsupported_operation on any other server. */
export function clusterStatus(): Promise<ClusterStatus> {
  return request("/console/api/partitions") as Promise<ClusterStatus>;
}
