// Writes docs/ERRORS.md from the one error table (protocol/errors.ts), the warning table (protocol/warnings.ts) and the limits below, each shown with the value
// of the constant the code enforces. Run: npx tsx scripts/errors-doc.ts (test/architecture/errors-doc.test.ts holds
// the file to exactly what this renders).
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SERVE_TIMEOUT_MS_DEFAULT } from "../bin/defaults.js";
import { PARTITIONS_MAX } from "../cluster/partition-map.js";
import { KEYS_PER_DATABASE_MAX } from "../gateway/hosted/key-store.js";
import { MESSAGE_MARGIN_BYTES, PENDING_REPLY_BYTES_MAX, PENDING_REPLY_TTL_MS } from "../cluster/nats/message-size.js";
import { HTTP_HEADER_BYTES_MAX, HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS } from "../gateway/http-limits.js";
import { REQUEST_BODY_BYTES_MAX } from "../gateway/query-v2.js";
import { INDEX_STRING_PREFIX_BYTES_MAX } from "../node/indexes/index-encoding.js";
import { KEY_BYTES_MAX } from "../node/keys.js";
import { READER_CHECK_INTERVAL_MS } from "../node/store/partition-store.js";
import { ERROR_CODES } from "../protocol/errors.js";
import {
  BATCH_ENTRIES_MAX, BRANCH_TRAVERSALS_MAX, EMBED_DIMENSIONS_MAX, EMBED_TEXT_BYTES_MAX, LABEL_BYTES_MAX, MMR_ITEMS_MAX,
  PATH_VISITED_NODES_MAX, PREPARED_PLANS_MAX, QUERY_TERMS_MAX, QUERY_TIMEOUT_MS_MAX, REPEAT_ELEMENTS_MAX, REPEAT_ITERATIONS_MAX,
  RESULT_ELEMENTS_MAX, SEARCH_K_MAX, TENANT_BYTES_MAX, TREE_DEPTH_MAX, VALUE_DEPTH_MAX, VECTOR_DIMENSIONS_MAX,
} from "../protocol/limits.js";
import { WARNING_CODES } from "../protocol/warnings.js";

interface Limit {
  readonly name: string;
  readonly value: string;
  /** The error code a request beyond the limit gets (or how more is handled). */
  readonly code: string;
  readonly meaning: string;
}

const count = (value: number): string => value.toLocaleString("en-US");
const bytes = (value: number): string => (value % 1_048_576 === 0 ? `${value / 1_048_576} MiB` : value % 1024 === 0 ? `${value / 1024} KiB` : `${count(value)} bytes`);

/** Every limit a caller can meet, in the order a request meets them: HTTP, the request, execution, storage, the account. */
export const LIMITS: readonly Limit[] = [
  { name: "HTTP_HEADER_BYTES_MAX (gateway/http-limits.ts)", value: bytes(HTTP_HEADER_BYTES_MAX), code: "header_too_large (431)", meaning: "The request line and headers together." },
  { name: "HTTP_HEADERS_TIMEOUT_MS (gateway/http-limits.ts)", value: `${count(HTTP_HEADERS_TIMEOUT_MS)} ms`, code: "request_timeout (408)", meaning: "Time for a connection to send a request's headers; the socket is then closed." },
  { name: "HTTP_REQUEST_TIMEOUT_MS (gateway/http-limits.ts)", value: `${count(HTTP_REQUEST_TIMEOUT_MS)} ms`, code: "request_timeout (408)", meaning: "Time for a whole request to arrive, body included (not its execution); the socket is then closed." },
  { name: "REQUEST_BODY_BYTES_MAX (gateway/query-v2.ts)", value: bytes(REQUEST_BODY_BYTES_MAX), code: "payload_too_large (413)", meaning: "The body of `POST /v2/query` and of a query route." },
  { name: "BATCH_ENTRIES_MAX (protocol/limits.ts)", value: count(BATCH_ENTRIES_MAX), code: "limit_exceeded", meaning: "Entries in one operation-tree batch." },
  { name: "TREE_DEPTH_MAX (protocol/limits.ts)", value: `${TREE_DEPTH_MAX} levels`, code: "limit_exceeded", meaning: "How deep steps, predicates and expressions of the operation tree may nest." },
  { name: "VALUE_DEPTH_MAX (protocol/limits.ts)", value: `${VALUE_DEPTH_MAX} levels`, code: "invalid_value", meaning: "How deep a value may nest arrays and objects: `array`/`object` literals of the operation tree, parameters, written and imported properties." },
  { name: "well-formed strings (protocol/values.ts)", value: "no lone UTF-16 surrogate", code: "invalid_value", meaning: "Every string of a request (values, parameters, names, imported rows) must be Unicode text: a lone surrogate (a `\\ud800` escape without its pair) cannot be stored as it is." },
  { name: "LABEL_BYTES_MAX (protocol/limits.ts)", value: `${LABEL_BYTES_MAX} characters`, code: "malformed_tree / unknown_label", meaning: "A label is an identifier (letters, digits, `_`) of at most this length." },
  { name: "BRANCH_TRAVERSALS_MAX (protocol/limits.ts)", value: count(BRANCH_TRAVERSALS_MAX), code: "malformed_tree", meaning: "Sub-traversals of one `union`, `coalesce` or `choose` step." },
  { name: "REPEAT_ITERATIONS_MAX (protocol/limits.ts)", value: count(REPEAT_ITERATIONS_MAX), code: "malformed_tree", meaning: "`times` of a `repeat` step." },
  { name: "QUERY_TIMEOUT_MS_MAX (protocol/limits.ts)", value: `${count(QUERY_TIMEOUT_MS_MAX)} ms`, code: "malformed_tree / invalid_option", meaning: "The largest `timeout_ms` of a request and `--timeout-ms` of a server." },
  { name: "SERVE_TIMEOUT_MS_DEFAULT (bin/defaults.ts)", value: `${count(SERVE_TIMEOUT_MS_DEFAULT)} ms`, code: "query_timeout (408)", meaning: "A server's execution deadline for a request that sets no `timeout_ms` (`--timeout-ms` changes it). It counts from when the request reaches the engine, includes waiting for other writes, and rolls the transaction back. An embedded run without `timeout_ms` has none." },
  { name: "RESULT_ELEMENTS_MAX (protocol/limits.ts)", value: count(RESULT_ELEMENTS_MAX), code: "limit_exceeded", meaning: "Elements or values one step may produce (an expansion stops as soon as it passes it)." },
  { name: "REPEAT_ELEMENTS_MAX (protocol/limits.ts)", value: count(REPEAT_ELEMENTS_MAX), code: "limit_exceeded", meaning: "Records a `repeat` step may hold over all its iterations." },
  { name: "PATH_VISITED_NODES_MAX (protocol/limits.ts)", value: count(PATH_VISITED_NODES_MAX), code: "limit_exceeded", meaning: "Records one shortest-path search may reach without finding its target." },
  { name: "SEARCH_K_MAX (protocol/limits.ts)", value: count(SEARCH_K_MAX), code: "invalid_value", meaning: "`k` of a vector or text search." },
  { name: "MMR_ITEMS_MAX (protocol/limits.ts)", value: count(MMR_ITEMS_MAX), code: "limit_exceeded", meaning: "Results `RerankMMR` may reorder (its cost grows with the square of the count)." },
  { name: "QUERY_TERMS_MAX (protocol/limits.ts)", value: count(QUERY_TERMS_MAX), code: "limit_exceeded", meaning: "Distinct terms of one text search." },
  { name: "TENANT_BYTES_MAX (protocol/limits.ts)", value: bytes(TENANT_BYTES_MAX), code: "limit_exceeded", meaning: "A text index's tenant value." },
  { name: "VECTOR_DIMENSIONS_MAX (protocol/limits.ts)", value: count(VECTOR_DIMENSIONS_MAX), code: "invalid_value", meaning: "Dimensions of a stored vector (an index's own dimension must then match it exactly: `vector_dimension_mismatch`)." },
  { name: "EMBED_TEXT_BYTES_MAX (protocol/limits.ts)", value: bytes(EMBED_TEXT_BYTES_MAX), code: "invalid_value", meaning: "A text given to `Embed`." },
  { name: "EMBED_DIMENSIONS_MAX (protocol/limits.ts)", value: count(EMBED_DIMENSIONS_MAX), code: "invalid_option / invalid_value", meaning: "Dimensions an embedding provider may be configured with, or answer." },
  { name: "KEY_BYTES_MAX (node/keys.ts)", value: `${count(KEY_BYTES_MAX)} bytes`, code: "none: long strings are indexed", meaning: `LMDB's longest key. A string whose secondary-index key would be longer is keyed by its first ${INDEX_STRING_PREFIX_BYTES_MAX} bytes (INDEX_STRING_PREFIX_BYTES_MAX, node/indexes/index-encoding.ts) and its SHA-256; UNIQUE stays exact (docs/INDEXES.md).` },
  { name: "READER_CHECK_INTERVAL_MS (node/store/partition-store.ts)", value: `${count(READER_CHECK_INTERVAL_MS)} ms`, code: "none", meaning: "How long a reader that died with a read open can pin old pages: a writer clears dead readers' slots at most this often (docs/SERVER.md, `silk status`)." },
  { name: "PREPARED_PLANS_MAX (protocol/limits.ts)", value: count(PREPARED_PLANS_MAX), code: "limit_exceeded", meaning: "Prepared query plans one partition (or coordinator) keeps." },
  { name: "NATS max_payload, less MESSAGE_MARGIN_BYTES (cluster/nats/message-size.ts)", value: `the NATS servers' max_payload (1 MiB by default) less ${bytes(MESSAGE_MARGIN_BYTES)}`, code: "payload_too_large (413)", meaning: "In a cluster, one request to a partition and one log entry (a write's changes) must each fit in one NATS message; a larger one is refused before it is sent, nothing written. Replies are not bounded: a larger one goes as parts." },
  { name: "PENDING_REPLY_BYTES_MAX (cluster/nats/message-size.ts)", value: bytes(PENDING_REPLY_BYTES_MAX), code: "limit_exceeded", meaning: `Bytes of large replies one replica keeps for the coordinator to fetch (each for at most ${count(PENDING_REPLY_TTL_MS)} ms, PENDING_REPLY_TTL_MS).` },
  { name: "PARTITIONS_MAX (cluster/partition-map.ts)", value: count(PARTITIONS_MAX), code: "limit_exceeded", meaning: "Partitions of one database." },
  { name: "KEYS_PER_DATABASE_MAX (gateway/hosted/key-store.ts)", value: count(KEYS_PER_DATABASE_MAX), code: "limit_exceeded", meaning: "API keys of one hosted database, revoked ones included." },
];

/** docs/ERRORS.md as it must be. */
export function renderErrorsDoc(): string {
  const rows = Object.entries(ERROR_CODES)
    .map(([code, spec]) => `| \`${code}\` | ${spec.status} | ${spec.kind} | ${spec.doc} |`)
    .join("\n");
  const warnings = Object.entries(WARNING_CODES)
    .map(([code, spec]) => `| \`${code}\` | ${spec.doc} |`)
    .join("\n");
  const limits = LIMITS.map((limit) => `| ${limit.name} | ${limit.value} | ${limit.code} | ${limit.meaning} |`).join("\n");
  return `# Error codes

Every error Silk reports carries a stable snake_case code. Over HTTP the body is
\`{"error": "<code>", "msg": "<text>"}\` with the status below; the embedded runtime throws a \`SilkError\` with
\`code\`, \`status\`, \`kind\` and \`message\`. Branch on the code, never on the message text.

Kinds: \`user\` — the request was wrong, fix it and retry; \`io\` — storage failed, the transaction was rolled back;
\`internal\` — a bug in Silk, the transaction was rolled back, please report it.

This file is generated from \`protocol/errors.ts\`, \`protocol/warnings.ts\` and the limits the code enforces by
\`npx tsx scripts/errors-doc.ts\`; a test keeps them in step.

| code | HTTP status | kind | meaning and what to do |
|---|---|---|---|
${rows}

## Warnings

A warning is a HelixQL construct that HelixDB v2.3.5 accepts and Silk loads in its own way: the project still loads.
\`silk check\` prints each as \`file:line:column: warning: message [code]\` and exits 0 (\`silk check --strict\` exits 1);
\`silk serve\`, \`silk dev\` and \`silk gateway\` log each at start (pino \`warn\`, with \`warning\`, \`file\`, \`line\`,
\`column\`); an embedded database lists them in \`db.warnings\`.

| code | meaning, what Silk does, and how to silence it |
|---|---|
${warnings}

## Limits

Each limit is a named constant of the code (its value here is read from it), with the code a request beyond it gets.
Those on what a request may ask of the engine are together in \`protocol/limits.ts\`; those of HTTP, LMDB, NATS, the
partition map and the hosted gateway stay in their own layer, which \`protocol/\` knows nothing of.

| limit | value | code beyond it | what it bounds |
|---|---|---|---|
${limits}
`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(new URL("../docs/ERRORS.md", import.meta.url), renderErrorsDoc());
}
