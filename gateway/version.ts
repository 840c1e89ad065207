/**
 * Silk's package version, as `silk --version` prints it and the MCP endpoint reports it to clients (gateway/mcp.ts):
 * read from package.json, which lies one level above this file when run from source and two levels above in dist/.
 */
import { readFileSync } from "node:fs";

/** The version in Silk's package.json, or "unknown" when it cannot be found. */
export function packageVersion(): string {
  for (const relative of ["../package.json", "../../package.json"]) {
    try {
      const json = JSON.parse(readFileSync(new URL(relative, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (json.name === "silk-db" && typeof json.version === "string") return json.version;
    } catch {
      // Not there: try the next place.
    }
  }
  return "unknown";
}
