/**
 * The console's partition page (docs/CONSOLE.md) on `silk serve --cluster`, in a real browser: a real nats-server,
 * two partitions × two `silk partition` processes and `silk serve --cluster` on a free port, all started here; the
 * page is built first (vite) and opened in Debian's Chromium with playwright-core, as test/console/console.test.ts
 * does. `GET /console/api/partitions` answers each partition's leader, term, log, ranges and each replica's applied
 * sequence and lag, what `silk cluster status` prints; the page shows them in a table and reads them again by
 * itself while shown, so a write's new log sequence appears without a click. A screenshot is left in
 * test-artifacts/console/.
 */
import { once } from "node:events";
import { spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLUSTER_FORMAT, writeClusterManifest } from "../../cluster/nats/manifest.js";
import { addUser, REPO, removeTemporaryDirectories, runSilk, spawnSilk, temporaryDirectory, write } from "../cli/helpers.js";
import { freshClusterName, startTestNats, stopTestNats, type TestNats } from "../helpers/cluster.js";

const CHROMIUM = process.env.SILK_CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = join(REPO, "test-artifacts", "console");

let nats: TestNats | undefined;
let browser: Browser | undefined;
const processes: ChildProcessWithoutNullStreams[] = [];
let dir: string;
let base: string;

/** The server's address from its start line (`silk: serving ... on http://127.0.0.1:PORT (...)`). */
function listening(child: ChildProcessWithoutNullStreams): Promise<string> {
  let output = "";
  return new Promise((done, fail) => {
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      const match = /on (http:\/\/[0-9.]+:[0-9]+)/.exec(output);
      if (match !== null) done(match[1]);
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.on("exit", (code) => fail(new Error(`silk serve --cluster exited with code ${code} before it listened:\n${output}`)));
  });
}

interface PartitionJson {
  partition: number;
  leader: string | null;
  term: number | null;
  log: { first: number; last: number; entries: number; bytes: number } | null;
  ranges: { first: string; last: string }[];
  replicas: { replica: string; applied: number | null; lag: number | null }[];
}

async function partitions(): Promise<{ cluster: string; mapVersion: number; pending: number | null; partitions: PartitionJson[] }> {
  const response = await fetch(`${base}/console/api/partitions`);
  expect(response.status).toBe(200);
  return (await response.json()) as { cluster: string; mapVersion: number; pending: number | null; partitions: PartitionJson[] };
}

function eventually<T>(read: () => Promise<T>): ReturnType<typeof expect.poll<T>> {
  return expect.poll(read, { timeout: 30_000, interval: 100 });
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the console's browser test needs Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or \`make chromium\`), or set SILK_CHROMIUM`);
  }
  const built = spawnSync("npx", ["vite", "build", "--config", "console/vite.config.ts", "--logLevel", "warn"], { cwd: REPO, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`the console did not build:\n${built.stdout}${built.stderr}`);
  mkdirSync(ARTIFACTS, { recursive: true });
  nats = await startTestNats(1);
  dir = temporaryDirectory();
  writeClusterManifest(dir, { format: CLUSTER_FORMAT, name: freshClusterName(), nats: nats.urls, partitions: 2, replicas: 2, project: join(REPO, "examples"), port: 0 });
  for (const [partition, replica] of [[0, 0], [0, 1], [1, 0], [1, 1]]) {
    processes.push(spawnSilk(["partition", "--dir", dir, "--partition", String(partition), "--replica", String(replica)]));
  }
  const server = spawnSilk(["serve", "--cluster", dir, "--port", "0"]);
  processes.push(server);
  base = await listening(server);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  for (const child of processes.reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    child.kill("SIGTERM");
    await once(child, "exit");
  }
  if (nats !== undefined) await stopTestNats(nats);
  removeTemporaryDirectories();
}, 60_000);

describe("the partition page on silk serve --cluster", () => {
  it("GET /console/api/partitions answers each partition's leader, term, log, ranges and replicas, as silk cluster status prints them", async () => {
    // Every partition led, and every replica caught up (a follower starts from nothing and applies the log).
    await eventually(async () => (await partitions()).partitions.every((partition) => partition.leader !== null && partition.replicas.every((replica) => replica.lag === 0))).toBe(true);
    const status = await partitions();
    expect(status).toMatchObject({ mapVersion: expect.any(Number), pending: null });
    expect(status.partitions.map((partition) => partition.partition)).toEqual([0, 1]);
    for (const partition of status.partitions) {
      expect(partition.leader).toMatch(/^r[01]$/);
      expect(partition.term).toBeGreaterThanOrEqual(1);
      expect(partition.log).toMatchObject({ first: expect.any(Number), last: expect.any(Number), entries: expect.any(Number), bytes: expect.any(Number) });
      expect(partition.replicas.map((replica) => replica.replica)).toEqual(["r0", "r1"]);
      for (const replica of partition.replicas) expect(replica.applied).toBe(partition.log!.last);
      expect(partition.ranges.length).toBeGreaterThan(0);
    }
    // The same figures as the CLI's, read the same way.
    const printed = await runSilk(["cluster", "status", "--dir", dir]);
    expect(printed.code).toBe(0);
    for (const partition of status.partitions) {
      const line = `p${partition.partition}: leader ${partition.leader} (term ${partition.term}), log last sequence ${partition.log!.last}, applied r0=${partition.log!.last} r1=${partition.log!.last}`;
      expect(printed.stdout).toContain(line);
      expect(printed.stdout).toContain(`  owns ${partition.ranges.map((range) => `${range.first}..${range.last}`).join(" ")}`);
    }
  });

  it("shows leaders, terms, logs, ranges and each replica's lag, and reads them again while shown", async () => {
    const page = await browser!.newPage({ viewport: { width: 1400, height: 700 } });
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
    try {
      await page.goto(`${base}/console`);
      await page.locator("body[data-ready=true]").waitFor();
      await page.getByTestId("tab-partitions").click();
      const rows = page.getByTestId("partition-table").locator("tbody tr");
      await eventually(() => rows.count()).toBe(2);
      const status = await partitions();
      for (const partition of status.partitions) {
        const row = page.locator(`[data-testid=partition-table] tr[data-partition="${partition.partition}"]`);
        const cells = row.locator("td");
        await eventually(() => cells.nth(1).textContent()).toBe(partition.leader);
        expect(await cells.nth(2).textContent()).toBe(String(partition.term));
        expect(await cells.nth(5).textContent()).toBe(partition.ranges.map((range) => `${range.first}..${range.last}`).join(" "));
        expect(await row.locator(`[data-replica="${partition.leader}"]`).textContent()).toMatch(/^r[01] \(leader\): \d+, lag 0$/);
      }
      await page.screenshot({ path: join(ARTIFACTS, "partitions.png"), fullPage: true });

      // A write through the server: both partitions' logs grow, and the page shows it by itself.
      const before = status.partitions.map((partition) => partition.log!.last);
      const response = await fetch(`${base}/v2/query`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(write({ a: addUser("Ada", "ada"), b: addUser("Bo", "bo") })) });
      expect(response.status).toBe(200);
      for (const [index, partition] of status.partitions.entries()) {
        const logCell = page.locator(`[data-testid=partition-table] tr[data-partition="${partition.partition}"] td`).nth(3);
        await eventually(async () => Number(/^\d+\.\.(\d+) /.exec((await logCell.textContent()) ?? "")?.[1])).toBeGreaterThan(before[index]);
      }
      expect(await page.getByTestId("partitions-status").textContent()).toMatch(/^cluster \S+: map version \d+, 2 partitions, at /);
      expect(pageErrors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
