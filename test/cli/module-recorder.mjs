/**
 * Module hooks for test/cli/startup.test.ts: every URL that an import resolves to is appended, one a line, to the
 * file `initialize` is handed, so the test can tell which packages a `silk` process loaded without timing anything.
 */
import { appendFileSync } from "node:fs";

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  appendFileSync(file, `${result.url}\n`);
  return result;
}
