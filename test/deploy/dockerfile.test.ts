/**
 * deploy/Dockerfile checked without a container runtime (none runs on this machine: deploy/README.md, "Not validated
 * here"): its instructions parse, both stages are Node 20 slim, what the build stage copies from the context is there
 * and not excluded by Dockerfile.dockerignore, what the final stage copies from the build stage is what `npm ci`
 * (with package.json's `prepare`) makes, every package the built CLI imports survives `npm prune --omit=dev`, the
 * final stage runs as the non-root user the manifests name, and its CMD (`silk` linked to dist/bin/silk.js) runs.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO, runSilk } from "../cli/helpers.js";
import { loadBase, workloads } from "./manifests.js";

interface Instruction {
  readonly keyword: string;
  readonly flags: Record<string, string>;
  /** The arguments after the flags: shell words, or the JSON array of the exec form. */
  readonly args: string[];
  readonly line: number;
}

/** Dockerfile instructions: comments and blank lines dropped, `\` continuations joined, `--flag=value`s split off. */
function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = "";
  let startLine = 0;
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    if (pending === "" && (line === "" || line.startsWith("#"))) return;
    if (pending === "") startLine = index + 1;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    const whole = (pending + line).trim();
    pending = "";
    const match = /^([A-Za-z]+)\s+(.*)$/s.exec(whole);
    if (match === null) throw new Error(`line ${startLine}: not an instruction: ${whole}`);
    let rest = match[2];
    const flags: Record<string, string> = {};
    for (let flag = /^--([a-z-]+)=(\S+)\s+/.exec(rest); flag !== null; flag = /^--([a-z-]+)=(\S+)\s+/.exec(rest)) {
      flags[flag[1]] = flag[2];
      rest = rest.slice(flag[0].length);
    }
    const args = rest.startsWith("[") ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
    instructions.push({ keyword: match[1].toUpperCase(), flags, args, line: startLine });
  });
  if (pending !== "") throw new Error("the Dockerfile ends in a line continuation");
  return instructions;
}

/** The stages: each FROM and the instructions up to the next. */
function stagesOf(instructions: readonly Instruction[]): { from: string; name?: string; body: Instruction[] }[] {
  const stages: { from: string; name?: string; body: Instruction[] }[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === "FROM") {
      const [from, as, name] = instruction.args;
      stages.push({ from, ...(as?.toUpperCase() === "AS" ? { name } : {}), body: [] });
    } else {
      if (stages.length === 0) throw new Error(`line ${instruction.line}: ${instruction.keyword} before FROM`);
      stages.at(-1)!.body.push(instruction);
    }
  }
  return stages;
}

/** Whether a path of the build context is excluded by .dockerignore patterns (the last matching pattern decides). */
function ignored(path: string, patterns: readonly string[]): boolean {
  let excluded = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith("!");
    const body = negated ? pattern.slice(1) : pattern;
    const regex = new RegExp(`^${body.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*\*\//g, "(?:.*/)?").replace(/\*\*/g, ".*").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]")}(?:/.*)?$`);
    if (regex.test(path)) excluded = !negated;
  }
  return excluded;
}

/** The bare package names that `entry` and every module it reaches by relative import (static or dynamic) import. */
function packagesImportedFrom(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    // Statements at the start of a line (tsc's output), and dynamic imports of a string literal.
    const statements = /^(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)";|^import\s*"([^"]+)";|\bimport\("([^"]+)"\)/gm;
    for (const match of text.matchAll(statements)) {
      const specifier = match[1] ?? match[2] ?? match[3];
      if (specifier.startsWith(".")) {
        queue.push(resolve(dirname(file), specifier));
      } else if (!specifier.startsWith("node:") && !builtinModules.includes(specifier)) {
        packages.add(specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]);
      }
    }
  }
  return packages;
}

const dockerfile = parseDockerfile(readFileSync(join(REPO, "deploy", "Dockerfile"), "utf8"));
const stages = stagesOf(dockerfile);
const [build, final] = stages;
const ignorePatterns = readFileSync(join(REPO, "deploy", "Dockerfile.dockerignore"), "utf8")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("#"));
const packageJson = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { bin: Record<string, string>; scripts: Record<string, string>; dependencies: Record<string, string> };

describe("deploy/Dockerfile", () => {
  it("has a build stage and a final stage, both Node 20 slim, the final one from the build one", () => {
    expect(stages.map((stage) => stage.from)).toEqual(["node:20-bookworm-slim", "node:20-bookworm-slim"]);
    expect(build.name).toBe("build");
    expect(final.body.filter((instruction) => instruction.keyword === "COPY").every((copy) => copy.flags.from === build.name)).toBe(true);
  });

  it("copies from the context what the build needs, and the .dockerignore keeps it while leaving out node_modules and dist", () => {
    const copies = build.body.filter((instruction) => instruction.keyword === "COPY");
    expect(copies.map((copy) => copy.args)).toEqual([[".", "."]]);
    // npm ci reads the lockfile, `prepare` runs the parser build, tsc and vite with these inputs.
    const needed = ["package.json", "package-lock.json", "tsconfig.json", "scripts/build-parser.mjs", "protocol/helixql/helixql.peggy", "bin/silk.ts", "console/vite.config.ts", "console/index.html"];
    for (const path of needed) {
      expect(existsSync(join(REPO, path)), path).toBe(true);
      expect(ignored(path, ignorePatterns), `${path} is excluded from the context`).toBe(false);
    }
    for (const path of ["node_modules", "dist", "dist/bin/silk.js", ".git", "data"]) expect(ignored(path, ignorePatterns), `${path} is sent to the build`).toBe(true);
    expect(packageJson.scripts.prepare).toContain("tsc -p tsconfig.json");
  });

  it("installs with npm ci, then keeps only the runtime dependencies, and the built CLI imports nothing else", () => {
    const install = build.body.filter((instruction) => instruction.keyword === "RUN").map((instruction) => instruction.args.join(" ")).join(" && ");
    expect(install).toMatch(/npm ci\b/);
    expect(install).toMatch(/npm prune --omit=dev/);
    // A package the CLI imports that is only a devDependency would be pruned from the image: `silk` would not start.
    const entry = join(REPO, packageJson.bin.silk);
    const imported = [...packagesImportedFrom(entry)].sort();
    expect(imported.length).toBeGreaterThan(5);
    const missing = imported.filter((name) => packageJson.dependencies[name] === undefined);
    expect(missing, `imported by ${relative(REPO, entry)}'s modules but not in dependencies`).toEqual([]);
  });

  it("copies into the final stage what the build stage made, and links `silk` to the CLI package.json names", () => {
    const copied = final.body.filter((instruction) => instruction.keyword === "COPY").flatMap((copy) => copy.args.slice(0, -1));
    expect(copied.sort()).toEqual(["/src/dist", "/src/node_modules", "/src/package-lock.json", "/src/package.json"]);
    const run = final.body.filter((instruction) => instruction.keyword === "RUN").map((instruction) => instruction.args.join(" ")).join(" ");
    const workdir = final.body.find((instruction) => instruction.keyword === "WORKDIR")!.args[0];
    expect(run).toContain(`ln -s ${workdir}/${packageJson.bin.silk} /usr/local/bin/silk`);
    expect(run).toContain(`chmod 0755 ${packageJson.bin.silk}`);
    // The link runs the file as a script: it needs its shebang.
    expect(readFileSync(join(REPO, packageJson.bin.silk), "utf8").split("\n")[0]).toBe("#!/usr/bin/env node");
    expect(statSync(join(REPO, packageJson.bin.silk)).isFile()).toBe(true);
  });

  it("runs as the non-root user every silk pod of deploy/kubernetes names", () => {
    const user = final.body.filter((instruction) => instruction.keyword === "USER").at(-1)!.args[0];
    expect(user).toMatch(/^[1-9][0-9]*:[1-9][0-9]*$/);
    const [uid, gid] = user.split(":").map(Number);
    const run = final.body.filter((instruction) => instruction.keyword === "RUN").map((instruction) => instruction.args.join(" ")).join(" ");
    expect(run).toContain(`--gid ${gid} silk`);
    expect(run).toContain(`--uid ${uid} `);
    const silkPods = workloads(loadBase()).filter((workload) => workload.spec.template.spec.containers.some((container) => container.image.startsWith("silk:")));
    expect(silkPods.length).toBeGreaterThan(0);
    for (const workload of silkPods) {
      expect(workload.spec.template.spec.securityContext, workload.metadata.name).toMatchObject({ runAsNonRoot: true, runAsUser: uid, runAsGroup: gid });
    }
  });

  it("has a CMD that runs the built CLI: silk --help", async () => {
    const cmd = final.body.filter((instruction) => instruction.keyword === "CMD").at(-1)!;
    const [program, ...args] = cmd.args;
    expect(program).toBe(Object.keys(packageJson.bin)[0]);
    const help = await runSilk(args);
    expect(help.code, help.stderr).toBe(0);
    for (const command of ["partition", "serve", "gateway", "cluster"]) expect(help.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, "m"));
  });
});
