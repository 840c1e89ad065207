/**
 * The embedded runtime's `query(name, params)`: a project's QUERY definitions checked at open, run by name as one
 * transaction each, with their parameters checked before anything runs (nothing is written by a refused call),
 * refused by name on a read-only handle when they write, and rendered as HelixQL responses; `queryJson` answers the
 * same as JSON text.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database, open } from "../../runtime/embedded.js";
import { SilkError } from "../../protocol/errors.js";
import { SOCIAL_QUERY_NAMES, SOCIAL_SCHEMA, SOCIAL_SOURCES } from "../gateway/social-project.js";

interface UserRecord {
  id: string;
  label: string;
  name: string;
  age: number;
}

let db: Database;

beforeAll(async () => {
  db = await open({ storage: "memory", schema: SOCIAL_SOURCES });
});

afterAll(async () => {
  await db?.close();
});

async function expectRefused(call: Promise<unknown>, code: string): Promise<string> {
  const error = await call.then(
    () => undefined,
    (cause: unknown) => cause,
  );
  expect(error).toBeInstanceOf(SilkError);
  expect((error as SilkError).code).toBe(code);
  return (error as SilkError).message;
}

async function userCount(): Promise<number> {
  return ((await db.query("AllUsers")) as { users: unknown[] }).users.length;
}

describe("open() with QUERY definitions", () => {
  it("lists the project's queries", () => {
    expect(db.queries.map((query) => query.name)).toEqual(SOCIAL_QUERY_NAMES);
    expect(db.queries.find((query) => query.name === "CreateUser")?.requestType).toBe("write");
    expect(db.queries.find((query) => query.name === "GetUser")?.requestType).toBe("read");
  });

  it("a database without a schema has no queries", async () => {
    const schemaless = await open({ storage: "memory" });
    try {
      expect(schemaless.queries).toEqual([]);
      await expectRefused(schemaless.query("GetUser", { id: "1" }), "query_not_found");
    } finally {
      await schemaless.close();
    }
  });

  it("refuses a query that does not check, with every diagnostic and its caret, coded as the first one", async () => {
    const text = `${SOCIAL_SCHEMA}QUERY A() =>\n    x <- N<Ghost>\n    RETURN x\nQUERY B(id: ID) =>\n    y <- N<User>(id)::Out<Nope>\n    RETURN y\n`;
    const message = await expectRefused(open({ storage: "memory", schema: { file: "bad.hx", text } }), "unknown_label");
    expect(message).toContain("bad.hx:4:12: Ghost is not a declared N:: type [unknown_label]\n    x <- N<Ghost>\n           ^");
    expect(message).toContain("bad.hx:7:27: Nope is not a declared E:: type [unknown_label]\n    y <- N<User>(id)::Out<Nope>\n                          ^");
    const twice = `${SOCIAL_SCHEMA}QUERY A() =>\n    x <- N<User>\n    RETURN x\nQUERY A() =>\n    x <- N<User>\n    RETURN x\n`;
    expect(await expectRefused(open({ storage: "memory", schema: { file: "twice.hx", text: twice } }), "query_invalid")).toMatch(/^twice\.hx:6:7: duplicate QUERY A/);
  });

  it("a syntax error anywhere makes the code schema_syntax", async () => {
    const text = `${SOCIAL_SCHEMA}QUERY Broken(id: ID) =>\n    x <- N<User>(id\n    RETURN x\n`;
    const message = await expectRefused(open({ storage: "memory", schema: { file: "broken.hx", text } }), "schema_syntax");
    expect(message).toMatch(/^broken\.hx:\d+:\d+: /);
  });

  it("a schema error keeps its own code", async () => {
    await expectRefused(open({ storage: "memory", schema: "N::User { name: Strin }" }), "schema_invalid");
  });
});

describe("query()", () => {
  it("creates, reads, links and traverses, rendering records as HelixQL does", async () => {
    const ann = ((await db.query("CreateUser", { name: "Ann", age: 30 })) as { user: UserRecord }).user;
    expect(ann).toEqual({ id: expect.stringMatching(/^[0-9]+$/), label: "User", name: "Ann", age: 30 });
    const bob = ((await db.query("CreateUser", { name: "Bob", age: 41 })) as { user: UserRecord }).user;
    expect(await db.query("GetUser", { id: ann.id })).toEqual({ user: ann });
    expect(await db.query("Follow", { a: bob.id, b: ann.id })).toBe("ok");
    expect(await db.query("Followers", { id: ann.id })).toEqual({ users: [bob] });
    expect(await db.query("Followers", { id: bob.id })).toEqual({ users: [] });
  });

  it("a point read of an ID that names nothing is null", async () => {
    expect(await db.query("GetUser", { id: "987654321" })).toEqual({ user: null });
  });

  it("an unknown query is query_not_found", async () => {
    const message = await expectRefused(db.query("Nope", {}), "query_not_found");
    expect(message).toContain('"Nope"');
  });

  it("refuses missing, undeclared and mistyped parameters before anything is written", async () => {
    const before = await userCount();
    await expectRefused(db.query("CreateUser", { name: "Cy" }), "missing_parameter");
    await expectRefused(db.query("CreateUser", { name: "Cy", age: 3, email: "cy@example.com" }), "unknown_parameter");
    await expectRefused(db.query("CreateUser", { name: "Cy", age: true }), "invalid_type");
    await expectRefused(db.query("CreateUser", { name: 7, age: 3 }), "invalid_type");
    await expectRefused(db.query("CreateUser", { name: "Cy", age: "three" }), "invalid_type"); // a U32 takes JSON numbers only
    await expectRefused(db.query("CreateUser", { name: "Cy", age: 300 }), "invalid_value");
    await expectRefused(db.query("GetUser", { id: "not-an-id" }), "invalid_id");
    await expectRefused(db.query("CreateUser", [] as unknown as Record<string, unknown>), "invalid_type");
    expect(await userCount()).toBe(before);
  });

  it("a write that fails while running leaves the data as it was", async () => {
    const edgesBefore = await db.run({
      request_type: "read",
      query: { read: { entries: [{ query: { name: "n", root: { count: { input: { edges: { reference: "all" } } } } } }], returns: ["n"] } },
    });
    const ann = ((await db.query("CreateUser", { name: "Dee", age: 22 })) as { user: UserRecord }).user;
    await expectRefused(db.query("Follow", { a: ann.id, b: "987654321" }), "node_not_found");
    const edgesAfter = await db.run({
      request_type: "read",
      query: { read: { entries: [{ query: { name: "n", root: { count: { input: { edges: { reference: "all" } } } } } }], returns: ["n"] } },
    });
    expect(edgesAfter).toEqual(edgesBefore);
  });

  it("concurrent first calls of a query all answer (its tree is prepared once)", async () => {
    const fresh = await open({ storage: "memory", schema: SOCIAL_SOURCES });
    try {
      const created = await Promise.all(Array.from({ length: 20 }, (_, i) => fresh.query("CreateUser", { name: `u${i}`, age: i })));
      expect(new Set(created.map((body) => (body as { user: UserRecord }).user.id)).size).toBe(20);
      expect(((await fresh.query("AllUsers")) as { users: unknown[] }).users).toHaveLength(20);
    } finally {
      await fresh.close();
    }
    await expectRefused(fresh.query("AllUsers"), "closed");
  });
});

describe("queryJson()", () => {
  it("answers the JSON text of what query() answers, for reads, writes and a literal", async () => {
    const ann = JSON.parse(await db.queryJson("CreateUser", { name: "Eve", age: 52 })) as { user: UserRecord };
    expect(ann.user).toEqual({ id: expect.stringMatching(/^[0-9]+$/), label: "User", name: "Eve", age: 52 });
    const bob = ((await db.query("CreateUser", { name: "Fay", age: 19 })) as { user: UserRecord }).user;
    expect(await db.queryJson("Follow", { a: bob.id, b: ann.user.id })).toBe('"ok"');
    for (const [name, parameters] of [["GetUser", { id: ann.user.id }], ["Followers", { id: ann.user.id }], ["AllUsers", {}], ["GetUser", { id: "987654321" }]] as const) {
      expect(await db.queryJson(name, parameters)).toBe(JSON.stringify(await db.query(name, parameters)));
    }
  });

  it("refuses as query() does", async () => {
    await expectRefused(db.queryJson("Nope", {}), "query_not_found");
    await expectRefused(db.queryJson("GetUser", { id: "not-an-id" }), "invalid_id");
    await expectRefused(db.queryJson("GetUser", {}), "missing_parameter");
  });
});

describe("query() on a read-only handle", () => {
  let directory: string;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "silk-embedded-query-"));
    const writer = await open({ storage: { disk: directory }, schema: SOCIAL_SOURCES });
    await writer.query("CreateUser", { name: "Eve", age: 50 });
    await writer.close();
  });

  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it("runs reads and refuses writes with read_only, whatever the parameters", async () => {
    const reader = await open({ storage: { disk: directory }, mode: "readonly", schema: SOCIAL_SOURCES });
    try {
      const users = ((await reader.query("AllUsers")) as { users: UserRecord[] }).users;
      expect(users.map((user) => user.name)).toEqual(["Eve"]);
      await expectRefused(reader.query("CreateUser", { name: "Fay", age: 5 }), "read_only");
      await expectRefused(reader.query("CreateUser", {}), "read_only");
      expect(((await reader.query("AllUsers")) as { users: unknown[] }).users).toHaveLength(1);
    } finally {
      await reader.close();
    }
  });
});
