/**
 * The HelixQL conformance suite: every case of `cases/*.hxt` (format: README.md) runs in each mode — `embedded`
 * (`open({storage: "memory"})` and `db.query`) and `http` (a real server from buildGateway on 127.0.0.1, port 0,
 * and real `fetch`, asserting status and body). A case whose sources do not check runs once, in mode `load`:
 * no server can start on such a project. Each case gets a fresh database, so the IDs it expects are those of an
 * empty database. `CONFORMANCE_UPDATE=1` records the answers instead of checking them and rewrites the files.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../cluster/embedded.js";
import { stringifyJson } from "../../gateway/json.js";
import { SilkError } from "../../protocol/errors.js";
import { listeningGateway } from "../helpers/gateway.js";
import { type Answer, type Call, type Case, type CheckedCall, parseCaseFile, QUERY_FILE, rewriteCaseFile } from "./case-file.js";

const CASES_DIRECTORY = join(import.meta.dirname, "cases");
const UPDATE = process.env.CONFORMANCE_UPDATE === "1";

/** Runs one call in one mode and answers its JSON value or its error. */
type Runner = (call: Call, parameters: unknown) => Promise<Answer & { readonly msg?: string }>;

interface Session {
  readonly run: Runner;
  close(): Promise<void>;
}

async function embeddedSession(database: Database): Promise<Session> {
  return {
    run: async (call, parameters) => {
      try {
        const result = await database.query(call.name, parameters as Record<string, unknown>);
        // The embedded answer is compared in its JSON form, the form the cases write.
        return { kind: "value", value: JSON.parse(stringifyJson(result) ?? "null") as unknown };
      } catch (cause) {
        if (!(cause instanceof SilkError)) throw cause;
        return { kind: "error", code: cause.code, status: cause.status, msg: cause.message };
      }
    },
    close: () => database.close(),
  };
}

async function httpSession(database: Database): Promise<Session> {
  const { app, base } = await listeningGateway(database);
  return {
    run: async (call, parameters) => {
      const response = await fetch(`${base}/${call.name}`, { method: "POST", body: JSON.stringify(parameters), headers: { "content-type": "application/json" } });
      expect(response.headers.get("content-type")).toMatch(/^application\/json/);
      const body = (await response.json()) as unknown;
      if (response.status === 200) return { kind: "value", value: body };
      expect(Object.keys(body as object).sort()).toEqual(["error", "msg"]);
      const { error, msg } = body as { error: string; msg: string };
      expect(typeof msg).toBe("string");
      return { kind: "error", code: error, status: response.status, msg };
    },
    close: async () => {
      await app.close();
      await database.close();
    },
  };
}

/** Replaces each string `$n.path.to.value` in `parameters` by that part of the answer of call n (1-based). */
function substitute(parameters: unknown, answers: readonly unknown[]): unknown {
  if (typeof parameters === "string") {
    const match = /^\$([0-9]+)((?:\.[A-Za-z0-9_$]+)*)$/.exec(parameters);
    if (match === null) return parameters;
    let value = answers[Number(match[1]) - 1];
    for (const key of match[2].split(".").slice(1)) value = (value as Record<string, unknown> | null)?.[key];
    if (value === undefined) throw new Error(`${parameters} names nothing in the earlier answers`);
    return value;
  }
  if (Array.isArray(parameters)) return parameters.map((element) => substitute(element, answers));
  if (typeof parameters === "object" && parameters !== null) {
    return Object.fromEntries(Object.entries(parameters).map(([key, value]) => [key, substitute(value, answers)]));
  }
  return parameters;
}

/** Answers recorded in update mode, per file, keyed by mode so that the modes can be compared. */
const recorded = new Map<string, { checked: CheckedCall; answer: Answer; mode: string }[]>();

function record(file: string, checked: CheckedCall, answer: Answer, mode: string): void {
  const list = recorded.get(file) ?? [];
  list.push({ checked, answer: answer.kind === "value" ? answer : { kind: "error", code: answer.code, status: answer.status }, mode });
  recorded.set(file, list);
}

function check(file: string, checked: CheckedCall, answer: Answer & { readonly msg?: string }, mode: string): void {
  if (UPDATE) {
    record(file, checked, answer, mode);
    return;
  }
  const { expect: expected, call } = checked;
  const where = `${file}:${call.line} ${call.name}`;
  if (expected.kind === "value") {
    expect(answer, where).toStrictEqual({ kind: "value", value: expected.value });
    // toStrictEqual ignores the order of keys; a projection's items come in the order written, so compare the text too.
    expect(JSON.stringify(answer.kind === "value" ? answer.value : undefined), `${where}: the order of keys`).toBe(JSON.stringify(expected.value));
    return;
  }
  expect({ kind: answer.kind, code: answer.kind === "error" ? answer.code : undefined }, `${where}: ${JSON.stringify(answer)}`).toStrictEqual({ kind: "error", code: expected.code });
  if (answer.kind !== "error") return;
  if (expected.status !== undefined) expect(answer.status, where).toBe(expected.status);
  if (expected.message !== undefined) expect(answer.msg, where).toContain(expected.message);
  if (expected.at !== undefined) expect(answer.msg, where).toContain(expected.at.includes(".hx:") ? `${expected.at}:` : `${QUERY_FILE}:${expected.at}:`);
}

async function runCalls(file: string, testCase: Case, session: Session, mode: string): Promise<void> {
  const answers: unknown[] = [];
  for (const call of testCase.setup) {
    const answer = await session.run(call, substitute(call.parameters, answers));
    expect(answer, `setup ${file}:${call.line} ${call.name}`).toMatchObject({ kind: "value" });
    answers.push(answer.kind === "value" ? answer.value : undefined);
  }
  for (const checked of testCase.calls) {
    const answer = await session.run(checked.call, substitute(checked.call.parameters, answers));
    check(file, checked, answer, mode);
    answers.push(answer.kind === "value" ? answer.value : undefined);
  }
}

async function runLoad(file: string, testCase: Case, checked: CheckedCall): Promise<void> {
  const outcome = await open({ storage: "memory", schema: testCase.sources }).then(
    async (database) => {
      await database.close();
      return { kind: "value", value: "the project loaded" } as const;
    },
    (cause: unknown) => {
      if (!(cause instanceof SilkError)) throw cause;
      return { kind: "error", code: cause.code, status: 0, msg: cause.message } as const;
    },
  );
  check(file, checked, outcome, "load");
}

const MODES = { embedded: embeddedSession, http: httpSession } as const;

for (const file of readdirSync(CASES_DIRECTORY).filter((name) => name.endsWith(".hxt")).sort()) {
  const path = join(CASES_DIRECTORY, file);
  const cases = parseCaseFile(readFileSync(path, "utf8"));
  describe(file, () => {
    for (const testCase of cases) {
      const title = testCase.bug === undefined ? testCase.name : `${testCase.name} (bug: ${testCase.bug})`;
      const { loadError } = testCase;
      if (loadError !== undefined) {
        it(`${title} [load]`, () => runLoad(file, testCase, loadError));
        continue;
      }
      for (const [mode, start] of Object.entries(MODES)) {
        it(`${title} [${mode}]`, async () => {
          const session = await start(await open({ storage: "memory", schema: testCase.sources }));
          try {
            await runCalls(file, testCase, session, mode);
          } finally {
            await session.close();
          }
        });
      }
    }
  });
}

afterAll(() => {
  if (!UPDATE) return;
  for (const [file, answers] of recorded) {
    const path = join(CASES_DIRECTORY, file);
    // Every mode must agree before its answer becomes the expectation.
    const byCall = new Map<CheckedCall, Answer>();
    for (const { checked, answer, mode } of answers) {
      const earlier = byCall.get(checked);
      if (earlier !== undefined && JSON.stringify(earlier) !== JSON.stringify(answer)) {
        throw new Error(`${file}:${checked.call.line}: the modes disagree (${mode}: ${JSON.stringify(answer)}, before: ${JSON.stringify(earlier)})`);
      }
      byCall.set(checked, answer);
    }
    const text = readFileSync(path, "utf8");
    writeFileSync(path, rewriteCaseFile(text, [...byCall].map(([checked, answer]) => ({ checked, answer }))));
  }
});
