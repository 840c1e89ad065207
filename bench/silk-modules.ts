/**
 * Which build of Silk the benchmark measures. By default it is the compiled JavaScript in dist/ (what `make bench`
 * builds and what an application runs), loaded by dynamic import; the TypeScript sources are used only with
 * `--source`, or when dist/ is missing or older than a source file, with a notice. The difference is not small:
 * tsx compiles with esbuild's keepNames, which wraps every closure a function creates in a `__name()` call, and that
 * makes per-query work such as decoding the operation tree about three times slower (measured: 2.65 us against
 * 0.8 us per decodeRequest). The raw loop gets the same choice, so both sides run the same key and msgpackr code.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type * as SilkIndex from "../index.js";
import type * as SilkAdjacency from "../node/store/adjacency.js";
import type * as SilkKeys from "../node/keys.js";
import type * as SilkStore from "../node/store/partition-store.js";

export interface SilkModules {
  readonly index: typeof SilkIndex;
  readonly keys: typeof SilkKeys;
  readonly adjacency: typeof SilkAdjacency;
  readonly packr: typeof SilkStore.packr;
  readonly encodeRecord: typeof SilkStore.encodeRecord;
  /** What was loaded, for the report header. */
  readonly origin: string;
}

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const SOURCE_FOLDERS = ["protocol", "platform", "node", "embedders", "cluster", "runtime"];

function sourceFiles(folder: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (name === "generated") continue;
    if (statSync(path).isDirectory()) files.push(...sourceFiles(path));
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) files.push(path);
  }
  return files;
}

/** The first source file whose compiled form in dist/ is missing or older than it, or undefined when dist/ is current. */
export function staleBuildFile(): string | undefined {
  const sources = [join(REPO_ROOT, "index.ts"), ...SOURCE_FOLDERS.flatMap((folder) => sourceFiles(join(REPO_ROOT, folder)))];
  for (const source of sources) {
    const compiled = join(REPO_ROOT, "dist", relative(REPO_ROOT, source).replace(/\.ts$/, ".js"));
    if (!existsSync(compiled) || statSync(compiled).mtimeMs < statSync(source).mtimeMs) return relative(REPO_ROOT, source);
  }
  if (!existsSync(join(REPO_ROOT, "dist", "protocol", "helixql", "generated", "parser.js"))) return "protocol/helixql/generated/parser.js";
  return undefined;
}

async function importFrom<T>(base: string, path: string): Promise<T> {
  return (await import(new URL(`${base}${path}`, import.meta.url).href)) as T;
}

export async function loadSilkModules(forceSource: boolean, notice: (message: string) => void): Promise<SilkModules> {
  const stale = forceSource ? undefined : staleBuildFile();
  if (stale !== undefined) {
    notice(`dist/ is missing or older than ${stale} (run \`make bench\` or \`npm run build\`): measuring the TypeScript sources through tsx, which is slower per query`);
  }
  const useSource = forceSource || stale !== undefined;
  const base = useSource ? "../" : "../dist/";
  // tsx maps these .js specifiers to the .ts sources when `base` is the repo root.
  const [index, keys, adjacency, store] = await Promise.all([
    importFrom<typeof SilkIndex>(base, "index.js"),
    importFrom<typeof SilkKeys>(base, "node/keys.js"),
    importFrom<typeof SilkAdjacency>(base, "node/store/adjacency.js"),
    importFrom<typeof SilkStore>(base, "node/store/partition-store.js"),
  ]);
  return { index, keys, adjacency, packr: store.packr, encodeRecord: store.encodeRecord, origin: useSource ? "TypeScript sources through tsx" : "dist/ (compiled by tsc)" };
}
