/** findSchemaFiles over a Kubernetes ConfigMap volume's layout: every key a link into the hidden `..data` directory. */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findSchemaFiles } from "../../bin/schema-files.js";

const root = mkdtempSync(join(tmpdir(), "silk-schema-files-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("findSchemaFiles", () => {
  it("finds .hx files behind symbolic links once each, and skips hidden directories and dangling links", () => {
    const stamped = join(root, "..2026_01_01");
    mkdirSync(stamped);
    writeFileSync(join(stamped, "schema.hx"), "N::User { name: String }\n");
    writeFileSync(join(stamped, "queries.hx"), "");
    symlinkSync("..2026_01_01", join(root, "..data"));
    symlinkSync(join("..data", "schema.hx"), join(root, "schema.hx"));
    symlinkSync(join("..data", "queries.hx"), join(root, "queries.hx"));
    symlinkSync("missing.hx", join(root, "dangling.hx"));
    expect(findSchemaFiles(root)).toEqual([join(root, "queries.hx"), join(root, "schema.hx")]);
  });
});
