/**
 * The one table of error codes. Every error Silk reports to a caller carries a stable snake_case code from this
 * table, the HTTP status it maps to, and whether it is the caller's fault (`user`), the service's (`internal`), or
 * the storage layer's (`io`). Clients branch on the code, never on the message.
 */

export type ErrorKind = "user" | "internal" | "io";

interface ErrorSpec {
  readonly status: number;
  readonly kind: ErrorKind;
  /** What the code means and what the caller should do about it. */
  readonly doc: string;
}

export const ERROR_CODES = {
  // Values, IDs and parameters.
  invalid_id: { status: 400, kind: "user", doc: "An ID is not an unsigned 64-bit integer (0 to 2^64-1) written as a decimal string or integer." },
  invalid_type: { status: 400, kind: "user", doc: "A value does not have the type its field or parameter declares." },
  invalid_field: { status: 400, kind: "user", doc: "A property name is not declared in the schema for that label, or uses the reserved key $label." },
  missing_property: { status: 400, kind: "user", doc: "A field marked REQUIRED (and without a DEFAULT) was not supplied when creating a record." },
  invalid_value: { status: 400, kind: "user", doc: "A value is malformed (for example a Date that is not ISO 8601, a nesting deeper than VALUE_DEPTH_MAX, or a string with a lone UTF-16 surrogate; see Limits below); nothing was written." },
  // Schema.
  schema_syntax: { status: 400, kind: "user", doc: "HelixQL text (schema or QUERY) does not parse; the message gives file:line:column and a caret." },
  schema_invalid: { status: 400, kind: "user", doc: "The schema parses but is inconsistent (duplicate type, unknown endpoint type, bad DEFAULT)." },
  query_invalid: { status: 400, kind: "user", doc: "A HelixQL QUERY parses but does not check (unknown step, wrong arguments, misplaced construct); the message gives file:line:column." },
  unknown_label: { status: 400, kind: "user", doc: "A node, edge or vector label is not declared in the schema." },
  // The operation tree.
  malformed_tree: { status: 400, kind: "user", doc: "The operation tree is not of the documented shape; the message names the JSON path at fault." },
  unsupported_operation: { status: 400, kind: "user", doc: "The operation tree uses a step that this version does not implement yet, or an operation its target does not allow (dropping or aborting a schema-declared index)." },
  unknown_variable: { status: 400, kind: "user", doc: "A step refers to a variable that no earlier entry defined." },
  missing_parameter: { status: 400, kind: "user", doc: "A step refers to a parameter that the request did not supply, or a query call omits a declared parameter." },
  unknown_parameter: { status: 400, kind: "user", doc: "A query call supplies a parameter that the QUERY does not declare; remove it or fix its name." },
  query_not_found: { status: 404, kind: "user", doc: "No QUERY of that name is defined in the project's .hx files; GET /introspect lists them." },
  write_in_read: { status: 400, kind: "user", doc: "A read batch contains a mutation; send it as a write batch." },
  limit_exceeded: { status: 400, kind: "user", doc: "A request exceeds a documented limit (entries per batch, tree depth, result size)." },
  // Records.
  node_not_found: { status: 404, kind: "user", doc: "An edge names an endpoint node (or vector) that does not exist." },
  unique_violation: { status: 409, kind: "user", doc: "A write would give two records of a label the same value of a UNIQUE INDEX field, or a second edge of a UNIQUE edge type from one record to another; nothing of the transaction was written. Use another value, or update or drop the record (or edge) that holds it." },
  index_not_found: { status: 404, kind: "user", doc: "An index operation names a secondary index that does not exist (never created, dropped, or aborted); `db.indexes()` and `silk index status` list them." },
  index_already_exists: { status: 409, kind: "user", doc: "`create_index` with `\"if_not_exists\": false` (HelixDB v3's form) names an index that already exists with the same definition, built or building; nothing changed. Send `if_not_exists: true` to be answered the existing index instead (HelixDB's code)." },
  index_operation_not_found: { status: 404, kind: "user", doc: "An index operation names an `operation_id` that names no index build: never created, or dropped (HelixDB's code). By `label` and `property`, a missing index is `index_not_found`." },
  index_definition_conflict: { status: 409, kind: "user", doc: "`create_index` names a field that is already indexed with another definition (family, kind, uniqueness, metric, analyzer or options); nothing changed. Drop the index first to index the field differently (HelixDB's code)." },
  index_operation_not_abortable: { status: 409, kind: "user", doc: "`abort_index_operation` names a build that has finished: its index is active (drop it with drop_index instead). A build still under way or blocked can be aborted, and aborting an aborted build answers it again (HelixDB's code)." },
  index_not_ready: { status: 409, kind: "user", doc: "A search names an index that is still constructing, or blocked; poll it with get_index_operation (or `silk index status`) and search once it is active." },
  vector_dimension_mismatch: { status: 400, kind: "user", doc: "A vector's length is not its index's dimension (a stored vector, or a search's query vector); nothing was written." },
  tenant_required: { status: 400, kind: "user", doc: "A search on a tenant-partitioned index gave no tenant value; pass the tenant (an unknown tenant gives no results, not this error)." },
  embedding_not_configured: { status: 503, kind: "user", doc: "Embed(text) ran but the database has no embedding provider; pass open({ embedder }) to an embedded database, or start the server with SILK_EMBED_PROVIDER set (docs/EMBEDDING.md)." },
  embedding_failed: { status: 502, kind: "io", doc: "The embedding provider failed or answered something other than vectors; the transaction was rolled back. Retry, or check the provider's URL and key." },
  edge_endpoint_mismatch: { status: 400, kind: "user", doc: "An edge's From/To record has a label other than the one the edge type declares." },
  // Modes and runtime.
  read_only: { status: 403, kind: "user", doc: "The database was opened read-only; writes are refused." },
  writer_locked: { status: 409, kind: "user", doc: "Another writer already holds this database path; open it read-only or stop the other writer." },
  invalid_option: { status: 400, kind: "user", doc: "An option given to open() or the CLI is unknown or not allowed in this mode (gateway headers, routing options)." },
  closed: { status: 503, kind: "user", doc: "The database handle was closed." },
  transaction_conflict: { status: 409, kind: "user", doc: "Another transaction holds a record this one writes; retry." },
  lock_timeout: { status: 503, kind: "io", doc: "Another process held a lock file (the hosted gateway's keys.json lock, for `silk keys`) for longer than the command waits; nothing changed. Retry when it has finished, or stop it if it is stuck." },
  // Import.
  import_bad_row: { status: 400, kind: "user", doc: "An import row is malformed; the message gives file and line. Nothing of the failing batch was written." },
  // HTTP gateway.
  invalid_query_json: { status: 400, kind: "user", doc: "The request body is empty or not valid JSON; send the operation tree as a JSON object." },
  payload_too_large: { status: 413, kind: "user", doc: "The request body exceeds the gateway's limit (16 MiB for /v2/query), or in a cluster a request or write does not fit in one NATS message; split the batch." },
  unsupported_media_type: { status: 415, kind: "user", doc: "The request's Content-Type is not application/json; send the body as JSON with that header." },
  bad_request: { status: 400, kind: "user", doc: "The HTTP request is malformed (a bad URL, a body whose length does not match Content-Length, or framing that is not HTTP/1.1; after a framing error the connection is closed)." },
  header_too_large: { status: 431, kind: "user", doc: "The request's headers exceed 16 KiB in all; nothing ran and the connection was closed. Send fewer or shorter headers." },
  request_timeout: { status: 408, kind: "user", doc: "The request did not arrive in time: its headers within 5 s, or headers and body together within 10 s (docs/SERVER.md); nothing ran and the connection was closed. Send each request whole and at once; split a batch that a slow link cannot send in time. Not the execution deadline (query_timeout)." },
  route_not_found: { status: 404, kind: "user", doc: "No route has this method and path; see docs/SERVER.md for the routes a server answers." },
  method_not_allowed: { status: 405, kind: "user", doc: "The route exists but not for this method: `/mcp` is stateless and takes POST only (no event stream, no session to delete); see docs/MCP.md." },
  origin_not_allowed: { status: 403, kind: "user", doc: "A web page of another site called the local server (`silk serve`, `silk dev`), which takes no credentials: its Origin header names neither localhost, 127.0.0.0/8, [::1], the host the request was addressed to, nor a name of --allowed-hosts (or it sent no Origin but Sec-Fetch-Site: cross-site); nothing ran. Call it from a program, or serve the page from one of those names (docs/SERVER.md)." },
  host_not_allowed: { status: 403, kind: "user", doc: "The request's Host header names something the local server (`silk serve`, `silk dev`) does not answer to: not localhost, an IP address, its --host name or a name of --allowed-hosts; nothing ran. A web page reaching the server through DNS rebinding is refused this way; a server reached by a name (a proxy, a Kubernetes Service) is started with --allowed-hosts NAME (docs/SERVER.md)." },
  // Hosted gateway (silk gateway): keys, the account switch, the rate limit, the deadline. See docs/GATEWAY.md.
  unauthorized: { status: 401, kind: "user", doc: "No API key was sent, or the Authorization header is not `Bearer <key>`; send one key of this database." },
  forbidden: { status: 403, kind: "user", doc: "The API key is unknown to this database or was revoked; create a new one with `silk keys create`." },
  tenant_disabled: { status: 402, kind: "user", doc: "The database is disabled for account credit; nothing ran. Not a rate-limit condition: retrying does not help until it is enabled again." },
  rate_limited: { status: 429, kind: "user", doc: "No token is left in the database's bucket; nothing ran. Wait at least Retry-After seconds (add jitter when many workers share a database)." },
  rate_limit_unavailable: { status: 503, kind: "io", doc: "The gateway could not make a safe shared rate-limit decision (Redis did not answer in time); it failed closed and nothing ran. Retry with bounded exponential backoff and jitter." },
  query_timeout: { status: 408, kind: "user", doc: "The execution deadline passed; the transaction was rolled back. Not a rate-limit condition." },
  // Cluster (docs/REPLICATION.md).
  not_leader: { status: 503, kind: "io", doc: "The partition replica that received a write is no longer its partition's leader (its lease passed to another replica); nothing was written. The cluster transport retries on the new leader by itself." },
  partition_unavailable: { status: 503, kind: "io", doc: "No replica of a partition answered within the deadline (a failover in progress, or too few replicas up); the transaction was not committed. Retry with backoff." },
  snapshot_invalid: { status: 503, kind: "io", doc: "A partition snapshot in the cluster's object store (docs/CLUSTER.md, Snapshots) is cut short, does not match its SHA-256 digest, or is not a snapshot of this partition; a replica bootstrapping from it uses nothing of it and stops. Start it again (it downloads the latest snapshot anew)." },
  log_truncated: { status: 503, kind: "io", doc: "A replica needs entries its partition's log no longer holds (the log was truncated below a snapshot while the replica was down or far behind); it stops. Start it again: it replaces its store with the latest snapshot and follows the log from there." },
  intent_not_prepared: { status: 500, kind: "internal", doc: "A cluster partition was asked to commit a two-phase-commit transaction whose intent it does not hold (it aborted it, or never prepared it), or to abort one it committed: a bug in Silk, never answered as a success. The write may be applied on some partitions only; the coordinator counts it (`silk_commit_anomalies_total`). Please report it with the message." },
  // Object storage (docs/STORAGE.md).
  writer_fenced: { status: 409, kind: "user", doc: "Another writer advanced the database's manifest in the bucket (a newer epoch, or the manifest changed under this one's conditional write): this handle may no longer write, and what it was asked was not written. Open the database again as the writer, or send writes to the writer that holds it." },
  bucket_not_found: { status: 404, kind: "user", doc: "The S3 bucket named by `storage.s3.bucket`, `--storage`, `--to` or `--from` does not exist at that endpoint; Silk never creates buckets. Create it, or fix the name or `--s3-endpoint`." },
  storage_denied: { status: 403, kind: "user", doc: "The object store refused the credentials (unknown key, bad signature, no right on the bucket), or none were found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws/credentials); nothing changed. Fix the credentials or the bucket's policy." },
  target_not_empty: { status: 409, kind: "user", doc: "`silk backup` was given a bucket prefix that already holds objects, or `silk restore` a directory that is not empty; nothing was written. Give a new prefix or an empty directory (Silk never overwrites a database)." },
  storage_unavailable: { status: 503, kind: "io", doc: "The object store did not answer within the deadline, after retries with backoff (5xx, throttling, dropped connections); nothing was reported committed that is not in the bucket. Retry with backoff." },
  // Service side.
  storage_error: { status: 507, kind: "io", doc: "The storage failed: the disk is full (ENOSPC, or an I/O error with almost no space left), a quota, a read-only file system, an I/O error; the message names which. The transaction was rolled back and the server stays up. 507 Insufficient Storage, not 503: retrying soon does not help (clients do not retry it); free space or fix the disk, then retry." },
  internal: { status: 500, kind: "internal", doc: "A bug in Silk. The transaction was rolled back; please report it with the message." },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** An error with a stable code. Everything Silk throws at a caller is one of these. */
export class SilkError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly kind: ErrorKind;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "SilkError";
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.kind = ERROR_CODES[code].kind;
  }

  /** The wire form of SPEC's error bodies. */
  toJSON(): { error: ErrorCode; msg: string } {
    return { error: this.code, msg: this.message };
  }
}

/**
 * The default of a switch over a closed union: \`tsc\` accepts the call only where \`x\` has type \`never\`, so a member
 * added to the union and not handled is a compile error; a value the types say cannot arrive (a bug) throws
 * \`internal\` naming it. \`what\` says what \`x\` is, for the message (\`unexpected field type {...}\`).
 */
export function unreachable(x: never, what = "value"): never {
  throw new SilkError("internal", `internal error (a bug in Silk): unexpected ${what} ${describeUnexpected(x)}`);
}

function describeUnexpected(x: unknown): string {
  try {
    const json = JSON.stringify(x);
    if (json !== undefined) return json;
  } catch {
    // A bigint or a cycle: String() below still names it.
  }
  return String(x);
}

/** Wraps anything thrown into a SilkError: our own pass through, anything else is a bug or an IO failure. */
export function asSilkError(cause: unknown): SilkError {
  if (cause instanceof SilkError) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  const errno = (cause as { code?: unknown } | null)?.code;
  if (typeof errno === "string" && /^E[A-Z]+$/.test(errno)) return new SilkError("storage_error", message);
  return new SilkError("internal", `internal error (a bug in Silk): ${message}`);
}
