/** Child processes of the benchmarks (servers under load): started from the repository root, stopped cleanly. */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Spawns a process (logging only warnings) and resolves once its stdout matches `ready`. */
export function startChild(command: string, args: readonly string[], ready: RegExp): Promise<{ child: ChildProcessWithoutNullStreams; match: RegExpExecArray }> {
  const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, SILK_LOG_LEVEL: "warn" } });
  let stdout = "";
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((done, fail) => {
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      const match = ready.exec(stdout);
      if (match) done({ child, match });
    });
    child.on("exit", (code) => fail(new Error(`${command} ${args.join(" ")} exited with ${code} before it was ready:\n${stdout}${stderr}`)));
  });
}

/** SIGTERM, then waits for the exit (a server closes its database on SIGTERM). */
export async function stopChild(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGTERM");
  await exited;
}
