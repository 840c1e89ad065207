import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two test files at a time at least. vitest's default is one worker fewer than the cores, which is one on CI's two
    // cores: there the second core sat idle while a file waited on what it started (a server, a cluster's processes,
    // Ceph, a lease, a child process), which is most of the slow files' time. Larger machines keep the default.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
