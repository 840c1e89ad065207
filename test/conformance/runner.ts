/**
 * The conformance suite's case runner, shared by every mode's test file (conformance.test.ts: embedded, http, load;
 * test/cluster-nats/conformance-cluster.test.ts: cluster): sessions that run one call and answer its JSON value or
 * its error, the substitution of earlier answers into parameters, and the check of an answer against a case's
 * expectation (or its recording, in update mode: `CONFORMANCE_UPDATE=1`).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { stringify } from "lossless-json";
import { open, type Database } from "../../runtime/embedded.js";
import { stringifyAnswer, stringifyJson } from "../../gateway/json.js";
import { SilkError } from "../../protocol/errors.js";
import { listeningGateway } from "../helpers/gateway.js";
import { type Answer, type Call, type Case, type CheckedCall, QUERY_FILE, TREE_CALL } from "./case-file.js";

export const CASES_DIRECTORY = join(import.meta.dirname, "cases");
export const UPDATE = process.env.CONFORMANCE_UPDATE === "1";

/** The case files, in name order. */
export function caseFiles(): string[] {
  return readdirSync(CASES_DIRECTORY).filter((name) => name.endsWith(".hxt")).sort();
}

/** Runs one call in one mode and answers its JSON value or its error. */
export type Runner = (call: Call, parameters: unknown) => Promise<Answer & { readonly msg?: string }>;

export interface Session {
  readonly run: Runner;
  close(): Promise<void>;
}

export async function embeddedSession(database: Database): Promise<Session> {
  return {
    run: async (call, parameters) => {
      try {
        // The embedded answer is compared in its JSON form, the form the cases write. A tree runs as `/v2/query` runs it
        // (Database.runV2: IDs as JSON numbers, HelixDB v3's wire), so both modes answer alike; `run`, which keeps IDs as
        // decimal strings, has its own test (test/engine/id-answers.test.ts).
        const text = call.name === TREE_CALL ? stringifyAnswer(await database.runV2(parameters)) : stringifyJson(await database.query(call.name, parameters as Record<string, unknown>));
        return { kind: "value", value: JSON.parse(text ?? "null") as unknown };
      } catch (cause) {
        if (!(cause instanceof SilkError)) throw cause;
        return { kind: "error", code: cause.code, status: cause.status, msg: cause.message };
      }
    },
    close: () => database.close(),
  };
}

export async function httpSession(database: Database): Promise<Session> {
  const { app, base } = await listeningGateway(database);
  return {
    run: async (call, parameters) => {
      // A tree call's path is its name (`/v2/query`); a QUERY's route is `/<name>`.
      const path = call.name === TREE_CALL ? TREE_CALL : `/${call.name}`;
      // A tree's integers beyond 2^53 are bigints (case-file.ts): sent as bare JSON integers, as HelixDB's SDKs send them.
      const sent = call.name === TREE_CALL ? stringify(parameters) : JSON.stringify(parameters);
      const response = await fetch(`${base}${path}`, { method: "POST", body: sent, headers: { "content-type": "application/json" } });
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

/** The project loaded with exactly the case's `-- warning`s (none when it lists none), in order, each at its place. */
export function checkWarnings(file: string, testCase: Case, database: Database): void {
  const given = database.warnings.map((warning) => `${warning.code} ${warning.file}:${warning.line}:${warning.column}`);
  expect(given, `${file}:${testCase.line} ${testCase.name}: the warnings of the load`).toEqual(testCase.warnings);
}

/** Replaces each string `$n.path.to.value` in `parameters` by that part of the answer of call n (1-based). */
export function substitute(parameters: unknown, answers: readonly unknown[]): unknown {
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
export const recorded = new Map<string, { checked: CheckedCall; answer: Answer; mode: string }[]>();

function record(file: string, checked: CheckedCall, answer: Answer, mode: string): void {
  const list = recorded.get(file) ?? [];
  list.push({ checked, answer: answer.kind === "value" ? answer : { kind: "error", code: answer.code, status: answer.status }, mode });
  recorded.set(file, list);
}

/** Checks an answer against the case's expectation; in update mode (`update`, default UPDATE) records it instead. */
export function check(file: string, checked: CheckedCall, answer: Answer & { readonly msg?: string }, mode: string, update = UPDATE): void {
  if (update) {
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

/** The calls before a case's own (its variant's index DDL): each must succeed; `$n` references do not count them. */
async function runPrelude(file: string, testCase: Case, session: Session): Promise<void> {
  for (const call of testCase.prelude) {
    expect(await session.run(call, call.parameters), `prelude ${file}:${call.line} ${call.name}`).toMatchObject({ kind: "value" });
  }
}

export async function runCalls(file: string, testCase: Case, session: Session, mode: string, update = UPDATE): Promise<void> {
  await runPrelude(file, testCase, session);
  const answers: unknown[] = [];
  for (const call of testCase.setup) {
    const answer = await session.run(call, substitute(call.parameters, answers));
    expect(answer, `setup ${file}:${call.line} ${call.name}`).toMatchObject({ kind: "value" });
    answers.push(answer.kind === "value" ? answer.value : undefined);
  }
  for (const checked of testCase.calls) {
    const answer = await session.run(checked.call, substitute(checked.call.parameters, answers));
    check(file, checked, answer, mode, update);
    answers.push(answer.kind === "value" ? answer.value : undefined);
  }
}

/** A case whose project does not check: `opener` (default: an embedded open) must refuse it with the expected error. */
export async function runLoad(file: string, testCase: Case, checked: CheckedCall, opener: (sources: Case["sources"]) => Promise<Database> = (sources) => open({ storage: "memory", schema: sources }), mode = "load", update = UPDATE): Promise<void> {
  const outcome = await opener(testCase.sources).then(
    async (database) => {
      await database.close();
      return { kind: "value", value: "the project loaded" } as const;
    },
    (cause: unknown) => {
      if (!(cause instanceof SilkError)) throw cause;
      return { kind: "error", code: cause.code, status: 0, msg: cause.message } as const;
    },
  );
  check(file, checked, outcome, mode, update);
}

/**
 * Every answer of a case's calls (setup and checked, in order) without checking them: to compare two databases that
 * must answer alike (a cluster and an embedded database of the same partition count), whatever the case expects.
 */
export async function answersOf(testCase: Case, session: Session): Promise<(Answer & { readonly msg?: string })[]> {
  await runPrelude("", testCase, session);
  const answers: unknown[] = [];
  const all: (Answer & { readonly msg?: string })[] = [];
  for (const call of [...testCase.setup, ...testCase.calls.map((checked) => checked.call)]) {
    const answer = await session.run(call, substitute(call.parameters, answers));
    all.push(answer);
    answers.push(answer.kind === "value" ? answer.value : undefined);
  }
  return all;
}
