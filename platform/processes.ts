/**
 * Whether a process ID names a live process (signal 0 checks without signalling). One definition for the cluster CLI,
 * the chaos harness and the tests that start and kill Silk's processes.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
