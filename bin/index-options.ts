/**
 * The options of `silk index create|drop|status|retry|abort`, declared on commander's commands. Apart from
 * bin/index-command.ts, which runs them, so that declaring the commands at every start of `silk` loads no engine.
 */
import type { Command } from "commander";
import { TEXT_ANALYZERS, VECTOR_METRICS } from "../protocol/indexes.js";

export type IndexAction = "create" | "drop" | "status" | "retry" | "abort";

export const INDEX_TYPES = ["equality", "range", "unique", "vector", "text"] as const;
export type IndexType = (typeof INDEX_TYPES)[number];

/** Declares the options of one `silk index` action on its commander command (bin/silk.ts adds --data and --schema). */
export function addIndexOptions(command: Command, action: IndexAction): Command {
  command
    .option("--label <label>", "the node (or edge, or vector) type")
    .option("--property <name>", "the indexed field ('$vector' for a V:: type's own vector, the default with --vector-type)")
    .option("--edge", "an index of an edge type's field (default: a node type's)")
    .option("--vector-type", "an index of a V:: type (its own vector or a field)");
  if (action === "create") {
    command
      .option("--type <type>", `the index type: ${INDEX_TYPES.join(", ")} (default: equality, or unique with --unique; vector for '$vector')`)
      .option("--unique", "a UNIQUE index (the same as --type unique): its build ends blocked over duplicate values")
      .option("--metric <metric>", `vector: the distance, ${VECTOR_METRICS.join(", ")} (default cosine)`)
      .option("--dimension <n>", "vector: every vector's length (default: the first vector indexed fixes it)")
      .option("--tenant <field>", "vector or text: the property naming a record's tenant partition (text: tenant_id)")
      .option("--analyzer <analyzer>", `text: ${TEXT_ANALYZERS.join(", ")} (default standard)`)
      .option("--positions", "text: store term positions with the postings");
  }
  if (action === "status") command.option("--watch", "run the builds, showing their counters, until every one is active or blocked; then print every index");
  return command;
}
