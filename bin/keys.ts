/**
 * The hosted database's administration from the command line: `silk keys create|list|revoke` (API keys,
 * gateway/hosted/key-store.ts) and `silk admin disable|enable` (the account-credit switch). They edit files in
 * `<data>/gateway/` and need no running gateway; running gateways see each change on their next request.
 */
import { createKey, readKeys, revokeKey } from "../gateway/hosted/key-store.js";
import { setDisabled } from "../gateway/hosted/tenant-files.js";

export interface CommandIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly nowMs: () => number;
}

/** Prints the new key alone on stdout (so `KEY=$(silk keys create ...)` works) and what to do with it on stderr. */
export function runKeysCreate(data: string, name: string, io: CommandIo): void {
  const { key, record } = createKey(data, name, io.nowMs());
  io.stdout.write(`${key}\n`);
  io.stderr.write(`silk keys: created key ${record.id}${name === "" ? "" : ` (${name})`}; it is shown only now: store it, then send it as Authorization: Bearer <key>\n`);
}

export function runKeysList(data: string, io: CommandIo): void {
  const rows = readKeys(data).map((record) => [record.id, record.name, record.created, record.revoked ?? "-"]);
  const table = [["id", "name", "created", "revoked"], ...rows];
  const widths = table[0].map((_, column) => Math.max(...table.map((row) => row[column].length)));
  for (const row of table) io.stdout.write(row.map((cell, column) => cell.padEnd(widths[column])).join("  ").trimEnd() + "\n");
}

export function runKeysRevoke(data: string, id: string, io: CommandIo): void {
  const record = revokeKey(data, id, io.nowMs());
  io.stdout.write(`revoked ${record.id} at ${record.revoked}\n`);
}

export function runAdminSwitch(data: string, disabled: boolean, io: CommandIo): void {
  setDisabled(data, disabled, io.nowMs());
  io.stdout.write(disabled ? `${data}: disabled; the gateway answers 402 tenant_disabled until \`silk admin enable\`\n` : `${data}: enabled\n`);
}
