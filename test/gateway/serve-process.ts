/**
 * Starting `silk serve` or `silk dev` as a real child process for the suites that talk to one: it resolves once
 * the process prints where it listens, and keeps everything it printed for later assertions.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { spawnSilk } from "../cli/helpers.js";

export interface StartedServer {
  readonly child: ChildProcessWithoutNullStreams;
  readonly url: string;
  readonly exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout (from where it stood when called) matches `pattern`; rejects after `timeoutMs`. */
  /**
   * Resolves when `pattern` appears in what the process prints from now on, or, with `fromStart`, in everything it
   * has printed (a line may arrive in the same chunk as the listening line that startServer waits for).
   */
  waitForStdout(pattern: RegExp, options?: { readonly timeoutMs?: number; readonly fromStart?: boolean }): Promise<void>;
}

/** Starts `silk <args>` and waits for the line that says where it listens. */
export function startServer(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<StartedServer> {
  const child = spawnSilk(args, { env });
  let stdout = "";
  let stderr = "";
  const waiters: (() => void)[] = [];
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const waitForStdout = (pattern: RegExp, { timeoutMs = 10_000, fromStart = false } = {}): Promise<void> => {
    const from = fromStart ? 0 : stdout.length;
    return new Promise((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`no ${pattern} on stdout within ${timeoutMs} ms:\n${stdout.slice(from)}\n${stderr}`)), timeoutMs);
      const check = (): void => {
        if (!pattern.test(stdout.slice(from))) return;
        clearTimeout(timer);
        waiters.splice(waiters.indexOf(check), 1);
        done();
      };
      waiters.push(check);
      check();
    });
  };
  return new Promise((done, fail) => {
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      for (const waiter of [...waiters]) waiter();
      const match = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (match) done({ child, url: match[1], exited, stdout: () => stdout, stderr: () => stderr, waitForStdout });
    });
    void exited.then((code) => fail(new Error(`silk ${args[0]} exited with ${code} before listening:\n${stderr}`)));
  });
}
