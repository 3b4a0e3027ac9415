import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Two test files at a time even on two cores (vitest would run one): the end-to-end files
    // mostly wait on servers, timers and child processes, so the suite takes about 60 % as long.
    maxWorkers: 2
  }
})
