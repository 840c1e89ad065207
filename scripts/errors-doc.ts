// Writes docs/ERRORS.md from the one error table (protocol/errors.ts). Run: npx tsx scripts/errors-doc.ts
import { writeFileSync } from "node:fs";
import { INDEX_STRING_PREFIX_BYTES_MAX } from "../node/index-encoding.js";
import { KEY_BYTES_MAX } from "../node/keys.js";
import { ERROR_CODES } from "../protocol/errors.js";
import { VALUE_DEPTH_MAX } from "../protocol/values.js";

/** Limits on what a request may hold, with the code that refuses more (or how more is handled) and where it lives. */
const LIMITS: readonly { name: string; value: string; code: string; meaning: string }[] = [
  {
    name: "VALUE_DEPTH_MAX (protocol/values.ts)",
    value: `${VALUE_DEPTH_MAX} levels`,
    code: "invalid_value",
    meaning: "How deep a value may nest arrays and objects: `array`/`object` literals of the operation tree, parameters, written and imported properties.",
  },
  {
    name: "well-formed strings (protocol/values.ts)",
    value: "no lone UTF-16 surrogate",
    code: "invalid_value",
    meaning: "Every string of a request (values, parameters, names, imported rows) must be Unicode text: a lone surrogate (a `\\ud800` escape without its pair) cannot be stored as it is.",
  },
  {
    name: "KEY_BYTES_MAX (node/keys.ts)",
    value: `${KEY_BYTES_MAX} bytes`,
    code: "none: long strings are indexed",
    meaning: `LMDB's longest key. A string whose secondary-index key would be longer is keyed by its first ${INDEX_STRING_PREFIX_BYTES_MAX} bytes (INDEX_STRING_PREFIX_BYTES_MAX, node/index-encoding.ts) and its SHA-256; UNIQUE stays exact (docs/INDEXES.md).`,
  },
];

const rows = Object.entries(ERROR_CODES)
  .map(([code, spec]) => `| \`${code}\` | ${spec.status} | ${spec.kind} | ${spec.doc} |`)
  .join("\n");
const limits = LIMITS.map((limit) => `| ${limit.name} | ${limit.value} | ${limit.code} | ${limit.meaning} |`).join("\n");
writeFileSync(
  new URL("../docs/ERRORS.md", import.meta.url),
  `# Error codes

Every error Silk reports carries a stable snake_case code. Over HTTP the body is
\`{"error": "<code>", "msg": "<text>"}\` with the status below; the embedded runtime throws a \`SilkError\` with
\`code\`, \`status\`, \`kind\` and \`message\`. Branch on the code, never on the message text.

Kinds: \`user\` — the request was wrong, fix it and retry; \`io\` — storage failed, the transaction was rolled back;
\`internal\` — a bug in Silk, the transaction was rolled back, please report it.

This file is generated from \`protocol/errors.ts\` by \`npx tsx scripts/errors-doc.ts\`; a test keeps them in step.

| code | HTTP status | kind | meaning and what to do |
|---|---|---|---|
${rows}

## Limits

| limit | value | code beyond it | what it bounds |
|---|---|---|---|
${limits}
`,
);
