/**
 * The input checks of test/engine/input-edge.test.ts and index-long-keys.test.ts over HTTP, against a real gateway:
 * a literal nested 10,000 deep and a lone surrogate (a `\ud800` escape in the JSON text) answer 400 `invalid_value`
 * (not 500 `internal`) and write nothing; a 100 KB string in a UNIQUE INDEX is written, and its duplicate is 409.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { listeningGateway } from "../helpers/gateway.js";
import { addN, allNodes, count, readOne, writeOne } from "../helpers/tree.js";

const SCHEMA = `
N::Doc { UNIQUE INDEX key: String, body: [String] }
QUERY AddDoc(key: String) => d <- AddN<Doc>({key: key}) RETURN d
`;

let database: Database;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  database = await Database.open({ storage: "memory", schema: SCHEMA });
  ({ app, base } = await listeningGateway(database));
});

afterAll(async () => {
  await app?.close();
  await database?.close();
});

function post(path: string, body: string): Promise<Response> {
  return fetch(`${base}${path}`, { method: "POST", body, headers: { "content-type": "application/json" } });
}

async function expectError(response: Response, status: number, code: string): Promise<void> {
  expect({ status: response.status, body: (await response.json()) as unknown }).toMatchObject({ status, body: { error: code } });
}

async function docCount(): Promise<number> {
  const response = await post("/v2/query", JSON.stringify(readOne(count(allNodes()))));
  return ((await response.json()) as { r: number }).r;
}

describe("values at the edge over HTTP", () => {
  it("answers 400 invalid_value for a literal nested 10,000 deep, and writes nothing", async () => {
    // Written as text: JSON.stringify of a value this deep overflows the test's own stack.
    const request = JSON.stringify(writeOne({ add_n: { label: "Doc", properties: [["body", { value: "LITERAL" }]] } }));
    const literals = ['{"array":['.repeat(10_000) + '{"string":"x"}' + "]}".repeat(10_000), '{"object":{"k":'.repeat(10_000) + '{"string":"x"}' + "}}".repeat(10_000)];
    for (const literal of literals) {
      await expectError(await post("/v2/query", request.replace('"LITERAL"', literal)), 400, "invalid_value");
    }
    expect(await docCount()).toBe(0);
  });

  it("answers 400 invalid_value for a lone surrogate, on /v2/query and a query route, and writes nothing", async () => {
    const tree = JSON.stringify(writeOne(addN("Doc", { key: "KEY" }))).replace("KEY", "a\\ud800");
    expect(tree).toContain("\\ud800");
    await expectError(await post("/v2/query", tree), 400, "invalid_value");
    await expectError(await post("/AddDoc", '{"key": "a\\udc00"}'), 400, "invalid_value");
    expect(await docCount()).toBe(0);
  });

  it("writes a 100 KB string in a UNIQUE INDEX, and answers 409 for its duplicate", async () => {
    const key = "k".repeat(100_000);
    expect((await post("/AddDoc", JSON.stringify({ key }))).status).toBe(200);
    await expectError(await post("/AddDoc", JSON.stringify({ key })), 409, "unique_violation");
    expect(await docCount()).toBe(1);
  });
});
