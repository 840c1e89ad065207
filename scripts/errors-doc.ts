// Writes docs/ERRORS.md from the one error table (protocol/errors.ts). Run: npx tsx scripts/errors-doc.ts
import { writeFileSync } from "node:fs";
import { ERROR_CODES } from "../protocol/errors.js";

const rows = Object.entries(ERROR_CODES)
  .map(([code, spec]) => `| \`${code}\` | ${spec.status} | ${spec.kind} | ${spec.doc} |`)
  .join("\n");
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
`,
);
