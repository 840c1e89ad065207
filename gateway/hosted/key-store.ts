/**
 * API keys of a hosted database, in `<data>/gateway/keys.json`. A key is `silk_<id>_<secret>`: a 6-byte id in hex,
 * which names the key in `silk keys list` and `revoke`, and 32 random bytes in base64url. Only the id and the
 * SHA-256 of the whole key are stored: the key is shown once, when it is made. A plain hash is enough because the
 * secret is 256 random bits, not a password that could be guessed; a slow hash (scrypt) would only cost every
 * request its time. The gateway re-reads the file when it changes, so a revoked key stops working at once in every
 * gateway process of the database.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { SilkError } from "../../protocol/errors.js";
import { writeFileAtomic } from "../../cluster/durable-files.js";
import { keysPath } from "./tenant-files.js";

const KEY_ID_BYTES = 6;
const KEY_SECRET_BYTES = 32;
const KEY_PATTERN = /^silk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
/** The longest key name, in characters; names are labels for people, not data. */
export const KEY_NAME_CHARS_MAX = 100;
/** The most keys a database may have, revoked ones included; the whole file is read on every change. */
export const KEYS_PER_DATABASE_MAX = 1000;

/** A key as stored: never the key itself. */
export interface KeyRecord {
  readonly id: string;
  readonly name: string;
  readonly created: string;
  readonly revoked: string | null;
  readonly sha256: string;
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

export function readKeys(data: string): KeyRecord[] {
  const path = keysPath(data);
  if (!existsSync(path)) return [];
  const parsed = JSON.parse(readFileSync(path, "utf8")) as { keys?: unknown };
  if (!Array.isArray(parsed.keys)) throw new SilkError("invalid_option", `${path} does not hold {"keys": [...]}`);
  return parsed.keys as KeyRecord[];
}

function writeKeys(data: string, keys: readonly KeyRecord[]): void {
  writeFileAtomic(keysPath(data), JSON.stringify({ keys }, null, 2) + "\n");
}

/** Makes a key; the answer holds the key, which is not stored anywhere and cannot be shown again. */
export function createKey(data: string, name: string, nowMs: number): { key: string; record: KeyRecord } {
  if (name.length > KEY_NAME_CHARS_MAX) throw new SilkError("invalid_option", `a key name is at most ${KEY_NAME_CHARS_MAX} characters`);
  const keys = readKeys(data);
  if (keys.length >= KEYS_PER_DATABASE_MAX) {
    throw new SilkError("limit_exceeded", `this database has ${keys.length} keys, the most it may have; revoked keys count too`);
  }
  const id = randomBytes(KEY_ID_BYTES).toString("hex");
  const key = `silk_${id}_${randomBytes(KEY_SECRET_BYTES).toString("base64url")}`;
  const record: KeyRecord = { id, name, created: new Date(nowMs).toISOString(), revoked: null, sha256: sha256(key).toString("hex") };
  writeKeys(data, [...keys, record]);
  return { key, record };
}

/** Marks a key revoked (it stays listed, with the time); revoking it again changes nothing. */
export function revokeKey(data: string, id: string, nowMs: number): KeyRecord {
  const keys = readKeys(data);
  const found = keys.find((record) => record.id === id);
  if (found === undefined) throw new SilkError("invalid_option", `no key has the id ${JSON.stringify(id)}; \`silk keys list\` shows them`);
  if (found.revoked !== null) return found;
  const revoked: KeyRecord = { ...found, revoked: new Date(nowMs).toISOString() };
  writeKeys(data, keys.map((record) => (record === found ? revoked : record)));
  return revoked;
}

/** The keys a gateway accepts, re-read whenever the file is replaced. */
export class KeyStore {
  private byId = new Map<string, KeyRecord>();
  private version = "";

  constructor(private readonly data: string) {}

  /** The record of a live key, or undefined for a key that is malformed, unknown or revoked. */
  verify(key: string): KeyRecord | undefined {
    const match = KEY_PATTERN.exec(key);
    if (match === null) return undefined;
    this.reloadIfChanged();
    const record = this.byId.get(match[1]);
    if (record === undefined || record.revoked !== null) return undefined;
    const expected = Buffer.from(record.sha256, "hex");
    const presented = sha256(key);
    return expected.length === presented.length && timingSafeEqual(expected, presented) ? record : undefined;
  }

  /**
   * Every write renames a new file into place, which changes its inode and change time; comparing them costs one
   * stat per request and no parsing.
   */
  private reloadIfChanged(): void {
    const stat = statSync(keysPath(this.data), { throwIfNoEntry: false });
    const version = stat === undefined ? "absent" : `${stat.ino}:${stat.ctimeMs}:${stat.size}`;
    if (version === this.version) return;
    this.byId = new Map(readKeys(this.data).map((record) => [record.id, record]));
    this.version = version;
  }
}
