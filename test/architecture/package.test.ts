/**
 * What the package exports, as an application imports it (run `make test`, which builds dist/ first): `silk-db`
 * gives the embedded runtime, `silk-db/sdk` the client, both with type declarations, resolved by Node itself
 * through package.json's `exports` (a package may import itself by name).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const REPO = resolve(import.meta.dirname, "../..");

function importedNames(specifier: string): string[] {
  const script = `const m = await import(${JSON.stringify(specifier)}); console.log(JSON.stringify(Object.keys(m).sort()));`;
  return JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: REPO, encoding: "utf8" })) as string[];
}

describe("the package's exports", () => {
  it("silk-db is the embedded runtime and silk-db/sdk the client", () => {
    expect(importedNames("silk-db")).toEqual(expect.arrayContaining(["open", "Database", "SilkError", "ERROR_CODES"]));
    expect(importedNames("silk-db/sdk")).toEqual(expect.arrayContaining(["SilkClient", "SilkClientError", "withRetry", "read", "write", "nodes"]));
  });

  it("every export has its JavaScript and its type declarations in dist/", () => {
    const manifest = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { exports: Record<string, string | Record<string, string>> };
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      const files = typeof target === "string" ? [target] : Object.values(target);
      for (const file of files) expect(existsSync(join(REPO, file)), `${subpath} -> ${file}`).toBe(true);
    }
  });
});

describe("the locked dependencies", () => {
  it("every locked package accepts the Node.js versions package.json's engines promise", async () => {
    const { default: semver } = await import("semver");
    const manifest = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { engines: { node: string } };
    const lowest = semver.minVersion(manifest.engines.node)!.version;
    const lock = JSON.parse(readFileSync(join(REPO, "package-lock.json"), "utf8")) as { packages: Record<string, { engines?: { node?: string } }> };
    const refusing = Object.entries(lock.packages)
      .filter(([, entry]) => entry.engines?.node !== undefined && !semver.satisfies(lowest, entry.engines.node))
      .map(([path, entry]) => `${path} needs node ${entry.engines?.node}`);
    expect(refusing).toEqual([]);
  });
});
