/**
 * Helpers for the hosted-gateway suites: a database directory with the social project and a key, `silk gateway`
 * started as a real process, the operation trees the suites send, and counting users by opening the directory
 * read-only in the test's own process (so counting costs no token), and a redis-server of the suite's own.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { expect } from "vitest";
import { createKey } from "../../gateway/hosted/key-store.js";
import { freePort } from "../../cluster/nats/servers.js";
import { countRequest, nodesLabeled, queryDirectory, temporaryDirectory } from "../cli/helpers.js";
import { startServer, type StartedServer } from "./serve-process.js";
import { writeSocialProject } from "./social-project.js";

export interface HostedDatabase {
  readonly project: string;
  readonly data: string;
  readonly key: string;
}

/** A project directory with the social project, an empty data directory, and one live key. */
export function hostedDatabase(): HostedDatabase {
  const root = temporaryDirectory();
  const project = join(root, "project");
  mkdirSync(project);
  writeSocialProject(project);
  const data = join(root, "data");
  return { project, data, key: createKey(data, "test", Date.now()).key };
}

/** Starts `silk gateway` on a free port over the database, with `extra` options. */
export function startGateway(database: HostedDatabase, extra: readonly string[] = []): Promise<StartedServer> {
  return startServer(["gateway", "--project", database.project, "--data", database.data, "--port", "0", ...extra]);
}

const string = (value: string): unknown => ({ value: { string: value } });

/** A write that adds one user: if it ran, the user count says so. */
export function addUserTree(name: string): unknown {
  return {
    request_type: "write",
    query: { write: { entries: [{ query: { name: "u", root: { add_n: { label: "User", properties: [["name", string(name)]] } } } }], returns: ["u"] } },
  };
}

export const COUNT_USERS_TREE = countRequest({ users: nodesLabeled("User") });

export async function userCount(data: string): Promise<number> {
  return (await queryDirectory(data, COUNT_USERS_TREE)).users as number;
}

export function postJson(url: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(url, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json", ...headers } });
}

/** Asserts SPEC's error body and a JSON Content-Type; answers the body's `msg`. */
export async function expectErrorBody(response: Response, status: number, code: string): Promise<string> {
  const body = (await response.json()) as { error: string; msg: string };
  expect({ status: response.status, error: body.error }).toEqual({ status, error: code });
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  expect(Object.keys(body)).toEqual(["error", "msg"]);
  return body.msg;
}

/** No header a client could read a rate-limit state from (SPEC Errors rule 1). */
export function rateLimitHeaders(response: Response): string[] {
  return [...response.headers.keys()].filter((name) => /^(x-)?ratelimit/i.test(name));
}

/**
 * Declares a body of `bytes` in Content-Length, sends only its first byte, and answers the status and body the
 * server replies with. A server that refuses on the declared length answers at once and closes the connection;
 * sending the whole body with fetch would race that close (EPIPE) on a loopback socket.
 */
export function postDeclaringLength(url: string, bytes: number, headers: Record<string, string>): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((done, fail) => {
    const outgoing = request(url, { method: "POST", headers: { "content-type": "application/json", "content-length": String(bytes), ...headers } }, (response) => {
      let body = "";
      response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      response.on("end", () => {
        outgoing.destroy();
        done({ status: response.statusCode ?? 0, contentType: String(response.headers["content-type"]), body });
      });
    });
    outgoing.on("error", fail);
    outgoing.write(" ");
  });
}

const REDIS_SERVER = "/usr/bin/redis-server";


/** Starts redis-server without persistence on `port`; resolves once it accepts connections. */
export function startRedis(port: number): Promise<ChildProcessWithoutNullStreams> {
  if (!existsSync(REDIS_SERVER)) {
    throw new Error(`${REDIS_SERVER} is missing: install the redis-server package (apt-get install redis-server); the shared rate limit cannot be tested without it`);
  }
  const child = spawn(REDIS_SERVER, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
  let output = "";
  return new Promise((done, fail) => {
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      if (output.includes("Ready to accept connections")) done(child);
    });
    child.on("exit", (code) => fail(new Error(`redis-server exited with ${code}:\n${output}`)));
  });
}

export async function stopRedis(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGKILL");
  await exited;
}
