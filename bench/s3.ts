/**
 * The object-storage benchmark (`make bench-s3`, docs/STORAGE.md): what a commit costs on S3 storage next to local
 * disk, side by side in one run on the same machine, and how long a fresh cache takes to restore. The bucket is the
 * test server (Ceph's RADOS Gateway on loopback, test/helpers/s3-server.ts): a PUT costs what that gateway costs on
 * this machine, not what AWS S3 costs over a network (typically 10-30 ms more per PUT), so the ratios matter more
 * than the milliseconds.
 *
 * Rows: `db.run` of one AddN per transaction, 1 writer then 16 in flight, on `{ disk }`, on `{ s3 }` with durability
 * `object` (acknowledged once its segment is stored) and `local` (acknowledged on local fsync). Then restore: a
 * database of `--restore-nodes` nodes written in transactions of 100, opened by a read-only follower on an empty
 * cache, from segments only and from a snapshot (taken at the writer's close).
 *
 * Options: `--writes <n>` per row (default 400), `--restore-nodes <n>` (default 20000).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { Database, type Storage } from "../runtime/embedded.js";
import { startS3Server, type S3TestServer } from "../test/helpers/s3-server.js";
import { addN, allNodes, count, entry, readOne, write, writeOne } from "../test/helpers/tree.js";
import { formatMachine, machineInfo } from "./report.js";

const IN_FLIGHT = 16;
const BUCKET = "silk-bench";
const scratch = mkdtempSync(join(tmpdir(), "silk-bench-s3-"));
let caches = 0;

function addDoc(i: number): unknown {
  return writeOne(addN("Doc", { i }));
}

function addDocs(first: number, count: number): unknown {
  return write(Array.from({ length: count }, (_, k) => entry(`d${k}`, addN("Doc", { i: first + k }))), []);
}

function s3(server: S3TestServer, prefix: string, extra: Record<string, unknown> = {}): Storage {
  caches += 1;
  return { s3: { bucket: BUCKET, prefix, endpoint: server.endpoint, region: server.region, credentials: server.credentials, cacheDir: join(scratch, `cache-${caches}`), ...extra } };
}

/** Writes `count` transactions with `writers` in flight; per-commit latencies in ms, and the commits per second. */
async function commits(db: Database, count: number, writers: number): Promise<{ p50: number; p99: number; perSecond: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < count) {
        const i = next++;
        const begun = performance.now();
        await db.run(addDoc(i));
        latencies.push(performance.now() - begun);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { p50: at(0.5), p99: at(0.99), perSecond: count / seconds };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { writes: { type: "string", default: "400" }, "restore-nodes": { type: "string", default: "20000" } } });
  const writes = Number(values.writes);
  const restoreNodes = Number(values["restore-nodes"]);
  process.stdout.write(`${formatMachine(machineInfo("sources (tsx)"))}\n`);
  const server = await startS3Server();
  try {
    const client = new S3Client({ endpoint: server.endpoint, region: server.region, credentials: server.credentials, forcePathStyle: true });
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    client.destroy();
    const rows: [string, Storage][] = [
      ["disk", { disk: join(scratch, "disk") }],
      ["s3 object", s3(server, "commit-object")],
      ["s3 local", s3(server, "commit-local", { durability: "local" })],
    ];
    process.stdout.write(`\ncommits: ${writes} transactions of one AddN per row\n`);
    process.stdout.write(`${"storage".padEnd(10)} ${"writers".padStart(7)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)} ${"commits/s".padStart(10)}\n`);
    for (const [name, storage] of rows) {
      const db = await Database.open({ storage });
      try {
        for (const writers of [1, IN_FLIGHT]) {
          const result = await commits(db, writes, writers);
          process.stdout.write(`${name.padEnd(10)} ${String(writers).padStart(7)} ${result.p50.toFixed(2).padStart(8)} ${result.p99.toFixed(2).padStart(8)} ${result.perSecond.toFixed(0).padStart(10)}\n`);
        }
      } finally {
        await db.close();
      }
    }
    process.stdout.write(`\nrestore: ${restoreNodes} nodes in transactions of 100, opened read-only on an empty cache\n`);
    for (const [name, snapshotEverySegments] of [["segments only", 1_000_000], ["from a snapshot", 1]] as const) {
      const prefix = `restore-${snapshotEverySegments}`;
      const writer = await Database.open({ storage: s3(server, prefix, { snapshotEverySegments }) });
      for (let first = 0; first < restoreNodes; first += 100) await writer.run(addDocs(first, 100));
      await writer.close();
      const started = performance.now();
      const follower = await Database.open({ storage: s3(server, prefix), mode: "readonly" });
      const ms = performance.now() - started;
      const held = (await follower.run(readOne(count(allNodes())))) as { r: number };
      await follower.close();
      process.stdout.write(`${name.padEnd(16)} ${ms.toFixed(0).padStart(7)} ms  (${held.r} nodes)\n`);
    }
  } finally {
    await server.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
