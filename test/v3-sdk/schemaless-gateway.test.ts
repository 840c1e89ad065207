/**
 * HelixDB's own v3 TypeScript SDK against a schemaless `silk gateway` (no `--project`): every rule of the hosted
 * form holds as with a project. The SDK's client sends its key as `Authorization: Bearer`; without a key, with an
 * unknown one, or while the database is disabled, nothing runs and no token is drawn; each admitted `/v2/query`
 * (a tree the engine refuses included) draws one token, and past the burst the SDK sees 429 `rate_limited` with
 * `Retry-After`. `/health` is open, `/introspect` needs the key, and a path that is no route is `route_not_found`
 * only after the key was checked.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setDisabled } from "../../gateway/hosted/tenant-files.js";
import { countRequest, nodesLabeled, queryDirectory, removeTemporaryDirectories } from "../cli/helpers.js";
import { remoteError, startSchemalessGateway, treeRequest, type SdkGateway } from "./harness.js";

/** The bucket of this suite: four admitted `/v2/query` requests, and no refill within the test's time. */
const BURST = 4;
const RATE_PER_SECOND = 0.001;

let gateway: SdkGateway;

beforeAll(async () => {
  gateway = await startSchemalessGateway(["--rate", String(RATE_PER_SECOND), "--burst", String(BURST)]);
});

afterAll(async () => {
  expect(await gateway.stop()).toBe(0);
  removeTemporaryDirectories();
});

/** Counts the records of a label by opening the directory read-only in this process: it costs no token. */
async function countLabel(label: string): Promise<number> {
  return (await queryDirectory(gateway.data, countRequest({ n: nodesLabeled(label) }))).n as number;
}

describe("a schemaless silk gateway, driven by HelixDB's v3 SDK", () => {
  it("keeps every hosted rule: keys, the account switch, one token per admitted request, the error rows", async () => {
    const { sdk, client } = gateway;
    const { g, readBatch, writeBatch } = sdk;
    const addUser = (name: string) => writeBatch().varAs("u", g().addN("User", { name })).returning([]).toQueryRequest();
    expect(gateway.process.stdout()).toMatch(/^silk: gateway serving a schemaless database on http:\/\/127\.0\.0\.1:\d+ \(data in .*; 0\.001 requests\/s, burst 4, bucket in this process\)$/m);

    // Refused before admission: no key, an unknown key, a disabled database. None of them draws a token.
    const anonymous = sdk.Client.server(gateway.url);
    expect(await remoteError(sdk, anonymous.query(addUser("nokey")).send())).toMatchObject({ status: 401, code: "unauthorized" });
    const stranger = sdk.Client.server(gateway.url).withApiKey("silk_000000000000_not-a-key");
    expect(await remoteError(sdk, stranger.query(addUser("stranger")).send())).toMatchObject({ status: 403, code: "forbidden" });
    setDisabled(gateway.data, true, Date.now());
    try {
      expect(await remoteError(sdk, client.query(addUser("unpaid")).send())).toMatchObject({ status: 402, code: "tenant_disabled" });
    } finally {
      setDisabled(gateway.data, false, Date.now());
    }
    expect(await countLabel("User")).toBe(0);

    // /health is open; /introspect and unknown paths ask for the key first.
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
    expect((await fetch(`${gateway.url}/introspect`)).status).toBe(401);
    const bearer = { authorization: `Bearer ${gateway.key}` };
    expect(await (await fetch(`${gateway.url}/introspect`, { headers: bearer })).json()).toEqual({ schema: null, queries: [], indexes: [] });
    expect((await fetch(`${gateway.url}/GetUser`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } })).status).toBe(401);
    const noRoute = await fetch(`${gateway.url}/GetUser`, { method: "POST", body: "{}", headers: { "content-type": "application/json", ...bearer } });
    expect({ status: noRoute.status, body: await noRoute.json() }).toMatchObject({ status: 404, body: { error: "route_not_found" } });

    // Four admitted requests: a write, an index, a read, and a tree the engine refuses (which costs its token too).
    await client.query(addUser("ann")).send();
    const index = (await client
      .query(treeRequest({ request_type: "write", query: { write: { entries: [{ query: { name: "i", root: { create_index: { label: "User", property: "name", type: "unique" } } } }], returns: ["i"] } } }))
      .send()) as { i: { index: string; state: string } };
    // Over a label that has records the build runs in the background: the answer is its state when it started.
    expect(index.i).toMatchObject({ index: "User.name", kind: "node", state: expect.stringMatching(/^(constructing|active)$/) });
    const names = (await client.query(readBatch().varAs("names", g().nWithLabel("User").valueMap(["name"])).returning(["names"]).toQueryRequest()).send()) as { names: unknown[] };
    expect(names.names).toEqual([{ name: "ann" }]);
    const malformed = await remoteError(sdk, client.query(treeRequest({ request_type: "read", query: { read: { entries: [{ query: { name: "x", root: { no_such_step: {} } } }], returns: ["x"] } } })).send());
    expect(malformed).toMatchObject({ status: 400, code: "malformed_tree" });

    // The bucket is empty: the SDK sees the rate limit, and the write did not run.
    let limited: unknown;
    try {
      await client.query(addUser("bob")).send();
    } catch (cause) {
      limited = cause;
    }
    expect(limited).toBeInstanceOf(sdk.HelixError);
    const error = limited as { statusCode: number; code: string; isRateLimited(): boolean };
    expect({ status: error.statusCode, code: error.code, rateLimited: error.isRateLimited() }).toEqual({ status: 429, code: "rate_limited", rateLimited: true });
    const refused = await fetch(`${gateway.url}/v2/query`, { method: "POST", body: addUser("cy").toJsonString(), headers: { "content-type": "application/json", ...bearer } });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await countLabel("User")).toBe(1);
  });
});
