/**
 * The `/v2/query` body parse, old against new (`npx tsx bench/json-parse.ts`): fastify's JSON parser alone (what the
 * route used before), and the route's parser now (fastify's, then a scan for a run of 16 digits, and a lossless
 * parse only when there is an integer beyond 2^53; gateway/request-json.ts). Both parse the point-get operation
 * tree of the graph benchmark (bench/silk-side.ts) as its text arrives over HTTP, alone and followed by what the
 * route does next with it, decoding and running it on an embedded database holding the node. The two sides
 * alternate in one process in small chunks, several rounds; each round's ratio is new / old time per request, and
 * the median is reported. The lossless parse of a body that needs it is measured too, for the record (no target).
 *
 * Options: `--rounds <n>` (default 9), `--iterations <n>` per side and round (default 20000). Exit status 2 with
 * `--strict` when the median ratio of the point get is above RATIO_MAX.
 */
import { parseArgs } from "node:util";
import Fastify, { type FastifyRequest } from "fastify";
import { open } from "../runtime/embedded.js";
import { stringifyJson } from "../gateway/json.js";
import { mayHoldUnsafeInteger, parseLossless } from "../gateway/request-json.js";
import { buildTree } from "./silk-side.js";
import { formatMachine, machineInfo } from "./report.js";

/** The target: the new parse may cost at most 5% more on the point-get tree. */
const RATIO_MAX = 1.05;

type Parse = (text: string) => unknown;

const { values: options } = parseArgs({
  options: { rounds: { type: "string", default: "9" }, iterations: { type: "string", default: "20000" }, strict: { type: "boolean", default: false } },
});
const rounds = Number(options.rounds);
const iterations = Number(options.iterations);

const app = Fastify();
const fastifyParser = app.getDefaultJsonParser("error", "error");
const request = {} as FastifyRequest;

/** fastify's parser as the route calls it; its callback runs synchronously. */
const oldParse: Parse = (text) => {
  let parsed: unknown;
  fastifyParser(request, text, (error, body) => {
    if (error !== null) throw error;
    parsed = body;
  });
  return parsed;
};

/** The route's parser now (gateway/query-v2.ts): fastify's, then the lossless parse where an integer needs it. */
const newParse: Parse = (text) => {
  const parsed = oldParse(text);
  return mayHoldUnsafeInteger(text) ? parseLossless(text) : parsed;
};

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Nanoseconds per call of `work` over `iterations` calls. */
async function timed(work: () => unknown, count: number): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i += 1) await work();
  return Number(process.hrtime.bigint() - start) / count;
}

interface Comparison {
  readonly name: string;
  readonly oldNs: number;
  readonly newNs: number;
  readonly ratio: number;
}

/** Rounds are made of this many alternating chunks per side, so load from other processes falls on both alike. */
const CHUNKS_PER_ROUND = 20;

async function compare(name: string, run: (parse: Parse) => () => unknown, count: number): Promise<Comparison> {
  const oldWork = run(oldParse);
  const newWork = run(newParse);
  await timed(oldWork, count);
  await timed(newWork, count);
  const chunk = Math.max(1, Math.floor(count / CHUNKS_PER_ROUND));
  const olds: number[] = [];
  const news: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    let oldSum = 0;
    let newSum = 0;
    for (let i = 0; i < CHUNKS_PER_ROUND; i += 1) {
      // Alternate which side goes first, so neither always runs on a warmer machine.
      if (i % 2 === 0) {
        oldSum += await timed(oldWork, chunk);
        newSum += await timed(newWork, chunk);
      } else {
        newSum += await timed(newWork, chunk);
        oldSum += await timed(oldWork, chunk);
      }
    }
    olds.push(oldSum / CHUNKS_PER_ROUND);
    news.push(newSum / CHUNKS_PER_ROUND);
    ratios.push(newSum / oldSum);
  }
  return { name, oldNs: median(olds), newNs: median(news), ratio: median(ratios) };
}

const pointGet = JSON.stringify({ ...(buildTree("point_get") as object), parameters: { start: "1" } });
const bigIntegers = JSON.stringify({
  request_type: "read",
  query: { read: { entries: [{ query: { name: "n", root: { has: { input: { nodes: { reference: "all" } }, property: "n", value: { i64: 0 } } } } }], returns: ["n"] } },
}).replace('{"i64":0}', '{"i64":9223372036854775000}');

const db = await open({ storage: "memory", schema: { file: "bench.hx", text: "N::User { ext: I64, score: I64 }" } });
try {
  await db.run({ request_type: "write", query: { write: { entries: [{ query: { root: { add_n: { label: "User", properties: [["ext", { value: { i64: 7 } }], ["score", { value: { i64: 7 } }]] } } } }] } } });
  const answer = stringifyJson(await db.run(newParse(pointGet))) ?? "";
  if (!answer.includes('"ext":7')) throw new Error(`the point get answered ${answer}, not the node`);
  const results = [
    await compare("point-get tree, parse only", (parse) => () => parse(pointGet), iterations),
    await compare("point-get tree, parse + db.run", (parse) => () => db.run(parse(pointGet)), Math.max(1, Math.floor(iterations / 4))),
    await compare("tree with an i64 beyond 2^53, parse only (lossless path)", (parse) => () => parse(bigIntegers), iterations),
  ];
  console.log(`json-parse: ${rounds} rounds, median per request\n${formatMachine(machineInfo("TypeScript sources (tsx)"))}`);
  for (const { name, oldNs, newNs, ratio } of results) {
    console.log(`  ${name.padEnd(58)} old ${(oldNs / 1000).toFixed(2)} µs  new ${(newNs / 1000).toFixed(2)} µs  new/old ${ratio.toFixed(3)}`);
  }
  const pointRatio = results[1].ratio;
  console.log(`point get: new/old ${pointRatio.toFixed(3)} (target at most ${RATIO_MAX})`);
  if (options.strict && pointRatio > RATIO_MAX) process.exitCode = 2;
} finally {
  await db.close();
  await app.close();
}
