/**
 * The index operations of the operation tree (`create_index`, `drop_index`, `get_index_operation`,
 * `retry_index_operation`, `abort_index_operation`), run by the coordinator over every partition. They are
 * administration, not transactions: each takes effect when it runs, in entry order, and a batch's entries that ran
 * before a failing one stay done. Every check that can fail (schema, existence, origin, state) runs before any
 * partition changes, so a refused operation changes nothing.
 *
 * Each answers `{"index": "User.age", "kind", "state", "entities", "bytes", "operations", "reason"?, "message"?}`:
 * the state and counters merged over partitions (protocol/indexes.ts). `drop_index` answers state `dropped` and
 * `abort_index_operation` state `aborted`, with the counters the index had; the index is gone after either. An
 * operation given in HelixDB's form answers HelixDB's receipt or status around that (index-receipts.ts).
 *
 * The refusals follow HelixDB v3's index lifecycle: `create_index` with `if_not_exists` false of an index that
 * exists with the same definition is `index_already_exists`; `abort_index_operation` aborts a build under way or
 * blocked, refuses one that finished (`index_operation_not_abortable`), and answers a build it aborted again
 * (HelixDB keeps an aborted build's operation, so a repeated abort converges on it). The partitions that held the
 * build keep it as aborted, in their LMDB, until the index is created again, so its operation ID answers `aborted`
 * after a restart too.
 */
import { SilkError, unreachable } from "../protocol/errors.js";
import { LABEL_BYTES_MAX } from "../protocol/limits.js";
import {
  describeIndex,
  mergeIndexStatuses,
  optionalEntry,
  sameDefinition,
  VECTOR_FIELD,
  type IndexDefinition,
  type IndexFamily,
  type IndexStateName,
  type IndexStatus,
} from "../protocol/indexes.js";
import type { PartitionReplyBody, PartitionRequest } from "../protocol/messages.js";
import type { RecordKind } from "../protocol/records.js";
import { fieldTypeToString, type Schema } from "../protocol/schema.js";
import type { IndexOperation, NamedIndexOperation } from "../protocol/tree-indexes.js";
import { isLabel } from "../protocol/tree-json.js";
import type { Plan } from "../protocol/tree.js";
import { indexOperationId } from "./index-operation-ids.js";
import { answerOf, indexOperationStatus, indexReceipt, type IndexAnswer } from "./index-receipts.js";
import type { PartitionMap } from "./partition-map.js";
import type { Transport } from "./transport.js";

/** What an operation of the tree answers: the index's answer with its HelixDB-style operation ID. */
export type IndexOperationAnswer = IndexAnswer & { readonly operation_id: string };

export interface IndexOperationContext {
  readonly transport: Transport;
  readonly map: PartitionMap;
  readonly schema: Schema | undefined;
}

/** What the partitions answer of their indexes: each one's statuses, and the builds aborted there (see runOne). */
interface PartitionIndexes {
  readonly statuses: IndexStatus[][];
  readonly aborted: IndexStatus[][];
}

/** Every partition's index statuses, in partition order. */
export async function partitionIndexStatuses(context: Pick<IndexOperationContext, "transport" | "map" | "schema">): Promise<IndexStatus[][]> {
  return (await partitionIndexes(context)).statuses;
}

async function partitionIndexes(context: Pick<IndexOperationContext, "transport" | "map">): Promise<PartitionIndexes> {
  const replies = (await Promise.all(context.map.partitions.map((partition) => context.transport.request(partition, { type: "index_statuses" })))).map((reply) => expectType(reply, "indexes"));
  return { statuses: replies.map((reply) => reply.statuses), aborted: replies.map((reply) => reply.aborted ?? []) };
}

function expectType<T extends PartitionReplyBody["type"]>(body: PartitionReplyBody, type: T): Extract<PartitionReplyBody, { type: T }> {
  if (body.type !== type) throw new SilkError("internal", `expected a ${type} reply, got ${body.type} (a protocol bug)`);
  return body as Extract<PartitionReplyBody, { type: T }>;
}

/** Runs a batch of index operations (the plan holds nothing else: protocol/tree.ts checks it). */
export async function runIndexOperations(plan: Plan, context: IndexOperationContext): Promise<Record<string, unknown>> {
  const operations = plan.entries.map((entry) => {
    if (entry.kind !== "index_operation") throw new SilkError("internal", "internal error (a bug in Silk): an index operation batch holds another entry");
    return entry;
  });
  const named = new Set(operations.map((entry) => entry.name));
  for (const name of plan.returns) {
    if (!named.has(name)) throw new SilkError("unknown_variable", `returns names ${JSON.stringify(name)}, which no entry defines`);
  }
  const answers = new Map<string, IndexOperationAnswer | Record<string, unknown>>();
  for (const entry of operations) {
    const { operation } = entry;
    const { answer, before, family } = await runOne(operation, context);
    if (entry.name === undefined) continue;
    if (operation.action === "create" || operation.action === "drop") {
      answers.set(entry.name, operation.helixForm ? indexReceipt(operation.action, answer, before) : { ...answer, operation_id: indexOperationId(answer.kind, answer.index) });
    } else {
      answers.set(entry.name, "operationId" in operation ? indexOperationStatus(answer, family) : { ...answer, operation_id: indexOperationId(answer.kind, answer.index) });
    }
  }
  const result: Record<string, unknown> = {};
  for (const name of plan.returns) result[name] = answers.get(name);
  return result;
}

/** The kind and name of the index an operation is about; an operation ID names the index whose ID it is. */
function targetOf(operation: IndexOperation, perPartition: readonly IndexStatus[][]): { kind: RecordKind; name: string } {
  if (!("operationId" in operation)) return { kind: operation.kind, name: `${operation.label}.${operation.field}` };
  const status = perPartition.flat().find((candidate) => indexOperationId(candidate.kind, candidate.name) === operation.operationId);
  if (status === undefined) throw new SilkError("index_operation_not_found", `no index operation ${operation.operationId}`);
  return { kind: status.kind, name: status.name };
}

/** What one operation did: Silk's answer, the index's state before it ran (none: it did not exist) and its family. */
interface IndexOutcome {
  readonly answer: IndexAnswer;
  readonly before: IndexStateName | undefined;
  readonly family: IndexFamily;
}

async function runOne(operation: IndexOperation, context: IndexOperationContext): Promise<IndexOutcome> {
  const indexes = await partitionIndexes(context);
  const perPartition = indexes.statuses;
  const aborted = abortedBuild(operation, indexes);
  if (aborted !== undefined) return { answer: answerOf(aborted, "aborted"), before: undefined, family: aborted.family };
  const { kind, name } = targetOf(operation, perPartition);
  const own = perPartition.map((statuses) => statuses.find((status) => status.kind === kind && status.name === name));
  const [merged] = mergeIndexStatuses(own.map((status) => (status === undefined ? [] : [status])));
  const holders = context.map.partitions.filter((_, i) => own[i] !== undefined);
  const send = async (partitions: readonly number[], request: PartitionRequest): Promise<void> => {
    for (const partition of partitions) await context.transport.request(partition, request);
  };
  const current = async (): Promise<IndexAnswer> => {
    const [after] = mergeIndexStatuses((await partitionIndexStatuses(context)).map((statuses) => statuses.filter((status) => status.kind === kind && status.name === name)));
    if (after === undefined) throw new SilkError("internal", `internal error (a bug in Silk): ${name} vanished during its operation`);
    return answerOf(after);
  };
  const everyPartition = context.map.partitions;
  switch (operation.action) {
    case "create": {
      const definition = declaredDefinition(operation, context.schema);
      if (merged !== undefined && !sameDefinition(merged, definition)) {
        throw new SilkError("index_definition_conflict", `${name} is already indexed (${describeIndex(merged)}); drop it first to index it differently`);
      }
      // HelixDB checks the definition first, then the mode: the same definition with if_not_exists false is refused.
      if (merged !== undefined && !operation.ifNotExists) {
        throw new SilkError("index_already_exists", `${name} is already indexed (${merged.state}); send if_not_exists true to be answered it`);
      }
      // Every partition, also those that have it: one that a crash left without it gets it now.
      await send(everyPartition, { type: "index_create", definition });
      return { answer: await current(), before: merged?.state, family: definition.family };
    }
    case "get": {
      const status = found(merged, kind, name);
      return { answer: answerOf(status), before: status.state, family: status.family };
    }
    case "retry": {
      const status = found(merged, kind, name);
      if (status.state === "blocked") await send(holders, { type: "index_retry", kind, name });
      return { answer: status.state === "blocked" ? await current() : answerOf(status), before: status.state, family: status.family };
    }
    case "drop": {
      const status = found(merged, kind, name);
      if (status.origin === "schema") throw new SilkError("unsupported_operation", `${name} is declared in the schema; remove it from the schema to drop it`);
      await send(holders, { type: "index_drop", kind, name });
      return { answer: answerOf(status, "dropped"), before: status.state, family: status.family };
    }
    case "abort": {
      const status = found(merged, kind, name);
      if (status.origin === "schema") {
        throw new SilkError("unsupported_operation", `${name} is declared in the schema, so its build cannot be aborted (it would start again at the next open); remove it from the schema instead`);
      }
      if (!ABORTABLE[status.state]) {
        throw new SilkError("index_operation_not_abortable", `the build of ${name} has finished (${status.state}): only a build under way or blocked can be aborted (drop_index removes the index)`);
      }
      // Each holder keeps the build as it was when aborted (the merged status), in the transaction that drops it.
      await send(holders, { type: "index_drop", kind, name, aborted: status });
      return { answer: answerOf(status, "aborted"), before: status.state, family: status.family };
    }
    default:
      return unreachable(operation, "index action");
  }
}

/**
 * Which states a build can be aborted in, as HelixDB's lifecycle has it: a build still constructing (Silk's
 * `constructing`, `validating`) or blocked is aborted; a finished one (`active`) is not.
 */
const ABORTABLE: Readonly<Record<IndexStateName, boolean>> = { constructing: true, validating: true, blocked: true, active: false };

/**
 * The aborted build an operation ID names, as the partitions that held it kept it, when no index answers to the ID
 * now: HelixDB keeps an aborted build's operation, so `get_index_operation`, `retry_index_operation` and a repeated
 * `abort_index_operation` of its ID answer it, status `aborted`, until the index is created again.
 */
function abortedBuild(operation: IndexOperation, indexes: PartitionIndexes): IndexStatus | undefined {
  if (!("operationId" in operation)) return undefined;
  const names = (status: IndexStatus): boolean => indexOperationId(status.kind, status.name) === operation.operationId;
  if (indexes.statuses.flat().some(names)) return undefined;
  return indexes.aborted.flat().find(names);
}

function found(status: IndexStatus | undefined, kind: RecordKind, name: string): IndexStatus {
  if (status === undefined) throw new SilkError("index_not_found", `no ${kind} index ${name}`);
  return status;
}

/**
 * The definition of a new index. With a schema, the field must be one the schema declares for the label, of a type
 * the family indexes: a top-level scalar (secondary), [F32]/[F64]/[I64] or a `V::` type's own vector (vector), String
 * or [String] (text); a tenant property must be a declared top-level field (`tenant_id` for text, SPEC). Without a
 * schema the request alone defines it (schemalessDefinition).
 */
function declaredDefinition(operation: NamedIndexOperation, schema: Schema | undefined): IndexDefinition {
  const { kind, label, field, spec } = operation;
  if (schema === undefined) return schemalessDefinition(operation);
  const types = kind === "node" ? schema.nodes : kind === "edge" ? schema.edges : schema.vectors;
  const declared = types.get(label);
  if (declared === undefined) throw new SilkError("unknown_label", `the schema declares no ${kind} type ${label}`);
  const name = `${label}.${field}`;
  const tenantOf = (tenant: string | undefined): string | undefined => {
    if (tenant === undefined) return undefined;
    const decl = declared.fields.get(tenant);
    if (decl === undefined || decl.type.kind === "object") throw new SilkError("invalid_field", `${label} declares no top-level field ${tenant} to partition tenants by`);
    if (spec.family === "text" && tenant !== "tenant_id") throw new SilkError("invalid_field", `a text index partitions tenants by tenant_id only, not ${tenant}`);
    return tenant;
  };
  if (spec.family === "vector" && kind === "vector" && field === VECTOR_FIELD) {
    return { family: "vector", kind, label, field, name, metric: spec.metric, ...optionalEntry("dimension", spec.dimension), ...optionalEntry("tenant", tenantOf(spec.tenant)), ...optionalEntry("ef", spec.ef) };
  }
  const decl = declared.fields.get(field);
  if (decl === undefined) throw new SilkError("invalid_field", `${label} declares no field ${field}`);
  const type = decl.type;
  switch (spec.family) {
    case "secondary":
      if (type.kind !== "scalar") throw new SilkError("invalid_field", `${name} is not a scalar field: arrays and objects have no secondary index`);
      return { family: "secondary", kind, label, field, name, unique: spec.unique, type: type.name };
    case "vector":
      if (type.kind !== "array" || type.element.kind !== "scalar" || !["F32", "F64", "I64"].includes(type.element.name)) {
        throw new SilkError("invalid_field", `${name} is ${fieldTypeToString(type)}: a vector index takes [F32], [F64] or [I64]`);
      }
      return { family: "vector", kind, label, field, name, metric: spec.metric, ...optionalEntry("dimension", spec.dimension), ...optionalEntry("tenant", tenantOf(spec.tenant)), ...optionalEntry("ef", spec.ef) };
    case "text": {
      const text = (t: typeof type): boolean => t.kind === "scalar" && t.name === "String";
      if (!text(type) && !(type.kind === "array" && text(type.element))) {
        throw new SilkError("invalid_field", `${name} is ${fieldTypeToString(type)}: a text index takes String or [String]`);
      }
      return { family: "text", kind, label, field, name, analyzer: spec.analyzer, positions: spec.positions, ...optionalEntry("tenant", tenantOf(spec.tenant)) };
    }
    default:
      return unreachable(spec, "index family");
  }
}

/**
 * The definition of a new index of a schemaless database: any label, any top-level property a write can give a
 * record (an identifier; a `V::`-style record's own vector as `$vector`), with the family and options of the request.
 * No value type is declared, so a secondary index has none: it keys each value by its own kind (index-encoding.ts
 * keeps booleans, numbers, dates and strings apart, each in its order) and the planner looks it up without one
 * (node/exec/planner.ts). A vector or text index checks each value when it is written or built, as it always does: a
 * value of another type is `invalid_type` for a write and blocks a build.
 */
function schemalessDefinition(operation: NamedIndexOperation): IndexDefinition {
  const { kind, label, field, spec } = operation;
  const name = `${label}.${field}`;
  const ownVector = spec.family === "vector" && kind === "vector" && field === VECTOR_FIELD;
  if (!ownVector && !isLabel(field)) {
    throw new SilkError("invalid_field", `${JSON.stringify(field)} is not a top-level property name: index a property named by an identifier of at most ${LABEL_BYTES_MAX} characters (nested paths and $ fields have no index)`);
  }
  switch (spec.family) {
    case "secondary":
      return { family: "secondary", kind, label, field, name, unique: spec.unique };
    case "vector":
      return { family: "vector", kind, label, field, name, metric: spec.metric, ...optionalEntry("dimension", spec.dimension), ...optionalEntry("tenant", schemalessTenant(spec.tenant)), ...optionalEntry("ef", spec.ef) };
    case "text":
      return { family: "text", kind, label, field, name, analyzer: spec.analyzer, positions: spec.positions, ...optionalEntry("tenant", schemalessTenant(spec.tenant)) };
    default:
      return unreachable(spec, "index family");
  }
}

/** A schemaless index's tenant property: a top-level property name, like the indexed field. */
function schemalessTenant(tenant: string | undefined): string | undefined {
  if (tenant !== undefined && !isLabel(tenant)) {
    throw new SilkError("invalid_field", `${JSON.stringify(tenant)} is not a top-level property name to partition tenants by: name one by an identifier of at most ${LABEL_BYTES_MAX} characters`);
  }
  return tenant;
}
