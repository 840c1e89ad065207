/**
 * `silk gateway` as a real process over real HTTP: every row of SPEC's error table that the in-process bucket can
 * produce (429, 402; 503 is in hosted-redis.test.ts; 408 is in the table but has no deadline yet) and 400, 401,
 * 403, 413 and 415, each with its status, body and headers, and proof that nothing ran — a write sent with each
 * rejected request is not in the database afterwards. Token accounting (SPEC Limits rule 4) is proven by the
 * burst: after any number of rejections that must cost nothing, the whole burst is still there; tree and planner
 * failures each use one token. The bucket refills one token per 1000 s here, so no token comes back mid-test.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, revokeKey } from "../../gateway/hosted/key-store.js";
import { setDisabled } from "../../gateway/hosted/tenant-files.js";
import { REQUEST_BODY_BYTES_MAX } from "../../gateway/query-v2.js";
import { ERROR_CODES } from "../../protocol/errors.js";
import { removeTemporaryDirectories } from "../cli/helpers.js";
import { addUserTree, COUNT_USERS_TREE, expectErrorBody, hostedDatabase, postDeclaringLength, postJson, rateLimitHeaders, startGateway, userCount, type HostedDatabase } from "./hosted-process.js";
import type { StartedServer } from "./serve-process.js";

const BURST = 4;
/** One token per 1000 s: the suite runs in seconds, so the bucket holds what the requests left in it. */
const RATE_PER_SECOND = 0.001;

let database: HostedDatabase;
let gateway: StartedServer;
let query: string;

beforeAll(async () => {
  database = hostedDatabase();
  gateway = await startGateway(database, ["--rate", String(RATE_PER_SECOND), "--burst", String(BURST), "--plan", "growth"]);
  query = `${gateway.url}/v2/query`;
});

afterAll(async () => {
  gateway?.child.kill("SIGTERM");
  expect(await gateway?.exited).toBe(0);
  removeTemporaryDirectories();
});

const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

describe("silk gateway: requests refused before admission cost nothing and run nothing", () => {
  it("prints the limit in force: --rate and --burst win over the plan", () => {
    expect(gateway.stdout()).toMatch(/silk: gateway serving .* \(data in .*; 0\.001 requests\/s, burst 4, bucket in this process\)/);
  });

  it("answers every refusal with its status, body and headers, and the whole burst is left afterwards", async () => {
    const write = addUserTree("intruder");
    // No key: 401, with the challenge that says which scheme to use.
    const missing = await postJson(query, write, {});
    expect(await expectErrorBody(missing, 401, "unauthorized")).toMatch(/an API key is required: send Authorization: Bearer <key>/);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="silk"');
    await expectErrorBody(await postJson(query, write, { authorization: `Basic ${database.key}` }), 401, "unauthorized");
    await expectErrorBody(await postJson(query, write, { "x-api-key": "" }), 401, "unauthorized");
    // A well-formed key this database never made, and a revoked one: 403.
    const forged = `silk_${"0".repeat(12)}_${database.key.slice(18)}`;
    expect(await expectErrorBody(await postJson(query, write, bearer(forged)), 403, "forbidden")).toBe("this API key is unknown to this database or was revoked");
    const revoked = createKey(database.data, "old", Date.now());
    revokeKey(database.data, revoked.record.id, Date.now());
    await expectErrorBody(await postJson(query, write, bearer(revoked.key)), 403, "forbidden");
    // Two keys: header validation refuses the request before anything is decided.
    await expectErrorBody(await postJson(query, write, { ...bearer(database.key), "x-api-key": database.key }), 400, "bad_request");
    // Fastify's header and outer-body checks: media type, size, JSON.
    const plain = await fetch(query, { method: "POST", body: JSON.stringify(write), headers: { ...bearer(database.key), "content-type": "text/plain" } });
    await expectErrorBody(plain, 415, "unsupported_media_type");
    const oversized = await postDeclaringLength(query, REQUEST_BODY_BYTES_MAX + 1, bearer(database.key));
    expect(oversized).toMatchObject({ status: 413, contentType: expect.stringMatching(/^application\/json/) });
    expect(JSON.parse(oversized.body)).toMatchObject({ error: "payload_too_large" });
    await expectErrorBody(await postJson(query, '{"request_type": "write",', bearer(database.key)), 400, "invalid_query_json");
    await expectErrorBody(await postJson(query, "", bearer(database.key)), 400, "invalid_query_json");
    expect(await userCount(database.data)).toBe(0);

    // The whole burst is still there: BURST writes are admitted, the next is not.
    for (let i = 0; i < BURST; i += 1) expect((await postJson(query, addUserTree(`user${i}`), bearer(database.key))).status).toBe(200);
    const refused = await postJson(query, write, bearer(database.key));
    expect(await expectErrorBody(refused, 429, "rate_limited")).toBe("rate limit exceeded");
    expect(await userCount(database.data)).toBe(BURST);
  });

  it("answers 429 with Content-Type application/json, Retry-After in whole seconds and no rate-limit headers", async () => {
    const refused = await postJson(query, addUserTree("late"), { "x-api-key": database.key });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("content-type")).toBe("application/json");
    expect(await refused.json()).toEqual({ error: "rate_limited", msg: "rate limit exceeded" });
    // The bucket is empty: one token is up to 1000 s away at 0.001/s.
    const retryAfter = refused.headers.get("retry-after") ?? "";
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThan(900);
    expect(Number(retryAfter)).toBeLessThanOrEqual(1000);
    expect(rateLimitHeaders(refused)).toEqual([]);
    expect(await userCount(database.data)).toBe(BURST);
  });

  it("answers 402 tenant_disabled while the database is disabled for credit, checked on every request", async () => {
    setDisabled(database.data, true, Date.now());
    try {
      const disabled = await postJson(query, addUserTree("unpaid"), bearer(database.key));
      expect(await expectErrorBody(disabled, 402, "tenant_disabled")).toMatch(/disabled for account credit/);
      expect(disabled.headers.get("content-type")).toBe("application/json");
      expect(disabled.headers.get("retry-after")).toBeNull();
      // A wrong key is still 403: the switch is only shown to the database's own callers.
      await expectErrorBody(await postJson(query, addUserTree("unpaid"), { "x-api-key": "nope" }), 403, "forbidden");
      await expectErrorBody(await postJson(`${gateway.url}/AllUsers`, {}, bearer(database.key)), 402, "tenant_disabled");
    } finally {
      setDisabled(database.data, false, Date.now());
    }
    expect(await userCount(database.data)).toBe(BURST);
    // Enabled again, without a restart; the bucket is still empty, so this is 429, not 402.
    expect((await postJson(query, addUserTree("paid"), bearer(database.key))).status).toBe(429);
  });

  it("keeps /health open, and asks a key of the per-query routes and /introspect without drawing tokens", async () => {
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
    await expectErrorBody(await fetch(`${gateway.url}/introspect`), 401, "unauthorized");
    expect((await fetch(`${gateway.url}/introspect`, { headers: bearer(database.key) })).status).toBe(200);
    await expectErrorBody(await postJson(`${gateway.url}/AllUsers`, {}, {}), 401, "unauthorized");
    // The bucket is empty, yet the per-query route answers: SPEC limits /v2/query only.
    const all = await postJson(`${gateway.url}/AllUsers`, {}, { "x-api-key": database.key });
    expect(all.status).toBe(200);
    expect(((await all.json()) as { users: unknown[] }).users).toHaveLength(BURST);
    await expectErrorBody(await postJson(`${gateway.url}/v2/nothing`, {}, {}), 401, "unauthorized");
    // The MCP endpoint too (docs/MCP.md); with a key, and from any web page (no Origin check in the hosted form).
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    const mcpHeaders = { accept: "application/json, text/event-stream", origin: "https://app.example" };
    await expectErrorBody(await postJson(`${gateway.url}/mcp`, ping, mcpHeaders), 401, "unauthorized");
    const pong = await postJson(`${gateway.url}/mcp`, ping, { ...mcpHeaders, ...bearer(database.key) });
    expect(pong.status).toBe(200);
    expect(await pong.json()).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
  });

  it("answers any Host name and any page's Origin that brings a key: the local server's checks are not the hosted form's", async () => {
    const headers = { host: "silk.example.com", origin: "https://app.example", "sec-fetch-site": "cross-site", "sec-fetch-mode": "cors" };
    const status = (extra: Record<string, string>): Promise<number> =>
      new Promise((resolve, reject) => {
        const outgoing = request(`${gateway.url}/introspect`, { agent: false, headers: { ...headers, ...extra } });
        outgoing.on("error", reject);
        outgoing.on("response", (response) => {
          response.resume();
          response.on("end", () => resolve(response.statusCode ?? 0));
        });
        outgoing.end();
      });
    expect(await status(bearer(database.key))).toBe(200);
    expect(await status({})).toBe(401);
  });

  it("has query_timeout (408) in the error table; no deadline is enforced yet", () => {
    expect(ERROR_CODES.query_timeout.status).toBe(408);
  });
});

describe("silk gateway: failures after admission cost one token each (SPEC Limits rule 4)", () => {
  let fresh: HostedDatabase;
  let second: StartedServer;

  beforeAll(async () => {
    fresh = hostedDatabase();
    second = await startGateway(fresh, ["--rate", String(RATE_PER_SECOND), "--burst", String(BURST)]);
  });

  afterAll(async () => {
    second?.child.kill("SIGTERM");
    expect(await second?.exited).toBe(0);
  });

  it("a malformed tree, a write in a read batch and an unknown label each use a token; nothing of them ran", async () => {
    const url = `${second.url}/v2/query`;
    const headers = bearer(fresh.key);
    await expectErrorBody(await postJson(url, { request_type: "write", query: {} }, headers), 400, "malformed_tree");
    const writeInRead = addUserTree("sneaky") as { request_type: string; query: { write?: unknown; read?: unknown } };
    await expectErrorBody(await postJson(url, { request_type: "read", query: { read: writeInRead.query.write } }, headers), 400, "write_in_read");
    const unknownLabel = JSON.parse(JSON.stringify(addUserTree("nobody")).replace('"label":"User"', '"label":"Robot"'));
    await expectErrorBody(await postJson(url, unknownLabel, headers), 400, "unknown_label");
    expect(await userCount(fresh.data)).toBe(0);
    // BURST - 3 tokens are left.
    for (let i = 0; i < BURST - 3; i += 1) expect((await postJson(url, COUNT_USERS_TREE, headers)).status).toBe(200);
    await expectErrorBody(await postJson(url, COUNT_USERS_TREE, headers), 429, "rate_limited");
  });
});
