/** Every error code of the one table is documented in docs/ERRORS.md with its HTTP status. */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ERROR_CODES } from "../../protocol/errors.js";

describe("docs/ERRORS.md", () => {
  const doc = readFileSync(resolve(import.meta.dirname, "../../docs/ERRORS.md"), "utf8");
  for (const [code, spec] of Object.entries(ERROR_CODES)) {
    it(`documents ${code} with status ${spec.status}`, () => {
      expect(doc).toMatch(new RegExp(`\\|\\s*\`${code}\`\\s*\\|\\s*${spec.status}\\s*\\|`));
    });
  }
});
