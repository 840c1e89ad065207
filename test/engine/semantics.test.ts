/**
 * Response semantics across a batch, edge sources named by ID, and prepared queries — on every backend.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { SilkError } from "../../protocol/errors.js";
import { BACKENDS, expectCode, ids, pluck, removeTempDirs, snapshot, TestDatabase } from "../helpers/engine.js";
import { addE, addN, drop, entry, eq, id, nodes, nodesById, nodesOf, nodesVar, out, param, prop, read, readOne, ref, setProperty, where, write } from "../helpers/tree.js";

afterAll(removeTempDirs);

describe.each(BACKENDS)("semantics on $name", (backend) => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await TestDatabase.open(backend);
  });
  afterEach(async () => {
    await t.destroy();
  });

  it("returns every record as it is at the end of the transaction", async () => {
    const result = await t.run(
      write(
        [
          entry("a", addN("User", { name: "A" })),
          entry("b", addN("User", { name: "B" })),
          entry("loaded", nodesOf("User")),
          entry("renamed", setProperty(nodesVar("b"), "name", "B2")),
          entry(undefined, drop(nodesVar("a"))),
        ],
        ["a", "loaded", "renamed"],
      ),
    );
    expect(result.a).toEqual([]);
    expect(pluck(result.loaded, "name")).toEqual(["B2"]);
    expect(pluck(result.renamed, "name")).toEqual(["B2"]);
  });

  it("refuses an edge whose source is named by a missing ID, as it refuses a missing target", async () => {
    const made = await t.run(write([entry("u", addN("User", { name: "U" }))], ["u"]));
    const [user] = ids(made.u);
    const before = await snapshot(t);
    await expectCode(t.run(write([entry("e", addE(nodesById("999"), "Follows", ref.ids(user)))], ["e"])), "node_not_found");
    await expectCode(t.run(write([entry("e", addE(nodesById(user), "Follows", ref.ids("999")))], ["e"])), "node_not_found");
    expect(await snapshot(t)).toEqual(before);
  });

  it("runs a prepared query many times with different parameters", async () => {
    const made = await t.run(
      write(
        [
          entry("a", addN("User", { name: "A" })),
          entry("b", addN("User", { name: "B" })),
          entry("c", addN("User", { name: "C" })),
          entry(undefined, addE(nodesVar("a"), "Follows", ref.var("b"))),
          entry(undefined, addE(nodesVar("a"), "Follows", ref.var("c"))),
          entry(undefined, addE(nodesVar("b"), "Follows", ref.var("c"))),
        ],
        ["a", "b", "c"],
      ),
    );
    const [a, b, c] = [ids(made.a)[0], ids(made.b)[0], ids(made.c)[0]];
    const prepared = await t.db.prepare(readOne(id(out(nodes(ref.param("start")), "Follows"))));
    expect([...((await prepared.run({ start: a })).r as string[])].sort()).toEqual([b, c].sort());
    expect((await prepared.run({ start: b })).r).toEqual([c]);
    expect((await prepared.run({ start: c })).r).toEqual([]);
    await expectCode(prepared.run({ start: "-1" }), "invalid_id");
    await prepared.release();
    await expect(prepared.run({ start: a })).rejects.toBeInstanceOf(SilkError);
  });

  it("runs a prepared write as one transaction per run", async () => {
    const prepared = await t.db.prepare(write([entry("n", addN("User", { name: param("name") }))], ["n"]));
    await prepared.run({ name: "X" });
    await prepared.run({ name: "Y" });
    const names = await t.run(read([entry("n", where(nodesOf("User"), eq(prop("name"), "Y")))], ["n"]));
    expect(pluck(names.n, "name")).toEqual(["Y"]);
    const all = await t.run(readOne(nodesOf("User")));
    expect(pluck(all.r, "name").sort()).toEqual(["X", "Y"]);
    await prepared.release();
  });
});
