/**
 * The web console (docs/CONSOLE.md) in a real browser: Debian's Chromium, driven by playwright-core, against a real
 * `silk serve --project` started here on a free port with the example project and a few records. The page is built
 * first (vite, `npm run build:console`), so what is tested is what the sources make. One server and one browser for
 * the whole file; each case leaves a screenshot under test-artifacts/console/ (gitignored).
 *
 * - the playground: a query with an error shows the checker's diagnostic at its line as it is typed; a query that
 *   checks runs and shows its rows as a table, as JSON and as a graph;
 * - the operation-tree playground: a tree sent to `POST /v2/query`, its answer, a malformed tree's error;
 * - the graph explorer: a node shown by its ID, its properties, and one of its edge labels expanded; nodes found by a
 *   property's value;
 * - the index page: the project's index with its state; a text index built over 20,000 posts, its counters read
 *   again by the page itself while it is built, until it is active.
 */
import { spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { REPO, removeTemporaryDirectories, spawnSilk, temporaryDirectory, write as writeTree } from "../cli/helpers.js";

/** Debian's Chromium (`apt-get install chromium`, `make chromium`); SILK_CHROMIUM names another binary. */
const CHROMIUM = process.env.SILK_CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = join(REPO, "test-artifacts", "console");

let server: ChildProcessWithoutNullStreams | undefined;
let browser: Browser | undefined;
let page: Page;
let base: string;
let ann: string;
/** Uncaught errors of the page's scripts: none may happen. */
const pageErrors: string[] = [];

/** The server's address from its start line (`silk: serving examples on http://127.0.0.1:PORT (...)`). */
function listening(child: ChildProcessWithoutNullStreams): Promise<string> {
  let output = "";
  return new Promise((done, fail) => {
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      const match = /on (http:\/\/[0-9.]+:[0-9]+)/.exec(output);
      if (match !== null) done(match[1]);
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.on("exit", (code) => fail(new Error(`silk serve exited with code ${code} before it listened:\n${output}`)));
  });
}

async function call(name: string, body: unknown): Promise<Record<string, { id: string }>> {
  const response = await fetch(`${base}/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, { id: string }>;
}

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/**
 * Waits for what the page shows to come true: the page answers after a request to the server, which a loaded machine
 * may take seconds to serve (vitest's poll gives up after one). A wait, not a measure: nothing here is timed.
 */
function eventually<T>(read: () => Promise<T>): ReturnType<typeof expect.poll<T>> {
  return expect.poll(read, { timeout: 30_000, interval: 100 });
}

/** Replaces the editor's text as typing would, so that the page's input handler (the check) runs. */
async function typeQuery(text: string): Promise<void> {
  const editor = page.getByTestId("editor");
  await editor.fill("");
  await editor.pressSequentially(text);
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the console's browser test needs Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or \`make chromium\`), or set SILK_CHROMIUM`);
  }
  const built = spawnSync("npx", ["vite", "build", "--config", "console/vite.config.ts", "--logLevel", "warn"], { cwd: REPO, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`the console did not build:\n${built.stdout}${built.stderr}`);
  mkdirSync(ARTIFACTS, { recursive: true });
  server = spawnSilk(["serve", "--project", join(REPO, "examples"), "--port", "0", "--data", join(temporaryDirectory(), "data")]);
  base = await listening(server);
  ann = (await call("CreateUser", { handle: "ann", name: "Ann", age: 31 })).user.id;
  const bob = (await call("CreateUser", { handle: "bob", name: "Bob", age: 42 })).user.id;
  const cleo = (await call("CreateUser", { handle: "cleo", name: "Cleo", age: 27 })).user.id;
  await call("Follow", { follower: bob, followed: ann, since: "2024-05-01" });
  await call("Follow", { follower: cleo, followed: ann, since: "2024-06-01" });
  // Root has no user namespace for Chromium's sandbox; the page is ours and the server is on loopback.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("pageerror", (error) => pageErrors.push(error.message));
  await page.goto(`${base}/console`);
  await page.locator("body[data-ready=true]").waitFor();
  expect(pageErrors).toEqual([]);
});

afterEach(() => {
  expect(pageErrors).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  if (server !== undefined && server.exitCode === null) {
    const exited = new Promise((done) => server!.on("exit", done));
    server.kill("SIGTERM");
    await exited;
  }
  removeTemporaryDirectories();
});

describe("the HelixQL playground", () => {
  it("shows the checker's diagnostic at its line as a query with an error is typed", async () => {
    await typeQuery("QUERY Broken() =>\n    u <- N<Usr>\n    RETURN u");
    const diagnostic = page.getByTestId("diagnostics").locator("li.error");
    await eventually(() => diagnostic.first().textContent()).toMatch(/2:12.*unknown_label.*Usr/);
    await eventually(() => page.getByTestId("gutter").locator(".marked-error").allTextContents()).toEqual(["2\n"]);
    expect(await page.getByTestId("editor-marks").locator("mark.error").allTextContents()).toEqual(["Usr"]);
    await screenshot("playground-diagnostic");
  });

  it("runs a query that checks and shows its rows as a table and as JSON", async () => {
    await typeQuery("QUERY Followers(handle: String) =>\n    u <- N<User>({handle: handle})\n    f <- u::In<Follows>\n    RETURN f");
    await eventually(() => page.getByTestId("diagnostics").textContent()).toBe("checks");
    await eventually(() => page.getByTestId("query-select").inputValue()).toBe("Followers");
    await page.getByTestId("parameters").fill('{"handle": "ann"}');
    await page.getByTestId("run").click();
    const table = page.getByTestId("result-table");
    await eventually(() => table.locator("h3").allTextContents()).toEqual(["f"]);
    await eventually(async () => (await table.locator("tbody tr").allTextContents()).length).toBe(2);
    const headers = await table.locator("th").allTextContents();
    expect(headers).toEqual(expect.arrayContaining(["id", "label", "handle", "name", "age"]));
    const handles = await table.locator(`tbody td:nth-child(${headers.indexOf("handle") + 1})`).allTextContents();
    expect(handles.sort()).toEqual(["bob", "cleo"]);
    await screenshot("playground-table");
    await page.getByTestId("view-json").click();
    const answer = JSON.parse((await page.getByTestId("result-json").textContent()) ?? "") as { f: { handle: string }[] };
    expect(answer.f.map((user) => user.handle).sort()).toEqual(["bob", "cleo"]);
    await screenshot("playground-json");
    await page.getByTestId("view-table").click();
  });

  it("draws the records of an answer as a graph, edges between their nodes", async () => {
    await typeQuery("QUERY Around(handle: String) =>\n    u <- N<User>({handle: handle})\n    e <- u::InE<Follows>\n    f <- u::In<Follows>\n    RETURN u, e, f");
    await eventually(() => page.getByTestId("query-select").inputValue()).toBe("Around");
    await page.getByTestId("run").click();
    await eventually(() => page.getByTestId("result-table").locator("h3").allTextContents()).toEqual(["u", "e", "f"]);
    await page.getByTestId("view-graph").click();
    const graph = page.getByTestId("result-graph");
    await eventually(() => graph.getAttribute("data-nodes")).toBe("3");
    expect(await graph.getAttribute("data-edges")).toBe("2");
    await screenshot("playground-graph");
    await page.getByTestId("view-table").click();
  });

  it("shows a run's error with its code", async () => {
    await page.getByTestId("parameters").fill("{}");
    await page.getByTestId("run").click();
    await eventually(() => page.getByTestId("run-status").textContent()).toMatch(/^missing_parameter: /);
  });
});

describe("the operation-tree playground", () => {
  it("sends a tree to POST /v2/query and shows its answer, and a malformed one's error", async () => {
    await page.getByTestId("tab-tree").click();
    const editor = page.getByTestId("tree-editor");
    const tree = { request_type: "read", query: { read: { entries: [{ query: { name: "users", root: { count: { input: { nodes_where: { predicate: { eq: { left: { property: "$label" }, right: { constant: { string: "User" } } } } } } } } } }], returns: ["users"] } } };
    await editor.fill(JSON.stringify(tree));
    await page.getByTestId("tree-run").click();
    await eventually(() => page.getByTestId("tree-json").textContent()).toBe(JSON.stringify({ users: 3 }, null, 2));
    expect(await page.getByTestId("tree-table").textContent()).toBe("users3");
    await screenshot("tree");
    await editor.fill(JSON.stringify({ request_type: "read", query: { read: { entries: [] } } }));
    await page.getByTestId("tree-run").click();
    await eventually(() => page.getByTestId("tree-status").textContent()).toMatch(/^malformed_tree: /);
  });
});

describe("the graph explorer", () => {
  it("shows a node by its ID, its properties on click, and expands its edges by label", async () => {
    await page.getByTestId("tab-explorer").click();
    expect(await page.getByTestId("editor").isVisible()).toBe(false);
    await page.getByTestId("node-id").fill(ann);
    await page.getByTestId("explore").click();
    const properties = page.getByTestId("properties");
    await eventually(() => properties.textContent()).toMatch(/handleann/);
    await eventually(() => page.getByTestId("graph").getAttribute("data-nodes")).toBe("1");
    const expand = page.getByTestId("expand-in-Follows");
    expect(await expand.textContent()).toBe("← Follows (2)");
    expect(await page.getByTestId("inspector").textContent()).toMatch(/Edges outnone/);
    await expand.click();
    await eventually(() => page.getByTestId("graph").getAttribute("data-nodes")).toBe("3");
    expect(await page.getByTestId("graph").getAttribute("data-edges")).toBe("2");
    expect(await page.getByTestId("explorer-status").textContent()).toBe(`2 Follows edges to ${ann}`);
    await screenshot("explorer");
  });

  it("finds nodes by a property's value, the indexed handle and a number alike", async () => {
    await page.getByTestId("clear-graph").click();
    await page.getByTestId("find-label").fill("User");
    await page.getByTestId("find-property").fill("handle");
    await page.getByTestId("find-value").fill("bob");
    await page.getByTestId("find").click();
    await eventually(() => page.getByTestId("explorer-status").textContent()).toBe("1 User node with handle = bob");
    await eventually(() => page.getByTestId("properties").textContent()).toMatch(/handlebob/);
    expect(await page.getByTestId("graph").getAttribute("data-nodes")).toBe("1");
    await page.getByTestId("find-property").fill("age");
    await page.getByTestId("find-value").fill("27");
    await page.getByTestId("find").click();
    await eventually(() => page.getByTestId("explorer-status").textContent()).toBe("1 User node with age = 27");
    await eventually(() => page.getByTestId("properties").textContent()).toMatch(/handlecleo/);
    expect(await page.getByTestId("graph").getAttribute("data-nodes")).toBe("2");
    await screenshot("explorer-find");
  });

  it("says so when no node has the ID", async () => {
    await page.getByTestId("node-id").fill("999999");
    await page.getByTestId("explore").click();
    await eventually(() => page.getByTestId("inspector").textContent()).toBe("no node has ID 999999");
  });
});

describe("the index page", () => {
  it("lists the project's indexes with their state", async () => {
    await page.getByTestId("tab-indexes").click();
    const rows = page.getByTestId("index-table").locator("tbody tr");
    await eventually(() => rows.allTextContents()).toEqual(expect.arrayContaining([expect.stringMatching(/User.*handle.*active/)]));
    await screenshot("indexes");
  });

  it("reads the build counters again by itself while an index is built, until it is active", async () => {
    // 20,000 posts of a hundred words each: a text index over their bodies builds in ten chunks of 2,000 records, a
    // build of seconds (each chunk tokenizes and writes every word's posting).
    const words = Array.from({ length: 100 }, (_, word) => `word${word % 37}x${word}`).join(" ");
    // A write batch holds at most BATCH_ENTRIES_MAX (1,000) entries.
    for (let batch = 0; batch < 20; batch += 1) {
      const posts = Object.fromEntries(
        Array.from({ length: 1_000 }, (_, post) => [`p${post}`, { add_n: { label: "Post", properties: [["title", { value: { string: `post ${batch}-${post}` } }], ["body", { value: { string: words } }]] } }]),
      );
      const wrote = await fetch(`${base}/v2/query`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(writeTree(posts, [])) });
      expect(wrote.status).toBe(200);
    }
    // What the page read of the new index, each time it asked (it asks by itself: nothing below clicks Refresh).
    const reads: { state: string; entities: number }[] = [];
    page.on("response", (response) => {
      if (!response.url().endsWith("/console/api/indexes")) return;
      void response.json().then((body: { indexes: { label: string; field: string; state: string; entities: number }[] }) => {
        const index = body.indexes.find((candidate) => candidate.label === "Post" && candidate.field === "body");
        if (index !== undefined) reads.push({ state: index.state, entities: index.entities });
      });
    });
    await page.getByTestId("tab-explorer").click();
    const created = await fetch(`${base}/v2/query`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(writeTree({ index: { create_index: { label: "Post", property: "body", type: "text" } } })),
    });
    expect(created.status).toBe(200);
    await page.getByTestId("tab-indexes").click();
    const row = page.getByTestId("index-table").locator("tbody tr", { hasText: /Post.*body/ });
    await eventually(() => row.textContent()).toMatch(/constructing/);
    await eventually(() => page.getByTestId("indexes-status").textContent()).toMatch(/1 being built \(reading again every 0\.5 s\)/);
    await screenshot("indexes-building");
    await expect.poll(() => row.textContent(), { timeout: 120_000, interval: 100 }).toMatch(/active/);
    // Several reads while it was being built, its counters never going back, and the last one past every post.
    const building = reads.filter((read) => read.state === "constructing");
    expect(building.length).toBeGreaterThanOrEqual(2);
    for (let index = 1; index < reads.length; index += 1) expect(reads[index].entities).toBeGreaterThanOrEqual(reads[index - 1].entities);
    // The page's last read (its answer is parsed here after the table showed it).
    await eventually(async () => reads.at(-1)?.state).toBe("active");
    expect(reads.at(-1)!.entities).toBeGreaterThanOrEqual(20_000);
    expect(await page.getByTestId("indexes-status").textContent()).not.toMatch(/being built/);
    await screenshot("indexes-built");
  }, 300_000);
});
