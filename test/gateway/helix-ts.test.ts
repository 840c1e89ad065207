/**
 * HelixDB's own TypeScript client, helix-ts, against a real `silk serve` process: `new HelixDB(url).query(name,
 * params)` posts to `/<name>`, so a HelixDB application's create, read and traverse calls work unchanged.
 */
import { join } from "node:path";
import { HelixDB } from "helix-ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";
import { startServer, type StartedServer } from "./serve-process.js";
import { writeSocialProject } from "./social-project.js";

let server: StartedServer;
let client: HelixDB;

beforeAll(async () => {
  const project = temporaryDirectory();
  writeSocialProject(project);
  server = await startServer(["serve", "--project", project, "--port", "0", "--data", join(project, "data")]);
  client = new HelixDB(server.url);
});

afterAll(async () => {
  server?.child.kill("SIGTERM");
  expect(await server?.exited).toBe(0);
  removeTemporaryDirectories();
});

interface UserRecord {
  id: string;
  label: string;
  name: string;
  age: number;
}

describe("helix-ts against silk serve", () => {
  it("creates, reads, links and traverses", async () => {
    const { user: ann } = (await client.query("CreateUser", { name: "Ann", age: 30 })) as { user: UserRecord };
    expect(ann).toEqual({ id: expect.stringMatching(/^[0-9]+$/), label: "User", name: "Ann", age: 30 });
    const { user: bob } = (await client.query("CreateUser", { name: "Bob", age: 41 })) as { user: UserRecord };
    const { user: cy } = (await client.query("CreateUser", { name: "Cy", age: 7 })) as { user: UserRecord };
    expect(await client.query("GetUser", { id: ann.id })).toEqual({ user: ann });
    expect(await client.query("Follow", { a: bob.id, b: ann.id })).toBe("ok");
    expect(await client.query("Follow", { a: cy.id, b: ann.id })).toBe("ok");
    const { users } = (await client.query("Followers", { id: ann.id })) as { users: UserRecord[] };
    expect(users.map((user) => user.name).sort()).toEqual(["Bob", "Cy"]);
    expect(await client.query("Followers", { id: bob.id })).toEqual({ users: [] });
    expect(await client.query("AllUsers", {})).toEqual({ users: expect.arrayContaining([ann, bob, cy]) });
  });

  it("hands back the error body of a refused call", async () => {
    expect(await client.query("GetUser", {})).toEqual({ error: "missing_parameter", msg: expect.stringContaining("id") });
    expect(await client.query("Nope", {})).toEqual({ error: "query_not_found", msg: expect.any(String) });
  });
});
