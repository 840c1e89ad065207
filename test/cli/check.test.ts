/**
 * `silk check`: exit code 0 and a summary (types and queries) for a good project, every diagnostic of the schema
 * and the queries and exit code 1 otherwise.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { writeSocialProject } from "../gateway/social-project.js";
import { REPO, removeTemporaryDirectories, runSilk, temporaryDirectory } from "./helpers.js";

afterAll(removeTemporaryDirectories);

describe("silk check", () => {
  it("passes the example project", async () => {
    const run = await runSilk(["check", join(REPO, "examples")]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("ok: 2 files, 2 node, 4 edge and 1 vector types, 4 queries\n");
  });

  it("counts the queries of a project", async () => {
    const dir = temporaryDirectory();
    writeSocialProject(dir);
    const run = await runSilk(["check", dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("ok: 2 files, 1 node, 1 edge and 0 vector types, 5 queries\n");
  });

  it("prints every query diagnostic of every file with its caret, and exits 1", async () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "a.hx"), "N::User { name: String }\n");
    writeFileSync(join(dir, "b.hx"), "QUERY A(id: ID) =>\n    u <- N<Ghost>(id)\n    RETURN u\n");
    writeFileSync(join(dir, "c.hx"), "QUERY B() =>\n    u <- N<User>::Out<Nope>\n    RETURN u\n");
    const run = await runSilk(["check", dir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`${join(dir, "b.hx")}:2:\\d+: .*Ghost.*\\n    u <- N<Ghost>\\(id\\)\\n +\\^`));
    expect(run.stdout).toMatch(new RegExp(`${join(dir, "c.hx")}:2:\\d+: .*Nope.*\\n    u <- N<User>::Out<Nope>\\n +\\^`));
    expect(run.stderr).toContain("silk check: 2 errors in 3 files");
  });

  it("prints every diagnostic of every file, with line, column and caret, and exits 1", async () => {
    const dir = temporaryDirectory();
    mkdirSync(join(dir, "nested"));
    writeFileSync(join(dir, "a.hx"), "N::User { name: Strin }\n");
    writeFileSync(join(dir, "nested", "b.hx"), "E::Follows { From: User, To: Ghost }\nN::User { x: I32 }\n");
    const run = await runSilk(["check", dir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`${join(dir, "a.hx")}:1:17: unknown field type Strin`);
    expect(run.stdout).toContain(`${join(dir, "nested", "b.hx")}:1:30: E::Follows: To names Ghost`);
    expect(run.stdout).toContain(`${join(dir, "nested", "b.hx")}:2:4: duplicate type N::User`);
    expect(run.stdout).toContain("N::User { name: Strin }\n                ^");
    expect(run.stderr).toContain("silk check: 3 errors in 2 files");
  });

  it("reports a syntax error and still checks the other files", async () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "a.hx"), "N::User { name String }\n");
    writeFileSync(join(dir, "b.hx"), "N::Post { n: Nope }\n");
    const run = await runSilk(["check", dir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/a\.hx:1:16: syntax error/);
    expect(run.stdout).toMatch(/b\.hx:1:14: unknown field type Nope/);
  });

  it("exits 1 for a directory without .hx files or a missing path", async () => {
    const empty = await runSilk(["check", temporaryDirectory()]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/silk check: invalid_option: .* contains no \.hx files/);
    const missing = await runSilk(["check", join(temporaryDirectory(), "nope")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/silk check: invalid_option: cannot read/);
  });
});

describe("silk check: attributes before QUERY (#[mcp], #[model])", () => {
  const schema = "V::Doc { text: String }\n";

  it("accepts HelixDB's #[mcp] and #[model(..)] (string or identifier), alone or together", async () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "schema.hx"), schema);
    writeFileSync(
      join(dir, "queries.hx"),
      [
        "// Finds documents near a text.",
        "#[mcp]",
        "QUERY Find(q: String) =>\n    docs <- SearchV<Doc>(Embed(q), 5)\n    RETURN docs\n",
        '#[model("text-embedding-3-large")]',
        "QUERY Add(t: String) =>\n    doc <- AddV<Doc>(Embed(t), {text: t})\n    RETURN doc\n",
        "#[ model ( nomic_embed ) ] #[mcp]",
        "QUERY Both(q: String) =>\n    docs <- SearchV<Doc>(Embed(q), 5)\n    RETURN docs\n",
      ].join("\n"),
    );
    const run = await runSilk(["check", dir]);
    expect(run.stdout).toBe("ok: 2 files, 0 node, 0 edge and 1 vector types, 3 queries\n");
    expect(run.code).toBe(0);
  });

  it("rejects unknown, malformed and repeated attributes, each at its place with a caret", async () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "schema.hx"), schema);
    writeFileSync(
      join(dir, "queries.hx"),
      [
        '#[mcp("x")]',
        'QUERY A() => RETURN "a"',
        "#[model]",
        'QUERY B() => RETURN "b"',
        "#[model(42)]",
        'QUERY C() => RETURN "c"',
        "#[tool]",
        'QUERY D() => RETURN "d"',
        "#[mcp] #[mcp]",
        'QUERY E() => RETURN "e"',
        '#[model("")]',
        'QUERY F() => RETURN "f"',
        "",
      ].join("\n"),
    );
    const run = await runSilk(["check", dir]);
    expect(run.code).toBe(1);
    const file = join(dir, "queries.hx");
    expect(run.stdout).toContain(`${file}:1:1: #[mcp] takes no arguments; write #[mcp] [query_invalid]\n#[mcp("x")]\n^`);
    expect(run.stdout).toContain(`${file}:3:1: #[model] takes one model name`);
    expect(run.stdout).toContain(`${file}:5:9: #[model] takes one model name`);
    expect(run.stdout).toContain(`${file}:7:3: unknown attribute #[tool]`);
    expect(run.stdout).toContain(`${file}:9:8: #[mcp] is given twice on QUERY E`);
    expect(run.stdout).toContain(`${file}:11:9: #[model("")]: an embedding model name has 1 to 256 characters`);
    expect(run.stderr).toContain("silk check: 6 errors in 2 files");
  });

  it("reports an attribute that does not parse, or one before a schema type, as a located syntax error", async () => {
    for (const [text, column] of [
      ["#[mcp\nQUERY A() => RETURN \"a\"\n", 1],
      ["#[mcp]\nN::User { name: String }\n", 1],
    ] as const) {
      const dir = temporaryDirectory();
      writeFileSync(join(dir, "a.hx"), text);
      const run = await runSilk(["check", dir]);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(new RegExp(`${join(dir, "a.hx")}:2:${column}: syntax error: .*\\[schema_syntax\\]`));
    }
  });
});

describe("silk check warnings", () => {
  const project = (): string => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "schema.hx"), "N::Doc { title: String, n: U32 }\n");
    writeFileSync(join(dir, "queries.hx"), "QUERY Find(q: String) =>\n    hits <- SearchBM25<Doc>(q, 5)\n    RETURN hits\n");
    return dir;
  };

  it("prints each warning with its place, code and caret, and exits 0", async () => {
    const dir = project();
    const run = await runSilk(["check", dir]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe(
      `${join(dir, "queries.hx")}:2:13: warning: SearchBM25<Doc>: N::Doc has no TEXT INDEX field; searching an implied standard text index over title (declare TEXT INDEX on the fields to search) [implied_text_index]\n` +
        "    hits <- SearchBM25<Doc>(q, 5)\n" +
        "            ^\n" +
        "ok: 2 files, 1 node, 0 edge and 0 vector types, 1 query, 1 warning\n",
    );
  });

  it("--strict turns warnings into errors: exit 1", async () => {
    const dir = project();
    const run = await runSilk(["check", "--strict", dir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("warning: SearchBM25<Doc>");
    expect(run.stdout).not.toContain("ok:");
    expect(run.stderr).toBe("silk check: 1 warning in 2 files, errors under --strict\n");
  });

  it("--strict without warnings still exits 0", async () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "a.hx"), "N::Doc { TEXT INDEX title: String }\nQUERY Find(q: String) => hits <- SearchBM25<Doc>(q, 5) RETURN hits\n");
    const run = await runSilk(["check", "--strict", dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("ok: 1 file, 1 node, 0 edge and 0 vector types, 1 query\n");
  });

  it("lists errors and warnings together in file order, and counts both", async () => {
    const dir = project();
    writeFileSync(join(dir, "z.hx"), "QUERY Bad() => x <- N<Ghost> RETURN x\n");
    const run = await runSilk(["check", dir]);
    expect(run.code).toBe(1);
    const warning = run.stdout.indexOf("warning: SearchBM25<Doc>");
    const error = run.stdout.indexOf("Ghost");
    expect(warning).toBeGreaterThanOrEqual(0);
    expect(error).toBeGreaterThan(warning);
    expect(run.stderr).toBe("silk check: 1 error and 1 warning in 3 files\n");
  });

  it("reads [f64] and the other Rust spellings of scalar types as those types, without a warning", async () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "a.hx"), "V::Doc { score: f64 }\nQUERY Near(v: [f32], k: i64) => hits <- SearchV<Doc>(v, k) RETURN hits\n");
    const run = await runSilk(["check", "--strict", dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("ok: 1 file, 0 node, 0 edge and 1 vector types, 1 query\n");
  });
});
