/**
 * Keeps the dependency direction of docs/ARCHITECTURE.md: protocol ← platform ← node ← cluster ← runtime ← gateway,
 * with embedders/ beside node/ (it needs protocol/ only, and runtime/ hands a provider to the engine). A file may
 * import only from its own folder and the folders this table lists for it. The gateway reaches the engine only
 * through runtime/'s Database; it imports nothing of node/ or cluster/. The SDK (sdk/) stands apart: its code
 * generator reads projects through protocol/, and the runtime files an application bundles (client, json, retry,
 * builder) import nothing of ours and one pure-JavaScript package, so a browser or edge bundle never pulls in the engine, the parser or node: modules. The
 * chaos harness (chaos/) stands outside the engine: it reaches a cluster over HTTP and NATS; so does the web console's
 * page (console/), which a browser runs and which reaches the server over HTTP. Every
 * top-level folder that holds TypeScript is either in the table or one of the tools that may import anything.
 *
 * Inside node/, the folders follow a partition's data: the definitions every folder shares sit at the bottom, in
 * node/ itself (the key layout, the record codec, the contract of an index family, the UNIQUE edge error); indexes/
 * above them; store/ and exec/ side by side above indexes/ (the store maintains index entries in its write
 * transactions, the executor plans with index encodings and searches, and neither imports the other: the executor
 * reads through its BaseReader interface); actor/ on top, joining a store's snapshots to the executor.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, dirname } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const allowed: Record<string, string[]> = {
  protocol: ["protocol"],
  platform: ["protocol", "platform"],
  node: ["protocol", "platform", "node"],
  embedders: ["protocol", "platform", "embedders"],
  cluster: ["protocol", "platform", "node", "cluster"],
  runtime: ["protocol", "platform", "node", "embedders", "cluster", "runtime"],
  gateway: ["protocol", "platform", "runtime", "gateway"],
  sdk: ["protocol", "sdk"],
  // The chaos harness (docs/CHAOS.md) drives a cluster from outside: it reads cluster/nats/'s manifest, leases and
  // intents; the CLI (bin/chaos.ts) hands it the way to start processes.
  chaos: ["protocol", "platform", "cluster", "chaos"],
  // The web console's page (docs/CONSOLE.md) runs in a browser: it reaches the server over HTTP only, and vite
  // bundles nothing of ours into it but its own files.
  console: ["console"],
};
/** The folders of node/ ("." is node/'s own files, the bottom) and the folders of node/ each may import. */
const NODE_FOLDERS: Record<string, string[]> = {
  ".": ["."],
  indexes: [".", "indexes"],
  store: [".", "indexes", "store"],
  exec: [".", "indexes", "exec"],
  actor: [".", "indexes", "store", "exec", "actor"],
};
/** Folders outside the layers: the CLI, benchmarks, build scripts and tests may import any layer. */
const TOOLS = ["bin", "bench", "scripts", "test"];
/** Folders that hold no source of ours. */
const NOT_SOURCE = ["dist", "docs", "examples", "deploy", "node_modules"];
/** The SDK files an application bundles: they may import only each other (and no node: module). */
const SDK_RUNTIME_FILES = ["sdk/client.ts", "sdk/json.ts", "sdk/retry.ts", "sdk/builder.ts", "sdk/builder-values.ts"];
/** The one package they may import: exact JSON for /v2/query's IDs (pure JavaScript, built for browsers too). */
const SDK_RUNTIME_PACKAGES = ["lossless-json"];

function sourceFiles(folder: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (name === "generated" || name === "node_modules") continue;
    if (statSync(path).isDirectory()) files.push(...sourceFiles(path));
    else if (name.endsWith(".ts")) files.push(path);
  }
  return files;
}

/** The repository paths a file names in relative `from "…"`, `import "…"` and `import("…")` specifiers. */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*)"(\.{1,2}\/[^"]+)"/g)].map((match) => relative(root, resolve(dirname(file), match[1])));
}

/** The node/ folder of a repository path: "." for a file of node/ itself, undefined outside node/. */
function nodeFolderOf(path: string): string | undefined {
  const parts = path.split("/");
  if (parts[0] !== "node") return undefined;
  return parts.length === 2 ? "." : parts[1];
}

describe("layering", () => {
  for (const [layer, may] of Object.entries(allowed)) {
    it(`${layer}/ imports only from ${may.join(", ")}`, () => {
      const violations: string[] = [];
      for (const file of sourceFiles(join(root, layer))) {
        for (const target of relativeImports(file)) {
          const top = target.split("/")[0];
          if (!may.includes(top)) violations.push(`${relative(root, file)} imports ${target}`);
        }
      }
      expect(violations).toEqual([]);
    });
  }

  it("every top-level folder with TypeScript in it is a layer of the table or a tool", () => {
    const unknown = readdirSync(root)
      .filter((name) => !name.startsWith(".") && !NOT_SOURCE.includes(name) && statSync(join(root, name)).isDirectory())
      .filter((name) => sourceFiles(join(root, name)).length > 0)
      .filter((name) => !(name in allowed) && !TOOLS.includes(name));
    expect(unknown).toEqual([]);
  });

  for (const [folder, may] of Object.entries(NODE_FOLDERS)) {
    const name = folder === "." ? "node/'s own files" : `node/${folder}/`;
    it(`${name} import, of node/, only ${may.map((other) => (other === "." ? "node/'s own files" : `node/${other}/`)).join(", ")}`, () => {
      const files = sourceFiles(join(root, "node")).filter((file) => nodeFolderOf(relative(root, file)) === folder);
      expect(files.length).toBeGreaterThan(0);
      const violations: string[] = [];
      for (const file of files) {
        for (const target of relativeImports(file)) {
          const targetFolder = nodeFolderOf(target);
          if (targetFolder !== undefined && !may.includes(targetFolder)) violations.push(`${relative(root, file)} imports ${target}`);
        }
      }
      expect(violations).toEqual([]);
    });
  }

  it("every folder of node/ is in the table of node/'s folders, and holds no folder of its own", () => {
    const unknown = sourceFiles(join(root, "node"))
      .map((file) => relative(root, file))
      .filter((path) => !((nodeFolderOf(path) ?? "") in NODE_FOLDERS) || path.split("/").length > 3);
    expect(unknown).toEqual([]);
  });

  it("cluster/ outside cluster/nats/ imports nothing of cluster/nats/ (the coordinator is the same in process and over NATS)", () => {
    const violations: string[] = [];
    for (const file of sourceFiles(join(root, "cluster")).filter((path) => !relative(root, path).startsWith("cluster/nats/"))) {
      for (const target of relativeImports(file)) {
        if (target.startsWith("cluster/nats/")) violations.push(`${relative(root, file)} imports ${target}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it("the SDK's runtime files import only each other and lossless-json", () => {
    const violations: string[] = [];
    for (const file of SDK_RUNTIME_FILES) {
      const text = readFileSync(join(root, file), "utf8");
      for (const match of text.matchAll(/from\s+"([^"]+)"/g)) {
        const target = match[1].startsWith(".") ? relative(root, resolve(dirname(join(root, file)), match[1])).replace(/\.js$/, ".ts") : match[1];
        if (!SDK_RUNTIME_FILES.includes(target) && !SDK_RUNTIME_PACKAGES.includes(target)) violations.push(`${file} imports ${target}`);
      }
    }
    expect(violations).toEqual([]);
  });
});
