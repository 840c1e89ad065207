/**
 * `silk import` of `V::` records (JSONL rows of kind "vector", docs/IMPORT.md): real child processes writing real LMDB
 * directories, checked by opening the directory afterwards. The vectors are real data: the first MNIST test images
 * (../shared/datasets/mnist-test-vectors, 784 pixels each), imported across several batches with keys that edges of
 * later batches name; a search for an imported image finds it first. Bad input: a vector of another length than its
 * type's dimension stops the import at its file and line with `vector_dimension_mismatch` and writes nothing of its
 * batch; a row without a vector array is `import_bad_row`.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MNIST_FOLDER, missingMnistFiles, readMnist } from "../../bench/vectors-mnist.js";
import { countRequest, queryDirectory, removeTemporaryDirectories, runSilk, temporaryDirectory } from "./helpers.js";

afterAll(removeTemporaryDirectories);

const SCHEMA = `
V::Digit(dimension: 784, metric: euclidean) { row: I64, digit: I64 }
N::Sheet { name: String }
E::Shows { From: Sheet, To: Digit }
`;
const ROWS = 60;
const allVectors = { vectors: { reference: "all" } };
const digitsOf = (name: string): unknown => ({
  out: { input: { has: { input: { has_label: { input: { nodes: { reference: "all" } }, label: "Sheet" } }, property: "name", value: { string: name } } }, label: "Shows" },
});
const recordsOf = (step: unknown): unknown => ({ request_type: "read", query: { read: { entries: [{ query: { name: "r", root: step } }], returns: ["r"] } } });

function digitRow(row: number, pixels: Float32Array, digit: number, key?: string): string {
  return JSON.stringify({ kind: "vector", label: "Digit", ...(key === undefined ? {} : { key }), vector: Array.from(pixels), props: { row, digit } });
}

describe.skipIf(missingMnistFiles().length > 0)(`silk import: V:: vectors from JSONL (${MNIST_FOLDER})`, () => {
  const mnist = readMnist();

  it("loads vectors across batches, with keys that edges of later batches name, and finds them by search", async () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "schema.hx"), SCHEMA);
    const lines = mnist.base.slice(0, ROWS).map((pixels, row) => digitRow(row, pixels, mnist.baseDigits[row], row % 20 === 0 ? `d${row}` : undefined));
    lines.push('{"kind":"node","label":"Sheet","key":"s1","props":{"name":"first"}}');
    for (const row of [0, 20, 40]) lines.push(JSON.stringify({ kind: "edge", label: "Shows", from: "s1", to: `d${row}` }));
    writeFileSync(join(dir, "digits.jsonl"), lines.join("\n"));
    const data = join(dir, "data");
    const run = await runSilk(["import", "--data", data, "--schema", join(dir, "schema.hx"), "--batch-size", "25", join(dir, "digits.jsonl")]);
    expect(run.stderr).not.toMatch(/error|import_bad_row|mismatch/);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/imported 1 nodes, 60 vectors and 3 edges/);
    expect(await queryDirectory(data, countRequest({ vectors: allVectors }))).toEqual({ vectors: ROWS });
    // The edges of the last batch reached the keyed vectors of the first, second and third batches.
    const shown = (await queryDirectory(data, recordsOf(digitsOf("first")))).r as { row: number }[];
    expect(shown.map((digit) => Number(digit.row)).sort((a, b) => a - b)).toEqual([0, 20, 40]);
    // Each imported image is its own nearest neighbour, with the pixels it was imported with.
    for (const row of [3, 31, 59]) {
      const search = { vector_search_vectors: { label: "Digit", query: { value: { f64_array: Array.from(mnist.base[row]) } }, k: { value: { i64: 2 } } } };
      const hits = (await queryDirectory(data, recordsOf(search))).r as { row: number; $distance: number }[];
      expect(Number(hits[0].row)).toBe(row);
      expect(hits[0].$distance).toBe(0);
    }
  }, 120_000);

  it("stops at a vector of another dimension with a stable code, writing nothing of its batch", async () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "schema.hx"), SCHEMA);
    const lines = mnist.base.slice(0, 5).map((pixels, row) => digitRow(row, pixels, mnist.baseDigits[row]));
    lines[3] = digitRow(3, mnist.base[3].subarray(0, 783), mnist.baseDigits[3]);
    const file = join(dir, "bad.jsonl");
    writeFileSync(file, lines.join("\n"));
    const data = join(dir, "data");
    const run = await runSilk(["import", "--data", data, "--schema", join(dir, "schema.hx"), file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${file}:4: vector_dimension_mismatch:`);
    expect(run.stderr).toContain("nothing of the failing batch was written");
    expect(existsSync(data)).toBe(true);
    expect(await queryDirectory(data, countRequest({ vectors: allVectors }))).toEqual({ vectors: 0 });
  }, 60_000);

  it("refuses a vector row without a vector array as a bad row", async () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, "schema.hx"), SCHEMA);
    const file = join(dir, "bad.jsonl");
    writeFileSync(file, [digitRow(0, mnist.base[0], mnist.baseDigits[0]), '{"kind":"vector","label":"Digit","vector":"0,1,2","props":{"row":1}}'].join("\n"));
    const data = join(dir, "data");
    const run = await runSilk(["import", "--data", data, "--schema", join(dir, "schema.hx"), file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${file}:2: import_bad_row: a vector row needs "vector", a non-empty array of numbers`);
    expect(await queryDirectory(data, countRequest({ vectors: allVectors }))).toEqual({ vectors: 0 });
  }, 60_000);
});
