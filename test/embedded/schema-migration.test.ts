/**
 * MIGRATIONs applied by a writer's open, on disk (node/store/schema-migration.ts): records of the older version are
 * rewritten under the newer types, indexes follow, the version is recorded so the next open does nothing; a
 * migration that fails on a value, or a writer killed in the middle, leaves every partition at its old version with
 * its records untouched.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const CHILD = fileURLToPath(new URL("./fixtures/migrating-child.ts", import.meta.url));

const V1_TYPES = `
  N::User { name: String, age: U8, code: String, note: String }
  E::Knows { From: User, To: User, Properties: { since: Date, weight: I32 } }
  V::Doc { title: String }
`;
const V1 = `schema::1 {${V1_TYPES}}
QUERY AddUser(name: String, age: U8, code: String) => u <- AddN<User>({name: name, age: age, code: code, note: "n"}) RETURN u
QUERY Know(a: ID, b: ID, w: I32) => AddE<Knows>({since: "2020-01-02", weight: w})::From(a)::To(b) RETURN "ok"
QUERY AddDoc(v: [F64], t: String) => d <- AddV<Doc>(v, {title: t}) RETURN d
QUERY Everything() => u <- N<User> e <- E<Knows> d <- V<Doc> RETURN u, e, d
`;
const V2 = `schema::1 {${V1_TYPES}}
schema::2 {
  N::Person { UNIQUE INDEX username: String, age: U32, code: I32, kind: String, joined: Date DEFAULT NOW }
  E::Knows { From: Person, To: Person, Properties: { since: Date, weight: I32, strong: Boolean DEFAULT false } }
  V::Doc { heading: String }
}
MIGRATION schema::1 => schema::2 {
  N::User => N::Person { username: name, age: age AS U32, code: code AS I32, kind: "user" }
  E::Knows => _::{ Properties: { .. } }
  V::Doc => _::{ heading: title }
}
QUERY Everything() => u <- N<Person> e <- E<Knows> d <- V<Doc> RETURN u, e, d
QUERY ByName(n: String) => p <- N<Person>({username: n}) RETURN p
QUERY Near(v: [F64]) => d <- SearchV<Doc>(v, 1) RETURN d
`;

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporary(): string {
  const directory = mkdtempSync(join(tmpdir(), "silk-migration-"));
  directories.push(directory);
  return directory;
}

type Rows = { u: Record<string, unknown>[]; e: Record<string, unknown>[]; d: Record<string, unknown>[] };

/** A version-1 database: `users` users (one with an unconvertible code when `badAt` is given), a chain of Knows, docs. */
async function seed(directory: string, users: number, partitions: number, badAt?: number): Promise<Rows> {
  const db = await Database.open({ storage: { disk: directory }, schema: V1, partitions });
  try {
    const ids: string[] = [];
    for (let i = 0; i < users; i++) {
      const user = (await db.query("AddUser", { name: `user${i}`, age: 20 + i, code: i === badAt ? "x12" : String(100 + i) })) as { u: { id: string } };
      ids.push(user.u.id);
    }
    for (let i = 1; i < users; i++) await db.query("Know", { a: ids[i - 1], b: ids[i], w: i });
    for (let i = 0; i < 3; i++) await db.query("AddDoc", { v: [i, 1, 0], t: `doc${i}` });
    return (await db.query("Everything")) as Rows;
  } finally {
    await db.close();
  }
}

async function everything(directory: string, schema: string, mode: "writer" | "readonly" = "writer"): Promise<Rows> {
  const db = await Database.open({ storage: { disk: directory }, schema, mode });
  try {
    return (await db.query("Everything")) as Rows;
  } finally {
    await db.close();
  }
}

describe("schema migrations at open", () => {
  for (const partitions of [1, 2]) {
    it(`rewrites every record of an older version once, on ${partitions} partition(s)`, async () => {
      const directory = temporary();
      const before = await seed(directory, 9, partitions);
      await expect(Database.open({ storage: { disk: directory }, schema: V2, mode: "readonly", partitions })).rejects.toMatchObject({
        code: "invalid_option",
        message: expect.stringContaining("open it once as a writer"),
      });
      const db = await Database.open({ storage: { disk: directory }, schema: V2, partitions }, { migration: { chunkRecords: 2 } });
      let after: Rows;
      try {
        after = (await db.query("Everything")) as Rows;
        expect(after.u).toHaveLength(9);
        const ann = after.u.find((user) => user.username === "user3")!;
        expect(ann).toEqual({ id: before.u.find((user) => user.name === "user3")!.id, label: "Person", username: "user3", age: 23, code: 103, kind: "user", joined: expect.any(String) });
        expect(after.e.map((edge) => [edge.from_node, edge.to_node, edge.weight, edge.strong])).toEqual(before.e.map((edge) => [edge.from_node, edge.to_node, edge.weight, false]));
        expect(after.d.map((doc) => [doc.id, doc.heading])).toEqual(before.d.map((doc) => [doc.id, doc.title]));
        expect(after.d.every((doc) => !("title" in doc))).toBe(true);
        // The new UNIQUE INDEX is built over the migrated records, and the vector index still finds the docs.
        await waitFor(async () => ((await db.query("ByName", { n: "user5" })) as { p: { age: number } | null }).p?.age === 25);
        expect(((await db.query("Near", { v: [2, 1, 0] })) as { d: { heading: string }[] }).d.map((doc) => doc.heading)).toEqual(["doc2"]);
      } finally {
        await db.close();
      }
      // The version is recorded: the next open migrates nothing (joined keeps the first open's NOW).
      expect(await everything(directory, V2)).toEqual(after);
      expect(await everything(directory, V2, "readonly")).toEqual(after);
      await expect(Database.open({ storage: { disk: directory }, schema: V1 })).rejects.toMatchObject({
        code: "schema_invalid",
        message: expect.stringContaining("records are at schema version 2"),
      });
    });
  }

  it("leaves every record as it was when a value does not convert, and says which", async () => {
    const directory = temporary();
    const before = await seed(directory, 9, 1, 6);
    await expect(Database.open({ storage: { disk: directory }, schema: V2 }, { migration: { chunkRecords: 2 } })).rejects.toMatchObject({
      code: "invalid_value",
      message: expect.stringMatching(/N::User \d+ \(MIGRATION schema::1 => schema::2\), field code: "x12" is not a I32/),
    });
    expect(await everything(directory, V1)).toEqual(before);
  });

  it("a fresh database takes the project's version at once", async () => {
    const directory = temporary();
    const db = await Database.open({ storage: { disk: directory }, schema: V2 });
    await db.close();
    await expect(Database.open({ storage: { disk: directory }, schema: V1 })).rejects.toMatchObject({ code: "schema_invalid" });
    expect(await everything(directory, V2, "readonly")).toEqual({ u: [], e: [], d: [] });
  });

  it("a writer killed in the middle of a migration leaves the old version; the next writer migrates it all", async () => {
    const directory = temporary();
    const before = await seed(directory, 9, 1);
    const projectFile = join(directory, "..", `${directory.split("/").pop()}-v2.hx`);
    writeFileSync(projectFile, V2);
    directories.push(projectFile);
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, directory, projectFile, "3"], { cwd: REPO, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const signal = await new Promise<NodeJS.Signals | null>((done) => child.once("exit", (_code, signal) => done(signal)));
    expect(signal, stderr).toBe("SIGKILL");
    expect(await everything(directory, V1)).toEqual(before);
    const after = await everything(directory, V2);
    expect(after.u.map((user) => user.username)).toEqual(before.u.map((user) => user.name));
    expect(after.e).toHaveLength(8);
  });
});

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the index build");
    await new Promise((done) => setTimeout(done, 50));
  }
}
