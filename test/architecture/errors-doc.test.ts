/** Every error code of the one table is documented in docs/ERRORS.md with its HTTP status, and the input limits with their values. */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { INDEX_STRING_PREFIX_BYTES_MAX } from "../../node/index-encoding.js";
import { KEY_BYTES_MAX } from "../../node/keys.js";
import { ERROR_CODES } from "../../protocol/errors.js";
import { VALUE_DEPTH_MAX } from "../../protocol/values.js";

describe("docs/ERRORS.md", () => {
  const doc = readFileSync(resolve(import.meta.dirname, "../../docs/ERRORS.md"), "utf8");
  for (const [code, spec] of Object.entries(ERROR_CODES)) {
    it(`documents ${code} with status ${spec.status}`, () => {
      expect(doc).toMatch(new RegExp(`\\|\\s*\`${code}\`\\s*\\|\\s*${spec.status}\\s*\\|`));
    });
  }

  it("lists the input limits with their values", () => {
    expect(doc).toContain(`| VALUE_DEPTH_MAX (protocol/values.ts) | ${VALUE_DEPTH_MAX} levels | invalid_value |`);
    expect(doc).toContain(`| KEY_BYTES_MAX (node/keys.ts) | ${KEY_BYTES_MAX} bytes |`);
    expect(doc).toContain(`first ${INDEX_STRING_PREFIX_BYTES_MAX} bytes (INDEX_STRING_PREFIX_BYTES_MAX`);
    expect(doc).toContain("lone UTF-16 surrogate");
  });
});
