/**
 * `silk serve` as a real process: it prints where it listens, answers over HTTP, closes the server and the
 * database on SIGTERM and SIGINT (exit code 0, writer lock released, data kept for the next start), and refuses
 * a bad project or a taken port with exit code 1.
 */
import { existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { countRequest, nodesLabeled, REPO, removeTemporaryDirectories, runSilk, temporaryDirectory } from "../cli/helpers.js";
import { startServer, type StartedServer } from "./serve-process.js";

afterAll(removeTemporaryDirectories);

/** Starts `silk serve` and waits for the line that says where it listens. */
function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<StartedServer> {
  return startServer(["serve", ...args], env);
}

async function query(url: string, body: unknown): Promise<Response> {
  return fetch(`${url}/v2/query`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
}

const addUser = (handle: string): unknown => ({
  request_type: "write",
  query: { write: { entries: [{ query: { name: "u", root: { add_n: { label: "User", properties: [["handle", { value: { string: handle } }], ["name", { value: { string: handle } }]] } } } }], returns: ["u"] } },
});

describe("silk serve", () => {
  it("serves the example project, closes cleanly on SIGTERM, and keeps the data for the next start", async () => {
    const data = join(temporaryDirectory(), "data");
    const first = await serve(["--project", join(REPO, "examples"), "--port", "0", "--data", data]);
    expect((await (await fetch(`${first.url}/health`)).json())).toEqual({ status: "ok" });
    expect((await query(first.url, addUser("ann"))).status).toBe(200);
    // The example project's queries are served as routes.
    const created = await fetch(`${first.url}/CreateUser`, { method: "POST", body: JSON.stringify({ handle: "bob", name: "Bob", age: 40 }), headers: { "content-type": "application/json" } });
    const bob = ((await created.json()) as { user: { id: string; handle: string } }).user;
    expect(bob.handle).toBe("bob");
    const followers = await fetch(`${first.url}/FollowersOf`, { method: "POST", body: JSON.stringify({ id: bob.id }), headers: { "content-type": "application/json" } });
    expect(await followers.json()).toEqual({ followers: [] });
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(existsSync(join(data, "writer.lock"))).toBe(false);
    // $SILK_PORT is used when --port is not given.
    const second = await serve(["--project", join(REPO, "examples"), "--data", data], { SILK_PORT: "0" });
    const counted = await query(second.url, countRequest({ users: nodesLabeled("User") }));
    expect(await counted.json()).toEqual({ users: 2 });
    second.child.kill("SIGINT");
    expect(await second.exited).toBe(0);
    expect(second.stderr()).not.toMatch(/"level":50/);
  });

  it("refuses a project whose schema does not check, printing the diagnostics", async () => {
    const project = temporaryDirectory();
    writeFileSync(join(project, "schema.hx"), "N::User { name: Strin }\n");
    const run = await runSilk(["serve", "--project", project, "--port", "0", "--data", join(project, "data")]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/silk serve: schema_invalid: .*schema\.hx:1:17: unknown field type Strin/);
  });

  it("refuses a port that is taken, and a port that is not a number", async () => {
    const blocker = createServer();
    await new Promise<void>((done) => blocker.listen(0, "127.0.0.1", done));
    const address = blocker.address();
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    try {
      const data = join(temporaryDirectory(), "data");
      const run = await runSilk(["serve", "--project", join(REPO, "examples"), "--port", String(address.port), "--data", data]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(new RegExp(`silk serve: invalid_option: cannot listen on 127\\.0\\.0\\.1:${address.port}: .*EADDRINUSE`));
      expect(existsSync(join(data, "writer.lock"))).toBe(false);
    } finally {
      blocker.close();
    }
    const bad = await runSilk(["serve", "--project", join(REPO, "examples"), "--port", "http"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid_option: the port must be an integer/);
  });
});
