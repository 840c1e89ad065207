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

/**
 * The import cycles left, each a group of files that import each other (type imports count: a cycle of types is still
 * two modules that cannot be read apart). A cycle not inside one of these groups fails the "no new import cycles"
 * test: move the shared type or function to where both sides can import it instead. Why each is still here:
 * - the operation tree: the step, row and expression decoders import the plan types from tree.ts, which imports
 *   the decoders; it goes when the plan types leave tree.ts for a module of their own (issue 15's split), which
 *   changes the executor's imports, so it waits for the executor's rewrite.
 * - the schema: schema.ts re-exports the HelixQL checker's functions (node/exec/validation.ts takes
 *   prepareProperties from it), and indexes.ts and schema.ts name each other's types.
 * - node/exec/: the executor's streams, planner and row steps.
 */
const CYCLES_LEFT: readonly (readonly string[])[] = [
  ["protocol/tree.ts", "protocol/tree-computed.ts", "protocol/tree-rows.ts", "protocol/tree-steps.ts"],
  [
    "protocol/schema.ts", "protocol/indexes.ts", "protocol/helixql/coerce.ts", "protocol/helixql/diagnostics.ts", "protocol/helixql/field-rules.ts",
    "protocol/helixql/scalars.ts", "protocol/helixql/schema-check.ts", "protocol/helixql/schema-index-options.ts", "protocol/helixql/schema-json.ts",
    "protocol/helixql/schema-versions.ts",
  ],
  ["node/exec/embed.ts", "node/exec/planner.ts", "node/exec/predicates.ts", "node/exec/rows.ts", "node/exec/streams.ts", "node/exec/txn-view.ts"],
];

/** The groups of files that import each other, directly or around a cycle (Tarjan's strongly connected components). */
function importCycles(files: readonly string[]): string[][] {
  const known = new Set(files);
  const edges = new Map(files.map((file) => [file, relativeImports(join(root, file)).map((target) => target.replace(/\.js$/, ".ts")).filter((target) => known.has(target))]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of edges.get(file)!) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1) groups.push(group.sort());
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return groups;
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

  it("has no new import cycles: every group of files that import each other is one of CYCLES_LEFT, or part of one", () => {
    const files = [...Object.keys(allowed), "bin", "scripts"].flatMap((folder) => sourceFiles(join(root, folder))).map((file) => relative(root, file));
    const cycles = importCycles(files);
    const unlisted = cycles.filter((group) => !CYCLES_LEFT.some((left) => group.every((file) => left.includes(file))));
    expect(unlisted).toEqual([]);
  });

  it("finds an import cycle, type imports included", () => {
    // The check above is only as good as this: a group it cannot see would pass it.
    expect(importCycles(["protocol/tree.ts", "protocol/tree-rows.ts"])).toEqual([["protocol/tree-rows.ts", "protocol/tree.ts"]]);
    expect(importCycles(["protocol/errors.ts", "protocol/limits.ts"])).toEqual([]);
  });
});
