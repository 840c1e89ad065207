/**
 * The plain in-memory model every answer is checked against: an adjacency Map built straight from the edge list,
 * with each workload's answer computed by the most obvious code there is. Answers are compared in a normalized
 * text form (SNAP IDs, sorted where the result is a list), so Silk, the raw loop and the oracle can each return
 * whatever their natural shape is.
 */
import type { EdgeList } from "./datasets.js";
import { unreachable } from "../protocol/errors.js";

export type WorkloadName = "point_get" | "one_hop" | "two_hop_distinct" | "one_hop_filter";

export const WORKLOAD_NAMES: readonly WorkloadName[] = ["point_get", "one_hop", "two_hop_distinct", "one_hop_filter"];

/** The deterministic `score` property every node gets: its SNAP ID modulo 100. */
export function scoreOf(snapId: number): number {
  return snapId % 100;
}

/** The filter of the filtered 1-hop workload: `score > SCORE_THRESHOLD`. */
export const SCORE_THRESHOLD = 50;

/** The normalized form of a point get: the node's `ext` and `score` properties. */
export function pointAnswer(ext: unknown, score: unknown): string {
  return `ext=${String(ext)} score=${String(score)}`;
}

/** The normalized form of a list of nodes: their SNAP IDs, sorted, so adjacency order does not matter. */
export function listAnswer(snapIds: readonly number[]): string {
  return [...snapIds].sort((a, b) => a - b).join(",");
}

export class Oracle {
  private readonly outgoing = new Map<number, number[]>();

  constructor(edges: EdgeList) {
    for (let i = 0; i < edges.sources.length; i += 1) {
      const list = this.outgoing.get(edges.sources[i]);
      if (list) list.push(edges.targets[i]);
      else this.outgoing.set(edges.sources[i], [edges.targets[i]]);
    }
  }

  private neighbours(snapId: number): readonly number[] {
    return this.outgoing.get(snapId) ?? [];
  }

  answer(workload: WorkloadName, snapId: number): string {
    switch (workload) {
      case "point_get":
        return pointAnswer(snapId, scoreOf(snapId));
      case "one_hop":
        return listAnswer(this.neighbours(snapId));
      case "two_hop_distinct": {
        const reached = new Set<number>();
        for (const middle of this.neighbours(snapId)) for (const end of this.neighbours(middle)) reached.add(end);
        return String(reached.size);
      }
      case "one_hop_filter":
        return listAnswer(this.neighbours(snapId).filter((other) => scoreOf(other) > SCORE_THRESHOLD));
      default:
        return unreachable(workload, "workload");
    }
  }
}
