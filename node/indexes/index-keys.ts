/** Where an index's state lives in the partition's `meta` sub-database: `index:<kind>:<name>` (index-catalog.ts). */
import type { RecordKind } from "../../protocol/records.js";

export const META_PREFIX = "index:";
/** ";" follows ":" in ASCII: the end of every `index:` key. */
export const META_END = "index;";

/** The meta key of an index by kind and name (`User.age`). */
export function indexKey(kind: RecordKind, name: string): string {
  return `${META_PREFIX}${kind}:${name}`;
}
