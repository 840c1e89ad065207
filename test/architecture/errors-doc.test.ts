/** docs/ERRORS.md is exactly what scripts/errors-doc.ts renders: every error code with its status, every limit with its value. */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ERROR_CODES } from "../../protocol/errors.js";
import { WARNING_CODES } from "../../protocol/warnings.js";
import { LIMITS, renderErrorsDoc } from "../../scripts/errors-doc.js";

describe("docs/ERRORS.md", () => {
  const doc = readFileSync(resolve(import.meta.dirname, "../../docs/ERRORS.md"), "utf8");

  it("is what scripts/errors-doc.ts renders (run it after changing an error code or a limit)", () => {
    expect(doc).toBe(renderErrorsDoc());
  });

  for (const [code, spec] of Object.entries(ERROR_CODES)) {
    it(`documents ${code} with status ${spec.status}`, () => {
      expect(doc).toMatch(new RegExp(`\\|\\s*\`${code}\`\\s*\\|\\s*${spec.status}\\s*\\|`));
    });
  }

  for (const code of Object.keys(WARNING_CODES)) {
    it(`documents the warning ${code}, and no error has its code`, () => {
      expect(doc).toMatch(new RegExp(`## Warnings[\\s\\S]*\\|\\s*\`${code}\`\\s*\\|`));
      expect(code in ERROR_CODES).toBe(false);
    });
  }

  it("lists the limits, each naming a code defined in the table (or how more is handled)", () => {
    expect(LIMITS.length).toBeGreaterThanOrEqual(25);
    for (const limit of LIMITS) {
      const codes = limit.code.split(" / ").map((code) => code.replace(/ \(\d+\)$/, ""));
      for (const code of codes) expect(code in ERROR_CODES || code.startsWith("none"), `${limit.name}: ${code}`).toBe(true);
    }
  });
});
