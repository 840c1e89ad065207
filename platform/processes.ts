/**
 * Processes of this machine, by ID. One definition for the cluster CLI and its supervisor, the chaos harness and the
 * tests that start and kill Silk's processes.
 *
 * Where the kernel offers /proc (Linux) a process ID is also looked up there: a zombie (exited, not yet reaped by its
 * parent) answers signal 0 yet runs nothing, and a process ID recorded long ago may name another program by now, so
 * `silk cluster down` checks a recorded ID's command line before it signals it. Elsewhere only signal 0 is asked.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { resolve } from "node:path";

/** Whether a process ID names a live process: signal 0 reaches it (checks without signalling) and it is no zombie. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return processState(pid) !== "Z";
}

/** The one-letter state of /proc/PID/stat (R, S, D, T, Z...), undefined where it cannot be read. */
function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) S ...": comm may hold spaces and parentheses, so the state follows the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  } catch {
    return undefined;
  }
}

/** A live process's arguments (argv, the program first) and working directory, as /proc shows them. */
export interface ProcessCommand {
  readonly argv: readonly string[];
  readonly cwd: string;
}

/** Whether this machine shows processes' command lines (/proc); without it, `processCommand` is always undefined. */
export function processTableReadable(): boolean {
  return processCommand(process.pid) !== undefined;
}

/** The command line of a process, undefined where it cannot be read (gone, not ours to read, or no /proc). */
export function processCommand(pid: number): ProcessCommand | undefined {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    if (argv.at(-1) === "") argv.pop();
    return { argv, cwd: readlinkSync(`/proc/${pid}/cwd`) };
  } catch {
    return undefined;
  }
}

/** The IDs of every process /proc lists (none without /proc). */
export function processIds(): number[] {
  try {
    return readdirSync("/proc")
      .filter((name) => /^[0-9]+$/.test(name))
      .map(Number);
  } catch {
    return [];
  }
}

/** The absolute path an argument names, read from the process's working directory as the process itself read it. */
export function argumentPath(command: ProcessCommand, argument: string): string {
  return resolve(command.cwd, argument);
}
