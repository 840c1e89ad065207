/** `other_n`: from a node's edges in both directions, the far end of each edge, whichever way the edge points. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../runtime/embedded.js";

let db: Database;

function write(entries: unknown[], returns: string[]): Promise<Record<string, unknown>> {
  return db.run({ request_type: "write", query: { write: { entries, returns } } });
}

const addUser = (name: string): unknown => ({ add_n: { label: "User", properties: [["name", { value: { string: name } }]] } });
const follows = (from: string, to: string): unknown => ({ add_e: { input: { nodes: { reference: { var: from } } }, label: "Follows", to: { var: to } } });
const names = (input: unknown): unknown => ({ values: { input, properties: ["name"] } });
/** The names of what `names` answers, sorted: it answers one object per element, as HelixDB v3 answers values. */
const sortedNames = (rows: unknown): string[] => (rows as { name: string }[]).map((row) => row.name).sort();

beforeAll(async () => {
  db = await open({ storage: "memory", schema: "N::User { name: String }\nE::Follows { From: User, To: User }" });
  // ann -> bob, cy -> ann, ann -> ann (a loop).
  await write(
    [
      { query: { name: "ann", root: addUser("ann") } },
      { query: { name: "bob", root: addUser("bob") } },
      { query: { name: "cy", root: addUser("cy") } },
      { query: { root: follows("ann", "bob") } },
      { query: { root: follows("cy", "ann") } },
      { query: { root: follows("ann", "ann") } },
    ],
    [],
  );
});

afterAll(() => db.close());

describe("other_n", () => {
  const ann = { where: { input: { nodes: { reference: "all" } }, predicate: { eq: { left: { property: "name" }, right: { constant: { string: "ann" } } } } } };

  it("after both_e gives each edge's far end, out-edges and in-edges alike; a loop gives the node itself", async () => {
    const result = await write([{ query: { name: "n", root: names({ other_n: { input: { both_e: { input: ann, label: "Follows" } } } }) } }], ["n"]);
    expect(sortedNames(result.n)).toEqual(["ann", "ann", "bob", "cy"]);
  });

  it("after in_e gives the sources, after out_e the targets", async () => {
    const result = await write(
      [
        { query: { name: "from_in", root: names({ other_n: { input: { in_e: { input: ann, label: "Follows" } } } }) } },
        { query: { name: "from_out", root: names({ other_n: { input: { out_e: { input: ann, label: "Follows" } } } }) } },
      ],
      ["from_in", "from_out"],
    );
    expect(sortedNames(result.from_in)).toEqual(["ann", "cy"]);
    expect(sortedNames(result.from_out)).toEqual(["ann", "bob"]);
  });

  it("of edges selected directly gives their targets", async () => {
    const result = await write([{ query: { name: "n", root: names({ other_n: { input: { edges_where: { predicate: { eq: { left: { property: "$label" }, right: { constant: { string: "Follows" } } } } } } } }) } }], ["n"]);
    expect(sortedNames(result.n)).toEqual(["ann", "ann", "bob"]);
  });
});
