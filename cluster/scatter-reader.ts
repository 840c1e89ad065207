/**
 * How a coordinator reads and allocates across partitions when it runs a plan itself (several partitions): the
 * scatter/gather reader (each batched read split by owner into one message per partition; searches merged by
 * score) and the ID source. Used by cluster/coordinator.ts.
 *
 * Invariant: a merged list of IDs is in ascending ID order whatever the partition map (sorted when partitions' ranges
 * interleave after a rebalance).
 */
import { SilkError } from "../protocol/errors.js";
import type { PartitionReplyBody, PartitionRequest, QueryResult } from "../protocol/messages.js";
import type {
  AdjacencyEntry,
  Direction,
  IndexRange,
  RecordKind,
  SearchHit,
  StoredRecord,
  TextSearchRequest,
  VectorSearchRequest,
} from "../protocol/records.js";
import type { Entry, Plan, Step } from "../protocol/tree.js";
import type { Deadline } from "../node/exec/deadline.js";
import { countEntries, firstIdsEntries, PUSHED_COUNT, PUSHED_IDS } from "../node/exec/pushdown.js";
import { neighboursOf, type BaseReader, type IdSource, type Neighbour } from "../node/exec/txn-view.js";
import type { PartitionMap } from "./partition-map.js";
import type { RequestOptions, Transport } from "./transport.js";
import type { ReadRecorder } from "./read-set.js";

/** A partition's count in its answer to a pushed-down plan. */
function countIn(result: QueryResult): number {
  const count = result[PUSHED_COUNT];
  if (typeof count !== "number") throw new SilkError("internal", `a partition counted ${String(count)} (a protocol bug)`);
  return count;
}

export function expect<T extends PartitionReplyBody["type"]>(body: PartitionReplyBody, type: T): Extract<PartitionReplyBody, { type: T }> {
  if (body.type !== type) throw new SilkError("internal", `expected a ${type} reply, got ${body.type} (a protocol bug)`);
  return body as Extract<PartitionReplyBody, { type: T }>;
}

/** Committed reads across every partition: each request is split by owner and sent as one message per partition. */
export class ScatterReader implements BaseReader {
  private readonly options: RequestOptions;

  /**
   * `leader`: every read goes to the partitions' leaders, also when the transport may send reads to followers (a
   * write's reads must see every acknowledged write, or it would compute its changes from old data).
   */
  /**
   * `reads`: every read is sent `versioned` to the leader and noted there (its keys, or the whole partition, and the
   * snapshot's sequence), for validation at commit (several coordinators; cluster/read-set.ts).
   */
  constructor(
    private readonly transport: Transport,
    private readonly map: PartitionMap,
    leader = false,
    private readonly reads?: ReadRecorder,
  ) {
    this.options = { leader };
  }

  /** One read request to one partition; `keys`: what it reads, for the read set. */
  private async ask(partition: number, request: PartitionRequest, keys: () => readonly string[] | "whole"): Promise<PartitionReplyBody> {
    if (this.reads === undefined) return this.transport.request(partition, request, this.options);
    const reply = expect(await this.transport.request(partition, { type: "versioned", request }, this.options), "versioned");
    this.reads.note(partition, reply.sequence, keys());
    return reply.body;
  }

  private group(ids: readonly bigint[]): Map<number, number[]> {
    const groups = new Map<number, number[]>();
    ids.forEach((id, i) => {
      const partition = this.map.partitionOf(id);
      const list = groups.get(partition);
      if (list) list.push(i);
      else groups.set(partition, [i]);
    });
    return groups;
  }

  async records(kind: RecordKind, ids: readonly bigint[]): Promise<(StoredRecord | undefined)[]> {
    const result: (StoredRecord | undefined)[] = new Array(ids.length);
    await Promise.all(
      [...this.group(ids)].map(async ([partition, indexes]) => {
        const asked = indexes.map((i) => ids[i]);
        const reply = await this.ask(partition, { type: "read_records", kind, ids: asked }, () => asked.map((id) => `r${id}`));
        expect(reply, "records").records.forEach((record, j) => (result[indexes[j]] = record));
      }),
    );
    return result;
  }

  async exists(kind: RecordKind, ids: readonly bigint[]): Promise<boolean[]> {
    return (await this.records(kind, ids)).map((record) => record !== undefined);
  }

  async adjacency(owners: readonly bigint[], direction: Direction, label?: string): Promise<AdjacencyEntry[][]> {
    const result: AdjacencyEntry[][] = new Array(owners.length);
    await Promise.all(
      [...this.group(owners)].map(async ([partition, indexes]) => {
        const asked = indexes.map((i) => owners[i]);
        const reply = await this.ask(partition, { type: "read_adjacency", owners: asked, direction, label }, () => asked.map((owner) => `a${owner}`));
        expect(reply, "adjacency").lists.forEach((list, j) => (result[indexes[j]] = list));
      }),
    );
    return result;
  }

  async neighbours(owners: readonly bigint[], direction: Direction, label?: string): Promise<Neighbour[]> {
    return neighboursOf(await this.adjacency(owners, direction, label));
  }

  private async everyPartition(request: { type: "read_label"; kind: RecordKind; label: string } | { type: "read_all"; kind: RecordKind }): Promise<bigint[]> {
    const replies = await Promise.all(this.map.partitions.map((partition) => this.ask(partition, request, () => "whole")));
    // With one ascending range per partition, concatenating in partition order keeps ID order; after a rebalance
    // interleaved partitions' ranges, the merged list is sorted.
    return this.inIdOrder(replies.map((reply) => expect(reply, "ids").ids));
  }

  private inIdOrder(lists: bigint[][]): bigint[] {
    const ids = lists.flat();
    return this.map.idOrderFollowsPartitions ? ids : ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  idsOfLabel(kind: RecordKind, label: string): Promise<bigint[]> {
    return this.everyPartition({ type: "read_label", kind, label });
  }

  allIds(kind: RecordKind): Promise<bigint[]> {
    return this.everyPartition({ type: "read_all", kind });
  }

  /**
   * The number of elements a partition-local step yields (node/exec/pushdown.ts): every partition runs `count` of it over
   * its own records, one `execute` each, and answers a number; the numbers are added. Each record lives on one
   * partition, so nothing is counted twice.
   */
  async countWhereStored(step: Step, parameters: Readonly<Record<string, unknown>>, deadline: Deadline): Promise<number> {
    const results = await this.executeEverywhere(countEntries(step), [PUSHED_COUNT], parameters, deadline);
    return results.reduce((total, result) => total + countIn(result), 0);
  }

  /**
   * The first `count` IDs of a partition-local step's stream (node/exec/pushdown.ts) and its length: every partition
   * answers its stream's length and the IDs of its first `count` elements (a stream in ID order, so the first `count`
   * of the whole are among them); the IDs are merged in ID order.
   */
  async firstIdsWhereStored(
    step: Step,
    kind: RecordKind,
    count: number,
    parameters: Readonly<Record<string, unknown>>,
    deadline: Deadline,
  ): Promise<{ ids: bigint[]; total: number }> {
    const results = await this.executeEverywhere(firstIdsEntries(step, kind, count), [PUSHED_COUNT, PUSHED_IDS], parameters, deadline);
    const lists = results.map((result) => {
      const ids = result[PUSHED_IDS];
      if (!Array.isArray(ids)) throw new SilkError("internal", `a partition listed ${String(ids)} as IDs (a protocol bug)`);
      return ids.map((id) => BigInt(id as string));
    });
    return { ids: this.inIdOrder(lists).slice(0, count), total: results.reduce((total, result) => total + countIn(result), 0) };
  }

  /**
   * Runs one read plan on every partition (the request's deadline; only the parameters given). A failure answers what
   * the lowest partition answered: with one ascending range per partition, the error of the lowest failing record,
   * as a scan in ID order meets it first.
   */
  private async executeEverywhere(entries: Entry[], returns: string[], parameters: Readonly<Record<string, unknown>>, deadline: Deadline): Promise<QueryResult[]> {
    const plan: Plan = { requestType: "read", entries, returns, parameters, timeoutMs: deadline.remainingMs() };
    const replies = await Promise.allSettled(this.map.partitions.map((partition) => this.ask(partition, { type: "execute", plan }, () => "whole")));
    return replies.map((reply) => {
      if (reply.status === "fulfilled") return expect(reply.value, "result").result;
      // The partition knew only the time left; the caller is told the timeout it asked for.
      throw reply.reason instanceof SilkError && reply.reason.code === "query_timeout" ? deadline.expired() : reply.reason;
    });
  }

  /** Every partition's index hits, in ID order; undefined unless the index is active on all of them. */
  async indexIds(kind: RecordKind, label: string, field: string, ranges: readonly IndexRange[]): Promise<bigint[] | undefined> {
    const request = { type: "read_index", kind, label, field, ranges } as const;
    const replies = await Promise.all(this.map.partitions.map((partition) => this.ask(partition, request, () => "whole")));
    const lists = replies.map((reply) => expect(reply, "index_ids").ids);
    return lists.some((ids) => ids === null) ? undefined : this.inIdOrder(lists as bigint[][]);
  }

  /** Every partition's k nearest (or only the partitions owning candidates), merged by ascending distance. */
  vectorSearch(request: VectorSearchRequest): Promise<SearchHit[]> {
    // The query's plain numbers stay in this process: the partitions have the vector itself.
    const { components: _local, ...sent } = request;
    return this.search(sent, (part) => ({ type: "vector_search", request: part }), (a, b) => a.score - b.score);
  }

  /** Every partition's k best BM25 hits, merged by descending score (each partition scores with its own statistics). */
  textSearch(request: TextSearchRequest): Promise<SearchHit[]> {
    return this.search(request, (part) => ({ type: "text_search", request: part }), (a, b) => b.score - a.score);
  }

  /** A partition ranks only the overlay records it owns (each record once over all partitions). */
  private ownOverlay<R extends VectorSearchRequest | TextSearchRequest>(partition: number, request: R): R {
    if (!("overlay" in request) || request.overlay === undefined) return request;
    const records = request.overlay.records.filter((record) => this.map.partitionOf(record.id) === partition);
    return { ...request, overlay: { changed: request.overlay.changed, records } };
  }

  private async search<R extends VectorSearchRequest | TextSearchRequest>(
    request: R,
    message: (part: R) => PartitionRequest,
    order: (a: SearchHit, b: SearchHit) => number,
  ): Promise<SearchHit[]> {
    const parts: [number, R][] =
      request.candidates === undefined
        ? this.map.partitions.map((partition) => [partition, request])
        : [...this.group(request.candidates)].map(([partition, indexes]) => [partition, { ...request, candidates: indexes.map((i) => request.candidates![i]) }]);
    const replies = await Promise.all(parts.map(([partition, part]) => this.ask(partition, message(this.ownOverlay(partition, part)), () => "whole")));
    const hits = replies.flatMap((reply) => expect(reply, "hits").hits);
    return hits.sort((a, b) => order(a, b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, request.k);
  }
}

/** IDs a coordinator takes from a partition at a time for the records its transactions create. */
export const ID_BLOCK = 64;

/**
 * New records go round-robin over partitions; an edge goes to its source's partition. IDs come from blocks each
 * partition handed this coordinator, one round trip per ID_BLOCK new records instead of one per record (a cluster
 * partition appends a reservation to its log for them); IDs of a block left unused are skipped, never reused. One
 * instance lives as long as its coordinator.
 */
export class RemoteIdSource implements IdSource {
  private next = 0;
  private readonly blocks = new Map<number, { next: bigint; end: bigint }>();

  constructor(
    private readonly transport: Transport,
    private readonly map: () => PartitionMap,
  ) {}

  async allocate(_kind: RecordKind, near?: bigint): Promise<bigint> {
    const map = this.map();
    const partitions = map.partitions;
    const partition = near !== undefined ? map.partitionOf(near) : partitions[this.next++ % partitions.length];
    let block = this.blocks.get(partition);
    // A block is used up, or a rebalance gave some of its IDs to another partition: take a new one.
    if (block === undefined || block.next > block.end || map.partitionOf(block.next) !== partition) {
      const first = await this.allocateBlock(partition, ID_BLOCK);
      block = { next: first, end: first + BigInt(ID_BLOCK) - 1n };
      this.blocks.set(partition, block);
    }
    const id = block.next;
    block.next += 1n;
    return id;
  }

  /** Reserves a block of IDs on one partition (bulk import, and the blocks above). */
  async allocateBlock(partition: number, count: number): Promise<bigint> {
    return expect(await this.transport.request(partition, { type: "allocate_ids", count }), "id").id;
  }
}
