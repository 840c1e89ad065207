/**
 * What a `silk` start costs: bin/silk.ts declares every command but loads a command's module only when its action
 * runs, so `silk --help`, a command's --help and `silk check` load no package but commander (no engine, fastify,
 * NATS or S3 client). The packages a process loaded are read from module hooks (module-recorder.mjs) that log every
 * resolved URL, not from timings. And the AWS SDK's Node-version notice stays off stderr, for S3 commands too.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { REPO, runSilk, temporaryDirectory, type RunResult } from "./helpers.js";

/** Every command `silk --help` lists, in its order (commander adds `help`). */
const COMMANDS = ["import", "serve", "dev", "check", "codegen", "gateway", "keys", "admin", "index", "status", "backup", "restore", "partition", "cluster", "chaos", "help"];

/** Runs `silk <args>` with module-recorder.mjs registered; resolves to its result and the packages it resolved. */
async function runRecorded(args: readonly string[]): Promise<RunResult & { packages: string[] }> {
  const log = join(temporaryDirectory(), "resolved.txt");
  const hooks = pathToFileURL(join(REPO, "test", "cli", "module-recorder.mjs")).href;
  const register = `import { register } from "node:module"; register(${JSON.stringify(hooks)}, { data: { file: ${JSON.stringify(log)} } });`;
  const result = await runSilk(args, { node: ["--import", `data:text/javascript,${encodeURIComponent(register)}`] });
  const packages = new Set<string>();
  for (const url of readFileSync(log, "utf8").split("\n")) {
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (match !== null) packages.add(match[1]);
  }
  return { ...result, packages: [...packages].sort() };
}

describe("silk's start", () => {
  it("--help lists every command, loading commander only", async () => {
    const result = await runRecorded(["--help"]);
    expect(result.code).toBe(0);
    const commands = result.stdout
      .slice(result.stdout.indexOf("Commands:"))
      .split("\n")
      .slice(1)
      .map((line) => /^ {2}([a-z-]+)/.exec(line)?.[1])
      .filter((name) => name !== undefined);
    expect(commands).toEqual(COMMANDS);
    expect(result.packages).toEqual(["commander"]);
    expect(result.stderr).toBe("");
  });

  it("a command's --help loads commander only", async () => {
    const result = await runRecorded(["serve", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("--storage <uri>");
    expect(result.packages).toEqual(["commander"]);
  });

  it("check loads its own modules, the parser's, and no package but commander", async () => {
    const result = await runRecorded(["check", "examples"]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toMatch(/^ok: /);
    expect(result.packages).toEqual(["commander"]);
  });

  it("an S3 command prints its error without the AWS SDK's Node-version notice", async () => {
    const dir = temporaryDirectory();
    expect((await runSilk(["import", "--data", join(dir, "db"), "--no-progress", join(REPO, "examples", "import", "users.jsonl")])).code).toBe(0);
    // A closed port: the S3 client is made, its first request is refused, the command fails with storage_unavailable.
    const env = { AWS_ACCESS_KEY_ID: "silk-test", AWS_SECRET_ACCESS_KEY: "silk-test", AWS_REGION: "us-east-1" };
    const result = await runSilk(["backup", "--data", join(dir, "db"), "--to", "s3://bucket/prefix", "--s3-endpoint", "http://127.0.0.1:9"], { env });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^silk backup: storage_unavailable: .*ECONNREFUSED/);
    expect(result.stderr).not.toContain("NodeVersionSupportWarning");
  });
});
