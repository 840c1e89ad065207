/**
 * `make soak-readers`: acknowledged writes against read-only processes SIGKILLed at random moments (not part of
 * `make test`; its figures go in the issue notes). For SOAK_SECONDS (default 240) three writers in this process
 * create users and a Follows edge from each writer's previous user to its new one on a disk database, remembering
 * every acknowledged write, while three loops each start a process that opens the directory read-only and reads in a
 * loop, and SIGKILL it at a random moment (while it opens, or reads). Then the directory is opened read-only and every
 * acknowledged user and edge must be there, with no ID missing below the highest (an ID is handed out to a write
 * only when it commits here, so a missing one is a lost write).
 *
 * With lmdb-js's default overlappingSync, one of three such runs (27 to 61 kills each) lost an acknowledged write, as
 * the 10-minute `make soak` once lost an edge (issue 20); writers now open without it: see node/store/partition-store.ts.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { open } from "../../runtime/embedded.js";

const REPO = resolve(import.meta.dirname, "../..");
const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 240);
const WRITERS = 3;
const KILLERS = 3;
/** How long a reader may take to say it reads before it is killed anyway (it may be killed while opening). */
const READER_START_MS_MAX = 3_000;
const SCHEMA = [
  "N::User { name: String }",
  "E::Follows { From: User, To: User }",
  "QUERY Add(name: String) => u <- AddN<User>({name: name}) RETURN u::ID",
  'QUERY Follow(a: ID, b: ID) => AddE<Follows>::From(a)::To(b) RETURN "ok"',
].join("\n");

const directory = mkdtempSync(join(tmpdir(), "silk-dead-readers-"));
const deadline = Date.now() + SOAK_SECONDS * 1000;
const running = (): boolean => Date.now() < deadline;
const users: string[] = [];
const edges: string[] = [];
let kills = 0;

async function writer(db: Awaited<ReturnType<typeof open>>, index: number): Promise<void> {
  let previous: string | undefined;
  for (let i = 0; running(); i++) {
    const id = ((await db.query("Add", { name: `w${index}-${i}` })) as { u: string }).u;
    users.push(id);
    if (previous !== undefined) {
      await db.query("Follow", { a: previous, b: id });
      edges.push(`${previous}>${id}`);
    }
    previous = id;
  }
}

async function killer(): Promise<void> {
  await sleep(Math.random() * 500);
  const script = `
    import { open } from ${JSON.stringify(join(REPO, "dist", "index.js"))};
    const db = await open({ storage: { disk: ${JSON.stringify(directory)} }, mode: "readonly" });
    const all = { request_type: "read", query: { read: { entries: [{ query: { name: "n", root: { count: { input: { nodes: { reference: "all" } } } } } }], returns: ["n"] } } };
    console.log("reading");
    for (;;) await db.run(all);`;
  while (running()) {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    await Promise.race([new Promise((done) => child.stdout!.once("data", done)), sleep(READER_START_MS_MAX)]);
    await sleep(Math.random() * 200);
    child.kill("SIGKILL");
    await new Promise((done) => child.once("exit", done));
    kills += 1;
  }
}

async function main(): Promise<void> {
  console.log(`soak-readers: ${SOAK_SECONDS} s on ${directory}, ${WRITERS} writers, ${KILLERS} loops of read-only processes SIGKILLed`);
  const db = await open({ storage: { disk: directory }, schema: SCHEMA });
  await Promise.all([...Array.from({ length: WRITERS }, (_, index) => writer(db, index)), ...Array.from({ length: KILLERS }, () => killer())]);
  await db.close();
  const reader = await open({ storage: { disk: directory }, mode: "readonly" });
  const stored = (await reader.run({
    request_type: "read",
    query: { read: { entries: [{ query: { name: "n", root: { nodes: { reference: "all" } } } }, { query: { name: "e", root: { edges: { reference: "all" } } } }], returns: ["n", "e"] } },
  })) as { n: { $id: string }[]; e: { $id: string; $from: string; $to: string }[] };
  await reader.close();
  const storedUsers = new Set(stored.n.map((user) => user.$id));
  const storedEdges = new Set(stored.e.map((edge) => `${edge.$from}>${edge.$to}`));
  const ids = new Set([...stored.n, ...stored.e].map((record) => BigInt(record.$id)));
  const highest = [...ids].reduce((a, b) => (a > b ? a : b), 0n);
  const failures = [
    ...users.filter((id) => !storedUsers.has(id)).map((id) => `acknowledged user ${id} is missing`),
    ...edges.filter((pair) => !storedEdges.has(pair)).map((pair) => `acknowledged edge ${pair} is missing`),
  ];
  const gaps = Number(highest) - ids.size;
  if (gaps !== 0) failures.push(`${gaps} IDs below the highest (${highest}) hold no record`);
  console.log(JSON.stringify({ seconds: SOAK_SECONDS, kills, acknowledgedUsers: users.length, acknowledgedEdges: edges.length, storedUsers: storedUsers.size, storedEdges: storedEdges.size }));
  if (failures.length > 0) {
    console.log(`the database is kept for a look: ${directory}\nsoak-readers FAILED:\n${failures.join("\n")}`);
    process.exit(1);
  }
  rmSync(directory, { recursive: true, force: true });
  console.log("soak-readers passed");
}

await main();
