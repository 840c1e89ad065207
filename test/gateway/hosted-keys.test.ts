/**
 * API keys: `silk keys create|list|revoke` as real processes (the key is printed once and never stored, only its
 * hash and id), the key store a gateway reads (a revoked key is refused as soon as the file changes), which
 * headers carry a key, and the account switch of `silk admin`.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { presentedKey } from "../../gateway/hosted/access.js";
import { createKey, KeyStore, KEYS_PER_DATABASE_MAX, revokeKey } from "../../gateway/hosted/key-store.js";
import { writeFileAtomic } from "../../platform/durable-files.js";
import { databaseId, isDisabled, keysPath } from "../../gateway/hosted/tenant-files.js";
import { removeTemporaryDirectories, runSilk, temporaryDirectory } from "../cli/helpers.js";

afterAll(removeTemporaryDirectories);

const KEY = /^silk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/;

describe("silk keys", () => {
  it("creates keys that are printed once and stored only as a hash, lists them without the key, revokes by id", async () => {
    const data = join(temporaryDirectory(), "data");
    const first = await runSilk(["keys", "create", "--data", data, "--name", "ci"]);
    expect(first.code).toBe(0);
    const key = first.stdout.trim();
    expect(key).toMatch(KEY);
    expect(first.stderr).toMatch(/created key [0-9a-f]{12} \(ci\); it is shown only now/);
    const second = await runSilk(["keys", "create", "--data", data]);
    const otherKey = second.stdout.trim();
    expect(otherKey).toMatch(KEY);
    expect(otherKey).not.toBe(key);

    const stored = readFileSync(keysPath(data), "utf8");
    expect(stored).not.toContain(key.slice(18));
    const records = (JSON.parse(stored) as { keys: { id: string; sha256: string }[] }).keys;
    expect(records.map((record) => record.sha256)).toEqual([key, otherKey].map((text) => createHash("sha256").update(text).digest("hex")));
    expect(records.map((record) => record.id)).toEqual([key.slice(5, 17), otherKey.slice(5, 17)]);

    const listed = await runSilk(["keys", "list", "--data", data]);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^id +name +created +revoked$/);
    expect(lines[1]).toMatch(new RegExp(`^${records[0].id}  ci +\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z  -$`));
    expect(lines[2]).toMatch(new RegExp(`^${records[1].id} +\\d{4}-`));
    expect(listed.stdout).not.toContain(key.slice(18));

    const revoked = await runSilk(["keys", "revoke", records[0].id, "--data", data]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(new RegExp(`^revoked ${records[0].id} at \\d{4}-`));
    expect((await runSilk(["keys", "list", "--data", data])).stdout).toMatch(new RegExp(`${records[0].id}  ci +\\S+  \\d{4}-\\d\\d-\\d\\dT`));

    const unknown = await runSilk(["keys", "revoke", "000000000000", "--data", data]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/silk keys: invalid_option: no key has the id "000000000000"/);
    // Every write went through a file beside it, renamed into place: none is left behind.
    expect(readdirSync(join(data, "gateway")).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("silk admin disable and enable switch the database off and on", async () => {
    const data = join(temporaryDirectory(), "data");
    expect(isDisabled(data)).toBe(false);
    const disabled = await runSilk(["admin", "disable", "--data", data]);
    expect(disabled.code).toBe(0);
    expect(disabled.stdout).toMatch(/disabled; the gateway answers 402 tenant_disabled/);
    expect(isDisabled(data)).toBe(true);
    expect((await runSilk(["admin", "enable", "--data", data])).code).toBe(0);
    expect(isDisabled(data)).toBe(false);
  });
});

describe("the key store of a running gateway", () => {
  it("accepts live keys, refuses unknown, forged and revoked ones, and sees changes without a restart", () => {
    const data = temporaryDirectory();
    const store = new KeyStore(data);
    const { key, record } = createKey(data, "app", 0);
    expect(store.verify(key)?.id).toBe(record.id);
    // Same id, other secret: the hash decides.
    expect(store.verify(key.slice(0, -1) + (key.endsWith("A") ? "B" : "A"))).toBeUndefined();
    expect(store.verify("silk_000000000000_" + key.slice(18))).toBeUndefined();
    expect(store.verify("not a key")).toBeUndefined();
    const { key: second } = createKey(data, "", 1);
    expect(store.verify(second)).toBeDefined();
    revokeKey(data, record.id, 2);
    expect(store.verify(key)).toBeUndefined();
    expect(store.verify(second)).toBeDefined();
  });

  it("refuses keys beyond the most a database may have", () => {
    const data = temporaryDirectory();
    writeFileAtomic(
      keysPath(data),
      JSON.stringify({ keys: Array.from({ length: KEYS_PER_DATABASE_MAX }, (_, i) => ({ id: i.toString(16).padStart(12, "0"), name: "", created: "", revoked: null, sha256: "0".repeat(64) })) }),
    );
    expect(() => createKey(data, "one more", 0)).toThrow(/the most it may have/);
  });

  it("gives every process of a database the same id", () => {
    const data = temporaryDirectory();
    const id = databaseId(data);
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(databaseId(data)).toBe(id);
    expect(existsSync(join(data, "gateway", "database.json"))).toBe(true);
  });
});

describe("the key a request presents", () => {
  const raw = (...pairs: [string, string][]): string[] => pairs.flat();

  it("is read from Authorization: Bearer or from x-api-key", () => {
    expect(presentedKey(raw(["Authorization", "Bearer abc"]))).toBe("abc");
    expect(presentedKey(raw(["authorization", "bearer  abc "]))).toBe("abc");
    expect(presentedKey(raw(["X-API-Key", " abc "]))).toBe("abc");
    expect(presentedKey(raw(["content-type", "application/json"], ["x-api-key", "abc"]))).toBe("abc");
  });

  it("is missing (401), malformed (401) or ambiguous (400)", () => {
    expect(() => presentedKey(raw(["content-type", "application/json"]))).toThrow(expect.objectContaining({ code: "unauthorized" }));
    for (const value of ["Basic abc", "Bearer", "Bearer a b", "abc", ""]) {
      expect(() => presentedKey(raw(["authorization", value]))).toThrow(expect.objectContaining({ code: "unauthorized" }));
    }
    expect(() => presentedKey(raw(["x-api-key", " "]))).toThrow(expect.objectContaining({ code: "unauthorized" }));
    expect(() => presentedKey(raw(["authorization", "Bearer a"], ["authorization", "Bearer b"]))).toThrow(expect.objectContaining({ code: "bad_request" }));
    expect(() => presentedKey(raw(["authorization", "Bearer a"], ["x-api-key", "a"]))).toThrow(expect.objectContaining({ code: "bad_request" }));
    expect(() => presentedKey(raw(["x-api-key", "a"], ["x-api-key", "b"]))).toThrow(expect.objectContaining({ code: "bad_request" }));
  });
});
