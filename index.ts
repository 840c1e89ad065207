/** Silk's package entry: the embedded runtime and the types a caller needs. */
export { open, Database, type IndexInfo, type OpenOptions, type PreparedQuery, type Storage } from "./runtime/embedded.js";
export { SilkError, ERROR_CODES, type ErrorCode } from "./protocol/errors.js";
export type { Embedder } from "./protocol/embedding.js";
export { embedderFromEnvironment, FeatureHashingEmbedder, LocalModelEmbedder, OpenAiCompatibleEmbedder } from "./embedders/index.js";
export type { QueryResult } from "./protocol/messages.js";
export type { ExplainStep } from "./node/exec/planner.js";
export type { ImportBatch, ImportEdge, ImportEndpoint, ImportNode, ImportResult, ImportVector } from "./cluster/bulk-import.js";
export { ImportRowError } from "./cluster/bulk-import.js";
