/**
 * Helpers for the CLI and gateway suites: running the `silk` CLI as a real child process, temporary directories, and
 * counting what a database directory holds by opening it read-only in the test's own process, the way a second
 * reader would.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Database } from "../../runtime/embedded.js";

export const REPO = resolve(import.meta.dirname, "../..");
export const SILK = join(REPO, "bin", "silk.ts");
const TSX_LOADER = pathToFileURL(join(REPO, "node_modules", "tsx", "dist", "loader.mjs")).href;
const BUILT_SILK = join(REPO, "dist", "bin", "silk.js");

/**
 * The node arguments that start `silk`. A single `npx vitest run` runs bin/silk.ts through tsx's loader, so no build is
 * needed. `make test` builds dist/ before the suites and scripts/run-tests.mjs sets SILK_TEST_CLI=dist: every child
 * then runs the compiled dist/bin/silk.js, which starts on about half the CPU (tsx resolves and loads each of the
 * CLI's modules through its hooks at every start), and `silk cluster up`'s replica and server processes inherit it.
 * On CI's two cores the suites start a few hundred such processes.
 */
export function silkNodeArguments(): string[] {
  if (process.env.SILK_TEST_CLI !== "dist") return ["--import", TSX_LOADER, SILK];
  if (!existsSync(BUILT_SILK)) throw new Error(`SILK_TEST_CLI=dist but ${BUILT_SILK} is missing: run make build`);
  return [BUILT_SILK];
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface SilkRunOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** More node arguments, placed after the loader's (an `--import` there sees silk's imports, not tsx's). */
  readonly node?: readonly string[];
}

/** Starts `silk <args>` as a child process. */
export function spawnSilk(args: readonly string[], options: SilkRunOptions = {}): ChildProcessWithoutNullStreams {
  const node = silkNodeArguments();
  return spawn(process.execPath, [...node.slice(0, -1), ...(options.node ?? []), ...node.slice(-1), ...args], {
    cwd: options.cwd ?? REPO,
    env: { ...process.env, ...options.env },
  });
}

/** Runs `silk <args>` to completion. */
export function runSilk(args: readonly string[], options: SilkRunOptions = {}): Promise<RunResult> {
  const child = spawnSilk(args, options);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((done, fail) => {
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

const temporaryDirectories: string[] = [];

export function temporaryDirectory(): string {
  const path = mkdtempSync(join(tmpdir(), "silk-cli-test-"));
  temporaryDirectories.push(path);
  return path;
}

export function removeTemporaryDirectories(): void {
  for (const path of temporaryDirectories.splice(0)) rmSync(path, { recursive: true, force: true });
}

/** A read request of named counts: `{ users: countStep, ... }` returns `{ users: n, ... }`. */
export function countRequest(counts: Record<string, unknown>): unknown {
  return {
    request_type: "read",
    query: {
      read: {
        entries: Object.entries(counts).map(([name, root]) => ({ query: { name, root: { count: { input: root } } } })),
        returns: Object.keys(counts),
      },
    },
  };
}

export const allNodes = { nodes: { reference: "all" } };
export const allEdges = { edges: { reference: "all" } };
export const nodesLabeled = (label: string): unknown => ({ has_label: { input: allNodes, label } });
export const edgesLabeled = (label: string): unknown => ({ has_label: { input: allEdges, label } });

/** Opens a database directory read-only, runs one request, and closes it. */
export async function queryDirectory(directory: string, request: unknown): Promise<Record<string, unknown>> {
  const database = await Database.open({ storage: { disk: directory }, mode: "readonly" });
  try {
    return await database.run(request);
  } finally {
    await database.close();
  }
}

/** /v2/query builders shared by the gateway suites: a string value, an add_n of a User, a write batch of named roots. */
export const str = (value: string): unknown => ({ value: { string: value } });
export const addUser = (name: string, handle: string, extra: [string, unknown][] = []): unknown => ({
  add_n: { label: "User", properties: [["name", str(name)], ["handle", str(handle)], ...extra] },
});
export const write = (roots: Record<string, unknown>, returns: string[] = Object.keys(roots)): unknown => ({
  request_type: "write",
  query: { write: { entries: Object.entries(roots).map(([name, root]) => ({ query: { name, root } })), returns } },
});
