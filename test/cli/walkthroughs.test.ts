/**
 * The walkthroughs a new user follows, run as written: README.md's `curl` lines, then examples/README.md's, against
 * one `silk serve` of the example project (with the real curl), then examples/README.md's bulk import into the same
 * directory. Every step must succeed on the database the steps before it left, so the two walkthroughs cannot
 * collide (they once created the same user: 409) and the import names files the repository has.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { countRequest, nodesLabeled, queryDirectory, REPO, removeTemporaryDirectories, runSilk, temporaryDirectory } from "./helpers.js";
import { startServer } from "../gateway/serve-process.js";

afterAll(removeTemporaryDirectories);

/** The ```sh blocks of a Markdown file, in order. */
function shellBlocks(file: string): string[] {
  const text = readFileSync(join(REPO, file), "utf8");
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]);
}

/** Commands of the blocks that start with `word`; a command runs on until the next line that starts a command. */
function commands(blocks: readonly string[], word: string): string[] {
  const found: string[] = [];
  for (const block of blocks) {
    for (const part of block.split(/\n(?=\S)/)) {
      const command = part.replace(/\n#.*$/s, "").trim();
      if (command.startsWith(`${word} `)) found.push(command);
    }
  }
  return found;
}

/** Runs one curl command of the docs against `url` instead of port 6969; returns its status and parsed body. */
function curl(command: string, url: string): { status: number; body: Record<string, unknown> } {
  const pointed = command.replace(/(?:http:\/\/)?(?:localhost|127\.0\.0\.1):6969/g, url);
  expect(pointed, "the command names the server's address").toContain(url);
  const output = execFileSync("bash", ["-c", `${pointed} -w '\\n%{http_code}'`], { encoding: "utf8" });
  const lines = output.trimEnd().split("\n");
  const status = Number(lines.pop());
  return { status, body: JSON.parse(lines.join("\n")) as Record<string, unknown> };
}

describe("README and examples/README.md walkthroughs", () => {
  it("run in order on one database: every request succeeds, then the bulk import loads its files", async () => {
    const data = temporaryDirectory();
    const readmeCurls = commands(shellBlocks("README.md"), "curl").filter((command) => !command.includes("authorization"));
    const exampleCurls = commands(shellBlocks("examples/README.md"), "curl");
    expect(readmeCurls.length).toBeGreaterThanOrEqual(2);
    expect(exampleCurls.length).toBeGreaterThanOrEqual(2);

    const server = await startServer(["serve", "--project", "examples", "--port", "0", "--data", data]);
    const answers: Record<string, unknown>[] = [];
    try {
      for (const command of [...readmeCurls, ...exampleCurls]) {
        const { status, body } = curl(command, server.url);
        expect({ command, status, body }).toMatchObject({ status: 200 });
        expect(body).not.toHaveProperty("error");
        answers.push(body);
      }
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    // examples/README.md's read asks whom Bob follows: the user its write created.
    expect(answers.at(-1)).toMatchObject({ followed: [{ handle: "cy" }] });

    const importCommands = commands(shellBlocks("examples/README.md"), "node").filter((command) => command.includes(" import "));
    expect(importCommands).toHaveLength(1);
    const [importCommand] = importCommands;
    expect(importCommand).toMatch(/^node dist\/bin\/silk\.js import /);
    const args = importCommand.split(/\s+/).slice(2).map((arg) => (arg === "./data" ? data : arg));
    const imported = await runSilk([...args, "--no-progress"]);
    expect(imported, imported.stderr).toMatchObject({ code: 0 });

    expect(await queryDirectory(data, countRequest({ users: nodesLabeled("User"), posts: nodesLabeled("Post") }))).toEqual({ users: 6, posts: 2 });
  });
});
