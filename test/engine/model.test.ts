/**
 * Model-based test (STYLE.md, "Against a simple model"): random sequences of writes, traversals and reopens run
 * against the engine on disk and against a plain in-memory model (a Map of nodes and a Map of edges); every
 * answer must match, and after a reopen the whole database must equal the model, adjacency on both sides included.
 *
 * Reproducing a failure: fast-check prints the seed and the counterexample path. Re-run with
 * `SILK_MODEL_SEED=<seed> SILK_MODEL_PATH=<path> npx vitest run test/engine/model.test.ts`; `SILK_MODEL_RUNS`
 * raises the number of runs for a longer soak.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { DISK_BACKENDS, TestDatabase, removeTempDirs, snapshot, sorted } from "../helpers/engine.js";
import {
  addE,
  addN,
  allNodes,
  count,
  drop,
  edgesById,
  edgesOf,
  entry,
  in_,
  nodesById,
  nodesOf,
  nodesVar,
  out,
  outE,
  readOne,
  ref,
  setProperty,
  update,
  values,
  write,
  writeOne,
  type TreeNode,
} from "../helpers/tree.js";

afterAll(removeTempDirs);

const NODE_LABELS = ["A", "B"] as const;
const EDGE_LABELS = ["L", "M"] as const;
type NodeLabel = (typeof NODE_LABELS)[number];
type EdgeLabel = (typeof EDGE_LABELS)[number];

interface ModelNode {
  label: NodeLabel;
  x: number;
}
interface ModelEdge {
  label: EdgeLabel;
  from: string;
  to: string;
  w: number;
}
interface Model {
  nodes: Map<string, ModelNode>;
  edges: Map<string, ModelEdge>;
}
interface Real {
  t: TestDatabase;
}

type Command = fc.AsyncCommand<Model, Real>;

const RUNS = Number(process.env.SILK_MODEL_RUNS ?? 100);
const SEED = process.env.SILK_MODEL_SEED === undefined ? undefined : Number(process.env.SILK_MODEL_SEED);
const PATH = process.env.SILK_MODEL_PATH;

async function get(real: Real, root: TreeNode): Promise<unknown> {
  return (await real.t.run(readOne(root))).r;
}

async function put(real: Real, root: TreeNode): Promise<Record<string, unknown>[]> {
  return (await real.t.run(writeOne(root))).r as Record<string, unknown>[];
}

/** The i-th live node (or edge) of the model, in creation order; commands carry indexes, not IDs, so they shrink. */
function pick<T>(map: Map<string, T>, index: number): string {
  const keys = [...map.keys()];
  return keys[index % keys.length];
}

function rowIds(rows: unknown): string[] {
  return sorted((rows as { $id: string }[]).map((row) => row.$id));
}

/** Compares everything the database holds with the model: records, properties, and both adjacency sides. */
async function expectEqualToModel(model: Model, real: Real): Promise<void> {
  const contents = await snapshot(real.t.db);
  const nodes = new Map((contents.nodes as { $id: string; $label: string; x: number }[]).map((row) => [row.$id, { label: row.$label, x: row.x }]));
  const edges = new Map(
    (contents.edges as { $id: string; $label: string; $from: string; $to: string; w: number }[]).map((row) => [
      row.$id,
      { label: row.$label, from: row.$from, to: row.$to, w: row.w },
    ]),
  );
  expect(nodes).toEqual(model.nodes);
  expect(edges).toEqual(model.edges);
  const edgeIds = sorted([...model.edges.keys()]);
  expect(rowIds(contents.outEdges)).toEqual(edgeIds);
  expect(rowIds(contents.inEdges)).toEqual(edgeIds);
}

class AddNodes implements Command {
  constructor(readonly specs: readonly ModelNode[]) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    const result = await real.t.run(write(this.specs.map((spec, i) => entry(`n${i}`, addN(spec.label, { x: spec.x }))), this.specs.map((_, i) => `n${i}`)));
    this.specs.forEach((spec, i) => {
      const rows = result[`n${i}`] as { $id: string; $label: string; x: number }[];
      expect(rows).toEqual([{ $id: expect.any(String), $label: spec.label, x: spec.x }]);
      expect(model.nodes.has(rows[0].$id) || model.edges.has(rows[0].$id)).toBe(false);
      model.nodes.set(rows[0].$id, { ...spec });
    });
  }
  toString = (): string => `AddNodes(${JSON.stringify(this.specs)})`;
}

/** Two new nodes and an edge between them in one batch (on three partitions, a two-partition commit). */
class AddLinked implements Command {
  constructor(
    readonly from: ModelNode,
    readonly to: ModelNode,
    readonly label: EdgeLabel,
    readonly w: number,
  ) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    const result = await real.t.run(
      write(
        [
          entry("a", addN(this.from.label, { x: this.from.x })),
          entry("b", addN(this.to.label, { x: this.to.x })),
          entry("e", addE(nodesVar("a"), this.label, ref.var("b"), { w: this.w })),
        ],
        ["a", "b", "e"],
      ),
    );
    const [a] = rowIds(result.a);
    const [b] = rowIds(result.b);
    const [edge] = result.e as { $id: string; $from: string; $to: string }[];
    expect([edge.$from, edge.$to]).toEqual([a, b]);
    model.nodes.set(a, { ...this.from });
    model.nodes.set(b, { ...this.to });
    model.edges.set(edge.$id, { label: this.label, from: a, to: b, w: this.w });
  }
  toString = (): string => `AddLinked(${JSON.stringify([this.from, this.to, this.label, this.w])})`;
}

class AddEdge implements Command {
  constructor(
    readonly from: number,
    readonly to: number,
    readonly label: EdgeLabel,
    readonly w: number,
  ) {}
  check = (model: Readonly<Model>): boolean => model.nodes.size > 0;
  async run(model: Model, real: Real): Promise<void> {
    const from = pick(model.nodes, this.from);
    const to = pick(model.nodes, this.to);
    const [edge] = await put(real, addE(nodesById(from), this.label, ref.ids(to), { w: this.w }));
    expect(edge).toEqual({ $id: expect.any(String), $label: this.label, $from: from, $to: to, w: this.w });
    model.edges.set(edge.$id as string, { label: this.label, from, to, w: this.w });
  }
  toString = (): string => `AddEdge(${this.from}, ${this.to}, ${this.label}, ${this.w})`;
}

class SetNodeX implements Command {
  constructor(
    readonly node: number,
    readonly x: number,
  ) {}
  check = (model: Readonly<Model>): boolean => model.nodes.size > 0;
  async run(model: Model, real: Real): Promise<void> {
    const id = pick(model.nodes, this.node);
    await put(real, setProperty(nodesById(id), "x", this.x));
    model.nodes.get(id)!.x = this.x;
  }
  toString = (): string => `SetNodeX(${this.node}, ${this.x})`;
}

class SetEdgeW implements Command {
  constructor(
    readonly edge: number,
    readonly w: number,
  ) {}
  check = (model: Readonly<Model>): boolean => model.edges.size > 0;
  async run(model: Model, real: Real): Promise<void> {
    const id = pick(model.edges, this.edge);
    await put(real, update(edgesById(id), { w: this.w }));
    model.edges.get(id)!.w = this.w;
  }
  toString = (): string => `SetEdgeW(${this.edge}, ${this.w})`;
}

class DropNode implements Command {
  constructor(readonly node: number) {}
  check = (model: Readonly<Model>): boolean => model.nodes.size > 0;
  async run(model: Model, real: Real): Promise<void> {
    const id = pick(model.nodes, this.node);
    await put(real, drop(nodesById(id)));
    model.nodes.delete(id);
    for (const [edgeId, edge] of model.edges) if (edge.from === id || edge.to === id) model.edges.delete(edgeId);
  }
  toString = (): string => `DropNode(${this.node})`;
}

class DropEdge implements Command {
  constructor(readonly edge: number) {}
  check = (model: Readonly<Model>): boolean => model.edges.size > 0;
  async run(model: Model, real: Real): Promise<void> {
    const id = pick(model.edges, this.edge);
    await put(real, drop(edgesById(id)));
    model.edges.delete(id);
  }
  toString = (): string => `DropEdge(${this.edge})`;
}

/** Drops a node's outgoing edges of one label (the edges only, never the neighbours). */
class DropOutEdges implements Command {
  constructor(
    readonly node: number,
    readonly label: EdgeLabel,
  ) {}
  check = (model: Readonly<Model>): boolean => model.nodes.size > 0;
  async run(model: Model, real: Real): Promise<void> {
    const id = pick(model.nodes, this.node);
    await put(real, drop(outE(nodesById(id), this.label)));
    for (const [edgeId, edge] of model.edges) if (edge.from === id && edge.label === this.label) model.edges.delete(edgeId);
  }
  toString = (): string => `DropOutEdges(${this.node}, ${this.label})`;
}

class CheckTraversal implements Command {
  constructor(
    readonly node: number,
    readonly direction: "out" | "in",
    readonly label: EdgeLabel | undefined,
  ) {}
  check = (model: Readonly<Model>): boolean => model.nodes.size > 0;
  async run(model: Model, real: Real): Promise<void> {
    const id = pick(model.nodes, this.node);
    const step = this.direction === "out" ? out : in_;
    const expected: string[] = [];
    for (const edge of model.edges.values()) {
      if (this.label !== undefined && edge.label !== this.label) continue;
      if (this.direction === "out" && edge.from === id) expected.push(edge.to);
      if (this.direction === "in" && edge.to === id) expected.push(edge.from);
    }
    expect(rowIds(await get(real, step(nodesById(id), this.label)))).toEqual(sorted(expected));
  }
  toString = (): string => `CheckTraversal(${this.node}, ${this.direction}, ${this.label ?? "any"})`;
}

class CheckCounts implements Command {
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    const nodes = [...model.nodes.values()];
    const edges = [...model.edges.values()];
    for (const label of NODE_LABELS) {
      const ofLabel = nodes.filter((node) => node.label === label);
      expect(await get(real, count(nodesOf(label)))).toBe(ofLabel.length);
      // values answers one object per element (HelixDB v3's serialisation).
      const rows = (await get(real, values(nodesOf(label), "x"))) as { x: number }[];
      expect(sorted(rows.map((row) => row.x))).toEqual(sorted(ofLabel.map((node) => node.x)));
    }
    for (const label of EDGE_LABELS) expect(await get(real, count(edgesOf(label)))).toBe(edges.filter((edge) => edge.label === label).length);
    expect(await get(real, count(allNodes()))).toBe(nodes.length);
  }
  toString = (): string => "CheckCounts";
}

class Reopen implements Command {
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    await real.t.reopen();
    await expectEqualToModel(model, real);
  }
  toString = (): string => "Reopen";
}

const nodeSpec = fc.record({ label: fc.constantFrom(...NODE_LABELS), x: fc.integer({ min: -1000, max: 1000 }) });
const edgeLabel = fc.constantFrom(...EDGE_LABELS);
const index = fc.nat({ max: 1000 });
const weight = fc.integer({ min: 0, max: 100 });

const COMMANDS: fc.Arbitrary<Command>[] = [
  fc.array(nodeSpec, { minLength: 1, maxLength: 4 }).map((specs) => new AddNodes(specs)),
  fc.tuple(nodeSpec, nodeSpec, edgeLabel, weight).map(([from, to, label, w]) => new AddLinked(from, to, label, w)),
  fc.tuple(index, index, edgeLabel, weight).map(([from, to, label, w]) => new AddEdge(from, to, label, w)),
  fc.tuple(index, index, edgeLabel, weight).map(([from, to, label, w]) => new AddEdge(from, to, label, w)),
  fc.tuple(index, fc.integer({ min: -1000, max: 1000 })).map(([node, x]) => new SetNodeX(node, x)),
  fc.tuple(index, weight).map(([edge, w]) => new SetEdgeW(edge, w)),
  index.map((node) => new DropNode(node)),
  index.map((edge) => new DropEdge(edge)),
  fc.tuple(index, edgeLabel).map(([node, label]) => new DropOutEdges(node, label)),
  fc.tuple(index, fc.constantFrom<"out" | "in">("out", "in"), fc.option(edgeLabel, { nil: undefined })).map(
    ([node, direction, label]) => new CheckTraversal(node, direction, label),
  ),
  fc.constant(new CheckCounts()),
  fc.constant(new Reopen()),
];

describe.each(DISK_BACKENDS)("engine against a model on $name", (backend) => {
  it("matches the model over random writes, traversals and reopens", async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(COMMANDS, { maxCommands: 50, size: "max" }), async (commands) => {
        const real: Real = { t: await TestDatabase.open(backend) };
        try {
          const model: Model = { nodes: new Map(), edges: new Map() };
          await fc.asyncModelRun(() => ({ model, real }), commands);
          await expectEqualToModel(model, real);
          await real.t.reopen();
          await expectEqualToModel(model, real);
        } finally {
          await real.t.destroy();
        }
      }),
      { numRuns: RUNS, seed: SEED, path: PATH },
    );
  }, Math.max(60_000, RUNS * 300));
});
