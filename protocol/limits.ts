/**
 * The bounds on what a request may ask of the engine, in one place (TigerStyle: every input has a bound, a named
 * constant with its unit last): how big and deep a request may be, and how much work one step, search or partition
 * may be made to do. Each is enforced where its input is read (the tree decoder, the executor's steps, the embedding
 * input checks), with the error code docs/ERRORS.md lists beside it (scripts/errors-doc.ts reads the values from
 * here). Bounds of what protocol/ must know nothing of stay with their layer and are listed in docs/ERRORS.md too:
 * HTTP (gateway/http-limits.ts, the body in gateway/query-v2.ts), LMDB's key length (node/keys.ts), NATS messages
 * (cluster/nats/message-size.ts), the partition map (cluster/partition-map.ts) and hosted API keys
 * (gateway/hosted/key-store.ts).
 */

// ---- The request, as the tree decoder reads it ----------------------------------------------------------------

/** Entries of one operation-tree batch. */
export const BATCH_ENTRIES_MAX = 1_000;
/** Levels of nesting of steps, predicates and expressions in the operation tree (the decoder recurses). */
export const TREE_DEPTH_MAX = 255;
/**
 * The deepest a value may nest arrays and objects, in levels (`[[1]]` nests 2). Checked where values enter (tree
 * literals, parameters, imported and written properties), before anything walks them: the engine's walks of a value
 * (equality, encoding, rendering) are recursive, and a value nested thousands deep would overflow the stack.
 */
export const VALUE_DEPTH_MAX = 64;
/** A label's length; labels are ASCII identifiers, so characters are bytes, stored with a one-byte length (node/store/partition-store.ts). */
export const LABEL_BYTES_MAX = 255;
/** Sub-traversals one `union` or `coalesce` may list. */
export const BRANCH_TRAVERSALS_MAX = 64;
/** The most iterations a `repeat` may ask for (`times`, `max_depth`). */
export const REPEAT_ITERATIONS_MAX = 1_000;
/** The longest execution deadline a request may ask for with `timeout_ms` (and a server may default to). */
export const QUERY_TIMEOUT_MS_MAX = 600_000;

// ---- Execution on a partition ---------------------------------------------------------------------------------

/** Elements or values one step may produce; an expansion stops as soon as it passes it. */
export const RESULT_ELEMENTS_MAX = 1_000_000;
/** Records a `repeat` may hold across all its levels before it is refused. */
export const REPEAT_ELEMENTS_MAX = 1_000_000;
/** The most records one shortest-path search may reach before it is refused (`limit_exceeded`), so a query cannot walk forever. */
export const PATH_VISITED_NODES_MAX = 1_000_000;
/** The most results (`k`) one vector or text search may ask for. */
export const SEARCH_K_MAX = 10_000;
/** The most elements RerankMMR reorders: its work is quadratic in the count. */
export const MMR_ITEMS_MAX = 10_000;
/** The most distinct terms one text query may hold after analysis (each costs a range read). */
export const QUERY_TERMS_MAX = 1_024;
/** The longest tenant value a text index's partition key holds, in UTF-8 bytes. */
export const TENANT_BYTES_MAX = 512;
/** Dimensions of a stored vector, and so the largest `dimension` a vector index may declare (schema or create_index). */
export const VECTOR_DIMENSIONS_MAX = 65_536;
/** Prepared query plans one partition (or coordinator) keeps. */
export const PREPARED_PLANS_MAX = 100_000;

// ---- Embedding ------------------------------------------------------------------------------------------------

/** The longest text one Embed may carry, in UTF-8 bytes (providers cap far lower in tokens; this bounds our work). */
export const EMBED_TEXT_BYTES_MAX = 1_048_576;
/** The most dimensions an embedder may be configured with (the largest hosted models give 3,072). */
export const EMBED_DIMENSIONS_MAX = 16_384;
