/**
 * What the hosted gateway keeps about a database, beside its data: the directory `<data>/gateway/` holds
 * `database.json` (the database's id, which names its bucket in Redis), `keys.json` (key-store.ts), `limits.json`
 * (an override of the plan's rate and burst) and `disabled` (the account-credit switch, present while the database
 * is disabled). Every file is replaced atomically (written aside, flushed, renamed), so a gateway reading it while
 * the CLI writes sees the old version or the new one, never half of one; `keys.json`, the one file changed by
 * read-modify-write, is changed under `keys.lock`.
 */
import { randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { flushDirectory, writeFileAtomic, writeFlushed } from "../../platform/durable-files.js";
import { SilkError } from "../../protocol/errors.js";
import { checkRateLimit, type RateLimit } from "./token-bucket.js";

export function tenantDirectory(data: string): string {
  return join(data, "gateway");
}

export function keysPath(data: string): string {
  return join(tenantDirectory(data), "keys.json");
}

/**
 * The lock every read-modify-write of `keys.json` holds (`silk keys create` and `revoke`), so that two commands run
 * at once both keep their change. A file of its own, since keys.json itself is replaced on every change and a lock
 * on the replaced file would guard nothing.
 */
export function keysLockPath(data: string): string {
  return join(tenantDirectory(data), "keys.lock");
}

export function limitsPath(data: string): string {
  return join(tenantDirectory(data), "limits.json");
}

export function disabledPath(data: string): string {
  return join(tenantDirectory(data), "disabled");
}

function databasePath(data: string): string {
  return join(tenantDirectory(data), "database.json");
}

/**
 * The database's id, made on first use. Two processes starting at once must agree on it, so the new file is
 * linked into place (link fails if the name exists) rather than renamed over whatever the other one wrote.
 */
export function databaseId(data: string): string {
  const path = databasePath(data);
  if (!existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true });
    const aside = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    writeFlushed(aside, JSON.stringify({ id: randomBytes(16).toString("hex") }) + "\n");
    try {
      linkSync(aside, path);
    } catch (cause) {
      if ((cause as { code?: unknown }).code !== "EEXIST") throw cause;
    } finally {
      rmSync(aside, { force: true });
    }
    flushDirectory(dirname(path));
  }
  const parsed = JSON.parse(readFileSync(path, "utf8")) as { id?: unknown };
  if (typeof parsed.id !== "string" || !/^[0-9a-f]{32}$/.test(parsed.id)) {
    throw new SilkError("invalid_option", `${path} does not hold a database id; remove it to make a new one`);
  }
  return parsed.id;
}

/**
 * The database's own rate limit, from `limits.json` (`{"rate_per_second": 50, "burst": 100}`, either field may be
 * left out); nothing when the file is absent.
 */
export function readLimitsOverride(data: string): Partial<RateLimit> {
  const path = limitsPath(data);
  if (!existsSync(path)) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (cause) {
    throw new SilkError("invalid_option", `${path} is not JSON: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new SilkError("invalid_option", `${path} must hold an object such as {"rate_per_second": 50, "burst": 100}`);
  }
  const fields = parsed as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((name) => name !== "rate_per_second" && name !== "burst");
  if (unknown.length > 0) throw new SilkError("invalid_option", `${path}: unknown field ${unknown.join(", ")}; the fields are rate_per_second and burst`);
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value !== "number") throw new SilkError("invalid_option", `${path}: ${name} must be a number, got ${JSON.stringify(value)}`);
  }
  const override: { ratePerSecond?: number; burst?: number } = {};
  if (fields.rate_per_second !== undefined) override.ratePerSecond = fields.rate_per_second as number;
  if (fields.burst !== undefined) override.burst = fields.burst as number;
  // Each given field is checked with the other at a valid stand-in value, so the message names the field at fault.
  checkRateLimit({ ratePerSecond: override.ratePerSecond ?? 1, burst: override.burst ?? 1 }, path);
  return override;
}

/** The account-credit switch (`silk admin disable` / `enable`), read by the gateway on every request. */
export function setDisabled(data: string, disabled: boolean, nowMs: number): void {
  if (disabled) writeFileAtomic(disabledPath(data), JSON.stringify({ disabled_at: new Date(nowMs).toISOString() }) + "\n");
  else rmSync(disabledPath(data), { force: true });
}

export function isDisabled(data: string): boolean {
  return existsSync(disabledPath(data));
}
