/**
 * Keeps the dependency direction of docs/ARCHITECTURE.md: protocol ← platform ← node ← cluster ← runtime ← gateway,
 * with embedders/ beside node/ (it needs protocol/ only, and runtime/ hands a provider to the engine). A file may
 * import only from its own folder and the folders this table lists for it. The gateway reaches the engine only
 * through runtime/'s Database; it imports nothing of node/ or cluster/. The SDK (sdk/) stands apart: its code
 * generator reads projects through protocol/, and the runtime files an application bundles (client, json, retry,
 * builder) import nothing of ours and one pure-JavaScript package, so a browser or edge bundle never pulls in the engine, the parser or node: modules. The
 * chaos harness (chaos/) stands outside the engine: it reaches a cluster over HTTP and NATS. Every
 * top-level folder that holds TypeScript is either in the table or one of the tools that may import anything.
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
  chaos: ["protocol", "cluster", "chaos"],
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

describe("layering", () => {
  for (const [layer, may] of Object.entries(allowed)) {
    it(`${layer}/ imports only from ${may.join(", ")}`, () => {
      const violations: string[] = [];
      for (const file of sourceFiles(join(root, layer))) {
        const text = readFileSync(file, "utf8");
        for (const match of text.matchAll(/from\s+"(\.{1,2}\/[^"]+)"/g)) {
          const target = relative(root, resolve(dirname(file), match[1]));
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

  it("cluster/ outside cluster/nats/ imports nothing of cluster/nats/ (the coordinator is the same in process and over NATS)", () => {
    const violations: string[] = [];
    for (const file of sourceFiles(join(root, "cluster")).filter((path) => !relative(root, path).startsWith("cluster/nats/"))) {
      const text = readFileSync(file, "utf8");
      for (const match of text.matchAll(/from\s+"(\.{1,2}\/[^"]+)"/g)) {
        const target = relative(root, resolve(dirname(file), match[1]));
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
