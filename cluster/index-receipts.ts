/**
 * The answers of index operations: Silk's own (`IndexAnswer`, made by `answerOf` from an index's status; also the
 * lines of `silk index status`), and the same given in HelixDB v3's form (`create_index`/`drop_index` with a `spec`, and
 * `get_index_operation`/`retry_index_operation`/`abort_index_operation` with an `operation_id`), shaped as HelixDB
 * answers them and as its SDKs check them (`parseIndexDdlReceipt`, `parseIndexOperationStatus` of the v3 TypeScript
 * SDK, which ignore additive fields): a receipt `{"kind": "accepted" | "existing_operation" | "already_active",
 * "operation_id", "index_id", "generation"}` for create and drop, and a status `{"status", "operation_id", "index_id",
 * "generation", "operation_kind", "family", "stage", "attempt", "progress"}` for the others. Silk's own answer
 * follows in the same object (`index`, `state`, the counters, `reason`/`message`), its record kind as `element_kind`,
 * since HelixDB's receipts use `kind` for the receipt's kind.
 *
 * Silk keeps one build per index, so an index has one operation (its ID, cluster/index-operation-ids.ts), one
 * `index_id` (a u64 from the same hash) and one generation, "1"; a build is attempt 1; output bytes are not
 * measured ("0").
 */
import type { IndexFamily, IndexStateName, IndexStatus } from "../protocol/indexes.js";
import type { RecordKind } from "../protocol/records.js";
import { indexNumericId, indexOperationId } from "./index-operation-ids.js";
import { unreachable } from "../protocol/errors.js";

/** Silk's answer of an index operation, before any HelixDB form (cluster/index-operations.ts runs the operations). */
export interface IndexAnswer {
  readonly index: string;
  readonly kind: RecordKind;
  readonly state: IndexStateName | "dropped" | "aborted";
  readonly entities: number;
  readonly bytes: number;
  readonly operations: number;
  readonly reason?: string;
  readonly message?: string;
}

/** The answer shape of an index operation (also the CLI's `silk index status` lines). */
export function answerOf(status: IndexStatus, state: IndexAnswer["state"] = status.state): IndexAnswer {
  return {
    index: status.name,
    kind: status.kind,
    state,
    entities: status.entities,
    bytes: status.bytes,
    operations: status.operations,
    ...(status.reason === undefined ? {} : { reason: status.reason }),
    ...(status.message === undefined ? {} : { message: status.message }),
  };
}

/** Silk keeps one build per index: its generation never changes. */
const GENERATION = "1";
/** Silk does not count attempts of a build (a retry starts it again). */
const ATTEMPT = 1;

/** HelixDB's blocker codes for Silk's `reason` of a blocked build (anything else is a value the index refuses). */
const BLOCKERS: ReadonlyMap<string, string> = new Map([["unique_violation", "uniqueness_violation"]]);

/** Silk's answer after HelixDB's fields: its record kind renamed, everything else as Silk answers it. */
function silkFields(answer: IndexAnswer): Record<string, unknown> {
  const { kind, ...rest } = answer;
  return { ...rest, element_kind: kind };
}

/**
 * A `create_index` or `drop_index` receipt. `before` is the index's state before the operation ran (undefined when
 * there was none): a create of an index that was active is `already_active`, of one still building
 * `existing_operation`, otherwise (and a drop) `accepted`.
 */
export function indexReceipt(action: "create" | "drop", answer: IndexAnswer, before: IndexStateName | undefined): Record<string, unknown> {
  const kind = action === "drop" || before === undefined ? "accepted" : before === "active" ? "already_active" : "existing_operation";
  return {
    kind,
    operation_id: indexOperationId(answer.kind, answer.index),
    index_id: indexNumericId(answer.kind, answer.index),
    generation: GENERATION,
    ...silkFields(answer),
  };
}

/** A `get`, `retry` or `abort` answer as HelixDB's operation status. */
export function indexOperationStatus(answer: IndexAnswer, family: IndexFamily): Record<string, unknown> {
  const [status, stage] = statusAndStage(answer);
  return {
    status,
    operation_id: indexOperationId(answer.kind, answer.index),
    index_id: indexNumericId(answer.kind, answer.index),
    generation: GENERATION,
    operation_kind: "build",
    family,
    stage,
    attempt: ATTEMPT,
    progress: { entities: String(answer.entities), input_bytes: String(answer.bytes), output_operations: String(answer.operations), output_bytes: "0" },
    ...(status === "blocked" ? { blocker_code: BLOCKERS.get(answer.reason ?? "") ?? "invalid_source_data" } : {}),
    ...silkFields(answer),
  };
}

/** HelixDB's status and stage of a build in Silk's state. */
function statusAndStage(answer: IndexAnswer): [string, string] {
  switch (answer.state) {
    case "constructing":
      return ["running", "scan"];
    case "validating":
      return ["running", "validate"];
    case "active":
      return ["succeeded", "activate"];
    case "blocked":
      return ["blocked", answer.reason === "unique_violation" ? "validate" : "scan"];
    case "aborted":
      // HelixDB answers an aborted build in its clean-up stages; Silk's abort removes the index at once.
      return ["aborted", "aborting_finalize"];
    case "dropped":
      // Only drop_index answers this state, and it answers a receipt; kept for the switch to stay exhaustive.
      return ["succeeded", "finalize"];
    default:
      return unreachable(answer.state, "index state");
  }
}
