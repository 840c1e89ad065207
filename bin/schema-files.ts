/**
 * Finding a project's HelixQL files for the CLI: a `.hx` file, or every `.hx` file under a directory
 * (recursively, in a stable sorted order so diagnostics and type order do not depend on the file system).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { SilkError } from "../protocol/errors.js";
import type { SchemaSource } from "../protocol/schema.js";

/** Directories never searched for schema files: dependencies, build output and hidden directories. */
const SKIPPED_DIRECTORIES = new Set(["node_modules", "dist"]);

/**
 * Whether a symbolic link leads to a regular file. A Kubernetes ConfigMap volume shows each key as a link into its
 * hidden `..data` directory, so a project mounted from one is all links; links to directories are not followed
 * (no cycles to guard against).
 */
function isFileBehindLink(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false; // a dangling link is no file
  }
}

/** Paths of the `.hx` files at `path` (a file, or a directory searched recursively), sorted. */
export function findSchemaFiles(path: string): string[] {
  let stats;
  try {
    stats = statSync(path);
  } catch (cause) {
    throw new SilkError("invalid_option", `cannot read ${path}: ${(cause as Error).message}`);
  }
  if (stats.isFile()) return [path];
  const found: string[] = [];
  const walk = (directory: string): void => {
    const entries = readdirSync(directory, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const child = join(directory, entry.name);
      if (entry.isDirectory()) {
        if (!entry.name.startsWith(".") && !SKIPPED_DIRECTORIES.has(entry.name)) walk(child);
      } else if (entry.name.endsWith(".hx") && (entry.isFile() || (entry.isSymbolicLink() && isFileBehindLink(child)))) {
        found.push(child);
      }
    }
  };
  walk(path);
  return found;
}

/** The schema sources at `path`; throws invalid_option when there are none, since a project needs a schema. */
export function loadSchemaSources(path: string): SchemaSource[] {
  const files = findSchemaFiles(path);
  if (files.length === 0) throw new SilkError("invalid_option", `${path} contains no .hx files`);
  return files.map((file) => ({ file, text: readFileSync(file, "utf8") }));
}
