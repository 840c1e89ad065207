/**
 * Every TypeScript sample of README.md and docs/*.md runs as written, each as a program of its own, the way a reader
 * would paste it into an application that depends on `silk-db`: a fresh directory whose node_modules/silk-db is this
 * package (its package.json `exports`, so dist/ must be built), run through tsx. Samples that talk to a server get one
 * `silk serve` of the example project (their addresses, local and hosted, are pointed at it), or a schemaless one when
 * the line before the sample says `<!-- sample server: schemaless -->`; the codegen sample gets the module
 * `silk codegen` writes; `@helix-db/helix-db` is HelixDB's v3 TypeScript SDK as ../shared/clients holds it (it is not
 * in the npm registry). A sample that cannot run (condensed declarations) is marked by an HTML comment
 * `<!-- not run: reason -->` on the line before it, and the test holds the reason to be given.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, removeTemporaryDirectories, runSilk, temporaryDirectory } from "../cli/helpers.js";
import { startServer, type StartedServer } from "../gateway/serve-process.js";

const run = promisify(execFile);
const TSX = join(REPO, "node_modules", "tsx", "dist", "cli.mjs");
const HELIX_V3_SDK = join(REPO, "..", "shared", "clients", "helix-v3-sdk-ts");

interface Sample {
  readonly file: string;
  readonly line: number;
  readonly code: string;
  readonly notRun?: string;
  readonly schemaless: boolean;
}

function samplesOf(file: string): Sample[] {
  const lines = readFileSync(join(REPO, file), "utf8").split("\n");
  const samples: Sample[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    if (lines[index] !== "```ts") continue;
    const end = lines.indexOf("```", index + 1);
    const marker = /^<!-- not run: (.*) -->$/.exec(lines[index - 1] ?? "");
    const schemaless = lines[index - 1] === "<!-- sample server: schemaless -->";
    samples.push({ file, line: index + 1, code: lines.slice(index + 1, end).join("\n"), schemaless, ...(marker ? { notRun: marker[1] } : {}) });
    index = end;
  }
  return samples;
}

const SAMPLES = ["README.md", ...readdirSync(join(REPO, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)].flatMap(samplesOf);

let server: StartedServer;
let schemalessServer: StartedServer;
let application: string;

beforeAll(async () => {
  if (!existsSync(join(HELIX_V3_SDK, "dist", "index.js"))) throw new Error(`the README's samples need HelixDB's v3 TypeScript SDK, built, in ${HELIX_V3_SDK} (see ../shared/clients/README.md); it is missing`);
  server = await startServer(["serve", "--project", "examples", "--port", "0", "--data", join(temporaryDirectory(), "data")]);
  schemalessServer = await startServer(["serve", "--port", "0", "--data", join(temporaryDirectory(), "data")]);
  application = temporaryDirectory();
  mkdirSync(join(application, "node_modules", "@helix-db"), { recursive: true });
  symlinkSync(REPO, join(application, "node_modules", "silk-db"), "dir");
  symlinkSync(HELIX_V3_SDK, join(application, "node_modules", "@helix-db", "helix-db"), "dir");
  writeFileSync(join(application, "package.json"), JSON.stringify({ type: "module", dependencies: { "silk-db": "*" } }));
  const generated = await runSilk(["codegen", "examples", "--out", join(application, "silk-queries.ts"), "--sdk-import", "silk-db/sdk"]);
  expect(generated, generated.stderr).toMatchObject({ code: 0 });
});

afterAll(async () => {
  for (const started of [server, schemalessServer]) {
    started?.child.kill("SIGTERM");
    await started?.exited;
  }
  removeTemporaryDirectories();
});

describe("the TypeScript samples of README.md and docs/", () => {
  it("there are samples, and each one not run says why", () => {
    expect(SAMPLES.length).toBeGreaterThanOrEqual(8);
    for (const sample of SAMPLES.filter((each) => each.notRun !== undefined)) expect(sample.notRun!.length, `${sample.file}:${sample.line}`).toBeGreaterThan(10);
  });

  it.each(SAMPLES.filter((sample) => sample.notRun === undefined).map((sample) => [`${sample.file}:${sample.line}`, sample] as const))("%s runs", async (name, sample) => {
    const directory = join(application, name.replace(/[^a-zA-Z0-9]+/g, "-"));
    mkdirSync(directory);
    // In the application's own folder, so "./silk-queries.js" and node_modules resolve; ./data is the sample's own.
    const path = join(application, `${name.replace(/[^a-zA-Z0-9]+/g, "-")}.mts`);
    const url = (sample.schemaless ? schemalessServer : server).url;
    writeFileSync(path, sample.code.replace(/http:\/\/127\.0\.0\.1:6969|https:\/\/db\.example\.com/g, url));
    const result = await run(process.execPath, [TSX, path], { cwd: directory, env: { ...process.env, SILK_API_KEY: "unused-by-a-local-server" } }).catch((error: { code: number; stderr: string }) => error);
    expect(result, `${name}:\n${result.stderr}`).not.toHaveProperty("code");
  });
});
