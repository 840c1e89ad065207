/**
 * `shortest_path` by breadth-first search, by Dijkstra and by A*: directions, labels, several sources and targets, ties
 * broken by ID, unreachable targets, and bad weights or shapes with stable codes. Runs on memory and on three
 * partitions on disk (where a path crosses partitions).
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ErrorCode } from "../../protocol/errors.js";
import { BACKENDS, TestDatabase, expectRefused, ids, removeTempDirs } from "../helpers/engine.js";
import { addE, addN, entry, nodes, nodesVar, read, readOne, ref, update, write, type Json, type Ref, type Request, type TreeNode } from "../helpers/tree.js";

afterAll(removeTempDirs);

const CHEAP_BACKENDS = BACKENDS.filter((backend) => backend.storage === "memory" || backend.partitions === 3);

const NAMES = ["a", "b", "c", "d", "e", "f", "y1", "y2", "z"] as const;
type Ids = Record<(typeof NAMES)[number], string>;

interface PathRow {
  nodes: { $id: string; name: string }[];
  edges: { $id: string; $from: string; $to: string; $label: string; distance?: number }[];
  hops: number;
  weight: number;
}

const shortestPath = (input: TreeNode, to: Ref, options: Record<string, Json> = {}): TreeNode => ({
  shortest_path: { input: input as Json, to: to as Json, ...options },
});
const dijkstra = (weight: Json = { property: "distance" }): Record<string, Json> => ({ algorithm: "dijkstra", weight });
const astar = (heuristic: string, weight: Json = { property: "distance" }): Record<string, Json> => ({ algorithm: "astar", weight, heuristic });

describe.each(CHEAP_BACKENDS)("shortest_path on $name", (backend) => {
  let t: TestDatabase;
  let s: Ids;
  const paths = async (root: TreeNode, parameters: Record<string, unknown> = {}): Promise<PathRow[]> => (await t.run(readOne(root, parameters))).r as PathRow[];
  const names = (row: PathRow): string[] => row.nodes.map((node) => node.name);
  const from = (name: keyof Ids): TreeNode => nodes(ref.ids(s[name]));

  const refused = (request: unknown, code: ErrorCode): Promise<unknown> => expectRefused(t, request, code);

  /**
   * Roads: a→b (1), b→c (1), c→d (1), a→d (10), a→e (2.5), e→d (2); a Rail a→c; f is isolated.
   * Two equal routes x: y1→z and y2→z from e (e→y1, e→y2, y1→z, y2→z), for tie-breaking.
   */
  beforeEach(async () => {
    t = await TestDatabase.open(backend);
    const road = (source: string, target: string, distance: number) =>
      entry(undefined, addE(nodesVar(source), "Road", ref.var(target), { distance }));
    const result = await t.run(
      write(
        [
          ...NAMES.map((name) => entry(name, addN("Place", { name }))),
          road("a", "b", 1),
          road("b", "c", 1),
          road("c", "d", 1),
          road("a", "d", 10),
          road("a", "e", 2.5),
          road("e", "d", 2),
          entry(undefined, addE(nodesVar("a"), "Rail", ref.var("c"))),
          road("e", "y1", 1),
          road("e", "y2", 1),
          road("y1", "z", 1),
          road("y2", "z", 1),
        ],
        [...NAMES],
      ),
    );
    s = Object.fromEntries(NAMES.map((name) => [name, ids(result[name])[0]])) as Ids;
  });

  afterEach(async () => {
    await t.close();
  });

  describe("breadth-first", () => {
    it("finds the fewest hops and returns nodes, edges, hops and weight", async () => {
      const [row] = await paths(shortestPath(from("a"), ref.ids(s.d), { label: "Road" }));
      expect(names(row)).toEqual(["a", "d"]);
      expect(row.hops).toBe(1);
      expect(row.weight).toBe(1);
      expect(row.edges).toEqual([{ $id: expect.stringMatching(/^\d+$/), $label: "Road", $from: s.a, $to: s.d, distance: 10 }]);
      expect(row.nodes[0]).toEqual({ $id: s.a, $label: "Place", name: "a" });
    });

    it("follows every label without one, and only the given label with one", async () => {
      const [any] = await paths(shortestPath(from("a"), ref.ids(s.c)));
      expect(any.edges.map((edge) => edge.$label)).toEqual(["Rail"]);
      const [roads] = await paths(shortestPath(from("a"), ref.ids(s.c), { label: "Road" }));
      expect(names(roads)).toEqual(["a", "b", "c"]);
    });

    it("goes against edges with in, either way with both, and finds nothing the wrong way", async () => {
      expect(await paths(shortestPath(from("d"), ref.ids(s.a)))).toEqual([]);
      expect(names((await paths(shortestPath(from("d"), ref.ids(s.a), { direction: "in", label: "Road" })))[0])).toEqual(["d", "a"]);
      const [both] = await paths(shortestPath(from("b"), ref.ids(s.e), { direction: "both", label: "Road" }));
      expect(names(both)).toEqual(["b", "a", "e"]);
      expect(both.edges.map((edge) => [edge.$from, edge.$to])).toEqual([[s.a, s.b], [s.a, s.e]]);
    });

    it("a source that is a target is a path of one node and no hops", async () => {
      expect(await paths(shortestPath(from("f"), ref.ids(s.f)))).toEqual([{ nodes: [{ $id: s.f, $label: "Place", name: "f" }], edges: [], hops: 0, weight: 0 }]);
    });

    it("gives one row per source that reaches a target, the nearest target each", async () => {
      const rows = await paths(shortestPath(nodes(ref.ids(s.a, s.f, s.b)), { param: "targets" }, { label: "Road" }), { targets: [s.c, s.e] });
      expect(rows.map(names)).toEqual([["a", "e"], ["b", "c"]]);
      const viaVar = await t.run(
        read([entry("targets", nodes(ref.ids(s.z))), entry("r", shortestPath(from("a"), ref.var("targets"), { label: "Road" }))], ["r"]),
      );
      expect((viaVar.r as PathRow[])[0].hops).toBe(3);
    });

    it("breaks ties between equal routes by ID", async () => {
      const [row] = await paths(shortestPath(from("e"), ref.ids(s.z), { label: "Road" }));
      const first = BigInt(s.y1) < BigInt(s.y2) ? "y1" : "y2";
      expect(names(row)).toEqual(["e", first, "z"]);
    });

    it("ignores IDs that name nothing, and a weight", async () => {
      expect(await paths(shortestPath(from("a"), ref.ids("123456789")))).toEqual([]);
      const [row] = await paths(shortestPath(from("a"), ref.ids(s.d), { label: "Road", weight: { property: "distance" } }));
      expect(row.hops).toBe(1);
    });
  });

  describe("dijkstra", () => {
    it("finds the least total weight", async () => {
      const [row] = await paths(shortestPath(from("a"), ref.ids(s.d), { label: "Road", ...dijkstra() }));
      expect(names(row)).toEqual(["a", "b", "c", "d"]);
      expect(row.hops).toBe(3);
      expect(row.weight).toBe(3);
    });

    it("computes the weight by expression, per edge", async () => {
      const doubled = { mul: { left: { property: "distance" }, right: { constant: { i64: 2 } } } };
      const [row] = await paths(shortestPath(from("a"), ref.ids(s.e), { label: "Road", ...dijkstra(doubled) }));
      expect(row.weight).toBe(5);
      const [nearest] = await paths(shortestPath(from("a"), ref.ids(s.c, s.e), { label: "Road", ...dijkstra() }));
      expect(names(nearest)).toEqual(["a", "b", "c"]);
    });

    it("a missing, negative or non-number weight is invalid_value", async () => {
      await refused(readOne(shortestPath(from("a"), ref.ids(s.c), dijkstra())), "invalid_value");
      await refused(readOne(shortestPath(from("a"), ref.ids(s.d), { label: "Road", ...dijkstra({ sub: { left: { constant: { i64: 0 } }, right: { property: "distance" } } }) })), "invalid_value");
      await refused(readOne(shortestPath(from("a"), ref.ids(s.d), { label: "Road", ...dijkstra({ constant: { string: "far" } }) })), "invalid_value");
    });
  });

  describe("astar", () => {
    /** Sets each named place's properties (the heuristic estimates), in one write. */
    const estimates = async (values: Partial<Record<keyof Ids, Record<string, unknown>>>): Promise<void> => {
      await t.run(write(Object.entries(values).map(([name, properties]) => entry(undefined, update(from(name as keyof Ids), properties!))), []));
    };
    /** The true remaining distance to d: admissible and consistent. */
    const toD = { a: { togo: 3 }, b: { togo: 2 }, c: { togo: 1 }, d: { togo: 0 }, e: { togo: 2 }, y1: { togo: 0 }, y2: { togo: 0 }, z: { togo: 0 }, f: { togo: 0 } };

    it("with an admissible heuristic answers what Dijkstra answers", async () => {
      await estimates(toD);
      const [row] = await paths(shortestPath(from("a"), ref.ids(s.d), { label: "Road", ...astar("togo") }));
      expect(names(row)).toEqual(["a", "b", "c", "d"]);
      expect(row.weight).toBe(3);
      // A heuristic of 0 everywhere is A* as Dijkstra: the same rows for every source and several targets.
      await estimates(Object.fromEntries(NAMES.map((name) => [name, { togo: 0 }])));
      for (const source of NAMES) {
        const targets = ref.ids(s.d, s.z);
        const viaAStar = await paths(shortestPath(from(source), targets, { direction: "both", label: "Road", ...astar("togo") }));
        expect(viaAStar).toEqual(await paths(shortestPath(from(source), targets, { direction: "both", label: "Road", ...dijkstra() })));
      }
    });

    it("follows the heuristic: one that overestimates can answer a costlier path", async () => {
      await estimates({ ...toD, b: { togo: 50 } });
      const [row] = await paths(shortestPath(from("a"), ref.ids(s.d), { label: "Road", ...astar("togo") }));
      expect(names(row)).toEqual(["a", "e", "d"]);
      expect(row.weight).toBe(4.5);
    });

    it("reads a dotted heuristic path and integer estimates", async () => {
      await estimates(Object.fromEntries(Object.entries(toD).map(([name, { togo }]) => [name, { est: { togo: BigInt(togo) } }])));
      const [row] = await paths(shortestPath(from("a"), ref.ids(s.d), { label: "Road", ...astar("est.togo") }));
      expect(names(row)).toEqual(["a", "b", "c", "d"]);
    });

    it("a record reached without a finite numeric heuristic is invalid_value", async () => {
      await refused(readOne(shortestPath(from("a"), ref.ids(s.d), { label: "Road", ...astar("togo") })), "invalid_value");
      await estimates({ ...toD, e: { togo: "far" } });
      await refused(readOne(shortestPath(from("a"), ref.ids(s.d), { label: "Road", ...astar("togo") })), "invalid_value");
      await refused(readOne(shortestPath(from("a"), ref.ids(s.d), { label: "Road", ...astar("togo", { constant: { string: "far" } }) })), "invalid_value");
    });
  });

  it("a bad shape is malformed_tree", async () => {
    const bad = (options: Record<string, Json>): Request => readOne(shortestPath(from("a"), ref.ids(s.d), options));
    await refused(bad({ algorithm: "dijkstra" }), "malformed_tree");
    await refused(bad({ algorithm: "greedy" }), "malformed_tree");
    await refused(bad({ algorithm: "astar", weight: { property: "distance" } }), "malformed_tree");
    await refused(bad({ algorithm: "astar", heuristic: "togo" }), "malformed_tree");
    await refused(bad({ ...astar("togo"), heuristic: "" }), "malformed_tree");
    await refused(bad({ ...astar("togo"), heuristic: 3 }), "malformed_tree");
    await refused(bad({ ...dijkstra(), heuristic: "togo" }), "malformed_tree");
    await refused(bad({ direction: "up" }), "malformed_tree");
    await refused(bad({ label: "not a label" }), "malformed_tree");
    await refused(bad({ depth: 3 }), "malformed_tree");
    await refused(readOne({ shortest_path: { input: from("a") as Json } }), "malformed_tree");
    await refused(readOne(shortestPath(from("a"), { param: "nope" })), "missing_parameter");
    await refused(readOne(shortestPath(from("a"), { param: "target" }), { target: "x" }), "invalid_id");
    await refused(readOne(shortestPath(from("a"), ref.var("nope"))), "unknown_variable");
  });
});
