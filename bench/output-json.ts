/**
 * A HelixQL answer's JSON text, two ways (`npx tsx bench/output-json.ts`): written straight from the tree's results
 * (`renderOutputJson`, the body of `POST /<QueryName>`) against building the renamed answer (`renderOutput`) and
 * giving it to `JSON.stringify` with bigints as decimal strings, which is what the route did before. The answers
 * are those of bench/http.ts's project: a point get (one User) and a 1-hop traversal of eleven Users, each record
 * as the executor leaves it (`$id`, `$label`, `ext`, `score`). The two sides alternate in one process in small
 * chunks, several rounds; each round's ratio is text / copy time per answer, and the median is reported.
 *
 * Options: `--rounds <n>` (default 9), `--iterations <n>` per side and round (default 200000). Exit status 2 with
 * `--strict` when the 1-hop answer's median ratio is above RATIO_MAX.
 */
import { parseArgs } from "node:util";
import { renderOutput, renderOutputJson } from "../protocol/helixql/output.js";
import type { QueryOutput } from "../protocol/helixql/query.js";
import { formatMachine, machineInfo } from "./report.js";

/** Writing the text directly exists to be faster than the copy; it may not become slower than it. */
const RATIO_MAX = 1;
/** Rounds are made of this many alternating chunks per side, so load from other processes falls on both alike. */
const CHUNKS_PER_ROUND = 20;
const ONE_HOP_RECORDS = 11;

const { values: options } = parseArgs({
  options: { rounds: { type: "string", default: "9" }, iterations: { type: "string", default: "200000" }, strict: { type: "boolean", default: false } },
});
const rounds = Number(options.rounds);
const iterations = Number(options.iterations);

type Render = (output: QueryOutput, result: Readonly<Record<string, unknown>>) => string;

const viaText: Render = renderOutputJson;
const viaCopy: Render = (output, result) =>
  JSON.stringify(renderOutput(output, result), (_key, value: unknown) => (typeof value === "bigint" ? value.toString(10) : value)) ?? "null";

function user(index: number): Record<string, unknown> {
  return { $id: String(4_294_967_296 + index * 7_919), $label: "User", ext: 1_000 + index, score: index * 3 };
}

const cases: readonly { readonly name: string; readonly output: QueryOutput; readonly result: Readonly<Record<string, unknown>> }[] = [
  { name: "point get (one User)", output: { kind: "keyed", fields: [["user", { kind: "entry", entry: "user", cardinality: "one" }]] }, result: { user: [user(0)] } },
  {
    name: `1-hop (${ONE_HOP_RECORDS} Users)`,
    output: { kind: "keyed", fields: [["friends", { kind: "entry", entry: "friends", cardinality: "many" }]] },
    result: { friends: Array.from({ length: ONE_HOP_RECORDS }, (_, index) => user(index)) },
  },
];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Nanoseconds per answer over `count` answers; the lengths are summed so the work cannot be dropped. */
function timed(render: Render, output: QueryOutput, result: Readonly<Record<string, unknown>>, count: number): number {
  let length = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i += 1) length += render(output, result).length;
  const elapsed = Number(process.hrtime.bigint() - start);
  if (length === 0) throw new Error("no text was written");
  return elapsed / count;
}

interface Comparison {
  readonly name: string;
  readonly textNs: number;
  readonly copyNs: number;
  readonly ratio: number;
}

function compare(name: string, output: QueryOutput, result: Readonly<Record<string, unknown>>): Comparison {
  const text = viaText(output, result);
  if (text !== viaCopy(output, result)) throw new Error(`${name}: the two texts differ:\n${text}\n${viaCopy(output, result)}`);
  timed(viaText, output, result, iterations);
  timed(viaCopy, output, result, iterations);
  const chunk = Math.max(1, Math.floor(iterations / CHUNKS_PER_ROUND));
  const texts: number[] = [];
  const copies: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    let textSum = 0;
    let copySum = 0;
    for (let i = 0; i < CHUNKS_PER_ROUND; i += 1) {
      // Alternate which side goes first, so neither always runs on a warmer machine.
      if (i % 2 === 0) {
        textSum += timed(viaText, output, result, chunk);
        copySum += timed(viaCopy, output, result, chunk);
      } else {
        copySum += timed(viaCopy, output, result, chunk);
        textSum += timed(viaText, output, result, chunk);
      }
    }
    texts.push(textSum / CHUNKS_PER_ROUND);
    copies.push(copySum / CHUNKS_PER_ROUND);
    ratios.push(textSum / copySum);
  }
  return { name, textNs: median(texts), copyNs: median(copies), ratio: median(ratios) };
}

const results = cases.map(({ name, output, result }) => compare(name, output, result));
console.log(`output-json: ${rounds} rounds, median per answer\n${formatMachine(machineInfo("TypeScript sources (tsx)"))}`);
for (const { name, textNs, copyNs, ratio } of results) {
  console.log(`  ${name.padEnd(24)} text ${(textNs / 1000).toFixed(2)} µs  copy + stringify ${(copyNs / 1000).toFixed(2)} µs  text/copy ${ratio.toFixed(3)}`);
}
const oneHop = results[1];
console.log(`1-hop: text/copy ${oneHop.ratio.toFixed(3)} (target at most ${RATIO_MAX})`);
if (options.strict && oneHop.ratio > RATIO_MAX) process.exitCode = 2;
