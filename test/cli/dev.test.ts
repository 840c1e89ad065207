/**
 * `silk dev` as a real process: it serves a project like `silk serve`, and when the project's `.hx` files change
 * it swaps in the new queries and schema without restarting — a new query answers, a removed one is 404, a schema
 * change keeps the data — while a change that does not check is reported with its diagnostics and the last good
 * version keeps serving.
 */
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SOCIAL_QUERIES, SOCIAL_SCHEMA, writeSocialProject } from "../gateway/social-project.js";
import { startServer } from "../gateway/serve-process.js";
import { removeTemporaryDirectories, runSilk, temporaryDirectory } from "./helpers.js";

afterAll(removeTemporaryDirectories);

async function call(url: string, name: string, parameters: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${url}/${name}`, { method: "POST", body: JSON.stringify(parameters), headers: { "content-type": "application/json" } });
  return { status: response.status, body: await response.json() };
}

const FIND_USER = "\nQUERY FindUser(id: ID) =>\n    user <- N<User>(id)\n    RETURN user\n";
const BLOCKS_SCHEMA = `${SOCIAL_SCHEMA}E::Blocks { From: User, To: User }\n`;
const BLOCK = `
QUERY Block(a: ID, b: ID) =>
    AddE<Blocks>::From(a)::To(b)
    RETURN "ok"

QUERY Blocked(id: ID) =>
    users <- N<User>(id)::Out<Blocks>
    RETURN users
`;

describe("silk dev", () => {
  it("swaps in changed queries and schema, and keeps the last good version while the files do not check", async () => {
    const project = temporaryDirectory();
    writeSocialProject(project);
    const data = join(project, "data");
    const dev = await startServer(["dev", project, "--port", "0", "--data", data]);
    try {
      await dev.waitForStdout(/watching/, { fromStart: true });
      const ann = ((await call(dev.url, "CreateUser", { name: "Ann", age: 30 })).body as { user: { id: string } }).user;
      expect(await call(dev.url, "FindUser", { id: ann.id })).toMatchObject({ status: 404, body: { error: "query_not_found" } });

      let reloaded = dev.waitForStdout(/silk dev: reloaded .*: 6 queries/);
      appendFileSync(join(project, "queries.hx"), FIND_USER);
      await reloaded;
      expect(await call(dev.url, "FindUser", { id: ann.id })).toMatchObject({ status: 200, body: { user: { name: "Ann" } } });

      const reported = dev.waitForStdout(/broken\.hx:2:\d+: .*Ghost/);
      writeFileSync(join(project, "broken.hx"), "QUERY Broken() =>\n    x <- N<Ghost>\n    RETURN x\n");
      await reported;
      expect(await call(dev.url, "FindUser", { id: ann.id })).toMatchObject({ status: 200, body: { user: { name: "Ann" } } });
      expect(await call(dev.url, "Broken", {})).toMatchObject({ status: 404, body: { error: "query_not_found" } });

      // Emptying the broken file, removing FindUser and changing the schema in one go (7 queries: no state
      // in between has as many).
      reloaded = dev.waitForStdout(/silk dev: reloaded .*: 7 queries/);
      writeFileSync(join(project, "broken.hx"), "");
      writeFileSync(join(project, "schema.hx"), BLOCKS_SCHEMA);
      writeFileSync(join(project, "queries.hx"), SOCIAL_QUERIES + BLOCK);
      await reloaded;
      expect(await call(dev.url, "FindUser", { id: ann.id })).toMatchObject({ status: 404, body: { error: "query_not_found" } });
      const bob = ((await call(dev.url, "CreateUser", { name: "Bob", age: 41 })).body as { user: { id: string } }).user;
      expect(await call(dev.url, "Block", { a: ann.id, b: bob.id })).toEqual({ status: 200, body: "ok" });
      expect(await call(dev.url, "Blocked", { id: ann.id })).toMatchObject({ status: 200, body: { users: [{ name: "Bob" }] } });
      expect(await call(dev.url, "AllUsers", {})).toMatchObject({ status: 200, body: { users: [{ name: "Ann" }, { name: "Bob" }] } });
      const introspection = (await (await fetch(`${dev.url}/introspect`)).json()) as { schema: { edges: { name: string }[] }; queries: { name: string }[] };
      expect(introspection.schema.edges.map((edge) => edge.name)).toEqual(["Follows", "Blocks"]);
      expect(introspection.queries.map((query) => query.name)).toContain("Block");
    } finally {
      dev.child.kill("SIGTERM");
    }
    expect(await dev.exited).toBe(0);
    expect(existsSync(join(data, "writer.lock"))).toBe(false);
    expect(dev.stderr()).toMatch(/silk dev: 1 error; still serving the last version that checked/);
    expect(dev.stderr()).not.toMatch(/"level":50/);
  });

  it("requests sent while the project reloads are all answered", async () => {
    const project = temporaryDirectory();
    writeSocialProject(project);
    const dev = await startServer(["dev", project, "--port", "0", "--data", join(project, "data")]);
    try {
      await dev.waitForStdout(/watching/, { fromStart: true });
      const reloaded = dev.waitForStdout(/silk dev: reloaded/);
      appendFileSync(join(project, "queries.hx"), FIND_USER);
      const statuses: number[] = [];
      let done = false;
      void reloaded.then(() => (done = true));
      while (!done) statuses.push((await call(dev.url, "AllUsers", {})).status);
      expect(new Set(statuses)).toEqual(new Set([200]));
    } finally {
      dev.child.kill("SIGTERM");
    }
    expect(await dev.exited).toBe(0);
  });

  it("refuses to start on a project that does not check", async () => {
    const project = temporaryDirectory();
    writeFileSync(join(project, "schema.hx"), `${SOCIAL_SCHEMA}QUERY A() =>\n    x <- N<Ghost>\n    RETURN x\n`);
    const run = await runSilk(["dev", project, "--port", "0", "--data", join(project, "data")]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/silk dev: unknown_label: .*schema\.hx:4:12: Ghost is not a declared N:: type/);
  });
});
