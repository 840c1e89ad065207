/**
 * The TypeScript client of Silk, as the package exports it (`import { SilkClient } from "silk-db/sdk"`): the
 * HTTP client, the retry helper and the `/v2/query` builder. It imports nothing of the database, so an application
 * can bundle it alone.
 */
export * from "./builder.js";
export * from "./client.js";
export * from "./json.js";
export * from "./retry.js";
