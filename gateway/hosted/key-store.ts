/**
 * API keys of a hosted database, in `<data>/gateway/keys.json`. A key is `silk_<id>_<secret>`: a 6-byte id in hex,
 * which names the key in `silk keys list` and `revoke`, and 32 random bytes in base64url. Only the id and the
 * SHA-256 of the whole key are stored: the key is shown once, when it is made. A plain hash is enough because the
 * secret is 256 random bits, not a password that could be guessed; a slow hash (scrypt) would only cost every
 * request its time. The gateway re-reads the file when it changes, so a revoked key stops working at once in every
 * gateway process of the database.
 *
 * Every change is a read-modify-write of the whole file under an OS lock (`keys.lock`): without it, two `silk keys`
 * commands run at once read the same old list and the second rename drops the first one's change, which for a
 * revocation means a key that was reported revoked keeps working. The file is mode 0600: the hashes are not keys,
 * but nobody else on the machine has a reason to read them. A file that does not hold a valid key list fails
 * closed: every request is refused with 500 internal, naming the file and what is wrong with it.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { SilkError } from "../../protocol/errors.js";
import { withFileLock, writeFileAtomic } from "../../platform/durable-files.js";
import { keysLockPath, keysPath } from "./tenant-files.js";

const KEY_ID_BYTES = 6;
const KEY_SECRET_BYTES = 32;
const KEY_PATTERN = /^silk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
/** The longest key name, in characters; names are labels for people, not data. */
export const KEY_NAME_CHARS_MAX = 100;
/** The most keys a database may have, revoked ones included; the whole file is read on every change. */
export const KEYS_PER_DATABASE_MAX = 1000;
/** How long a `silk keys` command waits for another one to finish its change, in milliseconds; a change takes a few. */
export const KEYS_LOCK_WAIT_MS = 10_000;
/** keys.json's permission bits: its owner reads and writes it, nobody else. */
export const KEYS_FILE_MODE = 0o600;
const KEY_ID_PATTERN = /^[0-9a-f]{12}$/;
const SHA256_PATTERN = /^[0-9a-f]{64}$/;

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

/** Why a stored record is not a key record, or undefined when it is one. */
function recordFault(record: unknown): string | undefined {
  if (typeof record !== "object" || record === null || Array.isArray(record)) return "is not an object";
  const fields = record as Record<string, unknown>;
  if (typeof fields.id !== "string" || !KEY_ID_PATTERN.test(fields.id)) return "has no id of 12 hex digits";
  if (typeof fields.sha256 !== "string" || !SHA256_PATTERN.test(fields.sha256)) return "has no sha256 of 64 hex digits";
  if (typeof fields.name !== "string" || typeof fields.created !== "string") return "has no name or created string";
  if (fields.revoked !== null && typeof fields.revoked !== "string") return "has a revoked that is neither null nor a time";
  return undefined;
}

/** The stored keys; a file that is not a valid key list throws, so that nothing is admitted on a guess. */
export function readKeys(data: string): KeyRecord[] {
  const path = keysPath(data);
  if (!existsSync(path)) return [];
  const corrupt = (what: string): SilkError =>
    new SilkError(
      "internal",
      `the database's API key file (gateway/keys.json in its directory) is corrupt: ${what}; every request is refused until an operator restores it from a backup, or removes it and makes new keys with \`silk keys create\``,
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (cause) {
    throw corrupt(`it is not JSON (${cause instanceof Error ? cause.message : String(cause)})`);
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw corrupt('it does not hold {"keys": [...]}');
  for (const [index, record] of keys.entries()) {
    const fault = recordFault(record);
    if (fault !== undefined) throw corrupt(`key ${index} ${fault}`);
  }
  return keys as KeyRecord[];
}

function writeKeys(data: string, keys: readonly KeyRecord[]): void {
  writeFileAtomic(keysPath(data), JSON.stringify({ keys }, null, 2) + "\n", { mode: KEYS_FILE_MODE });
}

/** Makes a key; the answer holds the key, which is not stored anywhere and cannot be shown again. */
export function createKey(data: string, name: string, nowMs: number): { key: string; record: KeyRecord } {
  if (name.length > KEY_NAME_CHARS_MAX) throw new SilkError("invalid_option", `a key name is at most ${KEY_NAME_CHARS_MAX} characters`);
  return withFileLock(keysLockPath(data), KEYS_LOCK_WAIT_MS, () => {
    const keys = readKeys(data);
    if (keys.length >= KEYS_PER_DATABASE_MAX) {
      throw new SilkError("limit_exceeded", `this database has ${keys.length} keys, the most it may have; revoked keys count too`);
    }
    const id = randomBytes(KEY_ID_BYTES).toString("hex");
    const key = `silk_${id}_${randomBytes(KEY_SECRET_BYTES).toString("base64url")}`;
    const record: KeyRecord = { id, name, created: new Date(nowMs).toISOString(), revoked: null, sha256: sha256(key).toString("hex") };
    writeKeys(data, [...keys, record]);
    return { key, record };
  });
}

/** Marks a key revoked (it stays listed, with the time); revoking it again changes nothing. */
export function revokeKey(data: string, id: string, nowMs: number): KeyRecord {
  return withFileLock(keysLockPath(data), KEYS_LOCK_WAIT_MS, () => {
    const keys = readKeys(data);
    const found = keys.find((record) => record.id === id);
    if (found === undefined) throw new SilkError("invalid_option", `no key has the id ${JSON.stringify(id)}; \`silk keys list\` shows them`);
    if (found.revoked !== null) return found;
    const revoked: KeyRecord = { ...found, revoked: new Date(nowMs).toISOString() };
    writeKeys(data, keys.map((record) => (record === found ? revoked : record)));
    return revoked;
  });
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
   * stat per request and no parsing. The change time is read in nanoseconds: an inode number may be reused by a
   * later write, and two writes within one millisecond must still differ. The version is taken before the file is
   * read, so a change between the two is read again on the next request rather than missed. A corrupt file is
   * never cached: every request reads it again, and is refused, until it is repaired.
   */
  private reloadIfChanged(): void {
    const stat = statSync(keysPath(this.data), { bigint: true, throwIfNoEntry: false });
    const version = stat === undefined ? "absent" : `${stat.ino}:${stat.ctimeNs}:${stat.mtimeNs}:${stat.size}`;
    if (version === this.version) return;
    this.byId = new Map(readKeys(this.data).map((record) => [record.id, record]));
    this.version = version;
  }
}
